const DISPLAY_NAME = Symbol.for('fastify.display-name');

/**
 * `plugin`, given its own name as Fastify's display name. Without one, Fastify names each plugin
 * it registers by looking for the CommonJS module that exports it among every module loaded
 * (`require.cache`), one comparison a module a plugin: the app registers about seventy, so a
 * process that builds apps with many modules loaded (the test processes) spent milliseconds a
 * build there, for a name the plugin's function already has.
 */
export function named<P extends { readonly name: string }>(plugin: P, name = plugin.name): P {
  (plugin as Record<symbol, unknown>)[DISPLAY_NAME] ??= name;
  return plugin;
}

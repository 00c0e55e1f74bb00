/**
 * The composition root: config -> store -> keys -> app -> listen.
 */
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config/index.ts';
import { systemClock } from './core/clock.ts';
import { openStore } from './store/open.ts';
import type { Store } from './store/types.ts';
import { KeyManager } from './tokens/keys.ts';

/** How long expired records are kept, so a replayed code is still recognised as one. */
const PURGE_RETENTION_MS = 60 * 60_000;
const PURGE_EVERY_MS = 60_000;

/**
 * Purges expired records about once every `PURGE_EVERY_MS`, each time after a random 50% to
 * 150% of it, so that instances started together drift apart instead of purging in step;
 * the next purge is scheduled only when the last has finished, so a long backlog never
 * runs twice at once in one instance. Instances purging at the same moment is harmless:
 * the purge is idempotent and each batch skips the rows another one holds. Returns a stop
 * function that resolves once a purge under way has finished, so the store can be closed.
 */
export function schedulePurge(store: Store, onError: (error: unknown) => void, random: () => number = Math.random): () => Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const next = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = store
        .purgeExpired(systemClock.now() - PURGE_RETENTION_MS)
        .then(() => {}, onError)
        .finally(next);
    }, PURGE_EVERY_MS * (0.5 + random()));
    timer.unref();
  };
  next();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

export function keyManager(config: Config, store: Store): KeyManager {
  return new KeyManager(store.keys, systemClock, {
    leadTimeSeconds: config.keyLeadTimeSeconds,
    maxTokenLifetimeSeconds: Math.max(config.lifetimes.accessToken, config.lifetimes.idToken),
  });
}

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly url: string;
  close(): Promise<void>;
}

export async function startServer(config: Config): Promise<RunningServer> {
  const store = await openStore(config.database);
  const keys = keyManager(config, store);
  await keys.ensureKeys();
  const app = await buildApp({ config, store, keys, clock: systemClock });
  const stopPurge = schedulePurge(store, (error) => app.log.warn({ err: error }, 'purge failed'));
  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info(`Tessera is serving ${config.issuer} (listening on ${address})`);
  return {
    app,
    url: address,
    async close() {
      await stopPurge();
      await app.close();
      await store.close();
    },
  };
}

export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`tessera: invalid setting ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  await serve(config);
}

/** Runs the server until SIGINT or SIGTERM, then closes it cleanly. */
export async function serve(config: Config): Promise<void> {
  const server = await startServer(config);
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    process.stderr.write(`tessera: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}

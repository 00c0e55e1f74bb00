import { randomBytes } from 'node:crypto';
import { serveTessera, type ServingCommand } from './cli.ts';
import { databaseSetting, dropSchema, newSchema } from './postgres.ts';

/**
 * Two `tessera serve` processes on one PostgreSQL database (a schema of their own), as a
 * deployment runs several behind a load balancer: they share the database and the key that
 * encrypts its secrets (`env`, with `settings` added, for the commands of the test too), and
 * the second serves the first's issuer. `serve()` starts both; `close()` stops them and drops
 * the schema.
 */
export function instancesOnPostgres(settings: Readonly<Record<string, string>> = {}): {
  readonly env: Readonly<Record<string, string>>;
  serve(): Promise<readonly [ServingCommand, ServingCommand]>;
  close(): Promise<void>;
} {
  const schema = newSchema();
  const env = { TESSERA_DATABASE: databaseSetting(schema), TESSERA_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64url'), ...settings };
  let instances: ServingCommand[] = [];
  return {
    env,
    async serve() {
      const first = await serveTessera([], env);
      const second = await serveTessera([], { ...env, TESSERA_ISSUER: first.url });
      instances = [first, second];
      return [first, second];
    },
    async close() {
      await Promise.all(instances.map((instance) => instance.stop()));
      await dropSchema(schema);
    },
  };
}

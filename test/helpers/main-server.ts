import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/index.ts';
import { startServer, type RunningServer } from '../../src/main.ts';
import { TEST_ENV } from './server.ts';

/**
 * The server as `tessera serve` starts it (main.ts's `startServer`, with the listeners only it
 * opens: metrics, admin), in this process, on a fresh SQLite database in a directory of its
 * own, with the test settings and `env`. `close()` stops it and removes the directory.
 */
export async function startMainServer(env: Readonly<Record<string, string>> = {}): Promise<{
  readonly server: RunningServer;
  readonly config: Config;
  close(): Promise<void>;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-main-'));
  const config = loadConfig({
    ...TEST_ENV,
    PORT: '0',
    HOST: '127.0.0.1',
    TESSERA_DATABASE: join(dir, 'tessera.db'),
    TESSERA_LOG_LEVEL: 'silent',
    ...env,
  });
  const server = await startServer(config).catch((error: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    server,
    config,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

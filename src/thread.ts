/**
 * A worker thread of `TESSERA_WORKERS` on an SQLite file (main.ts, `startThreads`): one whole
 * server on the shared port, its writes sent to the main thread's writer.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Registry } from 'prom-client';
import type { Config } from './config/index.ts';
import { startRefusal, startServer, type ThreadCommand, type ThreadMessage } from './main.ts';

/** Serves until the main thread says to drain or close. */
async function serveThread(main: MessagePort, { config, writes }: { config: Config; writes: MessagePort }): Promise<void> {
  const tell = (message: ThreadMessage) => main.postMessage(message);
  let registry: Registry | null = null;
  try {
    const running = await startServer(config, undefined, { writes, metrics: (given) => (registry = given) });
    main.on('message', (command: ThreadCommand) => {
      if (command.type === 'metrics') {
        void (registry?.getMetricsAsJSON() ?? Promise.resolve([])).then((value) => tell({ type: 'metrics', id: command.id, value }));
        return;
      }
      void running[command.type]().finally(() => process.exit(0));
    });
    tell({ type: 'listening' });
  } catch (error) {
    tell({ type: 'refused', text: startRefusal(error, 'start') });
    process.exit(1);
  }
}

// Only as a worker thread: imported anywhere else (a test that loads every module), it does nothing.
if (!isMainThread && parentPort !== null) await serveThread(parentPort, workerData as { config: Config; writes: MessagePort });

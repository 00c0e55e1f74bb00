/**
 * A worker thread of `TESSERA_WORKERS` on an SQLite file (main.ts, `startThreads`): one whole
 * server on the shared port, its writes sent to the main thread's writer.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import type { Registry } from 'prom-client';
import type { Config } from './config/index.ts';
import { type RunningServer, startRefusal, startServer, type ThreadCommand, type ThreadMessage } from './main.ts';

/** Serves until the main thread says to drain or close. */
async function serveThread(main: MessagePort, { config, writes }: { config: Config; writes: MessagePort }): Promise<void> {
  const tell = (message: ThreadMessage) => main.postMessage(message);
  let registry: Registry | null = null;
  let running: RunningServer | null = null;
  // A command that comes while the server starts (a drain or close sent to every thread as one
  // is being replaced) is kept, and carried out once it serves: lost, the thread would never end.
  const waiting: Exclude<ThreadCommand, { type: 'released' }>[] = [];
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  const carryOut = (server: RunningServer, command: Exclude<ThreadCommand, { type: 'released' }>) => {
    if (command.type === 'metrics') {
      void (registry?.getMetricsAsJSON() ?? Promise.resolve([])).then((value) => tell({ type: 'metrics', id: command.id, value }));
      return;
    }
    void server[command.type]().finally(() => process.exit(0));
  };
  main.on('message', (command: ThreadCommand) => {
    if (command.type === 'released') release();
    else if (running) carryOut(running, command);
    else waiting.push(command);
  });
  try {
    // Before it says it serves: the main thread's socket held on a picked port (PORT=0), which
    // never answers, must be gone from the port first (startThreads).
    const listening = async () => {
      tell({ type: 'bound' });
      await released;
    };
    const server = await startServer(config, undefined, { writes, metrics: (given) => (registry = given), listening });
    running = server;
    tell({ type: 'listening' });
    for (const command of waiting.splice(0)) carryOut(server, command);
  } catch (error) {
    tell({ type: 'refused', text: startRefusal(error, 'start') });
    process.exit(1);
  }
}

// Only as a worker thread: imported anywhere else (a test that loads every module), it does nothing.
if (!isMainThread && parentPort !== null) await serveThread(parentPort, workerData as { config: Config; writes: MessagePort });

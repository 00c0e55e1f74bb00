/**
 * A worker thread with its own SQLite connection, standing in for a node:cluster worker
 * process: it opens the store, says it is ready, waits for the common start signal, then
 * redeems one code and polls one device record `rounds` times, and reports its wins.
 */

import { parentPort, workerData } from 'node:worker_threads';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';

export interface WorkerTask {
  readonly path: string;
  /** Shared; the main thread sets element 0 to 1 to start every worker at once. */
  readonly start: Int32Array;
  readonly rounds: number;
  readonly code: { readonly hash: string; readonly clientId: string; readonly redirectUri: string; readonly codeChallenge: string };
  readonly device: { readonly hash: string; readonly clientId: string };
  readonly now: number;
}

export interface WorkerResult {
  readonly codes: number;
  readonly issues: number;
}

const task: WorkerTask = workerData;
const port = parentPort;
if (port === null) throw new Error('sqlite-worker.ts runs as a worker thread');

const store = openSqliteStore(task.path);
port.postMessage('ready');
Atomics.wait(task.start, 0, 0);

let codes = 0;
let issues = 0;
for (let round = 0; round < task.rounds; round++) {
  if (await store.codes.consume(task.code.hash, task.code, task.now)) codes++;
  if ((await store.devices.poll(task.device.hash, task.device.clientId, task.now))?.outcome === 'issue') issues++;
}
await store.close();
const result: WorkerResult = { codes, issues };
port.postMessage(result);

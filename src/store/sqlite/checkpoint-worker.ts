/**
 * The checkpointer's thread (see checkpointer.ts): its own connection to the file, which
 * copies the WAL back into the database every `intervalMs` until told to stop.
 */
import { DatabaseSync } from 'node:sqlite';
import { workerData } from 'node:worker_threads';

const { path, intervalMs, stop } = workerData as { path: string; intervalMs: number; stop: SharedArrayBuffer };
const stopped = new Int32Array(stop);
const db = new DatabaseSync(path);
try {
  // PASSIVE never waits for the serving connection: it copies the frames no reader still
  // needs and leaves the rest for the next round.
  const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
  while (Atomics.wait(stopped, 0, 0, intervalMs) === 'timed-out') {
    try {
      checkpoint.get();
    } catch {
      // A busy or failed round changes nothing: the serving connection's own automatic
      // checkpoint still bounds the WAL, and the next round tries again.
    }
  }
} finally {
  db.close();
}

import { Worker } from 'node:worker_threads';

/** How often the checkpointer copies the WAL into the database file. */
const CHECKPOINT_INTERVAL_MS = 25;

/**
 * The serving connection's own automatic checkpoint, in WAL pages, while a checkpointer
 * runs: a backstop for when the thread falls behind, and what lets the WAL start over
 * (SQLite rewinds it only once a checkpoint has caught up with the last commit, which a
 * thread checkpointing beside a busy writer seldom does; this one, run in a commit, always does).
 */
export const BACKSTOP_CHECKPOINT_PAGES = 4000;

/**
 * WAL checkpoints on a thread of their own. SQLite's automatic checkpoint runs inside the
 * commit that fills the WAL to 1,000 pages: it copies them into the database file and
 * fsyncs both files, and the event loop waits for the disk all that time. Measured with
 * checkpoints turned off altogether, device authorizations (random keys, so every insert
 * dirties pages all over two b-trees) went from 9,943 to 12,098 a second at the same CPU
 * per request: the main thread had been waiting, not working. The thread does that copy
 * instead; the commit's own checkpoint, every `BACKSTOP_CHECKPOINT_PAGES`, then has only
 * the last few pages left. Durability is unchanged: the same checkpoints, with the same
 * fsyncs, only on another thread.
 */
export class Checkpointer {
  readonly #worker: Worker;
  readonly #stop = new Int32Array(new SharedArrayBuffer(4));
  readonly #exited: Promise<unknown>;

  constructor(path: string) {
    this.#worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), {
      workerData: { path, intervalMs: CHECKPOINT_INTERVAL_MS, stop: this.#stop.buffer },
      // It allocates next to nothing: a small heap keeps its memory small.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 8 },
      stdout: false,
      stderr: false,
    });
    // Never what keeps a process alive; a thread that dies leaves the backstop to checkpoint.
    this.#worker.unref();
    this.#worker.on('error', () => {});
    this.#exited = new Promise((resolve) => this.#worker.once('exit', resolve));
  }

  /** Stops the thread after its current round, and waits for it to close its connection. */
  async stop(): Promise<void> {
    Atomics.store(this.#stop, 0, 1);
    Atomics.notify(this.#stop, 0);
    await this.#exited;
  }
}

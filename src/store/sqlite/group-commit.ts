import type { DatabaseSync, StatementSync } from 'node:sqlite';

/** The batches of this thread that hold a write transaction open. */
const openBatches = new Set<GroupCommit>();

/** The transaction a failed statement ended: every write made in it is gone. */
export class RolledBackError extends Error {
  constructor(cause: unknown) {
    super('the write was rolled back with the transaction it shared', { cause });
    this.name = 'RolledBackError';
  }
}

/**
 * Group commit: the writes that requests make while the event loop handles one round of
 * ready sockets share one transaction, committed when that round ends (`setImmediate`).
 * Every SQLite commit in WAL mode costs the same few system calls (the WAL locks and the
 * frame writes), so N requests that write in the same round pay for one commit instead of
 * N: measured here, a device poll's UPDATE costs less than half as much in batches of 8.
 *
 * What callers are promised does not change: no store call resolves before the
 * transaction holding its statement has committed, reads included (a read that ran inside
 * an open batch may have seen another request's write, which must not be told before it
 * is durable). A statement that fails fails its own call only, as SQLite undoes just that
 * statement; one whose failure ends the whole transaction (an I/O error, say) fails every
 * call of the batch, since all their writes went with it. Single use still holds: the
 * statements of a batch run one after another on this connection, and each sees the
 * writes of those before it; other processes are kept out by the write lock
 * (`BEGIN IMMEDIATE`) until the batch commits.
 *
 * A transaction (`Store.transaction`) is a savepoint inside the batch. While it is open,
 * the batch does not commit, and statements that are not the transaction's own (other
 * requests', whose turn comes between its awaits) wait in a queue until it has ended:
 * run inside the savepoint, they would be undone with it if it rolled back.
 */
export class GroupCommit {
  readonly #db: DatabaseSync;
  readonly #writes = new WeakMap<StatementSync, boolean>();
  #waiters: { readonly resolve: () => void; readonly reject: (error: unknown) => void }[] = [];
  #open = false;
  /** A transaction's savepoint is open. */
  #inTransaction = false;
  /** The batch was due to commit while a transaction was open: it commits when that ends. */
  #commitDue = false;
  /** Work held back until the open transaction has ended, in arrival order. */
  #queue: (() => void)[] = [];
  /** Batches lost to a failure so far. */
  #failures = 0;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Runs `statement`, first opening a batch if it writes and none is open. */
  run<T>(statement: StatementSync, execute: () => T): T {
    // A failure that ended the batch ended the transaction's savepoint with it.
    if (this.#inTransaction && !this.#open) throw new RolledBackError(new Error('the transaction was rolled back'));
    if (!this.#open && this.#isWrite(statement)) this.#begin();
    try {
      return execute();
    } catch (error) {
      // SQLite ends the whole transaction on some errors (I/O, disk full): the batch is lost.
      if (this.#open && !this.#db.isTransaction) this.#settle(new RolledBackError(error));
      throw error;
    }
  }

  /**
   * The answer of a store call, held back until the batch its statements ran in has
   * committed; at once when they ran outside any batch.
   */
  settle<T>(result: Promise<T>): Promise<T> {
    if (!this.#open) return result;
    return new Promise<T>((resolve, reject) => {
      // Handled at once, so a call that failed is never an unhandled rejection while it waits.
      const answer = result.then(
        (value) => () => resolve(value),
        (error: unknown) => () => reject(error),
      );
      this.#waiters.push({ resolve: () => void answer.then((give) => give()), reject });
    });
  }

  /**
   * Runs `work` now, or once the open transaction has ended when one is open: for every
   * statement that is not the transaction's own.
   */
  outside<T>(work: () => T | Promise<T>): Promise<T> {
    // `new Promise` runs `work` at once, and turns what it throws into a rejection.
    const attempt = () => new Promise<T>((run) => run(work()));
    if (!this.#inTransaction) return attempt();
    // Work that waited in a batch a failure then ended was answered with that failure: it must not run after all.
    const failures = this.#failures;
    const lost = () => Promise.reject(new RolledBackError(new Error('the batch it waited in was rolled back')));
    return new Promise<T>((resolve) => this.#queue.push(() => resolve(failures === this.#failures ? attempt() : lost())));
  }

  /** Whether a transaction is open: its own statements run at once. */
  get inTransaction(): boolean {
    return this.#inTransaction;
  }

  /**
   * Runs `work` in a savepoint of the batch (opening one): released when `work` resolves,
   * rolled back to when it rejects. Call it through `outside`, so that one transaction
   * waits for another.
   */
  async transaction<T>(work: () => Promise<T>): Promise<T> {
    if (!this.#open) this.#begin();
    this.#db.exec('SAVEPOINT tessera_transaction');
    this.#inTransaction = true;
    try {
      const result = await work();
      this.#end(['RELEASE tessera_transaction']);
      return result;
    } catch (error) {
      this.#end(['ROLLBACK TO tessera_transaction', 'RELEASE tessera_transaction']);
      throw error;
    }
  }

  /** Commits the open batch now (before the connection closes), or as soon as the open transaction ends. */
  flush(): void {
    if (this.#inTransaction) this.#commitDue = true;
    else if (this.#open) this.#commit();
  }

  #end(commands: readonly string[]): void {
    try {
      // Unless a failure already ended the whole batch, and the savepoint with it.
      if (this.#open && this.#db.isTransaction) for (const command of commands) this.#db.exec(command);
    } finally {
      this.#inTransaction = false;
      // What waited runs now, in this batch, until one of them opens the next transaction.
      while (!this.#inTransaction && this.#queue.length > 0) this.#queue.shift()!();
      if (!this.#inTransaction && this.#commitDue) {
        this.#commitDue = false;
        this.flush();
      }
    }
  }

  #isWrite(statement: StatementSync): boolean {
    let write = this.#writes.get(statement);
    if (write === undefined) {
      write = !/^\s*SELECT\b/i.test(statement.sourceSQL);
      this.#writes.set(statement, write);
    }
    return write;
  }

  #begin(): void {
    // Another connection of this thread holding the write lock could only let go on a
    // later turn of this same event loop, which waiting here would never reach: its batch
    // is committed first (or, in a transaction, when that ends: this one then waits for
    // the lock, busy_timeout at most). A server has one connection; tests and tools may open more.
    for (const other of openBatches) if (other !== this) other.flush();
    // IMMEDIATE takes the write lock now, so no other process can commit between this
    // batch's reads and its writes (busy_timeout waits for one that holds it).
    this.#db.exec('BEGIN IMMEDIATE');
    this.#open = true;
    openBatches.add(this);
    setImmediate(() => this.flush());
  }

  #commit(): void {
    let failure: unknown = null;
    try {
      this.#db.exec('COMMIT');
    } catch (error) {
      failure = new RolledBackError(error);
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
    }
    this.#settle(failure);
  }

  #settle(failure: unknown): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#open = false;
    if (failure !== null) this.#failures++;
    openBatches.delete(this);
    for (const waiter of waiters) {
      if (failure === null) waiter.resolve();
      else waiter.reject(failure);
    }
  }
}

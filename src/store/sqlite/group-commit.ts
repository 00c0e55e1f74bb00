import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { StoreUnavailableError } from '../errors.ts';

/** The transaction a failed statement ended: every write made in it is gone. */
export class RolledBackError extends Error {
  constructor(cause: unknown) {
    super('the write was rolled back with the transaction it shared', { cause });
    this.name = 'RolledBackError';
  }
}

/** Whether a statement's text writes: anything but a SELECT waits for the group commit (or, in a worker thread, goes to the writer). */
export function isWriteSql(sql: string): boolean {
  return !/^\s*SELECT\b/i.test(sql);
}

/** A write waiting for the next commit, and its caller's answer. */
interface Pending {
  readonly execute: () => unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Set once the statement has run in the open commit: its answer, given after the commit. */
  outcome?: { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown };
}

/** How long writes wait for another connection's write lock before they fail as unavailable (SQLite's busy_timeout). */
export const LOCK_WAIT_MS = 5000;

/** Tries on the next turn before waiting a millisecond between tries: another process holds the lock for a commit's length. */
const TRIES_ON_NEXT_TURN = 4;

/**
 * Group commit: the writes that requests make while the event loop handles one round of
 * ready sockets are held back until that round ends (`setImmediate`), then run one after
 * another in one transaction and committed together. Every SQLite commit in WAL mode costs
 * the same few system calls (the WAL locks and the frame writes), so N requests that write
 * in the same round pay for one commit instead of N.
 *
 * The write lock is held only while the round's writes run and commit, a fraction of a
 * millisecond, not for the whole round: with several worker processes on one
 * file, a round that held it while it parsed requests and signed tokens kept the others
 * waiting in SQLite's busy handler, which sleeps the whole event loop (1, 2, 5, 10, … ms)
 * and took a quarter of each worker's time. The lock is also taken without waiting: when
 * another connection holds it, the writes stay queued, the event loop serves on, and the
 * commit is tried again on the next turn (then every millisecond); after `LOCK_WAIT_MS`
 * they fail as `StoreUnavailableError`, as a statement past busy_timeout does.
 *
 * What callers are promised does not change: no write resolves before the transaction
 * holding it has committed. Reads run at once, outside any transaction, and see only what
 * is committed, so they need not wait for anything. A write that fails fails its own call
 * only, as SQLite undoes just that statement; one whose failure ends the whole transaction
 * (an I/O error, say) fails every write of the round, since all went with it. Single use
 * still holds: the writes of a round run one after another on this connection, each seeing
 * those before it, under the write lock that keeps every other connection out.
 *
 * A transaction (`Store.transaction`) takes the lock the same way, commits the writes
 * queued so far, and runs its work in a savepoint, committed as soon as the work ends.
 * While it is open, every call that is not the transaction's own (other requests', whose
 * turn comes between its awaits) waits in a queue: run on this connection inside it, a
 * read would see its uncommitted writes, and a write would be undone with it.
 */
export class GroupCommit {
  readonly #db: DatabaseSync;
  readonly #writes = new WeakMap<StatementSync, boolean>();
  readonly #busyTimeoutMs: number;
  readonly #begin: StatementSync;
  /** Writes to run and commit together at the end of this round. */
  #pending: Pending[] = [];
  #flushScheduled = false;
  /** When the oldest queued writes first found the lock held; null when they have not. */
  #lockedSince: number | null = null;
  #tries = 0;
  /** A transaction's savepoint is open. */
  #inTransaction = false;
  /** Work held back until the open transaction has ended, in arrival order. */
  #queue: (() => void)[] = [];
  /** The transactions not yet ended: each begins once the one before it has ended. */
  #transactions: Promise<unknown> = Promise.resolve();

  constructor(db: DatabaseSync, busyTimeoutMs: number = LOCK_WAIT_MS) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#begin = db.prepare('BEGIN IMMEDIATE');
  }

  /** Whether `statement` changes the database: it then waits for the round's commit. */
  isWrite(statement: StatementSync): boolean {
    let write = this.#writes.get(statement);
    if (write === undefined) {
      write = isWriteSql(statement.sourceSQL);
      this.#writes.set(statement, write);
    }
    return write;
  }

  /** Queues a write for this round's commit: resolves with what `execute` returned, once committed. */
  write<T>(execute: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ execute, resolve: resolve as (value: unknown) => void, reject });
      this.#schedule();
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
    return new Promise<T>((resolve) => this.#queue.push(() => resolve(attempt())));
  }

  /** A statement of the open transaction's own: run at once, inside it. */
  inside<T>(execute: () => T): Promise<T> {
    if (!this.#inTransaction) return Promise.reject(new Error('a transaction handle was used after its transaction ended'));
    // A failure that ended the whole transaction ended its savepoint with it: nothing more may run as part of it.
    if (!this.#db.isTransaction) return Promise.reject(new RolledBackError(new Error('the transaction was rolled back')));
    return new Promise<T>((resolve) => resolve(execute()));
  }

  /**
   * Runs `work` as one transaction, after the transactions begun before it: once this
   * connection holds the write lock, in a savepoint released and committed when `work`
   * resolves, rolled back to when it rejects. `work` runs its statements directly.
   */
  transaction<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#transactions.then(() => this.#whenLocked(() => this.#runTransaction(work)));
    this.#transactions = result.catch(() => undefined);
    return result;
  }

  /** Commits the queued writes now, waiting for the lock as long as busy_timeout allows: before the connection closes. */
  async drain(): Promise<void> {
    await this.#transactions;
    if (this.#pending.length === 0) return;
    try {
      // The connection's own busy_timeout: this one call may wait.
      this.#begin.run();
    } catch (error) {
      this.#fail(this.#pending.splice(0), new StoreUnavailableError(error));
      return;
    }
    this.#commitPending();
  }

  #schedule(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    if (this.#tries < TRIES_ON_NEXT_TURN) setImmediate(() => this.#flush());
    else setTimeout(() => this.#flush(), 1);
  }

  /** At the end of the round: takes the lock if it is free, runs the queued writes and commits them. */
  #flush(): void {
    this.#flushScheduled = false;
    // A transaction open on this connection commits what is queued when it ends.
    if (this.#pending.length === 0 || this.#inTransaction) return;
    if (!this.#tryLock()) {
      if (this.#pending.length > 0) this.#schedule();
      return;
    }
    this.#commitPending();
  }

  /**
   * `BEGIN IMMEDIATE` without waiting: true when this connection now holds the write lock.
   * When another holds it, false; the queued writes fail once they have waited `LOCK_WAIT_MS`.
   */
  #tryLock(): boolean {
    try {
      this.#beginNow();
      this.#lockedSince = null;
      this.#tries = 0;
      return true;
    } catch (error) {
      const now = performance.now();
      this.#lockedSince ??= now;
      this.#tries += 1;
      if (now - this.#lockedSince >= this.#busyTimeoutMs || !isBusy(error)) {
        this.#lockedSince = null;
        this.#tries = 0;
        this.#fail(this.#pending.splice(0), isBusy(error) ? new StoreUnavailableError(error) : error);
      }
      return false;
    }
  }

  /**
   * `BEGIN IMMEDIATE` with the busy handler off, so that a held lock fails at once instead
   * of sleeping the event loop. (A pragma takes effect when its statement is prepared,
   * which `exec` does each time; running a prepared one again would change nothing.)
   */
  #beginNow(): void {
    this.#db.exec('PRAGMA busy_timeout = 0');
    try {
      this.#begin.run();
    } finally {
      this.#db.exec(`PRAGMA busy_timeout = ${this.#busyTimeoutMs}`);
    }
  }

  /** Runs `locked` once this connection holds the write lock; fails as unavailable after `LOCK_WAIT_MS`. */
  #whenLocked<T>(locked: () => Promise<T>): Promise<T> {
    const since = performance.now();
    return new Promise<T>((resolve, reject) => {
      let tries = 0;
      const attempt = () => {
        try {
          this.#beginNow();
        } catch (error) {
          if (!isBusy(error)) return reject(error);
          if (performance.now() - since >= this.#busyTimeoutMs) return reject(new StoreUnavailableError(error));
          tries += 1;
          if (tries < TRIES_ON_NEXT_TURN) setImmediate(attempt);
          else setTimeout(attempt, 1);
          return;
        }
        resolve(locked());
      };
      attempt();
    });
  }

  async #runTransaction<T>(work: () => Promise<T>): Promise<T> {
    // What was queued before the transaction is committed with it, whatever becomes of its work.
    const before = this.#pending.splice(0);
    if (!this.#runAll(before)) {
      // The failure ended the transaction: nothing of it remains.
      this.#release();
      throw new RolledBackError(new Error('the transaction was rolled back before it began'));
    }
    this.#db.exec('SAVEPOINT tessera_transaction');
    this.#inTransaction = true;
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await work() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    this.#inTransaction = false;
    try {
      if (this.#db.isTransaction) {
        if (outcome.ok) this.#db.exec('RELEASE tessera_transaction');
        else this.#db.exec('ROLLBACK TO tessera_transaction; RELEASE tessera_transaction');
      }
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (!this.#db.isTransaction) {
      // A failure ended the whole transaction: the writes queued before it went with it.
      this.#fail(before, new RolledBackError(outcome.ok ? new Error('the transaction was rolled back') : outcome.error));
      if (outcome.ok) outcome = { ok: false, error: new RolledBackError(new Error('the transaction was rolled back')) };
    } else {
      const failure = this.#commit();
      this.#answer(before, failure);
      if (failure !== null && outcome.ok) outcome = { ok: false, error: failure };
    }
    this.#release();
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /** Lets the work held back during a transaction run, and commits what it queues. */
  #release(): void {
    while (!this.#inTransaction && this.#queue.length > 0) this.#queue.shift()!();
    if (this.#pending.length > 0) this.#schedule();
  }

  /** With the lock held: runs the queued writes, commits, answers them. */
  #commitPending(): void {
    const batch = this.#pending.splice(0);
    if (!this.#runAll(batch)) return;
    this.#answer(batch, this.#commit());
  }

  /**
   * Runs each write in the open transaction, keeping its outcome. False when a failure
   * ended the transaction: every write of `batch` is then answered with it.
   */
  #runAll(batch: Pending[]): boolean {
    for (const [index, pending] of batch.entries()) {
      try {
        pending.outcome = { ok: true, value: pending.execute() };
      } catch (error) {
        pending.outcome = { ok: false, error };
        // SQLite ends the whole transaction on some errors (I/O, disk full): the round is lost.
        if (!this.#db.isTransaction) {
          for (const other of batch.slice(0, index)) other.outcome = { ok: false, error: new RolledBackError(error) };
          for (const other of batch.slice(index + 1)) other.outcome = { ok: false, error: new RolledBackError(error) };
          this.#answer(batch, null);
          return false;
        }
      }
    }
    return true;
  }

  /** COMMIT; the failure, as every write of the transaction sees it, or null. */
  #commit(): unknown {
    try {
      this.#db.exec('COMMIT');
      return null;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      return new RolledBackError(error);
    }
  }

  /** Answers each write with its outcome, or with `failure` when the commit failed. */
  #answer(batch: readonly Pending[], failure: unknown): void {
    for (const pending of batch) {
      const outcome = pending.outcome!;
      if (failure !== null) pending.reject(outcome.ok ? failure : outcome.error);
      else if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(outcome.error);
    }
  }

  #fail(batch: readonly Pending[], error: unknown): void {
    for (const pending of batch) pending.reject(error);
  }
}

/** SQLITE_BUSY and its extended codes (BUSY_RECOVERY, BUSY_SNAPSHOT, …), which keep it in the low byte. */
function isBusy(error: unknown): boolean {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === 5;
}

import { StoreUnavailableError } from '../errors.ts';

/** SQLite's primary result code SQLITE_BUSY; extended codes (BUSY_RECOVERY, BUSY_SNAPSHOT, …) keep it in the low byte. */
const SQLITE_BUSY = 5;

/**
 * `error` as the store reports it: SQLITE_BUSY, which node:sqlite raises once another
 * process (a `tessera` command, another worker) has held the write lock for the whole
 * busy_timeout, becomes a `StoreUnavailableError`: the same request can succeed once the
 * lock is free.
 */
export function storeError(error: unknown): unknown {
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  return typeof errcode === 'number' && (errcode & 0xff) === SQLITE_BUSY ? new StoreUnavailableError(error) : error;
}

/**
 * Rate limits: fixed windows counted by key.
 */

export interface RateLimitStore {
  /** Counts one event against `key` in its fixed window; returns the count with this one. */
  hit(key: string, windowMs: number, now: number): Promise<number>;
  /** The count in the current window, without counting. */
  count(key: string, windowMs: number, now: number): Promise<number>;
  /** The current window of `key` (its count and when it ends), without counting; null when none is open at `now`. */
  window(key: string, now: number): Promise<{ readonly hits: number; readonly endsAt: number } | null>;
  /** Takes one event back from the current window (an attempt counted in advance that succeeded). */
  release(key: string, now: number): Promise<void>;
  /**
   * The windows open at `now` whose key starts with `prefix` and that count at least one
   * event, the latest-ending first, at most `limit` (an operator's view of the lockouts).
   */
  listOpen(prefix: string, now: number, limit: number): Promise<RateLimitWindow[]>;
  /** Forgets a key's count (an operator lifts a lockout); false when there was none. */
  remove(key: string): Promise<boolean>;
}

/** One open window of a limit: its key, its count and when it ends. */
export interface RateLimitWindow {
  readonly key: string;
  readonly hits: number;
  readonly endsAt: number;
}

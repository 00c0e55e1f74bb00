/**
 * Rate limits: fixed windows counted by key.
 */

export interface RateLimitStore {
  /**
   * Counts one event against `key` in its fixed window; returns the window's count with this
   * one and its end, which names the window the event landed in (for `release`).
   */
  hit(key: string, windowMs: number, now: number): Promise<WindowCount>;
  /** The count in the current window, without counting. */
  count(key: string, windowMs: number, now: number): Promise<number>;
  /** The current window of `key` (its count and when it ends), without counting; null when none is open at `now`. */
  window(key: string, now: number): Promise<WindowCount | null>;
  /**
   * Takes one event back (an attempt counted in advance that succeeded) from the window it
   * landed in, the one `hit` said ends at `windowEndsAt`, never from a later one: an attempt
   * that finishes after its window rolled over must not erase a failure counted in the next.
   */
  release(key: string, windowEndsAt: number): Promise<void>;
  /**
   * The windows open at `now` whose key starts with `prefix` and that count at least one
   * event, the latest-ending first, at most `limit` (an operator's view of the lockouts).
   */
  listOpen(prefix: string, now: number, limit: number): Promise<RateLimitWindow[]>;
  /** Forgets a key's count (an operator lifts a lockout); false when there was none. */
  remove(key: string): Promise<boolean>;
}

/** A window of a limit: its count and when it ends (milliseconds since the epoch). */
export interface WindowCount {
  readonly hits: number;
  readonly endsAt: number;
}

/** One open window of a limit: its key, its count and when it ends. */
export interface RateLimitWindow extends WindowCount {
  readonly key: string;
}

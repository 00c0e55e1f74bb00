import type { RateLimitStore } from '../store/types.ts';

/** A counter an attempt is charged to, and how many failures it allows per window. */
export interface AttemptLimit {
  readonly key: string;
  readonly limit: number;
}

/**
 * Guessing limits (sign-in passwords, RFC 8628 §5.1 user codes) that hold under concurrency.
 * Each attempt is counted before it is tried, in the store's one atomic upsert, so a burst of
 * parallel guesses cannot all read a count under the limit before any of them is recorded
 * (across instances too: the counters live in the shared store). An attempt that turns out
 * right, or is refused, gives its place back: what stays counted are the failures.
 */
export class Attempt {
  readonly #store: RateLimitStore;
  readonly #limits: readonly AttemptLimit[];
  readonly #now: number;

  private constructor(store: RateLimitStore, limits: readonly AttemptLimit[], now: number) {
    this.#store = store;
    this.#limits = limits;
    this.#now = now;
  }

  /** Counts an attempt against every limit; null (and nothing stays counted) when one is already used up. */
  static async reserve(store: RateLimitStore, limits: readonly AttemptLimit[], windowMs: number, now: number): Promise<Attempt | null> {
    const counts = await Promise.all(limits.map(({ key }) => store.hit(key, windowMs, now)));
    const attempt = new Attempt(store, limits, now);
    if (counts.some((count, i) => count > limits[i]!.limit)) {
      await attempt.succeeded();
      return null;
    }
    return attempt;
  }

  /** The attempt was right (or did not count): take it back. A failure simply stays counted. */
  async succeeded(): Promise<void> {
    await Promise.all(this.#limits.map(({ key }) => this.#store.release(key, this.#now)));
  }
}

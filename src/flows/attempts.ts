import type { RateLimitStore, WindowCount } from '../store/types.ts';

/** A counter an attempt is charged to, and how many failures it allows per window. */
export interface AttemptLimit {
  readonly key: string;
  readonly limit: number;
}

/** Why an attempt was not let through: the limit that is used up, and when its window ends. */
export interface Refusal {
  readonly limit: AttemptLimit;
  /** Whole seconds until the window ends and the limit allows attempts again (at least 1). */
  readonly retryAfterSeconds: number;
  /** When the window ends (milliseconds since the epoch): a refusal's events are counted per limit and window. */
  readonly endsAt: number;
}

/**
 * Guessing limits (sign-in passwords, RFC 8628 §5.1 user codes) that hold under concurrency.
 * A limit already used up is found by reading alone, so a refused attempt costs no write
 * (refusals used to insert and delete a count each). Otherwise each attempt is
 * counted before it is tried, in the store's one atomic upsert, so a burst of parallel
 * guesses cannot all read a count under the limit before any of them is recorded (across
 * instances too: the counters live in the shared store). An attempt that turns out right,
 * or is refused, gives its place back, in the window it was counted in even if that window
 * has ended since: what stays counted are the failures.
 */
export class Attempt {
  readonly #store: RateLimitStore;
  readonly #limits: readonly AttemptLimit[];
  /** The windows this attempt was counted in, in the order of the limits: it is given back to those. */
  readonly #windows: readonly WindowCount[];
  /** The counts, this attempt included, in the order of the limits. */
  readonly counts: readonly number[];

  private constructor(store: RateLimitStore, limits: readonly AttemptLimit[], windows: readonly WindowCount[]) {
    this.#store = store;
    this.#limits = limits;
    this.#windows = windows;
    this.counts = windows.map(({ hits }) => hits);
  }

  /**
   * Counts an attempt against every limit, or refuses it (and nothing stays counted) when
   * one is used up. A limit of `Infinity` never refuses: it only counts.
   */
  static async reserve(store: RateLimitStore, limits: readonly AttemptLimit[], windowMs: number, now: number): Promise<Attempt | Refusal> {
    const windows = await Promise.all(limits.map(({ key, limit }) => (Number.isFinite(limit) ? store.window(key, now) : null)));
    const full = windows.findIndex((window, i) => window !== null && window.hits >= limits[i]!.limit);
    if (full >= 0) return refusal(limits[full]!, windows[full]!.endsAt, now);
    const counted = await Promise.all(limits.map(({ key }) => store.hit(key, windowMs, now)));
    const attempt = new Attempt(store, limits, counted);
    const over = counted.findIndex(({ hits }, i) => hits > limits[i]!.limit);
    if (over >= 0) {
      // Parallel attempts passed the read together; the count decides, and this one lost.
      await attempt.succeeded();
      return refusal(limits[over]!, counted[over]!.endsAt, now);
    }
    return attempt;
  }

  /** The attempt was right (or did not count): take it back. A failure simply stays counted. */
  async succeeded(): Promise<void> {
    await Promise.all(this.#limits.map(({ key }, i) => this.#store.release(key, this.#windows[i]!.endsAt)));
  }
}

function refusal(limit: AttemptLimit, endsAt: number, now: number): Refusal {
  return { limit, retryAfterSeconds: Math.max(1, Math.ceil((endsAt - now) / 1000)), endsAt };
}

/** True for a refusal from `Attempt.reserve`. */
export function isRefusal(result: Attempt | Refusal): result is Refusal {
  return !(result instanceof Attempt);
}

/**
 * Says yes once per key and window: repeated refusals, and alerts, make one log line per
 * window instead of one per request. Per process; the map forgets everything past its size
 * rather than grow without bound.
 */
export class OncePerWindow {
  readonly #until = new Map<string, number>();
  readonly #windowMs: number;
  readonly #maxKeys: number;

  constructor(windowMs: number, maxKeys = 10_000) {
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  first(key: string, now: number): boolean {
    const until = this.#until.get(key);
    if (until !== undefined && until > now) return false;
    if (this.#until.size >= this.#maxKeys) this.#until.clear();
    this.#until.set(key, now + this.#windowMs);
    return true;
  }
}

/**
 * A fixed-window request limit kept in this process's memory: for limits on requests that
 * create something (device authorizations), where a counter in the store would itself be a
 * write per request. A refused request is not counted and costs nothing. Per instance: N
 * instances allow N times the limit in all.
 */
export class LocalRateLimit {
  readonly #windows = new Map<string, { count: number; endsAt: number }>();
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxKeys: number;

  constructor(limit: number, windowMs: number, maxKeys = 100_000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#maxKeys = maxKeys;
  }

  /** Counts one request for `key`; null when allowed, else the seconds until its window ends. */
  take(key: string, now: number): number | null {
    let window = this.#windows.get(key);
    if (!window || window.endsAt <= now) {
      if (this.#windows.size >= this.#maxKeys) this.#sweep(now);
      window = { count: 0, endsAt: now + this.#windowMs };
      this.#windows.set(key, window);
    }
    if (window.count >= this.#limit) return Math.max(1, Math.ceil((window.endsAt - now) / 1000));
    window.count += 1;
    return null;
  }

  #sweep(now: number): void {
    for (const [key, window] of this.#windows) if (window.endsAt <= now) this.#windows.delete(key);
    // Still full of live windows: forget them rather than grow without bound.
    if (this.#windows.size >= this.#maxKeys) this.#windows.clear();
  }
}

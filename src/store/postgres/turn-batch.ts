interface Pending<T, R> {
  readonly item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * The calls of one kind that arrive in one turn of the event loop, sent to PostgreSQL as
 * one statement (the model is the SQLite store's group commit): one round trip, one commit
 * and one statement's overhead for the whole batch, where each call alone paid all three.
 * Used for the two hottest writes, device polls and device authorizations.
 *
 * One batch of a kind is in flight at a time: the calls that arrive while it is wait for its
 * answer and go together in the next (the SQLite store's group commit does the same with its
 * one writer). Under load the batches grow with the wait, where a batch a turn sent one
 * statement for every four or five calls, and PostgreSQL's own cost per statement (its
 * planning, its executor's start, its commit and WAL flush, the round trip) was most of
 * what a call cost it. A call alone, on an idle instance, is sent at the end of its turn as
 * before.
 *
 * Each call keeps its own meaning. A batch never holds two calls with the same `key` (a
 * statement cannot update one row twice): the second waits for the next batch, as it would
 * have waited for the row lock. A call alone goes through `one`, the ordinary statement.
 * A batch that fails in a way one of its calls alone may cause or escape (`retryAlone`) is
 * tried again one call at a time, so that only that call fails: a row that breaks a
 * constraint, or the deadlock victim PostgreSQL picks when two instances' batches lock the
 * same rows in different orders (40P01). Any other failure (an outage) fails every call.
 */
export class TurnBatch<T, R> {
  readonly #key: (item: T) => string;
  readonly #one: (item: T) => Promise<R>;
  readonly #many: (items: readonly T[]) => Promise<ReadonlyMap<string, R>>;
  readonly #absent: R;
  readonly #retryAlone: (error: unknown) => boolean;
  #pending: Pending<T, R>[] = [];
  #scheduled = false;
  #inFlight = false;

  /**
   * `many` answers the batch as results by key; a call whose key it leaves out gets
   * `absent` (no row matched, or the insert was refused by its conflict clause).
   */
  constructor(options: {
    key: (item: T) => string;
    one: (item: T) => Promise<R>;
    many: (items: readonly T[]) => Promise<ReadonlyMap<string, R>>;
    absent: R;
    retryAlone: (error: unknown) => boolean;
  }) {
    this.#key = options.key;
    this.#one = options.one;
    this.#many = options.many;
    this.#absent = options.absent;
    this.#retryAlone = options.retryAlone;
  }

  run(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  /** Sends the pending calls at the end of this turn, unless a batch is in flight: then when it has answered. */
  #schedule(): void {
    if (this.#scheduled || this.#inFlight || this.#pending.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    const batch: Pending<T, R>[] = [];
    const later: Pending<T, R>[] = [];
    const keys = new Set<string>();
    for (const call of this.#pending) {
      const key = this.#key(call.item);
      if (keys.has(key)) later.push(call);
      else {
        keys.add(key);
        batch.push(call);
      }
    }
    this.#pending = later;
    this.#inFlight = true;
    void this.#send(batch).finally(() => {
      this.#inFlight = false;
      this.#schedule();
    });
  }

  /** Answers every call of the batch; settles when each has its answer. */
  async #send(batch: readonly Pending<T, R>[]): Promise<void> {
    // Through a settled promise, so that a call that throws at once fails only itself.
    const alone = (call: Pending<T, R>): Promise<void> =>
      Promise.resolve(call.item)
        .then((item) => this.#one(item))
        .then(call.resolve, call.reject);
    if (batch.length === 1) return alone(batch[0]!);
    try {
      const results = await this.#many(batch.map((call) => call.item));
      for (const call of batch) call.resolve(results.get(this.#key(call.item)) ?? this.#absent);
    } catch (error) {
      if (this.#retryAlone(error)) await Promise.all(batch.map(alone));
      else for (const call of batch) call.reject(error);
    }
  }
}

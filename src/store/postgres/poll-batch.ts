import type { Row } from '../rows.ts';
import { StoreUnavailableError } from '../errors.ts';

/** One device poll waiting for its batch. */
export interface PendingPoll {
  readonly deviceCodeHash: string;
  readonly clientId: string;
  readonly now: number;
  resolve(row: Row | undefined): void;
  reject(error: unknown): void;
}

/**
 * Device polls that arrive in one turn of the event loop go to PostgreSQL as one statement
 * (the model is the SQLite store's group commit): one round trip, one commit and one
 * statement's overhead for the whole batch, where each poll alone paid for all three. Each
 * poll keeps its own semantics: the statement applies the same conditional SET to each
 * row, and a row is updated once per statement, so a batch never holds one device code
 * twice (a second poll of the same code waits for the next batch, as it would have waited
 * for the row lock).
 *
 * A batch that fails for any reason but an outage is tried again one poll at a time: two
 * instances' batches can lock the same rows in different orders and one of them is then
 * chosen as a deadlock victim (40P01), which must not fail every poll in it.
 */
export class PollBatcher {
  readonly #one: (poll: PendingPoll) => Promise<Row | undefined>;
  readonly #many: (polls: readonly PendingPoll[]) => Promise<Row[]>;
  #pending: PendingPoll[] = [];
  #scheduled = false;

  constructor(one: (poll: PendingPoll) => Promise<Row | undefined>, many: (polls: readonly PendingPoll[]) => Promise<Row[]>) {
    this.#one = one;
    this.#many = many;
  }

  /** The polled row (with `last_outcome`), or undefined when no record matches. */
  poll(deviceCodeHash: string, clientId: string, now: number): Promise<Row | undefined> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ deviceCodeHash, clientId, now, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    const batch: PendingPoll[] = [];
    const later: PendingPoll[] = [];
    const codes = new Set<string>();
    for (const poll of this.#pending) {
      if (codes.has(poll.deviceCodeHash)) later.push(poll);
      else {
        codes.add(poll.deviceCodeHash);
        batch.push(poll);
      }
    }
    this.#pending = later;
    if (later.length > 0) this.#schedule();
    if (batch.length === 1) {
      const [poll] = batch as [PendingPoll];
      this.#one(poll).then(poll.resolve, poll.reject);
      return;
    }
    this.#many(batch).then(
      (rows) => {
        const byCode = new Map(rows.map((row) => [row['device_code_hash'], row]));
        for (const poll of batch) poll.resolve(byCode.get(poll.deviceCodeHash));
      },
      (error: unknown) => {
        if (error instanceof StoreUnavailableError) {
          for (const poll of batch) poll.reject(error);
          return;
        }
        for (const poll of batch) this.#one(poll).then(poll.resolve, poll.reject);
      },
    );
  }
}

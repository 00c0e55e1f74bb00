/**
 * E-mail address changes waiting for their link: a person asked for a new address on their
 * account page, and the address is changed only when the link mailed to it is followed. Single
 * use, stored by the hash of the link's token, bound to the one address it was sent to.
 */
export interface EmailChangeRecord {
  readonly tokenHash: string;
  readonly userId: string;
  /** The new address, the one the link was mailed to. */
  readonly email: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

export interface EmailChangeStore {
  create(change: EmailChangeRecord): Promise<void>;
  /** The record if it is unused and unexpired at `now`; does not use it up. */
  find(tokenHash: string, now: number): Promise<EmailChangeRecord | null>;
  /** Uses the link up: exactly one caller receives the record, only while unused and unexpired at `now`. */
  consume(tokenHash: string, now: number): Promise<EmailChangeRecord | null>;
  /** The user's newest live change, or null: the address the account page says is waiting. */
  pendingFor(userId: string, now: number): Promise<EmailChangeRecord | null>;
  /** Uses up every unused link of the user at once: a newer change was asked for, or the address was set otherwise. */
  spendAllForUser(userId: string, now: number): Promise<void>;
}

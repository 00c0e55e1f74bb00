/**
 * Password reset links (`tessera user reset-link`, "Forgot password?"), single use.
 */

/**
 * A single-use link to set a new password (`tessera user reset-link`), stored by the hash of
 * its token.
 */
export interface PasswordResetRecord {
  readonly tokenHash: string;
  readonly userId: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly usedAt: number | null;
  /**
   * The address the server mailed the link to ("Forgot password?", flows/recovery.ts); null for
   * an operator's link (`tessera user reset-link`, the admin API, the console), which is printed
   * or shown and handed on by hand. Only a mailed link shows that its user reads that mailbox.
   */
  readonly mailedTo: string | null;
}

export interface PasswordResetStore {
  create(reset: PasswordResetRecord): Promise<void>;
  /** The record if it is unused and unexpired at `now`; does not use it up. */
  find(tokenHash: string, now: number): Promise<PasswordResetRecord | null>;
  /**
   * Uses the link up: exactly one caller receives the record, only while it is unused and
   * unexpired at `now`; otherwise nothing changes and null is returned.
   */
  consume(tokenHash: string, now: number): Promise<PasswordResetRecord | null>;
  /** Uses up every unused link of the user at once: a newer one was made, or one was used. */
  spendAllForUser(userId: string, now: number): Promise<void>;
}

import type { AuthMethod } from '../core/auth-methods.ts';

/**
 * Second factors other than passkeys: TOTP secrets (RFC 6238), recovery codes, and the
 * sign-ins that wait for one of them.
 */

/** A TOTP secret (RFC 6238), confirmed once the person has typed a code it makes. */
export interface TotpRecord {
  readonly userId: string;
  /** RFC 4648 base32, as shown to the person and put in the QR code. */
  readonly secret: string;
  readonly createdAt: number;
  readonly confirmedAt: number | null;
  /** The time step of the last code accepted: no code of this step or before is accepted again. */
  readonly lastStep: number | null;
}

export interface TotpStore {
  /** Stores a new unconfirmed secret, replacing one not yet confirmed; false when one is confirmed already. */
  begin(userId: string, secret: string, now: number): Promise<boolean>;
  get(userId: string): Promise<TotpRecord | null>;
  /** Confirms the unconfirmed secret with the step of the code typed; null when there was none to confirm. */
  confirm(userId: string, step: number, now: number): Promise<TotpRecord | null>;
  /** Accepts a code of time step `step` once: false when that step or a later one was used already. */
  useStep(userId: string, step: number): Promise<boolean>;
  remove(userId: string): Promise<boolean>;
}

export interface RecoveryCodeStore {
  /** Replaces the user's recovery codes with these (hashes), in the caller's transaction. */
  replace(userId: string, hashes: readonly string[], now: number): Promise<void>;
  /** Uses one: true for exactly one caller, when it is the user's and unused. */
  consume(userId: string, hash: string, now: number): Promise<boolean>;
  countUnused(userId: string): Promise<number>;
  removeAllForUser(userId: string): Promise<void>;
}

/** A first step accepted (a password, an upstream provider), waiting for its one-time code: keyed by the hash of a cookie's value. */
export interface PendingSignInRecord {
  readonly idHash: string;
  readonly userId: string;
  /** What the first step proved (RFC 8176), which the code adds to; empty when it proved nothing Tessera can name. */
  readonly amr: readonly AuthMethod[];
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface PendingSignInStore {
  create(pending: PendingSignInRecord): Promise<void>;
  get(idHash: string, now: number): Promise<PendingSignInRecord | null>;
  /** Single use: exactly one caller receives the record (the code was right); it is then gone. */
  consume(idHash: string, now: number): Promise<PendingSignInRecord | null>;
  /** Deletes the user's sign-ins waiting for a code (a disabled or removed user). */
  removeForUser(userId: string): Promise<void>;
}

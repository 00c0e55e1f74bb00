/**
 * Sign-ups waiting for their e-mail link: single use, stored by the hash of the link's token.
 * A new account waits here, password hash and all, and is made only when the link is followed
 * (one conditional UPDATE uses the link up); with `userId`, the account exists already
 * (TESSERA_SIGN_UP_VERIFY=later) and the link verifies its address.
 */
import type { PasskeyRecord } from './passkeys.ts';

/**
 * The passkey a person signed up with, registered already (its challenge answered and
 * verified) but kept here until the account is made: `userId` is the account's id to be, the
 * user handle the authenticator stored with it (WebAuthn Level 3 §5.4.3).
 */
export type SignUpPasskey = Omit<PasskeyRecord, 'createdAt' | 'lastUsedAt'>;

export interface SignUpRecord {
  readonly tokenHash: string;
  /** The account whose address the link verifies; null: the link makes the account. */
  readonly userId: string | null;
  readonly username: string;
  readonly name: string | null;
  readonly email: string;
  /** `!` (which matches no password) for a sign-up with a passkey. */
  readonly passwordHash: string;
  /** The passkey the account is made with instead of a password; null: a password. */
  readonly passkey: SignUpPasskey | null;
  readonly locale: string | null;
  /** Where the person goes once the link is followed: a path on this server (the app's request). */
  readonly returnTo: string;
  /**
   * The browser the sign-up form was posted from (the hash of its sign-up cookie,
   * flows/session/cookies.ts `signUp`): a link that makes the account is used there in one step, and anywhere else
   * only with the password chosen in the form (flows/address-link.ts). Null for a sign-up
   * that waited from before version 54.
   */
  readonly browser: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

export interface SignUpStore {
  create(signUp: SignUpRecord): Promise<void>;
  /** The record if it is unused and unexpired at `now`; does not use it up. */
  find(tokenHash: string, now: number): Promise<SignUpRecord | null>;
  /** Uses the link up: exactly one caller receives the record, only while unused and unexpired at `now`. */
  consume(tokenHash: string, now: number): Promise<SignUpRecord | null>;
}

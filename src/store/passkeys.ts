/**
 * Passkeys (WebAuthn Level 3) and the challenges of their ceremonies.
 */

/** A passkey: a WebAuthn credential registered to a user (WebAuthn Level 3 §6.1, §7.1 step 27). */
export interface PasskeyRecord {
  /** The credential id, base64url, as the authenticator made it. */
  readonly id: string;
  readonly userId: string;
  /** The person's name for it, shown on their account page. */
  readonly name: string;
  /** The COSE public key, base64url. */
  readonly publicKey: string;
  /** The signature counter the last ceremony reported (§6.1.1); 0 when the authenticator keeps none. */
  readonly counter: number;
  readonly transports: readonly string[];
  /** `multiDevice` when the credential may be synced to other devices (backup eligible, §6.1.3). */
  readonly deviceType: 'singleDevice' | 'multiDevice';
  /** Backup state as last reported (§6.1.3 BS flag). */
  readonly backedUp: boolean;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
}

export interface PasskeyStore {
  /** Throws `DuplicateError` when the credential id is registered already. */
  create(passkey: PasskeyRecord): Promise<void>;
  get(id: string): Promise<PasskeyRecord | null>;
  /** The user's passkeys, oldest first. */
  listForUser(userId: string): Promise<PasskeyRecord[]>;
  /**
   * Records a sign-in: the counter, backup state and time. Only a counter that moved forward
   * (or stays 0 on an authenticator without one) is accepted; otherwise nothing changes and
   * null is returned (a cloned authenticator, WebAuthn §6.1.1).
   */
  recordUse(id: string, use: { readonly counter: number; readonly backedUp: boolean }, now: number): Promise<PasskeyRecord | null>;
  /** Removes the user's passkey; false when they have none with this id. */
  remove(id: string, userId: string): Promise<boolean>;
  /** Removes every passkey of the user; returns how many there were. */
  removeAllForUser(userId: string): Promise<number>;
}

/** A WebAuthn ceremony's challenge (§13.4.3), stored by hash until answered or expired. */
export interface WebauthnChallengeRecord {
  readonly challengeHash: string;
  readonly purpose: 'register' | 'authenticate';
  /** For a registration: whose passkey it will be. */
  readonly userId: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
}

export interface WebauthnChallengeStore {
  create(challenge: WebauthnChallengeRecord): Promise<void>;
  /** Single use: exactly one caller receives the record, if it is unexpired at `now`; it is then gone. */
  consume(challengeHash: string, purpose: WebauthnChallengeRecord['purpose'], now: number): Promise<WebauthnChallengeRecord | null>;
  /** Deletes the user's ceremonies under way (a removed user). */
  removeForUser(userId: string): Promise<void>;
}

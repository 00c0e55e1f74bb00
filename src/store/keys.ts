/**
 * Signing keys: published, activated, retired and expired on a schedule.
 */

import type { SigningAlgorithm } from '../config/index.ts';

/**
 * A signing key pair as JWKs. Published from `createdAt` until `expiresAt`. In the store the
 * private JWK is encrypted (tokens/key-encryption.ts); the store itself neither knows nor
 * cares, and keeps whatever object it is given.
 */
export interface SigningKeyRecord {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateJwk: Readonly<Record<string, unknown>>;
  readonly publicJwk: Readonly<Record<string, unknown>>;
  readonly createdAt: number;
  /** Signs from this time on: later than `createdAt` by the publication lead time. */
  readonly activatesAt: number;
  /** Stops signing at this time (its successor has activated). */
  readonly retiresAt: number | null;
  /** Leaves the JWKS at this time: after the last token it signed has expired. */
  readonly expiresAt: number | null;
}

export interface KeyStore {
  add(key: SigningKeyRecord): Promise<void>;
  /** Keys still published at `now` (expiresAt null or later), oldest first. */
  listPublished(now: number): Promise<SigningKeyRecord[]>;
  /** Schedules the end of a key's signing and publication. */
  schedule(kid: string, retiresAt: number, expiresAt: number): Promise<void>;
  /** Every key, published or not, oldest first. */
  list(): Promise<SigningKeyRecord[]>;
  /** Replaces a key's private JWK (as stored: encrypted, tokens/key-encryption.ts). */
  setPrivateJwk(kid: string, privateJwk: Readonly<Record<string, unknown>>): Promise<void>;
}

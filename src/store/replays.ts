/**
 * What is accepted once and remembered until it expires, so that a replay is recognised:
 * DPoP proofs (RFC 9449 §11.1) and client assertions (RFC 7523 §3).
 */

/** DPoP proofs seen (RFC 9449 §11.1), so that a proof is accepted once. */
export interface DpopProofStore {
  /**
   * Records a proof by `key` until `expiresAt`: true the first time, false when a record
   * with this key is still unexpired at `now` (a replay). One statement.
   */
  use(key: string, expiresAt: number, now: number): Promise<boolean>;
}

/**
 * The `jti` of every client assertion accepted (RFC 7523 §3: "The JWT MAY contain a "jti"
 * claim ... the authorization server MAY ensure that JWTs are not replayed"), kept until the
 * assertion expires.
 */
export interface ClientAssertionStore {
  /**
   * Records `jtiHash` (`hashSecret` of the client id and the jti) as used until `expiresAt`:
   * true for exactly one caller, false when it is already recorded and unexpired at `now`.
   */
  use(jtiHash: string, expiresAt: number, now: number): Promise<boolean>;
}

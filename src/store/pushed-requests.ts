/**
 * Pushed authorization requests (RFC 9126).
 */

/** A pushed authorization request (RFC 9126 §2), stored by the hash of its `request_uri`. */
export interface PushedRequestRecord {
  readonly hash: string;
  readonly clientId: string;
  /** The authorization request parameters, validated when pushed; `resource` may be several (RFC 8707 §2). */
  readonly params: Readonly<Record<string, string | readonly string[]>>;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** When a browser first brought it to the authorization endpoint. */
  readonly claimedAt: number | null;
  /** `hashSecret` of that browser's CSRF cookie. */
  readonly browser: string | null;
  /** When the user approved or denied it: it is spent. */
  readonly decidedAt: number | null;
}

export interface PushedRequestStore {
  create(record: PushedRequestRecord): Promise<void>;
  /**
   * The first use at the authorization endpoint (RFC 9126 §4: single use): only an
   * unclaimed, unexpired request of this client changes; it is claimed by `browser` and
   * lives on until `until` for the sign-in and approval. Null when there was none.
   */
  claim(hash: string, clientId: string, browser: string, now: number, until: number): Promise<PushedRequestRecord | null>;
  /** The request this browser claimed, while undecided and unexpired; changes nothing. */
  resume(hash: string, clientId: string, browser: string, now: number): Promise<PushedRequestRecord | null>;
  /** Spends a claimed request on the user's decision: exactly one caller receives it. */
  decide(hash: string, clientId: string, browser: string, now: number): Promise<PushedRequestRecord | null>;
  /** The record whatever its state, to tell where to report a request_uri that cannot be used. */
  find(hash: string): Promise<PushedRequestRecord | null>;
}

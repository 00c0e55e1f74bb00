/**
 * Apps that register themselves (RFC 7591, RFC 7592, Client ID Metadata Documents): the
 * tokens an app manages its registration with, the operator's initial access tokens, and
 * the metadata documents fetched for `client_id` URLs.
 */

/** RFC 7592 §1: the one registration access token of a dynamically registered client, by its hash. */
export interface RegistrationTokenStore {
  /** Gives the client its token (the one of a new registration). */
  set(clientId: string, tokenHash: string, now: number): Promise<void>;
  /** The hash of the client's current token; null when it has none (the operator registered it). */
  get(clientId: string): Promise<string | null>;
  /**
   * Replaces the token in one conditional statement, only while `presentedHash` is current:
   * of two requests presenting the same token, one rotates it. False: nothing changed.
   */
  rotate(clientId: string, presentedHash: string, nextHash: string, now: number): Promise<boolean>;
}

/** RFC 7591 §3: a token the operator hands out, which lets its holder register clients. */
export interface InitialAccessTokenRecord {
  readonly id: string;
  /** `hashSecret` of the token: the token itself is shown once, when made. */
  readonly tokenHash: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** How many registrations it allows; null: any number until it expires. */
  readonly maxUses: number | null;
  readonly uses: number;
}

export interface InitialAccessTokenStore {
  create(token: InitialAccessTokenRecord): Promise<void>;
  /**
   * Spends one use, in one conditional statement: only a token not expired at `now` and not
   * used up. The token as spent, or null (nothing changed).
   */
  use(tokenHash: string, now: number): Promise<InitialAccessTokenRecord | null>;
  /** Gives back one use (the registration it was spent on was refused). */
  refund(id: string): Promise<void>;
  /** The tokens not expired at `now`, newest first. */
  list(now: number): Promise<InitialAccessTokenRecord[]>;
  /** False when there was none. */
  remove(id: string): Promise<boolean>;
}

/**
 * A fetched Client ID Metadata Document, or why it could not be used: a refusal is kept too,
 * so that a URL is not fetched again before `expiresAt` whatever is asked.
 */
export interface MetadataDocumentRecord {
  readonly url: string;
  /** The document as fetched; null when it was refused. */
  readonly document: Readonly<Record<string, unknown>> | null;
  /** Why it was refused; null when it was taken. */
  readonly problem: string | null;
  readonly fetchedAt: number;
  readonly expiresAt: number;
}

export interface MetadataDocumentStore {
  /** The record of `url` still fresh at `now`, or null. */
  get(url: string, now: number): Promise<MetadataDocumentRecord | null>;
  /** Stores or replaces the record of its URL. */
  put(record: MetadataDocumentRecord): Promise<void>;
}

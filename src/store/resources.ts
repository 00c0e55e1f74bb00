/**
 * APIs registered by the operator and their scopes (RFC 8707).
 */

import type { SigningAlgorithm } from '../config/index.ts';

/** One scope of an API resource: its name is unique across the server. */
export interface ResourceScope {
  readonly name: string;
  /** What a person reads on the consent page ("See your photos"). */
  readonly description: string;
}

/** An API registered by the operator (RFC 8707 §2: a resource indicator and its scopes). */
export interface ResourceRecord {
  /** An absolute URI without a fragment: the access token's `aud` (RFC 9068 §3). */
  readonly identifier: string;
  /** Shown to the user on consent and account pages. */
  readonly name: string;
  /** In the order they were registered. */
  readonly scopes: readonly ResourceScope[];
  /** Seconds an access token for this API lives; null for the server's default. */
  readonly accessTokenTtl: number | null;
  /** `hashSecret` of the resource server's introspection secret (RFC 7662 §2.1); null when it has none. */
  readonly introspectionSecretHash: string | null;
  /**
   * What its access tokens are signed with: RS256 by default, the one algorithm RFC 9068
   * §2.1 promises resource servers (`resource add|update --signing-alg`).
   */
  readonly signingAlg: SigningAlgorithm;
  readonly createdAt: number;
}

/** What `ResourceStore.update` may change; absent fields stay as they are. */
export interface ResourceChanges {
  readonly signingAlg?: SigningAlgorithm;
  readonly name?: string;
  readonly scopes?: readonly ResourceScope[];
  /** Null: the server's default. */
  readonly accessTokenTtl?: number | null;
}

export interface ResourceStore {
  /**
   * Registers the resource with its scopes. Throws `DuplicateError` when the identifier or a
   * scope name is taken; several writes, so call it inside `Store.transaction`.
   */
  create(resource: ResourceRecord): Promise<void>;
  get(identifier: string): Promise<ResourceRecord | null>;
  /** Every resource with its scopes, oldest first. */
  list(): Promise<ResourceRecord[]>;
  /**
   * Changes the fields given; false when there is no such resource. `scopes` replaces the
   * list (several writes: call it inside `Store.transaction`), and a name it drops leaves
   * every grant's scope, as `remove` takes them; throws `DuplicateError` when another
   * resource has one of the names.
   */
  update(identifier: string, changes: ResourceChanges): Promise<boolean>;
  /**
   * Removes the resource and its scopes, and takes its scope names out of every grant's scope
   * and every client's registered scopes; false when there was none. Several writes: call it
   * inside `Store.transaction`.
   */
  remove(identifier: string): Promise<boolean>;
}

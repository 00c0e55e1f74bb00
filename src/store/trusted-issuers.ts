/**
 * Trusted issuers: the identity providers whose Identity Assertion JWT Authorization Grants
 * (ID-JAGs, draft-ietf-oauth-identity-assertion-authz-grant) this server redeems, each with
 * where its signing keys are.
 */

export interface TrustedIssuerRecord {
  /** Its issuer identifier: the `iss` of its ID-JAGs, exactly. */
  readonly issuer: string;
  /** Where its JWK Set is fetched (RFC 7517), or null when `jwks` is given. */
  readonly jwksUri: string | null;
  /** Its keys as a JWK Set, when given rather than fetched. */
  readonly jwks: Readonly<Record<string, unknown>> | null;
  /**
   * Added by the server's owner (the `tessera` command): its jwks_uri is fetched wherever it
   * points, loopback included. Else (the admin API, the console) it is held to the public
   * network unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS (core/outbound.ts), as webhooks are.
   */
  readonly addedByOwner: boolean;
  readonly createdAt: number;
}

export interface TrustedIssuerStore {
  /** Adds it; DuplicateError when one with this issuer exists. */
  create(issuer: TrustedIssuerRecord): Promise<void>;
  get(issuer: string): Promise<TrustedIssuerRecord | null>;
  list(): Promise<TrustedIssuerRecord[]>;
  /** False when there was none. */
  remove(issuer: string): Promise<boolean>;
}

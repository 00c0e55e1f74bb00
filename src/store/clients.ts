/**
 * Registered clients (RFC 6749 §2, RFC 7591): what a client is and how its registration changes.
 */

import type { ClientAuthMethod, GrantType, PkcePolicy, RequestObjectAlgorithm } from '../core/protocol.ts';

/** A registered client (RFC 6749 §2). */
export interface ClientRecord {
  readonly id: string;
  /** Shown to the user on the approval page. */
  readonly name: string;
  /** `hashSecret(client_secret)`; null for a public client (RFC 6749 §2.1). */
  readonly secretHash: string | null;
  /** Compared by exact string match (RFC 9700 §2.1). */
  readonly redirectUris: readonly string[];
  /** The scopes this client may ask for. */
  readonly scopes: readonly string[];
  readonly grantTypes: readonly GrantType[];
  /** Browser origins allowed to call the token-side endpoints through CORS. */
  readonly webOrigins: readonly string[];
  /**
   * CIDR ranges a device authorization for this client may come from (the cross-device
   * BCP's "restrict the device flow to known networks"); empty: any address.
   */
  readonly deviceNetworks: readonly string[];
  readonly createdAt: number;
  /**
   * How it authenticates (RFC 7591 §2 `token_endpoint_auth_method`): `none` exactly when it
   * is public; a secret method has a `secretHash`, `private_key_jwt` has `jwksUri` or `jwks`.
   */
  readonly authMethod: ClientAuthMethod;
  /** The secret before the last rotation, accepted until `previousSecretExpiresAt`. */
  readonly previousSecretHash: string | null;
  readonly previousSecretExpiresAt: number | null;
  /** `private_key_jwt`: where the client publishes its public keys (fetched and cached). */
  readonly jwksUri: string | null;
  /** `private_key_jwt`: its public keys as registered, a JWK Set (RFC 7517 §5). */
  readonly jwks: Readonly<Record<string, unknown>> | null;
  /** Whether its authorization requests must use PKCE (RFC 9700 §2.1.1). */
  readonly pkce: PkcePolicy;
  /**
   * Only a passkey sign-in may approve for this client (the cross-device BCP's defence for
   * device clients). Absent means false.
   */
  readonly requirePhishingResistant?: boolean;
  /** The operator's own app: the code flow signs the person in without a consent page. */
  readonly firstParty: boolean;
  /** RP-Initiated Logout 1.0 §3: where the app may ask to be sent after logout (exact match). */
  readonly postLogoutRedirectUris: readonly string[];
  /** Back-Channel Logout 1.0 §2.2: where logout tokens are posted; null: none are sent. */
  readonly backchannelLogoutUri: string | null;
  /** Token requests without a DPoP proof are refused (RFC 9449 §5.2 `dpop_bound_access_tokens`). */
  readonly requireDpop: boolean;
  /** Authorization requests must be pushed first (RFC 9126 §6 `require_pushed_authorization_requests`). */
  readonly requirePar: boolean;
  /**
   * OIDC Registration §2 `request_object_signing_alg`: the one algorithm its request objects
   * (RFC 9101) must use (`none`: unsigned). Absent: signed with any asymmetric algorithm, by
   * its registered keys; never unsigned.
   */
  readonly requestObjectSigningAlg?: RequestObjectAlgorithm;
  /**
   * RFC 8693 token exchange: the registered APIs (by identifier) this client may ask for a
   * token for, acting for the person whose token it presents (`--exchange-audience`). Absent
   * or empty: none, as a record made before it.
   */
  readonly exchangeAudiences?: readonly string[];
  /** Moves on at every update of the registration (the admin API's ETag); 1 when created. */
  readonly version?: number;
  /**
   * The client's own access tokens (client_credentials) issued at or before this time no
   * longer work: an operator revoked them all. Null or absent: none were.
   */
  readonly tokensRevokedAt?: number | null;
  /**
   * An app that registered itself: through RFC 7591 dynamic registration (`dynamic`) or as
   * a Client ID Metadata Document (`metadata_document`, its id the document's URL). Absent:
   * the operator registered it. Fixed at creation.
   */
  readonly registeredBy?: SelfRegistration;
  /** A self-registered app the operator has checked (`client update --verified`); absent: not. */
  readonly verified?: boolean;
  /**
   * When a self-registered app was first used: approved by a person or given a token (issue
   * 40). Absent: never, and the purge removes it after TESSERA_UNUSED_REGISTRATION_RETENTION;
   * always absent for the operator's clients, which are not purged.
   */
  readonly usedAt?: number;
}

export type SelfRegistration = 'dynamic' | 'metadata_document';

/** The fields of a registration that a client created before them takes defaults for. */
type ClientDefaults =
  | 'authMethod'
  | 'previousSecretHash'
  | 'previousSecretExpiresAt'
  | 'jwksUri'
  | 'jwks'
  | 'pkce'
  | 'firstParty'
  | 'postLogoutRedirectUris'
  | 'backchannelLogoutUri'
  | 'requireDpop'
  | 'requirePar'
  | 'deviceNetworks';

/**
 * A client as it is registered: without `authMethod` it is `none` when it has no secret and
 * `client_secret_basic` when it has one; no previous secret, no keys, PKCE required; not
 * first-party, no logout addresses; DPoP and pushed requests not required.
 */
export type NewClient = Omit<ClientRecord, ClientDefaults> & Partial<Pick<ClientRecord, ClientDefaults>>;

/** What `ClientStore.update` replaces: everything but the id and the creation time. */
export type ClientChanges = Omit<ClientRecord, 'id' | 'createdAt' | 'version' | 'tokensRevokedAt' | 'registeredBy' | 'usedAt'>;

export interface ClientStore {
  /** Throws `DuplicateError` when the id is taken. */
  create(client: NewClient): Promise<void>;
  get(id: string): Promise<ClientRecord | null>;
  list(): Promise<ClientRecord[]>;
  /** The operator's own clients (without `registeredBy`), oldest first: those a self-registered app may not pass for. */
  listOperatorClients(): Promise<ClientRecord[]>;
  /**
   * Replaces the registration's fields and moves its version on, in one statement; with
   * `expectedVersion`, only if the registration is still at that version. The updated
   * record, or null (nothing changed) for an unknown id or another version.
   */
  update(id: string, changes: ClientChanges, expectedVersion?: number): Promise<ClientRecord | null>;
  /**
   * Records a self-registered client's first use at `now` (`usedAt`), in one conditional
   * statement: a later use changes nothing. Not for the operator's clients.
   */
  markUsed(id: string, now: number): Promise<void>;
  /** Ends the client's own access tokens issued until `now` (`tokensRevokedAt`); false for an unknown id. */
  revokeTokens(id: string, now: number): Promise<boolean>;
  /**
   * Rotates a client's secret in one statement: `secretHash` becomes the secret, the one it
   * replaces stays accepted until `previousExpiresAt`. Null, and nothing changed, for an
   * unknown client or one without a secret.
   */
  rotateSecret(id: string, secretHash: string, previousExpiresAt: number): Promise<ClientRecord | null>;
  /** Also ends everything issued to the client: its codes, device codes and grants. */
  remove(id: string): Promise<boolean>;
}

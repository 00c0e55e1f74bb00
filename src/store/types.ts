/**
 * The store: what the protocol needs to remember, said in the protocol's words.
 *
 * Two drivers, `sqlite/` (embedded, the default) and `postgres/` (several stateless
 * instances behind one database), run the same statements (`sql/`) and pass one contract
 * suite (`test/store/contract.ts`). Times are milliseconds since the epoch. Secrets (client
 * secrets, codes, device codes, session ids) arrive here already hashed with
 * `hashSecret`: the store never sees a bearer value.
 *
 * Every single-use or state-changing method is one conditional statement
 * (`UPDATE … WHERE … RETURNING`): no implementation reads, decides, then writes. Writes
 * that belong together share a transaction (`Store.transaction`).
 */

import type { SigningAlgorithm } from '../config/index.ts';
import type { AuditEvent, EventType, EventWriter } from '../core/events.ts';
import type { AuthMethod } from '../core/auth-methods.ts';
import type { OperatorRole } from '../core/scopes.ts';
import type { ClientAuthMethod, GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GrantType, PkcePolicy, RequestObjectAlgorithm } from '../core/protocol.ts';

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
  /** Moves on at every update of the registration (the admin API's ETag); 1 when created. */
  readonly version?: number;
  /**
   * The client's own access tokens (client_credentials) issued at or before this time no
   * longer work: an operator revoked them all. Null or absent: none were.
   */
  readonly tokensRevokedAt?: number | null;
}

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
export type ClientChanges = Omit<ClientRecord, 'id' | 'createdAt' | 'version' | 'tokensRevokedAt'>;

export interface ClientStore {
  /** Throws `DuplicateError` when the id is taken. */
  create(client: NewClient): Promise<void>;
  get(id: string): Promise<ClientRecord | null>;
  list(): Promise<ClientRecord[]>;
  /**
   * Replaces the registration's fields and moves its version on, in one statement; with
   * `expectedVersion`, only if the registration is still at that version. The updated
   * record, or null (nothing changed) for an unknown id or another version.
   */
  update(id: string, changes: ClientChanges, expectedVersion?: number): Promise<ClientRecord | null>;
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

export interface ResourceStore {
  /**
   * Registers the resource with its scopes. Throws `DuplicateError` when the identifier or a
   * scope name is taken; several writes, so call it inside `Store.transaction`.
   */
  create(resource: ResourceRecord): Promise<void>;
  get(identifier: string): Promise<ResourceRecord | null>;
  /** Every resource with its scopes, oldest first. */
  list(): Promise<ResourceRecord[]>;
  /** Changes the fields given; false when there is no such resource. */
  update(identifier: string, changes: { readonly signingAlg?: SigningAlgorithm }): Promise<boolean>;
  /** Removes the resource and its scopes; false when there was none. */
  remove(identifier: string): Promise<boolean>;
}

/** A person who signs in. `id` is the OIDC `sub`: stable, never reassigned. */
export interface UserRecord {
  readonly id: string;
  /** Unique; stored as given (the flows normalise it before it gets here). */
  readonly username: string;
  /** PHC-format argon2id. */
  readonly passwordHash: string;
  readonly name: string | null;
  readonly email: string | null;
  readonly emailVerified: boolean;
  /** OIDC Core §5.1 `given_name`, `family_name`, `locale` (BCP 47), `zoneinfo` (IANA), `picture` (a URL). */
  readonly givenName: string | null;
  readonly familyName: string | null;
  readonly locale: string | null;
  readonly zoneinfo: string | null;
  readonly picture: string | null;
  readonly disabled: boolean;
  /** What the person may do in the operator console (core/scopes.ts); null: no entry. */
  readonly role: OperatorRole | null;
  readonly createdAt: number;
  /** OIDC Core §5.1 `updated_at`: when the profile last changed (its creation at first). */
  readonly updatedAt: number;
}

/**
 * A new account's record: the fields not given at their defaults (no profile claims, e-mail
 * address not verified, enabled), `updatedAt` its creation.
 */
export function newUserRecord(fields: Pick<UserRecord, 'id' | 'username' | 'passwordHash' | 'createdAt'> & Partial<UserRecord>): UserRecord {
  return {
    name: null, email: null, emailVerified: false, givenName: null, familyName: null, locale: null, zoneinfo: null, picture: null,
    disabled: false, role: null, updatedAt: fields.createdAt,
    ...fields,
  };
}

/** The standard claims of a person an operator may change (OIDC Core §5.1); null clears one. */
export interface UserProfileChanges {
  readonly name?: string | null;
  readonly givenName?: string | null;
  readonly familyName?: string | null;
  readonly email?: string | null;
  readonly emailVerified?: boolean;
  readonly locale?: string | null;
  readonly zoneinfo?: string | null;
  readonly picture?: string | null;
}

/** The text fields of `UserProfileChanges`, as the store writes them. */
export const USER_PROFILE_TEXT_FIELDS = ['name', 'givenName', 'familyName', 'email', 'locale', 'zoneinfo', 'picture'] as const satisfies readonly (keyof UserProfileChanges)[];

export interface UserStore {
  /** Throws `DuplicateError` when the username is taken. */
  create(user: UserRecord): Promise<void>;
  get(id: string): Promise<UserRecord | null>;
  findByUsername(username: string): Promise<UserRecord | null>;
  list(): Promise<UserRecord[]>;
  /** False when there is no such user. Ending their sessions is the caller's, in the same transaction. */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
  /** Gives the user an operator role, or none (null); false when there is no such user. */
  setRole(id: string, role: OperatorRole | null): Promise<boolean>;
  /**
   * Changes the profile fields given (null clears one), and `updatedAt` to `now`, in one
   * statement; false when there is no such user.
   */
  update(id: string, changes: UserProfileChanges, now: number): Promise<boolean>;
  /** Replaces the password hash (PHC argon2id); false when there is no such user. */
  setPasswordHash(id: string, passwordHash: string): Promise<boolean>;
  /**
   * Deletes the user row (its password resets go with it). Everything else that names the
   * user (sessions, grants, device requests) must be removed first, in the same transaction.
   */
  remove(id: string): Promise<boolean>;
}

/** A browser session after sign-in. */
export interface SessionRecord {
  /** `hashSecret` of the session cookie's value. */
  readonly idHash: string;
  /**
   * The OIDC session id (`sid`, Back-Channel Logout 1.0 §2.1) given to clients in ID and
   * logout tokens. Random and public, unlike the cookie; kept when the same person signs in
   * again in the same browser.
   */
  readonly sid: string;
  readonly userId: string;
  /** When the user last entered their password (OIDC `auth_time`). */
  readonly authTime: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** How the person signed in (RFC 8176). Absent in a session from before it was kept: a password. */
  readonly amr?: readonly AuthMethod[];
  /** Where the browser signed in from, shown on the account page. */
  readonly ip: string | null;
  readonly userAgent: string | null;
}

export interface SessionStore {
  create(session: SessionRecord): Promise<void>;
  /** The session if it exists and has not expired at `now`. */
  get(idHash: string, now: number): Promise<SessionRecord | null>;
  /** Ends a session: the removed record, or null when there was none (ended already). */
  remove(idHash: string): Promise<SessionRecord | null>;
  /** The user's sessions live at `now`, newest first. */
  listForUser(userId: string, now: number): Promise<SessionRecord[]>;
  /**
   * Ends every session of the user (signed out everywhere, disabled, removed, a new
   * password) but the one whose hash is `except` (the browser that changed the password);
   * returns the removed records.
   */
  removeForUser(userId: string, except?: string): Promise<SessionRecord[]>;
  /**
   * Records that the client received an ID token in the session `sid`, kept until
   * `expiresAt` (which only moves later), for Back-Channel Logout.
   */
  addClient(sid: string, clientId: string, expiresAt: number): Promise<void>;
  /** The clients recorded for `sid`, removed as they are returned: each caller gets a client once. */
  takeClients(sid: string): Promise<string[]>;
}

/** What the user approved: one approval, from which codes and tokens are issued. */
export interface GrantRecord {
  readonly id: string;
  readonly userId: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  /** The grant type through which it was approved. */
  readonly kind: typeof GRANT_AUTHORIZATION_CODE | typeof GRANT_DEVICE_CODE;
  readonly authTime: number;
  readonly createdAt: number;
  /** Set once; a revoked grant issues nothing more and its tokens are inactive. */
  readonly revokedAt: number | null;
  /** For a device grant: where and when the device asked (RFC 8628 §5.4). */
  readonly device: DeviceOrigin | null;
  /** How the person signed in before approving (ID token `amr`); absent in grants from before. */
  readonly amr?: readonly AuthMethod[];
  /** The class reported in ID tokens (`acr`), set when the client asked through `acr_values`. */
  readonly acr?: string;
  /**
   * The user's remembered consent for the client (the code flow only): at most one live
   * grant per user and client is, and later approvals grow it instead of adding grants.
   */
  readonly remembered: boolean;
  /** When a remembered grant was last approved again (or signed in through); null until then. */
  readonly renewedAt: number | null;
  /** When tokens were last issued under it (a sign-in or a refresh); null until the first time. */
  readonly lastUsedAt: number | null;
  /**
   * Until when the tokens issued under it can be used: the latest expiry of its access and
   * refresh tokens. Null until tokens are first issued. Past it, the grant is spent.
   */
  readonly activeUntil: number | null;
}

/** A grant as it is created: nothing has been issued under it yet, and it is not remembered. */
export type NewGrant = Omit<GrantRecord, 'lastUsedAt' | 'activeUntil' | 'remembered' | 'renewedAt'>;

/** An approval in the code flow, to be remembered (`GrantStore.remember`). */
export interface RememberedApproval {
  /** The id of the grant if none is remembered yet. */
  readonly id: string;
  readonly userId: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly authTime: number;
  /** How the person signed in before this approval (ID token `amr`). */
  readonly amr?: readonly AuthMethod[];
  /** The class reported in ID tokens (`acr`), when the client asked through `acr_values`. */
  readonly acr?: string;
}

export interface DeviceOrigin {
  readonly ip: string;
  readonly userAgent: string | null;
  readonly requestedAt: number;
}

export interface GrantStore {
  create(grant: NewGrant): Promise<void>;
  get(id: string): Promise<GrantRecord | null>;
  /** Sets `revokedAt` if not already set; true when this call revoked it. */
  revoke(id: string, now: number): Promise<boolean>;
  /** The user's grants that are not revoked, newest first. */
  listForUser(userId: string): Promise<GrantRecord[]>;
  /**
   * Records an approval as the user's remembered consent for the client, in one statement:
   * a new remembered grant when there is none live, or else the live one with its scope
   * grown to include `scope` and `renewedAt` set to `now`. Returns the grant.
   */
  remember(approval: RememberedApproval, now: number): Promise<GrantRecord>;
  /** The user's live remembered grant for the client, if any. */
  findRemembered(userId: string, clientId: string): Promise<GrantRecord | null>;
  /**
   * Records that tokens were issued under the grant at `now`, usable until `activeUntil`
   * (which only ever moves later). False, and nothing changed, when the grant is unknown or
   * revoked.
   */
  recordUse(id: string, now: number, activeUntil: number): Promise<boolean>;
  /** Deletes every grant of the user, revoked or not, with their codes and refresh tokens (a removed user). */
  removeForUser(userId: string): Promise<number>;
}

/**
 * A refresh token (RFC 6749 §1.5, §6), stored by its hash. Each use exchanges it for a
 * successor (rotation, RFC 9700 §4.14.2); the used one is kept, marked rotated, so that a
 * second use is recognised as reuse.
 */
export interface RefreshTokenRecord {
  readonly hash: string;
  readonly grantId: string;
  readonly clientId: string;
  readonly userId: string;
  /**
   * The scope granted. A refreshed access token may narrow it; the refresh token never does
   * (RFC 6749 §6: the new refresh token's scope is identical to the old one's).
   */
  readonly scope: readonly string[];
  /** OIDC `auth_time` of the sign-in the grant came from (OIDC Core §12.2 keeps it). */
  readonly authTime: number;
  /** The browser session of that sign-in, for refreshed ID tokens; null for a device. */
  readonly sid: string | null;
  readonly createdAt: number;
  /** The earlier of the end of the grant's refresh lifetime and the idle timeout after issue. */
  readonly expiresAt: number;
  /** Set when it was exchanged for its successor; from then on, presenting it is reuse. */
  readonly rotatedAt: number | null;
  /** RFC 9449 §5: a public client's refresh token is bound to this DPoP key thumbprint. */
  readonly dpopJkt: string | null;
}

export interface RefreshTokenStore {
  create(token: RefreshTokenRecord): Promise<void>;
  /**
   * Exchanges a refresh token: exactly one caller receives the record. It is marked rotated
   * and returned only if it is unrotated, unexpired at `now`, issued to this client, and its
   * grant is not revoked; otherwise nothing changes and null is returned.
   */
  rotate(hash: string, clientId: string, now: number): Promise<RefreshTokenRecord | null>;
  /** The record whatever its state, to tell reuse from expiry or revocation. */
  find(hash: string): Promise<RefreshTokenRecord | null>;
}

/** Access tokens revoked one by one (RFC 7009 §2), by their `jti`. */
export interface AccessTokenStore {
  /**
   * Records the token as revoked, kept until `expiresAt`, when it would have expired anyway.
   * Revoking it again changes nothing.
   */
  revoke(jti: string, expiresAt: number): Promise<void>;
  isRevoked(jti: string): Promise<boolean>;
}

/** An authorization code (RFC 6749 §4.1.2), bound to its PKCE challenge (RFC 7636 §4.4). */
export interface AuthorizationCodeRecord {
  readonly hash: string;
  readonly clientId: string;
  readonly userId: string;
  readonly grantId: string;
  readonly redirectUri: string;
  readonly scope: readonly string[];
  readonly nonce: string | null;
  /** The S256 challenge; empty for a code asked for without PKCE (a client with PKCE optional). */
  readonly codeChallenge: string;
  readonly authTime: number;
  /** The browser session it was issued in (its ID token's `sid`). */
  readonly sid: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly consumedAt: number | null;
  /** RFC 9449 §10: the DPoP key thumbprint (`dpop_jkt`) the code must be redeemed with. */
  readonly dpopJkt: string | null;
  /** OIDC Core §5.5: the claims about the person its ID token carries (the `claims` parameter's `id_token`). */
  readonly idTokenClaims: readonly string[];
}

export interface AuthorizationCodeStore {
  create(code: AuthorizationCodeRecord): Promise<void>;
  /**
   * Redeems a code: exactly one caller receives the record. It is marked consumed and
   * returned only if it is unconsumed, unexpired at `now`, and was issued to this client
   * for this redirect_uri and challenge (and DPoP key, if it is bound to one); otherwise nothing changes and null is returned.
   */
  consume(
    hash: string,
    /** `dpopJkt`: the key of the token request's DPoP proof, null without one; a code bound to another key is left as it is. */
    binding: { readonly clientId: string; readonly redirectUri: string; readonly codeChallenge: string; readonly dpopJkt?: string | null },
    now: number,
  ): Promise<AuthorizationCodeRecord | null>;
  /** The record whatever its state, to tell a replay from a mismatch after `consume` failed. */
  find(hash: string): Promise<AuthorizationCodeRecord | null>;
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'consumed';

/** A device authorization request (RFC 8628 §3.1-3.2). */
export interface DeviceAuthorizationRecord {
  readonly deviceCodeHash: string;
  /** Normalised: 8 characters, upper case, no separator. */
  readonly userCode: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly status: DeviceStatus;
  /** Seconds between polls; grows by 5 with every `slow_down` (RFC 8628 §3.5). */
  readonly interval: number;
  readonly lastPolledAt: number | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Where the device request came from, shown on the approval page. */
  readonly requestIp: string;
  readonly requestUserAgent: string | null;
  /** Set by the user's decision. */
  readonly userId: string | null;
  readonly authTime: number | null;
  readonly grantId: string | null;
  readonly decidedAt: number | null;
  /** RFC 9449: the key of the DPoP proof sent with the device authorization request; only polls proved by it get tokens. */
  readonly dpopJkt: string | null;
}

/**
 * What one poll found, decided in the same statement that recorded the poll, in this
 * order: `expired` (past `expiresAt`), `consumed` (tokens were already issued),
 * `denied`, `slow_down` (sooner than `interval` after the previous poll; the interval grows
 * by 5 s), `issue` (approved: the record is now consumed and the caller issues the
 * tokens, exactly once), `pending`.
 */
export type DevicePollOutcome = 'expired' | 'consumed' | 'denied' | 'slow_down' | 'issue' | 'pending';

export type DeviceDecision =
  | { readonly approve: true; readonly userId: string; readonly authTime: number; readonly grantId: string }
  | { readonly approve: false };

export interface DeviceAuthorizationStore {
  /**
   * False, and nothing stored, when a live record already has this user code. `event` (the
   * request's `device.started`) is stored with the record, in the same commit and in the
   * same round trip, and only if the record is: an event written after it would cost the
   * request a second commit to wait for.
   */
  create(record: DeviceAuthorizationRecord, event?: AuditEvent): Promise<boolean>;
  /** The record with this user code that has not expired at `now`, whatever its status. */
  findByUserCode(userCode: string, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * Records the user's decision: only a pending, unexpired record changes; returns the
   * updated record, or null when there was none to decide.
   */
  decide(userCode: string, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * One poll by the device: one indexed lookup and one write. Null when no record has this
   * hash for this client, or it is bound to a DPoP key (`dpopJkt`) other than `dpopJkt`
   * (null: the poll carried no proof); such a poll changes nothing. A poll with a key binds
   * a record not bound yet to that key, in the same write (RFC 9449 defines no proof at the
   * device authorization endpoint, so most clients first prove their key here).
   */
  poll(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    dpopJkt?: string | null,
  ): Promise<{ readonly outcome: DevicePollOutcome; readonly record: DeviceAuthorizationRecord } | null>;
  /** The record whatever its state, to tell why a poll found nothing. */
  find(deviceCodeHash: string): Promise<DeviceAuthorizationRecord | null>;
  /** How many requests wait for a person's decision at `now` (pending and unexpired): a metric. */
  countPending(now: number): Promise<number>;
  /** Deletes the requests the user decided (a removed user). */
  removeForUser(userId: string): Promise<number>;
}

/** DPoP proofs seen (RFC 9449 §11.1), so that a proof is accepted once. */
export interface DpopProofStore {
  /**
   * Records a proof by `key` until `expiresAt`: true the first time, false when a record
   * with this key is still unexpired at `now` (a replay). One statement.
   */
  use(key: string, expiresAt: number, now: number): Promise<boolean>;
}

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

export interface RateLimitStore {
  /** Counts one event against `key` in its fixed window; returns the count with this one. */
  hit(key: string, windowMs: number, now: number): Promise<number>;
  /** The count in the current window, without counting. */
  count(key: string, windowMs: number, now: number): Promise<number>;
  /** The current window of `key` (its count and when it ends), without counting; null when none is open at `now`. */
  window(key: string, now: number): Promise<{ readonly hits: number; readonly endsAt: number } | null>;
  /** Takes one event back from the current window (an attempt counted in advance that succeeded). */
  release(key: string, now: number): Promise<void>;
  /**
   * The windows open at `now` whose key starts with `prefix` and that count at least one
   * event, the latest-ending first, at most `limit` (an operator's view of the lockouts).
   */
  listOpen(prefix: string, now: number, limit: number): Promise<RateLimitWindow[]>;
  /** Forgets a key's count (an operator lifts a lockout); false when there was none. */
  remove(key: string): Promise<boolean>;
}

/** One open window of a limit: its key, its count and when it ends. */
export interface RateLimitWindow {
  readonly key: string;
  readonly hits: number;
  readonly endsAt: number;
}

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

/**
 * A single-use link to set a new password (`tessera user reset-link`), stored by the hash of
 * its token.
 */
export interface PasswordResetRecord {
  readonly tokenHash: string;
  readonly userId: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly usedAt: number | null;
}

export interface PasswordResetStore {
  create(reset: PasswordResetRecord): Promise<void>;
  /** The record if it is unused and unexpired at `now`; does not use it up. */
  find(tokenHash: string, now: number): Promise<PasswordResetRecord | null>;
  /**
   * Uses the link up: exactly one caller receives the record, only while it is unused and
   * unexpired at `now`; otherwise nothing changes and null is returned.
   */
  consume(tokenHash: string, now: number): Promise<PasswordResetRecord | null>;
  /** Uses up every unused link of the user at once: a newer one was made, or one was used. */
  spendAllForUser(userId: string, now: number): Promise<void>;
}

/** What `EventStore.list` returns: every filter given must match. */
export interface EventFilter {
  /** The user's id or, for events that name only what was typed (a failed sign-in), the username. */
  readonly userId?: string;
  readonly username?: string;
  readonly clientId?: string;
  readonly type?: EventType;
  /** Events at or after this time. */
  readonly since?: number;
  /** Events listed after this one (newest first: older, or as old with a smaller id): the next page. */
  readonly before?: { readonly at: number; readonly id: string };
  /** At most this many, newest first. */
  readonly limit: number;
}

/** The audit trail (core/events.ts), kept for `TESSERA_EVENT_RETENTION`. */
export interface EventStore extends EventWriter {
  add(event: AuditEvent): Promise<void>;
  /** Newest first. */
  list(filter: EventFilter): Promise<AuditEvent[]>;
}

/** The stores by concern: what a flow reads and writes, and what a transaction is given. */
export interface Stores {
  readonly clients: ClientStore;
  readonly users: UserStore;
  readonly sessions: SessionStore;
  readonly grants: GrantStore;
  readonly codes: AuthorizationCodeStore;
  readonly refreshTokens: RefreshTokenStore;
  readonly accessTokens: AccessTokenStore;
  readonly devices: DeviceAuthorizationStore;
  readonly rateLimits: RateLimitStore;
  readonly keys: KeyStore;
  readonly dpopProofs: DpopProofStore;
  readonly pushedRequests: PushedRequestStore;
  readonly resources: ResourceStore;
  readonly clientAssertions: ClientAssertionStore;
  readonly passwordResets: PasswordResetStore;
  readonly events: EventStore;
  readonly passkeys: PasskeyStore;
  readonly webauthnChallenges: WebauthnChallengeStore;
  readonly totp: TotpStore;
  readonly recoveryCodes: RecoveryCodeStore;
  readonly pendingSignIns: PendingSignInStore;
}

/** The longer cutoffs of `Store.purgeExpired`, each a setting of its own. */
export interface PurgeCutoffs {
  /** TESSERA_GRANT_RETENTION before now: grants that can issue nothing more. */
  readonly grantsBefore?: number;
  /** TESSERA_EVENT_RETENTION before now: audit events. */
  readonly eventsBefore?: number;
}

export interface Store extends Stores {
  /**
   * Runs `work` as one transaction, for writes that must stand or fall together (a grant
   * and its code): when `work` returns, all its writes are committed; when it throws,
   * none of them remains and its error is rethrown. `work` makes its store calls through
   * `tx` (which sees its own writes) and awaits nothing else: on SQLite, other calls wait
   * until the transaction has ended, so awaiting one inside it would never finish.
   */
  transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T>;
  /**
   * Deletes codes, device records, sessions, rate-limit windows, refresh tokens, password
   * reset links, revoked access-token ids, used client assertion ids, DPoP proof ids, pushed
   * requests, passkey ceremony challenges, sign-ins waiting for a one-time code and signing
   * keys that expired before `before` (the caller keeps a margin after expiry, so a replayed
   * code is still recognised as one for a while); given `grantsBefore`, grants revoked before
   * it, whose tokens all expired before it, or made before it and never used, with their
   * codes and refresh tokens; given `eventsBefore`, events older than it. Works in small
   * batches so it never holds a long lock. Returns the number of rows deleted.
   */
  purgeExpired(before: number, cutoffs?: PurgeCutoffs): Promise<number>;
  close(): Promise<void>;
}

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

/** A password accepted, waiting for its one-time code: keyed by the hash of a cookie's value. */
export interface PendingSignInRecord {
  readonly idHash: string;
  readonly userId: string;
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

/** A unique constraint refused the write. */
export class DuplicateError extends Error {
  constructor(what: string, options?: ErrorOptions) {
    super(`${what} already exists`, options);
    this.name = 'DuplicateError';
  }
}

/** A foreign key refused the write: it names a client, user or grant that does not exist. */
export class MissingReferenceError extends Error {
  constructor(options?: ErrorOptions) {
    super('the record names a client, user or grant that does not exist', options);
    this.name = 'MissingReferenceError';
  }
}

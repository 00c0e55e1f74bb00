import { randomUUID } from 'node:crypto';
import { compactVerify, createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { SignInFacts } from '../core/auth-methods.ts';
import type { Clock } from '../core/clock.ts';
import type { Lifetimes, SigningAlgorithm } from '../config/index.ts';
import { newTimedSecret, timedSecretKey } from '../core/timed-secret.ts';
import { OAuthError } from '../core/errors.ts';
import { GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, ID_JAG_TYP, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_JAG } from '../core/protocol.ts';
import type { ClientRecord, GrantRecord, GrantStore, RefreshTokenRecord, ResourceRecord, Store, UserRecord } from '../store/types.ts';
import { approvedClaims, groupsOf, organizationClaims, releasedClaims } from './claims.ts';
import { signJws } from './jws.ts';
import { SIGNING_ALGORITHMS, type KeyManager } from './keys.ts';

/** The successful token response (RFC 6749 §5.1, OIDC Core §3.1.3.3). Wire names, readonly. */
export interface TokenResponse {
  readonly access_token: string;
  /** RFC 9449 §5: `DPoP` for an access token bound to a DPoP key; RFC 8693 §2.2.1 `N_A` for what is not an access token (an ID-JAG). */
  readonly token_type: 'Bearer' | 'DPoP' | 'N_A';
  readonly expires_in: number;
  readonly scope: string;
  readonly id_token?: string;
  readonly refresh_token?: string;
  /** RFC 8693 §2.2.1: the type of the token a token exchange issued (REQUIRED there, absent elsewhere). */
  readonly issued_token_type?: string;
}

/**
 * RFC 8693 §4.1 `act`: the party acting for the token's subject. "A chain of delegation can
 * be expressed by nesting one act claim within another. The outermost act claim represents
 * the current actor while nested act claims represent prior actors."
 */
export interface Actor {
  readonly sub: string;
  readonly act?: Actor;
}

/** How many actors deep an `act` claim read back may be; a longer chain is not a token this server issued. */
const MAX_ACTOR_CHAIN = 32;

/** The `act` claim as a chain of `sub`s, or null when it is not one (anything but `sub` and `act` is dropped: RFC 8693 §4.1). */
function actorOf(value: unknown, depth = 0): Actor | null {
  if (typeof value !== 'object' || value === null || depth >= MAX_ACTOR_CHAIN) return null;
  const { sub, act } = value as Record<string, unknown>;
  if (typeof sub !== 'string') return null;
  if (act === undefined) return { sub };
  const prior = actorOf(act, depth + 1);
  return prior === null ? null : { sub, act: prior };
}

/**
 * What the earlier tokens of a token-exchange chain held, by the API each was for (its `aud`):
 * the scope of the chain's first token and of each exchanged one, narrowed where the chain came
 * back to an API. A later exchange for one of these APIs passes on no more
 * (flows/token-exchange/token.ts).
 */
export type ChainScope = ReadonlyMap<string, readonly string[]>;

/**
 * The `chain_scope` claim (`{"<aud>": "<scope>"}`) as a `ChainScope`, or null when it is not
 * one. A chain names no more APIs than it has actors, and no more than MAX_ACTOR_CHAIN.
 */
function chainScopeOf(value: unknown): ChainScope | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const entries = Object.entries(value);
  if (entries.length > MAX_ACTOR_CHAIN) return null;
  const chain = new Map<string, readonly string[]>();
  for (const [aud, scope] of entries) {
    if (typeof scope !== 'string') return null;
    chain.set(aud, scope.split(' ').filter(Boolean));
  }
  return chain;
}

/** How many actors an `act` claim names: 0 for none, 1 for a current actor alone, and so on. */
export function actorCount(actor: Actor | null | undefined): number {
  let count = 0;
  for (let at = actor; at; at = at.act) count += 1;
  return count;
}

/** What an approval that is being redeemed carries into the tokens. */
export interface Issuance {
  readonly client: ClientRecord;
  readonly user: UserRecord;
  /** The access token's scope: the OpenID scopes granted and those of its one API. */
  readonly scope: readonly string[];
  /** RFC 8707: the API the access token is for (its `aud`); absent or null for this server's own (userinfo). */
  readonly resource?: ResourceRecord | null;
  readonly grantId: string;
  /** OIDC `auth_time`, ms. */
  readonly authTime: number;
  /** From the authorization request; absent in the device flow. */
  readonly nonce?: string | null;
  /** The browser session signed in through (ID token `sid`); absent in the device flow. */
  readonly sid?: string | null;
  /**
   * The scope a refresh token issued now keeps (RFC 6749 §6: never narrowed by a refresh):
   * the refreshed token's own when refreshing, the code's when redeeming one (what this
   * sign-in asked for and was approved, which may be less than everything the user approved
   * before); by default the grant's.
   */
  readonly refreshScope?: readonly string[];
  /**
   * RFC 9449 §6: the thumbprint of the key of the token request's DPoP proof, to which the
   * access token is bound (`cnf.jkt`), and a public client's refresh token too (§5).
   */
  readonly dpopJkt?: string | null;
  /**
   * OIDC Core §5.5: the claims about the person asked for in the ID token, among those its
   * scope or `claimsScope` releases. The others go to userinfo only: OIDC Core §5.4 returns the claims of
   * `profile` and `email` from the UserInfo endpoint when an access token is issued, as it
   * always is here.
   */
  readonly idTokenClaims?: readonly string[];
  /** OIDC Core §5.5: the claims about the person asked for in UserInfo, released there with the scope's. */
  readonly userinfoClaims?: readonly string[];
  /**
   * The scopes the person approved for the claims asked for by name, beyond `scope`: of
   * `idTokenClaims` and `userinfoClaims`, those of these scopes are released too.
   */
  readonly claimsScope?: readonly string[];
  /** OIDC Core §5.2: the languages of the names the ID token and UserInfo carry (`claims_locales`). */
  readonly claimsLocales?: readonly string[];
  /**
   * How the person signed in for this approval (`amr`, `acr`), kept with the code or refresh
   * token as `authTime` is; absent (a device grant, a row from before): the grant's.
   */
  readonly signIn?: SignInFacts | undefined;
}

/** What `TokenIssuer.plan` decided: the writes that go with the tokens, and the times they are signed with. */
export interface IssuancePlan {
  readonly grant: GrantRecord;
  /** Milliseconds since the epoch: the tokens' `iat`. */
  readonly now: number;
  readonly accessTokenLifetime: number;
  /** The grant's `activeUntil` once these tokens are issued (`GrantStore.recordUse`). */
  readonly activeUntil: number;
  /** The refresh token to store with them, and the token the client is given. */
  readonly refresh?: { readonly token: string; readonly record: RefreshTokenRecord };
}

/** Back-Channel Logout 1.0 §2.6: the event a logout token carries. */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** What an `id_token_hint` (RP-Initiated Logout 1.0 §2, OIDC Core §3.1.2.1) says, once its signature is checked. */
export interface IdTokenHint {
  readonly sub: string;
  /** The clients it was issued to: `aud`, as a list. */
  readonly aud: readonly string[];
  readonly azp: string | null;
  readonly sid: string | null;
}

/** The claims of an access token this server signed and that has not expired (RFC 9068 §2.2). */
export interface AccessTokenClaims {
  readonly sub: string;
  readonly client_id: string;
  readonly scope: readonly string[];
  /** The API it is for, or this server's issuer for its own (userinfo). */
  readonly aud: string;
  readonly jti: string;
  /** The grant it was issued under; null for a client's own token (client_credentials: no person, no grant). */
  readonly gid: string | null;
  /** Seconds since the epoch. */
  readonly iat: number;
  readonly exp: number;
  /** RFC 9449 §6.1 `cnf.jkt`: the DPoP key the token is bound to; null for a Bearer token. */
  readonly jkt: string | null;
  /** OIDC Core §5.2: the languages UserInfo names the person in; empty when none were asked for. */
  readonly claimsLocales: readonly string[];
  /** OIDC Core §5.5: the claims asked for by name and approved that UserInfo sends beside the scope's; empty when none. */
  readonly userinfoClaims: readonly string[];
  /** RFC 8693 §4.1: who acts for `sub` (a token exchange's client, and those before it); null when `sub`'s own client does. */
  readonly act: Actor | null;
  /** An exchanged token's `chain_scope`: what the tokens it was exchanged from held, by API; empty for any other, and for one exchanged before it was carried. */
  readonly chainScope: ChainScope;
  /**
   * The trusted issuer of the ID-JAG the token was issued for (`id_jag_iss`), when it was: a
   * person's token with no grant here, living while that issuer stays trusted. Null otherwise.
   */
  readonly assertedBy?: string | null;
}

/** What a token exchange (RFC 8693) issues: an access token for `resource`, for the person of a live grant, acted for by `act`. */
export interface ExchangeIssuance {
  /** The exchanging client: the token's `client_id`. */
  readonly client: ClientRecord;
  readonly userId: string;
  /** The subject token's grant: revoking it ends this token too. */
  readonly grantId: string;
  readonly scope: readonly string[];
  readonly resource: ResourceRecord;
  readonly act: Actor;
  /** What the subject token and the tokens it was exchanged from held, by API (`chain_scope`); absent: none. */
  readonly chainScope?: ChainScope;
  /** The subject token's `exp` (seconds): this token never outlives it. */
  readonly notAfter: number;
  readonly dpopJkt: string | null;
  /** The organization the person approved the subject token's grant for, carried on (`org_id`, `org_name`). */
  readonly organization?: { readonly org_id?: string; readonly org_name?: string };
}

/** What an ID-JAG says (draft-ietf-oauth-identity-assertion-authz-grant §3.1), as this server issues one. */
export interface IdJagIssuance {
  /** The exchanging client: `client_id`, the client it is for at the other server (registered there under the same client_id). */
  readonly client: ClientRecord;
  readonly userId: string;
  /** The other authorization server's issuer: `aud`. */
  readonly audience: string;
  /** The API at the other server it is for, when named: `resource`. */
  readonly resource: string | null;
  readonly scope: readonly string[];
  /** OIDC `auth_time` of the sign-in the ID token came from, seconds; null when it had none. */
  readonly authTime: number | null;
  /** The person's e-mail address when verified here: how the other server may find them. */
  readonly email: string | null;
  /** The subject ID token's `exp` (seconds): the ID-JAG never outlives it. */
  readonly notAfter: number;
  /** TESSERA_ID_JAG_LIFETIME seconds; ID_JAG_LIFETIME (five minutes, the most) by default. */
  readonly lifetime?: number;
}

/** draft-ietf-oauth-identity-assertion-authz-grant: an ID-JAG is short-lived; five minutes at most. */
export const ID_JAG_LIFETIME = 300;

/** The claims of an ID token this server signed, still unexpired. */
export interface IdTokenClaims {
  readonly sub: string;
  readonly aud: readonly string[];
  readonly exp: number;
  readonly authTime: number | null;
}

/**
 * Whether tokens issued under `grant` include a refresh token: only for a client registered
 * for the refresh_token grant, and then when `offline_access` (OIDC Core §11) was asked for
 * and granted, or a device was signed in (RFC 8628), which has no way to ask the user again.
 */
export function receivesRefreshToken(client: ClientRecord, grant: GrantRecord, scope: readonly string[] = grant.scope): boolean {
  return client.grantTypes.includes(GRANT_REFRESH_TOKEN) && (scope.includes('offline_access') || grant.kind === GRANT_DEVICE_CODE);
}

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * How the person signed in for the approval being redeemed or refreshed: the code's or the
 * refresh token's own, else (a device grant, a row from before) the grant's.
 */
function signInOf(issuance: Issuance, grant: GrantRecord): Partial<SignInFacts> {
  const facts = issuance.signIn ?? { ...(grant.amr === undefined ? {} : { amr: grant.amr }), ...(grant.acr === undefined ? {} : { acr: grant.acr }) };
  // A sign-in that proved nothing Tessera can name (an upstream provider that said nothing):
  // no `amr` at all, as OIDC Core §2 allows (it is OPTIONAL), rather than an empty list.
  if (facts.amr === undefined || facts.amr.length > 0) return facts;
  return facts.acr === undefined ? {} : { acr: facts.acr };
}

/**
 * Signs access tokens (RFC 9068 JWTs) and ID tokens (OIDC Core §2), issues refresh tokens
 * (RFC 6749 §6), and records each issuance on its grant.
 */
export class TokenIssuer {
  readonly #keys: KeyManager;
  readonly #clock: Clock;
  readonly #issuer: string;
  readonly #lifetimes: Lifetimes;
  readonly #store: Pick<Store, 'grants' | 'refreshTokens' | 'transaction' | 'linkedIdentities' | 'groups' | 'organizations'>;
  readonly #accessTokenAlg: SigningAlgorithm;
  #verificationKeys: { readonly kids: string; readonly keys: JWTVerifyGetKey } | undefined;

  constructor(
    keys: KeyManager,
    clock: Clock,
    issuer: string,
    lifetimes: Lifetimes,
    store: Pick<Store, 'grants' | 'refreshTokens' | 'transaction' | 'linkedIdentities' | 'groups' | 'organizations'>,
    accessTokenAlg: SigningAlgorithm = 'ES256',
  ) {
    this.#keys = keys;
    this.#clock = clock;
    this.#issuer = issuer;
    this.#lifetimes = lifetimes;
    this.#store = store;
    this.#accessTokenAlg = accessTokenAlg;
  }

  /**
   * The tokens for an approval being redeemed (a code, a device code) or refreshed, with a
   * refresh token when `receivesRefreshToken` says so. Whether the grant still stands is
   * decided by the caller, in the one statement that redeemed the code or rotated the
   * refresh token: that caller is owed its tokens even if the grant is revoked a moment
   * later (by a concurrent replay, say), and tokens issued then are dead wherever revocation
   * is checked.
   */
  async issue(issuance: Issuance): Promise<TokenResponse> {
    const grant = await this.#store.grants.get(issuance.grantId);
    if (!grant) throw new OAuthError('invalid_grant', 'the authorization no longer exists');
    const plan = this.plan(issuance, grant);
    const response = await this.sign(issuance, plan);
    // A revoked grant records no use: the account page has nothing to show for it.
    const recordUse = (grants: GrantStore) => grants.recordUse(grant.id, plan.now, plan.activeUntil);
    const refresh = plan.refresh;
    if (refresh === undefined) {
      await recordUse(this.#store.grants);
    } else {
      // One transaction: no refresh token outlives the activeUntil its grant shows.
      await this.#store.transaction(async (tx) => {
        await tx.refreshTokens.create(refresh.record);
        await recordUse(tx.grants);
      });
    }
    return response;
  }

  /**
   * What issuing tokens for `issuance` under `grant` writes, decided before anything is
   * signed: the refresh token (when `receivesRefreshToken` says so) and the grant's
   * `activeUntil`. A caller that writes these itself (a code exchange, with the code's
   * redemption: `AuthorizationCodeStore.redeem`) then calls `sign`; `issue` does both.
   */
  plan(issuance: Issuance, grant: GrantRecord): IssuancePlan {
    const nowMs = this.#clock.now();
    const now = seconds(nowMs);
    const lifetimes = this.#lifetimesFor(issuance.client, grant);
    // An API may set its own access token lifetime (RFC 9068 §2.2 leaves `exp` to the server).
    const accessTokenLifetime = issuance.resource?.accessTokenTtl ?? lifetimes.accessToken;
    const refreshScope = issuance.refreshScope ?? grant.scope;
    const refresh = receivesRefreshToken(issuance.client, grant, refreshScope)
      ? this.#refreshToken(issuance, refreshScope, grant, nowMs, lifetimes.refreshToken)
      : undefined;
    return {
      grant,
      now: nowMs,
      accessTokenLifetime,
      activeUntil: Math.max((now + accessTokenLifetime) * 1000, refresh?.record.expiresAt ?? 0),
      ...(refresh === undefined ? {} : { refresh }),
    };
  }

  /** The token response `plan` decided on: the access token and ID token signed, the refresh token as planned. */
  async sign(issuance: Issuance, plan: IssuancePlan): Promise<TokenResponse> {
    const now = seconds(plan.now);
    const scope = issuance.scope.join(' ');
    // The organization approved for, in both tokens alike.
    const organization = await organizationClaims(this.#store, plan.grant.organizationId, issuance.user.id, issuance.scope);
    const [accessToken, idToken] = await Promise.all([
      this.#accessToken(issuance, now, scope, plan.accessTokenLifetime, organization),
      issuance.scope.includes('openid') ? this.#idToken(issuance, plan.grant, now, organization) : undefined,
    ]);
    return {
      access_token: accessToken,
      token_type: issuance.dpopJkt ? 'DPoP' : 'Bearer',
      expires_in: plan.accessTokenLifetime,
      scope,
      ...(idToken === undefined ? {} : { id_token: idToken }),
      ...(plan.refresh === undefined ? {} : { refresh_token: plan.refresh.token }),
    };
  }

  /**
   * An RFC 9068 access token for one API, as the grants without a grant record issue it (a
   * client's own, an exchanged one, one redeemed for an ID-JAG): `claims` first (its client,
   * scope and what the grant adds), then the issuer, the API as `aud`, `sub`, the times and a
   * `jti`, and `cnf` when bound to a DPoP key. Signed as the API asks (§2.1: RS256 unless it
   * chose otherwise).
   */
  async #apiAccessToken(
    resource: ResourceRecord,
    claims: Readonly<Record<string, unknown>>,
    sub: string,
    now: number,
    exp: number,
    dpopJkt: string | null,
  ): Promise<string> {
    const key = await this.#keys.signingKey(resource.signingAlg);
    return signJws(
      { alg: key.alg, kid: key.kid, typ: 'at+jwt' },
      { ...claims, iss: this.#issuer, aud: resource.identifier, sub, iat: now, exp, jti: randomUUID(), ...(dpopJkt ? { cnf: { jkt: dpopJkt } } : {}) },
      key.privateKey,
    );
  }

  /**
   * RFC 6749 §4.4.3: a client's own access token (the client_credentials grant), for one
   * API: `sub` is the client (RFC 9068 §2.2), no `auth_time` or grant, and never an ID token
   * or a refresh token ("A refresh token SHOULD NOT be included"). Nothing is recorded: the
   * token lives by its signature, its client and its API (flows/lifecycle/access-token.ts).
   */
  async issueForClient(issuance: {
    readonly client: ClientRecord;
    readonly scope: readonly string[];
    readonly resource: ResourceRecord;
    readonly dpopJkt: string | null;
  }): Promise<TokenResponse> {
    const now = seconds(this.#clock.now());
    const lifetime = issuance.resource.accessTokenTtl ?? this.#lifetimes.accessToken;
    const scope = issuance.scope.join(' ');
    const token = await this.#apiAccessToken(
      issuance.resource,
      { client_id: issuance.client.id, scope },
      issuance.client.id,
      now,
      now + lifetime,
      issuance.dpopJkt,
    );
    return { access_token: token, token_type: issuance.dpopJkt ? 'DPoP' : 'Bearer', expires_in: lifetime, scope };
  }

  /**
   * RFC 8693 §2.2.1: the access token a token exchange issues, an RFC 9068 JWT for one API
   * with `sub` the person, `client_id` the exchanging client, `act` the actors (§4.1) and
   * `gid` the subject token's grant, so that it lives exactly as long as that grant does
   * (flows/lifecycle/access-token.ts), and `chain_scope` what the tokens before it held. Its
   * `exp` is the API's lifetime or the subject token's `exp`, whichever is sooner: an
   * exchanged token never outlives the token it came from
   * (Keycloak's CVE of 2026 issued one that did). No refresh token: the exchange is repeated
   * with a fresh subject token. Nothing is recorded on the grant: its activity is its own
   * client's, and this token ends before the subject token does.
   */
  async issueExchanged(issuance: ExchangeIssuance): Promise<TokenResponse> {
    const now = seconds(this.#clock.now());
    const exp = Math.min(now + (issuance.resource.accessTokenTtl ?? this.#lifetimes.accessToken), issuance.notAfter);
    const scope = issuance.scope.join(' ');
    // What the chain held goes neither in `scope` (RFC 9068 §2.2.3: "All the individual scope
    // strings in the "scope" claim MUST have meaning for the resources indicated in the "aud"
    // claim") nor in `act` (RFC 8693 §4.1: "non-identity claims (e.g., exp, nbf, and aud) are
    // not meaningful when used within an act claim"), but in a claim of this server's own, read
    // back only here, as `gid` is. RFC 9068 §2.2.2: "Authorization servers MAY return arbitrary
    // attributes not defined in any existing specification, as long as the corresponding claim
    // names are collision resistant or the access tokens are meant to be used only within a
    // private subsystem."
    const chain = issuance.chainScope ?? new Map();
    const chainClaim = chain.size === 0 ? {} : { chain_scope: Object.fromEntries([...chain].map(([aud, held]) => [aud, held.join(' ')])) };
    const token = await this.#apiAccessToken(
      issuance.resource,
      { client_id: issuance.client.id, scope, gid: issuance.grantId, act: issuance.act, ...chainClaim, ...issuance.organization },
      issuance.userId,
      now,
      exp,
      issuance.dpopJkt,
    );
    return { access_token: token, issued_token_type: TOKEN_TYPE_ACCESS_TOKEN, token_type: issuance.dpopJkt ? 'DPoP' : 'Bearer', expires_in: exp - now, scope };
  }

  /**
   * draft-ietf-oauth-identity-assertion-authz-grant §4.4.2: the access token redeemed for an
   * ID-JAG, an RFC 9068 JWT for one API with `sub` the person, `client_id` the client and
   * `id_jag_iss` the trusted issuer whose ID-JAG it came from. No grant here, no refresh
   * token: it lives while the issuer stays trusted (flows/lifecycle/access-token.ts).
   */
  async issueAsserted(issuance: {
    readonly client: ClientRecord;
    readonly userId: string;
    readonly scope: readonly string[];
    readonly resource: ResourceRecord;
    readonly assertedBy: string;
    readonly dpopJkt: string | null;
  }): Promise<TokenResponse> {
    const now = seconds(this.#clock.now());
    const lifetime = issuance.resource.accessTokenTtl ?? this.#lifetimes.accessToken;
    const scope = issuance.scope.join(' ');
    const token = await this.#apiAccessToken(
      issuance.resource,
      { client_id: issuance.client.id, scope, id_jag_iss: issuance.assertedBy },
      issuance.userId,
      now,
      now + lifetime,
      issuance.dpopJkt,
    );
    return { access_token: token, token_type: issuance.dpopJkt ? 'DPoP' : 'Bearer', expires_in: lifetime, scope };
  }

  /**
   * draft-ietf-oauth-identity-assertion-authz-grant §3.1: an Identity Assertion JWT
   * Authorization Grant for another authorization server, `typ` oauth-id-jag+jwt, signed as ID
   * tokens are (RS256, with a key this server's JWKS publishes), with `iss`, `sub`, `aud`,
   * `client_id`, `jti`, `iat`, `exp` (five minutes at most, and never past the subject ID
   * token's), `resource` and `scope` when asked for, `auth_time`, and the person's verified
   * e-mail address. The token response (§4.3.2): `issued_token_type` id-jag, `token_type` N_A,
   * no refresh token.
   */
  async issueIdJag(issuance: IdJagIssuance): Promise<TokenResponse> {
    const now = seconds(this.#clock.now());
    const exp = Math.min(now + Math.min(issuance.lifetime ?? ID_JAG_LIFETIME, ID_JAG_LIFETIME), issuance.notAfter);
    const scope = issuance.scope.join(' ');
    const key = await this.#keys.signingKey('RS256');
    const token = await signJws(
      { alg: key.alg, kid: key.kid, typ: ID_JAG_TYP },
      {
        iss: this.#issuer,
        sub: issuance.userId,
        aud: issuance.audience,
        client_id: issuance.client.id,
        jti: randomUUID(),
        iat: now,
        exp,
        ...(issuance.resource === null ? {} : { resource: issuance.resource }),
        ...(scope === '' ? {} : { scope }),
        ...(issuance.authTime === null ? {} : { auth_time: issuance.authTime }),
        ...(issuance.email === null ? {} : { email: issuance.email, email_verified: true }),
      },
      key.privateKey,
    );
    return { access_token: token, issued_token_type: TOKEN_TYPE_ID_JAG, token_type: 'N_A', expires_in: exp - now, scope };
  }

  /**
   * An ID token this server signed (typ JWT, RS256, a key still published) for itself as
   * issuer, not expired: the subject token of an ID-JAG exchange. Null for anything else.
   */
  async readIdToken(token: string): Promise<IdTokenClaims | null> {
    const keySet = await this.#verificationKeySet();
    try {
      const { payload, protectedHeader } = await jwtVerify(token, keySet, {
        issuer: this.#issuer,
        algorithms: ['RS256'],
        currentDate: new Date(this.#clock.now()),
        requiredClaims: ['sub', 'aud', 'exp', 'iat'],
      });
      // ID tokens are typ JWT: access, logout tokens and ID-JAGs are refused as subject.
      if (protectedHeader.typ !== 'JWT') return null;
      const { sub, aud, exp, auth_time: authTime } = payload;
      const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
      if (typeof sub !== 'string' || typeof exp !== 'number' || audiences.length === 0) return null;
      return { sub, aud: audiences, exp, authTime: typeof authTime === 'number' ? authTime : null };
    } catch {
      return null;
    }
  }

  /**
   * An opaque 256-bit refresh token, stored by its hash with the scope of the sign-in it came from (RFC 6749
   * §6: a refreshed access token may narrow the scope, the refresh token keeps it). It expires
   * at the grant's refresh lifetime, or sooner when left unused for the idle time.
   */
  #refreshToken(
    issuance: Issuance,
    scope: readonly string[],
    grant: GrantRecord,
    now: number,
    lifetime: number,
  ): { token: string; record: RefreshTokenRecord } | undefined {
    // A remembered grant lives on across sign-ins: its lifetime runs from the last approval.
    const expiresAt = Math.min((grant.renewedAt ?? grant.createdAt) + lifetime * 1000, now + this.#lifetimes.refreshTokenIdle * 1000);
    if (expiresAt <= now) return undefined;
    // Made with the time in front and stored under that time and its hash, so that each
    // rotation adds its key at the end of the index (core/timed-secret.ts).
    const token = newTimedSecret(now);
    const record: RefreshTokenRecord = {
      hash: timedSecretKey(token),
      grantId: grant.id,
      clientId: issuance.client.id,
      userId: issuance.user.id,
      scope,
      authTime: issuance.authTime,
      sid: issuance.sid ?? null,
      createdAt: now,
      expiresAt,
      rotatedAt: null,
      // RFC 9449 §5: "Refresh tokens issued to confidential clients are not bound to the
      // DPoP proof public key because they are already sender-constrained" by the client's
      // authentication; a public client's are bound to its key. Public by its method, not by
      // a missing secret: a private_key_jwt client has none and is confidential.
      dpopJkt: issuance.client.authMethod === 'none' ? (issuance.dpopJkt ?? null) : null,
      // OIDC Core §12.2: a refreshed ID token says what the original said of the sign-in and
      // carries the claims the original request asked for.
      idTokenClaims: issuance.idTokenClaims ?? [],
      ...(issuance.claimsLocales?.length ? { claimsLocales: issuance.claimsLocales } : {}),
      ...(issuance.userinfoClaims?.length ? { userinfoClaims: issuance.userinfoClaims } : {}),
      ...(issuance.claimsScope?.length ? { claimsScope: issuance.claimsScope } : {}),
      ...signInOf(issuance, grant),
    };
    return { token, record };
  }

  /**
   * The claims of an access token, if this server signed it (with a key still published) and
   * it has not expired; null for anything else. Whether its audience (this server or an API)
   * and its grant still stand is the caller's question.
   */
  async readAccessToken(token: string): Promise<AccessTokenClaims | null> {
    // Outside the try: a store that cannot list the keys fails the request, rather than
    // making every token look invalid to its client.
    const keySet = await this.#verificationKeySet();
    try {
      const { payload } = await jwtVerify(token, keySet, {
        issuer: this.#issuer,
        typ: 'at+jwt',
        // Whichever of our algorithms signed it: the key, found by its kid, fixes which.
        algorithms: [...SIGNING_ALGORITHMS],
        currentDate: new Date(this.#clock.now()),
        requiredClaims: ['sub', 'jti', 'iat', 'exp', 'aud'],
      });
      const {
        sub,
        jti,
        iat,
        exp,
        aud,
        client_id: clientId,
        scope,
        gid,
        cnf,
        claims_locales: claimsLocales,
        userinfo_claims: userinfoClaims,
        act,
        chain_scope: chainScope,
        id_jag_iss: assertedBy,
      } = payload;
      if (typeof sub !== 'string' || typeof jti !== 'string' || typeof iat !== 'number' || typeof exp !== 'number') return null;
      if (typeof clientId !== 'string' || typeof scope !== 'string' || typeof aud !== 'string') return null;
      // A token without a grant is a client's own, and then its subject is the client, or
      // a person's redeemed for an ID-JAG (never with a grant).
      if (assertedBy !== undefined && (typeof assertedBy !== 'string' || gid !== undefined)) return null;
      if (gid === undefined ? sub !== clientId && assertedBy === undefined : typeof gid !== 'string') return null;
      const jkt = (cnf as { jkt?: unknown } | undefined)?.jkt;
      if (cnf !== undefined && typeof jkt !== 'string') return null;
      // Only a person's token is acted for (a token exchange needs a grant).
      const actor = act === undefined ? null : actorOf(act);
      if (act !== undefined && (actor === null || typeof gid !== 'string')) return null;
      // Only an exchanged token carries what its chain held; one from before it was carried holds none.
      const chain = chainScope === undefined ? new Map<string, readonly string[]>() : chainScopeOf(chainScope);
      if (chain === null || (chainScope !== undefined && actor === null)) return null;
      return {
        sub,
        jti,
        iat,
        exp,
        aud,
        client_id: clientId,
        scope: scope.split(' ').filter(Boolean),
        gid: typeof gid === 'string' ? gid : null,
        jkt: typeof jkt === 'string' ? jkt : null,
        claimsLocales: typeof claimsLocales === 'string' ? claimsLocales.split(' ').filter(Boolean) : [],
        userinfoClaims: typeof userinfoClaims === 'string' ? userinfoClaims.split(' ').filter(Boolean) : [],
        act: actor,
        chainScope: chain,
        assertedBy: typeof assertedBy === 'string' ? assertedBy : null,
      };
    } catch {
      return null;
    }
  }

  /**
   * Back-Channel Logout 1.0 §2.4: a logout token for `client` about the session `sid` of
   * `sub`: typ logout+jwt, iss, aud, iat, exp, jti, sub, sid and the logout event; never a
   * nonce. Signed as ID tokens are.
   */
  async logoutToken(client: ClientRecord, sub: string, sid: string): Promise<string> {
    const key = await this.#keys.signingKey('RS256');
    const now = seconds(this.#clock.now());
    return signJws(
      { alg: key.alg, kid: key.kid, typ: 'logout+jwt' },
      {
        iss: this.#issuer,
        aud: client.id,
        iat: now,
        // Short: it is delivered at once or not at all (the retries end within minutes).
        exp: now + 120,
        jti: randomUUID(),
        sub,
        sid,
        events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
      },
      key.privateKey,
    );
  }

  /**
   * A Security Event Token (RFC 8417): `typ` secevent+jwt (§2.3), signed as ID tokens are, with
   * the claims the caller built (flows/ssf/set.ts) and this server as `iss`. No `exp`: a SET
   * states what happened, and a receiver decides how long it cares (§2.2 "exp" is discouraged).
   */
  async securityEventToken(claims: Readonly<Record<string, unknown>>): Promise<string> {
    const key = await this.#keys.signingKey('RS256');
    return signJws({ alg: key.alg, kid: key.kid, typ: 'secevent+jwt' }, { iss: this.#issuer, ...claims }, key.privateKey);
  }

  /**
   * An `id_token_hint` (RP-Initiated Logout 1.0 §2): an ID token this server signed, with a
   * key it still publishes, for itself as issuer. "The OP need not be listed as an audience
   * ... when it is used as an id_token_hint" and an expired one is accepted: only the
   * signature, the issuer and the shape are checked. Null for anything else.
   */
  async readIdTokenHint(token: string): Promise<IdTokenHint | null> {
    const keySet = await this.#verificationKeySet();
    try {
      // ID tokens are typ JWT; refuse access and logout tokens passed off as hints.
      if (decodeProtectedHeader(token).typ !== 'JWT') return null;
      const { payload } = await compactVerify(token, keySet, { algorithms: ['RS256'] });
      const claims: unknown = JSON.parse(new TextDecoder().decode(payload));
      if (typeof claims !== 'object' || claims === null) return null;
      const { iss, sub, aud, azp, sid } = claims as Record<string, unknown>;
      if (iss !== this.#issuer || typeof sub !== 'string') return null;
      const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) && aud.every((item) => typeof item === 'string') ? aud : null;
      if (audiences === null || audiences.length === 0) return null;
      return { sub, aud: audiences, azp: typeof azp === 'string' ? azp : null, sid: typeof sid === 'string' ? sid : null };
    } catch {
      return null;
    }
  }

  /** The published keys as a jose key set, rebuilt only when the set of keys changes. */
  async #verificationKeySet(): Promise<JWTVerifyGetKey> {
    const jwks = await this.#keys.jwks();
    const kids = jwks.keys.map((key) => key.kid).join(' ');
    if (this.#verificationKeys?.kids !== kids) this.#verificationKeys = { kids, keys: createLocalJWKSet(jwks) };
    return this.#verificationKeys.keys;
  }

  /** Public clients, and device grants, may be given shorter lifetimes than confidential ones. */
  #lifetimesFor(client: ClientRecord, grant: GrantRecord): { accessToken: number; refreshToken: number } {
    const own = client.authMethod === 'none' ? this.#lifetimes.publicClient : this.#lifetimes;
    if (grant.kind !== GRANT_DEVICE_CODE) return own;
    // A device grant gets the shorter of its client's lifetimes and the device ones.
    const device = this.#lifetimes.deviceGrant;
    return { accessToken: Math.min(own.accessToken, device.accessToken), refreshToken: Math.min(own.refreshToken, device.refreshToken) };
  }

  /**
   * RFC 9068 §2.2: iss, exp, aud, sub, client_id, iat, jti, with scope and auth_time. Signed
   * as its API chose (RS256 unless its operator said otherwise: §2.1 promises resource
   * servers only RS256); for this server's own API (userinfo), which verifies it here, with
   * `TESSERA_ACCESS_TOKEN_ALG` (ES256: a cheaper signature on every code exchange).
   */
  async #accessToken(issuance: Issuance, now: number, scope: string, lifetime: number, organization: Readonly<Record<string, string>>): Promise<string> {
    const userinfoClaims = approvedClaims(issuance.userinfoClaims ?? [], issuance.claimsScope ?? []);
    const key = await this.#keys.signingKey(issuance.resource?.signingAlg ?? this.#accessTokenAlg);
    return signJws(
      { alg: key.alg, kid: key.kid, typ: 'at+jwt' },
      {
        client_id: issuance.client.id,
        scope,
        auth_time: seconds(issuance.authTime),
        // Lets introspection and revocation find the approval this token came from.
        gid: issuance.grantId,
        iss: this.#issuer,
        // RFC 8707 §2 and RFC 9068 §3: the API it is for; without one, this server's own API (userinfo).
        aud: issuance.resource?.identifier ?? this.#issuer,
        sub: issuance.user.id,
        iat: now,
        exp: now + lifetime,
        jti: randomUUID(),
        // RFC 9449 §6.1: the confirmation of the key the token is bound to.
        ...(issuance.dpopJkt ? { cnf: { jkt: issuance.dpopJkt } } : {}),
        // OIDC Core §5.2: the languages UserInfo names the person in, on a token for it alone.
        ...(!issuance.resource && issuance.claimsLocales?.length ? { claims_locales: issuance.claimsLocales.join(' ') } : {}),
        // OIDC Core §5.5: the claims UserInfo sends beside the scope's, asked for by name and
        // approved, on a token for it alone (not OIDC's name: this server's own API reads it).
        ...(!issuance.resource && userinfoClaims.length > 0 ? { userinfo_claims: userinfoClaims.join(' ') } : {}),
        // The organization the person approved for (the organization scope): an API reads it here.
        ...organization,
      },
      key.privateKey,
    );
  }

  /** OIDC Core §2 and §3.1.3.6. */
  async #idToken(issuance: Issuance, grant: GrantRecord, now: number, organization: Readonly<Record<string, string>>): Promise<string> {
    // OIDC Core §5.5: those asked for in the ID token, of the scope or approved by name.
    const idTokenClaims = issuance.idTokenClaims ?? [];
    const named = approvedClaims(idTokenClaims, issuance.claimsScope ?? []);
    const key = await this.#keys.signingKey('RS256');
    return signJws(
      { alg: key.alg, kid: key.kid, typ: 'JWT' },
      {
        ...releasedClaims(
          issuance.user,
          issuance.scope,
          idTokenClaims,
          await groupsOf(this.#store, issuance.user.id, issuance.scope, named),
          issuance.claimsLocales,
          named,
        ),
        ...organization,
        auth_time: seconds(issuance.authTime),
        // OIDC Core §2 amr (RFC 8176 values) and acr: how the person signed in before approving.
        ...signInOf(issuance, grant),
        azp: issuance.client.id,
        ...(issuance.nonce ? { nonce: issuance.nonce } : {}),
        // Back-Channel Logout 1.0 §2.1 / Front-Channel Logout §3: the OP session it came from.
        ...(issuance.sid ? { sid: issuance.sid } : {}),
        iss: this.#issuer,
        aud: issuance.client.id,
        sub: issuance.user.id,
        iat: now,
        exp: now + this.#lifetimes.idToken,
      },
      key.privateKey,
    );
  }
}

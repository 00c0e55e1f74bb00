/**
 * Tessera as a relying party of an upstream OpenID provider (OIDC Core §3.1, through
 * openid-client): discovery, the authorization code flow with PKCE (RFC 7636) and a nonce,
 * the ID token validated (signature, `iss`, `aud`, `exp`, `nonce`), the `iss` of the
 * authorization response checked where the provider sends it (RFC 9207), and UserInfo read
 * for the claims. The upstream tokens are used here and dropped: never stored, never passed on.
 */
import * as oidc from 'openid-client';
import { upstreamMethods } from '../../core/auth-methods.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { AnswerTooLargeError, upstreamFetch } from '../../core/outbound.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import type { FlowDeps } from '../types.ts';
import type { UpstreamIdentity, UpstreamRefusal } from './accounts.ts';
import { upstreamRedirectUri, type MappedClaim, type OidcSettings } from './settings.ts';

/** A sign-in through a provider that cannot go on: why (the page's words) and what happened (the log's). */
export class UpstreamFailure extends Error {
  readonly reason: UpstreamRefusal;
  /** The provider's error code, or the check that failed: for the event and the log, never the page. */
  readonly detail: string;
  constructor(reason: UpstreamRefusal, detail: string, options?: ErrorOptions) {
    super(`${reason}: ${detail}`, options);
    this.name = 'UpstreamFailure';
    this.reason = reason;
    this.detail = detail;
  }
}

/**
 * The upstream fetch (answers capped, core/outbound.ts) whose failure to get an answer names
 * the URL and the reason (connection refused, DNS, TLS, no answer in time): fetch itself says
 * only "fetch failed", and the operator reading `signin.failed` needs to know what to fix.
 */
export const providerFetch: typeof fetch = async (input, init) => {
  try {
    return await upstreamFetch(input, init);
  } catch (error) {
    if (error instanceof AnswerTooLargeError) throw error;
    const url = input instanceof Request ? input.url : String(input);
    throw new UpstreamFailure('unavailable', `cannot reach ${url}: ${fetchFailure(error)}`, { cause: error });
  }
};

/** What an upstream request's failure means: the provider down or slow, or an answer that does not hold up. */
export function upstreamFailure(error: unknown): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  // providerFetch's own failure, wrapped by openid-client ("something went wrong").
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof UpstreamFailure) return cause;
  }
  if (error instanceof oidc.AuthorizationResponseError) return new UpstreamFailure('upstream_error', error.error, { cause: error });
  if (error instanceof oidc.ResponseBodyError) return new UpstreamFailure('upstream_error', `${error.error} (HTTP ${error.status})`, { cause: error });
  // GitHub refuses a code or the client's credentials with 200 and an OAuth error body
  // ({"error": "bad_verification_code"}), which openid-client reads as an answer without an
  // access_token; the body is the last cause. Its error code, RFC 6749 §5.2's characters only,
  // tells the operator which (the client secret, say), where the missing field would not.
  for (let cause: unknown = error; typeof cause === 'object' && cause !== null; cause = (cause as { cause?: unknown }).cause) {
    const code = (cause as { body?: { error?: unknown } }).body?.error;
    if (typeof code === 'string' && /^[\x20\x21\x23-\x5B\x5D-\x7E]{1,100}$/.test(code))
      return new UpstreamFailure('upstream_error', `${code} (HTTP 200, no access token)`, { cause: error });
  }
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof AnswerTooLargeError) return new UpstreamFailure('invalid_response', cause.message, { cause: error });
  }
  for (let cause: unknown = error; cause instanceof Error; cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (
      cause.name === 'TimeoutError' ||
      cause.name === 'AbortError' ||
      (typeof code === 'string' && /^(ECONN|ENOTFOUND|EAI_|ETIMEDOUT|EHOSTUNREACH|UND_ERR)/.test(code)) ||
      cause.message === 'fetch failed'
    ) {
      return new UpstreamFailure('unavailable', cause.message, { cause: error });
    }
  }
  // openid-client says "invalid response encountered"; the check that failed is in its cause.
  const messages: string[] = [];
  for (let cause: unknown = error; cause instanceof Error && messages.length < 4; cause = cause.cause) messages.push(cause.message);
  return new UpstreamFailure('invalid_response', messages.length > 0 ? messages.join(': ') : String(error), { cause: error });
}

/** Discovered configurations, by provider and version, for a few minutes: a sign-in need not fetch the metadata twice. */
const discovered = new Map<string, { readonly config: oidc.Configuration; readonly until: number }>();
const DISCOVERY_CACHE_MS = 5 * 60_000;
const MAX_CACHED = 100;

async function configurationFor(
  deps: Pick<FlowDeps, 'config' | 'clock'> & { readonly secrets: SecretBox },
  provider: IdentityProviderRecord,
  settings: OidcSettings,
): Promise<oidc.Configuration> {
  const key = `${provider.id} ${provider.updatedAt} ${settings.issuer} ${settings.clientId}`;
  const now = deps.clock.now();
  const cached = discovered.get(key);
  if (cached && cached.until > now) return cached.config;
  const secret = provider.secret === null ? null : deps.secrets.open(provider.id, provider.secret);
  const issuer = new URL(settings.issuer);
  const config = await oidc.discovery(issuer, settings.clientId, secret ?? undefined, secret === null ? oidc.None() : oidc.ClientSecretBasic(secret), {
    timeout: deps.config.upstream.timeout,
    // Every answer (metadata, keys, tokens, UserInfo) read up to a bound (core/outbound.ts).
    [oidc.customFetch]: providerFetch,
    // Plain http only for a provider on this machine (flows/manage/providers.ts refuses it elsewhere).
    execute: issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
  });
  if (discovered.size >= MAX_CACHED) discovered.clear();
  discovered.set(key, { config, until: now + DISCOVERY_CACHE_MS });
  return config;
}

/** What a sign-in keeps while the person is upstream. */
export interface UpstreamChecks {
  readonly state: string;
  readonly nonce: string;
  readonly codeVerifier: string;
  /** The `max_age` sent, seconds (null: none), which the ID token's `auth_time` must meet. */
  readonly maxAge: number | null;
}

/** How a sign-in through a provider begins. */
export interface UpstreamStartOptions {
  /** OIDC Core §3.1.2.1 `login_hint`: who is expected to sign in. */
  readonly loginHint?: string | null;
  /**
   * The sign-in must be a new one, at most this many seconds old (0: made now): what
   * `prompt=login` and `max_age` asked of this server, or a change that needs a recent
   * sign-in. Null: any sign-in the provider vouches for.
   */
  readonly maxAge?: number | null;
}

/** The provider's authorization URL for a new sign-in, and the checks its answer must pass. */
export async function beginOidc(
  deps: Pick<FlowDeps, 'config' | 'clock'> & { readonly secrets: SecretBox },
  provider: IdentityProviderRecord,
  settings: OidcSettings,
  options: UpstreamStartOptions = {},
): Promise<{ readonly url: URL; readonly checks: UpstreamChecks }> {
  const config = await configurationFor(deps, provider, settings).catch((error: unknown) => {
    throw upstreamFailure(error);
  });
  const maxAge = options.maxAge ?? null;
  const checks = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier(), maxAge };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: upstreamRedirectUri(deps.config.issuer, provider.id),
    scope: settings.scopes.join(' '),
    response_type: 'code',
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
    state: checks.state,
    nonce: checks.nonce,
    ...(options.loginHint ? { login_hint: options.loginHint } : {}),
    // OIDC Core §3.1.2.1: prompt=login, "The Authorization Server SHOULD prompt the End-User
    // for reauthentication"; max_age, "If the elapsed time is greater than this value, the OP
    // MUST attempt to actively re-authenticate the End-User", and "When max_age is used, the
    // ID Token returned MUST include an auth_time Claim Value" (checked in finishOidc).
    ...(maxAge === null ? {} : { max_age: String(maxAge) }),
    ...(maxAge === 0 ? { prompt: 'login' } : {}),
  });
  return { url, checks };
}

/**
 * When the person last proved who they are to the provider (ms): the ID token's `auth_time`
 * (OIDC Core §2, "Time when the End-User authentication occurred"), never later than `now`;
 * null when it has none.
 */
export function upstreamAuthTime(idToken: Readonly<Record<string, unknown>>, now: number): number | null {
  const authTime = idToken['auth_time'];
  return typeof authTime === 'number' && Number.isFinite(authTime) ? Math.min(authTime * 1000, now) : null;
}

/** The upstream claim `claim` comes from: the operator's mapping, else the standard claim of that name. */
const from = (settings: OidcSettings, claim: MappedClaim, standard: string = claim): string => settings.claimMapping[claim] ?? standard;

/**
 * OIDC Core §5.1: `email_verified` says whether the `email` claim's address was verified, and
 * nothing of another claim's: an address read from another claim (`--claim-mapping
 * email=CLAIM`, which may be one the person edits) is verified only when it is that same
 * address. A boolean; some providers send the string.
 */
export function emailVerifiedOf(claims: Readonly<Record<string, unknown>>, email: string | null): boolean {
  const verified = claims['email_verified'];
  if (email === null || (verified !== true && verified !== 'true')) return false;
  return textClaim(claims, 'email')?.toLowerCase() === email.toLowerCase();
}

function textClaim(claims: Readonly<Record<string, unknown>>, name: string): string | null {
  const value = claims[name];
  return typeof value === 'string' && value.trim() !== '' ? value : typeof value === 'number' ? String(value) : null;
}

/**
 * The answer the provider sent the browser back with (`callback`: the whole URL), checked
 * against the sign-in's state, nonce and PKCE verifier, its code exchanged and its claims
 * read. Throws `UpstreamFailure`.
 */
export async function finishOidc(
  deps: Pick<FlowDeps, 'config' | 'clock'> & { readonly secrets: SecretBox },
  provider: IdentityProviderRecord,
  settings: OidcSettings,
  callback: URL,
  checks: UpstreamChecks,
): Promise<UpstreamIdentity> {
  try {
    const config = await configurationFor(deps, provider, settings);
    // openid-client checks `state`, `iss` (RFC 9207, when the provider sends it or says it
    // does), the code exchange with the verifier, and the ID token (OIDC Core §3.1.3.7),
    // with, where max_age was sent, its `auth_time` there and that recent (§3.1.3.7 item 13).
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
      ...(checks.maxAge === null ? {} : { maxAge: checks.maxAge }),
    });
    const idToken = tokens.claims();
    if (!idToken) throw new UpstreamFailure('invalid_response', 'no ID token');
    // OIDC Core §5.3.2: "The sub Claim in the UserInfo Response MUST be verified to exactly match the sub Claim in the ID Token".
    const userinfo = config.serverMetadata().userinfo_endpoint ? await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub) : {};
    const claims: Record<string, unknown> = { ...idToken, ...userinfo };
    const email = textClaim(claims, from(settings, 'email'));
    const groups = claims[from(settings, 'groups')];
    return {
      subject: idToken.sub,
      label: email ?? textClaim(claims, 'preferred_username') ?? idToken.sub,
      username: textClaim(claims, from(settings, 'username', 'preferred_username')),
      email,
      emailVerified: emailVerifiedOf(claims, email),
      name: textClaim(claims, from(settings, 'name')),
      givenName: textClaim(claims, from(settings, 'given_name')),
      familyName: textClaim(claims, from(settings, 'family_name')),
      picture: textClaim(claims, from(settings, 'picture')),
      locale: textClaim(claims, from(settings, 'locale')),
      zoneinfo: textClaim(claims, from(settings, 'zoneinfo')),
      groups: Array.isArray(groups) ? groups.filter((group): group is string => typeof group === 'string').slice(0, 200) : [],
      // From the ID token alone, the one answer signed for this sign-in (OIDC Core §2: amr is
      // an ID token claim); UserInfo may not change it.
      amr: upstreamMethods(idToken['amr'], settings.trustUpstreamMfa),
      authTime: upstreamAuthTime(idToken, deps.clock.now()),
    };
  } catch (error) {
    throw upstreamFailure(error);
  }
}

/**
 * Signing in with GitHub: OAuth 2.0 without OpenID Connect. The code flow
 * runs through openid-client against GitHub's documented endpoints (authorization at
 * `/login/oauth/authorize`, tokens at `/login/oauth/access_token`, with PKCE), then the REST
 * API says who the person is: `GET /user`, their verified primary address from
 * `GET /user/emails`, and, when the operator requires an organisation, their membership
 * from `GET /user/memberships/orgs/{org}` (active only). The token is dropped afterwards.
 */
import * as oidc from 'openid-client';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import type { FlowDeps } from '../types.ts';
import type { UpstreamIdentity } from './accounts.ts';
import { providerFetch, upstreamFailure, UpstreamFailure, type UpstreamChecks } from './oidc.ts';
import { upstreamRedirectUri, type GithubSettings } from './settings.ts';

type GithubDeps = Pick<FlowDeps, 'config' | 'clock'> & { readonly secrets: SecretBox };

function configuration(deps: GithubDeps, provider: IdentityProviderRecord, settings: GithubSettings): oidc.Configuration {
  if (provider.secret === null) throw new UpstreamFailure('invalid_response', 'the GitHub provider has no client secret');
  const secret = deps.secrets.open(provider.id, provider.secret);
  const config = new oidc.Configuration(
    {
      issuer: settings.webUrl,
      authorization_endpoint: `${settings.webUrl}/login/oauth/authorize`,
      token_endpoint: `${settings.webUrl}/login/oauth/access_token`,
    },
    settings.clientId,
    secret,
    oidc.ClientSecretPost(secret),
  );
  config.timeout = deps.config.upstream.timeout;
  // Its answers read up to a bound (core/outbound.ts).
  config[oidc.customFetch] = providerFetch;
  if (new URL(settings.webUrl).protocol === 'http:') oidc.allowInsecureRequests(config);
  return config;
}

/** The scopes asked for: the profile, the addresses, and the organisations when one is required. */
function scopes(settings: GithubSettings): string {
  return ['read:user', 'user:email', ...(settings.allowedOrganizations.length > 0 ? ['read:org'] : [])].join(' ');
}

export async function beginGithub(
  deps: GithubDeps,
  provider: IdentityProviderRecord,
  settings: GithubSettings,
): Promise<{ readonly url: URL; readonly checks: UpstreamChecks }> {
  let config: oidc.Configuration;
  try {
    config = configuration(deps, provider, settings);
  } catch (error) {
    throw upstreamFailure(error);
  }
  // GitHub sends no ID token: the nonce is kept only because every sign-in under way has one.
  // Nor has its OAuth a prompt=login or max_age: it cannot be asked for a new sign-in.
  const checks = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier(), maxAge: null };
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: upstreamRedirectUri(deps.config.issuer, provider.id),
    scope: scopes(settings),
    state: checks.state,
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: 'S256',
    // GitHub: offer the sign-up page only to those who can sign in afterwards anyway.
    allow_signup: 'false',
  });
  return { url, checks };
}

interface GithubUser {
  readonly id: number;
  readonly login: string;
  readonly name?: string | null;
  readonly avatar_url?: string | null;
}

interface GithubEmail {
  readonly email: string;
  readonly primary: boolean;
  readonly verified: boolean;
}

/** One call to GitHub's REST API as its documentation says to make it; the status and JSON body. */
async function api(deps: GithubDeps, settings: GithubSettings, token: string, path: string): Promise<{ readonly status: number; readonly body: unknown }> {
  const response = await providerFetch(`${settings.apiUrl}${path}`, {
    headers: { accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28', 'user-agent': 'Tessera' },
    signal: AbortSignal.timeout(deps.config.upstream.timeout * 1000),
    redirect: 'error',
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: the status says what happened.
  }
  return { status: response.status, body };
}

export async function finishGithub(
  deps: GithubDeps,
  provider: IdentityProviderRecord,
  settings: GithubSettings,
  callback: URL,
  checks: UpstreamChecks,
): Promise<UpstreamIdentity> {
  try {
    const tokens = await oidc.authorizationCodeGrant(configuration(deps, provider, settings), callback, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
    });
    const token = tokens.access_token;
    const user = await api(deps, settings, token, '/user');
    const body = user.body as Partial<GithubUser> | null;
    if (user.status !== 200 || typeof body?.id !== 'number' || typeof body.login !== 'string')
      throw new UpstreamFailure('invalid_response', `GET /user answered ${user.status}`);
    const emails = await api(deps, settings, token, '/user/emails');
    if (emails.status !== 200 || !Array.isArray(emails.body)) throw new UpstreamFailure('invalid_response', `GET /user/emails answered ${emails.status}`);
    const primary = (emails.body as Partial<GithubEmail>[]).find(
      (email) => email.primary === true && email.verified === true && typeof email.email === 'string',
    );
    if (settings.allowedOrganizations.length > 0) {
      let member = false;
      for (const org of settings.allowedOrganizations) {
        const membership = await api(deps, settings, token, `/user/memberships/orgs/${encodeURIComponent(org)}`);
        // 404 or 403: not a member (or the app is not allowed to see it); pending: invited, not yet in.
        if (membership.status === 200 && (membership.body as { state?: unknown } | null)?.state === 'active') {
          member = true;
          break;
        }
        if (membership.status >= 500) throw new UpstreamFailure('unavailable', `GET /user/memberships/orgs/${org} answered ${membership.status}`);
      }
      if (!member) throw new UpstreamFailure('organization_not_allowed', `${body.login} is in none of ${settings.allowedOrganizations.join(', ')}`);
    }
    return {
      // GitHub's numeric id stays when the login is renamed.
      subject: String(body.id),
      label: body.login,
      username: settings.claimMapping.username === 'email' ? (primary?.email ?? body.login) : body.login,
      email: primary?.email ?? null,
      emailVerified: primary !== undefined,
      name: typeof body.name === 'string' ? body.name : null,
      givenName: null,
      familyName: null,
      picture: typeof body.avatar_url === 'string' ? body.avatar_url : null,
      locale: null,
      zoneinfo: null,
      groups: [],
      // GitHub's OAuth says nothing of how or when the person signed in there (no ID token, no amr, no auth_time).
      amr: [],
      authTime: null,
    };
  } catch (error) {
    throw upstreamFailure(error);
  }
}

/**
 * Sign-ins for the token lifecycle tests: the authorization code flow through openid-client
 * (or plain HTTP, for servers on a manual clock) and the device flow over HTTP.
 */
import * as oidc from 'openid-client';

import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, type GrantType } from '../../src/core/protocol.ts';
import { FormBrowser } from './browser.ts';
import { BrowserAt, poll, startDevice } from './device.ts';
import { basic, postForm, REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './server.ts';

/** The grants of a client registered to receive refresh tokens (`client add --grant refresh_token`). */
export const withRefresh = (): GrantType[] => [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN];

/** The scopes such a client may ask for. */
export const OFFLINE_SCOPES = ['openid', 'profile', 'email', 'offline_access'];

export function discover(server: TestServer, client: TestClient): Promise<oidc.Configuration> {
  return oidc.discovery(new URL(server.url), client.clientId, undefined, oidc.ClientSecretBasic(client.clientSecret), {
    execute: [oidc.allowInsecureRequests],
  });
}

/** The whole code flow through openid-client: the user signs in and approves `scope`. */
export async function signIn(server: TestServer, config: oidc.Configuration, user: TestUser, scope: string) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  // A nonce only where an ID token will carry it back.
  const nonce = scope.split(' ').includes('openid') ? oidc.randomNonce() : undefined;
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    ...(nonce ? { nonce } : {}),
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const page = await new FormBrowser(server.url).authorize(url.href, user);
  if (!page.location?.startsWith(REDIRECT_URI)) throw new Error(`the sign-in did not reach the client: ${page.status} ${page.html.slice(0, 500)}`);
  return oidc.authorizationCodeGrant(config, new URL(page.location), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    ...(nonce ? { expectedNonce: nonce } : {}),
  });
}

/**
 * The code flow over plain HTTP, for servers on a manual clock (whose tokens a client
 * library checking the wall clock would refuse), to `redirectUri` (REDIRECT_URI by default),
 * with `authorizeParams` added to the request and `tokenParams` to the code's redemption (a
 * `resource`, say). Returns the raw token response; throws, with the answer, unless it is 200.
 */
export async function signInRaw(
  server: TestServer,
  client: TestClient,
  user: Pick<TestUser, 'username' | 'password'>,
  scope: string,
  options: {
    readonly redirectUri?: string;
    readonly authorizeParams?: Readonly<Record<string, string>>;
    readonly tokenParams?: Readonly<Record<string, string>>;
  } = {},
): Promise<Record<string, unknown>> {
  const redirectUri = options.redirectUri ?? REDIRECT_URI;
  const verifier = oidc.randomPKCECodeVerifier();
  const url = new URL(`${server.url}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: redirectUri,
    scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...options.authorizeParams,
  }).toString();
  const page = await new FormBrowser(server.url).authorize(url.href, user);
  const code = new URL(page.location ?? 'http://invalid/').searchParams.get('code');
  if (!code) throw new Error(`no code: ${page.status} ${page.location}`);
  const result = await postForm(
    `${server.url}/oauth/token`,
    {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: verifier,
      ...options.tokenParams,
    },
    { authorization: basic(client.clientId, client.clientSecret) },
  );
  if (result.status !== 200) throw new Error(`token exchange failed: ${result.status} ${JSON.stringify(result.body)}`);
  return result.body;
}

/** A refresh over plain HTTP: status and body. */
export function refreshRaw(server: TestServer, client: TestClient, refreshToken: string, extra: Record<string, string> = {}) {
  return postForm(
    `${server.url}/oauth/token`,
    { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra },
    {
      authorization: basic(client.clientId, client.clientSecret),
    },
  );
}

/** What a device's successful poll receives (RFC 8628 §3.5, RFC 6749 §5.1). */
export interface DeviceTokens {
  readonly access_token: string;
  readonly refresh_token?: string;
  readonly scope: string;
}

/**
 * A device signs in through the device flow (RFC 8628): it asks for codes (saying who it is
 * in User-Agent, and where it is in X-Forwarded-For when the server trusts a proxy), the
 * user approves on a second screen, and the device's poll receives the tokens.
 */
export async function deviceSignIn(
  server: TestServer,
  client: TestClient,
  user: TestUser,
  options: { scope?: string; ip?: string; userAgent?: string } = {},
): Promise<DeviceTokens> {
  const started = await startDevice(server, client, options.scope ?? 'openid profile', {
    'user-agent': options.userAgent ?? 'LivingRoomTV/2.1',
    ...(options.ip ? { 'x-forwarded-for': options.ip } : {}),
  });
  const approved = await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
  if (approved.status !== 200) throw new Error(`the approval failed: ${approved.status}`);
  const polled = await poll(server, client, started.device_code);
  if (polled.status !== 200) throw new Error(`the poll failed: ${JSON.stringify(polled.body)}`);
  return polled.body as unknown as DeviceTokens;
}

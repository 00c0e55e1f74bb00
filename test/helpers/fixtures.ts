/**
 * The setups the end-to-end files share, written once: a server with an app
 * and a person, as most files' `before()` made them line by line, and an admin API token, as
 * the admin API's files each got one. A file with a setup of its own adds to these in its
 * `before()`; what a setup makes it stops in `after()` (`server.close()`).
 */
import assert from 'node:assert/strict';
import * as oidc from 'openid-client';
import type { Clock } from '../../src/core/clock.ts';
import { createClient } from '../../src/flows/manage/clients.ts';
import { runTessera } from './cli.ts';
import { manageDeps } from './manage.ts';
import { startSmtpServer, type TestSmtpServer } from './smtp.ts';
import { REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestServerOptions, type TestUser } from './server.ts';

export type ClientOptions = NonNullable<Parameters<TestServer['addClient']>[0]>;
export type UserOptions = NonNullable<Parameters<TestServer['addUser']>[0]>;

export interface AppFixture {
  readonly server: TestServer;
  /** The app, registered as `tessera client add` would (confidential unless `public`). */
  readonly client: TestClient;
  /** A person who signs in to it. */
  readonly user: TestUser;
  /** openid-client's configuration of the app, from the server's discovery document (http allowed). */
  readonly config: oidc.Configuration;
}

/** openid-client's configuration of `client` on `server`: its secret (Basic), or none for a public client. */
export function appConfig(server: Pick<TestServer, 'url'>, client: TestClient): Promise<oidc.Configuration> {
  const authentication = client.clientSecret === '' ? oidc.None() : oidc.ClientSecretBasic(client.clientSecret);
  return oidc.discovery(new URL(server.url), client.clientId, undefined, authentication, { execute: [oidc.allowInsecureRequests] });
}

/** A fresh server (`server` options), an app on it (`client`), a person (`user`), and the app's openid-client configuration. */
export async function startWithApp(
  options: { readonly server?: TestServerOptions; readonly client?: ClientOptions; readonly user?: UserOptions } = {},
): Promise<AppFixture> {
  const server = await startTestServer(options.server);
  try {
    const client = await server.addClient(options.client);
    const user = await server.addUser(options.user);
    return { server, client, user, config: await appConfig(server, client) };
  } catch (error) {
    await server.close();
    throw error;
  }
}

/**
 * A fresh server (`options`) that sends its mail to a test SMTP server of its own, as the files
 * that read the mail Tessera sends each set one up: TESSERA_SMTP_URL names it and STARTTLS is
 * off (it is on loopback), before `options.env`. The test closes both.
 */
export async function startWithMail(options: TestServerOptions = {}): Promise<{ server: TestServer; smtp: TestSmtpServer }> {
  const smtp = await startSmtpServer();
  try {
    const server = await startTestServer({ ...options, env: { TESSERA_SMTP_URL: smtp.url, TESSERA_SMTP_STARTTLS: 'off', ...options.env } });
    return { server, smtp };
  } catch (error) {
    await smtp.close();
    throw error;
  }
}

/**
 * An admin API access token with `scope`, as an operator's program gets one: a new
 * client_credentials client (the operator's, `tessera client add`), and openid-client's
 * client_credentials grant for the resource <issuer>/admin.
 */
export async function adminToken(
  server: Pick<TestServer, 'url' | 'config' | 'store'> & { readonly clock?: Clock },
  scope: string,
  name = `CI ${scope}`,
): Promise<{ token: string; clientId: string }> {
  const { client, secret } = await createClient(manageDeps(server), { client_name: name, grant_types: ['client_credentials'], scope });
  const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(secret!), { execute: [oidc.allowInsecureRequests] });
  const tokens = await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin` });
  return { token: tokens.access_token, clientId: client.id };
}

/**
 * An authorization code request as openid-client builds it for `config` with PKCE alone: to
 * REDIRECT_URI, for `openid` unless `params` names another scope, with a fresh verifier (S256)
 * and no state or nonce unless `params` gives them; `params` adds to or replaces any parameter.
 */
export async function pkceRequest(config: oidc.Configuration, params: Record<string, string> = {}): Promise<{ url: URL; verifier: string }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  });
  return { url, verifier };
}

/** The API docs/apis.md registers, and the suite's files with it. */
export const PHOTO_LIBRARY = 'https://api.example.com';

/**
 * Registers the Photo Library of docs/apis.md on `server` as its command does: `tessera
 * resource add` with its identifier (PHOTO_LIBRARY), its name and its scopes photos:read and
 * photos:write, then `args`; returns what the command printed (`--json`).
 */
export async function addPhotoLibrary(
  server: Pick<TestServer, 'config'>,
  args: readonly string[] = [],
): Promise<{ readonly identifier: string; readonly introspection_secret?: string }> {
  const added = await runTessera(
    [
      'resource',
      'add',
      '--identifier',
      PHOTO_LIBRARY,
      '--name',
      'Photo Library',
      '--scope',
      'photos:read=See your photos',
      '--scope',
      'photos:write=Upload and delete your photos',
      ...args,
      '--json',
    ],
    { TESSERA_DATABASE: server.config.database },
  );
  assert.equal(added.code, 0, added.stderr);
  return JSON.parse(added.stdout) as { identifier: string; introspection_secret?: string };
}

/** An authorization request the way an app starts one: its URL, and what the app keeps to finish it. */
export interface Attempt {
  readonly url: URL;
  readonly verifier: string;
  readonly challenge: string;
  readonly state: string;
  readonly nonce: string;
}

/**
 * An authorization code request as openid-client builds it for `config`: to REDIRECT_URI, with a
 * fresh PKCE verifier (S256), state and nonce, for `openid profile email` unless `params` names
 * another scope; `params` adds to or replaces any of its parameters.
 */
export async function authorizationAttempt(config: oidc.Configuration, params: Record<string, string> = {}): Promise<Attempt> {
  const verifier = oidc.randomPKCECodeVerifier();
  const challenge = await oidc.calculatePKCECodeChallenge(verifier);
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid profile email',
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...params,
  });
  return { url, verifier, challenge, state, nonce };
}

/**
 * The code in `callback` (the redirect back to the app, or a form post's request) redeemed as the app would, through
 * openid-client, which checks the attempt's state, its nonce in the ID token that must come
 * with the tokens, and sends its PKCE verifier (RFC 7636 §4.5).
 */
export function redeemAttempt(
  config: oidc.Configuration,
  attempt: Pick<Attempt, 'verifier' | 'state' | 'nonce'>,
  callback: string | URL | Request,
): Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> {
  return oidc.authorizationCodeGrant(config, typeof callback === 'string' ? new URL(callback) : callback, {
    pkceCodeVerifier: attempt.verifier,
    expectedState: attempt.state,
    expectedNonce: attempt.nonce,
    idTokenExpected: true,
  });
}

/**
 * The query of an authorization code request for `client` (PKCE S256, a verifier nobody keeps),
 * as a browser arrives with it at /oauth/authorize: for tests of the sign-in page itself.
 */
export async function signInQuery(client: TestClient, scope = 'openid'): Promise<URLSearchParams> {
  return new URLSearchParams({
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: REDIRECT_URI,
    scope,
    code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
    code_challenge_method: 'S256',
  });
}

/** RFC 7636 Appendix B's code_challenge: for requests whose code nobody redeems. */
const UNREDEEMED_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/**
 * The URL of an authorization code request at `issuer`'s /oauth/authorize as a browser arrives
 * with it, for tests of what the endpoint answers and shows rather than of the code:
 * `response_type=code`, scope `openid`, a PKCE challenge (S256) whose verifier nobody keeps,
 * and `params` (client_id, redirect_uri, …), which add to or replace any of these.
 */
export function authorizeUrl(issuer: string, params: Record<string, string>): URL {
  const url = new URL(`${issuer}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    scope: 'openid',
    code_challenge: UNREDEEMED_CHALLENGE,
    code_challenge_method: 'S256',
    ...params,
  }).toString();
  return url;
}

/**
 * Makes `upstream`, another Tessera, an OpenID provider of `downstream`, as
 * docs/identity-providers.md does: a first-party client at the upstream for the downstream's
 * callback (and those of `alsoFor`, other provider ids the same client serves), then
 * `tessera provider add oidc --id ID --name NAME …` at the downstream, with `args` after.
 */
export async function addUpstreamTessera(
  downstream: Pick<TestServer, 'url' | 'config'>,
  upstream: TestServer,
  provider: {
    readonly id: string;
    readonly name: string;
    readonly clientName?: string;
    readonly alsoFor?: readonly string[];
    readonly args?: readonly string[];
  },
): Promise<{ client: TestClient; stdout: string }> {
  const callback = (id: string) => `${downstream.url}/login/upstream/${id}/callback`;
  const client = await upstream.addClient({
    name: provider.clientName ?? 'Acme sign-in',
    redirectUris: [provider.id, ...(provider.alsoFor ?? [])].map(callback),
    firstParty: true,
  });
  const added = await runTessera(
    [
      'provider',
      'add',
      'oidc',
      '--id',
      provider.id,
      '--name',
      provider.name,
      '--issuer',
      upstream.url,
      '--client-id',
      client.clientId,
      '--client-secret-stdin',
      ...(provider.args ?? []),
    ],
    { TESSERA_DATABASE: downstream.config.database, TESSERA_ISSUER: downstream.url },
    `${client.clientSecret}\n`,
  );
  assert.equal(added.code, 0, added.stderr);
  return { client, stdout: added.stdout };
}

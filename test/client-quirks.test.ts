import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('--pkce optional: a confidential OpenID client may use nonce instead of PKCE (RFC 9700 §2.1.1)', () => {
  let server: TestServer, legacy: TestClient, strict: TestClient, user: TestUser;

  before(async () => {
    ({
      server,
      client: legacy,
      user,
    } = await startWithApp({
      client: { name: 'Intranet', pkce: 'optional', authMethod: 'client_secret_post', grantTypes: ['authorization_code'] },
      user: { username: 'ada' },
    }));
    strict = await server.addClient({ name: 'Printer', grantTypes: ['authorization_code'] });
  });
  after(() => server.close());

  function authorizeUrl(client: TestClient, params: Record<string, string>): string {
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({ response_type: 'code', client_id: client.clientId, redirect_uri: REDIRECT_URI, state: 's', ...params }).toString();
    return url.href;
  }

  /** The authorization endpoint's answer to a request refused before sign-in: the error sent back to the client. */
  async function refusal(url: string): Promise<URLSearchParams> {
    const page = await new FormBrowser(server.url).request(url);
    assert.equal(page.status, 303, page.html.slice(0, 300));
    const location = new URL(page.location!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
    return location.searchParams;
  }

  async function code(client: TestClient, params: Record<string, string>): Promise<string> {
    const page = await new FormBrowser(server.url).authorize(authorizeUrl(client, params), user);
    const issued = new URL(page.location!).searchParams.get('code');
    assert.ok(issued, page.location ?? page.html);
    return issued;
  }

  function redeem(client: TestClient, issued: string, extra: Record<string, string> = {}) {
    return postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'authorization_code', code: issued, redirect_uri: REDIRECT_URI, ...extra },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
  }

  it('issues a code without PKCE for an OpenID request with a nonce, and an ID token carrying that nonce', async () => {
    const issued = await code(legacy, { scope: 'openid profile', nonce: 'n-0S6_WzA2Mj' });
    const result = await redeem(legacy, issued);
    assert.equal(result.status, 200, JSON.stringify(result.body));
    const claims = JSON.parse(Buffer.from(String(result.body['id_token']).split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    assert.equal(claims['nonce'], 'n-0S6_WzA2Mj');
  });

  it('still takes PKCE from such a client', async () => {
    const verifier = oidc.randomPKCECodeVerifier();
    const issued = await code(legacy, {
      scope: 'openid',
      nonce: 'n',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    assert.equal((await redeem(legacy, issued, { code_verifier: verifier })).status, 200);
  });

  it('refuses a request without PKCE that has no nonce, or is not an OpenID request', async () => {
    const cases: Record<string, string>[] = [
      { scope: 'openid profile' },
      { scope: 'profile', nonce: 'n' },
      { scope: 'openid', nonce: 'n', code_challenge_method: 'S256' },
    ];
    for (const params of cases) {
      const error = await refusal(authorizeUrl(legacy, params));
      assert.equal(error.get('error'), 'invalid_request', JSON.stringify(params));
      assert.equal(error.get('state'), 's');
    }
  });

  it('refuses a request without PKCE from a client that has PKCE required, nonce or not', async () => {
    const error = await refusal(authorizeUrl(strict, { scope: 'openid', nonce: 'n' }));
    assert.equal(error.get('error'), 'invalid_request');
    assert.match(error.get('error_description') ?? '', /code_challenge is required/);
  });

  it('refuses a code_verifier for a code issued without a challenge, and a missing one for a code issued with one', async () => {
    const withoutChallenge = await code(legacy, { scope: 'openid', nonce: 'n' });
    const sent = await redeem(legacy, withoutChallenge, { code_verifier: oidc.randomPKCECodeVerifier() });
    assert.deepEqual([sent.status, sent.body['error']], [400, 'invalid_grant']);
    assert.match(String(sent.body['error_description']), /had no code_challenge/);
    assert.equal((await redeem(legacy, withoutChallenge)).status, 200, 'the refused attempt left the code unused');

    const verifier = oidc.randomPKCECodeVerifier();
    const withChallenge = await code(legacy, {
      scope: 'openid',
      nonce: 'n',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    const missing = await redeem(legacy, withChallenge);
    assert.deepEqual([missing.status, missing.body['error']], [400, 'invalid_grant']);
    assert.match(String(missing.body['error_description']), /code_verifier is required/);
    assert.equal((await redeem(legacy, withChallenge, { code_verifier: verifier })).status, 200);
  });

  it('still requires a code_verifier from a client that has PKCE required', async () => {
    const verifier = oidc.randomPKCECodeVerifier();
    const issued = await code(strict, { scope: 'openid', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const missing = await redeem(strict, issued);
    assert.deepEqual([missing.status, missing.body['error']], [400, 'invalid_request']);
  });
});

describe('http://localhost redirect URIs for public native clients (RFC 8252 §7.3, §8.3)', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer();
    user = await server.addUser({ username: 'ada' });
  });
  after(() => server.close());

  it('signs in through openid-client on whatever port the app opened, and refuses another host or path', async () => {
    const registered = await runTessera(
      ['client', 'add', '--name', 'oidc-agent', '--public', '--redirect-uri', 'http://localhost/callback', '--grant', 'authorization_code', '--json'],
      { TESSERA_DATABASE: server.config.database },
    );
    assert.equal(registered.code, 0, registered.stderr);
    const clientId = (JSON.parse(registered.stdout) as { client_id: string }).client_id;
    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const challenge = await oidc.calculatePKCECodeChallenge(verifier);
    const redirectUri = 'http://localhost:43117/callback';
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' });
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    assert.ok(page.location?.startsWith(`${redirectUri}?code=`), page.location ?? '');
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.location!), { pkceCodeVerifier: verifier, idTokenExpected: true });
    assert.equal(tokens.claims()?.sub, user.id);

    for (const other of [
      'http://127.0.0.1:43117/callback',
      'http://localhost.example:43117/callback',
      'http://localhost:43117/other',
      'https://localhost:43117/callback',
    ]) {
      const refused = await new FormBrowser(server.url).request(
        oidc.buildAuthorizationUrl(config, { redirect_uri: other, scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256' }).href,
      );
      assert.deepEqual([refused.status, refused.location], [400, null], other);
    }
  });
});

describe('--pkce optional-without-nonce: a certification client may send neither PKCE nor nonce (OIDC Core §3.1.2.1), never by default', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let user: TestUser;

  before(async () => {
    server = await startTestServer();
    env = { TESSERA_DATABASE: server.config.database };
    user = await server.addUser({ username: 'ada' });
  });
  after(() => server.close());

  async function register(...args: string[]): Promise<{ client_id: string; client_secret: string; pkce: string }> {
    const result = await runTessera(['client', 'add', '--name', 'Conformance Suite', '--redirect-uri', REDIRECT_URI, '--json', ...args], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as { client_id: string; client_secret: string; pkce: string };
  }

  async function configFor(client: { client_id: string; client_secret: string }) {
    return oidc.discovery(new URL(server.url), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
  }

  it('completes an OpenID sign-in with neither code_challenge nor nonce through openid-client, and a plain OAuth one', async () => {
    const client = await register('--pkce', 'optional-without-nonce');
    assert.equal(client.pkce, 'optional-without-nonce');
    const config = await configFor(client);
    for (const scope of ['openid profile', 'profile']) {
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope, state });
      const page = await new FormBrowser(server.url).authorize(url.href, user);
      assert.ok(page.location?.startsWith(`${REDIRECT_URI}?code=`), page.location ?? page.html);
      const tokens = await oidc.authorizationCodeGrant(config, new URL(page.location!), { expectedState: state });
      assert.equal(tokens.scope, scope);
      if (scope.startsWith('openid')) {
        assert.equal(tokens.claims()?.sub, user.id);
        assert.equal(tokens.claims()?.nonce, undefined);
      }
    }
  });

  it('refuses the same request from a default client and from a --pkce optional one, at the redirect URI', async () => {
    for (const args of [[], ['--pkce', 'optional']]) {
      const config = await configFor(await register(...args));
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid', state: 's' });
      const response = await fetch(url, { redirect: 'manual' });
      assert.equal(response.status, 303);
      const location = new URL(response.headers.get('location')!);
      assert.equal(location.searchParams.get('error'), 'invalid_request', args.join(' '));
      assert.equal(location.searchParams.get('state'), 's');
    }
  });

  it('is for confidential clients only', async () => {
    const refused = await runTessera(
      ['client', 'add', '--name', 'SPA', '--public', '--redirect-uri', 'https://spa.example/cb', '--pkce', 'optional-without-nonce'],
      env,
    );
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--pkce optional-without-nonce is for confidential clients only/);
  });
});

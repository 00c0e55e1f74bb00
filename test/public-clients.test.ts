import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { BrowserAt, pollWhileTestRuns, QUICK_POLLS } from './helpers/device.ts';
import { basic, postForm, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt, startWithApp } from './helpers/fixtures.ts';

describe('public clients: native apps and command-line tools without a secret', () => {
  let server: TestServer, native: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({
      server,
      client: native,
      user,
      config,
    } = await startWithApp({
      server: { env: QUICK_POLLS },
      client: { name: 'Desktop Notes', public: true, redirectUris: ['http://127.0.0.1/callback', 'com.example.notes:/oauth2redirect'] },
    }));
  });
  after(() => server.close());

  async function signIn(redirectUri: string) {
    const attempt = await authorizationAttempt(config, { redirect_uri: redirectUri, scope: 'openid profile' });
    const page = await new FormBrowser(server.url).authorize(attempt.url.href, user);
    assert.equal(page.status, 303, page.html);
    return { ...attempt, location: page.location! };
  }

  it('completes the code flow with PKCE and a loopback redirect on any port (RFC 8252 §7.3)', async () => {
    const port = 49152 + Math.floor(Math.random() * 16000);
    const redirectUri = `http://127.0.0.1:${port}/callback`;
    const attempt = await signIn(redirectUri);
    assert.ok(attempt.location.startsWith(`${redirectUri}?`), attempt.location);
    const tokens = await redeemAttempt(config, attempt, attempt.location);
    assert.equal(tokens.claims()?.sub, user.id);
    assert.equal(tokens.claims()?.aud, native.clientId);
  });

  it('redirects to a private-use URI scheme (RFC 8252 §7.1)', async () => {
    const { location } = await signIn('com.example.notes:/oauth2redirect');
    assert.match(location, /^com\.example\.notes:\/oauth2redirect\?code=/);
  });

  it('completes the device flow as a public client through openid-client (RFC 8628 §5.7)', async (t) => {
    const tv = await server.addClient({ name: 'Living Room TV', public: true, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const tvConfig = await oidc.discovery(new URL(server.url), tv.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const device = await oidc.initiateDeviceAuthorization(tvConfig, { scope: 'openid profile' });
    const polling = pollWhileTestRuns(t, tvConfig, device);
    await new BrowserAt(server.url).decide(device.user_code, user, 'approve');
    const tokens = await polling;
    assert.equal(tokens.claims()?.sub, user.id);
    assert.equal(tokens.claims()?.aud, tv.clientId);
  });

  it('refuses a confidential client that asks for device codes with only its client_id', async () => {
    const confidential = await server.addClient({ grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const result = await postForm(`${server.url}/oauth/device/authorization`, { client_id: confidential.clientId, scope: 'openid' });
    assert.equal(result.status, 401);
    assert.equal(result.body['error'], 'invalid_client');
  });

  it('refuses a public client that presents a secret, in the header or the body', async () => {
    const form = { grant_type: 'authorization_code', code: 'x', redirect_uri: 'http://127.0.0.1/callback', code_verifier: 'a'.repeat(43) };
    const withHeader = await postForm(`${server.url}/oauth/token`, form, { authorization: basic(native.clientId, 'guessed') });
    assert.equal(withHeader.status, 401);
    assert.equal(withHeader.body['error'], 'invalid_client');
    const inBody = await postForm(`${server.url}/oauth/token`, { ...form, client_id: native.clientId, client_secret: 'guessed' });
    assert.equal(inBody.status, 401);
    assert.equal(inBody.body['error'], 'invalid_client');
  });

  it('refuses an unknown client_id without a secret with invalid_client', async () => {
    const result = await postForm(`${server.url}/oauth/token`, { grant_type: 'authorization_code', client_id: 'nobody', code: 'x' });
    assert.equal(result.status, 401);
    assert.equal(result.body['error'], 'invalid_client');
  });

  it('still requires PKCE from a public client', async () => {
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: native.clientId,
      redirect_uri: 'http://127.0.0.1/callback',
      scope: 'openid',
      state: 's',
    });
    const response = await fetch(`${server.url}/oauth/authorize?${query}`, { redirect: 'manual' });
    assert.equal(response.status, 303);
    assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'invalid_request');
  });

  it('does not let a code issued to a public client be redeemed without its verifier', async () => {
    const { location } = await signIn('http://127.0.0.1/callback');
    const code = new URL(location).searchParams.get('code')!;
    const result = await postForm(`${server.url}/oauth/token`, {
      grant_type: 'authorization_code',
      client_id: native.clientId,
      code,
      redirect_uri: 'http://127.0.0.1/callback',
      code_verifier: oidc.randomPKCECodeVerifier(),
    });
    assert.equal(result.status, 400);
    assert.equal(result.body['error'], 'invalid_grant');
  });

  it('never redirects to http://localhost or another loopback path', async () => {
    for (const redirectUri of ['http://localhost:8000/callback', 'http://127.0.0.1:8000/other']) {
      const query = new URLSearchParams({
        response_type: 'code',
        client_id: native.clientId,
        redirect_uri: redirectUri,
        scope: 'openid',
        code_challenge: 'x'.repeat(43),
        code_challenge_method: 'S256',
      });
      const response = await fetch(`${server.url}/oauth/authorize?${query}`, { redirect: 'manual' });
      assert.equal(response.status, 400, redirectUri);
      assert.equal(response.headers.get('location'), null);
    }
  });
});

describe('shorter token lifetimes for public clients', () => {
  it('gives a public client the public access-token lifetime and a confidential one the usual', async () => {
    const server = await startTestServer({ env: { TESSERA_PUBLIC_ACCESS_TOKEN_TTL: '300' } });
    try {
      const user = await server.addUser();
      const lifetimeFor = async (client: TestClient, authentication: oidc.ClientAuth) => {
        const config = await oidc.discovery(new URL(server.url), client.clientId, undefined, authentication, { execute: [oidc.allowInsecureRequests] });
        const attempt = await authorizationAttempt(config, { redirect_uri: 'http://127.0.0.1/callback', scope: 'openid' });
        const page = await new FormBrowser(server.url).authorize(attempt.url.href, user);
        const tokens = await redeemAttempt(config, attempt, page.location!);
        return tokens.expires_in;
      };
      const publicClient = await server.addClient({ public: true, redirectUris: ['http://127.0.0.1/callback'] });
      const confidential = await server.addClient({ redirectUris: ['http://127.0.0.1/callback'] });
      assert.equal(await lifetimeFor(publicClient, oidc.None()), 300);
      assert.equal(await lifetimeFor(confidential, oidc.ClientSecretBasic(confidential.clientSecret)), 3600);
    } finally {
      await server.close();
    }
  });
});

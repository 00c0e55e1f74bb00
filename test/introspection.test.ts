import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { FormBrowser } from './helpers/browser.ts';
import { OFFLINE_SCOPES, refreshRaw, signIn, signInRaw, withRefresh } from './helpers/lifecycle.ts';
import { basic, postForm, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('token introspection (RFC 7662) through openid-client', () => {
  let server: TestServer, client: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada' },
    }));
  });
  after(() => server.close());

  it('describes a live access token with the standard fields', async () => {
    const tokens = await signIn(server, config, user, 'openid profile offline_access');
    const claims = decodeJwt(tokens.access_token);
    const result = await oidc.tokenIntrospection(config, tokens.access_token);
    assert.equal(result.active, true);
    assert.equal(result.scope, 'openid profile offline_access');
    assert.equal(result.client_id, client.clientId);
    assert.equal(result.sub, user.id);
    assert.equal(result.exp, claims.exp);
    assert.equal(result.iat, claims.iat);
    assert.equal(result.token_type, 'Bearer');
    assert.equal(result.iss, server.url);
  });

  it('reports an ID token as inactive: it is not an access token', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    assert.equal(tokens.claims()?.sub, user.id, 'a valid ID token');
    assert.deepEqual(await oidc.tokenIntrospection(config, tokens.id_token!), { active: false });
    assert.deepEqual(await oidc.tokenIntrospection(config, tokens.id_token!, { token_type_hint: 'access_token' }), { active: false });
  });

  it('describes a live refresh token', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    const result = await oidc.tokenIntrospection(config, tokens.refresh_token!, { token_type_hint: 'refresh_token' });
    assert.equal(result.active, true);
    assert.equal(result.token_type, 'refresh_token');
    assert.equal(result.scope, 'openid offline_access');
    assert.equal(result.client_id, client.clientId);
    assert.equal(result.sub, user.id);
    assert.ok((result.exp ?? 0) > (result.iat ?? Infinity));
  });

  /** The answer for a token that is not active: `active: false` and nothing more. */
  async function assertInactive(token: string, as: TestClient = client) {
    const result = await postForm(`${server.url}/oauth/introspect`, { token }, { authorization: basic(as.clientId, as.clientSecret) });
    assert.equal(result.status, 200);
    assert.deepEqual(result.body, { active: false });
    assert.equal(result.headers.get('cache-control'), 'no-store');
  }

  it('reports an access token revoked by its jti as inactive', async () => {
    const tokens = await signIn(server, config, user, 'openid');
    await oidc.tokenRevocation(config, tokens.access_token);
    await assertInactive(tokens.access_token);
  });

  it('reports the tokens of a grant revoked by the user as inactive', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    // The user presses Revoke on the account page.
    const browser = new FormBrowser(server.url);
    const account = await browser.signIn(await browser.follow(await browser.request('/account')), user);
    const revoked = await browser.follow(await browser.submit(account, '/account/revoke', { grant_id: decodeJwt(tokens.access_token)['gid'] as string }));
    assert.match(revoked.html, /Access revoked/);
    await assertInactive(tokens.access_token);
    await assertInactive(tokens.refresh_token!);
  });

  it('reports a rotated refresh token as inactive, without treating the question as reuse', async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    await assertInactive(first.refresh_token!);
    assert.equal((await oidc.tokenIntrospection(config, second.refresh_token!)).active, true);
  });

  it('reports unknown and malformed tokens, and a token signed by another key under our kid, as inactive', async () => {
    const live = await signIn(server, config, user, 'openid');
    const { privateKey } = await generateKeyPair('RS256');
    const { kid } = await server.keys.signingKey('RS256');
    const forged = await new SignJWT({ client_id: client.clientId, scope: 'openid', gid: decodeJwt(live.access_token)['gid'] as string })
      .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid })
      .setIssuer(server.url)
      .setAudience(server.url)
      .setSubject(user.id)
      .setIssuedAt()
      .setExpirationTime('1h')
      .setJti('forged')
      .sign(privateKey);
    for (const token of ['x'.repeat(43), 'not a token', 'a.b.c', forged]) await assertInactive(token);
  });

  it('accepts an access token signed with our published ES256 key as well as RS256', async () => {
    const live = decodeJwt((await signIn(server, config, user, 'openid')).access_token);
    const key = await server.keys.signingKey('ES256');
    const token = await new SignJWT({ client_id: client.clientId, scope: 'openid', gid: live['gid'] as string })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid })
      .setIssuer(server.url)
      .setAudience(server.url)
      .setSubject(user.id)
      .setIssuedAt()
      .setExpirationTime('1h')
      .setJti('es256-token')
      .sign(key.key);
    const result = await oidc.tokenIntrospection(config, token);
    assert.equal(result.active, true);
    assert.equal(result.jti, 'es256-token');
  });

  it("reports another client's tokens as inactive to it", async () => {
    const other = await server.addClient({ scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await assertInactive(tokens.access_token, other);
    await assertInactive(tokens.refresh_token!, other);
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, true, 'still active to its own client');
  });

  it('reports the tokens of a disabled user as inactive', async () => {
    const bob = await server.addUser({ username: 'bob' });
    const tokens = await signIn(server, config, bob, 'openid offline_access');
    await server.store.users.setDisabled(bob.id, true);
    await assertInactive(tokens.access_token);
    await assertInactive(tokens.refresh_token!);
  });

  it('refuses a request without a token with invalid_request, and one without client authentication with invalid_client', async () => {
    const missing = await postForm(`${server.url}/oauth/introspect`, {}, { authorization: basic(client.clientId, client.clientSecret) });
    assert.deepEqual([missing.status, missing.body['error']], [400, 'invalid_request']);
    const anonymous = await postForm(`${server.url}/oauth/introspect`, { token: 'x' });
    assert.deepEqual([anonymous.status, anonymous.body['error']], [401, 'invalid_client']);
  });
});

describe('token introspection as time passes', () => {
  let server: TestServer, client: TestClient, user: TestUser;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  before(async () => {
    ({ server, client, user } = await startWithApp({
      server: { clock, env: { TESSERA_REFRESH_TOKEN_IDLE_TTL: String(86400) } },
      client: { scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada' },
    }));
  });
  after(() => server.close());

  const introspect = (token: string) => postForm(`${server.url}/oauth/introspect`, { token }, { authorization: basic(client.clientId, client.clientSecret) });

  it('reports an access token as inactive from its expiry on', async () => {
    const tokens = await signInRaw(server, client, user, 'openid');
    const accessToken = tokens['access_token'] as string;
    clock.advance(3600_000 - 1000);
    assert.equal((await introspect(accessToken)).body['active'], true);
    clock.advance(1000);
    assert.deepEqual((await introspect(accessToken)).body, { active: false });
  });

  it('reports a refresh token as inactive once the idle time has passed', async () => {
    const tokens = await signInRaw(server, client, user, 'openid offline_access');
    const refreshToken = tokens['refresh_token'] as string;
    clock.advance(86400_000 - 1000);
    assert.equal((await introspect(refreshToken)).body['active'], true);
    clock.advance(1000);
    assert.deepEqual((await introspect(refreshToken)).body, { active: false });
    assert.equal((await refreshRaw(server, client, refreshToken)).body['error'], 'invalid_grant');
  });
});

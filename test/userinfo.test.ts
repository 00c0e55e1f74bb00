import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { OFFLINE_SCOPES, signIn, withRefresh } from './helpers/lifecycle.ts';
import type { TestServer, TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('the UserInfo endpoint (OIDC Core §5.3) through openid-client', () => {
  let server: TestServer, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, user, config } = await startWithApp({
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' },
    }));
  });
  after(() => server.close());

  const userinfo = (token: string | null, init: RequestInit = {}) =>
    fetch(`${server.url}/oauth/userinfo`, {
      ...init,
      headers: { ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...(init.headers as Record<string, string>) },
    });

  it('returns sub and the profile claims as stored on the user for openid profile', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    const { updated_at: updatedAt, ...claims } = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    assert.deepEqual(claims, { sub: user.id, preferred_username: 'ada', name: 'Ada Lovelace' });
    assert.equal(typeof updatedAt, 'number');
  });

  it('returns only sub for openid alone, and adds email for the email scope', async () => {
    const bare = await signIn(server, config, user, 'openid');
    assert.deepEqual(await oidc.fetchUserInfo(config, bare.access_token, user.id), { sub: user.id });
    const withEmail = await signIn(server, config, user, 'openid email');
    assert.deepEqual(await oidc.fetchUserInfo(config, withEmail.access_token, user.id), { sub: user.id, email: 'ada@example.com', email_verified: false });
  });

  it('answers POST as GET', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    const response = await userinfo(tokens.access_token, { method: 'POST' });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.equal(((await response.json()) as Record<string, unknown>)['sub'], user.id);
  });

  it('refuses a revoked access token with 401 and WWW-Authenticate: Bearer error="invalid_token"', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    const response = await userinfo(tokens.access_token);
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera", error="invalid_token"/);
    assert.equal(((await response.json()) as Record<string, unknown>)['error'], 'invalid_token');
    await assert.rejects(
      oidc.fetchUserInfo(config, tokens.access_token, user.id),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.cause[0]?.parameters.error === 'invalid_token',
    );
  });

  it('refuses an ID token presented as an access token with invalid_token (it is for the client, not for resource servers)', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    const idToken = tokens.id_token!;
    assert.equal(tokens.claims()?.sub, user.id, 'a valid ID token');
    const response = await userinfo(idToken);
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera", error="invalid_token"/);
    await assert.rejects(
      oidc.fetchUserInfo(config, idToken, user.id),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.cause[0]?.parameters.error === 'invalid_token',
    );
  });

  it('refuses a malformed or foreign token with invalid_token', async () => {
    for (const token of ['not-a-jwt', 'a.b.c', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.']) {
      const response = await userinfo(token);
      assert.equal(response.status, 401, token);
      assert.match(response.headers.get('www-authenticate') ?? '', /error="invalid_token"/, token);
    }
    const spaced = await userinfo(null, { headers: { authorization: 'Bearer two words' } });
    assert.equal(spaced.status, 401);
    assert.match(spaced.headers.get('www-authenticate') ?? '', /error="invalid_token"/);
  });

  it('answers a request without a token with 401 and bare Bearer and DPoP challenges', async () => {
    for (const headers of [{}, { authorization: 'Basic YTpi' }]) {
      const response = await userinfo(null, { headers });
      assert.equal(response.status, 401);
      assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera", DPoP algs="ES256 [^"]*"$/);
    }
  });

  it('refuses a token without the openid scope with 403 insufficient_scope', async () => {
    const tokens = await signIn(server, config, user, 'profile');
    const response = await userinfo(tokens.access_token);
    assert.equal(response.status, 403);
    assert.match(response.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
  });

  it('takes the access token in a POST form body (RFC 6750 §2.2) and answers as with the header', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    const response = await userinfo(null, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.access_token }),
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.deepEqual(await response.json(), await oidc.fetchUserInfo(config, tokens.access_token, user.id));
  });

  it('refuses a revoked access token sent in a POST body with 401 invalid_token (RFC 6750 §3.1)', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    const response = await userinfo(null, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ access_token: tokens.access_token }),
    });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera", error="invalid_token"/);
  });

  it('refuses an access token in the query (RFC 6750 §2.3 is not offered), or sent two ways at once (§3.1), with invalid_request', async () => {
    const tokens = await signIn(server, config, user, 'openid');
    const query = await fetch(`${server.url}/oauth/userinfo?access_token=${tokens.access_token}`);
    assert.equal(query.status, 400);
    assert.equal(((await query.json()) as Record<string, unknown>)['error'], 'invalid_request');
    const postQuery = await fetch(`${server.url}/oauth/userinfo?access_token=${tokens.access_token}`, { method: 'POST' });
    assert.equal(postQuery.status, 400);
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const both = await userinfo(tokens.access_token, { method: 'POST', headers: form, body: `access_token=${tokens.access_token}` });
    assert.equal(both.status, 400);
    assert.equal(((await both.json()) as Record<string, unknown>)['error'], 'invalid_request');
    const twice = await userinfo(null, { method: 'POST', headers: form, body: `access_token=${tokens.access_token}&access_token=${tokens.access_token}` });
    assert.equal(twice.status, 400);
    const dpopAndBody = await fetch(`${server.url}/oauth/userinfo`, {
      method: 'POST',
      headers: { ...form, authorization: `DPoP ${tokens.access_token}` },
      body: `access_token=${tokens.access_token}`,
    });
    assert.equal(dpopAndBody.status, 400);
  });

  it('does not read a token from a JSON body (RFC 6750 §2.2: form-encoded only)', async () => {
    const tokens = await signIn(server, config, user, 'openid');
    const response = await userinfo(null, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ access_token: tokens.access_token }),
    });
    assert.notEqual(response.status, 200);
    assert.ok(response.status === 400 || response.status === 415, String(response.status));
  });
});

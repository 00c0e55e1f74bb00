import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { discover, OFFLINE_SCOPES, refreshRaw, signIn, withRefresh } from './helpers/lifecycle.ts';
import { basic, postForm, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('token revocation (RFC 7009) through openid-client', () => {
  let server: TestServer, client: TestClient, other: TestClient, user: TestUser, config: oidc.Configuration, otherConfig: oidc.Configuration;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada' },
    }));
    other = await server.addClient({ name: 'Other App', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
    otherConfig = await discover(server, other);
  });
  after(() => server.close());

  it('revokes a refresh token: it cannot refresh, and the access tokens of its grant are inactive', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: 'refresh_token' });
    const refreshed = await refreshRaw(server, client, tokens.refresh_token!);
    assert.deepEqual([refreshed.status, refreshed.body['error']], [400, 'invalid_grant']);
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, false);
  });

  it('revokes an access token by its jti: it is inactive and refused by userinfo, and the refresh token still works', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.access_token);
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, false);
    await assert.rejects(oidc.fetchUserInfo(config, tokens.access_token, user.id), (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal((await oidc.tokenIntrospection(config, refreshed.access_token)).active, true);
  });

  it('ignores the token type hint: a refresh token sent as access_token is revoked all the same', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!, { token_type_hint: 'access_token' });
    assert.equal((await refreshRaw(server, client, tokens.refresh_token!)).status, 400);
  });

  it("answers 200 to another client's tokens and revokes nothing", async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(otherConfig, tokens.refresh_token!);
    await oidc.tokenRevocation(otherConfig, tokens.access_token);
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, true);
    assert.equal((await refreshRaw(server, client, tokens.refresh_token!)).status, 200);
  });

  it('answers 200 with {} to an unknown, malformed or already revoked token', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    for (const token of [tokens.refresh_token!, 'x'.repeat(43), 'not a token', 'a.b.c', 'é']) {
      const result = await postForm(`${server.url}/oauth/revoke`, { token }, { authorization: basic(client.clientId, client.clientSecret) });
      assert.equal(result.status, 200, token);
      assert.deepEqual(result.body, {}, token);
      assert.match(result.headers.get('content-type') ?? '', /^application\/json/);
    }
  });

  it('refuses a request without a token with invalid_request, and one without client authentication with invalid_client', async () => {
    const missing = await postForm(
      `${server.url}/oauth/revoke`,
      { token_type_hint: 'refresh_token' },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.deepEqual([missing.status, missing.body['error']], [400, 'invalid_request']);
    const anonymous = await postForm(`${server.url}/oauth/revoke`, { token: 'x'.repeat(43) });
    assert.deepEqual([anonymous.status, anonymous.body['error']], [401, 'invalid_client']);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Basic /);
    const repeated = await postForm(`${server.url}/oauth/revoke`, 'token=a&token=b', { authorization: basic(client.clientId, client.clientSecret) });
    assert.deepEqual([repeated.status, repeated.body['error']], [400, 'invalid_request']);
  });
});

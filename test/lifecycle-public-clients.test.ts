import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { OFFLINE_SCOPES, signIn, withRefresh } from './helpers/lifecycle.ts';
import { postForm, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('the token lifecycle for a public client (a native app without a secret)', () => {
  let server: TestServer, app: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({
      server,
      client: app,
      user,
      config,
    } = await startWithApp({ client: { name: 'Desktop Notes', public: true, scopes: OFFLINE_SCOPES, grantTypes: withRefresh() }, user: { username: 'ada' } }));
  });
  after(() => server.close());

  it('refreshes with rotation, identified by client_id alone (RFC 9700 §4.14.2: rotation guards public clients)', async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    assert.ok(second.refresh_token);
    const invalidGrant = (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant';
    await assert.rejects(oidc.refreshTokenGrant(config, first.refresh_token!), invalidGrant);
    // The reuse revoked the grant: the newest refresh token is refused too.
    await assert.rejects(oidc.refreshTokenGrant(config, second.refresh_token!), invalidGrant);
  });

  it('revokes its own refresh token by client_id, after which it cannot refresh', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    await oidc.tokenRevocation(config, tokens.refresh_token!);
    await assert.rejects(
      oidc.refreshTokenGrant(config, tokens.refresh_token!),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  it('may not introspect: invalid_client, since a client_id proves nothing', async () => {
    const tokens = await signIn(server, config, user, 'openid offline_access');
    const result = await postForm(`${server.url}/oauth/introspect`, { token: tokens.access_token, client_id: app.clientId });
    assert.deepEqual([result.status, result.body['error']], [401, 'invalid_client']);
  });
});

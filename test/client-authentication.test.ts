import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, type GrantType } from '../src/core/protocol.ts';
import { OFFLINE_SCOPES, signIn } from './helpers/lifecycle.ts';
import { basic, postForm, type TestClient, type TestServer, type TestUser, assertOAuthError } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

const GRANTS: GrantType[] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN];
const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

type Result = Awaited<ReturnType<typeof postForm>>;

describe('client authentication: client_secret_basic, client_secret_post and public clients at every endpoint', () => {
  let server: TestServer, basicClient: TestClient, postClient: TestClient, publicClient: TestClient, user: TestUser;
  /** Each endpoint with a form that passes once the client is authenticated, and how it answers then. */
  let endpoints: { name: string; url: string; form: Record<string, string>; ok: (result: Result) => void }[];

  before(async () => {
    ({
      server,
      client: basicClient,
      user,
    } = await startWithApp({ client: { name: 'Basic App', scopes: OFFLINE_SCOPES, grantTypes: GRANTS }, user: { username: 'ada' } }));
    postClient = await server.addClient({ name: 'Post App', scopes: OFFLINE_SCOPES, grantTypes: GRANTS, authMethod: 'client_secret_post' });
    publicClient = await server.addClient({ name: 'CLI', public: true, scopes: OFFLINE_SCOPES, grantTypes: GRANTS });
    endpoints = [
      // An unknown code gets invalid_grant: the client got past authentication.
      {
        name: 'token',
        url: `${server.url}/oauth/token`,
        form: { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) },
        ok: (result) => assertOAuthError(result, 400, 'invalid_grant'),
      },
      {
        name: 'device authorization',
        url: `${server.url}/oauth/device/authorization`,
        form: { scope: 'openid' },
        ok: (result) => {
          assert.equal(result.status, 200, JSON.stringify(result.body));
          assert.equal(typeof result.body['device_code'], 'string');
        },
      },
      {
        name: 'revocation',
        url: `${server.url}/oauth/revoke`,
        form: { token: 'x'.repeat(43) },
        ok: (result) => assert.deepEqual([result.status, result.body], [200, {}]),
      },
      {
        name: 'introspection',
        url: `${server.url}/oauth/introspect`,
        form: { token: 'x'.repeat(43) },
        ok: (result) => assert.deepEqual([result.status, result.body], [200, { active: false }]),
      },
    ];
  });
  after(() => server.close());

  it("openid-client's default discovery(url, id, secret) signs in, refreshes, introspects and revokes with client_secret_post", async () => {
    // With a secret and no method, openid-client 6 uses client_secret_post.
    const config = await oidc.discovery(new URL(server.url), basicClient.clientId, basicClient.clientSecret, undefined, {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await signIn(server, config, user, 'openid offline_access');
    assert.equal(tokens.claims()?.sub, user.id);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal((await oidc.tokenIntrospection(config, refreshed.access_token)).active, true);
    await oidc.tokenRevocation(config, refreshed.refresh_token!);
    await assert.rejects(
      oidc.refreshTokenGrant(config, refreshed.refresh_token!),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  it('openid-client with ClientSecretPost and ClientSecretBasic works for a client registered with either method', async () => {
    for (const client of [basicClient, postClient]) {
      for (const method of [oidc.ClientSecretPost(client.clientSecret), oidc.ClientSecretBasic(client.clientSecret)]) {
        const config = await oidc.discovery(new URL(server.url), client.clientId, undefined, method, { execute: [oidc.allowInsecureRequests] });
        const tokens = await signIn(server, config, user, 'openid');
        assert.equal(tokens.claims()?.aud, client.clientId);
      }
    }
  });

  it('takes the secret in the form body at the token, device authorization, revocation and introspection endpoints', async () => {
    for (const endpoint of endpoints) {
      for (const client of [basicClient, postClient]) {
        endpoint.ok(await postForm(endpoint.url, { ...endpoint.form, client_id: client.clientId, client_secret: client.clientSecret }));
        endpoint.ok(await postForm(endpoint.url, endpoint.form, { authorization: basic(client.clientId, client.clientSecret) }));
        assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, client_id: client.clientId, client_secret: 'wrong' }), 401, 'invalid_client');
      }
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, client_secret: basicClient.clientSecret }), 401, 'invalid_client');
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, client_id: 'nobody', client_secret: 'x' }), 401, 'invalid_client');
    }
  });

  it('answers two authentication methods in one request with invalid_request at every endpoint', async () => {
    for (const endpoint of endpoints) {
      const header = { authorization: basic(basicClient.clientId, basicClient.clientSecret) };
      const secret = { client_id: basicClient.clientId, client_secret: basicClient.clientSecret };
      const assertion = { client_assertion_type: ASSERTION_TYPE, client_assertion: 'eyJhbGciOiJFUzI1NiJ9.e30.sig' };
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, ...secret }, header), 400, 'invalid_request');
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, ...secret, ...assertion }), 400, 'invalid_request');
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, ...assertion }, header), 400, 'invalid_request');
    }
  });

  it('treats HTTP Basic with a public client id and an empty password as client_id in the body', async () => {
    for (const endpoint of endpoints.filter(({ name }) => name !== 'introspection')) {
      endpoint.ok(await postForm(endpoint.url, endpoint.form, { authorization: basic(publicClient.clientId, '') }));
      endpoint.ok(await postForm(endpoint.url, { ...endpoint.form, client_id: publicClient.clientId }));
      // An empty client_secret in the body is the same: a parameter without a value is omitted.
      endpoint.ok(await postForm(endpoint.url, { ...endpoint.form, client_id: publicClient.clientId, client_secret: '' }));
      assertOAuthError(
        await postForm(endpoint.url, { ...endpoint.form, client_id: basicClient.clientId }, { authorization: basic(publicClient.clientId, '') }),
        401,
        'invalid_client',
      );
    }
    const introspection = endpoints.find(({ name }) => name === 'introspection')!;
    assertOAuthError(await postForm(introspection.url, introspection.form, { authorization: basic(publicClient.clientId, '') }), 401, 'invalid_client');
  });

  it('refuses an empty password from a confidential client, and any secret from a public one', async () => {
    for (const endpoint of endpoints) {
      assertOAuthError(await postForm(endpoint.url, endpoint.form, { authorization: basic(basicClient.clientId, '') }), 401, 'invalid_client');
      assertOAuthError(await postForm(endpoint.url, endpoint.form, { authorization: basic(publicClient.clientId, 'guess') }), 401, 'invalid_client');
      assertOAuthError(await postForm(endpoint.url, { ...endpoint.form, client_id: publicClient.clientId, client_secret: 'guess' }), 401, 'invalid_client');
    }
  });

  it('refuses half an assertion with invalid_request and an unknown assertion type with invalid_client', async () => {
    const token = endpoints[0]!;
    assertOAuthError(await postForm(token.url, { ...token.form, client_assertion_type: ASSERTION_TYPE }), 400, 'invalid_request');
    assertOAuthError(await postForm(token.url, { ...token.form, client_assertion: 'a.b.c' }), 400, 'invalid_request');
    assertOAuthError(await postForm(token.url, { ...token.form, client_assertion: 'a.b.c', client_assertion_type: 'urn:example:saml' }), 401, 'invalid_client');
    assertOAuthError(await postForm(token.url, { ...token.form, client_assertion: 'not a jwt', client_assertion_type: ASSERTION_TYPE }), 401, 'invalid_client');
  });
});

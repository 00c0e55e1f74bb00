/**
 * The client credentials grant (RFC 6749 §4.4): a confidential client gets an at+jwt for a
 * registered API on its own behalf (RFC 9068 §2.2: `sub` is the client), through
 * openid-client with each client authentication method Tessera has and with DPoP, and a
 * resource server written with jose accepts it. No refresh token, no ID token, no person.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { createClient, removeClient } from '../src/flows/manage/clients.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { manageDeps } from './helpers/manage.ts';
import { basic, postForm, startTestServer, type TestServer } from './helpers/server.ts';

const REPORTS = 'https://reports.example.com';
const LEDGER = 'urn:example:ledger';

describe('the client credentials grant (RFC 6749 §4.4)', () => {
  let server: TestServer;
  let secret: string;
  let clientId: string;
  let reportsSecret: string;

  before(async () => {
    server = await startTestServer();
    const deps = manageDeps(server);
    reportsSecret = (
      await addResource(deps, {
        identifier: REPORTS,
        name: 'Reports',
        scopes: [
          { name: 'reports:read', description: 'Read reports' },
          { name: 'reports:write', description: 'Write reports' },
        ],
        introspection_secret: true,
      })
    ).introspectionSecret!;
    await addResource(deps, { identifier: LEDGER, name: 'Ledger', scopes: [{ name: 'ledger:read', description: 'Read the ledger' }] });
    const { client, secret: made } = await createClient(deps, {
      client_name: 'Nightly export',
      grant_types: ['client_credentials'],
      scope: 'reports:read reports:write ledger:read',
    });
    clientId = client.id;
    secret = made!;
  });
  after(() => server.close());

  const discover = (id: string, auth: oidc.ClientAuth) => oidc.discovery(new URL(server.url), id, undefined, auth, { execute: [oidc.allowInsecureRequests] });
  /** A resource server for `audience`, as its developers would write it with jose. */
  const resourceServer = (audience: string) => (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), { issuer: server.config.issuer, audience, typ: 'at+jwt' });

  it('issues an at+jwt whose sub is the client, for the API its scopes name, that a jose resource server accepts; no refresh or ID token', async () => {
    const config = await discover(clientId, oidc.ClientSecretBasic(secret));
    assert.ok(config.serverMetadata().grant_types_supported?.includes('client_credentials'), 'discovery lists the grant');
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'reports:read' });
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(tokens.scope, 'reports:read');
    assert.equal(tokens.refresh_token, undefined);
    assert.equal(tokens.id_token, undefined);
    const { payload, protectedHeader } = await resourceServer(REPORTS)(tokens.access_token);
    assert.equal(protectedHeader.typ, 'at+jwt');
    assert.deepEqual([payload.sub, payload['client_id'], payload['scope'], payload.aud], [clientId, clientId, 'reports:read', REPORTS]);
    assert.equal(payload['auth_time'], undefined, 'nobody signed in');
    await assert.rejects(resourceServer(LEDGER)(tokens.access_token), /aud/, 'another API refuses it');
  });

  it('takes resource (RFC 8707) and defaults the scope to what the client has of that API', async () => {
    const config = await discover(clientId, oidc.ClientSecretBasic(secret));
    const tokens = await oidc.clientCredentialsGrant(config, { resource: LEDGER });
    assert.equal(tokens.scope, 'ledger:read');
    assert.equal((await resourceServer(LEDGER)(tokens.access_token)).payload.aud, LEDGER);
  });

  it('authenticates the client with client_secret_post and private_key_jwt too', async () => {
    const deps = manageDeps(server);
    const { client: post, secret: postSecret } = await createClient(deps, {
      client_name: 'Poster',
      grant_types: ['client_credentials'],
      scope: 'reports:read',
      token_endpoint_auth_method: 'client_secret_post',
    });
    const viaPost = await oidc.clientCredentialsGrant(await discover(post.id, oidc.ClientSecretPost(postSecret!)), { scope: 'reports:read' });
    assert.equal((await resourceServer(REPORTS)(viaPost.access_token)).payload.sub, post.id);

    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] };
    const { client: signer } = await createClient(deps, { client_name: 'Signer', grant_types: ['client_credentials'], scope: 'reports:read', jwks });
    const viaJwt = await oidc.clientCredentialsGrant(await discover(signer.id, oidc.PrivateKeyJwt({ key: privateKey, kid: 'k1' })), { scope: 'reports:read' });
    assert.equal((await resourceServer(REPORTS)(viaJwt.access_token)).payload.sub, signer.id);
  });

  it('binds the token to a DPoP key (RFC 9449) when the request carries a proof', async () => {
    const config = await discover(clientId, oidc.ClientSecretBasic(secret));
    const dpop = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair('ES256'));
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'reports:write' }, { DPoP: dpop });
    assert.equal(tokens.token_type, 'dpop');
    const { payload } = await resourceServer(REPORTS)(tokens.access_token);
    assert.match(String((payload['cnf'] as { jkt?: string }).jkt), /^[A-Za-z0-9_-]{43}$/);
  });

  it('is introspected by its API as the client, refused by UserInfo, and dies with its client', async () => {
    const deps = manageDeps(server);
    const { client, secret: own } = await createClient(deps, { client_name: 'Short-lived', grant_types: ['client_credentials'], scope: 'reports:read' });
    const tokens = await oidc.clientCredentialsGrant(await discover(client.id, oidc.ClientSecretBasic(own!)), { scope: 'reports:read' });
    const introspect = () => postForm(`${server.url}/oauth/introspect`, { token: tokens.access_token }, { authorization: basic(REPORTS, reportsSecret) });
    const active = await introspect();
    assert.deepEqual([active.body['active'], active.body['sub'], active.body['client_id']], [true, client.id, client.id]);
    const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(userinfo.status, 401);
    // The token is live: the refusal says it is for another audience, not that it is invalid.
    assert.match(userinfo.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="this access token is for another audience/);
    await removeClient(deps, client.id);
    assert.deepEqual((await introspect()).body, { active: false });
  });

  it('refuses what RFC 6749 §4.4 and §5.2 refuse', async () => {
    const deps = manageDeps(server);
    const { client: other, secret: otherSecret } = await createClient(deps, {
      client_name: 'Web app',
      redirect_uris: ['https://app.example/cb'],
      scope: 'openid reports:read',
    });
    const token = (id: string, key: string, form: Record<string, string>) =>
      postForm(`${server.url}/oauth/token`, { grant_type: 'client_credentials', ...form }, { authorization: basic(id, key) });
    const cases: [string, string, Record<string, string>, number, string][] = [
      [other.id, otherSecret!, { scope: 'reports:read' }, 400, 'unauthorized_client'],
      [clientId, 'wrong secret', { scope: 'reports:read' }, 401, 'invalid_client'],
      [clientId, secret, { scope: 'openid' }, 400, 'invalid_scope'],
      [clientId, secret, { scope: 'photos:read' }, 400, 'invalid_scope'],
      [clientId, secret, { scope: 'reports:read ledger:read' }, 400, 'invalid_target'],
      [clientId, secret, {}, 400, 'invalid_target'],
      [clientId, secret, { resource: 'https://nowhere.example' }, 400, 'invalid_target'],
      [clientId, secret, { resource: LEDGER, scope: 'reports:read' }, 400, 'invalid_scope'],
      [clientId, secret, { resource: 'not a uri' }, 400, 'invalid_target'],
    ];
    for (const [id, key, form, status, error] of cases) {
      const result = await token(id, key, form);
      assert.deepEqual([result.status, result.body['error']], [status, error], JSON.stringify(form));
    }
    await assert.rejects(
      createClient(deps, { client_name: 'Public', grant_types: ['client_credentials'], scope: 'reports:read', token_endpoint_auth_method: 'none' }),
      /client_credentials is for confidential clients/,
    );
    await assert.rejects(
      createClient(deps, { client_name: 'No scope', grant_types: ['client_credentials'] }),
      /scope is required for the client_credentials grant/,
    );
    await assert.rejects(
      createClient(deps, { client_name: 'Sneaky', redirect_uris: ['https://app.example/cb'], scope: 'openid admin:users' }),
      /admin scopes are for clients of the client_credentials grant alone/,
    );
  });
});

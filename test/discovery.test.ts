import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../src/core/clock.ts';
import { encryptedKeyStore, loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { KeyManager } from '../src/tokens/keys.ts';
import { keySettings } from '../src/main.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** The JWS algorithms a client may sign its assertions and request objects with: RSA, RSA-PSS, ECDSA and EdDSA, no HMAC. */
const SIGNED_JWT_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

describe('discovery and JWKS', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('states exactly what is implemented', async () => {
    const response = await fetch(`${server.url}/.well-known/openid-configuration`);
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.equal(metadata['issuer'], server.url);
    assert.equal(metadata['authorization_endpoint'], `${server.url}/oauth/authorize`);
    assert.equal(metadata['token_endpoint'], `${server.url}/oauth/token`);
    assert.equal(metadata['jwks_uri'], `${server.url}/.well-known/jwks.json`);
    assert.deepEqual(metadata['code_challenge_methods_supported'], ['S256']);
    assert.deepEqual(metadata['token_endpoint_auth_methods_supported'], ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']);
    assert.deepEqual(metadata['token_endpoint_auth_signing_alg_values_supported'], SIGNED_JWT_ALGS);
    assert.deepEqual(metadata['response_types_supported'], ['code']);
    assert.deepEqual(metadata['response_modes_supported'], ['query', 'form_post']);
    assert.equal(metadata['request_parameter_supported'], true);
    // An unsigned request object is as good as the same parameters in the URL (OIDC Core §6.1).
    assert.deepEqual(metadata['request_object_signing_alg_values_supported'], ['none', ...SIGNED_JWT_ALGS]);
    assert.equal(metadata['request_uri_parameter_supported'], false);
    assert.equal(metadata['authorization_response_iss_parameter_supported'], true);
    assert.ok((metadata['grant_types_supported'] as string[]).includes('authorization_code'));
    const rfc8414 = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.deepEqual(rfc8414, metadata);
  });

  it('lists the token lifecycle endpoints and exactly the grant types the token endpoint takes', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.deepEqual(metadata['grant_types_supported'], [
      'authorization_code',
      'urn:ietf:params:oauth:grant-type:device_code',
      'refresh_token',
      'client_credentials',
      'urn:ietf:params:oauth:grant-type:token-exchange',
      'urn:ietf:params:oauth:grant-type:jwt-bearer',
    ]);
    // draft-ietf-oauth-identity-assertion-authz-grant: the jwt-bearer grant redeems ID-JAGs.
    assert.deepEqual(metadata['authorization_grant_profiles_supported'], ['urn:ietf:params:oauth:grant-profile:id-jag']);
    assert.equal(metadata['userinfo_endpoint'], `${server.url}/oauth/userinfo`);
    assert.equal(metadata['revocation_endpoint'], `${server.url}/oauth/revoke`);
    assert.equal(metadata['introspection_endpoint'], `${server.url}/oauth/introspect`);
    assert.deepEqual(metadata['revocation_endpoint_auth_methods_supported'], ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none']);
    assert.deepEqual(metadata['introspection_endpoint_auth_methods_supported'], ['client_secret_basic', 'client_secret_post', 'private_key_jwt']);
    for (const endpoint of ['revocation', 'introspection']) {
      assert.deepEqual(metadata[`${endpoint}_endpoint_auth_signing_alg_values_supported`], metadata['token_endpoint_auth_signing_alg_values_supported']);
    }
    assert.ok((metadata['scopes_supported'] as string[]).includes('offline_access'));
  });

  it('publishes an RS256 and an ES256 public key, and no private parts', async () => {
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] };
    assert.deepEqual(jwks.keys.map((key) => key['alg']).sort(), ['ES256', 'RS256']);
    for (const key of jwks.keys) {
      assert.equal(key['use'], 'sig');
      assert.equal(typeof key['kid'], 'string');
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(key[secret], undefined);
    }
  });
});

describe('key rotation', () => {
  it("keeps a retired key published for as long as an API's tokens may live, a day, not only the server-wide lifetimes", async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const server = await startTestServer({ clock });
    try {
      const keys = new KeyManager(encryptedKeyStore(server.store.keys, loadKeyEncryption(server.config.keyEncryption)), clock, keySettings(server.config));
      const before = await keys.signingKey('RS256');
      await keys.rotate();
      // Signed in the old key's last moment, for an API registered with --access-token-ttl 86400.
      clock.advance(server.config.keyLeadTimeSeconds * 1000 - 1);
      const published = async () => (await keys.jwks()).keys.map((key) => key.kid);
      clock.advance(23 * 3600 * 1000);
      assert.ok((await published()).includes(before.kid), 'its last tokens still live: the key that verifies them stays');
      clock.advance(3600 * 1000 + 2);
      assert.ok(!(await published()).includes(before.kid), 'gone once they have all expired');
    } finally {
      await server.close();
    }
  });

  it('publishes the next key before it signs, and keeps the old one until its tokens expire', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const server = await startTestServer({ clock });
    try {
      const keys = new KeyManager(encryptedKeyStore(server.store.keys, loadKeyEncryption(server.config.keyEncryption)), clock, {
        leadTimeSeconds: 3600,
        maxTokenLifetimeSeconds: 3600,
      });
      const before = await keys.signingKey('RS256');
      const [next] = (await keys.rotate()).filter((key) => key.alg === 'RS256');
      const published = async () => (await keys.jwks()).keys.map((key) => key.kid);

      assert.ok((await published()).includes(next!.kid), 'published at once');
      assert.equal((await keys.signingKey('RS256')).kid, before.kid, 'the old key still signs during the lead time');

      clock.advance(3600 * 1000);
      assert.equal((await keys.signingKey('RS256')).kid, next!.kid, 'the new key signs after the lead time');
      assert.ok((await published()).includes(before.kid), 'the old key stays published while its tokens live');

      clock.advance(3600 * 1000 + 1);
      assert.ok(!(await published()).includes(before.kid), 'the old key leaves once its last token has expired');
    } finally {
      await server.close();
    }
  });

  it('publishes a key rotated in by another instance at once, though that instance still signs from its cache', async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1));
    const server = await startTestServer({ clock });
    try {
      const settings = { leadTimeSeconds: 3600, maxTokenLifetimeSeconds: 3600 };
      const here = new KeyManager(encryptedKeyStore(server.store.keys, loadKeyEncryption(server.config.keyEncryption)), clock, settings);
      const elsewhere = new KeyManager(encryptedKeyStore(server.store.keys, loadKeyEncryption(server.config.keyEncryption)), clock, settings);
      const signing = await here.signingKey('RS256');
      await here.jwks();
      const added = (await elsewhere.rotate()).map((key) => key.kid);
      const published = (await here.jwks()).keys.map((key) => key.kid);
      for (const kid of added) assert.ok(published.includes(kid), `${kid} is published`);
      assert.equal((await here.signingKey('RS256')).kid, signing.kid);
    } finally {
      await server.close();
    }
  });
});

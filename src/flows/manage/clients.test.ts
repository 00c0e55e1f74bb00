/**
 * Registering a client without HTTP: `createClient` and `updateClient`, the operations behind
 * `tessera client add`, the admin API's /admin/clients and the console, given a registration
 * and answering a client or the field it refuses (`invalid:FIELD`). A table a rule, in the
 * style of fosite's handler tests; test/cli-clients.test.ts and test/admin-api.test.ts check
 * what the command and the API show of the same refusals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import { hashSecret } from '../../core/crypto.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { createClient, MAX_GRACE_SECONDS, rotateClientSecret, updateClient, type ClientMetadata } from './clients.ts';
import { addResource } from './resources.ts';

const WEB = { client_name: 'Notes', redirect_uris: ['https://notes.example/cb'] };
const PUBLIC = { ...WEB, token_endpoint_auth_method: 'none' };
const MACHINE = { client_name: 'Reporter', grant_types: ['client_credentials'], scope: 'reports:read' };
const DEVICE = { client_name: 'TV', grant_types: ['device_code'] };
const EXCHANGE = { client_name: 'Photo API', grant_types: ['token-exchange'] };
const API = 'https://reports.example.com';

describe('registering a client (createClient)', () => {
  let world: FlowWorld;
  let jwks: { keys: object[] };

  before(async () => {
    world = await flowWorld();
    await addResource(world.manage, { identifier: API, name: 'Reports', scopes: [{ name: 'reports:read', description: 'Read reports' }] });
    const { publicKey } = await generateKeyPair('ES256');
    jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] };
  });
  after(() => world.close());

  const register = (metadata: ClientMetadata) => outcome(() => createClient(world.manage, metadata));

  it('registers a web app by default: confidential, the code grant, PKCE required, a secret shown once and stored hashed', async () => {
    const { client, secret } = await createClient(world.manage, WEB);
    assert.deepEqual(client.grantTypes, [GRANT_AUTHORIZATION_CODE]);
    assert.equal(client.authMethod, 'client_secret_basic');
    assert.equal(client.pkce, 'required');
    assert.deepEqual(client.scopes, ['openid', 'profile', 'email']);
    assert.ok(secret && secret.length >= 43, 'a 256-bit secret');
    const stored = await world.store.clients.get(client.id);
    assert.equal(stored?.secretHash, hashSecret(secret), 'only its hash is kept');
    assert.equal(JSON.stringify(stored).includes(secret), false);
  });

  it('registers each kind of client a rule allows, with the grants and method it names', async () => {
    const cases: [string, ClientMetadata, (client: Awaited<ReturnType<typeof createClient>>) => void][] = [
      ['a public native app', { ...PUBLIC, redirect_uris: ['com.example.notes:/cb', 'http://127.0.0.1/cb'] }, ({ secret }) => assert.equal(secret, null)],
      ['a device', DEVICE, ({ client }) => assert.deepEqual(client.grantTypes, [GRANT_DEVICE_CODE])],
      [
        'a device limited to networks',
        { ...DEVICE, device_networks: ['192.0.2.0/24', '2001:db8::/32'] },
        ({ client }) => assert.equal(client.deviceNetworks.length, 2),
      ],
      ['a machine client', MACHINE, ({ client }) => assert.deepEqual(client.grantTypes, [GRANT_CLIENT_CREDENTIALS])],
      ['an admin tool', { ...MACHINE, scope: 'admin:clients' }, ({ client }) => assert.deepEqual(client.scopes, ['admin:clients'])],
      [
        'private_key_jwt, implied by its keys',
        { ...WEB, jwks },
        ({ client, secret }) => assert.deepEqual([client.authMethod, secret], ['private_key_jwt', null]),
      ],
      [
        'a browser app with its origins',
        { ...PUBLIC, web_origins: ['https://notes.example'] },
        ({ client }) => assert.deepEqual(client.webOrigins, ['https://notes.example']),
      ],
      ['a token exchanger for an API', { ...EXCHANGE, token_exchange_audiences: [API] }, ({ client }) => assert.deepEqual(client.exchangeAudiences, [API])],
      ['its own client_id', { ...WEB, client_id: 'notes-web' }, ({ client }) => assert.equal(client.id, 'notes-web')],
      [
        'duplicates said once',
        { ...WEB, redirect_uris: ['https://notes.example/cb', 'https://notes.example/cb'] },
        ({ client }) => assert.equal(client.redirectUris.length, 1),
      ],
    ];
    for (const [what, metadata, check] of cases) {
      try {
        check(await createClient(world.manage, metadata));
      } catch (error) {
        assert.fail(`${what}: ${(error as Error).message}`);
      }
    }
  });

  it('refuses a registration a rule forbids, naming the field', async () => {
    const cases: [string, ClientMetadata, string][] = [
      ['no name', { redirect_uris: WEB.redirect_uris }, 'invalid:client_name'],
      ['a blank name', { ...WEB, client_name: '   ' }, 'invalid:client_name'],
      ['a name with control characters', { ...WEB, client_name: 'Notes\u202e' }, 'invalid:client_name'],
      ['a name too long', { ...WEB, client_name: 'N'.repeat(201) }, 'invalid:client_name'],
      ['the code grant without a redirect URI', { client_name: 'Notes' }, 'invalid:redirect_uris'],
      ['a redirect URI with a fragment', { ...WEB, redirect_uris: ['https://notes.example/cb#x'] }, 'invalid:redirect_uris'],
      ['a relative redirect URI', { ...WEB, redirect_uris: ['/cb'] }, 'invalid:redirect_uris'],
      ['an unknown grant', { ...WEB, grant_types: ['implicit'] }, 'invalid:grant_types'],
      ['refresh_token alone', { ...WEB, grant_types: ['refresh_token'] }, 'invalid:grant_types'],
      ['client_credentials for a public client (RFC 6749 §4.4)', { ...MACHINE, token_endpoint_auth_method: 'none' }, 'invalid:grant_types'],
      ['client_credentials without a scope', { client_name: 'Reporter', grant_types: ['client_credentials'] }, 'invalid:scope'],
      ['admin scopes beside a sign-in grant', { ...WEB, scope: 'openid admin:clients' }, 'invalid:scope'],
      ['admin scopes for a device', { ...DEVICE, scope: 'admin:users' }, 'invalid:scope'],
      ['an unknown scope', { ...WEB, scope: 'openid photos:read' }, 'invalid:scope'],
      ['token-exchange for a public client', { ...EXCHANGE, token_endpoint_auth_method: 'none', token_exchange_audiences: [API] }, 'invalid:grant_types'],
      ['token-exchange without audiences', EXCHANGE, 'invalid:grant_types'],
      ['audiences without token-exchange', { ...WEB, token_exchange_audiences: [API] }, 'invalid:token_exchange_audiences'],
      ['an audience neither an API nor an issuer', { ...EXCHANGE, token_exchange_audiences: ['not a url'] }, 'invalid:token_exchange_audiences'],
      ["this server's own issuer as audience", { ...EXCHANGE, token_exchange_audiences: [FLOW_ISSUER] }, 'invalid:token_exchange_audiences'],
      ['jwt-bearer for a public client', { client_name: 'Agent', grant_types: ['jwt-bearer'], token_endpoint_auth_method: 'none' }, 'invalid:grant_types'],
      ['web origins for a confidential client', { ...WEB, web_origins: ['https://notes.example'] }, 'invalid:web_origins'],
      ['a web origin with a path', { ...PUBLIC, web_origins: ['https://notes.example/app'] }, 'invalid:web_origins'],
      ['device networks without the device grant', { ...WEB, device_networks: ['192.0.2.0/24'] }, 'invalid:device_networks'],
      ['a device network that is not one', { ...DEVICE, device_networks: ['192.0.2.0/33'] }, 'invalid:device_networks'],
      ['PAR required without the code grant', { ...DEVICE, require_pushed_authorization_requests: true }, 'invalid:require_pushed_authorization_requests'],
      ['PKCE relaxed for a public client (RFC 9700 §2.1.1)', { ...PUBLIC, pkce: 'optional' }, 'invalid:pkce'],
      ['an unknown PKCE policy', { ...WEB, pkce: 'sometimes' }, 'invalid:pkce'],
      ['an unknown authentication method', { ...WEB, token_endpoint_auth_method: 'client_secret_jwt' }, 'invalid:token_endpoint_auth_method'],
      ['private_key_jwt without keys', { ...WEB, token_endpoint_auth_method: 'private_key_jwt' }, 'invalid:token_endpoint_auth_method'],
      ['keys for a secret client', { ...WEB, token_endpoint_auth_method: 'client_secret_basic', jwks }, 'invalid:jwks_uri'],
      ['both jwks_uri and jwks', { ...WEB, jwks_uri: 'https://notes.example/jwks', jwks }, 'invalid:jwks_uri'],
      ['a jwks_uri over http', { ...WEB, jwks_uri: 'http://notes.example/jwks' }, 'invalid:jwks_uri'],
      ['a private key among the keys', { ...WEB, jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] } }, 'invalid:jwks'],
      ['signed requests without keys', { ...WEB, request_object_signing_alg: 'ES256' }, 'invalid:request_object_signing_alg'],
      ['an unknown request object algorithm', { ...WEB, request_object_signing_alg: 'HS256' }, 'invalid:request_object_signing_alg'],
      ['a post-logout URI with a fragment', { ...WEB, post_logout_redirect_uris: ['https://notes.example/bye#x'] }, 'invalid:post_logout_redirect_uris'],
      ['a back-channel logout URI over http', { ...WEB, backchannel_logout_uri: 'http://notes.example/logout' }, 'invalid:backchannel_logout_uri'],
      ['a back-channel logout URI on a private network', { ...WEB, backchannel_logout_uri: 'https://10.0.0.8/logout' }, 'invalid:backchannel_logout_uri'],
      ['a client_id with a space', { ...WEB, client_id: 'notes web' }, 'invalid:client_id'],
      ['a URL as client_id, a metadata document’s', { ...WEB, client_id: 'https://notes.example/client.json' }, 'invalid:client_id'],
    ];
    for (const [what, metadata, expected] of cases) assert.equal(await register(metadata), expected, what);
    assert.equal(await register({ ...WEB, client_id: 'taken' }), 'ok');
    assert.equal(await register({ ...WEB, client_id: 'taken' }), 'conflict', 'a client_id taken');
  });

  it('checks an update by the same rules, and never turns a public client confidential or back', async () => {
    const { client: web } = await createClient(world.manage, WEB);
    const { client: native } = await createClient(world.manage, PUBLIC);
    const cases: [string, string, ClientMetadata, string][] = [
      ['a new name', web.id, { client_name: 'Notes 2' }, 'ok'],
      ['admin scopes for a web app', web.id, { scope: 'openid admin:users' }, 'invalid:scope'],
      ['the code grant dropped with its redirect URIs', web.id, { redirect_uris: [] }, 'invalid:redirect_uris'],
      ['a public client made confidential', native.id, { token_endpoint_auth_method: 'client_secret_basic' }, 'invalid:token_endpoint_auth_method'],
      ['a confidential client made public', web.id, { token_endpoint_auth_method: 'none' }, 'invalid:token_endpoint_auth_method'],
      ['verified for a client the operator registered', web.id, { verified: true }, 'invalid:verified'],
      ['an unknown client', 'nobody', { client_name: 'X' }, 'not_found'],
    ];
    for (const [what, id, changes, expected] of cases) assert.equal(await outcome(() => updateClient(world.manage, id, changes)), expected, what);
    assert.equal((await world.store.clients.get(web.id))?.name, 'Notes 2');
  });

  it('rotates a secret with a grace for the old one, and refuses where there is no secret', async () => {
    const { client, secret } = await createClient(world.manage, WEB);
    const rotated = await rotateClientSecret(world.manage, client.id, 3600);
    const stored = await world.store.clients.get(client.id);
    assert.equal(stored?.secretHash, hashSecret(rotated.secret));
    assert.equal(stored?.previousSecretHash, hashSecret(secret!), 'the old secret still works for the grace');
    assert.equal(stored?.previousSecretExpiresAt, world.clock.now() + 3600_000);
    const { client: native } = await createClient(world.manage, PUBLIC);
    assert.equal(await outcome(() => rotateClientSecret(world.manage, native.id, 0)), 'conflict', 'a public client');
    assert.equal(await outcome(() => rotateClientSecret(world.manage, client.id, -1)), 'invalid:grace_seconds');
    assert.equal(await outcome(() => rotateClientSecret(world.manage, 'nobody', 0)), 'not_found');
  });

  it('keeps a rotated-out secret working for at most 30 days: a grace one second longer is refused', async () => {
    const { client } = await createClient(world.manage, WEB);
    assert.equal(await outcome(() => rotateClientSecret(world.manage, client.id, MAX_GRACE_SECONDS + 1)), 'invalid:grace_seconds');
    await rotateClientSecret(world.manage, client.id, MAX_GRACE_SECONDS);
    assert.equal((await world.store.clients.get(client.id))?.previousSecretExpiresAt, world.clock.now() + 30 * 86400_000);
  });
});

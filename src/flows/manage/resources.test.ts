/**
 * Registering APIs (RFC 8707 resources) without HTTP: the operations behind `tessera resource
 * …`, /admin/resources and the console's APIs page, a table a rule.
 * test/cli-resources.test.ts and test/resources.test.ts check the command's output and what
 * the tokens of a registered API carry.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { hashSecret } from '../../core/crypto.ts';
import { FLOW_ISSUER, flowWorld, liveRefreshToken, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addResource, removeResource, updateResource, type ResourceInput } from './resources.ts';
import { updateClient } from './clients.ts';
import { refreshTokenGrant } from '../refresh/token.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';

const READ = { name: 'reports:read', description: 'Read your reports' };
const REPORTS: ResourceInput = { identifier: 'https://reports.example.com', name: 'Reports', scopes: [READ] };

describe('registering APIs (flows/manage/resources.ts)', () => {
  let world: FlowWorld;
  let made = 0;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /** An input for a new API, its identifier and scope names its own. */
  const fresh = (input: Partial<ResourceInput> = {}): ResourceInput => {
    made += 1;
    return { identifier: `https://api${made}.example.com`, name: `API ${made}`, scopes: [{ name: `api${made}:read`, description: 'Read' }], ...input };
  };

  it('registers an API with its scopes, RS256 tokens by default, and an introspection secret only when asked, shown once and kept hashed', async () => {
    const { resource, introspectionSecret } = await addResource(world.manage, REPORTS);
    assert.equal(resource.signingAlg, 'RS256', 'RFC 9068 §2.1: RS256 unless the API chose another');
    assert.deepEqual(resource.scopes, [READ]);
    assert.equal(introspectionSecret, null);
    const { resource: withSecret, introspectionSecret: secret } = await addResource(world.manage, fresh({ introspection_secret: true, signing_alg: 'ES256' }));
    assert.equal(withSecret.signingAlg, 'ES256');
    assert.ok(secret);
    assert.equal((await world.store.resources.get(withSecret.identifier))?.introspectionSecretHash, hashSecret(secret));
  });

  it('refuses an API a rule forbids, naming the field', async () => {
    const scope = (name: string, description = 'Does things') => ({ scopes: [{ name, description }] });
    const cases: [string, ResourceInput, string][] = [
      ['no identifier', fresh({ identifier: '' }), 'invalid:identifier'],
      ['a relative identifier', fresh({ identifier: '/reports' }), 'invalid:identifier'],
      ['an identifier with a fragment (RFC 8707 §2)', fresh({ identifier: 'https://api.example.com/#x' }), 'invalid:identifier'],
      ["this server's own URL", fresh({ identifier: `${FLOW_ISSUER}/admin` }), 'invalid:identifier'],
      ['an identifier too long', fresh({ identifier: `https://api.example.com/${'a'.repeat(2100)}` }), 'invalid:identifier'],
      ['no name', fresh({ name: '  ' }), 'invalid:name'],
      ['a name with a direction override', fresh({ name: 'Reports\u202e' }), 'invalid:name'],
      ['no scope', fresh({ scopes: [] }), 'invalid:scopes'],
      ['an OpenID scope', fresh(scope('openid')), 'invalid:scopes'],
      ['an admin scope', fresh(scope('admin:users')), 'invalid:scopes'],
      ['a scope name with a space', fresh(scope('reports read')), 'invalid:scopes'],
      ['a scope without a description', fresh(scope('x:read', ' ')), 'invalid:scopes'],
      ['a scope named twice', fresh({ scopes: [READ, READ] }), 'invalid:scopes'],
      ['a lifetime of no whole seconds', fresh({ access_token_ttl: 1.5 }), 'invalid:access_token_ttl'],
      ['a lifetime past the bound', fresh({ access_token_ttl: 10 ** 9 }), 'invalid:access_token_ttl'],
      ['a signing algorithm it does not sign with', fresh({ signing_alg: 'HS256' }), 'invalid:signing_alg'],
      ['an identifier taken', { ...REPORTS }, 'conflict'],
      ["another API's scope name", fresh({ scopes: [READ] }), 'conflict'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addResource(world.manage, input)), expected, what);
  });

  it('changes an API by the same rules, and keeps a scope that a client still has', async () => {
    const api = await addResource(world.manage, fresh());
    const id = api.resource.identifier;
    const own = api.resource.scopes[0]!.name;
    await world.addClient({ client_name: 'Uses it', grant_types: ['client_credentials'], scope: own });
    const cases: [string, Parameters<typeof updateResource>[2], string][] = [
      ['a new name and lifetime', { name: 'Renamed', access_token_ttl: 300 }, 'ok'],
      ['nothing to change', {}, 'invalid:name'],
      ["another API's scope", { scopes: [{ name: own, description: 'Read' }, READ] }, 'conflict'],
      ['the scope a client has, removed', { scopes: [{ name: `${own}-2`, description: 'Read' }] }, 'conflict'],
      [
        'a scope added beside it',
        {
          scopes: [
            { name: own, description: 'Read' },
            { name: `${own}:more`, description: 'More' },
          ],
        },
        'ok',
      ],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => updateResource(world.manage, id, input)), expected, what);
    await assert.rejects(
      () => updateResource(world.manage, id, { scopes: [{ name: own, description: 'Read' }, READ] }),
      /reports:read already belongs to Reports \(https:\/\/reports\.example\.com\)/,
      'the answer names the API that holds the scope',
    );
    const now = await world.store.resources.get(id);
    assert.deepEqual([now?.name, now?.accessTokenTtl, now?.scopes.length], ['Renamed', 300, 2]);
    assert.equal(await outcome(() => updateResource(world.manage, 'https://nowhere.example.com', { name: 'X' })), 'not_found');
    await removeResource(world.manage, id);
    assert.equal(await outcome(() => removeResource(world.manage, id)), 'not_found', 'removed once');
  });

  it('takes a scope it drops out of every approval, so that the name defined again is not approved by an old consent, nor got by an old refresh token', async () => {
    const api = await addResource(world.manage, fresh());
    const id = api.resource.identifier;
    const read = api.resource.scopes[0]!;
    const purge = { name: `${read.name}:purge`, description: 'Empty your trash' };
    await updateResource(world.manage, id, { scopes: [read, purge] });
    const scope = ['openid', 'offline_access', read.name, purge.name];
    const { client } = await world.addClient({
      client_name: 'Drive',
      redirect_uris: ['https://drive.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: scope.join(' '),
    });
    const user = await world.addUser({ username: 'drive-user' });
    const grantId = randomUUID();
    await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope }, world.clock.now()));
    const token = await liveRefreshToken(world, { grantId, userId: user.id, clientId: client.id, scope, lifetimeMs: 86_400_000 });
    // Taken from the client (as updateResource demands), then from the API.
    await updateClient(world.manage, client.id, { scope: `openid offline_access ${read.name}` });
    await updateResource(world.manage, id, { scopes: [read] });
    assert.deepEqual((await world.store.grants.get(grantId))?.scope, ['openid', 'offline_access', read.name], 'the dropped name left the approval');
    // Defined again with another meaning, and given to the client again.
    await updateResource(world.manage, id, { scopes: [read, { ...purge, description: 'Delete every file you have' }] });
    await updateClient(world.manage, client.id, { scope: scope.join(' ') });
    const refreshed = await refreshTokenGrant.handle(world.deps, (await world.store.clients.get(client.id))!, { refresh_token: token }, null);
    assert.equal(decodeJwt(refreshed.access_token)['scope'], `openid offline_access ${read.name}`);
  });
});

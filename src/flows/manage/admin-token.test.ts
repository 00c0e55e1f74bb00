import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminAudience } from '../../core/scopes.ts';
import type { ClientRecord } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { adminCaller, type AdminNeed } from './admin-token.ts';
import { removeClient, updateClient } from './clients.ts';

/** An API registered on the server, whose scopes a client may hold beside its admin scopes. */
const API = {
  identifier: 'https://api.example.com',
  name: 'API',
  scopes: [{ name: 'api:read', description: 'Read' }],
  accessTokenTtl: null,
  introspectionSecretHash: null,
  signingAlg: 'RS256' as const,
  createdAt: 0,
};

describe('who calls the admin API (adminCaller)', () => {
  let world: FlowWorld;
  let ci: ClientRecord;

  before(async () => {
    world = await flowWorld();
    await world.store.resources.create(API);
    ({ client: ci } = await world.addClient({ client_name: 'CI', grant_types: ['client_credentials'], scope: 'admin:clients admin:users:read' }));
  });
  after(() => world.close());

  /** A client_credentials access token of `client` for `audience` (the admin API's, or an API's) naming `scope`. */
  async function token(client: ClientRecord, scope: string[], audience = adminAudience(world.config.issuer)): Promise<string> {
    const resource = audience === API.identifier ? API : { ...API, identifier: audience, scopes: [] };
    return (await world.tokens.issueForClient({ client, scope, resource, dpopJkt: null })).access_token;
  }
  const call = (presented: string, area: AdminNeed, write: boolean) =>
    outcome(() => adminCaller(world.deps, { token: presented, scheme: 'Bearer', proof: null } as never, area, write));

  it('lets a token through for what its scope covers, and refuses what it does not with insufficient_scope', async () => {
    const presented = await token(ci, ['admin:clients', 'admin:users:read']);
    const cases: [AdminNeed, boolean, string][] = [
      ['clients', true, 'ok'],
      ['clients', false, 'ok'],
      ['users', false, 'ok'],
      ['users', true, 'insufficient_scope'],
      ['keys', false, 'insufficient_scope'],
      ['any', false, 'ok'],
    ];
    for (const [area, write, expected] of cases) assert.equal(await call(presented, area, write), expected, `${area} ${write ? 'write' : 'read'}`);
    const caller = await adminCaller(world.deps, { token: presented, scheme: 'Bearer', proof: null } as never, 'clients', true);
    assert.deepEqual(caller, { clientId: ci.id, scope: ['admin:clients', 'admin:users:read'] });
  });

  it("refuses an access token for another audience (RFC 8707 §2), though it names admin scopes: an API's, the server's own", async () => {
    // The client holds an API's scope too; its token for that API carries an admin scope in
    // its claims only because it was minted so here: the audience alone must refuse it.
    for (const audience of [API.identifier, world.config.issuer, `${world.config.issuer}/admin/`]) {
      const presented = await token(ci, ['admin:clients'], audience);
      assert.equal(await call(presented, 'clients', false), 'invalid_token', audience);
    }
    assert.equal(await call('not-a-jwt', 'clients', false), 'invalid_token');
  });

  it('does not honour a scope the client has lost since its token was issued', async () => {
    const { client } = await world.addClient({ client_name: 'Narrowed', grant_types: ['client_credentials'], scope: 'admin:clients admin:users' });
    const presented = await token(client, ['admin:clients', 'admin:users']);
    assert.equal(await call(presented, 'users', true), 'ok');
    await updateClient(world.manage, client.id, { scope: 'admin:clients' });
    assert.equal(await call(presented, 'users', true), 'insufficient_scope', 'admin:users was taken away');
    assert.equal(await call(presented, 'users', false), 'insufficient_scope');
    assert.equal(await call(presented, 'clients', true), 'ok', 'what it still has still works');
    const caller = await adminCaller(world.deps, { token: presented, scheme: 'Bearer', proof: null } as never, 'clients', false);
    assert.deepEqual(caller.scope, ['admin:clients'], 'the operations are told only what it still holds');
  });

  it('refuses the token of a client that has been removed', async () => {
    const { client } = await world.addClient({ client_name: 'Gone', grant_types: ['client_credentials'], scope: 'admin:clients' });
    const presented = await token(client, ['admin:clients']);
    await removeClient(world.manage, client.id);
    assert.equal(await call(presented, 'clients', false), 'invalid_token');
  });
});

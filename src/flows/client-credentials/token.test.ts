import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { ClientRecord } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { clientCredentialsGrant } from './token.ts';

const REPORTS = {
  identifier: 'https://reports.example',
  name: 'Reports',
  scopes: [
    { name: 'reports:read', description: 'Read' },
    { name: 'reports:write', description: 'Write' },
  ],
  accessTokenTtl: null,
  introspectionSecretHash: null,
  signingAlg: 'RS256' as const,
  createdAt: 0,
};
const BILLING = { ...REPORTS, identifier: 'https://billing.example', name: 'Billing', scopes: [{ name: 'billing:read', description: 'Read' }] };

describe('the client_credentials grant (RFC 6749 §4.4)', () => {
  let world: FlowWorld;
  let worker: ClientRecord;
  let both: ClientRecord;

  before(async () => {
    world = await flowWorld();
    await world.store.resources.create(REPORTS);
    await world.store.resources.create(BILLING);
    ({ client: worker } = await world.addClient({ client_name: 'Worker', grant_types: ['client_credentials'], scope: 'reports:read reports:write' }));
    ({ client: both } = await world.addClient({ client_name: 'Both', grant_types: ['client_credentials'], scope: 'reports:read billing:read' }));
  });
  after(() => world.close());

  const grant = (client: ClientRecord, params: Record<string, string>) => clientCredentialsGrant.handle(world.deps, client, params, null);

  it("issues a token for one API, with the scope asked for or the client's scopes of that API, and nothing else", async () => {
    const cases: [ClientRecord, Record<string, string>, string][] = [
      [worker, {}, 'https://reports.example reports:read reports:write'],
      [worker, { scope: 'reports:read' }, 'https://reports.example reports:read'],
      [worker, { resource: REPORTS.identifier }, 'https://reports.example reports:read reports:write'],
      [both, { resource: BILLING.identifier }, 'https://billing.example billing:read'],
      [both, { scope: 'billing:read' }, 'https://billing.example billing:read'],
    ];
    for (const [client, params, expected] of cases) {
      const response = await grant(client, params);
      const claims = decodeJwt(response.access_token);
      assert.equal(`${String(claims.aud)} ${String(claims['scope'])}`, expected, JSON.stringify(params));
      assert.equal(claims.sub, client.id, 'RFC 9068 §2.2: the client is the subject');
      assert.equal(response.refresh_token, undefined, '§4.4.3: no refresh token');
      assert.equal(response.id_token, undefined);
    }
  });

  it('refuses what it must, with the error RFC 6749 §5.2 names', async () => {
    const cases: [string, ClientRecord, Record<string, string>, string][] = [
      ['OpenID scopes: nobody signs in', worker, { scope: 'openid reports:read' }, 'invalid_scope'],
      ['a scope not registered for the client', worker, { scope: 'billing:read' }, 'invalid_scope'],
      ['an unknown scope', worker, { scope: 'reports:delete' }, 'invalid_scope'],
      ['a malformed scope', worker, { scope: '  ' }, 'invalid_scope'],
      ['scopes of two APIs, no resource', both, {}, 'invalid_target'],
      ['an unknown API', worker, { resource: 'https://unknown.example' }, 'invalid_target'],
      ['an API it has no scope of', worker, { resource: BILLING.identifier }, 'invalid_scope'],
      ['a scope of another API than the one named', both, { resource: REPORTS.identifier, scope: 'billing:read' }, 'invalid_scope'],
    ];
    for (const [what, client, params, expected] of cases) assert.equal(await outcome(() => grant(client, params)), expected, what);
  });

  it('is for confidential clients only (§4.4): a public client is refused with unauthorized_client, whatever its registration says', async () => {
    // Registration refuses a public client of this grant, so the grant's own check is the one
    // that stands if a record ever says otherwise (an older database, a change of method).
    const publicClient: ClientRecord = { ...worker, id: 'public-worker', authMethod: 'none', secretHash: null };
    assert.equal(await outcome(() => grant(publicClient, { scope: 'reports:read' })), 'unauthorized_client');
    assert.equal(await outcome(() => grant(publicClient, {})), 'unauthorized_client');
  });
});

/**
 * Introspection (RFC 7662) and revocation (RFC 7009) without HTTP: tokens issued by the token
 * issuer for a grant in an in-memory store, then what each caller may learn of them and what
 * revoking one ends. test/introspection.test.ts and test/revocation.test.ts check the same
 * through the endpoints, with client authentication and real clients.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { randomToken } from '../../core/crypto.ts';
import type { ClientRecord, ResourceRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { addResource } from '../manage/resources.ts';
import { refreshTokenGrant } from '../refresh/token.ts';
import { tokenTarget } from '../resources.ts';
import { introspectToken, type Introspector } from './introspection.ts';
import { revokeToken } from './revocation.ts';

const API = 'https://reports.example.com';
const OTHER_API = 'https://ledger.example.com';
const INACTIVE = { active: false };

describe('introspection (RFC 7662) and revocation (RFC 7009)', () => {
  let world: FlowWorld;
  let app: ClientRecord;
  let other: ClientRecord;
  let api: ResourceRecord;
  let otherApi: ResourceRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    ({ resource: api } = await addResource(world.manage, {
      identifier: API,
      name: 'Reports',
      scopes: [{ name: 'reports:read', description: 'Read reports' }],
    }));
    ({ resource: otherApi } = await addResource(world.manage, {
      identifier: OTHER_API,
      name: 'Ledger',
      scopes: [{ name: 'ledger:read', description: 'Read' }],
    }));
    const metadata = {
      redirect_uris: ['https://app.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid offline_access reports:read',
    };
    ({ client: app } = await world.addClient({ client_name: 'Reports app', ...metadata }));
    ({ client: other } = await world.addClient({ client_name: 'Other app', ...metadata }));
    ada = await world.addUser({ username: 'ada' });
  });
  after(() => world.close());

  /** A grant approved now, and the access token for the API and refresh token issued for it. */
  async function issued(user = ada, client = app): Promise<{ access: string; refresh: string; grantId: string }> {
    const now = world.clock.now();
    const grantId = randomUUID();
    const scope = ['openid', 'offline_access', 'reports:read'];
    await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope }, now));
    const response = await world.tokens.issue({ client, user, ...(await tokenTarget(world.store, { scope, createdAt: now }, API)), grantId, authTime: now });
    assert.ok(response.refresh_token, 'a refresh token, for offline_access');
    return { access: response.access_token, refresh: response.refresh_token, grantId };
  }

  const asClient = (client: ClientRecord): Introspector => ({ client });
  const asApi = (resource: ResourceRecord): Introspector => ({ resource });
  const introspect = (caller: Introspector, token: string) => introspectToken(world.deps, caller, token);

  it('tells the client its own live tokens: scope, client, person, expiry, type, issuer, and the API of an access token', async () => {
    const { access, refresh } = await issued();
    const token = await introspect(asClient(app), access);
    assert.equal(token.active, true);
    assert.ok(token.active);
    assert.deepEqual(
      { scope: token.scope, client_id: token.client_id, sub: token.sub, token_type: token.token_type, iss: token.iss, aud: token.aud },
      { scope: 'openid offline_access reports:read', client_id: app.id, sub: ada.id, token_type: 'Bearer', iss: FLOW_ISSUER, aud: API },
    );
    assert.ok(token.exp > token.iat);
    const kept = await introspect(asClient(app), refresh);
    assert.ok(kept.active);
    assert.equal(kept.token_type, 'refresh_token');
    assert.equal(kept.sub, ada.id);
  });

  it('answers only {"active": false} for what the caller may not know of, or what is not live (§2.2)', async () => {
    const { access, refresh } = await issued();
    const forOther = await issued(ada, other);
    const cases: [string, Introspector, string][] = [
      ["another client's access token", asClient(app), forOther.access],
      ["another client's refresh token", asClient(app), forOther.refresh],
      ['an access token asked about by another API', asApi(otherApi), access],
      ['a refresh token asked about by an API', asApi(api), refresh],
      ['a token this server never issued', asClient(app), randomToken(32)],
      ['a forged access token', asClient(app), `${access.slice(0, -4)}AAAA`],
      ['not a token at all', asClient(app), '..'],
    ];
    for (const [what, caller, token] of cases) assert.deepEqual(await introspect(caller, token), INACTIVE, what);
    const forApi = await introspect(asApi(api), access);
    assert.equal(forApi.active, true, 'the API the access token is for may ask');
  });

  it('calls a token inactive once it expires, once its grant is revoked or its person disabled, and a refresh token once it is rotated', async () => {
    const expiring = await issued();
    const { exp } = (await introspect(asClient(app), expiring.access)) as { exp: number };
    world.clock.set(exp * 1000);
    assert.deepEqual(await introspect(asClient(app), expiring.access), INACTIVE, 'an expired access token');
    assert.equal((await introspect(asClient(app), expiring.refresh)).active, true, 'its refresh token lives on');

    const revoked = await issued();
    await world.store.grants.revoke(revoked.grantId, world.clock.now());
    assert.deepEqual(await introspect(asClient(app), revoked.access), INACTIVE, 'a revoked grant’s access token');
    assert.deepEqual(await introspect(asClient(app), revoked.refresh), INACTIVE, 'a revoked grant’s refresh token');

    const grace = await world.addUser({ username: 'grace' });
    const disabled = await issued(grace);
    await world.store.users.setDisabled(grace.id, true);
    assert.deepEqual(await introspect(asClient(app), disabled.access), INACTIVE, 'a disabled person’s access token');
    assert.deepEqual(await introspect(asClient(app), disabled.refresh), INACTIVE, 'a disabled person’s refresh token');

    const rotated = await issued();
    await refreshTokenGrant.handle(world.deps, app, { refresh_token: rotated.refresh }, null);
    assert.deepEqual(await introspect(asClient(app), rotated.refresh), INACTIVE, 'a rotated refresh token');
  });

  it("revokes the client's own access token alone, and its refresh token with the whole grant (§2.1)", async () => {
    const { access, refresh, grantId } = await issued();
    await revokeToken(world.deps, app, access);
    assert.deepEqual(await introspect(asClient(app), access), INACTIVE, 'the access token');
    assert.equal((await introspect(asClient(app), refresh)).active, true, 'the refresh token is untouched');

    const second = await world.tokens.issue({
      client: app,
      user: ada,
      ...(await tokenTarget(world.store, { scope: ['openid', 'reports:read'], createdAt: world.clock.now() }, API)),
      grantId,
      authTime: world.clock.now(),
    });
    await revokeToken(world.deps, app, refresh);
    assert.notEqual((await world.store.grants.get(grantId))?.revokedAt, null, 'the grant is revoked');
    assert.deepEqual(await introspect(asClient(app), second.access_token), INACTIVE, 'and every access token issued under it');
    const events = (await world.store.events.list({ limit: 5 })).map((event) => event.type);
    assert.ok(events.includes('token.revoked') && events.includes('grant.revoked'), events.join(' '));
  });

  it("leaves another client's tokens alone, and takes what is not a token without complaint (§2.2)", async () => {
    const { access, refresh, grantId } = await issued(ada, other);
    for (const token of [access, refresh, randomToken(32), 'not-a-token', `${access.slice(0, -4)}AAAA`]) await revokeToken(world.deps, app, token);
    assert.equal((await introspect(asClient(other), access)).active, true);
    assert.equal((await introspect(asClient(other), refresh)).active, true);
    assert.equal((await world.store.grants.get(grantId))?.revokedAt, null);
  });
});

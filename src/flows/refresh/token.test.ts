/**
 * The refresh_token grant without HTTP (RFC 6749 §6, RFC 9700 §4.14.2): a grant and its
 * refresh token written to an in-memory store, then each request's outcome and what it left
 * in the store. test/refresh-token.test.ts drives the same rules through real clients.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { timedSecretKey } from '../../core/timed-secret.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { flowWorld, liveRefreshToken, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { refreshTokenGrant } from './token.ts';
import { addResource, removeResource } from '../manage/resources.ts';
import { updateClient } from '../manage/clients.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';

const DAY = 86_400_000;

describe('the refresh_token grant (RFC 6749 §6)', () => {
  let world: FlowWorld;
  let app: ClientRecord;
  let other: ClientRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    ({ client: app } = await world.addClient({
      client_name: 'Notes',
      redirect_uris: ['https://notes.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email offline_access',
    }));
    ({ client: other } = await world.addClient({
      client_name: 'Other',
      redirect_uris: ['https://other.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile email offline_access',
    }));
    ada = await world.addUser({ username: 'ada' });
  });
  after(() => world.close());

  /** A grant of `scope` approved now, and a live refresh token of it, as the code exchange leaves them. */
  async function granted(scope = ['openid', 'profile', 'offline_access'], user = ada, client = app): Promise<{ token: string; grantId: string }> {
    const grantId = randomUUID();
    await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope }, world.clock.now()));
    return { token: await refreshTokenOf(grantId, scope, user, client), grantId };
  }

  /** A live refresh token of the grant `grantId`, made now, as a code exchange leaves it. */
  async function refreshTokenOf(grantId: string, scope: string[], user: UserRecord, client = app): Promise<string> {
    return liveRefreshToken(world, { grantId, userId: user.id, clientId: client.id, scope, lifetimeMs: DAY });
  }

  const refresh = (client: ClientRecord, params: Record<string, string>) => refreshTokenGrant.handle(world.deps, client, params, null);

  it('rotates: a new refresh token and tokens for the same person and scope, or a narrower one asked for', async () => {
    const { token } = await granted();
    const first = await refresh(app, { refresh_token: token });
    assert.ok(first.refresh_token && first.refresh_token !== token, 'a new refresh token');
    assert.equal(first.scope, 'openid profile offline_access');
    assert.equal(decodeJwt(first.id_token!).sub, ada.id);
    assert.equal(decodeJwt(first.id_token!)['nonce'], undefined, 'OIDC Core §12.2: no nonce in a refreshed ID token');
    const narrowed = await refresh(app, { refresh_token: first.refresh_token!, scope: 'openid' });
    assert.equal(narrowed.scope, 'openid');
    // §6: the new refresh token keeps the scope granted, not the narrowed one.
    const again = await refresh(app, { refresh_token: narrowed.refresh_token!, scope: 'openid profile' });
    assert.equal(again.scope, 'openid profile');
  });

  it('rotates into tokens that begin with the time they were made, stored under that time and their hash, later ones after; a token of the earlier form still rotates', async () => {
    const { token } = await granted();
    assert.match(token, /^[A-Za-z0-9_-]{43}$/, 'the earlier form, stored under its bare hash');
    const first = (await refresh(app, { refresh_token: token })).refresh_token!;
    assert.match(first, /^[0-9a-z]{9}[A-Za-z0-9_-]{43}$/);
    assert.equal(Number.parseInt(first.slice(0, 9), 36), world.clock.now());
    world.clock.advance(1000);
    const second = (await refresh(app, { refresh_token: first })).refresh_token!;
    assert.ok(timedSecretKey(first) < timedSecretKey(second), 'a later token sorts after an earlier one, whatever their random parts');
    assert.equal((await world.store.refreshTokens.find(timedSecretKey(second)))?.rotatedAt, null);
    assert.equal(await world.store.refreshTokens.find(hashSecret(second)), null, 'not under its bare hash');
  });

  it('refreshes for an API registered after the grant was first given, once the person has approved it since (RFC 8707 §2.2): the grant counts from its last approval', async () => {
    const mo = await world.addUser({ username: 'mo' });
    const { client: reader } = await world.addClient({
      client_name: 'Reader',
      redirect_uris: ['https://reader.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid offline_access',
    });
    const approval = { id: randomUUID(), userId: mo.id, clientId: reader.id, scope: ['openid', 'offline_access'], authTime: world.clock.now() };
    const grant = await world.store.grants.remember(approval, world.clock.now());
    world.clock.advance(1000);
    await addResource(world.manage, { identifier: 'https://reports.example', name: 'Reports', scopes: [{ name: 'reports:read', description: 'Read' }] });
    await updateClient(world.manage, reader.id, { scope: 'openid offline_access reports:read' });
    world.clock.advance(1000);
    const renewed = await world.store.grants.remember({ ...approval, scope: ['reports:read'] }, world.clock.now());
    assert.equal(renewed.id, grant.id, 'the same grant, grown');
    const token = await refreshTokenOf(grant.id, ['openid', 'offline_access', 'reports:read'], mo, reader);
    const refreshed = await refresh((await world.store.clients.get(reader.id))!, { refresh_token: token });
    assert.equal(decodeJwt(refreshed.access_token).aud, 'https://reports.example');
    assert.equal(refreshed.scope, 'openid offline_access reports:read');
  });

  it('gives an old refresh token nothing of an API registered again beyond what the person approved again (RFC 6749 §6: the grant holds what they approved)', async () => {
    const FILES = {
      identifier: 'https://files.example',
      name: 'Files',
      scopes: [
        { name: 'files:read', description: 'Read your files' },
        { name: 'files:purge', description: 'Delete your files' },
      ],
    };
    await addResource(world.manage, FILES);
    const scope = 'openid offline_access files:read files:purge';
    const { client: drive } = await world.addClient({
      client_name: 'Drive',
      redirect_uris: ['https://drive.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope,
    });
    const approval = { id: randomUUID(), userId: ada.id, clientId: drive.id, scope: scope.split(' '), authTime: world.clock.now() };
    const grant = await world.store.grants.remember(approval, world.clock.now());
    const token = await refreshTokenOf(grant.id, approval.scope, ada, drive);
    world.clock.advance(1000);
    // The operator removes the API, registers it again and gives the client both scopes back.
    await removeResource(world.manage, FILES.identifier);
    world.clock.advance(1000);
    await addResource(world.manage, FILES);
    await updateClient(world.manage, drive.id, { scope });
    world.clock.advance(1000);
    // The person approves the new API again, for files:read alone.
    const renewed = await world.store.grants.remember({ ...approval, scope: ['openid', 'offline_access', 'files:read'] }, world.clock.now());
    assert.deepEqual([...renewed.scope].sort(), ['files:read', 'offline_access', 'openid']);
    const client = (await world.store.clients.get(drive.id))!;
    assert.equal(await outcome(() => refresh(client, { refresh_token: token, scope: 'files:read files:purge' })), 'invalid_scope', 'asked for by name');
    const refreshed = await refresh(client, { refresh_token: token });
    assert.equal(decodeJwt(refreshed.access_token).aud, FILES.identifier);
    assert.equal(decodeJwt(refreshed.access_token)['scope'], 'openid offline_access files:read');
  });

  it('leaves out a scope the operator has taken from the client since, refuses it asked for by name (RFC 6749 §5.2 invalid_scope), and keeps it in the refresh token', async () => {
    await addResource(world.manage, {
      identifier: 'https://payments.example',
      name: 'Payments',
      scopes: [
        { name: 'payments:read', description: 'See your payments' },
        { name: 'payments:write', description: 'Pay' },
      ],
    });
    const scope = ['openid', 'email', 'offline_access', 'payments:read', 'payments:write'];
    const { client: shop } = await world.addClient({
      client_name: 'Shop',
      redirect_uris: ['https://shop.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: scope.join(' '),
    });
    const { token } = await granted(scope, ada, shop);
    // OpenID scopes are in a client's registration too (checkRequestedAccess): email goes as payments:write does.
    await updateClient(world.manage, shop.id, { scope: 'openid offline_access payments:read' });
    const narrowed = (await world.store.clients.get(shop.id))!;
    for (const asked of ['payments:write', 'payments:read payments:write', 'openid email'])
      assert.equal(await outcome(() => refresh(narrowed, { refresh_token: token, scope: asked })), 'invalid_scope', asked);
    const refreshed = await refresh(narrowed, { refresh_token: token });
    assert.equal(decodeJwt(refreshed.access_token).aud, 'https://payments.example');
    assert.equal(refreshed.scope, 'openid offline_access payments:read');
    assert.deepEqual(
      (await world.store.refreshTokens.find(timedSecretKey(refreshed.refresh_token!)))?.scope,
      scope,
      'RFC 6749 §6: the new refresh token keeps the scope granted',
    );
    // Given back, it counts again: the approval still holds it.
    await updateClient(world.manage, shop.id, { scope: scope.join(' ') });
    const again = await refresh((await world.store.clients.get(shop.id))!, { refresh_token: refreshed.refresh_token!, scope: 'payments:write' });
    assert.equal(again.scope, 'payments:write');
  });

  it('refuses with the error RFC 6749 §5.2 names, and leaves the token usable when the request was wrong', async () => {
    const { token } = await granted();
    const cases: [string, ClientRecord, Record<string, string>, string][] = [
      ['no refresh_token', app, {}, 'invalid_request'],
      ['an unknown token', app, { refresh_token: randomToken(32) }, 'invalid_grant'],
      ["another client's token", other, { refresh_token: token }, 'invalid_grant'],
      ['a scope never granted', app, { refresh_token: token, scope: 'openid email' }, 'invalid_scope'],
      ['a malformed scope', app, { refresh_token: token, scope: ' ' }, 'invalid_scope'],
      ['an API never granted', app, { refresh_token: token, resource: 'https://unknown.example' }, 'invalid_target'],
    ];
    for (const [what, client, params, expected] of cases) assert.equal(await outcome(() => refresh(client, params)), expected, what);
    assert.ok((await refresh(app, { refresh_token: token })).access_token, 'still usable after the refusals');
  });

  it('takes a used token again as reuse (RFC 9700 §4.14.2): the whole grant is revoked, its newest token with it', async () => {
    const { token, grantId } = await granted();
    const next = await refresh(app, { refresh_token: token });
    assert.equal(await outcome(() => refresh(app, { refresh_token: token })), 'invalid_grant');
    assert.notEqual((await world.store.grants.get(grantId))?.revokedAt, null, 'the grant is revoked');
    assert.equal(await outcome(() => refresh(app, { refresh_token: next.refresh_token! })), 'invalid_grant', 'the newest token is dead too');
    const events = (await world.store.events.list({ limit: 20 })).map((event) => event.type);
    assert.ok(events.includes('refresh.reuse_detected'), events.join(' '));
  });

  it('does not let another client end a grant by sending its used refresh token: unknown to that client, reuse only for its own', async () => {
    const { token, grantId } = await granted();
    const next = await refresh(app, { refresh_token: token });
    assert.equal(await outcome(() => refresh(other, { refresh_token: token })), 'invalid_grant');
    assert.equal((await world.store.grants.get(grantId))?.revokedAt, null, 'the grant stands');
    assert.ok((await refresh(app, { refresh_token: next.refresh_token! })).access_token, 'its own client refreshes on');
  });

  it('gives one rotation to two requests with the same token at once, and the other is reuse', async () => {
    const { token } = await granted();
    const results = await Promise.allSettled([refresh(app, { refresh_token: token }), refresh(app, { refresh_token: token })]);
    assert.equal(results.filter((result) => result.status === 'fulfilled').length, 1, JSON.stringify(results.map((result) => result.status)));
  });

  // The person's flag alone: flows/users.ts also revokes their grants when it disables them, in
  // the same transaction; this checks the flow's own check of the account, and its order.
  it('refuses the token of a person marked disabled without spending it: no rotation, no use recorded, so it works again once the mark is gone', async () => {
    const lin = await world.addUser({ username: 'lin' });
    const { token, grantId } = await granted(['openid', 'offline_access'], lin);
    await world.store.users.setDisabled(lin.id, true);
    assert.equal(await outcome(() => refresh(app, { refresh_token: token })), 'invalid_grant');
    assert.equal((await world.store.refreshTokens.find(hashSecret(token)))?.rotatedAt, null, 'not rotated');
    assert.equal((await world.store.grants.get(grantId))?.lastUsedAt ?? null, null, 'no use recorded');
    await world.store.users.setDisabled(lin.id, false);
    assert.ok((await refresh(app, { refresh_token: token })).refresh_token);
  });

  it('refuses an expired token, a revoked grant and a disabled person with invalid_grant', async () => {
    const expired = await granted();
    world.clock.advance(DAY + 1);
    assert.equal(await outcome(() => refresh(app, { refresh_token: expired.token })), 'invalid_grant', 'expired');
    const revoked = await granted();
    await world.store.grants.revoke(revoked.grantId, world.clock.now());
    assert.equal(await outcome(() => refresh(app, { refresh_token: revoked.token })), 'invalid_grant', 'revoked grant');
    const grace = await world.addUser({ username: 'grace' });
    const disabled = await granted(['openid'], grace);
    await world.store.users.setDisabled(grace.id, true);
    assert.equal(await outcome(() => refresh(app, { refresh_token: disabled.token })), 'invalid_grant', 'disabled person');
  });
});

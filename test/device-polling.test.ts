import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JSONWebKeySet } from 'jose';
import { ManualClock } from '../src/core/clock.ts';
import { normalizeUserCode } from '../src/flows/device/user-code.ts';
import { assertPollError, BrowserAt, DEVICE_GRANT, poll, startDevice, storesUnderTest } from './helpers/device.ts';
import { basic, postForm, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

const SECOND = 1000;

for (const store of storesUnderTest()) {
  describe(`polling the token endpoint for a device code (RFC 8628 §3.4-3.5), on ${store.name}`, { skip: store.skip }, () => {
    let clock: ManualClock;
    let server: TestServer;
    let client: TestClient;
    let user: TestUser;
    let drop: () => Promise<void>;

    before(async () => {
      const fresh = await store.fresh();
      drop = fresh.drop;
      clock = new ManualClock();
      ({ server, client, user } = await startWithApp({
        server: { clock, ...(fresh.database ? { database: fresh.database } : {}) },
        client: { name: 'Living Room TV' },
        user: { username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' },
      }));
    });
    after(async () => {
      await server?.close();
      await drop?.();
    });

    async function verifyTokens(body: Record<string, unknown>) {
      const jwks = createLocalJWKSet((await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as JSONWebKeySet);
      const options = { issuer: server.url, currentDate: new Date(clock.now()) };
      const idToken = await jwtVerify(body['id_token'] as string, jwks, { ...options, audience: client.clientId });
      const accessToken = await jwtVerify(body['access_token'] as string, jwks, { ...options, audience: server.url, typ: 'at+jwt' });
      return { id: idToken.payload, access: accessToken.payload };
    }

    it('answers authorization_pending while the user has not decided, and never slow_down to the first poll', async () => {
      const started = await startDevice(server, client);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
    });

    it('answers slow_down to a poll sooner than the interval, growing the interval by 5 s each time, and answers normally once the device waits', async () => {
      const started = await startDevice(server, client);
      const interval = async () => (await server.store.devices.findByUserCode(normalizeUserCode(started.user_code)!, clock.now()))!.interval;
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      clock.advance(1 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'slow_down');
      assert.equal(await interval(), 10);
      clock.advance(10 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      // Still at the old 5 s rhythm: too soon again, and it grows again.
      clock.advance(9 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'slow_down');
      clock.advance(14 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'slow_down');
      assert.equal(await interval(), 20);
      clock.advance(20 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      clock.advance(20 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      assert.equal(await interval(), 20, 'a device that honours the interval does not grow it');
    });

    it('answers access_denied once the user denies, at every later poll', async () => {
      const started = await startDevice(server, client);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      const page = await new BrowserAt(server.url).decide(started.user_code, user, 'deny');
      assert.equal(page.status, 200);
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'access_denied');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'access_denied');
    });

    it('answers expired_token ten minutes after the request, and not before, and records the expiry once however often it is polled', async () => {
      const expiries = async () => (await server.store.events.list({ clientId: client.clientId, type: 'device.expired', limit: 100 })).length;
      const before = await expiries();
      const started = await startDevice(server, client);
      clock.advance(600 * SECOND - 1);
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      clock.advance(1);
      assertPollError(await poll(server, client, started.device_code), 'expired_token');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'expired_token');
      // A device, or an attacker, polling on as fast as it can: no slow_down, and no more events.
      for (let i = 0; i < 5; i++) assertPollError(await poll(server, client, started.device_code), 'expired_token');
      assert.equal(await expiries(), before + 1);
    });

    it('answers expired_token to a code approved but not collected within ten minutes', async () => {
      const started = await startDevice(server, client);
      await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      clock.advance(600 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'expired_token');
    });

    it('issues tokens once after approval: an ID token without a nonce and an access token, then invalid_grant', async () => {
      const started = await startDevice(server, client, 'openid profile email');
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      const done = await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      assert.match(done.html, /Device approved/);
      clock.advance(5 * SECOND);
      const success = await poll(server, client, started.device_code);
      assert.equal(success.status, 200, JSON.stringify(success.body));
      assert.equal(success.headers.get('cache-control'), 'no-store');
      assert.equal(success.body['token_type'], 'Bearer');
      assert.equal(success.body['scope'], 'openid profile email');
      const { id, access } = await verifyTokens(success.body);
      assert.equal(id.sub, user.id);
      assert.equal(id.aud, client.clientId);
      // OIDC Core §5.4: with an access token issued, these are the UserInfo endpoint's.
      assert.equal(id['name'], undefined);
      assert.equal(id['email'], undefined);
      assert.equal(id['nonce'], undefined);
      assert.equal(typeof id['auth_time'], 'number');
      assert.equal(access['client_id'], client.clientId);
      assert.equal(access['scope'], 'openid profile email');

      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'invalid_grant');
    });

    it('issues no ID token when openid was not asked for', async () => {
      const started = await startDevice(server, client, 'profile');
      await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      const success = await poll(server, client, started.device_code);
      assert.equal(success.status, 200);
      assert.equal(success.body['id_token'], undefined);
      assert.equal(success.body['scope'], 'profile');
    });

    it('records the approval as a device grant with where and when the device asked', async () => {
      const started = await startDevice(server, client, 'openid', { 'user-agent': 'Kiosk/1.0' });
      await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      const success = await poll(server, client, started.device_code);
      const grant = await server.store.grants.get(decodeJwt(success.body['access_token'] as string)['gid'] as string);
      assert.ok(grant);
      assert.equal(grant.kind, DEVICE_GRANT);
      assert.equal(grant.userId, user.id);
      assert.deepEqual(grant.device, { ip: '127.0.0.1', userAgent: 'Kiosk/1.0', requestedAt: clock.now() });
    });

    it('gives tokens to exactly one of 20 concurrent polls of an approved code', async () => {
      const started = await startDevice(server, client);
      await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      const results = await Promise.all(Array.from({ length: 20 }, () => poll(server, client, started.device_code)));
      assert.equal(results.filter((result) => result.status === 200).length, 1);
      for (const result of results.filter((result) => result.status !== 200)) assertPollError(result, 'invalid_grant');
    });

    it('records one approval, and one active grant, from 20 concurrent approvals of one code', async () => {
      const started = await startDevice(server, client);
      const approver = await server.addUser({ username: 'double-clicker' });
      const phone = new BrowserAt(server.url);
      const page = await phone.reachApproval(started.user_code, approver);
      const results = await Promise.all(Array.from({ length: 20 }, () => phone.submit(page, '/device/approve', { decision: 'approve' })));
      assert.equal(results.filter((result) => /Device approved/.test(result.html)).length, 1);
      // Every try at a code is counted while it is in flight (so a burst of guesses cannot
      // outrun the limit), so some of a burst of 20 may be turned away by the limit instead.
      for (const result of results.filter((result) => !/Device approved/.test(result.html))) {
        assert.match(result.html, /This code has already been used|Too many wrong codes/);
      }
      // Right codes are given back: once the burst is over, nothing is held against the phone.
      assert.match((await phone.enterCode(started.user_code)).html, /This code has already been used/);
      // Each approval writes its grant before it tries the decision; those that lost revoke theirs.
      const grants = await server.store.grants.listForUser(approver.id);
      assert.equal(grants.length, 1, 'approvals that lost the decision leave no active grant');
      const tokens = await poll(server, client, started.device_code);
      assert.equal(decodeJwt(tokens.body['access_token'] as string)['gid'], grants[0]!.id);
    });

    it('refuses a device code polled by another client with invalid_grant, leaving the owner undisturbed', async () => {
      const other = await server.addClient({ name: 'Other App' });
      const started = await startDevice(server, client);
      assertPollError(await poll(server, other, started.device_code), 'invalid_grant');
      // The other client's poll was not recorded against the code: the owner's first poll is not "too soon".
      assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
      await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, other, started.device_code), 'invalid_grant');
      assert.equal((await poll(server, client, started.device_code)).status, 200);
    });

    it('refuses an unknown device_code with invalid_grant and a missing one with invalid_request', async () => {
      assertPollError(await poll(server, client, 'not-a-device-code'), 'invalid_grant');
      const missing = await postForm(`${server.url}/oauth/token`, { grant_type: DEVICE_GRANT }, { authorization: basic(client.clientId, client.clientSecret) });
      assertPollError(missing, 'invalid_request');
    });

    it('refuses polling without client authentication with invalid_client and 401', async () => {
      const started = await startDevice(server, client);
      const result = await postForm(`${server.url}/oauth/token`, { grant_type: DEVICE_GRANT, device_code: started.device_code });
      assert.equal(result.status, 401);
      assert.equal(result.body['error'], 'invalid_client');
    });

    it('refuses polling by a client not allowed the device grant with unauthorized_client', async () => {
      const browserOnly = await server.addClient({ grantTypes: ['authorization_code'] });
      assertPollError(await poll(server, browserOnly, 'anything'), 'unauthorized_client');
    });

    it('issues nothing for a user disabled after approving', async () => {
      const started = await startDevice(server, client);
      const victim = await server.addUser({ username: 'leaver' });
      await new BrowserAt(server.url).decide(started.user_code, victim, 'approve');
      await server.store.users.setDisabled(victim.id, true);
      assertPollError(await poll(server, client, started.device_code), 'invalid_grant');
      clock.advance(5 * SECOND);
      assertPollError(await poll(server, client, started.device_code), 'invalid_grant');
    });
  });
}

describe("the operator's interval and lifetime (TESSERA_DEVICE_POLL_INTERVAL, TESSERA_DEVICE_CODE_LIFETIME)", () => {
  let clock: ManualClock;
  let server: TestServer;
  let client: TestClient;

  before(async () => {
    clock = new ManualClock();
    ({ server, client } = await startWithApp({
      server: { clock, env: { TESSERA_DEVICE_POLL_INTERVAL: '2', TESSERA_DEVICE_CODE_LIFETIME: '120' } },
      client: { name: 'Living Room TV' },
    }));
  });
  after(() => server.close());

  it('tells the device both, holds it to that interval, and expires its code at that lifetime', async () => {
    const started = await startDevice(server, client);
    assert.deepEqual([started.interval, started.expires_in], [2, 120]);
    assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
    clock.advance(1 * SECOND);
    assertPollError(await poll(server, client, started.device_code), 'slow_down');
    clock.advance(7 * SECOND);
    assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
    clock.advance(120 * SECOND);
    assertPollError(await poll(server, client, started.device_code), 'expired_token');
  });
});

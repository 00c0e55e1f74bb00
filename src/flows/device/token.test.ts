/**
 * The device_code grant without HTTP (RFC 8628 §3.4, §3.5): a device authorization started
 * and decided through the flows the endpoints call, then each poll's answer and what it left
 * in the store, on a clock the test moves. test/device-polling.test.ts drives the same rules
 * through the token endpoint and real clients.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { SessionRecord } from '../../store/sessions.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { deviceClients, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { updateClient } from '../manage/clients.ts';
import { startDeviceAuthorization } from './authorization.ts';
import { deviceCodeKey } from './device-code.ts';
import { deviceCodeGrant } from './token.ts';
import { decideDeviceRequest } from './verification.ts';

const SECOND = 1000;
const DEVICE = { ip: '192.0.2.10', userAgent: 'Living-room TV' };

describe('the device_code grant (RFC 8628 §3.4, §3.5)', () => {
  let world: FlowWorld;
  let tv: ClientRecord;
  let other: ClientRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    [tv, other] = await deviceClients(world);
    ada = await world.addUser({ username: 'ada' });
  });
  after(() => world.close());

  const poll = (deviceCode: string, client = tv, params: Record<string, string> = {}) =>
    deviceCodeGrant.handle(world.deps, client, { device_code: deviceCode, ...params }, null);

  /** A device authorization started now, its device code and user code. */
  async function started(dpopJkt: string | null = null): Promise<{ deviceCode: string; userCode: string }> {
    const response = await startDeviceAuthorization(world.deps, tv, { scope: 'openid profile' }, { ...DEVICE, dpopJkt });
    return { deviceCode: response.device_code, userCode: response.user_code };
  }

  function session(user = ada): SessionRecord {
    const now = world.clock.now();
    return {
      idHash: `h-${user.id}`,
      sid: `s-${user.id}`,
      userId: user.id,
      authTime: now,
      createdAt: now,
      expiresAt: now + 86_400_000,
      amr: ['pwd'],
      ip: '192.0.2.20',
      userAgent: null,
    };
  }

  /** The person's decision on the approval page, from the browser on their phone. */
  async function decide(userCode: string, approve: boolean, user = ada): Promise<void> {
    const attempt = { input: userCode, ip: '192.0.2.20', browser: 'phone' };
    const result = await decideDeviceRequest(world.deps, attempt, approve ? { approve: true, session: session(user) } : { approve: false, userId: user.id });
    assert.equal(result.kind, 'done', `the decision was recorded (${result.kind})`);
  }

  /** Waits the device's interval as the store has it now, as a well-behaved device does. */
  async function waitInterval(deviceCode: string): Promise<void> {
    const record = await world.store.devices.find(deviceCodeKey(deviceCode));
    world.clock.advance(record!.interval * SECOND);
  }

  it('answers authorization_pending to each poll a full interval apart, until the person decides', async () => {
    const { deviceCode } = await started();
    for (let polls = 0; polls < 3; polls++) {
      assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending', `poll ${polls + 1}`);
      await waitInterval(deviceCode);
    }
    const record = await world.store.devices.find(deviceCodeKey(deviceCode));
    assert.equal(record?.interval, world.config.device.interval, 'polls on time never slow the device down');
  });

  it('answers slow_down to a poll sooner than the interval and adds 5 seconds to it for every later poll (§3.5)', async () => {
    const { deviceCode } = await started();
    const interval = world.config.device.interval;
    assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending');
    world.clock.advance(interval * SECOND - 1);
    assert.equal(await outcome(() => poll(deviceCode)), 'slow_down', 'a millisecond early');
    assert.equal((await world.store.devices.find(deviceCodeKey(deviceCode)))?.interval, interval + 5);
    // The old interval is now too soon: the device must wait the new one.
    world.clock.advance(interval * SECOND);
    assert.equal(await outcome(() => poll(deviceCode)), 'slow_down', 'the old interval after a slow_down');
    assert.equal((await world.store.devices.find(deviceCodeKey(deviceCode)))?.interval, interval + 10);
    world.clock.advance((interval + 10) * SECOND);
    assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending', 'the grown interval');
  });

  it('issues tokens for the person who approved, without a nonce, to the first poll after the approval only', async () => {
    const { deviceCode, userCode } = await started();
    await decide(userCode, true);
    const response = await poll(deviceCode);
    assert.equal(response.token_type, 'Bearer');
    assert.equal(response.scope, 'openid profile');
    const idToken = decodeJwt(response.id_token!);
    assert.equal(idToken.sub, ada.id);
    assert.equal(idToken.aud, tv.id);
    assert.equal(idToken['nonce'], undefined, 'the device flow has no authorization request to carry a nonce');
    await waitInterval(deviceCode);
    assert.equal(await outcome(() => poll(deviceCode)), 'invalid_grant', 'the device code is spent');
    const events = (await world.store.events.list({ limit: 20 })).map((event) => event.type);
    assert.ok(events.includes('device.approved') && events.includes('device.consumed'), events.join(' '));
  });

  it('leaves out of the tokens a scope the operator took from the client after the person approved it', async () => {
    const { client: radio } = await world.addClient({ client_name: 'Bedroom radio', grant_types: ['device_code'], scope: 'openid profile' });
    const response = await startDeviceAuthorization(world.deps, radio, { scope: 'openid profile' }, { ...DEVICE, dpopJkt: null });
    await decide(response.user_code, true);
    await updateClient(world.manage, radio.id, { scope: 'openid' });
    const narrowed = (await world.store.clients.get(radio.id))!;
    const tokens = await poll(response.device_code, narrowed);
    assert.equal(tokens.scope, 'openid');
    assert.equal(decodeJwt(tokens.access_token)['scope'], 'openid');
  });

  it('gives the tokens to one of several polls at once, and a slow_down or invalid_grant to the rest', async () => {
    const { deviceCode, userCode } = await started();
    await decide(userCode, true);
    const results = await Promise.all(Array.from({ length: 5 }, () => outcome(() => poll(deviceCode))));
    assert.equal(results.filter((result) => result === 'ok').length, 1, results.join(' '));
  });

  it('answers access_denied once the person denies, and to every later poll', async () => {
    const { deviceCode, userCode } = await started();
    assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending');
    await decide(userCode, false);
    for (let polls = 0; polls < 2; polls++) {
      await waitInterval(deviceCode);
      assert.equal(await outcome(() => poll(deviceCode)), 'access_denied', `poll ${polls + 1} after the denial`);
    }
  });

  it('answers expired_token after the code lifetime, approved or not, and records the expiry once', async () => {
    const pending = await started();
    const approved = await started();
    await decide(approved.userCode, true);
    world.clock.advance(world.config.device.codeLifetime * SECOND);
    const expiries = async () => (await world.store.events.list({ limit: 100 })).filter((event) => event.type === 'device.expired').length;
    const before = await expiries();
    for (const { deviceCode } of [pending, approved]) {
      assert.equal(await outcome(() => poll(deviceCode)), 'expired_token');
      await waitInterval(deviceCode);
      assert.equal(await outcome(() => poll(deviceCode)), 'expired_token', 'and again');
    }
    assert.equal(await expiries(), before + 1, 'the pending code, at its first poll after expiry; an approved one is not counted as abandoned');
  });

  it('refuses what is not a live device code of this client with the error RFC 6749 §5.2 names, and leaves the code pending', async () => {
    const { deviceCode } = await started();
    const cases: [string, ClientRecord, Record<string, string>, string][] = [
      ['no device_code', tv, {}, 'invalid_request'],
      ['an unknown code', tv, { device_code: `${deviceCode.slice(0, -1)}${deviceCode.endsWith('A') ? 'B' : 'A'}` }, 'invalid_grant'],
      ['the code hashed as the store keeps it', tv, { device_code: deviceCodeKey(deviceCode) }, 'invalid_grant'],
      ["another client's code", other, { device_code: deviceCode }, 'invalid_grant'],
      ['a malformed resource', tv, { device_code: deviceCode, resource: 'not a URI' }, 'invalid_target'],
      ['a resource with a fragment', tv, { device_code: deviceCode, resource: 'https://api.example/#x' }, 'invalid_target'],
    ];
    for (const [what, client, params, expected] of cases) {
      assert.equal(await outcome(() => deviceCodeGrant.handle(world.deps, client, params, null)), expected, what);
    }
    const record = await world.store.devices.find(deviceCodeKey(deviceCode));
    assert.equal(record?.lastPolledAt, null, 'none of them counted as a poll of the code');
    assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending');
  });

  it('answers invalid_dpop_proof to a poll without the key of a code bound to one (RFC 9449), which neither spends nor slows it', async () => {
    const { deviceCode, userCode } = await started('thumbprint-of-the-tv-key');
    await decide(userCode, true);
    for (let polls = 0; polls < 3; polls++) assert.equal(await outcome(() => poll(deviceCode)), 'invalid_dpop_proof', `poll ${polls + 1}`);
    const record = await world.store.devices.find(deviceCodeKey(deviceCode));
    assert.equal(record?.status, 'approved', 'still waiting for the poll with the key');
    assert.equal(record?.interval, world.config.device.interval);
  });

  it('answers invalid_grant, not invalid_dpop_proof, to another client polling a device code bound to a DPoP key: the code is unknown to it', async () => {
    const { deviceCode, userCode } = await started('thumbprint-of-the-tv-key');
    await decide(userCode, true);
    assert.equal(await outcome(() => poll(deviceCode, other)), 'invalid_grant', 'without a proof');
    assert.equal(
      await outcome(() => deviceCodeGrant.handle(world.deps, other, { device_code: deviceCode }, { jkt: 'thumbprint-of-another-key' })),
      'invalid_grant',
      'with a proof of another key',
    );
    assert.equal((await world.store.devices.find(deviceCodeKey(deviceCode)))?.status, 'approved', 'left to its own client');
  });

  it('refuses the tokens with invalid_grant when the person is disabled or the grant revoked after the approval', async () => {
    const grace = await world.addUser({ username: 'grace' });
    const disabled = await started();
    await decide(disabled.userCode, true, grace);
    await world.store.users.setDisabled(grace.id, true);
    assert.equal(await outcome(() => poll(disabled.deviceCode)), 'invalid_grant', 'a disabled person');

    const revoked = await started();
    await decide(revoked.userCode, true);
    const grantId = (await world.store.devices.find(deviceCodeKey(revoked.deviceCode)))!.grantId!;
    await world.store.grants.revoke(grantId, world.clock.now());
    assert.equal(await outcome(() => poll(revoked.deviceCode)), 'invalid_grant', 'a revoked grant');
  });
});

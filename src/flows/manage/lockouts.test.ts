/**
 * Lockouts without HTTP: `listLockouts` and `clearLockouts`, the operations behind `tessera
 * user unlock`, GET and DELETE /admin/lockouts and the console. The guessing limits' counters,
 * counted by the sign-in flow itself or written under the keys the counting flows own
 * (flows/sign-in.ts SIGN_IN_KEYS, flows/device/verification.ts USER_CODE_KEYS), read back by
 * account and by address, lifted, and the `lockout.cleared` event each lifting leaves.
 * test/lockouts.test.ts follows a lockout through the sign-in page, and test/admin-api.test.ts
 * the API's routes.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { UserRecord } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { USER_CODE_KEYS } from '../device/verification.ts';
import { ONE_TIME_CODE_LIMIT, SIGN_IN_KEYS, signIn } from '../sign-in.ts';
import type { ManageDeps } from './deps.ts';
import { clearLockouts, listLockouts, lockoutJson, MAX_LOCKOUTS } from './lockouts.ts';

const PER_USER_ADDRESS = 3;
const PER_ADDRESS = 50;
const PER_BROWSER = 5;
const WINDOW_SECONDS = 900;
const GUESSER = '203.0.113.66';
const OFFICE = '198.51.100.7';
const PASSWORD = 'correct horse battery';

describe('lockouts (flows/manage/lockouts.ts)', () => {
  let world: FlowWorld;
  let ada: UserRecord;
  let operator: UserRecord;

  before(async () => {
    world = await flowWorld({
      TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS: String(PER_USER_ADDRESS),
      TESSERA_SIGN_IN_FAILURES_PER_ADDRESS: String(PER_ADDRESS),
      TESSERA_SIGN_IN_WINDOW: String(WINDOW_SECONDS),
      TESSERA_USER_CODE_FAILURES_PER_BROWSER: String(PER_BROWSER),
    });
    ada = await world.addUser({ username: 'ada' });
    operator = await world.addUser({ username: 'root', role: 'admin' });
  });
  after(() => world.close());
  // Every window of the test before is closed: each test starts with no counter open.
  beforeEach(() => world.clock.advance(86_400_000));

  /** Counts `times` failures under `key`, as the flow that owns the key would, in a window of `seconds`. */
  async function fail(key: string, times = 1, seconds = WINDOW_SECONDS): Promise<void> {
    for (let i = 0; i < times; i++) await world.store.rateLimits.hit(key, seconds * 1000, world.clock.now());
  }

  /** Wrong passwords for `username` from `ip`, through the sign-in flow: each is counted under its three keys. */
  async function guess(username: string, ip: string, times: number): Promise<void> {
    for (let i = 0; i < times; i++) await signIn(world.deps, { username, password: `guess ${i}`, ip });
  }

  const clearedEvents = async () => (await world.store.events.list({ type: 'lockout.cleared', limit: 100 })).length;

  it("lists a person locked out from a guesser's address, by account and by address, and lifting it by username lets the right password in", async () => {
    await guess('ada', GUESSER, PER_USER_ADDRESS);
    assert.equal((await signIn(world.deps, { username: 'ada', password: PASSWORD, ip: GUESSER })).kind, 'limited', 'locked out from that address');
    const locked = await listLockouts(world.manage, { username: 'ada', lockedOnly: true });
    assert.deepEqual(
      locked.map((entry) => [entry.key, entry.kind, entry.scope, entry.username, entry.ip, entry.failures, entry.limit, entry.locked]),
      [[`${SIGN_IN_KEYS.userAddress}${GUESSER} ada`, 'sign-in', 'user-address', 'ada', GUESSER, PER_USER_ADDRESS, PER_USER_ADDRESS, true]],
    );
    assert.equal(locked[0]?.until, world.clock.now() + WINDOW_SECONDS * 1000, 'until the window the first failure opened ends');
    const all = await listLockouts(world.manage, { username: ' ADA ' });
    assert.deepEqual(
      all.map((entry) => [entry.scope, entry.locked, entry.limit]).sort(),
      [
        ['user', false, null],
        ['user-address', true, PER_USER_ADDRESS],
      ],
      'the username as typed, any case; the count per account only slows, it never refuses',
    );
    const byAddress = await listLockouts(world.manage, { ip: GUESSER });
    assert.deepEqual(byAddress.map((entry) => [entry.scope, entry.username, entry.failures]).sort(), [
      ['address', null, PER_USER_ADDRESS],
      ['user-address', 'ada', PER_USER_ADDRESS],
    ]);

    const cleared = await clearLockouts(world.manage, { username: 'Ada' });
    assert.deepEqual(cleared.map((entry) => entry.scope).sort(), ['user', 'user-address'], "the account's counters, not the address's");
    assert.deepEqual(await listLockouts(world.manage, { username: 'ada' }), []);
    assert.equal((await listLockouts(world.manage, { ip: GUESSER })).length, 1, 'the address count stays');
    assert.equal((await signIn(world.deps, { username: 'ada', password: PASSWORD, ip: GUESSER })).kind, 'signed-in', 'the next attempt starts afresh');
    const [event] = await world.store.events.list({ type: 'lockout.cleared', limit: 1 });
    assert.equal(event?.username, 'ada');
    assert.deepEqual(event?.detail, { counters: 2, by: 'operator' });
  });

  it('names each kind of counter: its account and address read from its key, its limit from the settings', async () => {
    await fail(`${SIGN_IN_KEYS.userAddress}${OFFICE} grace hopper`);
    await fail(`${SIGN_IN_KEYS.oneTimeCode}grace hopper`, ONE_TIME_CODE_LIMIT.perUser);
    await fail(`${USER_CODE_KEYS.browser}a-browser-token`, PER_BROWSER, 600);
    await fail(`${USER_CODE_KEYS.address}${OFFICE}`, 2, 600);
    await fail(`${USER_CODE_KEYS.network}198.51.100.0/24`, 2, 600);
    await fail(`${USER_CODE_KEYS.largeNetwork}198.51.0.0/16`, 2, 600);
    // Counters that are not lockouts: an authenticator app's setup, a good record, the server's budget.
    await fail(`${SIGN_IN_KEYS.enrolment}sub-grace`, 20);
    await fail(`sign-in:good-ip:${OFFICE} grace hopper`);
    await fail(USER_CODE_KEYS.all, 20, 60);
    const { userCode } = world.config;
    const shown = (await listLockouts(world.manage)).map((entry) => [entry.kind, entry.scope, entry.username, entry.ip, entry.limit, entry.locked]);
    assert.deepEqual(
      shown.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        ['one-time-code', 'user', 'grace hopper', null, ONE_TIME_CODE_LIMIT.perUser, true],
        ['sign-in', 'user-address', 'grace hopper', OFFICE, PER_USER_ADDRESS, false],
        ['user-code', 'address', null, OFFICE, userCode.perAddress, false],
        ['user-code', 'browser', null, null, PER_BROWSER, true],
        ['user-code', 'network', null, '198.51.0.0/16', userCode.perLargeNetwork, false],
        ['user-code', 'network', null, '198.51.100.0/24', userCode.perNetwork, false],
      ],
      'a username with a space is read whole; the browser is not shown',
    );
  });

  it('lists only the windows open now, the latest-ending first, at most the limit asked, locked ones only when asked', async () => {
    await fail(`${SIGN_IN_KEYS.address}192.0.2.1`, PER_ADDRESS, 60);
    await fail(`${SIGN_IN_KEYS.address}192.0.2.2`, 1, 120);
    await fail(`${SIGN_IN_KEYS.address}192.0.2.3`, 1, 180);
    assert.deepEqual(
      (await listLockouts(world.manage)).map((entry) => entry.ip),
      ['192.0.2.3', '192.0.2.2', '192.0.2.1'],
    );
    assert.deepEqual(
      (await listLockouts(world.manage, { limit: 2 })).map((entry) => entry.ip),
      ['192.0.2.3', '192.0.2.2'],
    );
    assert.deepEqual(
      (await listLockouts(world.manage, { lockedOnly: true })).map((entry) => entry.ip),
      ['192.0.2.1'],
    );
    assert.deepEqual(
      (await listLockouts(world.manage, { ip: '192.0.2.2' })).map((entry) => entry.key),
      [`${SIGN_IN_KEYS.address}192.0.2.2`],
    );
    world.clock.advance(60_000);
    assert.deepEqual(
      (await listLockouts(world.manage)).map((entry) => entry.ip),
      ['192.0.2.3', '192.0.2.2'],
      'a window that has ended is no lockout',
    );
    const json = lockoutJson((await listLockouts(world.manage, { limit: 1 }))[0]!);
    assert.deepEqual(Object.keys(json), ['key', 'kind', 'scope', 'username', 'ip', 'failures', 'limit', 'locked', 'until']);
    assert.match(String(json['until']), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('refuses a limit that is not a whole number from 1 to MAX_LOCKOUTS', async () => {
    const cases: [string, number, string][] = [
      ['none', 0, 'invalid:limit'],
      ['one', 1, 'ok'],
      ['the most', MAX_LOCKOUTS, 'ok'],
      ['one past the most', MAX_LOCKOUTS + 1, 'invalid:limit'],
      ['a fraction', 1.5, 'invalid:limit'],
      ['negative', -1, 'invalid:limit'],
      ['not a number', Number.NaN, 'invalid:limit'],
    ];
    for (const [what, limit, expected] of cases) assert.equal(await outcome(() => listLockouts(world.manage, { limit })), expected, what);
  });

  it('lifts the lockouts of an address, or one counter by its key, and leaves the others', async () => {
    await guess('ada', OFFICE, 2);
    await guess('grace', OFFICE, 2);
    await guess('ada', GUESSER, 1);
    const cleared = await clearLockouts(world.manage, { ip: OFFICE });
    assert.deepEqual(cleared.map((entry) => entry.key).sort(), [
      `${SIGN_IN_KEYS.address}${OFFICE}`,
      `${SIGN_IN_KEYS.userAddress}${OFFICE} ada`,
      `${SIGN_IN_KEYS.userAddress}${OFFICE} grace`,
    ]);
    const [event] = await world.store.events.list({ type: 'lockout.cleared', limit: 1 });
    assert.equal(event?.username, null);
    assert.deepEqual(event?.detail, { ip: OFFICE, counters: 3, by: 'operator' });
    assert.deepEqual(
      (await listLockouts(world.manage)).map((entry) => entry.key).sort(),
      [`${SIGN_IN_KEYS.address}${GUESSER}`, `${SIGN_IN_KEYS.userAddress}${GUESSER} ada`, `${SIGN_IN_KEYS.user}ada`, `${SIGN_IN_KEYS.user}grace`],
      "the accounts' counters and the other address's stay",
    );

    const key = `${SIGN_IN_KEYS.userAddress}${GUESSER} ada`;
    assert.deepEqual(
      (await clearLockouts(world.manage, { key })).map((entry) => entry.key),
      [key],
    );
    assert.equal((await listLockouts(world.manage)).length, 3);
    const both = await clearLockouts(world.manage, { username: 'grace', ip: GUESSER });
    assert.deepEqual(both, [], 'given both, only counters that match both');
  });

  it("finds and lifts the counters of an IPv6 address's /64 by any of its addresses, the one counted", async () => {
    await guess('ada', '2001:db8:1:2::1', 1);
    await guess('ada', '2001:db8:1:2::2', 1);
    const network = '2001:db8:1:2::/64';
    const listed = await listLockouts(world.manage, { ip: '2001:db8:1:2::2' });
    assert.deepEqual(
      listed.map(({ key, ip, failures }) => ({ key, ip, failures })).sort((a, b) => a.key.localeCompare(b.key)),
      [
        { key: `${SIGN_IN_KEYS.address}${network}`, ip: network, failures: 2 },
        { key: `${SIGN_IN_KEYS.userAddress}${network} ada`, ip: network, failures: 2 },
      ],
    );
    assert.deepEqual((await listLockouts(world.manage, { ip: network })).map((entry) => entry.key).sort(), listed.map((entry) => entry.key).sort());
    assert.equal((await clearLockouts(world.manage, { ip: '2001:db8:1:2::99' })).length, 2, 'the address a person reports, whichever of the /64');
  });

  it('refuses to lift without a target, and lifting nothing records nothing', async () => {
    assert.equal(await outcome(() => clearLockouts(world.manage, {})), 'invalid:username');
    const before = await clearedEvents();
    assert.deepEqual(await clearLockouts(world.manage, { username: 'nobody' }), []);
    assert.deepEqual(await clearLockouts(world.manage, { key: `${SIGN_IN_KEYS.address}192.0.2.99` }), []);
    assert.equal(await clearedEvents(), before, 'no event for nothing cleared');
  });

  it("lifts a console operator's lockout only for a caller holding every scope of their role, and lifts a person's for one that manages users", async () => {
    await guess(operator.username, GUESSER, PER_USER_ADDRESS);
    await guess(ada.username, GUESSER, PER_USER_ADDRESS);
    const support: ManageDeps = { ...world.manage, caller: { scopes: ['admin:users'] } };
    const before = await clearedEvents();
    assert.equal(
      await outcome(() => clearLockouts(support, { username: 'ROOT' })),
      'forbidden',
      'a narrower caller would let the password of an admin be guessed again',
    );
    assert.equal(await clearedEvents(), before, 'nothing recorded');
    const left = await listLockouts(world.manage, { username: operator.username, lockedOnly: true });
    assert.equal(left.length, 1, 'the lockout stands');
    assert.equal(await outcome(() => clearLockouts(support, { ip: GUESSER })), 'forbidden', "nor by the address the admin's counters share");
    assert.equal(await outcome(() => clearLockouts(support, { key: left[0]!.key })), 'forbidden', "nor by the key of the admin's counter");
    assert.equal(await clearedEvents(), before, 'nothing recorded');
    assert.equal((await listLockouts(world.manage, { username: operator.username, lockedOnly: true })).length, 1, 'the lockout still stands');
    assert.equal((await clearLockouts(support, { username: ada.username })).length, 2);
    assert.equal((await clearLockouts(world.manage, { username: operator.username })).length, 2, 'the owner may');
  });
});

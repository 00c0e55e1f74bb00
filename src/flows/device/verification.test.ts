/**
 * The person's side of the device flow without HTTP (RFC 8628 §3.3): a user code typed on a
 * second screen found (flows/device/verification.ts `findDeviceRequest`), then approved or
 * denied (`decideDeviceRequest`); the user code's alphabet and normalisation
 * (./user-code.ts, RFC 8628 §6.1) and the networks the proximity check and the guessing
 * limits compare (./proximity.ts, RFC 8628 §5.4). Wrong codes are counted per browser,
 * address, network and larger network, and across the server (RFC 8628 §5.1), all on a
 * clock the test moves. ./device.test.ts has the plain formats, ./token.test.ts the polling
 * side; test/device-verification.test.ts and test/device-browser.test.ts drive the pages
 * through HTTP, test/approval-transactions.test.ts a decision whose writes fail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import type { SessionRecord } from '../../store/sessions.ts';
import type { ClientRecord, DeviceAuthorizationRecord, UserRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { FlowDeps } from '../types.ts';
import { addOrganization, setOrganizationMember } from '../manage/organizations.ts';
import { startDeviceAuthorization } from './authorization.ts';
import { networkOf } from '../../core/networks.ts';
import { sameNetwork } from './proximity.ts';
import { formatUserCode, generateUserCode, normalizeUserCode, USER_CODE_ALPHABET, USER_CODE_LENGTH } from './user-code.ts';
import {
  decideDeviceRequest,
  findDeviceRequest,
  USER_CODE_KEYS,
  type CodeAttempt,
  type CodeLookup,
  type Decision,
  type DecisionResult,
  type UserCodeAlert,
} from './verification.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
/** Well formed, and no request's (one in 2.56 × 10^10 it is). */
const WRONG = 'BBBB-BBBB';
const DEVICE = { ip: '192.0.2.10', userAgent: 'Living-room TV' };

/** What a lookup came to, in a word, with the lock's scope: `pending`, `locked:browser`, … */
function kindOf(result: CodeLookup | DecisionResult): string {
  return result.kind === 'locked' ? `locked:${result.scope}` : result.kind;
}

describe('user codes (RFC 8628 §6.1)', () => {
  it('draws every one of its 20 consonants at every position: 20^8 codes, about 34.5 bits', () => {
    assert.equal(new Set(USER_CODE_ALPHABET).size, 20, 'no character twice, or some codes would be likelier');
    assert.equal(USER_CODE_LENGTH, 8);
    // RFC 8628 §6.1: "a user code of 8 characters ... of 20 possible characters ... 34.5 bits of entropy".
    assert.ok(Math.log2(USER_CODE_ALPHABET.length ** USER_CODE_LENGTH) > 34.5);
    const seen = Array.from({ length: USER_CODE_LENGTH }, () => new Set<string>());
    for (let i = 0; i < 1500; i++) for (const [position, character] of [...generateUserCode()].entries()) seen[position]!.add(character);
    for (const [position, characters] of seen.entries()) assert.equal(characters.size, 20, `position ${position}`);
  });

  it('gives back the stored form of a shown code, whatever the separators and case the person typed', () => {
    const code = generateUserCode();
    for (const typed of [formatUserCode(code), formatUserCode(code).toLowerCase(), `${code.slice(0, 4)} - ${code.slice(4).toLowerCase()}`, `\n${code}\u00a0`]) {
      assert.equal(normalizeUserCode(typed), code, JSON.stringify(typed));
    }
  });

  it('reads at most 64 characters, separators included, and refuses separators it does not know', () => {
    assert.equal(normalizeUserCode(`WDJB-MJHT${' '.repeat(55)}`), 'WDJBMJHT', '64 characters');
    assert.equal(normalizeUserCode(`WDJB-MJHT${' '.repeat(56)}`), null, '65 characters');
    for (const typed of ['WDJB.MJHT', 'WDJB–MJHT', 'WDJB+MJHT', 'WDJB/MJHT']) assert.equal(normalizeUserCode(typed), null, typed);
  });
});

describe('the networks of the proximity check and the guessing limits (RFC 8628 §5.4)', () => {
  it('puts addresses in their larger network: an IPv4 /16, an IPv6 /48, an IPv4-mapped address with its IPv4 one', () => {
    assert.equal(networkOf('203.0.113.77', 'large'), '203.0.0.0/16');
    assert.equal(networkOf('::ffff:203.0.113.9', 'large'), '203.0.0.0/16');
    assert.equal(networkOf('2001:db8:a:b::1', 'large'), '2001:db8:a::/48');
    assert.equal(networkOf('2001:db8:a:ffff:1:2:3:4', 'large'), '2001:db8:a::/48');
    assert.notEqual(networkOf('2001:db8:a::1', 'large'), networkOf('2001:db8:b::1', 'large'));
  });

  it('reads an address however it is written: spaces around it, a zone, upper case, a mapped address in hex, an IPv4 tail', () => {
    const cases: [string, string][] = [
      [' 203.0.113.77 ', '203.0.113.0/24'],
      ['FE80::1%eth0', 'fe80:0:0:0::/64'],
      // A zone may hold colons, even `::` (node:net takes them): it is no part of the address.
      ['2001:db8:a:b:1:2:3:4%x::y', '2001:db8:a:b::/64'],
      ['::1%1:2:3:4:5:6:7:8:9', '0:0:0:0::/64'],
      ['2001:DB8:A:B:0:0:0:1', '2001:db8:a:b::/64'],
      ['::ffff:cb00:7109', '203.0.113.0/24'],
      ['::FFFF:CB00:7109', '203.0.113.0/24'],
      ['2001:db8:a:b::192.0.2.1', '2001:db8:a:b::/64'],
      ['2001:db8:a:b:1:2:3:4', '2001:db8:a:b::/64'],
    ];
    for (const [address, network] of cases) assert.equal(networkOf(address), network, address);
  });

  it('takes only ::ffff:0:0/96 for IPv4: a NAT64 address or one with a prefix before ffff is an IPv6 network of its own', () => {
    assert.equal(networkOf('64:ff9b::203.0.113.9'), '64:ff9b:0:0::/64');
    assert.equal(networkOf('1::ffff:203.0.113.9'), '1:0:0:0::/64');
    assert.ok(!sameNetwork('64:ff9b::203.0.113.9', '203.0.113.9'));
  });

  it('never calls two addresses the same network when either is not an address, or their networks differ', () => {
    const cases: [string, string, boolean][] = [
      ['203.0.113.1', '203.0.113.254', true],
      ['203.0.113.1', '203.0.112.1', false],
      ['2001:db8:a:b::1', '2001:db8:a:b:1::1', true],
      ['2001:db8:a:b::1', '2001:db8:a:c::1', false],
      ['203.0.113.1', '2001:db8:a:b::1', false],
      ['203.0.113.1', 'not an address', false],
      ['', '', false],
      ['203.0.113', '203.0.113', false],
    ];
    for (const [a, b, same] of cases) assert.equal(sameNetwork(a, b), same, `${a} / ${b}`);
    assert.equal(networkOf('203.0.113', 'large'), null);
  });
});

/** A world, its device client, and the helpers that start requests and type codes in it. */
async function deviceWorld(env: Readonly<Record<string, string>> = {}) {
  const world = await flowWorld(env);
  const device = { grant_types: [GRANT_DEVICE_CODE], scope: 'openid profile organization' };
  const { client: tv } = await world.addClient({ client_name: 'Living-room TV', ...device });
  let places = 0;
  return {
    world,
    tv,
    /** A device request started now: its user code as the device shows it. */
    async started(scope = 'openid profile', client: ClientRecord = tv): Promise<string> {
      return (await startDeviceAuthorization(world.deps, client, { scope }, DEVICE)).user_code;
    },
    /** A fresh IPv4 /16 of its own, so that no test's wrong codes count against another's. */
    place(): string {
      places += 1;
      return `10.${places}`;
    },
    /** A person typing `input` in the browser `browser` at `ip`. */
    attempt(input: string, ip: string, browser: string | null, goodRecord?: () => Promise<boolean>): CodeAttempt {
      return { input, ip, browser, ...(goodRecord ? { goodRecord } : {}) };
    },
    /** The live request a code names, as the store has it. */
    async record(userCode: string): Promise<DeviceAuthorizationRecord | null> {
      return world.store.devices.findByUserCode(normalizeUserCode(userCode)!, world.clock.now());
    },
    /** The wrong codes counted now under a key. */
    async counted(key: string): Promise<number> {
      return (await world.store.rateLimits.window(key, world.clock.now()))?.hits ?? 0;
    },
  };
}

// One world for the flows below (a world takes a while to make): each test types its codes
// from a network, and in browsers, of its own, and the limits a test needs smaller are in its deps.
let w: Awaited<ReturnType<typeof deviceWorld>>;
let ada: UserRecord;
let grace: UserRecord;

before(async () => {
  w = await deviceWorld();
  ada = await w.world.addUser({ username: 'ada' });
  grace = await w.world.addUser({ username: 'grace' });
});
after(() => w.world.close());

/** The world's deps with other wrong-code settings (`config.userCode`), as TESSERA_USER_CODE_* would make them. */
function withUserCode(settings: Partial<FlowWorld['config']['userCode']>, extra: Partial<FlowDeps> = {}): FlowDeps {
  const { config } = w.world;
  return { ...w.world.deps, config: { ...config, userCode: { ...config.userCode, ...settings } }, ...extra };
}

describe('finding a device request by its user code (RFC 8628 §3.3)', () => {
  it('finds the request whatever the case and separators typed, with its client and where the device asked from, and never counts a right code', async () => {
    const shown = await w.started();
    const ip = `${w.place()}.1.1`;
    const typings = [shown, shown.toLowerCase(), shown.replace('-', ''), ` ${shown.replace('-', ' ')} `, shown.split('').join(' ')];
    // More right codes than the browser's allowance of wrong ones.
    for (const typed of [...typings, ...typings]) {
      const found = await findDeviceRequest(w.world.deps, w.attempt(typed, ip, 'phone'));
      assert.equal(found.kind, 'pending', typed);
      if (found.kind !== 'pending') continue;
      assert.equal(found.record.userCode, normalizeUserCode(shown));
      assert.equal(found.client.id, w.tv.id);
      // RFC 8628 §5.4: the approval page shows where the device asked from, and warns unless it is the person's network.
      assert.equal(found.record.requestIp, DEVICE.ip);
      assert.equal(found.record.requestUserAgent, DEVICE.userAgent);
      assert.ok(!sameNetwork(found.record.requestIp, ip), 'a phone elsewhere: the page warns');
      assert.ok(sameNetwork(found.record.requestIp, '192.0.2.200'), 'a phone beside the TV: no warning');
    }
    assert.equal(await w.counted(`${USER_CODE_KEYS.browser}phone`), 0);
    assert.equal(await w.counted(`${USER_CODE_KEYS.address}${ip}`), 0);
  });

  it('does not count input that cannot be a code, however often it comes: it can match nothing', async () => {
    const ip = `${w.place()}.1.1`;
    for (const typed of ['', 'not a code', '1234-5678', 'WDJB-MJH', 'AEIO-UAEI', 'W'.repeat(100)]) {
      assert.equal(kindOf(await findDeviceRequest(w.world.deps, w.attempt(typed, ip, 'typo'))), 'malformed', typed);
    }
    for (const key of [`${USER_CODE_KEYS.browser}typo`, `${USER_CODE_KEYS.address}${ip}`, `${USER_CODE_KEYS.network}${networkOf(ip)}`]) {
      assert.equal(await w.counted(key), 0, key);
    }
    assert.equal(kindOf(await findDeviceRequest(w.world.deps, w.attempt(await w.started(), ip, 'typo'))), 'pending');
  });

  it('answers unknown to a code no request has, or one that has expired, and counts it as a wrong code', async () => {
    const ip = `${w.place()}.1.1`;
    const shown = await w.started();
    // RFC 8628 §3.2 expires_in: the code lives exactly its lifetime.
    w.world.clock.advance(w.world.config.device.codeLifetime * SECOND - 1);
    assert.equal(kindOf(await findDeviceRequest(w.world.deps, w.attempt(WRONG, ip, 'late'))), 'unknown');
    assert.equal(kindOf(await findDeviceRequest(w.world.deps, w.attempt(shown, ip, 'late'))), 'pending', 'a millisecond before its end');
    w.world.clock.advance(1);
    assert.equal(kindOf(await findDeviceRequest(w.world.deps, w.attempt(shown, ip, 'late'))), 'unknown', 'at its end');
    assert.equal(await w.counted(`${USER_CODE_KEYS.browser}late`), 2);
    assert.equal(await w.counted(`${USER_CODE_KEYS.address}${ip}`), 2);
  });

  it('answers decided, with the decision, to the code of a request already approved or denied, without counting it', async () => {
    const ip = `${w.place()}.1.1`;
    const session = personSession(w.world, ada);
    for (const decision of [
      { approve: true, session },
      { approve: false, userId: ada.id },
    ] satisfies Decision[]) {
      const shown = await w.started();
      assert.equal(kindOf(await decideDeviceRequest(w.world.deps, w.attempt(shown, ip, 'again'), decision)), 'done');
      for (let i = 0; i < w.world.config.userCode.perBrowser + 1; i++) {
        const again = await findDeviceRequest(w.world.deps, w.attempt(shown, ip, 'again'));
        assert.equal(again.kind, 'decided');
        if (again.kind === 'decided') assert.equal(again.record.status, decision.approve ? 'approved' : 'denied');
      }
    }
    assert.equal(await w.counted(`${USER_CODE_KEYS.browser}again`), 0);
  });
});

/** A live session of `user`, signed in `signedInAgo` before now with `amr`. */
function personSession(world: FlowWorld, user: UserRecord, signedInAgo = 0, amr: SessionRecord['amr'] = ['pwd']): SessionRecord {
  const now = world.clock.now();
  return {
    idHash: `h-${user.id}-${now}`,
    sid: `s-${user.id}-${now}`,
    userId: user.id,
    authTime: now - signedInAgo,
    createdAt: now - signedInAgo,
    expiresAt: now + 86_400_000,
    amr,
    ip: '192.0.2.20',
    userAgent: null,
  };
}

describe('wrong user codes, per browser, address and network (RFC 8628 §5.1)', () => {
  // Allowances small enough to reach: 2 per browser, 4 per address, 6 per /24 or /64, 8 per /16 or /48.
  const WINDOW = 300;
  const limited = () => withUserCode({ windowSeconds: WINDOW, perBrowser: 2, perAddress: 4, perNetwork: 6, perLargeNetwork: 8 });
  const find = (input: string, ip: string, browser: string | null) => findDeviceRequest(limited(), w.attempt(input, ip, browser));
  async function wrongCodes(count: number, ip: (i: number) => string, browser: (i: number) => string | null): Promise<void> {
    for (let i = 0; i < count; i++) assert.equal(kindOf(await find(WRONG, ip(i), browser(i))), 'unknown', `wrong code ${i + 1}`);
  }

  it('refuses every code from a browser after its wrong ones, the right one too, until its window has passed', async () => {
    const ip = `${w.place()}.1.1`;
    const shown = await w.started();
    await wrongCodes(
      2,
      () => ip,
      () => 'guesser',
    );
    const locked = await find(shown, ip, 'guesser');
    assert.deepEqual(locked, { kind: 'locked', scope: 'browser', retryAfterSeconds: WINDOW });
    w.world.clock.advance((WINDOW - 1) * SECOND);
    assert.deepEqual(await find(shown, ip, 'guesser'), { kind: 'locked', scope: 'browser', retryAfterSeconds: 1 }, 'a second before the window ends');
    w.world.clock.advance(SECOND);
    assert.equal(kindOf(await find(shown, ip, 'guesser')), 'pending', 'the window has passed');
  });

  it('counts under the keys the operator lists lockouts by (flows/manage/lockouts.ts)', async () => {
    const ip = `${w.place()}.1.1`;
    await wrongCodes(
      1,
      () => ip,
      () => 'listed',
    );
    const now = w.world.clock.now();
    const open = async (prefix: string) => (await w.world.store.rateLimits.listOpen(prefix, now, 1000)).map(({ key, hits }) => [key, hits]);
    assert.deepEqual(await open(`${USER_CODE_KEYS.browser}listed`), [[`${USER_CODE_KEYS.browser}listed`, 1]]);
    assert.deepEqual(await open(`${USER_CODE_KEYS.address}${ip}`), [[`${USER_CODE_KEYS.address}${ip}`, 1]]);
    assert.deepEqual(await open(`${USER_CODE_KEYS.network}${networkOf(ip)}`), [[`${USER_CODE_KEYS.network}${networkOf(ip)}`, 1]]);
    assert.deepEqual(await open(`${USER_CODE_KEYS.largeNetwork}${networkOf(ip, 'large')}`), [[`${USER_CODE_KEYS.largeNetwork}${networkOf(ip, 'large')}`, 1]]);
  });

  it('locks only the guessing browser: the person beside it, at the same address with their own browser, still finds their code', async () => {
    const ip = `${w.place()}.1.1`;
    const shown = await w.started();
    await wrongCodes(
      2,
      () => ip,
      () => 'guesser',
    );
    assert.equal(kindOf(await find(shown, ip, 'guesser')), 'locked:browser');
    assert.equal(kindOf(await find(shown, ip, 'neighbour')), 'pending');
  });

  it('counts wrong codes per address across browsers, and those of a browser without a cookie, and leaves the next address alone', async () => {
    const place = w.place();
    const ip = `${place}.1.1`;
    const shown = await w.started();
    await wrongCodes(
      4,
      () => ip,
      (i) => (i === 0 ? null : `browser-${i}`),
    );
    assert.deepEqual(await find(shown, ip, 'fresh'), { kind: 'locked', scope: 'address', retryAfterSeconds: WINDOW });
    assert.equal(kindOf(await find(shown, ip, null)), 'locked:address', 'no cookie is no way round it');
    assert.equal(kindOf(await find(shown, `${place}.1.2`, 'fresh')), 'pending', 'another address of the same /24');
  });

  it('counts wrong codes per /24 across its addresses, and leaves the next /24 alone', async () => {
    const place = w.place();
    const shown = await w.started();
    await wrongCodes(
      6,
      (i) => `${place}.1.${i + 1}`,
      (i) => `b-${i}`,
    );
    assert.equal(kindOf(await find(shown, `${place}.1.200`, 'fresh')), 'locked:network');
    assert.equal(kindOf(await find(shown, `${place}.2.200`, 'fresh')), 'pending', 'the next /24');
  });

  it('counts wrong codes per /16 across its /24s, and leaves the next /16 alone', async () => {
    const place = w.place();
    const shown = await w.started();
    await wrongCodes(
      8,
      (i) => `${place}.${i + 1}.1`,
      (i) => `b-${i}`,
    );
    assert.equal(kindOf(await find(shown, `${place}.200.1`, 'fresh')), 'locked:large-network');
    assert.equal(kindOf(await find(shown, `${w.place()}.200.1`, 'fresh')), 'pending', 'the next /16');
  });

  it('counts IPv6 wrong codes per /64, as one address, and per /48, and IPv4-mapped addresses in the /24 of their IPv4 ones', async () => {
    const shown = await w.started();
    // One host may hold the whole /64 (RFC 7934 §6): its addresses are one (core/networks.ts countedAddress).
    await wrongCodes(
      4,
      (i) => `2001:db8:1:1::${i + 1}`,
      (i) => `v6-${i}`,
    );
    assert.equal(kindOf(await find(shown, '2001:db8:1:1:ffff::1', 'fresh')), 'locked:address');
    assert.equal(kindOf(await find(shown, '2001:db8:1:2::1', 'fresh')), 'pending', 'the next /64');
    await wrongCodes(
      4,
      (i) => `2001:db8:1:${i + 3}::1`,
      (i) => `v6-more-${i}`,
    );
    assert.equal(kindOf(await find(shown, '2001:db8:1:ff::1', 'fresh')), 'locked:large-network');
    assert.equal(kindOf(await find(shown, '2001:db8:2::1', 'fresh')), 'pending', 'the next /48');

    // A dual-stack socket sees an IPv4 client as ::ffff:a.b.c.d: the same network.
    const place = w.place();
    await wrongCodes(
      6,
      (i) => (i % 2 ? `::ffff:${place}.1.${i + 1}` : `${place}.1.${i + 1}`),
      (i) => `mapped-${i}`,
    );
    assert.equal(kindOf(await find(shown, `${place}.1.200`, 'fresh')), 'locked:network');
    assert.equal(kindOf(await find(shown, `::ffff:${place}.1.201`, 'fresh')), 'locked:network');
  });

  it('counts nothing for a refused lookup, and stores one event per limit and window, with the count, once the window has ended', async () => {
    const ip = `${w.place()}.1.1`;
    const shown = await w.started();
    await wrongCodes(
      2,
      () => ip,
      () => 'refused',
    );
    for (let i = 0; i < 5; i++) assert.equal(kindOf(await find(i % 2 ? WRONG : shown, ip, 'refused')), 'locked:browser');
    assert.equal(await w.counted(`${USER_CODE_KEYS.browser}refused`), 2);
    assert.equal(await w.counted(`${USER_CODE_KEYS.address}${ip}`), 2, 'a refused lookup costs the address nothing either');
    const locked = async () => (await w.world.store.events.list({ type: 'device.code_entry_locked', limit: 100 })).filter((event) => event.ip === ip);
    assert.deepEqual(await locked(), [], 'nothing stored while the window is open');
    w.world.clock.advance(WINDOW * SECOND);
    await w.world.deps.events.flushRefusals();
    assert.deepEqual(
      (await locked()).map((event) => [event.detail['limit'], event.detail['refused']]),
      [['browser', 5]],
    );
  });

  it('counts a wrong code sent with a decision, and records no decision once the browser is locked', async () => {
    const ip = `${w.place()}.1.1`;
    const person = await w.world.addUser();
    const approve: Decision = { approve: true, session: personSession(w.world, person) };
    const shown = await w.started();
    for (let i = 0; i < 2; i++) assert.equal(kindOf(await decideDeviceRequest(limited(), w.attempt(WRONG, ip, 'poster'), approve)), 'unknown');
    assert.equal(kindOf(await decideDeviceRequest(limited(), w.attempt(shown, ip, 'poster'), approve)), 'locked:browser');
    assert.equal(kindOf(await decideDeviceRequest(limited(), w.attempt(shown, ip, 'poster'), { approve: false, userId: person.id })), 'locked:browser');
    assert.equal((await w.record(shown))?.status, 'pending');
    assert.deepEqual(await w.world.store.grants.listForUser(person.id), []);
  });
});

describe('the person approving or denying (RFC 8628 §3.3)', () => {
  const PHONE = '198.51.100.7';
  const decide = (shown: string, decision: Decision, browser = 'phone') => decideDeviceRequest(w.world.deps, w.attempt(shown, PHONE, browser), decision);
  const eventsOf = async (type: 'device.approved' | 'device.denied', clientId = w.tv.id) => w.world.store.events.list({ type, clientId, limit: 100 });

  it("approves for the person of the session: the request now names them, and a device grant of the request's scope holds how and when they signed in", async () => {
    const shown = await w.started('openid profile');
    const requested = w.world.clock.now();
    w.world.clock.advance(2 * MINUTE);
    const session = personSession(w.world, ada, 5 * MINUTE, ['pwd', 'otp']);
    const result = await decide(shown, { approve: true, session });
    assert.equal(result.kind, 'done');
    if (result.kind !== 'done') return;
    assert.equal(result.approved, true);
    assert.equal(result.client.id, w.tv.id);
    const { record } = result;
    assert.equal(record.status, 'approved');
    assert.equal(record.userId, ada.id);
    assert.equal(record.authTime, session.authTime, 'the sign-in time of the session, not of the approval');
    assert.equal(record.decidedAt, w.world.clock.now());
    assert.deepEqual(await w.record(shown), record, 'as the store has it');

    const grant = await w.world.store.grants.get(record.grantId!);
    assert.ok(grant);
    assert.equal(grant.userId, ada.id);
    assert.equal(grant.clientId, w.tv.id);
    assert.equal(grant.kind, GRANT_DEVICE_CODE);
    assert.deepEqual(grant.scope, ['openid', 'profile']);
    assert.equal(grant.authTime, session.authTime);
    assert.deepEqual(grant.amr, ['pwd', 'otp']);
    assert.equal(grant.revokedAt, null);
    assert.equal(grant.organizationId, undefined);
    // RFC 8628 §5.4: where and when the device asked stays with the grant, for the person's list of apps.
    assert.deepEqual(grant.device, { ip: DEVICE.ip, userAgent: DEVICE.userAgent, requestedAt: requested });

    const [event] = await eventsOf('device.approved');
    assert.equal(event?.userId, ada.id);
    assert.equal(event?.grantId, grant.id);
    assert.deepEqual(event?.detail, { device_ip: DEVICE.ip, device_user_agent: DEVICE.userAgent, scope: 'openid profile' });
  });

  it('denies for the person: the request is denied and names no one, no grant is made, and the denial is recorded under their name', async () => {
    const shown = await w.started('openid');
    const result = await decide(shown, { approve: false, userId: grace.id });
    assert.equal(kindOf(result), 'done');
    if (result.kind !== 'done') return;
    assert.equal(result.approved, false);
    assert.equal(result.record.status, 'denied');
    assert.equal(result.record.userId, null);
    assert.equal(result.record.grantId, null);
    assert.equal((await w.record(shown))?.status, 'denied');
    assert.deepEqual(await w.world.store.grants.listForUser(grace.id), []);
    const [event] = await eventsOf('device.denied');
    assert.equal(event?.userId, grace.id);
    assert.deepEqual(event?.detail, { device_ip: DEVICE.ip, device_user_agent: DEVICE.userAgent, scope: 'openid' });
  });

  it('decides a request once: a later approval or denial is told it was decided, and changes nothing', async () => {
    const approved = await w.started();
    await decide(approved, { approve: true, session: personSession(w.world, ada) });
    const grants = (await w.world.store.grants.listForUser(ada.id)).length;
    const later: [string, string, Decision][] = [
      ['approved, then approved by another', approved, { approve: true, session: personSession(w.world, grace) }],
      ['approved, then denied', approved, { approve: false, userId: ada.id }],
    ];
    const denied = await w.started();
    await decide(denied, { approve: false, userId: ada.id });
    later.push(['denied, then approved', denied, { approve: true, session: personSession(w.world, ada) }]);
    for (const [what, shown, decision] of later) {
      const result = await decide(shown, decision);
      assert.equal(result.kind, 'decided', what);
      if (result.kind === 'decided') assert.equal(result.record.status, shown === approved ? 'approved' : 'denied', what);
    }
    assert.equal((await w.record(approved))?.userId, ada.id, 'still the first approver');
    assert.equal((await w.world.store.grants.listForUser(ada.id)).length, grants);
    assert.deepEqual(await w.world.store.grants.listForUser(grace.id), []);
  });

  it('has one winner of two approvals at once: the other is told it was decided, and its grant is taken back', async () => {
    const shown = await w.started();
    const before = await Promise.all([ada, grace].map(async (user) => (await w.world.store.grants.listForUser(user.id)).length));
    const approvals = (await eventsOf('device.approved')).length;
    const results = await Promise.all([
      decide(shown, { approve: true, session: personSession(w.world, ada) }, 'ada-phone'),
      decide(shown, { approve: true, session: personSession(w.world, grace) }, 'grace-phone'),
    ]);
    assert.deepEqual(results.map(kindOf).toSorted(), ['decided', 'done']);
    const winner = results.find((result) => result.kind === 'done')!;
    const loser = results.find((result) => result.kind === 'decided')!;
    assert.equal(loser.kind === 'decided' && loser.record.userId, winner.kind === 'done' && winner.record.userId, 'the loser is shown the winning decision');
    const after = await Promise.all([ada, grace].map(async (user) => (await w.world.store.grants.listForUser(user.id)).length));
    assert.equal(after[0]! - before[0]! + (after[1]! - before[1]!), 1, 'one grant in all');
    assert.equal((await eventsOf('device.approved')).length, approvals + 1, 'one approval recorded');
    assert.equal((await eventsOf('device.approved'))[0]?.grantId, winner.kind === 'done' ? winner.record.grantId : null);
  });

  it('answers unknown to a decision on an expired request, and records nothing', async () => {
    const shown = await w.started();
    const code = normalizeUserCode(shown)!;
    w.world.clock.advance(w.world.config.device.codeLifetime * SECOND);
    const grants = (await w.world.store.grants.listForUser(ada.id)).length;
    assert.equal(kindOf(await decide(shown, { approve: true, session: personSession(w.world, ada) })), 'unknown');
    assert.equal(kindOf(await decide(shown, { approve: false, userId: ada.id })), 'unknown');
    assert.equal((await w.world.store.devices.findByUserCode(code, w.world.clock.now() - w.world.config.device.codeLifetime * SECOND))?.status, 'pending');
    assert.equal((await w.world.store.grants.listForUser(ada.id)).length, grants);
  });

  it("checks the session may approve for the request's client before deciding anything, and not for a denial", async () => {
    const shown = await w.started();
    const checked: string[] = [];
    const refuse = (client: ClientRecord) => {
      checked.push(client.id);
      throw new Error('a passkey sign-in is required');
    };
    const grants = (await w.world.store.grants.listForUser(ada.id)).length;
    await assert.rejects(decide(shown, { approve: true, session: personSession(w.world, ada), check: refuse }), /passkey/);
    assert.deepEqual(checked, [w.tv.id]);
    assert.equal((await w.record(shown))?.status, 'pending');
    assert.equal((await w.world.store.grants.listForUser(ada.id)).length, grants);

    const allow = (client: ClientRecord) => void checked.push(client.id);
    const result = await decide(shown, { approve: true, session: personSession(w.world, ada), check: allow });
    assert.equal(kindOf(result), 'done');
    assert.deepEqual(checked, [w.tv.id, w.tv.id]);
  });

  it('asks a member of several organizations to choose one for the organization scope, decides nothing until then, and keeps the one chosen', async () => {
    const [acme, globex, other] = await Promise.all(['Acme', 'Globex', 'Initech'].map((name) => addOrganization(w.world.manage, { name })));
    for (const organization of [acme!, globex!]) await setOrganizationMember(w.world.manage, organization.id, { username: ada.username });
    const memberships = await w.world.store.organizations.membershipsOf(ada.id);
    const approve = (posted: string | null): Decision => ({ approve: true, session: personSession(w.world, ada), organization: { memberships, posted } });

    const shown = await w.started('openid organization');
    const grants = (await w.world.store.grants.listForUser(ada.id)).length;
    for (const posted of [null, other!.id, 'no such organization']) {
      assert.equal(kindOf(await decide(shown, approve(posted))), 'choose', String(posted));
    }
    assert.equal((await w.record(shown))?.status, 'pending');
    assert.equal((await w.world.store.grants.listForUser(ada.id)).length, grants);

    const result = await decide(shown, approve(globex!.id));
    assert.equal(kindOf(result), 'done');
    const grantId = result.kind === 'done' ? result.record.grantId! : '';
    assert.equal((await w.world.store.grants.get(grantId))?.organizationId, globex!.id);
    const [event] = await eventsOf('device.approved');
    assert.equal(event?.detail['organization'], globex!.id);

    // Without the organization scope, no organization is kept, whatever was posted.
    const plain = await decideDeviceRequest(w.world.deps, w.attempt(await w.started('openid'), PHONE, 'phone'), approve(acme!.id));
    assert.equal(kindOf(plain), 'done');
    assert.equal((await w.world.store.grants.get(plain.kind === 'done' ? plain.record.grantId! : ''))?.organizationId, undefined);

    // One membership is that one, with nothing to choose.
    await setOrganizationMember(w.world.manage, acme!.id, { username: grace.username });
    const only = await decide(await w.started('openid organization'), {
      approve: true,
      session: personSession(w.world, grace),
      organization: { memberships: await w.world.store.organizations.membershipsOf(grace.id), posted: null },
    });
    assert.equal((await w.world.store.grants.get(only.kind === 'done' ? only.record.grantId! : ''))?.organizationId, acme!.id);
  });

  it('marks a self-registered app used at its first approval, so that the purge of unused ones spares it', async () => {
    await w.world.store.clients.create({ ...w.tv, id: 'self-registered-tv', registeredBy: 'dynamic' });
    const app = (await w.world.store.clients.get('self-registered-tv'))!;
    assert.equal(app.usedAt, undefined);
    const shown = await w.started('openid', app);
    w.world.clock.advance(MINUTE);
    assert.equal(kindOf(await decide(shown, { approve: true, session: personSession(w.world, ada) })), 'done');
    assert.equal((await w.world.store.clients.get(app.id))?.usedAt, w.world.clock.now());
  });
});

describe('wrong user codes across the whole server (RFC 8628 §5.1)', () => {
  const alerts: UserCodeAlert[] = [];
  const waits: number[] = [];
  // A budget of 3 wrong codes a minute, and a wait of 250 ms for a signed-in browser over it.
  const budgeted = () =>
    withUserCode(
      { globalPerMinute: 3, globalDelayMs: 250 },
      { alert: (alert) => void alerts.push(alert as unknown as UserCodeAlert), sleep: async (ms) => void waits.push(ms) },
    );

  it('alerts once when a minute has the budget of wrong codes, then refuses lookups from browsers without a good record, and lets signed-in ones through after a wait', async () => {
    const asked: string[] = [];
    const record = (browser: string, good: boolean) => async () => {
      asked.push(browser);
      return good;
    };
    const find = (input: string, ip: string, browser: string, good = false) =>
      findDeviceRequest(budgeted(), w.attempt(input, ip, browser, record(browser, good)));
    // The wrong codes of the tests before are another minute's.
    w.world.clock.advance(MINUTE);
    const shown = await w.started();

    // Wrong codes from networks far apart: no browser, address or network limit applies. Input
    // that cannot be a code, and right codes, are not wrong codes.
    for (let i = 1; i <= 3; i++) assert.equal(kindOf(await find('not a code', `${w.place()}.0.1`, `m-${i}`)), 'malformed');
    assert.equal(kindOf(await find(shown, `${w.place()}.0.1`, 'right')), 'pending');
    const start = w.world.clock.now();
    for (let i = 1; i <= 3; i++) {
      assert.equal(kindOf(await find(WRONG, `${w.place()}.0.1`, `g-${i}`)), 'unknown');
      w.world.clock.advance(5 * SECOND);
    }
    assert.deepEqual(alerts, [{ type: 'device.user_code_guessing', wrongCodesLastMinute: 3, limitPerMinute: 3 }]);
    assert.deepEqual(asked, [], 'a good record is asked for only once the budget is spent');

    // The right code too, from anyone who has not signed in, until the minute is over.
    const ip = `${w.place()}.0.1`;
    for (let i = 0; i < w.world.config.userCode.perBrowser + 2; i++) {
      assert.deepEqual(await find(shown, ip, 'stranger'), { kind: 'locked', scope: 'server', retryAfterSeconds: 45 });
    }
    assert.deepEqual(waits, []);

    // A signed-in browser is never refused for what others did: it waits, and goes on.
    assert.equal(kindOf(await find(shown, `${w.place()}.0.1`, 'signed-in', true)), 'pending');
    assert.deepEqual(waits, [250]);
    assert.equal(kindOf(await find(WRONG, `${w.place()}.0.1`, 'signed-in-typo', true)), 'unknown');
    assert.equal(alerts.length, 1, 'one alert in a window, however far over the budget');

    // The next minute: the stranger's refusals were not held against their browser or address.
    w.world.clock.set(start + MINUTE);
    waits.length = 0;
    assert.equal(kindOf(await find(shown, ip, 'stranger')), 'pending');
    assert.equal(await w.counted(`${USER_CODE_KEYS.browser}stranger`), 0);
    assert.deepEqual(waits, []);
    for (let i = 1; i <= 3; i++) assert.equal(kindOf(await find(WRONG, `${w.place()}.0.1`, `h-${i}`)), 'unknown');
    assert.equal(alerts.length, 2, 'a new window, a new alert');
  });
});

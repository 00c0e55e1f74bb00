import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../config/index.ts';
import { ManualClock } from '../core/clock.ts';
import { hashPassword } from '../core/password.ts';
import { Events } from '../core/events.ts';
import { PasswordQueue } from '../core/password-queue.ts';
import { openStore } from '../store/open.ts';
import { newUserRecord, type Store } from '../store/types.ts';
import { signIn, signInDelayMs, type SignInDeps } from './sign-in.ts';
import { changePassword } from './users.ts';

/** A password queue kept full by a flood of attempts with no good record: only trusted ones find a place. */
class FloodedQueue extends PasswordQueue {
  override placeFor(address: string, options: { trusted?: boolean } = {}) {
    return options.trusted === true ? super.placeFor(address, options) : null;
  }
  override verify(password: string, encoded: string, address: string, options: { trusted?: boolean } = {}) {
    return options.trusted === true ? super.verify(password, encoded, address, options) : Promise.resolve({ kind: 'busy' as const, retryAfterSeconds: 3 });
  }
}

describe('signing in', () => {
  let dir: string;
  let store: Store;
  let passwords: PasswordQueue;
  const clock = new ManualClock();
  const config = loadConfig({
    TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1',
    TESSERA_SIGN_IN_FREE_FAILURES: '2',
    TESSERA_SIGN_IN_DELAY_MS: '1000',
    TESSERA_SIGN_IN_MAX_DELAY_MS: '5000',
  });
  const waits: number[] = [];
  let deps: SignInDeps;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-sign-in-'));
    store = await openStore(join(dir, 'tessera.db'));
    passwords = new PasswordQueue({ threads: 1, maxWaiting: 10, perAddress: 10 });
    // A sleep that records instead of waiting: the waits are what is tested.
    deps = {
      store,
      clock,
      config,
      passwords,
      tokens: undefined as never,
      events: new Events(clock, store.events, []),
      sleep: async (ms) => void waits.push(ms),
    };
    await store.users.create(
      newUserRecord({ id: 'sub-ada', username: 'ada', passwordHash: await hashPassword('right', config.passwordHash), createdAt: clock.now() }),
    );
  });
  const addUser = async (username: string, password: string) => {
    const user = newUserRecord({ id: `sub-${username}`, username, passwordHash: await hashPassword(password, config.passwordHash), createdAt: clock.now() });
    await store.users.create(user);
    return user;
  };
  after(async () => {
    await passwords.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('doubles the wait for every failure past the free ones, up to the longest', () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6, 40].map((n) => signInDelayMs(config.signIn, n)),
      [0, 0, 0, 1000, 2000, 4000, 5000, 5000],
    );
  });

  it('slows guesses at a username from many addresses, and still signs the owner in after them', async () => {
    for (let i = 1; i <= 6; i++) {
      assert.equal((await signIn(deps, { username: 'ada', password: `guess${i}`, ip: `203.0.113.${i}` })).kind, 'refused');
    }
    assert.deepEqual(waits, [1000, 2000, 4000]);
    const owner = await signIn(deps, { username: 'ADA', password: 'right', ip: '198.51.100.7' });
    assert.equal(owner.kind, 'signed-in');
    assert.equal(waits.at(-1), 5000, 'after the longest wait, not a lock');
  });

  it('refuses one address after its failures for one username, and leaves that username to others', async () => {
    const limited = loadConfig({ TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1', TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS: '3', TESSERA_SIGN_IN_DELAY_MS: '0' });
    const at = (ip: string, password: string) => signIn({ ...deps, config: limited }, { username: 'ada', password, ip });
    for (let i = 0; i < 3; i++) assert.equal((await at('192.0.2.1', 'guess')).kind, 'refused');
    const refused = await at('192.0.2.1', 'right');
    assert.equal(refused.kind, 'limited');
    assert.ok(refused.kind === 'limited' && refused.scope === 'user-address' && refused.retryAfterSeconds === 900);
    assert.equal((await at('192.0.2.2', 'right')).kind, 'signed-in');
  });

  it('counts the addresses of one IPv6 /64 as one address, and leaves the username to another /64', async () => {
    await addUser('hamilton', 'right-password');
    // One host's /64 (RFC 7934 §6), ::1 to ::b: the 11th guess finds the 10 before it counted.
    const answers = [];
    for (let i = 1; i <= 11; i++) answers.push(await signIn(deps, { username: 'hamilton', password: `guess${i}`, ip: `2001:db8:1:2::${i.toString(16)}` }));
    assert.deepEqual(
      answers.map((answer) => answer.kind),
      [...Array(10).fill('refused'), 'limited'],
    );
    const limited = answers[10]!;
    assert.ok(limited.kind === 'limited' && limited.scope === 'user-address');
    assert.equal((await signIn(deps, { username: 'hamilton', password: 'right-password', ip: '2001:db8:1:3::1' })).kind, 'signed-in');
  });

  it('counts two neighbouring IPv4 addresses apart, as many people behind one NAT are one address', async () => {
    await addUser('noether', 'right-password');
    for (let i = 0; i < 10; i++) assert.equal((await signIn(deps, { username: 'noether', password: 'guess', ip: '198.51.100.1' })).kind, 'refused');
    assert.equal((await signIn(deps, { username: 'noether', password: 'guess', ip: '198.51.100.1' })).kind, 'limited');
    assert.equal((await signIn(deps, { username: 'noether', password: 'guess', ip: '198.51.100.2' })).kind, 'refused', 'the neighbour has a count of its own');
    assert.equal((await signIn(deps, { username: 'noether', password: 'right-password', ip: '198.51.100.2' })).kind, 'signed-in');
  });

  it('checks the current password on /account on the password queue and under the sign-in limits', async () => {
    const grace = await addUser('grace', 'current-password');
    const change = (current: string, ip: string) => changePassword(deps, grace, 'no-session', { current, next: 'a-new-password', ip });
    const before = passwords.counts().hashed;
    const answers = [];
    for (let i = 0; i < 11; i++) answers.push((await change(`guess${i}`, '192.0.2.50')).kind);
    assert.deepEqual(answers, [...Array(10).fill('wrong_password'), 'limited']);
    assert.equal(passwords.counts().hashed - before, 10, 'ten checks on the queue; the limited one hashed nothing');
    // The guesses slowed the username like wrong sign-ins do.
    assert.ok(waits.length > 0);
    const done = await change('current-password', '192.0.2.51');
    assert.equal(done.kind, 'done');
    assert.equal(passwords.counts().hashed - before, 12, 'the current password and the new hash, both on the queue');
  });

  it('signs a person in during a flood from the browser or the address where their password was right before', async () => {
    await addUser('hopper', 'right-password');
    const first = await signIn(deps, { username: 'hopper', password: 'right-password', ip: '198.51.100.30' });
    assert.ok(first.kind === 'signed-in');
    const flooded = new FloodedQueue({ threads: 1, maxWaiting: 4, perAddress: 2 });
    after(() => flooded.close());
    const during = { ...deps, passwords: flooded };
    assert.equal((await signIn(during, { username: 'hopper', password: 'right-password', ip: '198.51.100.31' })).kind, 'busy', 'no record: refused');
    assert.equal(
      (await signIn(during, { username: 'hopper', password: 'right-password', ip: '198.51.100.31', browser: first.browser })).kind,
      'signed-in',
      'the browser',
    );
    assert.equal((await signIn(during, { username: 'hopper', password: 'right-password', ip: '198.51.100.30' })).kind, 'signed-in', 'the address');
    assert.equal(
      (await signIn(during, { username: 'ada', password: 'right', ip: '198.51.100.30', browser: first.browser })).kind,
      'busy',
      "the record is hopper's alone",
    );
  });

  it("counts the good record when a full queue gives the owner the place of a flood's attempt, as when it refuses strangers", async () => {
    await addUser('turing', 'right-password');
    const first = await signIn(deps, { username: 'turing', password: 'right-password', ip: '198.51.100.50' });
    assert.ok(first.kind === 'signed-in');
    /** A full queue whose every newcomer would take the place of a flood's latest attempt: what matters is how it is asked. */
    const asked: boolean[] = [];
    class DisplacingQueue extends PasswordQueue {
      override placeFor() {
        return 'displacing' as const;
      }
      override verify(password: string, encoded: string, address: string, options: { trusted?: boolean } = {}) {
        asked.push(options.trusted === true);
        return super.verify(password, encoded, address, options);
      }
    }
    const full = new DisplacingQueue({ threads: 1, maxWaiting: 4, perAddress: 5 });
    after(() => full.close());
    const during = { ...deps, passwords: full };
    assert.equal((await signIn(during, { username: 'turing', password: 'right-password', ip: '198.51.100.51', browser: first.browser })).kind, 'signed-in');
    assert.equal((await signIn(during, { username: 'turing', password: 'right-password', ip: '198.51.100.52' })).kind, 'signed-in');
    // The owner's browser is served first (PasswordQueue's `trusted`); a stranger's attempt is not.
    assert.deepEqual(asked, [true, false]);
  });

  it("spares the owner's browser and address the wait a guesser causes", async () => {
    await addUser('lovelace', 'right-password');
    const first = await signIn(deps, { username: 'lovelace', password: 'right-password', ip: '198.51.100.40' });
    assert.ok(first.kind === 'signed-in');
    for (let i = 1; i <= 8; i++) await signIn(deps, { username: 'lovelace', password: `guess${i}`, ip: `203.0.113.${100 + i}` });
    const waited = waits.length;
    assert.equal((await signIn(deps, { username: 'lovelace', password: 'right-password', ip: '198.51.100.41', browser: first.browser })).kind, 'signed-in');
    assert.equal((await signIn(deps, { username: 'lovelace', password: 'right-password', ip: '198.51.100.40' })).kind, 'signed-in');
    assert.equal(waits.length, waited, 'no wait for the known browser or address');
    assert.equal((await signIn(deps, { username: 'lovelace', password: 'right-password', ip: '198.51.100.42' })).kind, 'signed-in');
    assert.equal(waits.length, waited + 1, 'a new browser at a new address waits');
  });
});

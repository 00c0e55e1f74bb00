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

describe('signing in', () => {
  let dir: string;
  let store: Store;
  let passwords: PasswordQueue;
  const clock = new ManualClock();
  const config = loadConfig({ TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1', TESSERA_SIGN_IN_FREE_FAILURES: '2', TESSERA_SIGN_IN_DELAY_MS: '1000', TESSERA_SIGN_IN_MAX_DELAY_MS: '5000' });
  const waits: number[] = [];
  let deps: SignInDeps;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-sign-in-'));
    store = await openStore(join(dir, 'tessera.db'));
    passwords = new PasswordQueue({ threads: 1, maxWaiting: 10, perAddress: 10 });
    // A sleep that records instead of waiting: the waits are what is tested.
    deps = { store, clock, config, passwords, tokens: undefined as never, events: new Events(clock, store.events, []), sleep: async (ms) => void waits.push(ms) };
    await store.users.create(newUserRecord({ id: 'sub-ada', username: 'ada', passwordHash: await hashPassword('right', config.passwordHash), createdAt: clock.now() }));
  });
  after(async () => {
    await passwords.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('doubles the wait for every failure past the free ones, up to the longest', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 40].map((n) => signInDelayMs(config.signIn, n)), [0, 0, 0, 1000, 2000, 4000, 5000, 5000]);
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
});

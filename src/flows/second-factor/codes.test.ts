/**
 * One-time codes as a second factor without HTTP: enrolment confirmed by a code the secret
 * makes, ten recovery codes shown once and kept hashed, and the code asked after the
 * password (RFC 6238 §5.2: each time step used once), on a clock the test moves and with the
 * guessing limits the caller passes. test/second-factor.test.ts drives the same pages in a
 * browser-like client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import type { UserRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { checkSecondFactor, type CodeLimits, confirmTotpEnrolment, beginTotpEnrolment, RECOVERY_CODE_COUNT, removeTotp, totpStatus } from './codes.ts';
import { hotp, timeStep } from './totp.ts';

const STEP_MS = 30_000;

describe('one-time codes as a second factor (flows/second-factor/codes.ts)', () => {
  let world: FlowWorld;
  let made = 0;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /** Limits of `count` codes a window, under a key of the test's own. */
  const limits = (count = 100): CodeLimits => ({ limits: [{ key: `codes:${made}:${count}`, limit: count }], windowMs: 15 * 60_000 });
  /** The code the person's app shows now, `steps` steps from now. */
  const codeNow = (secret: string, steps = 0) => hotp(secret, timeStep(world.clock.now()) + steps);

  /** A person with one-time codes on: their secret and recovery codes. */
  async function enrolled(): Promise<{ user: UserRecord; secret: string; recoveryCodes: readonly string[] }> {
    const user = await world.addUser({ username: `coder${++made}` });
    const started = await beginTotpEnrolment(world.deps, user.id);
    assert.ok(started.kind === 'started');
    const confirmed = await confirmTotpEnrolment(world.deps, user, codeNow(started.secret), limits());
    assert.ok(confirmed.kind === 'confirmed');
    // Two steps past the one the enrolment used, so that the step before now is unused too.
    world.clock.advance(2 * STEP_MS);
    return { user, secret: started.secret, recoveryCodes: confirmed.recoveryCodes };
  }

  it('enrols only with a code the secret makes, and gives ten recovery codes shown once, kept hashed', async () => {
    const user = await world.addUser({ username: `coder${++made}` });
    const started = await beginTotpEnrolment(world.deps, user.id);
    assert.ok(started.kind === 'started');
    assert.equal((await confirmTotpEnrolment(world.deps, user, '000000', limits())).kind, 'wrong-code');
    assert.equal((await totpStatus(world.deps, user.id)).enabled, false);
    const confirmed = await confirmTotpEnrolment(world.deps, user, codeNow(started.secret), limits());
    assert.ok(confirmed.kind === 'confirmed');
    assert.equal(confirmed.recoveryCodes.length, RECOVERY_CODE_COUNT);
    for (const code of confirmed.recoveryCodes) assert.match(code, /^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$/);
    assert.equal(new Set(confirmed.recoveryCodes).size, RECOVERY_CODE_COUNT);
    assert.deepEqual(await totpStatus(world.deps, user.id), { enabled: true, recoveryCodesLeft: RECOVERY_CODE_COUNT });
    assert.equal((await beginTotpEnrolment(world.deps, user.id)).kind, 'enrolled', 'no second secret over a confirmed one');
    assert.equal((await confirmTotpEnrolment(world.deps, user, codeNow(started.secret), limits())).kind, 'not-started');
    const plain = confirmed.recoveryCodes[0]!.replace('-', '');
    assert.equal(await world.store.recoveryCodes.consume(user.id, plain, world.clock.now()), false, 'not kept as typed');
    assert.equal(await world.store.recoveryCodes.consume(user.id, hashSecret(plain), world.clock.now()), true, 'kept as its hash');
  });

  it('takes a code of the current step or one either side, each step once (RFC 6238 §5.2)', async () => {
    const { user, secret } = await enrolled();
    const cases: [string, () => string, string][] = [
      ['a code two steps back', () => codeNow(secret, -2), 'wrong-code'],
      ['a code two steps ahead', () => codeNow(secret, 2), 'wrong-code'],
      ['the previous step’s code', () => codeNow(secret, -1), 'accepted'],
      ['the same code again', () => codeNow(secret, -1), 'replayed'],
      ['the current step’s code', () => codeNow(secret), 'accepted'],
      ['the current step’s code again', () => codeNow(secret), 'replayed'],
      ['the previous step’s code, after the current one', () => codeNow(secret, -1), 'replayed'],
      ['not six digits', () => 'abcdef', 'wrong-code'],
    ];
    for (const [what, code, expected] of cases) assert.equal((await checkSecondFactor(world.deps, user, code(), limits())).kind, expected, what);
  });

  it('takes each recovery code once, typed in any case, with or without its dash', async () => {
    const { user, recoveryCodes } = await enrolled();
    const [first, second] = recoveryCodes as [string, string];
    const check = (typed: string) => checkSecondFactor(world.deps, user, typed, limits());
    assert.deepEqual(await check(first.toUpperCase().replace('-', ' ')), { kind: 'accepted', method: 'recovery' });
    assert.equal((await check(first)).kind, 'wrong-code', 'used once');
    assert.deepEqual(await check(second.replace('-', '')), { kind: 'accepted', method: 'recovery' });
    assert.equal((await totpStatus(world.deps, user.id)).recoveryCodesLeft, RECOVERY_CODE_COUNT - 2);
    const events = (await world.store.events.list({ userId: user.id, limit: 10 })).map((event) => event.type);
    assert.ok(events.includes('second_factor.recovery_code_used'), events.join(' '));
  });

  it('locks out guessed codes after the limit, yet still lets the person in with a recovery code', async () => {
    const { user, secret, recoveryCodes } = await enrolled();
    const few = limits(3);
    for (let i = 0; i < 3; i++) assert.equal((await checkSecondFactor(world.deps, user, String(100000 + i), few)).kind, 'wrong-code');
    assert.equal((await checkSecondFactor(world.deps, user, codeNow(secret), few)).kind, 'locked', 'even the right code, once locked');
    assert.deepEqual(await checkSecondFactor(world.deps, user, recoveryCodes[0]!, few), { kind: 'accepted', method: 'recovery' });
    assert.equal((await checkSecondFactor(world.deps, user, recoveryCodes[0]!, few)).kind, 'locked', 'a used recovery code is a guess like any other');
    const failures = (await world.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 10 })).length;
    assert.ok(failures >= 3, `each wrong code recorded (${failures})`);
  });

  it('turns codes off with the recovery codes, after which no code is taken', async () => {
    const { user, secret, recoveryCodes } = await enrolled();
    assert.equal(await removeTotp(world.deps, user), true);
    assert.equal(await removeTotp(world.deps, user), false, 'once');
    assert.deepEqual(await totpStatus(world.deps, user.id), { enabled: false, recoveryCodesLeft: 0 });
    assert.equal((await checkSecondFactor(world.deps, user, codeNow(secret), limits())).kind, 'wrong-code');
    assert.equal((await checkSecondFactor(world.deps, user, recoveryCodes[1]!, limits())).kind, 'wrong-code');
    assert.equal(await world.store.recoveryCodes.consume(user.id, hashSecret(recoveryCodes[2]!.replace('-', '')), world.clock.now()), false);
  });
});

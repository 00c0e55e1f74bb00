/**
 * Managing people without HTTP: the operations behind `tessera user …`, /admin/users and the
 * console's people pages, as the owner and as a narrower admin credential. authority.test.ts
 * checks the rules of who may do what; these check that every operation that changes a person
 * asks them, and what each operation refuses and leaves in the store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyPassword } from '../../core/password.ts';
import type { UserRecord } from '../../store/types.ts';
import { CookieJar, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { ManageDeps } from './deps.ts';
import { beginTotpEnrolment, confirmTotpEnrolment } from '../second-factor/codes.ts';
import { totpAt } from '../second-factor/totp.ts';
import { signedIn, type Browser } from '../session/session.ts';
import { afterFirstStep, completeSecondFactor } from '../session/sign-in.ts';
import { enrolmentLimits } from '../sign-in.ts';
import { createUser, endUserSessions, removeUser, resetLink, resetUserSecondFactor, setDisabled, setPassword, updateUser, userEtag } from './users.ts';

const PASSWORD = 'correct horse battery staple';

describe('managing people (flows/manage/users.ts)', () => {
  let world: FlowWorld;
  /** An admin API client holding admin:users alone: it manages people, not operators. */
  let narrow: ManageDeps;
  let made = 0;

  before(async () => {
    world = await flowWorld();
    narrow = { ...world.manage, caller: { scopes: ['admin:users'], clientId: 'hr-sync' } };
  });
  after(() => world.close());

  const person = async (fields: Parameters<typeof createUser>[1] = {}): Promise<UserRecord> =>
    createUser(world.manage, { username: `person${++made}`, password: PASSWORD, ...fields });

  it('creates a person with the standard claims given, the password hashed with argon2id, and refuses what a rule forbids', async () => {
    const ada = await person({ username: 'Ada.Lovelace', name: 'Ada Lovelace', email: 'ada@example.com', email_verified: true });
    assert.equal(ada.username, 'ada.lovelace', 'usernames are kept in one case');
    assert.equal(ada.email, 'ada@example.com');
    assert.ok(ada.passwordHash.startsWith('$argon2id$'), ada.passwordHash.slice(0, 12));
    assert.ok(await verifyPassword(PASSWORD, ada.passwordHash));
    const cases: [string, Parameters<typeof createUser>[1], string][] = [
      ['no username', { password: PASSWORD }, 'invalid:username'],
      ['a username with a space', { username: 'ada lovelace', password: PASSWORD }, 'invalid:username'],
      ['a username too long', { username: 'a'.repeat(65), password: PASSWORD }, 'invalid:username'],
      ['no password', { username: 'grace' }, 'invalid:password'],
      ['a password too short', { username: 'grace', password: 'short' }, 'rejected'],
      ['an e-mail address that is not one', { username: 'grace', password: PASSWORD, email: 'grace' }, 'invalid:email'],
      ['a birthdate that is not a date', { username: 'grace', password: PASSWORD, birthdate: '31/12/1906' }, 'invalid:birthdate'],
      ['a taken username, in another case', { username: 'ADA.LOVELACE', password: PASSWORD }, 'conflict'],
      ['a taken e-mail address, in another case', { username: 'grace', password: PASSWORD, email: 'ADA@example.com' }, 'conflict:email'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => createUser(world.manage, input)), expected, what);
    assert.equal(await world.store.users.findByUsername('grace'), null, 'none of them made anyone');
  });

  it('updates claims and roles by the same rules, against the version read when one is given', async () => {
    const grace = await person({ name: 'Grace' });
    const renamed = await updateUser(world.manage, grace.username, { name: 'Grace Hopper' }, userEtag(grace));
    assert.equal(renamed.name, 'Grace Hopper');
    const cases: [string, Parameters<typeof updateUser>[2], string | undefined, string][] = [
      ['nothing to change', {}, undefined, 'invalid:name'],
      ['a role that is not one', { role: 'superuser' }, undefined, 'invalid:role'],
      ['a claim that is not valid', { email: 'grace' }, undefined, 'invalid:email'],
      ['against a version since changed', { name: 'Amazing Grace' }, userEtag(grace), 'stale'],
      ['a role given', { role: 'support' }, undefined, 'ok'],
    ];
    for (const [what, changes, version, expected] of cases)
      assert.equal(await outcome(() => updateUser(world.manage, grace.username, changes, version)), expected, what);
    assert.equal((await world.store.users.get(grace.id))?.role, 'support');
    assert.equal(await outcome(() => updateUser(world.manage, 'nobody', { name: 'X' })), 'not_found');
  });

  it('lets a narrower credential change people, but not an operator who holds more than it does, by any operation', async () => {
    const operator = await person();
    await updateUser(world.manage, operator.username, { role: 'admin' });
    const plain = await person();
    const operations: [string, (deps: ManageDeps, username: string) => Promise<unknown>][] = [
      ['update a claim', (deps, username) => updateUser(deps, username, { name: 'Changed' })],
      ['set the password', (deps, username) => setPassword(deps, username, 'another correct horse battery')],
      ['make a reset link', (deps, username) => resetLink(deps, username)],
      ['reset the second factor', (deps, username) => resetUserSecondFactor(deps, username)],
      ['disable', (deps, username) => setDisabled(deps, username, true)],
      ['remove', (deps, username) => removeUser(deps, username)],
    ];
    for (const [what, operation] of operations) {
      assert.equal(await outcome(() => operation(narrow, operator.username)), 'forbidden', `${what}: an operator`);
    }
    assert.ok(await verifyPassword(PASSWORD, (await world.store.users.get(operator.id))!.passwordHash), "the operator's password is theirs still");
    assert.equal((await world.store.users.get(operator.id))?.disabled, false);
    for (const [what, operation] of operations) assert.equal(await outcome(() => operation(narrow, plain.username)), 'ok', `${what}: a person without a role`);
    assert.equal(await world.store.users.get(plain.id), null, 'removed at the end');
    for (const role of ['support', 'admin', 'none'] as const) {
      const someone = await person();
      assert.equal(await outcome(() => updateUser(narrow, someone.username, { role })), role === 'none' ? 'ok' : 'forbidden:role', `give ${role}`);
    }
  });

  it('disables once and ends what the person holds, makes reset links within their bounds, and only for someone enabled', async () => {
    const lin = await person();
    assert.equal(typeof (await setDisabled(world.manage, lin.username, true)), 'number');
    assert.equal(await setDisabled(world.manage, lin.username, true), null, 'already disabled');
    assert.equal(await outcome(() => resetLink(world.manage, lin.username)), 'conflict', 'a disabled person gets no link');
    await setDisabled(world.manage, lin.username, false);
    for (const ttl of [59, 30 * 86400 + 1, 1.5]) assert.equal(await outcome(() => resetLink(world.manage, lin.username, ttl)), 'invalid:ttl', String(ttl));
    const link = await resetLink(world.manage, lin.username, 3600);
    assert.equal(link.expiresAt, world.clock.now() + 3600_000);
    assert.ok(new URL(link.url).href.startsWith(world.config.issuer));
  });

  it('signs a person out everywhere, a sign-in waiting for its one-time code included: the right code then signs no one in', async () => {
    const ida = await person();
    const secret = ((await beginTotpEnrolment(world.deps, ida.id)) as { secret: string }).secret;
    assert.equal((await confirmTotpEnrolment(world.deps, ida, totpAt(secret, world.clock.now()), enrolmentLimits(ida.id))).kind, 'confirmed');
    world.clock.advance(31_000);
    const browser = (cookies: CookieJar): Browser => ({ cookies, ip: '192.0.2.20', userAgent: null, log: { warn: () => {} } });
    const signedInThere = new CookieJar();
    assert.equal(await afterFirstStep(world.deps, browser(signedInThere), ida, ['pwd', 'otp', 'mfa'], { clientId: null }), 'second-factor');
    const waiting = new CookieJar();
    assert.equal(await afterFirstStep(world.deps, browser(waiting), ida, ['pwd'], { clientId: null }), 'second-factor');
    assert.equal((await completeSecondFactor(world.deps, browser(signedInThere), totpAt(secret, world.clock.now()), { clientId: null })).kind, 'signed-in');
    world.clock.advance(31_000);
    assert.deepEqual(await endUserSessions(world.manage, ida.username), { sessions: 1, told: 0 });
    assert.equal(await signedIn(world.deps, { cookies: signedInThere }), null);
    assert.deepEqual(await completeSecondFactor(world.deps, browser(waiting), totpAt(secret, world.clock.now()), { clientId: null }), { kind: 'expired' });
    assert.equal(await signedIn(world.deps, { cookies: waiting }), null);
  });
});

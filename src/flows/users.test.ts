import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { flowWorld, type FlowWorld } from '../../test/helpers/flows.ts';
import { changePassword, createResetLink, findResetLink, resetPassword, setUserDisabled, setUserPassword, updateUser } from './users.ts';

const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

describe('password reset links', () => {
  let world: FlowWorld;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /** A live link of `userId` stored as `createResetLink` stores one: two made at once both stay live. */
  async function liveLink(userId: string): Promise<string> {
    const token = randomToken(32);
    const now = world.clock.now();
    await world.store.passwordResets.create({ tokenHash: hashSecret(token), userId, createdAt: now, expiresAt: now + 3600_000, usedAt: null, mailedTo: null });
    return token;
  }

  it('ends every other live link of the person when one is used, and only theirs', async () => {
    const ada = await world.addUser({ username: 'ada' });
    const bob = await world.addUser({ username: 'bob' });
    // Two operators each gave Ada a link at the same moment (each spends the older ones, then
    // stores its own): both are live until one is used.
    const [first, second] = [await liveLink(ada.id), await liveLink(ada.id)];
    const bobs = await liveLink(bob.id);
    assert.ok(await findResetLink(world.deps, second), 'live before');
    const done = await resetPassword(world.deps, first, 'a new long password', '192.0.2.1');
    assert.equal(done.kind, 'done');
    assert.equal(await findResetLink(world.deps, first), null, 'the link used is spent');
    assert.equal(await findResetLink(world.deps, second), null, 'the other link of the person is spent too');
    assert.deepEqual((await resetPassword(world.deps, second, 'another long password', '192.0.2.1')).kind, 'invalid_link');
    assert.ok(await findResetLink(world.deps, bobs), "another person's link is not touched");
  });

  it('keeps only the newest link made, and spends them all when the person is disabled', async () => {
    const cy = await world.addUser({ username: 'cy' });
    const older = tokenOf((await createResetLink(world.deps, cy, 3600)).url);
    const newer = tokenOf((await createResetLink(world.deps, cy, 3600)).url);
    assert.equal(await findResetLink(world.deps, older), null);
    assert.ok(await findResetLink(world.deps, newer));
    await setUserDisabled(world.deps, cy, true);
    await setUserDisabled(world.deps, { ...cy, disabled: true }, false);
    assert.equal(await findResetLink(world.deps, newer), null, 'enabling again brings none back');
  });

  it('ends the live links of a person whose password is then set, by themselves or an operator', async () => {
    const eve = await world.addUser({ username: 'eve' });
    const own = tokenOf((await createResetLink(world.deps, eve, 3600)).url);
    // The flow world's people have the password 'correct horse battery'.
    const changed = await changePassword(world.deps, eve, 'no session', { current: 'correct horse battery', next: 'a new long password', ip: '192.0.2.1' });
    assert.equal(changed.kind, 'done');
    assert.equal(await findResetLink(world.deps, own), null, 'a link sent before the change would undo it');
    const operators = tokenOf((await createResetLink(world.deps, eve, 3600)).url);
    await setUserPassword(world.deps, eve, 'an operator set this password');
    assert.equal(await findResetLink(world.deps, operators), null, 'nor one sent before an operator set it');
    assert.equal((await resetPassword(world.deps, operators, 'the password of whoever read the mail', '192.0.2.1')).kind, 'invalid_link');
  });

  it('ends the live links of a person whose e-mail address an operator changed, not those of a change of the name alone', async () => {
    const fay = await world.addUser({ username: 'fay', email: 'fay@old.example', emailVerified: true });
    const mailed = tokenOf((await createResetLink(world.deps, fay, 3600)).url);
    assert.ok(await updateUser(world.deps, fay, { name: 'Fay' }));
    assert.ok(await findResetLink(world.deps, mailed), 'the address stays: the link stays');
    const renamed = (await world.store.users.get(fay.id))!;
    assert.ok(await updateUser(world.deps, renamed, { email: 'fay@new.example' }));
    assert.equal(await findResetLink(world.deps, mailed), null, 'a link mailed to the old address would reach whoever reads it still');
  });

  it('is refused once expired, and a short or long password is refused without spending the link', async () => {
    const di = await world.addUser({ username: 'di' });
    const link = tokenOf((await createResetLink(world.deps, di, 60)).url);
    assert.equal((await resetPassword(world.deps, link, 'short', '192.0.2.1')).kind, 'invalid');
    assert.ok(await findResetLink(world.deps, link), 'still live');
    world.clock.advance(61_000);
    assert.equal((await resetPassword(world.deps, link, 'a new long password', '192.0.2.1')).kind, 'invalid_link');
  });
});

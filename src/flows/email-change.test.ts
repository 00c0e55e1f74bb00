/**
 * A person changing their own e-mail address, without HTTP or SMTP: the link mailed to the new
 * address (read from the outbox, opened as the dispatcher opens it), used once and only signed
 * in as the account, ended by a newer request and by its expiry, the address then verified and the old one told; what is
 * refused, and the hourly budgets it shares with "Forgot password?". test/email-change.test.ts
 * follows the same through the pages and a real SMTP server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../core/crypto.ts';
import type { UserRecord } from '../store/types.ts';
import { FLOW_ISSUER, flowWorld, queuedMail, type FlowWorld } from '../../test/helpers/flows.ts';
import { openEmailChangeLink, pendingEmailChange, requestEmailChange, verifyEmailChange } from './email-change.ts';
import type { MailMessage } from './mail/outbox.ts';
import { createResetLink, findResetLink, type AccountDeps } from './users.ts';

const PER_EMAIL = 3;
const LINK_TTL_SECONDS = 3600;

describe("changing one's own e-mail address", () => {
  let world: FlowWorld;
  let deps: AccountDeps;
  let addresses = 0;

  before(async () => {
    world = await flowWorld({
      TESSERA_RECOVERY_PER_EMAIL: String(PER_EMAIL),
      TESSERA_RECOVERY_PER_ADDRESS: '1000',
      TESSERA_SIGN_UP_LINK_TTL: String(LINK_TTL_SECONDS),
    });
    deps = { ...world.deps, mail: world.mail };
  });
  after(() => world.close());

  /** A person with a verified address of their own. */
  const person = () => {
    addresses += 1;
    return world.addUser({ username: `person${addresses}`, email: `person${addresses}@example.com`, emailVerified: true });
  };

  /** The messages queued for `user`'s events of `type`. */
  async function mailed(user: UserRecord, type: string): Promise<MailMessage[]> {
    return queuedMail(
      world,
      (await world.store.events.list({ userId: user.id, limit: 100 })).filter((event) => event.type === type),
    );
  }

  /** The token of the link in the latest message asking `user` to confirm an address. */
  async function linkToken(user: UserRecord): Promise<string> {
    const messages = await mailed(user, 'user.email_change_requested');
    const link = new URL(String(messages.at(-1)!.values['link']));
    assert.equal(link.origin, new URL(FLOW_ISSUER).origin, 'the link is built from the issuer');
    return link.searchParams.get('token')!;
  }

  /** Asked from a session that signed in just now. */
  const ask = (user: UserRecord, email: string, ip = '198.51.100.7') =>
    requestEmailChange(deps, user, { email, ip, locale: 'en', signedInAt: world.clock.now() });

  it('mails a link to the new address; following it sets the address, verified, tells the old one, and works once', async () => {
    const user = await person();
    assert.deepEqual(await ask(user, '  ada.new@example.com '), { kind: 'sent', email: 'ada.new@example.com' });
    assert.equal(await pendingEmailChange(deps, user), 'ada.new@example.com');
    const [asking] = await mailed(user, 'user.email_change_requested');
    assert.deepEqual([asking?.kind, asking?.to.address], ['email_change', 'ada.new@example.com']);
    assert.equal((await world.store.users.get(user.id))?.email, user.email, 'nothing changes before the link is followed');

    const token = await linkToken(user);
    const done = await verifyEmailChange(deps, token, user);
    assert.equal(done.kind, 'done');
    const changed = (await world.store.users.get(user.id))!;
    assert.deepEqual([changed.email, changed.emailVerified], ['ada.new@example.com', true]);
    const [notice] = await mailed(user, 'user.email_changed');
    assert.deepEqual([notice?.kind, notice?.to.address, notice?.values['email']], ['email_changed', user.email, 'ada.new@example.com']);
    assert.ok((await world.store.events.list({ userId: user.id, limit: 50 })).some((event) => event.type === 'user.updated'));

    assert.deepEqual(await verifyEmailChange(deps, token, user), { kind: 'invalid_link' }, 'single use');
    assert.equal(await pendingEmailChange(deps, { ...user, ...changed }), null);
  });

  it('refuses the link to anyone not signed in as the account whose change it is, asking for that sign-in, and changes nothing (pre-hijacked accounts)', async () => {
    // Someone asks for another person's address on their own account; the link goes to that person.
    const asker = await person();
    const owner = await world.addUser({ username: 'owner', email: 'owner@example.org', emailVerified: true });
    await ask(asker, 'target@example.com');
    const token = await linkToken(asker);
    const signInFirst = (signedInAs: string | null) => ({ kind: 'sign-in', account: { username: asker.username, locale: null }, signedInAs });
    assert.deepEqual(await openEmailChangeLink(deps, token, null), signInFirst(null), 'followed signed in as no one');
    assert.deepEqual(await verifyEmailChange(deps, token, null), signInFirst(null));
    assert.deepEqual(await openEmailChangeLink(deps, token, owner), signInFirst('owner'), 'followed signed in as someone else');
    assert.deepEqual(await verifyEmailChange(deps, token, owner), signInFirst('owner'));
    const unchanged = (await world.store.users.get(asker.id))!;
    assert.deepEqual([unchanged.email, unchanged.emailVerified], [asker.email, true]);
    assert.equal(await pendingEmailChange(deps, asker), 'target@example.com', 'the link is not spent');
    assert.deepEqual(await mailed(asker, 'user.email_changed'), []);
    assert.equal((await openEmailChangeLink(deps, token, asker)).kind, 'confirm', 'its own account may');
  });

  it('asks a sign-in older than TESSERA_ACCOUNT_REAUTHENTICATE (15 minutes by default) to sign in again, and mails nothing', async () => {
    const user = await person();
    const signedInAt = world.clock.now();
    const askAt = (minutesLater: number) => {
      world.clock.set(signedInAt + minutesLater * 60_000);
      return requestEmailChange(deps, user, { email: 'elsewhere@example.com', ip: '198.51.100.7', locale: 'en', signedInAt });
    };
    assert.deepEqual(await askAt(16), { kind: 'sign-in-again' }, 'a browser left signed in does not move the address');
    assert.deepEqual(await mailed(user, 'user.email_change_requested'), []);
    assert.equal(await pendingEmailChange(deps, user), null);
    assert.deepEqual(await askAt(15), { kind: 'sent', email: 'elsewhere@example.com' }, 'fifteen minutes is still recent');
  });

  it('ends the reset links mailed to the old address once the new one is confirmed', async () => {
    const user = await person();
    const reset = new URL((await createResetLink(deps, user, 3600)).url).searchParams.get('token')!;
    await ask(user, 'moved@example.com');
    assert.ok(await findResetLink(deps, reset), 'live while the change waits');
    assert.equal((await verifyEmailChange(deps, await linkToken(user), user)).kind, 'done');
    assert.equal(await findResetLink(deps, reset), null, 'whoever still reads the old mailbox cannot set the password');
  });

  it('ends an older link when a newer one is asked for, and a link once it expires', async () => {
    const user = await person();
    await ask(user, 'first@example.com');
    const first = await linkToken(user);
    await ask(user, 'second@example.com');
    const second = await linkToken(user);
    assert.deepEqual(await verifyEmailChange(deps, first, user), { kind: 'invalid_link' }, 'only the address asked for last');
    assert.equal(await pendingEmailChange(deps, user), 'second@example.com');
    world.clock.advance(LINK_TTL_SECONDS * 1000);
    assert.deepEqual(await verifyEmailChange(deps, second, user), { kind: 'invalid_link' }, 'expired');
    assert.equal((await world.store.users.get(user.id))?.email, user.email);
  });

  it("ends the person's other waiting links when one is followed, as two requests made at once can leave", async () => {
    const user = await person();
    await ask(user, 'followed@example.com');
    const followed = await linkToken(user);
    // Two requests at once each end the links before them, and can leave both waiting: the other written as it would be.
    const now = world.clock.now();
    const other = 'link-of-the-other-request';
    await world.store.emailChanges.create({
      tokenHash: hashSecret(other),
      userId: user.id,
      email: 'other@example.com',
      createdAt: now,
      expiresAt: now + LINK_TTL_SECONDS * 1000,
      usedAt: null,
    });
    assert.equal((await verifyEmailChange(deps, followed, user)).kind, 'done');
    assert.deepEqual(await verifyEmailChange(deps, other, user), { kind: 'invalid_link' }, 'the other link is ended');
    assert.equal((await world.store.users.get(user.id))?.email, 'followed@example.com');
    assert.equal(await pendingEmailChange(deps, user), null);
  });

  it('refuses an address that cannot take mail, the one the account has verified, a made-up link, and works only where mail is set up', async () => {
    const user = await person();
    for (const address of ['not an address', 'a@b', 'ada@example.com\r\nBcc: x@example.com', `${'x'.repeat(250)}@example.com`]) {
      assert.deepEqual(await ask(user, address), { kind: 'invalid' }, address);
    }
    assert.deepEqual(await ask(user, user.email!.toUpperCase()), { kind: 'same' });
    // An address the account has but never verified may be asked for: the link verifies it.
    const unverified = await world.addUser({ username: 'unverified', email: 'unverified@example.com', emailVerified: false });
    assert.equal((await ask(unverified, 'unverified@example.com')).kind, 'sent');
    assert.equal((await verifyEmailChange(deps, await linkToken(unverified), unverified)).kind, 'done');
    assert.equal((await world.store.users.get(unverified.id))?.emailVerified, true, 'OIDC Core §5.1 email_verified: they showed they receive its mail');
    assert.deepEqual(await mailed(unverified, 'user.email_changed'), [], 'no notice when the address stays the same');
    assert.deepEqual(await verifyEmailChange(deps, 'made-up-token', user), { kind: 'invalid_link' });
    assert.deepEqual(await verifyEmailChange(deps, 'x'.repeat(129), user), { kind: 'invalid_link' });
    assert.deepEqual(
      await requestEmailChange({ ...deps, mail: undefined }, user, {
        email: 'new@example.com',
        ip: '198.51.100.7',
        locale: 'en',
        signedInAt: world.clock.now(),
      }),
      {
        kind: 'unavailable',
      },
    );
  });

  it('lets one of several concurrent followers of a link use it', async () => {
    const user = await person();
    await ask(user, 'raced@example.com');
    const token = await linkToken(user);
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => verifyEmailChange(deps, token, user)));
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['done', 'invalid_link', 'invalid_link', 'invalid_link', 'invalid_link']);
    assert.equal((await mailed(user, 'user.email_changed')).length, 1, 'one notice');
  });

  it('refuses a link to an address another account has, as any link it cannot use, and changes nothing, the link included', async () => {
    const other = await world.addUser({ username: 'sharing', email: 'shared@example.com', emailVerified: true });
    const user = await person();
    // The request does not say whether an account has the address: it is mailed as any other.
    assert.deepEqual(await ask(user, 'Shared@example.com'), { kind: 'sent', email: 'Shared@example.com' });
    const token = await linkToken(user);
    assert.deepEqual(await verifyEmailChange(deps, token, user), { kind: 'invalid_link' });
    const unchanged = (await world.store.users.get(user.id))!;
    assert.deepEqual([unchanged.email, unchanged.emailVerified], [user.email, true]);
    assert.equal((await world.store.users.get(other.id))?.email, 'shared@example.com');
    assert.deepEqual(await mailed(user, 'user.email_changed'), [], 'no notice');
    // Were it spent, the address would leave the asker's page unset: that the link was followed and refused.
    assert.equal(await pendingEmailChange(deps, user), 'Shared@example.com', 'the asker sees the change still waiting');
  });

  it('refuses the link of a person disabled since, and leaves their address as it was', async () => {
    const user = await person();
    await ask(user, 'while-disabled@example.com');
    const token = await linkToken(user);
    await world.store.users.setDisabled(user.id, true);
    assert.deepEqual(await verifyEmailChange(deps, token, user), { kind: 'invalid_link' });
    assert.equal((await world.store.users.get(user.id))?.email, user.email);
  });

  it(`counts each request against the address it names, ${PER_EMAIL} an hour, whoever asks, then tells how long to wait`, async () => {
    const [one, two] = [await person(), await person()];
    const target = 'popular@example.com';
    for (let i = 0; i < PER_EMAIL; i++) assert.equal((await ask(i % 2 === 0 ? one : two, target, `203.0.113.${i}`)).kind, 'sent');
    const limited = await ask(one, target.toUpperCase(), '203.0.113.99');
    assert.equal(limited.kind, 'limited');
    if (limited.kind === 'limited') assert.ok(limited.retryAfterSeconds > 0 && limited.retryAfterSeconds <= 3600, String(limited.retryAfterSeconds));
    assert.equal((await ask(one, 'another@example.com', '203.0.113.99')).kind, 'sent', 'another address has its own budget');
  });
});

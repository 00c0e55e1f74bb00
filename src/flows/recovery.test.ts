/**
 * "Forgot password?" without HTTP or SMTP: the same answer whether the address has an account
 * or not, a link mailed to each enabled account with it (read from the outbox, opened as the
 * dispatcher opens it) that resets the password, none to a disabled one, and the hourly
 * budgets; a mailed link used on an account whose address was never verified verifies it, and
 * when the account's maker chose that address at sign-up, removes every way in set up before
 * (pre-hijacked accounts). test/recovery.test.ts follows the
 * same through the pages and a real SMTP server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { hashSecret } from '../core/crypto.ts';
import type { UserRecord } from '../store/types.ts';
import { approvedGrant } from '../../test/store/fixtures.ts';
import { FLOW_ISSUER, flowWorld, linkIdentity, queuedMail, type FlowWorld } from '../../test/helpers/flows.ts';
import type { MailMessage } from './mail/outbox.ts';
import { RECOVERY_KEYS, requestRecovery } from './recovery.ts';
import { createUser, updateUser } from './manage/users.ts';
import { signUp, verifySignUp, type SignUpDeps } from './sign-up.ts';
import { createResetLink, resetPassword, type AccountDeps } from './users.ts';

const PER_ADDRESS = 4;

describe('recovering an account by e-mail ("Forgot password?")', () => {
  let world: FlowWorld;
  let deps: AccountDeps;

  before(async () => {
    world = await flowWorld({ TESSERA_RECOVERY_PER_ADDRESS: String(PER_ADDRESS), TESSERA_RECOVERY_PER_EMAIL: '1000' });
    deps = { ...world.deps, mail: world.mail };
  });
  after(() => world.close());

  /** The recovery messages queued so far. */
  async function recoveryMail(): Promise<MailMessage[]> {
    return queuedMail(
      world,
      (await world.store.events.list({ limit: 500 })).filter((event) => event.type === 'user.reset_link_created' && event.detail['by'] === 'email'),
    );
  }

  const ask = (email: string, ip = '198.51.100.20') => requestRecovery(deps, { email, ip, locale: 'en' });
  const forUser = async (user: UserRecord) => (await recoveryMail()).filter((message) => message.values['username'] === user.username);

  it('answers the same whether the address has an account or not, and mails a link only to an enabled account with it', async () => {
    const ada = await world.addUser({ username: 'ada', email: 'ada@example.com' });
    const gone = await world.addUser({ username: 'gone', email: 'gone@example.com', disabled: true });
    for (const [typed, email] of [
      ['  Ada@Example.com ', 'Ada@Example.com'],
      ['gone@example.com', 'gone@example.com'],
      ['nobody@example.com', 'nobody@example.com'],
    ]) {
      assert.deepEqual(await ask(typed!), { kind: 'sent', email }, `${typed}: the same answer`);
    }
    const [forAda, ...more] = await forUser(ada);
    assert.deepEqual([forAda?.kind, forAda?.to.address, more.length], ['recovery', 'ada@example.com', 0]);
    assert.deepEqual(await forUser(gone), [], 'none for a disabled account');
    assert.equal((await recoveryMail()).length, 1, 'none for an address of no account');

    // The link resets the password, once.
    const link = new URL(String(forAda!.values['link']));
    assert.equal(link.origin, new URL(FLOW_ISSUER).origin, 'built from the issuer');
    const token = link.searchParams.get('token')!;
    assert.equal((await resetPassword({ ...deps, passwords: world.passwords }, token, 'a brand new passphrase', '198.51.100.20')).kind, 'done');
    assert.deepEqual(await resetPassword({ ...deps, passwords: world.passwords }, token, 'another new passphrase', '198.51.100.20'), {
      kind: 'invalid_link',
    });
  });

  it("keeps a person's mailed link live when someone asks for theirs again: only using one ends the others", async () => {
    world.clock.advance(3600 * 1000);
    const bob = await world.addUser({ username: 'bob', email: 'bob@example.com' });
    assert.equal((await ask('bob@example.com', '198.51.100.21')).kind, 'sent');
    const [own] = await forUser(bob);
    // Someone else, elsewhere, asks for Bob's address twice: each link goes to Bob's mailbox too.
    for (const _ of [1, 2]) assert.equal((await ask('bob@example.com', '203.0.113.99')).kind, 'sent');
    const links = (await forUser(bob)).map((message) => new URL(String(message.values['link'])).searchParams.get('token')!);
    assert.equal(links.length, 3);
    const tokenOf = (message: MailMessage | undefined) => new URL(String(message!.values['link'])).searchParams.get('token')!;
    assert.equal((await resetPassword({ ...deps, passwords: world.passwords }, tokenOf(own), 'bob picks a new passphrase', '198.51.100.21')).kind, 'done');
    for (const token of links.slice(1))
      assert.equal(
        (await resetPassword({ ...deps, passwords: world.passwords }, token, 'another passphrase here', '203.0.113.99')).kind,
        'invalid_link',
        'used once: the others end',
      );
  });

  it('refuses an address that cannot take mail, and is not offered without a mail server', async () => {
    for (const address of ['not an address', 'ada@example.com\nBcc: all@example.com', '']) assert.deepEqual(await ask(address), { kind: 'invalid' }, address);
    assert.deepEqual(await requestRecovery({ ...deps, mail: undefined }, { email: 'ada@example.com', ip: '198.51.100.20', locale: 'en' }), {
      kind: 'unavailable',
    });
  });

  it(`counts every request from one network address, ${PER_ADDRESS} an hour, found or not, then tells how long to wait`, async () => {
    const ip = '203.0.113.50';
    for (let i = 0; i < PER_ADDRESS; i++) assert.equal((await ask(`someone${i}@example.com`, ip)).kind, 'sent');
    const limited = await ask('someone-else@example.com', ip);
    assert.equal(limited.kind, 'limited');
    if (limited.kind === 'limited') assert.ok(limited.retryAfterSeconds > 0 && limited.retryAfterSeconds <= 3600);
    assert.equal((await ask('someone-else@example.com', '203.0.113.51')).kind, 'sent', 'another address has its own budget');
    world.clock.advance(3600 * 1000);
    assert.equal((await ask('someone-else@example.com', ip)).kind, 'sent', 'an hour later');
  });

  it('counts the requests for one e-mail address, in any case, under a counter that names no one: the database keeps no address asked for', async () => {
    world.clock.advance(3600 * 1000);
    for (const email of ['Eve@Example.com', 'eve@example.com']) assert.equal((await ask(email, '203.0.113.60')).kind, 'sent');
    const open = await world.store.rateLimits.listOpen('recovery:', world.clock.now(), 100);
    assert.deepEqual(
      open.filter((window) => window.key.startsWith(RECOVERY_KEYS.email)).map((window) => [window.key, window.hits]),
      [[`${RECOVERY_KEYS.email}${hashSecret('eve@example.com')}`, 2]],
      'one counter, under the hash of the address lower-cased',
    );
    assert.deepEqual(
      open.filter((window) => window.key.toLowerCase().includes('eve@example.com')),
      [],
      'no counter names the address',
    );
  });
});

describe('a mailed reset link on an account whose address was never verified (pre-hijacked accounts)', () => {
  let world: FlowWorld;
  let deps: SignUpDeps & { readonly passwords: FlowWorld['passwords'] };
  let appId: string;

  before(async () => {
    world = await flowWorld({
      TESSERA_SIGN_UP: 'open',
      TESSERA_SIGN_UP_VERIFY: 'later',
      TESSERA_RECOVERY_PER_EMAIL: '1000',
      TESSERA_RECOVERY_PER_ADDRESS: '1000',
    });
    deps = { ...world.deps, mail: world.mail };
    ({
      client: { id: appId },
    } = await world.addClient({ client_name: 'Notes', redirect_uris: ['https://notes.example/cb'], scope: 'openid' }));
  });
  after(() => world.close());

  /**
   * What whoever held the account could add before its address was proved: a passkey, one-time
   * codes with their recovery codes, an upstream identity, an app's approval (its refresh
   * tokens), and a new address waiting for its link.
   */
  async function addWaysIn(user: UserRecord): Promise<void> {
    const now = world.clock.now();
    await world.store.passkeys.create({
      id: `passkey-of-${user.username}`,
      userId: user.id,
      name: "The attacker's phone",
      publicKey: 'pQECAyYgASFYIA',
      counter: 0,
      transports: ['internal'],
      deviceType: 'multiDevice',
      backedUp: true,
      createdAt: now,
      lastUsedAt: null,
    });
    assert.equal(await world.store.totp.begin(user.id, 'JBSWY3DPEHPK3PXP', now), true);
    assert.ok(await world.store.totp.confirm(user.id, 1, now));
    await world.store.recoveryCodes.replace(user.id, [hashSecret(`code-${user.username}`)], now);
    await linkIdentity(world, user.id, `upstream-${user.username}`);
    await world.store.grants.create(approvedGrant({ id: randomUUID(), userId: user.id, clientId: appId }, now));
    await world.store.emailChanges.create({
      tokenHash: hashSecret(`change-${user.username}`),
      userId: user.id,
      email: `attacker-${user.username}@example.net`,
      createdAt: now,
      expiresAt: now + 3600_000,
      usedAt: null,
    });
  }

  /** The ways in `user` has now, counted. */
  async function waysIn(user: UserRecord) {
    const now = world.clock.now();
    return {
      passkeys: (await world.store.passkeys.listForUser(user.id)).length,
      totp: (await world.store.totp.get(user.id)) !== null,
      recoveryCodes: await world.store.recoveryCodes.countUnused(user.id),
      identities: (await world.store.linkedIdentities.listForUser(user.id)).length,
      liveGrants: (await world.store.grants.listForUser(user.id)).filter((grant) => grant.revokedAt === null).length,
      addressWaiting: (await world.store.emailChanges.pendingFor(user.id, now)) !== null,
    };
  }
  const ALL = { passkeys: 1, totp: true, recoveryCodes: 1, identities: 1, liveGrants: 1, addressWaiting: true };
  const NONE = { passkeys: 0, totp: false, recoveryCodes: 0, identities: 0, liveGrants: 0, addressWaiting: false };

  /** Asks "Forgot password?" for `email` and returns the token of the link mailed to `user`. */
  async function mailedToken(email: string, user: UserRecord): Promise<string> {
    assert.equal((await requestRecovery(deps, { email, ip: '198.51.100.30', locale: 'en' })).kind, 'sent');
    const [event] = await world.store.events.list({ userId: user.id, type: 'user.reset_link_created', limit: 1 });
    const [message] = await queuedMail(world, [event!]);
    return new URL(String(message!.values['link'])).searchParams.get('token')!;
  }

  /** Signs up `username` with `email`, the link later: the account is made at once, its address unverified and self-asserted. */
  async function signedUp(username: string, email: string): Promise<UserRecord> {
    const input = { username, name: username, email, password: 'a passphrase of their own', ip: '203.0.113.67', locale: 'en' as const, returnTo: '/account' };
    assert.equal((await signUp(deps, input)).kind, 'sent');
    return (await world.store.users.findByUsername(username))!;
  }

  const reset = (token: string) => resetPassword(deps, token, 'the owner picks a new passphrase', '198.51.100.30');
  const current = async (user: UserRecord) => (await world.store.users.get(user.id))!;

  it("verifies the address and removes every way in set up before it, when the owner uses the link mailed to the attacker's account", async () => {
    // The attacker signs up first with Ada's address; with the link later the account is made at once, unverified.
    const made = await signUp(deps, {
      username: 'mallory',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      password: 'the attacker knows this one',
      ip: '203.0.113.66',
      locale: 'en',
      returnTo: '/account',
    });
    assert.equal(made.kind, 'sent');
    const account = (await world.store.users.findByUsername('mallory'))!;
    assert.equal(account.emailVerified, false);
    await addWaysIn(account);
    assert.deepEqual(await waysIn(account), ALL);

    // Ada, told on signing up that her address has an account, asks "Forgot password?" and uses the link.
    const done = await reset(await mailedToken('ada@example.com', account));
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.deepEqual(done.waysInRemoved, { passkeys: 1, totp: true, identities: 1, grants: 1 });
    assert.equal((await current(account)).emailVerified, true, 'the address is verified: its owner received the link');
    assert.deepEqual(await waysIn(account), NONE);

    const events = await world.store.events.list({ userId: account.id, limit: 50 });
    const verified = events.find((event) => event.type === 'user.email_verified');
    assert.deepEqual(verified?.detail, { by: 'password_reset' });
    const removed = events.find((event) => event.type === 'second_factor.reset');
    assert.deepEqual(removed?.detail, { passkeys_removed: 1, totp_removed: true, identities_removed: 1, grants_revoked: 1, by: 'password_reset' });
    assert.equal(events.filter((event) => event.type === 'grant.revoked' && event.detail['by'] === 'password_reset').length, 1);
  });

  it("leaves the ways in of an unverified account alone when the link is an operator's: it was never mailed to the address", async () => {
    const bea = await world.addUser({ username: 'bea', email: 'bea@example.com' });
    await addWaysIn(bea);
    const token = new URL((await createResetLink(deps, bea, 3600)).url).searchParams.get('token')!;
    const done = await reset(token);
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.equal(done.waysInRemoved, null);
    assert.equal((await current(bea)).emailVerified, false);
    assert.deepEqual(await waysIn(bea), ALL);
  });

  it('leaves the ways in alone when the account proved its address already', async () => {
    const cy = await world.addUser({ username: 'cy', email: 'cy@example.com', emailVerified: true });
    await addWaysIn(cy);
    const done = await reset(await mailedToken('cy@example.com', cy));
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.equal(done.waysInRemoved, null);
    assert.deepEqual(await waysIn(cy), ALL);
  });

  it('proves only the address the link was mailed to: another one the account has now proves nothing; the same one in another case does', async () => {
    const dee = await world.addUser({ username: 'dee', email: 'dee@example.com', emailSelfAsserted: true });
    const eli = await world.addUser({ username: 'eli', email: 'eli@example.com', emailSelfAsserted: true });
    for (const user of [dee, eli]) await addWaysIn(user);
    const [deeToken, eliToken] = [await mailedToken('dee@example.com', dee), await mailedToken('eli@example.com', eli)];
    // Written straight to the store: every flow that moves an address spends the links mailed to the old one.
    await world.store.users.update(dee.id, { email: 'dee@example.org' }, world.clock.now());
    await world.store.users.update(eli.id, { email: 'ELI@Example.COM' }, world.clock.now());
    assert.equal((await reset(deeToken)).kind, 'done');
    assert.equal((await current(dee)).emailVerified, false);
    assert.deepEqual(await waysIn(dee), ALL);
    assert.equal((await reset(eliToken)).kind, 'done');
    assert.equal((await current(eli)).emailVerified, true);
    assert.deepEqual(await waysIn(eli), NONE);
  });

  it('verifies the address of an account an operator made, and leaves what its person set up: nobody but the operator chose the address', async () => {
    // The console, the admin API and `tessera user add` without --email-verified: the address unverified.
    const made = await createUser(world.manage, { username: 'fay', password: 'an operator picked this', email: 'fay@example.com' });
    assert.equal(made.emailVerified, false);
    await addWaysIn(made);
    const done = await reset(await mailedToken('fay@example.com', made));
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.equal(done.waysInRemoved, null);
    assert.equal((await current(made)).emailVerified, true, 'the link still shows its person reads the address');
    assert.deepEqual(await waysIn(made), ALL);
    const events = await world.store.events.list({ userId: made.id, limit: 50 });
    assert.deepEqual(events.find((event) => event.type === 'user.email_verified')?.detail, { by: 'password_reset' });
    assert.deepEqual(
      events.filter((event) => event.type === 'second_factor.reset' || event.type === 'grant.revoked'),
      [],
    );
  });

  it('leaves what was set up on an account made by sign-up whose address was verified, then replaced by an operator', async () => {
    const gus = await signedUp('gus', 'gus@example.com');
    const [created] = await world.store.events.list({ userId: gus.id, type: 'user.created', limit: 1 });
    const [verify] = await queuedMail(world, [created!]);
    const verified = await verifySignUp(deps, new URL(String(verify!.values['link'])).searchParams.get('token')!, gus);
    assert.equal(verified.kind, 'done');
    // The operator gives another address, unverified: theirs to vouch for, not whoever signed up.
    await updateUser(world.manage, 'gus', { email: 'gus@example.org' });
    assert.deepEqual([(await current(gus)).emailVerified, (await current(gus)).emailSelfAsserted], [false, false]);
    await addWaysIn(gus);
    const done = await reset(await mailedToken('gus@example.org', gus));
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.equal(done.waysInRemoved, null);
    assert.equal((await current(gus)).emailVerified, true);
    assert.deepEqual(await waysIn(gus), ALL);
  });

  it('counts revoked app approvals as a way in removed: with nothing else set up, the reset still records and reports them', async () => {
    const hal = await signedUp('hal', 'hal@example.com');
    await world.store.grants.create(approvedGrant({ id: randomUUID(), userId: hal.id, clientId: appId }, world.clock.now()));
    const done = await reset(await mailedToken('hal@example.com', hal));
    assert.equal(done.kind, 'done');
    if (done.kind === 'done') assert.deepEqual(done.waysInRemoved, { passkeys: 0, totp: false, identities: 0, grants: 1 });
    assert.deepEqual(await waysIn(hal), NONE);
    const [removed] = await world.store.events.list({ userId: hal.id, type: 'second_factor.reset', limit: 1 });
    assert.deepEqual(removed?.detail, { passkeys_removed: 0, totp_removed: false, identities_removed: 0, grants_revoked: 1, by: 'password_reset' });
  });
});

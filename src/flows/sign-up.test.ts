/**
 * Self-service sign-up without HTTP or SMTP: with the link first (the default), the account is
 * made when the link mailed to the address is followed, in the browser that signed up or
 * elsewhere with the password chosen there, checked under the sign-in limits; with it later, at once, its maker signed
 * in, and unverified until the link is followed signed in as that account. The same answer whether the address has an account, its owner told instead;
 * the fields refused under the name the page shows; the budgets; a link used once, and one
 * whose username was taken while it waited. test/sign-up.test.ts follows the pages and mail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../core/crypto.ts';
import { verifyPassword } from '../core/password.ts';
import type { UserRecord } from '../store/types.ts';
import { CookieJar, FLOW_ISSUER, flowWorld, queuedMail, type FlowWorld } from '../../test/helpers/flows.ts';
import type { MailMessage } from './mail/outbox.ts';
import { signedIn } from './session/session.ts';
import type { PasswordCheckDeps } from './sign-in.ts';
import { findSignUp, openSignUpLink, SIGN_UP_KEYS, signUp, verifySignUp, type SignUpDeps, type SignUpInput } from './sign-up.ts';

const PASSWORD = 'correct horse battery staple';
/** The browser the sign-up forms are posted from (a hash of its CSRF cookie), unless a test says another. */
const SIGNED_UP_IN = hashSecret('the csrf cookie of the browser that signs up');
/** The browser that signed up, following its own link: one step. */
const THERE = { browser: SIGNED_UP_IN };
const PER_ADDRESS = 6;
const PER_EMAIL = 2;

let signUps = 0;

/** A sign-up's fields, a fresh username and address each time unless given. */
function input(fields: Partial<SignUpInput> = {}): SignUpInput {
  signUps += 1;
  return {
    username: `newcomer${signUps}`,
    name: 'New Comer',
    email: `newcomer${signUps}@example.com`,
    password: PASSWORD,
    ip: `198.51.100.${signUps % 250}`,
    locale: 'en',
    returnTo: '/account',
    browser: SIGNED_UP_IN,
    ...fields,
  };
}

/** A world whose sign-up is open with `verify`, mail set up unless `mail` is false. */
async function signUpWorld(verify: 'first' | 'later', env: Record<string, string> = {}): Promise<{ world: FlowWorld; deps: SignUpDeps & PasswordCheckDeps }> {
  const world = await flowWorld({
    TESSERA_SIGN_UP: 'open',
    TESSERA_SIGN_UP_VERIFY: verify,
    TESSERA_SIGN_UP_PER_ADDRESS: String(PER_ADDRESS),
    TESSERA_SIGN_UP_PER_EMAIL: String(PER_EMAIL),
    ...env,
  });
  return { world, deps: { ...world.deps, mail: world.mail } };
}

/** The messages queued for events of `type` that name `username`. */
async function mailFor(world: FlowWorld, type: string, username: string): Promise<MailMessage[]> {
  return queuedMail(
    world,
    (await world.store.events.list({ limit: 500 })).filter((event) => event.type === type && event.username === username),
  );
}

/** The token of the link in `message`, built from the issuer. */
function tokenOf(message: MailMessage | undefined): string {
  const link = new URL(String(message?.values['link']));
  assert.equal(link.origin, new URL(FLOW_ISSUER).origin, 'built from the issuer');
  return link.searchParams.get('token')!;
}

describe('sign-up, the link first (TESSERA_SIGN_UP_VERIFY=first)', () => {
  let world: FlowWorld;
  let deps: SignUpDeps & PasswordCheckDeps;

  before(async () => {
    ({ world, deps } = await signUpWorld('first', { TESSERA_SIGN_UP_DOMAINS: 'example.com,example.org' }));
  });
  after(() => world.close());

  it('makes the account, its address verified, when the link mailed to it is followed, once', async () => {
    const fields = input({ username: '  Grace.Hopper ', returnTo: '/authorize?client_id=x' });
    assert.deepEqual(await signUp(deps, fields), { kind: 'sent', email: fields.email });
    assert.equal(await world.store.users.findByUsername('grace.hopper'), null, 'no account before the link is followed');
    const [verify] = await mailFor(world, 'signup.requested', 'grace.hopper');
    assert.deepEqual([verify?.kind, verify?.to.address], ['verify', fields.email]);
    const token = tokenOf(verify);
    // Nobody holds the account yet: in the browser that signed up, signed in or not, one step.
    const done = await verifySignUp(deps, token, null, THERE);
    assert.equal(done.kind, 'done');
    if (done.kind !== 'done') return;
    assert.deepEqual(
      [done.user.username, done.user.email, done.user.emailVerified, done.returnTo],
      ['grace.hopper', fields.email, true, '/authorize?client_id=x'],
    );
    assert.ok(await verifyPassword(PASSWORD, (await world.store.users.get(done.user.id))!.passwordHash));
    assert.deepEqual(await verifySignUp(deps, token, null, THERE), { kind: 'invalid_link' }, 'once');
  });

  it('answers the same for an address that has an account, and tells its owner how back in, not that someone signed up', async () => {
    const owner = await world.addUser({ username: 'owner', name: 'The Owner', email: 'owner@example.com' });
    assert.deepEqual(await signUp(deps, input({ username: 'impostor', email: 'Owner@Example.com' })), { kind: 'sent', email: 'Owner@Example.com' });
    const [notice, ...more] = await mailFor(world, 'signup.requested', 'impostor');
    assert.deepEqual([notice?.kind, notice?.to.address, notice?.values['username'], more.length], ['signup_exists', 'Owner@Example.com', owner.username, 0]);
    assert.equal(new URL(String(notice?.values['link'])).pathname, '/forgot-password');
    assert.equal(await world.store.users.findByUsername('impostor'), null);
  });

  it('refuses each field under the name and problem the page shows, counting none of them', async () => {
    const cases: [string, Partial<SignUpInput>, unknown][] = [
      ['no username', { username: '  ' }, { kind: 'invalid', field: 'username', problem: 'missing' }],
      ['a username with a space', { username: 'grace hopper' }, { kind: 'invalid', field: 'username', problem: 'format' }],
      ['no name', { name: '\t' }, { kind: 'invalid', field: 'name', problem: 'missing' }],
      ['a name of 201 characters', { name: 'x'.repeat(201) }, { kind: 'invalid', field: 'name', problem: 'long' }],
      ['no address', { email: ' ' }, { kind: 'invalid', field: 'email', problem: 'missing' }],
      ['an address that cannot take mail', { email: 'grace@localhost' }, { kind: 'invalid', field: 'email', problem: 'format' }],
      ['an address of a domain not allowed', { email: 'grace@example.net' }, { kind: 'invalid', field: 'email', problem: 'domain' }],
      ['no password', { password: '' }, { kind: 'invalid', field: 'password', problem: 'missing' }],
      ['a password too short', { password: 'short' }, { kind: 'invalid', field: 'password', problem: 'short' }],
      ['a password too long', { password: 'x'.repeat(1025) }, { kind: 'invalid', field: 'password', problem: 'long' }],
    ];
    for (const [what, fields, expected] of cases) assert.deepEqual(await signUp(deps, input({ ...fields, ip: '203.0.113.1' })), expected, what);
    assert.equal((await signUp(deps, input({ ip: '203.0.113.1', email: 'grace@EXAMPLE.org' }))).kind, 'sent', 'the budget untouched; domains as any case');
  });

  it('says a username is taken, whatever its case, and when it was taken while the link waited', async () => {
    await world.addUser({ username: 'ada' });
    assert.deepEqual(await signUp(deps, input({ username: 'ADA' })), { kind: 'taken' });
    const fields = input({ username: 'quick' });
    await signUp(deps, fields);
    const token = tokenOf((await mailFor(world, 'signup.requested', 'quick'))[0]);
    await world.addUser({ username: 'quick' });
    assert.deepEqual(await verifySignUp(deps, token, null, THERE), { kind: 'taken' });
  });

  it(`counts each sign-up against its address, ${PER_EMAIL} an hour, under a counter that names no one, and its network address, ${PER_ADDRESS}, account or not`, async () => {
    const email = 'popular@example.com';
    for (let i = 0; i < PER_EMAIL; i++) assert.equal((await signUp(deps, input({ email, ip: `192.0.2.${i}` }))).kind, 'sent');
    const byEmail = await signUp(deps, input({ email: email.toUpperCase(), ip: '192.0.2.99' }));
    assert.equal(byEmail.kind, 'limited');
    const counters = (await world.store.rateLimits.listOpen(SIGN_UP_KEYS.email, world.clock.now(), 1000)).map((window) => window.key);
    assert.ok(counters.includes(`${SIGN_UP_KEYS.email}${hashSecret(email)}`), 'counted under the hash of the address, lower-cased');
    assert.deepEqual(
      counters.filter((key) => key.includes('@')),
      [],
      'the database keeps no address signed up with',
    );
    const ip = '192.0.2.200';
    for (let i = 0; i < PER_ADDRESS; i++) assert.equal((await signUp(deps, input({ ip }))).kind, 'sent');
    const byAddress = await signUp(deps, input({ ip }));
    assert.equal(byAddress.kind, 'limited');
    if (byAddress.kind === 'limited') assert.ok(byAddress.retryAfterSeconds > 0 && byAddress.retryAfterSeconds <= 3600);
  });

  it('makes one account of one link, whoever of several concurrent followers wins', async () => {
    await signUp(deps, input({ username: 'raced' }));
    const token = tokenOf((await mailFor(world, 'signup.requested', 'raced'))[0]);
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => verifySignUp(deps, token, null, THERE)));
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['done', 'invalid_link', 'invalid_link', 'invalid_link']);
  });

  it('refuses a link made up, too long, or expired', async () => {
    assert.deepEqual(await verifySignUp(deps, 'made-up', null, THERE), { kind: 'invalid_link' });
    assert.deepEqual(await verifySignUp(deps, 'x'.repeat(129), null, THERE), { kind: 'invalid_link' });
    await signUp(deps, input({ username: 'slow' }));
    const token = tokenOf((await mailFor(world, 'signup.requested', 'slow'))[0]);
    world.clock.advance(world.config.signUp.linkTtlSeconds * 1000);
    assert.deepEqual(await verifySignUp(deps, token, null, THERE), { kind: 'invalid_link' });
    assert.equal(await world.store.users.findByUsername('slow'), null);
  });

  it('asks another browser for the password chosen in the form, and makes nothing of a wrong one, leaving the link (pre-hijacked accounts)', async () => {
    // Mallory signs up in her browser with Lin's address and her own password; the link goes to Lin.
    await signUp(deps, input({ username: 'mallory', email: 'lin@example.com', password: 'mallory chose this', browser: hashSecret('mallory’s browser') }));
    const token = tokenOf((await mailFor(world, 'signup.requested', 'mallory'))[0]);
    const lin = { browser: hashSecret('lin’s browser') };
    const opened = await openSignUpLink(deps, token, null, lin);
    assert.deepEqual([opened.kind, opened.kind === 'confirm' && opened.password], ['confirm', true], 'the button asks for the password');
    const asked = { username: 'mallory', locale: 'en' };
    assert.deepEqual(await verifySignUp(deps, token, null, lin), { kind: 'password', ...asked }, 'no password typed');
    const typed = (password: string) => ({ ...lin, typed: { password, ip: '192.0.2.77' } });
    assert.deepEqual(await verifySignUp(deps, token, null, typed('')), { kind: 'password', ...asked }, 'an empty one');
    assert.deepEqual(await verifySignUp(deps, token, null, typed('lin guesses this')), { kind: 'wrong_password', ...asked });
    assert.deepEqual(await verifySignUp(deps, token, null, { browser: null }), { kind: 'password', ...asked }, 'a browser with no cookie');
    assert.equal(await world.store.users.findByUsername('mallory'), null, 'no account');
    assert.ok(await findSignUp(deps, token), 'the link is not spent');
    const failed = (await world.store.events.list({ limit: 50 })).filter((event) => event.type === 'signin.failed' && event.username === 'mallory');
    assert.deepEqual(
      failed.map((event) => event.detail['reason']),
      ['wrong_sign_up_password'],
      'the wrong one counted as a wrong password for that username, the empty one not at all',
    );
  });

  it('makes the account in another browser given the password chosen in the form, charging each try to the network address', async () => {
    await signUp(deps, input({ username: 'roaming', password: PASSWORD, browser: hashSecret('a laptop') }));
    const token = tokenOf((await mailFor(world, 'signup.requested', 'roaming'))[0]);
    const phone = (password: string) => ({ browser: hashSecret('a phone'), typed: { password, ip: '192.0.2.78' } });
    assert.equal((await verifySignUp(deps, token, null, phone('not it at all'))).kind, 'wrong_password');
    const counted = await world.store.rateLimits.listOpen('sign-in:ip:192.0.2.78', world.clock.now(), 10);
    assert.deepEqual(
      counted.map((window) => [window.key, window.hits]),
      [['sign-in:ip:192.0.2.78', 1]],
      'under the sign-in limit of the address',
    );
    const done = await verifySignUp(deps, token, null, phone(PASSWORD));
    assert.equal(done.kind, 'done');
    if (done.kind !== 'done') return;
    assert.deepEqual([done.user.username, done.user.emailVerified], ['roaming', true]);
    assert.deepEqual(await verifySignUp(deps, token, null, phone(PASSWORD)), { kind: 'invalid_link' }, 'once');
  });

  it('refuses the password from an address past the sign-in limit, unchecked, with when to try again', async () => {
    await signUp(deps, input({ username: 'guessed', browser: hashSecret('the maker') }));
    const token = tokenOf((await mailFor(world, 'signup.requested', 'guessed'))[0]);
    const guess = (password: string) => verifySignUp(deps, token, null, { browser: hashSecret('a guesser'), typed: { password, ip: '192.0.2.79' } });
    for (let i = 0; i < world.config.signIn.perUserAddress; i++) assert.equal((await guess(`guess number ${i}`)).kind, 'wrong_password');
    const refused = await guess(PASSWORD);
    assert.equal(refused.kind, 'limited');
    if (refused.kind === 'limited') assert.ok(refused.retryAfterSeconds > 0);
    assert.equal(await world.store.users.findByUsername('guessed'), null);
    assert.equal((await verifySignUp(deps, token, null, { browser: hashSecret('the maker') })).kind, 'done', 'the browser that signed up is not held up');
  });
});

describe('sign-up, the link later (TESSERA_SIGN_UP_VERIFY=later)', () => {
  let world: FlowWorld;
  let deps: SignUpDeps & PasswordCheckDeps;

  before(async () => {
    ({ world, deps } = await signUpWorld('later'));
  });
  after(() => world.close());

  /** The account `username` signed up for, as the store has it. */
  const account = async (username: string): Promise<UserRecord> => (await world.store.users.findByUsername(username))!;

  it('makes the account at once, signs in the browser that made it, and verifies its address when the link is followed there', async () => {
    const cookies = new CookieJar();
    await signUp(deps, input({ username: 'hasty' }), { cookies, ip: '198.51.100.9', userAgent: 'TestBrowser/1.0', log: { warn: () => {} } });
    const hasty = await account('hasty');
    assert.equal(hasty.emailVerified, false);
    const session = await signedIn(deps, { cookies });
    assert.equal(session?.user.id, hasty.id, 'the maker is signed in');
    assert.deepEqual(session?.session.amr, ['pwd'], 'by the password just chosen');
    const [verify] = await mailFor(world, 'user.created', 'hasty');
    assert.equal((await verifySignUp(deps, tokenOf(verify), session!.user)).kind, 'done');
    assert.equal((await account('hasty')).emailVerified, true);
  });

  it('refuses the link to anyone not signed in as its account, asking for that sign-in, and changes nothing (pre-hijacked accounts)', async () => {
    // Someone signs up first with another person's address; the link goes to that person.
    await signUp(deps, input({ username: 'mallory', email: 'victim@example.com' }));
    const mallory = await account('mallory');
    const victim = await world.addUser({ username: 'victim' });
    const token = tokenOf((await mailFor(world, 'user.created', 'mallory'))[0]);
    const signInFirst = (signedInAs: string | null) => ({ kind: 'sign-in', account: { username: 'mallory', locale: 'en' }, signedInAs });
    assert.deepEqual(await openSignUpLink(deps, token, null), signInFirst(null), 'followed signed in as no one');
    assert.deepEqual(await verifySignUp(deps, token, null), signInFirst(null));
    assert.deepEqual(await openSignUpLink(deps, token, victim), signInFirst('victim'), 'followed signed in as the address’s owner');
    assert.deepEqual(await verifySignUp(deps, token, victim), signInFirst('victim'));
    assert.equal((await account('mallory')).emailVerified, false);
    assert.equal((await account('mallory')).emailSelfAsserted, true, 'still self-asserted: a reset link mailed to it removes what was set up');
    assert.ok(await findSignUp(deps, token), 'the link is not spent');
    assert.deepEqual(
      (await world.store.events.list({ userId: mallory.id, limit: 20 })).filter((event) => event.type === 'user.email_verified'),
      [],
    );
    assert.equal((await openSignUpLink(deps, token, mallory)).kind, 'confirm', 'its own account may');
  });

  it('refuses the link once the account has another address, or is disabled, and leaves it unverified', async () => {
    await signUp(deps, input({ username: 'mover' }));
    const mover = await account('mover');
    await world.store.users.update(mover.id, { email: 'moved@example.com' }, world.clock.now() + 1);
    assert.deepEqual(await verifySignUp(deps, tokenOf((await mailFor(world, 'user.created', 'mover'))[0]), mover), { kind: 'invalid_link' });
    await signUp(deps, input({ username: 'stopped' }));
    const stopped = await account('stopped');
    await world.store.users.setDisabled(stopped.id, true);
    assert.deepEqual(await verifySignUp(deps, tokenOf((await mailFor(world, 'user.created', 'stopped'))[0]), stopped), { kind: 'invalid_link' });
    assert.equal((await account('stopped')).emailVerified, false);
  });

  it('is closed unless open, and with the link first, unless mail is set up', async () => {
    const closed = await flowWorld();
    try {
      assert.deepEqual(await signUp({ ...closed.deps, mail: closed.mail }, input()), { kind: 'closed' });
    } finally {
      await closed.close();
    }
    const first = await signUpWorld('first');
    try {
      assert.deepEqual(await signUp(first.world.deps, input()), { kind: 'closed' }, 'no mail: no link to send');
    } finally {
      await first.world.close();
    }
    assert.equal((await signUp({ ...deps, mail: undefined }, input({ username: 'unmailed' }))).kind, 'sent', 'later works without mail');
    assert.equal((await account('unmailed')).emailVerified, false);
  });
});

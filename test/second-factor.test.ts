/**
 * One-time codes (RFC 6238) and the sign-in policy: enrolment with a code computed here,
 * the code asked after the password, replays and guesses, recovery codes, and who may
 * approve (TESSERA_REQUIRE_SECOND_FACTOR, a client that requires a passkey, acr_values).
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { SoftwarePasskey } from './helpers/authenticator.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { BrowserAt, startDevice } from './helpers/device.ts';
import { pkceRequest } from './helpers/fixtures.ts';
import { discover } from './helpers/lifecycle.ts';
import { closeAll, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { clockAtStart } from './helpers/clock.ts';

/** RFC 6238 written out again here, so the server's own code is not what checks it. */
function totp(secretBase32: string, ms: number, stepOffset = 0): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const char of secretBase32.replace(/\s/g, '')) bits += alphabet.indexOf(char).toString(2).padStart(5, '0');
  const key = Buffer.from(bits.match(/.{8}/g)!.map((byte) => parseInt(byte, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(ms / 30_000) + stepOffset));
  const mac = createHmac('sha1', key).update(counter).digest();
  const offset = mac[19]! & 15;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/** Signs in with the password, from `ip` when given (the server must trust X-Forwarded-For). */
async function signInWithPassword(
  server: TestServer,
  user: TestUser,
  returnTo = '/account',
  ip: string | null = null,
): Promise<{ browser: FormBrowser; page: Page }> {
  const browser = new BrowserAt(server.url, ip);
  const login = await browser.follow(await browser.request(`/login?return_to=${encodeURIComponent(returnTo)}`));
  const page = await browser.submit(login, '/login', { username: user.username, password: user.password });
  return { browser, page };
}

/** The authenticator app's secret, as the setup page shows it, without its spaces. */
function totpSecretOf(setup: Page): string {
  return /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(setup.html)![1]!.replace(/ /g, '');
}

/** Sets up one-time codes from `account` (the account page) with the right code: the setup page, its secret, and the page after. */
async function setUpTotp(browser: FormBrowser, account: Page, clock: ManualClock): Promise<{ setup: Page; secret: string; codes: Page }> {
  const setup = await browser.submit(account, '/account/totp/setup', {});
  assert.equal(setup.status, 200, setup.html.slice(0, 500));
  const secret = totpSecretOf(setup);
  return { setup, secret, codes: await browser.submit(setup, '/account/totp/confirm', { code: totp(secret, clock.now()) }) };
}

/** Enrols `user` in one-time codes; returns the secret and the recovery codes shown. */
async function enrol(server: TestServer, user: TestUser, clock: ManualClock): Promise<{ secret: string; recoveryCodes: string[]; browser: FormBrowser }> {
  const { browser, page } = await signInWithPassword(server, user);
  const { setup, secret, codes: done } = await setUpTotp(browser, await browser.follow(page), clock);
  assert.match(setup.html, /<img src="data:image\/png;base64,[^"]+" alt="QR code for your authenticator app"/);
  assert.equal(done.status, 200, done.html.slice(0, 500));
  const recoveryCodes = [...done.html.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((match) => match[1]!);
  return { secret, recoveryCodes, browser };
}

describe('one-time codes after the password', () => {
  const clock = clockAtStart();
  let server: TestServer;
  let client: TestClient;

  before(async () => {
    // X-Forwarded-For is believed, so that a test can sign in from many addresses.
    server = await startTestServer({ clock, env: { TESSERA_TRUST_PROXY: 'true' } });
    client = await server.addClient({ name: 'Photo Printer' });
  });
  after(() => server?.close());

  it('enrols with a QR code and a code from the app, shows ten recovery codes once, and stores only their hashes', async () => {
    const user = await server.addUser();
    const { browser: setupBrowser } = await signInWithPassword(server, user);
    const account = await setupBrowser.follow(await setupBrowser.request('/account'));
    assert.match(account.html, /<h2 id="totp-heading">Authenticator app<\/h2>/);
    const setup = await setupBrowser.submit(account, '/account/totp/setup', {});
    const secret = totpSecretOf(setup);
    assert.equal(secret.length, 32, '160 bits, base32');
    const wrong = await setupBrowser.submit(setup, '/account/totp/confirm', { code: '000000' === totp(secret, clock.now()) ? '111111' : '000000' });
    assert.equal(wrong.status, 400);
    assert.match(wrong.html, /That code is not right/);
    assert.equal((await server.store.totp.get(user.id))?.confirmedAt, null, 'not on until confirmed');

    const done = await setupBrowser.submit(wrong, '/account/totp/confirm', { code: totp(secret, clock.now()) });
    assert.equal(done.status, 200);
    const codes = [...done.html.matchAll(/<li><code>([a-z2-9]{5}-[a-z2-9]{5})<\/code><\/li>/g)].map((match) => match[1]!);
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    assert.equal(await server.store.recoveryCodes.countUnused(user.id), 10);
    const page = await setupBrowser.follow(await setupBrowser.request('/account'));
    assert.match(page.html, /One-time codes are on/);
    assert.match(page.html, /10 recovery codes are left/);
    assert.doesNotMatch(page.html, new RegExp(codes[0]!), 'shown only once');

    // The audit trail: the wrong code during setup, then the enrolment; neither holds a code.
    const [failed] = await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 5 });
    assert.deepEqual(failed?.detail, { reason: 'wrong_code', during: 'enrolment' });
    assert.ok(failed?.ip, 'with the address it came from');
    const [enabled] = await server.store.events.list({ userId: user.id, type: 'totp.enabled', limit: 5 });
    assert.equal(enabled?.username, user.username);
    assert.doesNotMatch(JSON.stringify(await server.store.events.list({ userId: user.id, limit: 50 })), new RegExp(`${secret}|${codes[0]}`));
  });

  it('asks for the code after the password; the right code signs in and the ID token says amr pwd, otp, mfa', async () => {
    const user = await server.addUser();
    const { secret } = await enrol(server, user, clock);
    clock.advance(60_000);
    const config = await discover(server, client);
    const { url, verifier } = await pkceRequest(config);
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request(url.href));
    const asked = await browser.submit(login, '/login', { username: user.username, password: user.password });
    assert.equal(asked.status, 200);
    assert.match(asked.html, /<h1>Enter your code<\/h1>/);
    assert.equal(browser.cookies.has('tessera_session'), false, 'not signed in by the password alone');
    const signedIn = await browser.submit(asked, '/login/second-factor', { code: totp(secret, clock.now()) });
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 300));
    // The app the sign-in was for travelled through both forms to the record of it.
    const [recorded] = await server.store.events.list({ userId: user.id, type: 'signin.succeeded', limit: 5 });
    assert.deepEqual([recorded?.clientId, recorded?.detail['amr']], [client.clientId, 'pwd otp mfa']);
    const approval = await browser.follow(signedIn);
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(decided.location!), { pkceCodeVerifier: verifier, idTokenExpected: true });
    assert.deepEqual(tokens.claims()!.amr, ['pwd', 'otp', 'mfa']);
    assert.equal(tokens.claims()!.acr, undefined, 'no acr unless acr_values asked');
  });

  it('refuses a code used once already, even within its window', async () => {
    const user = await server.addUser();
    const { secret } = await enrol(server, user, clock);
    clock.advance(60_000);
    const code = totp(secret, clock.now());
    const first = await signInWithPassword(server, user);
    assert.equal((await first.browser.submit(first.page, '/login/second-factor', { code })).status, 303);
    const second = await signInWithPassword(server, user);
    const replay = await second.browser.submit(second.page, '/login/second-factor', { code });
    assert.equal(replay.status, 401);
    assert.match(replay.html, /used already/);
    const [replayed] = await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 5 });
    assert.equal(replayed?.detail['reason'], 'replayed');
    assert.equal(second.browser.cookies.has('tessera_session'), false);
    // The previous step's code is older than the one used: refused too.
    const third = await signInWithPassword(server, user);
    assert.equal((await third.browser.submit(third.page, '/login/second-factor', { code: totp(secret, clock.now(), -1) })).status, 401);
    clock.advance(30_000);
    const fourth = await signInWithPassword(server, user);
    assert.equal((await fourth.browser.submit(fourth.page, '/login/second-factor', { code: totp(secret, clock.now()) })).status, 303, 'the next code works');
  });

  it('counts wrong codes like wrong passwords: after the limit even the right password is refused', async () => {
    const user = await server.addUser();
    const { secret } = await enrol(server, user, clock);
    const { browser, page } = await signInWithPassword(server, user);
    let current = page;
    const right = totp(secret, clock.now());
    const wrong = right === '123456' ? '654321' : '123456';
    for (let i = 0; i < 10; i++) {
      current = await browser.submit(current, '/login/second-factor', { code: wrong });
      assert.equal(current.status, 401, `wrong code ${i + 1}`);
      assert.match(current.html, /That code is not right/);
    }
    const locked = await browser.submit(current, '/login/second-factor', { code: right });
    assert.equal(locked.status, 429, 'locked: not even the right code is tried');
    for (let i = 0; i < 3; i++) assert.equal((await browser.submit(current, '/login/second-factor', { code: wrong })).status, 429);
    const failures = await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 50 });
    assert.deepEqual(
      failures.map((event) => event.detail['reason']),
      Array(10).fill('wrong_code'),
      'each wrong code; the refused ones write nothing yet',
    );
    assert.ok(failures.every((event) => event.detail['during'] === 'sign_in'));
    // The window's count is stored once it ends, or when the server stops.
    await server.restart();
    const lockouts = (await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 50 })).filter(
      (event) => event.detail['reason'] === 'locked',
    );
    assert.deepEqual(
      lockouts.map((event) => event.detail['refused']),
      [4],
      'one row for the lockout, with the four refusals',
    );
    const again = await signInWithPassword(server, user);
    assert.equal(again.page.status, 429, 'the password limit from this address is the same one');
    assert.match(again.page.html, /Too many wrong passwords for this username from your connection/);
  });

  it('accepts a recovery code while a guesser has locked the one-time codes: the way back in stays open', async () => {
    const user = await server.addUser();
    const { secret, recoveryCodes } = await enrol(server, user, clock);
    const right = totp(secret, clock.now());
    const wrong = right === '123456' ? '654321' : '123456';
    const { browser, page } = await signInWithPassword(server, user);
    let current = page;
    for (let i = 0; i < 10; i++) current = await browser.submit(current, '/login/second-factor', { code: wrong });
    assert.equal((await browser.submit(current, '/login/second-factor', { code: right })).status, 429, 'codes are locked');
    assert.equal((await browser.submit(current, '/login/second-factor', { code: 'aaaaa-aaaaa' })).status, 429, 'a wrong recovery code is refused');
    const recovered = await browser.submit(current, '/login/second-factor', { code: recoveryCodes[0]! });
    assert.equal(recovered.status, 303, 'a recovery code signs in');
    assert.equal(browser.cookies.has('tessera_session'), true);
  });

  it("locks a user's codes after 10 wrong ones from 10 addresses: from an 11th, the right password and the right code are refused", async () => {
    const user = await server.addUser();
    const other = await server.addUser();
    const { secret } = await enrol(server, user, clock);
    const { secret: otherSecret } = await enrol(server, other, clock);
    clock.advance(60_000);
    const right = totp(secret, clock.now());
    const wrong = right === '123456' ? '654321' : '123456';
    // One wrong code from each address: no address reaches its own limits (10 for this
    // username, 100 in all), so only the limit per user, from anywhere, can stop the guesser.
    for (let i = 1; i <= 10; i++) {
      const { browser, page } = await signInWithPassword(server, user, '/account', `198.51.100.${i}`);
      assert.match(page.html, /<h1>Enter your code<\/h1>/, `the password from address ${i}`);
      const answer = await browser.submit(page, '/login/second-factor', { code: wrong });
      assert.equal(answer.status, 401, `wrong code ${i}`);
    }
    const eleventh = await signInWithPassword(server, user, '/account', '198.51.100.11');
    assert.match(eleventh.page.html, /<h1>Enter your code<\/h1>/, 'the password is not what is locked');
    const locked = await eleventh.browser.submit(eleventh.page, '/login/second-factor', { code: right });
    assert.equal(locked.status, 429, 'locked: not even the right code is tried');
    assert.match(locked.html, /Too many wrong codes\. Wait a few minutes/);
    assert.equal(eleventh.browser.cookies.has('tessera_session'), false, 'not signed in');
    const failures = await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 50 });
    // The refused code writes nothing now: its lockout row comes when the window ends (core/events.ts).
    assert.deepEqual(
      failures.map((event) => event.detail['reason']),
      Array(10).fill('wrong_code'),
    );
    // The lockout is this user's: another person at the same address signs in.
    const elsewhere = await signInWithPassword(server, other, '/account', '198.51.100.11');
    const signedIn = await elsewhere.browser.submit(elsewhere.page, '/login/second-factor', { code: totp(otherSecret, clock.now()) });
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 300));
  });

  it('accepts each recovery code once, in place of a code', async () => {
    const user = await server.addUser();
    const { recoveryCodes } = await enrol(server, user, clock);
    const first = await signInWithPassword(server, user);
    assert.equal((await first.browser.submit(first.page, '/login/second-factor', { code: recoveryCodes[3]!.toUpperCase() })).status, 303);
    assert.equal(await server.store.recoveryCodes.countUnused(user.id), 9);
    const second = await signInWithPassword(server, user);
    const reused = await second.browser.submit(second.page, '/login/second-factor', { code: recoveryCodes[3]! });
    assert.equal(reused.status, 401);
    assert.equal(second.browser.cookies.has('tessera_session'), false);
    const used = await server.store.events.list({ userId: user.id, type: 'second_factor.recovery_code_used', limit: 5 });
    assert.deepEqual(
      used.map((event) => event.detail),
      [{ recovery_codes_left: 9 }],
    );
    const [refused] = await server.store.events.list({ userId: user.id, type: 'second_factor.failed', limit: 5 });
    assert.deepEqual(refused?.detail, { reason: 'wrong_code', during: 'sign_in' }, 'a used recovery code is a wrong code');
  });

  it('starts over when the code comes after TESSERA_SECOND_FACTOR_TIMEOUT, or with no sign-in waiting; never a 500', async () => {
    const user = await server.addUser();
    const { secret } = await enrol(server, user, clock);
    const { browser, page } = await signInWithPassword(server, user);
    clock.advance(server.config.secondFactor.pendingSignInTimeout * 1000 + 1);
    const late = await browser.submit(page, '/login/second-factor', { code: totp(secret, clock.now()) });
    assert.equal(late.status, 400);
    assert.match(late.html, /took too long/);
    assert.match(late.html, /<h1>Sign in<\/h1>/);

    const stranger = new FormBrowser(server.url);
    const login = await stranger.follow(await stranger.request('/login'));
    for (const code of ['', '123456', 'x'.repeat(5000)]) {
      const answer = await stranger.request('/login/second-factor', { form: { csrf_token: stranger.form(login, '/login').fields['csrf_token']!, code } });
      assert.equal(answer.status, 400, code.slice(0, 10));
      assert.equal(stranger.cookies.has('tessera_session'), false);
    }
  });

  it('turns one-time codes off from the account page: the password alone signs in again', async () => {
    const user = await server.addUser();
    const { browser } = await enrol(server, user, clock);
    const account = await browser.follow(await browser.request('/account'));
    const off = await browser.submit(account, '/account/totp/remove', {});
    assert.equal(off.location, '/account?notice=totp-removed');
    assert.equal(await server.store.totp.get(user.id), null);
    assert.equal(await server.store.recoveryCodes.countUnused(user.id), 0);
    const [disabled] = await server.store.events.list({ userId: user.id, type: 'totp.disabled', limit: 5 });
    assert.deepEqual(disabled?.detail, { by: 'user' });
    const { page } = await signInWithPassword(server, user);
    assert.equal(page.status, 303);
  });

  it('asks a sign-in older than 15 minutes to sign in again before a second factor is set up or turned off, and links to the sign-in page', async () => {
    const user = await server.addUser();
    const { browser, secret } = await enrol(server, user, clock);
    clock.advance(16 * 60_000);
    try {
      const account = await browser.follow(await browser.request('/account'));
      const text = account.html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
      assert.match(text, /To add or remove a passkey or one-time codes, sign in again: your sign-in is more than 15 minutes old\./);
      assert.doesNotMatch(account.html, /action="\/account\/totp\/remove"/, 'no button whose post would be refused');
      const csrf = browser.form(account, '/account/password').fields['csrf_token']!;
      const refused = await browser.request('/account/totp/remove', { form: { csrf_token: csrf } });
      assert.equal(refused.status, 403, 'a post made anyway');
      assert.ok(await server.store.totp.get(user.id), 'the codes stay on');
      // The page's link: the sign-in page though the browser is signed in, then the password and a code, and back.
      const link = /<a href="([^"]+)">Sign in again<\/a>/.exec(account.html)![1]!.replace(/&amp;/g, '&');
      const signInPage = await browser.request(link);
      assert.equal(signInPage.status, 200);
      const codePage = await browser.submit(signInPage, '/login', { username: user.username, password: user.password });
      assert.equal(codePage.status, 200, 'the one-time code is asked next');
      const back = await browser.follow(await browser.submit(codePage, '/login/second-factor', { code: totp(secret, clock.now()) }));
      assert.equal(new URL(back.url).pathname, '/account');
      const off = await browser.submit(back, '/account/totp/remove', {});
      assert.equal(off.location, '/account?notice=totp-removed', 'the new sign-in may');
    } finally {
      clock.advance(-16 * 60_000);
    }
  });
});

describe("one-time codes under the operator's name (TESSERA_SITE_NAME)", () => {
  it("tells people to look for the site's name in their app, on the setup page and after the password", async () => {
    const clock = new ManualClock(Date.now());
    const server = await startTestServer({ clock, env: { TESSERA_SITE_NAME: 'Acme Accounts' } });
    try {
      const user = await server.addUser();
      const { browser, page } = await signInWithPassword(server, user);
      const setup = await browser.submit(await browser.follow(page), '/account/totp/setup', {});
      const secret = totpSecretOf(setup);
      const wrong = await browser.submit(setup, '/account/totp/confirm', { code: totp(secret, clock.now()) === '000000' ? '111111' : '000000' });
      assert.match(wrong.html, /Check that the app shows Acme Accounts, and enter its current code/);
      assert.equal((await browser.submit(wrong, '/account/totp/confirm', { code: totp(secret, clock.now()) })).status, 200);
      const asked = (await signInWithPassword(server, user)).page;
      assert.match(asked.html, /the 6-digit code it shows for Acme Accounts\./);
      for (const shown of [setup, wrong, asked]) assert.doesNotMatch(shown.html, /Tessera/);
    } finally {
      await server.close();
    }
  });
});

describe('who may approve: TESSERA_REQUIRE_SECOND_FACTOR, --require-phishing-resistant and acr_values', () => {
  const clock = clockAtStart();
  let strict: TestServer;
  let server: TestServer;
  let app: TestClient;
  let tv: TestClient;

  before(async () => {
    strict = await startTestServer({ clock, env: { TESSERA_REQUIRE_SECOND_FACTOR: 'on' } });
    server = await startTestServer({ clock });
    app = await server.addClient({ name: 'Photo Printer' });
    tv = await server.addClient({ name: 'Living Room TV', requirePhishingResistant: true });
  });
  after(() => closeAll(strict, server));

  async function authorizeUrl(target: TestServer, client: TestClient, extra: Record<string, string> = {}) {
    const config = await discover(target, client);
    const { url, verifier } = await pkceRequest(config, extra);
    return { config, verifier, url };
  }

  it('with TESSERA_REQUIRE_SECOND_FACTOR=on, a password alone cannot approve; after enrolling a code it can', async () => {
    const client = await strict.addClient({ name: 'Photo Printer' });
    const user = await strict.addUser();
    const { url, config, verifier } = await authorizeUrl(strict, client);
    const { browser, page } = await signInWithPassword(strict, user, `${url.pathname}${url.search}`);
    const asked = await browser.follow(page);
    assert.equal(asked.status, 200);
    assert.match(asked.html, /Approving needs a second factor/);
    assert.doesNotMatch(asked.html, />Approve<\/button>/);
    const forced = await browser.request('/oauth/authorize/decision', {
      form: { ...Object.fromEntries(url.searchParams), csrf_token: browser.form(asked, '/login').fields['csrf_token']!, decision: 'approve' },
    });
    assert.equal(forced.status, 403);
    assert.match(forced.html, /second factor/);

    // The refusal links straight to the account page, which the password session opens
    // without signing in again; setting up a code there proves the second factor in this
    // browser, and the page that shows the recovery codes continues to the approval.
    const link = /<a href="([^"]+)">Set up a passkey or one-time codes on your account page<\/a>: you stay signed in/
      .exec(asked.html)?.[1]
      ?.replaceAll('&amp;', '&');
    assert.ok(link, asked.html);
    const returnTo = `${url.pathname}${url.search}`;
    assert.equal(new URL(link, strict.url).searchParams.get('return_to'), returnTo);
    const linked = await browser.request(link);
    assert.equal(linked.status, 200, 'no second sign-in');
    const { codes } = await setUpTotp(browser, await browser.follow(linked), clock);
    assert.equal(codes.status, 200);
    const next = /<a href="([^"]+)">Continue<\/a>/.exec(codes.html)?.[1]?.replaceAll('&amp;', '&');
    assert.equal(next, returnTo, 'the codes page continues to the approval');
    const approval = await browser.follow(await browser.request(next!));
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    assert.equal(decided.status, 303, decided.html.slice(0, 300));
    const tokens = await oidc.authorizationCodeGrant(config, new URL(decided.location!), { pkceCodeVerifier: verifier, idTokenExpected: true });
    assert.deepEqual(tokens.claims()!.amr, ['pwd', 'otp', 'mfa']);
  });

  it('with TESSERA_REQUIRE_SECOND_FACTOR=on and a sign-in older than 15 minutes, signing in again on the way to set up a code still leads back to the approval', async () => {
    const client = await strict.addClient({ name: 'Photo Printer' });
    const user = await strict.addUser();
    const { browser, page } = await signInWithPassword(strict, user);
    await browser.follow(page);
    clock.advance(16 * 60_000);
    try {
      const { url } = await authorizeUrl(strict, client);
      const returnTo = `${url.pathname}${url.search}`;
      const asked = await browser.follow(await browser.request(returnTo));
      assert.match(asked.html, /Approving needs a second factor/);
      const setUpLink = /<a href="([^"]+)">Set up a passkey or one-time codes on your account page<\/a>/.exec(asked.html)![1]!.replaceAll('&amp;', '&');
      const account = await browser.follow(await browser.request(setUpLink));
      // The account page asks for a recent sign-in first; its link keeps the approval to go back to.
      const signInAgain = /<a href="([^"]+)">Sign in again<\/a>/.exec(account.html)![1]!.replaceAll('&amp;', '&');
      const signInPage = await browser.request(signInAgain);
      assert.equal(signInPage.status, 200);
      const signedInAgain = await browser.follow(await browser.submit(signInPage, '/login', { username: user.username, password: user.password }));
      assert.equal(new URL(signedInAgain.url).pathname, '/account');
      const { codes } = await setUpTotp(browser, signedInAgain, clock);
      assert.equal(codes.status, 200);
      const next = /<a href="([^"]+)">Continue<\/a>/.exec(codes.html)?.[1]?.replaceAll('&amp;', '&');
      assert.equal(next, returnTo, 'the codes page continues to the approval, not to the account page');
      const approval = await browser.follow(await browser.request(next!));
      assert.equal(new URL(approval.url).pathname, '/oauth/authorize');
      assert.match(approval.html, />Approve<\/button>/);
    } finally {
      clock.advance(-16 * 60_000);
    }
  });

  it('keeps auth_time at the password sign-in when codes are set up later in the same session', async () => {
    const client = await strict.addClient({ name: 'Photo Printer' });
    const user = await strict.addUser();
    const { browser, page } = await signInWithPassword(strict, user);
    const signedInAt = clock.now();
    await browser.follow(page);
    clock.advance(10 * 60_000);
    const { codes } = await setUpTotp(browser, await browser.follow(await browser.request('/account')), clock);
    assert.equal(codes.status, 200);
    const { url, config, verifier } = await authorizeUrl(strict, client);
    const approval = await browser.follow(await browser.request(url.href));
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    const claims = (await oidc.authorizationCodeGrant(config, new URL(decided.location!), { pkceCodeVerifier: verifier, idTokenExpected: true })).claims()!;
    assert.deepEqual(claims.amr, ['pwd', 'otp', 'mfa']);
    assert.equal(claims.auth_time, Math.floor(signedInAt / 1000), 'setting up a code is not signing in again');
  });

  it('refuses an approval after a password sign-in for a client registered with --require-phishing-resistant (browser and device)', async () => {
    const user = await server.addUser();
    const { url } = await authorizeUrl(server, tv);
    const { browser, page } = await signInWithPassword(server, user, `${url.pathname}${url.search}`);
    const asked = await browser.follow(page);
    assert.match(asked.html, /Living Room TV can be approved only after signing in with a passkey/);
    assert.doesNotMatch(asked.html, />Approve<\/button>/);
    const csrf = browser.form(asked, '/login').fields['csrf_token']!;
    const forced = await browser.request('/oauth/authorize/decision', {
      form: { ...Object.fromEntries(url.searchParams), csrf_token: csrf, decision: 'approve' },
    });
    assert.equal(forced.status, 403);
    assert.match(forced.html, /only after signing in with a passkey/);

    const device = await startDevice(server, tv);
    const review = await browser.request(`/device/approve?user_code=${device.user_code}`);
    assert.match(review.html, /only after signing in with a passkey/);
    const decided = await browser.request('/device/approve', { form: { csrf_token: csrf, user_code: device.user_code, decision: 'approve' } });
    assert.equal(decided.status, 403);
    assert.equal((await server.store.devices.findByUserCode(device.user_code.replace('-', ''), clock.now()))?.status, 'pending', 'not approved');
    const denied = await browser.request('/device/approve', { form: { csrf_token: csrf, user_code: device.user_code, decision: 'deny' } });
    assert.equal(denied.status, 200, 'denying needs no passkey');
  });

  it('lets a password sign-in approve an ordinary client, with amr pwd, and acr when acr_values asked for it', async () => {
    const user = await server.addUser();
    const { url, config, verifier } = await authorizeUrl(server, app, { acr_values: 'urn:tessera:acr:pwd' });
    const { browser, page } = await signInWithPassword(server, user, `${url.pathname}${url.search}`);
    const approval = await browser.follow(page);
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    const claims = (await oidc.authorizationCodeGrant(config, new URL(decided.location!), { pkceCodeVerifier: verifier, idTokenExpected: true })).claims()!;
    assert.deepEqual(claims.amr, ['pwd']);
    assert.equal(claims.acr, 'urn:tessera:acr:pwd');
  });

  it('asks for a passkey when acr_values asks only for phishing-resistant classes, and ignores classes it does not know', async () => {
    const user = await server.addUser();
    const phr = await authorizeUrl(server, app, { acr_values: 'phr' });
    const { browser, page } = await signInWithPassword(server, user, `${phr.url.pathname}${phr.url.search}`);
    const asked = await browser.follow(page);
    assert.match(asked.html, /only after signing in with a passkey/);
    const unknown = await authorizeUrl(server, app, { acr_values: 'urn:example:gold' });
    const approval = await browser.follow(await browser.request(unknown.url.href));
    assert.match(approval.html, />Approve<\/button>/);
  });

  it('reports acr when the claims parameter asks for it in the ID token, and holds the sign-in to the classes it names (OIDC Core §5.5.1.1)', async () => {
    const user = await server.addUser();
    const asked = await authorizeUrl(server, app, { claims: JSON.stringify({ id_token: { acr: null } }) });
    const { browser, page } = await signInWithPassword(server, user, `${asked.url.pathname}${asked.url.search}`);
    const approval = await browser.follow(page);
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    const claims = (
      await oidc.authorizationCodeGrant(asked.config, new URL(decided.location!), { pkceCodeVerifier: asked.verifier, idTokenExpected: true })
    ).claims()!;
    assert.equal(claims.acr, 'urn:tessera:acr:pwd', 'one factor, as it was');

    const essential = await authorizeUrl(server, app, {
      prompt: 'consent',
      claims: JSON.stringify({ id_token: { acr: { essential: true, values: ['urn:tessera:acr:mfa'] } } }),
    });
    const stepUp = await browser.follow(await browser.request(essential.url.href));
    assert.match(stepUp.html, /Approving needs a second factor/);
    assert.doesNotMatch(stepUp.html, />Approve<\/button>/);
  });

  it('asks a sign-in that a remembered approval would let through to sign in again when acr_values asks for more, and answers prompt=none with login_required', async () => {
    const user = await server.addUser();
    const first = await authorizeUrl(server, app);
    const { browser, page } = await signInWithPassword(server, user, `${first.url.pathname}${first.url.search}`);
    const approval = await browser.follow(page);
    assert.equal((await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' })).status, 303);

    const stepUp = await authorizeUrl(server, app, { acr_values: 'urn:tessera:acr:mfa' });
    const asked = await browser.follow(await browser.request(stepUp.url.href));
    assert.equal(asked.status, 200, asked.html.slice(0, 300));
    assert.match(asked.html, /Approving needs a second factor/);

    const silent = await authorizeUrl(server, app, { acr_values: 'urn:tessera:acr:mfa', prompt: 'none', state: 'xyz' });
    const answer = await browser.request(silent.url.href);
    assert.equal(answer.status, 303, answer.html.slice(0, 300));
    const back = new URL(answer.location!);
    assert.equal(back.origin + back.pathname, REDIRECT_URI);
    assert.equal(back.searchParams.get('error'), 'login_required');
    assert.equal(back.searchParams.get('state'), 'xyz');
  });

  it('publishes the acr values and the amr and acr claims in discovery', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, string[]>;
    assert.deepEqual(metadata['acr_values_supported'], ['phrh', 'phr', 'urn:tessera:acr:mfa', 'urn:tessera:acr:pwd']);
    assert.ok(metadata['claims_supported']!.includes('amr'));
    assert.ok(metadata['claims_supported']!.includes('acr'));
  });
});

describe('one-time codes set up after a passkey sign-in', () => {
  const clock = clockAtStart();
  let server: TestServer;
  let client: TestClient;

  before(async () => {
    server = await startTestServer({ issuerHost: 'localhost', clock });
    client = await server.addClient({ name: 'Photo Printer' });
  });
  after(() => server?.close());

  /** A passkey added on the account page, in a password session of its own. */
  async function withPasskey(user: TestUser): Promise<SoftwarePasskey> {
    const passkey = new SoftwarePasskey();
    const { browser, page } = await signInWithPassword(server, user);
    const account = await browser.follow(page);
    const csrf = browser.form(account, '/account/passkeys').fields['csrf_token']!;
    const creation = JSON.parse((await browser.request('/account/passkeys/options', { form: { csrf_token: csrf } })).html) as Record<string, unknown>;
    const added = await browser.submit(account, '/account/passkeys', {
      name: 'Security key',
      response: JSON.stringify(passkey.register(creation, server.url)),
    });
    assert.equal(added.status, 303, added.html.slice(0, 300));
    return passkey;
  }

  /** Signs in with the passkey alone, no username, on the way to `returnTo`. */
  async function signInWithPasskey(passkey: SoftwarePasskey, returnTo: string, userVerified: boolean): Promise<{ browser: FormBrowser; page: Page }> {
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request(`/login?return_to=${encodeURIComponent(returnTo)}`));
    const page = await browser.passkeySignIn(login, (options) => passkey.authenticate(options, server.url, { userVerified }));
    assert.equal(page.status, 303, page.html.slice(0, 300));
    return { browser, page };
  }

  async function setUpCodes(browser: FormBrowser): Promise<void> {
    const { codes } = await setUpTotp(browser, await browser.follow(await browser.request('/account')), clock);
    assert.equal(codes.status, 200);
  }

  async function authorizeUrl(acrValues: string) {
    const config = await discover(server, client);
    const { url, verifier } = await pkceRequest(config, { acr_values: acrValues });
    return { config, verifier, url, returnTo: `${url.pathname}${url.search}` };
  }

  async function idTokenClaims(browser: FormBrowser, request: Awaited<ReturnType<typeof authorizeUrl>>) {
    const approval = await browser.follow(await browser.request(request.url.href));
    assert.match(approval.html, />Approve<\/button>/);
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    return (
      await oidc.authorizationCodeGrant(request.config, new URL(decided.location!), { pkceCodeVerifier: request.verifier, idTokenExpected: true })
    ).claims()!;
  }

  it('records a presence-only passkey and a code as what they are: amr hwk user otp, never pwd, and one kind of factor, not mfa', async () => {
    const user = await server.addUser();
    const passkey = await withPasskey(user);
    // A second factor asked for (acr_values): the presence-only passkey is refused, and the
    // refusal sends the person to set up codes on the account page, signed in as they are.
    const stepUp = await authorizeUrl('urn:tessera:acr:mfa');
    const { browser, page } = await signInWithPasskey(passkey, stepUp.returnTo, false);
    const signedInAt = clock.now();
    const asked = await browser.follow(page);
    assert.match(asked.html, /Approving needs a second factor/);
    clock.advance(5 * 60_000);
    await setUpCodes(browser);
    // A security key and a phone are two things held: whoever has the key could have set up
    // the code, so the step-up is still refused.
    const again = await browser.follow(await browser.request(stepUp.url.href));
    assert.match(again.html, /Approving needs a second factor/);
    assert.doesNotMatch(again.html, />Approve<\/button>/);

    const claims = await idTokenClaims(browser, await authorizeUrl('urn:tessera:acr:pwd'));
    assert.deepEqual(claims.amr, ['hwk', 'user', 'otp'], 'no password was used');
    assert.equal(claims.acr, 'urn:tessera:acr:pwd', 'one factor');
    assert.equal(claims.auth_time, Math.floor(signedInAt / 1000), 'the passkey sign-in, not the code set up later');
  });

  it("keeps a verified passkey session's two factors and adds the code: amr hwk otp mfa", async () => {
    const user = await server.addUser();
    const passkey = await withPasskey(user);
    const request = await authorizeUrl('urn:tessera:acr:mfa');
    const { browser, page } = await signInWithPasskey(passkey, request.returnTo, true);
    await browser.follow(page);
    await setUpCodes(browser);
    const claims = await idTokenClaims(browser, request);
    assert.deepEqual(claims.amr, ['hwk', 'otp', 'mfa']);
    assert.equal(claims.acr, 'phrh');
  });
});

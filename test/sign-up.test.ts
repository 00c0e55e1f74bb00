/**
 * Sign-up's rules, through the pages as a browser posts them and a real SMTP server on
 * loopback: the account exists only once its link is followed, the link works once and
 * expires, in one click in the browser that signed up and elsewhere only with the password
 * chosen at sign-up (a wrong one makes nothing and leaves the link: pre-hijacked accounts), an
 * address that has an account gets the same page (and a notice, not a link), budgets per
 * network address and per e-mail address, the domain allow-list, a line break in a name kept
 * out of the message's headers, and TESSERA_SIGN_UP_VERIFY=later: the account made at once and
 * signed in, its link confirming it only in a browser signed in as that account.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertAddressLinkRefused, assertSignInPage, FormBrowser, type Page, pageText as text } from './helpers/browser.ts';
import { clockAtStart } from './helpers/clock.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

const PASSWORD = 'a long enough password';

function env(smtp: { url: string }, extra: Record<string, string> = {}): Record<string, string> {
  return { TESSERA_SIGN_UP: 'open', TESSERA_SMTP_URL: smtp.url, TESSERA_SMTP_STARTTLS: 'off', TESSERA_MAIL_RETRY_DELAY_MS: '50', ...extra };
}

async function signUp(
  server: TestServer,
  fields: { username: string; name?: string; email: string; password?: string },
): Promise<{ browser: FormBrowser; answer: Page }> {
  const browser = new FormBrowser(server.url);
  const signIn = await browser.request('/login');
  assert.match(signIn.html, /<a href="\/sign-up\?return_to=[^"]*">Create an account<\/a>/);
  const form = await browser.request('/sign-up');
  assert.equal(form.status, 200);
  const answer = await browser.submit(form, '/sign-up', {
    username: fields.username,
    name: fields.name ?? 'Someone',
    email: fields.email,
    password: fields.password ?? PASSWORD,
  });
  return { browser, answer };
}

function verifyLink(body: string | undefined): string {
  const link = /(https?:\/\/\S+\/sign-up\/verify\?token=\S+)/.exec(body ?? '')?.[1];
  assert.ok(link, `no link in:\n${body}`);
  return link;
}

/** The link mailed to `address`, once it has arrived. */
async function linkTo(smtp: TestSmtpServer, address: string): Promise<string> {
  for (let count = 1; ; count++) {
    const mail = await smtp.next(count);
    if (mail.to.includes(address)) return verifyLink(mail.parsed.text);
  }
}

describe('sign-up', () => {
  const clock = clockAtStart();
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ clock, env: env(smtp, { TESSERA_SIGN_UP_PER_EMAIL: '2', TESSERA_SIGN_UP_DOMAINS: 'example.com,example.org' }) });
  });
  after(() => closeAll(server, smtp));

  it('makes the account only when the mailed link is followed, and the link works once', async () => {
    const mailed = smtp.received.length;
    const { browser, answer } = await signUp(server, { username: 'Ada', name: 'Ada Lovelace', email: 'ada@example.com' });
    assert.equal(answer.status, 200);
    assert.match(text(answer.html), /We sent a message to ada@example\.com ?\. Follow its link to finish: it works for 24 hours\./);
    assert.equal(await server.store.users.findByUsername('ada'), null, 'no account before the link');
    const mail = await smtp.next(mailed + 1);
    assert.equal(mail.parsed.subject, 'Confirm your e-mail address for Tessera');
    const link = verifyLink(mail.parsed.text);
    assert.ok(link.startsWith(`${server.url}/sign-up/verify?token=`));

    const confirm = await browser.request(link);
    assert.equal(confirm.status, 200);
    assert.doesNotMatch(confirm.html, /type="password"/, 'in the browser that signed up, one click: no password asked');
    assert.equal(await server.store.users.findByUsername('ada'), null, 'opening the link (a mail scanner) makes nothing');
    const done = await browser.submit(confirm, '/sign-up/verify', {});
    assert.equal(done.status, 200);
    assert.match(text(done.html), /Your address is confirmed\. Sign in as ada to continue\./);
    const user = await server.store.users.findByUsername('ada');
    assert.equal(user?.email, 'ada@example.com');
    assert.equal(user?.emailVerified, true);
    assert.equal(user?.name, 'Ada Lovelace');

    assert.equal((await browser.submit(confirm, '/sign-up/verify', {})).status, 400, 'a used link');
    assert.equal((await browser.request(link)).status, 400);
    const signedIn = new FormBrowser(server.url);
    await signedIn.signIn(await signedIn.request('/login?return_to=%2Faccount'), { username: 'ada', password: PASSWORD });
  });

  it('refuses an expired link', async () => {
    await signUp(server, { username: 'late', email: 'late@example.com' });
    const link = await linkTo(smtp, 'late@example.com');
    clock.advance(24 * 3600 * 1000 + 1000);
    try {
      const browser = new FormBrowser(server.url);
      const page = await browser.request(link);
      assert.equal(page.status, 400);
      assert.match(text(page.html), /It has already been used, or it has expired\./);
      assert.equal(await server.store.users.findByUsername('late'), null);
    } finally {
      clock.advance(-(24 * 3600 * 1000 + 1000));
    }
  });

  it('answers an address that has an account with the same page, and mails it a notice, not a link', async () => {
    await server.addUser({ username: 'grace', email: 'grace@example.com' });
    const mailed = smtp.received.length;
    const known = await signUp(server, { username: 'grace2', email: 'grace@example.com' });
    const fresh = await signUp(server, { username: 'newcomer', email: 'newcomer@example.com' });
    assert.equal(known.answer.status, fresh.answer.status);
    const strip = (html: string) => html.replace(/value="[^"]*"/g, '').replace(/(grace|newcomer)@example\.com/g, 'ADDRESS');
    assert.equal(strip(known.answer.html), strip(fresh.answer.html));
    const first = await smtp.next(mailed + 1);
    const second = await smtp.next(mailed + 2);
    const notice = [first, second].find((mail) => mail.to[0] === 'grace@example.com')!;
    assert.equal(notice.parsed.subject, 'You already have an account on Tessera');
    assert.match(notice.parsed.text ?? '', /which already has one: grace\./);
    assert.doesNotMatch(notice.parsed.text ?? '', /token=/);
    assert.equal(await server.store.users.findByUsername('grace2'), null);
  });

  it('says a taken username is taken, and refuses bad fields with 400 naming them', async () => {
    await server.addUser({ username: 'taken' });
    const taken = (await signUp(server, { username: 'TAKEN', email: 'someone@example.com' })).answer;
    assert.equal(taken.status, 409);
    assert.match(text(taken.html), /That username is taken\. Choose another\./);
    const cases: [Parameters<typeof signUp>[1], RegExp][] = [
      [{ username: 'has space', email: 'a1@example.com' }, /Choose a username of 1 to 64 letters/],
      [{ username: 'x'.repeat(65), email: 'a2@example.com' }, /Choose a username of 1 to 64 letters/],
      [{ username: 'nameless', name: '  ', email: 'a3@example.com' }, /Enter your name/],
      [{ username: 'noaddress', email: 'not an address' }, /Enter an e-mail address/],
      [{ username: 'injected', email: 'victim@example.com\r\nBcc: thief@example.com' }, /Enter an e-mail address/],
      [{ username: 'elsewhere', email: 'someone@elsewhere.net' }, /Accounts here are for addresses at example\.com, example\.org only\./],
      [{ username: 'shortpw', email: 'a4@example.com', password: 'short' }, /The password must be 8 to 1024 characters\./],
    ];
    for (const [fields, message] of cases) {
      const { answer } = await signUp(server, fields);
      assert.equal(answer.status, 400, fields.username);
      assert.match(text(answer.html), message);
      assert.match(answer.html, /aria-invalid="true"/);
    }
  });

  it('keeps a line break in the name out of the message’s headers', async () => {
    const before = smtp.received.length;
    await signUp(server, { username: 'eve', name: 'Eve\r\nBcc: thief@example.com', email: 'eve@example.org' });
    const mail = await smtp.next(before + 1);
    assert.deepEqual(mail.to, ['eve@example.org']);
    const headers = mail.raw.slice(0, mail.raw.indexOf('\r\n\r\n'));
    assert.doesNotMatch(headers, /^Bcc:/im);
    assert.equal(mail.parsed.bcc, undefined);
  });

  it('refuses a third sign-up with one address within the hour, whether it has an account or not, with 429', async () => {
    await server.addUser({ username: 'flooded', email: 'flooded@example.org' });
    for (const email of ['flood@example.com', 'flooded@example.org']) {
      for (const n of [1, 2]) assert.equal((await signUp(server, { username: `flood${n}${email.length}`, email })).answer.status, 200);
      const third = (await signUp(server, { username: 'flood3', email })).answer;
      assert.equal(third.status, 429, email);
      assert.match(text(third.html), /Too many accounts were asked for\. Wait 60 minutes, then try again\./);
    }
  });
});

describe('sign-up with TESSERA_SIGN_UP_VERIFY=later', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ env: env(smtp, { TESSERA_SIGN_UP_VERIFY: 'later' }) });
  });
  after(() => closeAll(server, smtp));

  it('makes the account at once, signed in, its address unverified until the link is followed there, in one step', async () => {
    const { browser, answer } = await signUp(server, { username: 'quick', email: 'quick@example.com' });
    assert.match(text(answer.html), /You can sign in now/);
    assert.equal((await server.store.users.findByUsername('quick'))?.emailVerified, false);
    const account = await browser.request('/account');
    assert.equal(account.status, 200, 'the browser that signed up is signed in');
    assert.match(text(account.html), /Your address is quick@example\.com ?\. It is not confirmed yet/);
    const confirm = await browser.request(await linkTo(smtp, 'quick@example.com'));
    assert.match(text(confirm.html), /Confirm the account quick on Tessera\./);
    const done = await browser.submit(confirm, '/sign-up/verify', {});
    assert.equal(done.status, 200);
    // Signed in already: the page does not ask for a sign-in, and its button goes on.
    assert.match(text(done.html), /Your address is confirmed\. ?Continue/);
    assert.doesNotMatch(text(done.html), /Sign in as/);
    assert.equal((await server.store.users.findByUsername('quick'))?.emailVerified, true);
  });

  it('asks another device to sign in as the account first, then comes back to the link', async () => {
    await signUp(server, { username: 'roamer', email: 'roamer@example.com' });
    const link = await linkTo(smtp, 'roamer@example.com');
    const phone = new FormBrowser(server.url);
    const signIn = await phone.request(link);
    assertSignInPage(signIn);
    assert.match(text(signIn.html), /This link confirms an e-mail address for the account roamer\. Sign in as roamer to use it\./);
    assert.equal((await server.store.users.findByUsername('roamer'))?.emailVerified, false);
    const confirm = await phone.signIn(signIn, { username: 'roamer', password: PASSWORD });
    assert.equal(confirm.url, link);
    assert.equal((await phone.submit(confirm, '/sign-up/verify', {})).status, 200);
    assert.equal((await server.store.users.findByUsername('roamer'))?.emailVerified, true);
  });

  it('does not let the owner of an address confirm it on an account someone else made with it (pre-hijacked accounts)', async () => {
    // Mallory signs up first with Lin's address: the account is made at once, unverified; the link goes to Lin.
    await signUp(server, { username: 'mallory', email: 'lin@example.com' });
    const link = await linkTo(smtp, 'lin@example.com');
    // Lin follows it signed in as no one, then signed in to an account of her own: each time the
    // sign-in page for mallory, and the confirmation posted anyway refused.
    const own = await server.addUser({ username: 'lin', email: 'lin@work.example' });
    await assertAddressLinkRefused(new FormBrowser(server.url), link, '/sign-up/verify', 'mallory', own);

    const account = await server.store.users.findByUsername('mallory');
    assert.deepEqual([account?.emailVerified, account?.emailSelfAsserted], [false, true], 'a reset link mailed to Lin still removes what Mallory set up');
  });
});

describe('sign-up, the link followed in another browser (TESSERA_SIGN_UP_VERIFY=first)', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ env: env(smtp) });
  });
  after(() => closeAll(server, smtp));

  it('keeps the one click for the browser that signed up after it restarts: its sign-up cookie outlives the CSRF cookie, which ends with the browser', async () => {
    const { browser } = await signUp(server, { username: 'restarted', email: 'restarted@example.com' });
    const link = await linkTo(smtp, 'restarted@example.com');
    // A restart: the cookies that end with the browser are gone, the sign-up cookie (Max-Age) stays.
    for (const name of [...browser.cookies.keys()]) if (name !== 'tessera_sign_up') browser.cookies.delete(name);
    assert.ok(browser.cookies.has('tessera_sign_up'));
    const confirm = await browser.request(link);
    assert.doesNotMatch(confirm.html, /type="password"/, 'no password asked');
    const done = await browser.submit(confirm, '/sign-up/verify', {});
    assert.equal(done.status, 200);
    assert.equal((await server.store.users.findByUsername('restarted'))?.emailVerified, true);
  });

  it('asks for the password chosen at sign-up, and makes nothing of a wrong or empty one, the link still usable (pre-hijacked accounts)', async () => {
    // Mallory signs up in her browser with Lin's address and a password of her own; the link goes to Lin.
    await signUp(server, { username: 'mallory', email: 'lin@example.com', password: 'mallory knows this one' });
    const link = await linkTo(smtp, 'lin@example.com');
    // Lin follows it in her own browser: the button asks for the password chosen at sign-up, which she does not have.
    const lin = new FormBrowser(server.url);
    const confirm = await lin.request(link);
    assert.equal(confirm.status, 200);
    assert.match(
      text(confirm.html),
      /Confirm the account mallory on Tessera\. This is not the browser the account was asked for in\. To confirm it here, enter the password you chose when you signed up\. If you did not sign up, leave this page: no account is made\./,
    );
    assert.match(
      confirm.html,
      /<label for="password">The password you chose when you signed up<\/label>\s*<input type="password" id="password" name="password" autocomplete="current-password" required/,
    );

    const empty = await lin.submit(confirm, '/sign-up/verify', {});
    assert.equal(empty.status, 400);
    assert.match(text(empty.html), /Enter the password you chose when you signed up\./);
    const wrong = await lin.submit(confirm, '/sign-up/verify', { password: 'lin tries one of her own' });
    assert.equal(wrong.status, 400);
    assert.match(text(wrong.html), /That is not the password chosen when signing up\. No account was made: try again\./);
    assert.match(wrong.html, /aria-invalid="true" aria-describedby="confirm-error"/);
    assert.equal(await server.store.users.findByUsername('mallory'), null, 'no account, verified or not');
    assert.deepEqual(await server.store.users.findByEmail('lin@example.com'), []);

    const again = await lin.request(link);
    assert.equal(again.status, 200, 'the link is not spent');
    assert.match(again.html, /name="password"/);
  });

  it('makes the account on another device given the password chosen at sign-up, its address verified, and it signs in', async () => {
    await signUp(server, { username: 'nomad', email: 'nomad@example.org' });
    const link = await linkTo(smtp, 'nomad@example.org');
    const phone = new FormBrowser(server.url);
    const confirm = await phone.request(link);
    assert.match(confirm.html, /autocomplete="current-password"/);
    const done = await phone.submit(confirm, '/sign-up/verify', { password: PASSWORD });
    assert.equal(done.status, 200);
    assert.match(text(done.html), /Your address is confirmed\. Sign in as nomad to continue\./);
    const user = await server.store.users.findByUsername('nomad');
    assert.deepEqual([user?.email, user?.emailVerified], ['nomad@example.org', true]);
    assert.equal((await phone.request(link)).status, 400, 'used once');
    await phone.signIn(await phone.request('/login?return_to=%2Faccount'), { username: 'nomad', password: PASSWORD });
  });
});

describe('sign-up limits and modes', () => {
  it('refuses sign-ups from one network address past its budget, while sign-in still works', async () => {
    const smtp = await startSmtpServer();
    const server = await startTestServer({ env: env(smtp, { TESSERA_SIGN_UP_PER_ADDRESS: '3' }) });
    try {
      const user = await server.addUser({ username: 'steady' });
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => signUp(server, { username: `bot${i}`, email: `bot${i}@example.com` })));
      const statuses = answers.map(({ answer }) => answer.status).sort();
      assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429]);
      const browser = new FormBrowser(server.url);
      await browser.signIn(await browser.request('/login?return_to=%2Faccount'), user);
    } finally {
      await server.close();
      await smtp.close();
    }
  });

  it('offers no sign-up when it is off (the default)', async () => {
    const server = await startTestServer();
    try {
      const browser = new FormBrowser(server.url);
      assert.doesNotMatch((await browser.request('/login')).html, /Create an account/);
      assert.equal((await browser.request('/sign-up')).status, 404);
      assert.equal((await browser.request('/sign-up/verify?token=x')).status, 404);
    } finally {
      await server.close();
    }
  });
});

/**
 * "Forgot password?": a reset link mailed through the outbox to a real SMTP server on
 * loopback, in the person's language, built from the issuer alone; the same answer whether
 * the address has an account; budgets per network address and per e-mail address; a mail
 * server that is down or slow delays the message, never the page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FormBrowser, pageText as text } from './helpers/browser.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

/** The reset link in a message's text part. */
function linkIn(body: string | undefined): string {
  const link = /(https?:\/\/\S+\/reset-password\?token=\S+)/.exec(body ?? '')?.[1];
  assert.ok(link, `no reset link in:\n${body}`);
  return link;
}

function mailEnv(smtp: { url: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    TESSERA_SMTP_URL: smtp.url,
    TESSERA_SMTP_STARTTLS: 'off',
    TESSERA_MAIL_FROM: 'Tessera <no-reply@auth.example.com>',
    TESSERA_MAIL_RETRY_DELAY_MS: '50',
    ...extra,
  };
}

async function askForLink(server: TestServer, email: string, headers: Record<string, string> = {}) {
  const browser = new FormBrowser(server.url);
  const signIn = await browser.request('/login');
  assert.match(signIn.html, /<p class="more"><a href="\/forgot-password\?return_to=[^"]*">Forgot password\?<\/a>/);
  const page = await browser.request('/forgot-password', { headers });
  assert.equal(page.status, 200);
  const form = browser.form(page, '/forgot-password');
  const body = new URLSearchParams({ ...form.fields, email });
  return { browser, answer: await browser.request('/forgot-password', { form: body, headers }) };
}

describe('recovery by e-mail', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({ env: mailEnv(smtp, { TESSERA_RECOVERY_PER_EMAIL: '2', TESSERA_RECOVERY_PER_ADDRESS: '1000' }) });
  });
  after(() => closeAll(server, smtp));

  it('mails a reset link that sets a new password once, ends every session, and notifies the address', async () => {
    const user = await server.addUser({ username: 'grace', name: 'Grace Hopper', email: 'grace@example.com' });
    const old = new FormBrowser(server.url);
    await old.signIn(await old.request('/login?return_to=%2Faccount'), user);
    assert.equal((await old.request('/account')).status, 200);

    const mailed = smtp.received.length;
    const { browser, answer } = await askForLink(server, 'Grace@Example.com');
    assert.equal(answer.status, 200);
    assert.match(
      text(answer.html),
      /If an account has the address Grace@Example\.com ?, a link to set a new password is on its way\. It works for 60 minutes\./,
    );

    const mail = await smtp.next(mailed + 1);
    assert.deepEqual(mail.to, ['grace@example.com']);
    assert.equal(mail.from, 'no-reply@auth.example.com');
    assert.equal(mail.parsed.subject, 'Set a new password for Tessera');
    assert.equal(mail.parsed.from?.value[0]?.name, 'Tessera');
    assert.match(mail.parsed.text ?? '', /^Hello Grace Hopper,/);
    const link = linkIn(mail.parsed.text);
    assert.ok(link.startsWith(`${server.url}/reset-password?token=`), link);
    assert.ok(typeof mail.parsed.html === 'string' && mail.parsed.html.includes(link.replaceAll('&', '&amp;')), 'the HTML part carries the same link');

    const form = await browser.request(link);
    assert.equal(form.status, 200);
    const beforeNotice = smtp.received.length;
    const done = await browser.submit(form, '/reset-password', { new_password: 'grace has a new password' });
    assert.match(text(done.html), /Password changed/);
    assert.doesNotMatch(text(done.html), /had not been confirmed/, 'nothing was removed: nothing to tell');
    assert.equal((await old.request('/account')).status, 303, 'the sessions from before the reset have ended');
    assert.equal((await browser.submit(form, '/reset-password', { new_password: 'and once more' })).status, 400, 'the link works once');

    const notice = await smtp.next(beforeNotice + 1);
    assert.deepEqual(notice.to, ['grace@example.com']);
    assert.equal(notice.parsed.subject, 'Your Tessera password was changed');
    assert.match(notice.parsed.text ?? '', /The password for grace on Tessera was changed/);
    assert.doesNotMatch(notice.parsed.text ?? '', /token=/, 'the notice carries no link to use');

    const fresh = new FormBrowser(server.url);
    await fresh.signIn(await fresh.request('/login?return_to=%2Faccount'), { username: 'grace', password: 'grace has a new password' });
  });

  it('answers an unknown address with the same page, and sends nothing', async () => {
    const before = smtp.received.length;
    const known = await server.addUser({ username: 'katherine', email: 'katherine@example.com' });
    void known;
    const { answer: forKnown } = await askForLink(server, 'katherine@example.com');
    const { answer: forUnknown } = await askForLink(server, 'nobody@example.com');
    assert.equal(forUnknown.status, forKnown.status);
    const strip = (html: string) => html.replace(/value="[^"]*"/g, '').replace(/(katherine|nobody)@example\.com/g, 'ADDRESS');
    assert.equal(strip(forUnknown.html), strip(forKnown.html), 'the two answers differ only by the address typed');
    await smtp.next(before + 1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(smtp.received.length, before + 1, 'only the known address got a message');
    assert.deepEqual(smtp.received.at(-1)?.to, ['katherine@example.com']);
  });

  it('refuses a third link for one address within the hour, whether it has an account or not, with 429', async () => {
    const before = smtp.received.length;
    for (const email of ['dorothy@example.com', 'nobody-else@example.com']) {
      if (email.startsWith('dorothy')) await server.addUser({ username: 'dorothy', email });
      assert.equal((await askForLink(server, email)).answer.status, 200);
      assert.equal((await askForLink(server, email.toUpperCase())).answer.status, 200);
      const third = (await askForLink(server, email)).answer;
      assert.equal(third.status, 429);
      assert.match(text(third.html), /Too many links were asked for\. Wait 60 minutes, then try again\./);
      assert.ok(Number(third.headers.get('retry-after')) > 0);
    }
    // Dorothy's two, and no more.
    await smtp.next(before + 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(smtp.received.length, before + 2);
  });

  it('builds the link from the issuer alone: Host, X-Forwarded-Host and Forwarded never change it', async () => {
    await server.addUser({ username: 'mallory-target', email: 'target@example.com' });
    const before = smtp.received.length;
    await askForLink(server, 'target@example.com', {
      host: 'evil.example',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
      forwarded: 'host=evil.example;proto=https',
    });
    const mail = await smtp.next(before + 1);
    const link = linkIn(mail.parsed.text);
    assert.ok(link.startsWith(`${server.url}/reset-password?token=`), link);
    assert.doesNotMatch(mail.raw, /evil\.example/);
  });

  it('refuses what is not an e-mail address with 400 and sends nothing', async () => {
    const before = smtp.received.length;
    for (const email of [
      '',
      'not an address',
      'a@b',
      'victim@example.com\r\nBcc: thief@example.com',
      'a@example.com, thief@example.com',
      '<thief@example.com>',
    ]) {
      const { answer } = await askForLink(server, email);
      assert.equal(answer.status, 400, email);
      assert.match(text(answer.html), /Enter an e-mail address, such as name@example\.com\./);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(smtp.received.length, before);
  });

  it('keeps a line break in a stored name out of the SMTP conversation and the headers', async () => {
    await server.addUser({ username: 'eve', name: 'Eve\r\nBcc: thief@example.com\r\nSubject: owned', email: 'eve@example.com' });
    const before = smtp.received.length;
    await askForLink(server, 'eve@example.com');
    const mail = await smtp.next(before + 1);
    assert.deepEqual(mail.to, ['eve@example.com'], 'no recipient was added');
    const headers = mail.raw.slice(0, mail.raw.indexOf('\r\n\r\n'));
    assert.doesNotMatch(headers, /^Bcc:/im);
    assert.equal(mail.parsed.subject, 'Set a new password for Tessera');
    assert.equal(mail.parsed.bcc, undefined);
  });

  it('writes the message in the person’s language', async () => {
    await server.addUser({ username: 'hannah', name: 'Hannah Arendt', email: 'hannah@example.com', profile: { locale: 'de' } });
    await server.addUser({ username: 'layla', name: 'ليلى', email: 'layla@example.com', profile: { locale: 'ar' } });
    const before = smtp.received.length;
    await askForLink(server, 'hannah@example.com');
    const german = await smtp.next(before + 1);
    assert.equal(german.parsed.subject, 'Neues Passwort für Tessera festlegen');
    assert.match(german.parsed.text ?? '', /^Hallo Hannah Arendt,/);
    await askForLink(server, 'layla@example.com');
    const arabic = await smtp.next(before + 2);
    assert.equal(arabic.parsed.subject, 'تعيين كلمة مرور جديدة لـ Tessera');
    assert.match(String(arabic.parsed.html), /<html lang="ar" dir="rtl">/);
  });
});

describe('recovery with a mail server that is down or slow', () => {
  it('answers at once while the server is down, and the message goes once it is back', async () => {
    // A port nothing listens on yet.
    const probe = await startSmtpServer();
    const port = probe.port;
    await probe.close();
    const server = await startTestServer({ env: mailEnv({ url: `smtp://127.0.0.1:${port}` }) });
    try {
      await server.addUser({ username: 'ada', email: 'ada@example.com' });
      const started = Date.now();
      const { answer } = await askForLink(server, 'ada@example.com');
      assert.equal(answer.status, 200);
      assert.ok(Date.now() - started < 5000, 'the page did not wait for the mail server');
      await new Promise((resolve) => setTimeout(resolve, 300));
      const smtp = await startSmtpServer({ port });
      try {
        const mail = await smtp.next(1, 20_000);
        assert.deepEqual(mail.to, ['ada@example.com']);
      } finally {
        await smtp.close();
      }
    } finally {
      await server.close();
    }
  });

  it('answers at once while the server takes its time, and retries a refusal', async () => {
    let refusals = 1;
    const smtp = await startSmtpServer({ delayMs: 3000, refuse: () => refusals-- > 0 });
    const server = await startTestServer({ env: mailEnv(smtp) });
    try {
      await server.addUser({ username: 'barbara', email: 'barbara@example.com' });
      const started = Date.now();
      const { answer } = await askForLink(server, 'barbara@example.com');
      assert.equal(answer.status, 200);
      assert.ok(Date.now() - started < 2500, `the page took ${Date.now() - started} ms`);
      const mail = await smtp.next(1, 30_000);
      assert.deepEqual(mail.to, ['barbara@example.com']);
    } finally {
      await server.close();
      await smtp.close();
    }
  });

  it('offers no "Forgot password?" without a mail server', async () => {
    const server = await startTestServer();
    try {
      const browser = new FormBrowser(server.url);
      assert.doesNotMatch((await browser.request('/login')).html, /Forgot password/);
      assert.equal((await browser.request('/forgot-password')).status, 404);
    } finally {
      await server.close();
    }
  });
});

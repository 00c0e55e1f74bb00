/**
 * Invitations: `tessera user invite` and the admin API through one operation, the link mailed
 * through the outbox to a real SMTP server on loopback, single use, expiring, bound to the
 * address it was sent to; the account it makes has that address verified and the console role
 * given, lands in the app that invited it, and gets a token from openid-client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser, pageText as text } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { clockAtStart } from './helpers/clock.ts';
import { adminToken, appConfig, pkceRequest, startWithMail } from './helpers/fixtures.ts';
import { operatorBrowser } from './helpers/console.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, REDIRECT_URI, type TestClient, type TestServer } from './helpers/server.ts';

function invitationLink(body: string | undefined): string {
  const link = /(https?:\/\/\S+\/invitation\?token=\S+)/.exec(body ?? '')?.[1];
  assert.ok(link, `no link in:\n${body}`);
  return link;
}

describe('invitations', () => {
  const clock = clockAtStart();
  let smtp: TestSmtpServer;
  let server: TestServer;
  let app: TestClient;
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url, TESSERA_SMTP_URL: smtp.url, TESSERA_SMTP_STARTTLS: 'off' });

  before(async () => {
    ({ server, smtp } = await startWithMail({ clock }));
    app = await server.addClient({ name: 'Garden Planner' });
  });
  after(() => closeAll(server, smtp));

  it('mails an invitation from the command line; the link makes one account with that address and role, which gets a token', async () => {
    const made = await runTessera(['user', 'invite', '--email', 'Hedy@Example.com', '--role', 'viewer', '--client', app.clientId, '--json'], env());
    assert.equal(made.code, 0, made.stderr);
    // The command runs on the real clock: the server's (frozen) catches up with it.
    clock.set(Date.now());
    const answer = JSON.parse(made.stdout) as { url: string; mailed: boolean; email: string };
    assert.equal(answer.mailed, true);
    assert.ok(answer.url.startsWith(`${server.url}/invitation?token=`));
    const [invited] = await server.store.events.list({ type: 'user.invited', limit: 5 });
    assert.ok(invited);
    assert.equal((await server.store.mail.forEvent(invited.id)).length, 1, 'queued in the invitation’s transaction');
    // Stored by the command, sent by the server (which looks every half second).
    const mail = await smtp.next(1, 30_000);
    assert.deepEqual(
      mail.to.map((to) => to.toLowerCase()),
      ['hedy@example.com'],
    );
    assert.equal(mail.parsed.subject, 'You are invited to Tessera');
    const link = invitationLink(mail.parsed.text);
    assert.equal(link, answer.url);

    const browser = new FormBrowser(server.url);
    const page = await browser.request(link);
    assert.equal(page.status, 200);
    assert.match(text(page.html), /for Hedy@Example\.com/);
    assert.doesNotMatch(page.html, /name="email"/, 'the address is the invitation’s, not typed');
    const done = await browser.submit(page, '/invitation', {
      username: 'hedy',
      name: 'Hedy Lamarr',
      password: 'frequency hopping',
      email: 'someone.else@example.com',
    });
    assert.equal(done.status, 200, done.html);
    assert.ok(done.html.includes(`<a class="button" href="${new URL(REDIRECT_URI).origin}">`), 'lands in the app that invited them');
    const user = await server.store.users.findByUsername('hedy');
    assert.equal(user?.email, 'Hedy@Example.com');
    assert.equal(user?.emailVerified, true);
    assert.equal(user?.role, 'viewer');

    assert.equal(
      (await browser.submit(page, '/invitation', { username: 'hedy2', name: 'Again', password: 'frequency hopping' })).status,
      400,
      'a used invitation',
    );
    assert.equal((await browser.request(link)).status, 400);

    const config = await appConfig(server, app);
    const { url, verifier } = await pkceRequest(config, { scope: 'openid email' });
    const back = await new FormBrowser(server.url).authorize(url.href, { username: 'hedy', password: 'frequency hopping' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.location!), { pkceCodeVerifier: verifier });
    assert.equal(tokens.claims()?.sub, user?.id);
  });

  it('refuses an expired invitation', async () => {
    const made = await runTessera(['user', 'invite', '--email', 'late@example.com', '--ttl', '3600'], env());
    assert.equal(made.code, 0, made.stderr);
    const link = /^(http\S+)$/m.exec(made.stdout)![1]!;
    clock.set(Date.now() + 3601 * 1000);
    try {
      const page = await new FormBrowser(server.url).request(link);
      assert.equal(page.status, 400);
      assert.match(text(page.html), /It has already been used, or it has expired\./);
    } finally {
      clock.set(Date.now());
    }
  });

  it('refuses a bad address, role, application or lifetime, on the command line and in the admin API', async () => {
    for (const args of [
      ['--email', 'not an address'],
      ['--email', 'a@example.com\r\nBcc: b@example.com'],
      ['--email', 'a@example.com', '--role', 'root'],
      ['--email', 'a@example.com', '--client', 'no-such-app'],
      ['--email', 'a@example.com', '--ttl', '10'],
    ]) {
      const run = await runTessera(['user', 'invite', ...args], env());
      assert.notEqual(run.code, 0, args.join(' '));
    }
    assert.notEqual((await runTessera(['user', 'invite'], env())).code, 0);
    const { token } = await adminToken(server, 'admin:users');
    const post = (body: unknown) =>
      fetch(`${server.url}/admin/v1/invitations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const good = await post({ email: 'api@example.com' });
    assert.equal(good.status, 200);
    const answer = (await good.json()) as { url: string; mailed: boolean };
    assert.ok(answer.url.startsWith(`${server.url}/invitation?token=`));
    for (const body of [{ email: 'not an address' }, { email: 'a@example.com', role: 'root' }, { email: 'a@example.com', client_id: 'nope' }, {}]) {
      const refused = await post(body);
      assert.equal(refused.status, 400, JSON.stringify(body));
    }
    // A caller who does not hold everything the admin role allows does not give it.
    assert.equal((await post({ email: 'boss@example.com', role: 'admin' })).status, 403);
    // An address an account has, in any case: that person signs in; a second account cannot have it.
    await server.addUser({ username: 'already-here', email: 'here@example.com' });
    const taken = await post({ email: 'HERE@example.com' });
    assert.equal(taken.status, 409);
    assert.match(((await taken.json()) as { detail: string }).detail, /another account has this e-mail address/);
  });

  it('invites from the console, through the same operation: the link shown once and mailed, a bad address refused with 400', async () => {
    clock.set(Date.now());
    const { browser } = await operatorBrowser(server, 'admin');
    const users = await browser.request('/console/users');
    assert.equal(users.status, 200);
    const before = smtp.received.length;
    const shown = await browser.submit(users, '/console/users/invite', { email: 'console-invite@example.com' });
    assert.equal(shown.status, 200, shown.html.slice(0, 500));
    assert.match(text(shown.html), /Invitation for console-invite@example\.com/);
    const link = /(http[^"<\s]+\/invitation\?token=[^"<\s]+)/.exec(shown.html)?.[1];
    assert.ok(link, shown.html);
    // Messages of the cases before (queued while the server's clock stood still) may come first.
    let count = before + 1;
    let mail = await smtp.next(count);
    while (mail.to[0] !== 'console-invite@example.com') mail = await smtp.next(++count);
    assert.deepEqual(mail.to, ['console-invite@example.com']);
    assert.equal(invitationLink(mail.parsed.text), link.replaceAll('&amp;', '&'));
    const refused = await browser.submit(users, '/console/users/invite', { email: 'not an address' });
    assert.equal(refused.status, 400);
    assert.match(refused.html, /aria-invalid="true"/);
    // A viewer is offered no invitation form, and may not post one.
    const viewer = await operatorBrowser(server, 'viewer');
    const read = await viewer.browser.request('/console/users');
    assert.doesNotMatch(read.html, /action="\/console\/users\/invite"/);
    assert.equal((await viewer.browser.request('/console/users/invite', { form: { email: 'x@example.com', csrf_token: viewer.csrf } })).status, 403);
  });
});

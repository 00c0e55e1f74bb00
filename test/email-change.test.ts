/**
 * A person changes their own e-mail address on /account, with a real SMTP server on loopback:
 * the address stays as it was until the link mailed to the new one is followed; then it is
 * the account's, verified, and the old address is mailed a notice. The link works once, until
 * it expires, only while it is the newest asked for, and only in a browser signed in as the
 * account (anyone else gets the sign-in page); each refusal is a page that says so.
 * An operator's change is at once, and unverified unless the operator says otherwise.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { removeUser, updateUser } from '../src/flows/manage/users.ts';
import { assertAddressLinkRefused, assertSignInPage, FormBrowser, type Page, pageText as text } from './helpers/browser.ts';
import { clockAtStart } from './helpers/clock.ts';
import { manageDeps } from './helpers/manage.ts';
import { startWithMail } from './helpers/fixtures.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, type TestServer, type TestUser } from './helpers/server.ts';

function changeLink(body: string | undefined): string {
  const link = /(https?:\/\/\S+\/account\/email\/verify\?token=\S+)/.exec(body ?? '')?.[1];
  assert.ok(link, `no link in:\n${body}`);
  return link;
}

describe('changing one’s e-mail address', () => {
  const clock = clockAtStart();
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    ({ server, smtp } = await startWithMail({
      clock,
      env: {
        TESSERA_MAIL_RETRY_DELAY_MS: '50',
        TESSERA_RECOVERY_PER_EMAIL: '3',
        TESSERA_RECOVERY_PER_ADDRESS: '50',
      },
    }));
  });
  after(() => closeAll(server, smtp));

  async function signedIn(user: TestUser): Promise<{ browser: FormBrowser; page: Page }> {
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request('/account'));
    const page = await browser.follow(await browser.submit(login, '/login', { username: user.username, password: user.password }));
    assert.equal(page.status, 200);
    return { browser, page };
  }

  /** The `nth` message to `address`, once it has arrived (messages to others come in between, in any order). */
  async function mailTo(address: string, nth = 1) {
    for (let count = 1, seen = 0; ; count++) {
      const mail = await smtp.next(count);
      if (mail.to.includes(address) && ++seen === nth) return mail;
    }
  }

  async function ask(browser: FormBrowser, page: Page, email: string): Promise<Page> {
    return browser.submit(page, '/account/email', { email });
  }

  it('changes the address only when the link mailed to the new one is followed, then tells the old one', async () => {
    const user = await server.addUser({ username: 'hedy', name: 'Hedy Lamarr', email: 'hedy@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    assert.match(text(page.html), /Your address is hedy@example\.com ?\./);

    const asked = await ask(browser, page, 'hedy@example.org');
    assert.equal(asked.status, 303);
    const account = await browser.follow(asked);
    assert.match(text(account.html), /We sent a link to your new address\. Your address changes when you follow it\./);
    assert.match(text(account.html), /Waiting for confirmation: hedy@example\.org ?\./);
    const unchanged = await server.store.users.findByUsername('hedy');
    assert.equal(unchanged?.email, 'hedy@example.com', 'not before the link');
    assert.equal(unchanged?.emailVerified, true);

    const mail = await mailTo('hedy@example.org');
    assert.equal(mail.parsed.subject, 'Confirm your new e-mail address for Tessera');
    const link = changeLink(mail.parsed.text);
    assert.ok(link.startsWith(`${server.url}/account/email/verify?token=`), link);
    assert.ok(String(mail.parsed.html).includes(link.replace(/&/g, '&amp;')), 'the HTML part carries the same link');
    const token = new URL(link).searchParams.get('token')!;
    assert.equal((await server.store.emailChanges.find(token, clock.now())) ?? null, null, 'only a hash of the link is kept: the token itself finds nothing');

    // Opened on another device, not signed in: the sign-in page, for hedy, which comes back to the link.
    const other = new FormBrowser(server.url);
    const signIn = await other.request(link);
    assertSignInPage(signIn);
    assert.match(text(signIn.html), /This link confirms an e-mail address for the account hedy\. Sign in as hedy to use it\./);
    assert.match(signIn.html, /<input type="text" id="username" name="username"[^>]* value="hedy"/, 'the username filled in');
    assert.equal((await server.store.users.findByUsername('hedy'))?.email, 'hedy@example.com');
    // Then a page with a button, so that a mail scanner changes nothing.
    const confirm = await other.signIn(signIn, user);
    assert.equal(confirm.url, link);
    assert.equal(confirm.status, 200);
    assert.match(text(confirm.html), /Make hedy@example\.org the e-mail address of the account hedy on Tessera\./);
    assert.equal((await server.store.users.findByUsername('hedy'))?.email, 'hedy@example.com');
    const done = await other.submit(confirm, '/account/email/verify', {});
    assert.equal(done.status, 200);
    assert.match(text(done.html), /hedy@example\.org is now the confirmed e-mail address of hedy ?\./);
    const changed = await server.store.users.findByUsername('hedy');
    assert.equal(changed?.email, 'hedy@example.org');
    assert.equal(changed?.emailVerified, true);
    const events = await server.store.events.list({ userId: changed!.id, limit: 20 });
    assert.deepEqual(
      events
        .filter((event) => event.type.startsWith('user.'))
        .map((event) => [event.type, event.detail['by']])
        .sort(),
      [
        ['user.email_change_requested', undefined],
        ['user.email_changed', 'email'],
        ['user.updated', 'user'],
      ],
      'announced as an operator’s change is, for webhooks and Shared Signals receivers',
    );

    const notice = await mailTo('hedy@example.com');
    assert.equal(notice.parsed.subject, 'Your e-mail address for Tessera was changed');
    assert.match(notice.parsed.text ?? '', /The e-mail address of the account hedy on Tessera was changed to hedy@example\.org on /);
    assert.match(notice.parsed.html || '', /hedy@example\.org/);
    assert.equal(smtp.received.filter((one) => one.to.includes('hedy@example.com')).length, 1, 'one notice');

    const again = await other.submit(confirm, '/account/email/verify', {});
    assert.equal(again.status, 400, 'a used link');
    assert.match(text(again.html), /This link cannot be used/);
    assert.match(text(again.html), /It has already been used, it has expired, or a newer change replaced it\./);
    assert.equal((await other.request(link)).status, 400);
  });

  it('refuses a link once a newer address was asked for, and an expired one', async () => {
    const user = await server.addUser({ username: 'grace', email: 'grace@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    await ask(browser, page, 'grace@one.example');
    const first = changeLink((await mailTo('grace@one.example')).parsed.text);
    await ask(browser, page, 'grace@two.example');
    const second = changeLink((await mailTo('grace@two.example')).parsed.text);

    const replaced = await browser.request(first);
    assert.equal(replaced.status, 400, 'a link for an address no longer asked for');
    assert.match(text(replaced.html), /a newer change replaced it/);
    assert.equal((await new FormBrowser(server.url).request(first)).status, 400, 'the same page signed in as no one');
    // A form for the replaced link, posted anyway, changes nothing either.
    const forged = await browser.submit(await browser.request(second), '/account/email/verify', { token: new URL(first).searchParams.get('token')! });
    assert.equal(forged.status, 400);
    assert.equal((await server.store.users.findByUsername('grace'))?.email, 'grace@example.com');

    clock.advance(24 * 3600 * 1000 + 1000);
    try {
      const expired = await browser.request(second);
      assert.equal(expired.status, 400);
      assert.match(text(expired.html), /This link cannot be used/);
    } finally {
      clock.advance(-(24 * 3600 * 1000 + 1000));
    }
    assert.equal((await server.store.users.findByUsername('grace'))?.email, 'grace@example.com');
    const done = await browser.submit(await browser.request(second), '/account/email/verify', {});
    assert.equal(done.status, 200, 'the newest link still works before it expires');
    assert.equal((await server.store.users.findByUsername('grace'))?.email, 'grace@two.example');
  });

  it('changes nothing for a browser not signed in as the account whose link it is: the sign-in page, and a posted form refused (pre-hijacked accounts)', async () => {
    // Mallory asks for Lin's address on her own account: the link goes to Lin.
    const mallory = await server.addUser({ username: 'mallory', email: 'mallory@example.com', profile: { emailVerified: true } });
    const attacker = await signedIn(mallory);
    await ask(attacker.browser, attacker.page, 'lin@example.net');
    const link = changeLink((await mailTo('lin@example.net')).parsed.text);
    // Lin follows it signed in as no one, then signed in to an account of her own: each time the
    // sign-in page for mallory, and the confirmation posted anyway refused.
    const own = await server.addUser({ username: 'lin', email: 'lin@work.example', profile: { emailVerified: true } });
    await assertAddressLinkRefused(new FormBrowser(server.url), link, '/account/email/verify', 'mallory', own);

    const unchanged = await server.store.users.findByUsername('mallory');
    assert.deepEqual([unchanged?.email, unchanged?.emailVerified], ['mallory@example.com', true]);
    assert.equal((await server.store.users.findByUsername('lin'))?.email, 'lin@work.example');
    assert.equal((await server.store.emailChanges.pendingFor(mallory.id, clock.now()))?.email, 'lin@example.net', 'the link is not spent');
    assert.equal(smtp.received.filter((mail) => mail.to.includes('mallory@example.com')).length, 0, 'no notice of a change');
  });

  it('refuses a bad address and the address the account has, with 400, and mails nothing', async () => {
    const user = await server.addUser({ username: 'katherine', email: 'katherine@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    const bad = await ask(browser, page, 'not an address');
    assert.equal(bad.status, 400);
    assert.match(text(bad.html), /Enter an e-mail address, such as name@example\.com\./);
    assert.match(bad.html, /id="new_email"[^>]*aria-invalid="true"/);
    const injected = await ask(browser, page, 'katherine@example.org\r\nBcc: someone@example.net');
    assert.equal(injected.status, 400, 'a line break never reaches a header');
    const same = await ask(browser, page, 'Katherine@Example.com');
    assert.equal(same.status, 400);
    assert.match(text(same.html), /That is your address already\./);
    // A request that is sent, after them: nothing came before it to these addresses.
    await ask(browser, page, 'katherine@sent.example');
    await mailTo('katherine@sent.example');
    assert.deepEqual(
      smtp.received.filter((mail) => mail.to.some((to) => to.startsWith('katherine@') && to !== 'katherine@sent.example')),
      [],
    );
  });

  it('verifies the address the account has, unverified, by the same link, and tells no one of a change', async () => {
    const user = await server.addUser({ username: 'mary', email: 'mary@example.com' });
    const { browser, page } = await signedIn(user);
    assert.match(text(page.html), /It is not confirmed yet/);
    assert.equal((await ask(browser, page, 'mary@example.com')).status, 303);
    const link = changeLink((await mailTo('mary@example.com')).parsed.text);
    assert.equal((await browser.submit(await browser.request(link), '/account/email/verify', {})).status, 200, 'one step, signed in');
    const verified = await server.store.users.findByUsername('mary');
    assert.equal(verified?.email, 'mary@example.com');
    assert.equal(verified?.emailVerified, true);
    const events = await server.store.events.list({ userId: verified!.id, limit: 20 });
    const [changed] = await server.store.mail.forEvent(events.find((event) => event.type === 'user.email_changed')!.id);
    assert.equal(changed, undefined, 'no notice: the address is the same');
  });

  it('counts requests for one new address against the recovery budget, with 429', async () => {
    const user = await server.addUser({ username: 'dorothy', email: 'dorothy@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    for (let i = 0; i < 3; i++) assert.equal((await ask(browser, page, 'dorothy@flood.example')).status, 303);
    const refused = await ask(browser, page, 'dorothy@flood.example');
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) > 0);
    assert.match(text(refused.html), /Too many links were asked for\./);
  });

  it('asks a sign-in older than 15 minutes to sign in again, mails nothing, then comes back to the account page', async () => {
    const user = await server.addUser({ username: 'ida', email: 'ida@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    clock.advance(16 * 60_000);
    try {
      const stale = await ask(browser, page, 'ida@elsewhere.example');
      assert.equal(stale.status, 401);
      assert.match(text(stale.html), /To change your e-mail address, sign in again: your sign-in is more than 15 minutes old\./);
      assert.equal(await server.store.emailChanges.pendingFor(user.id, clock.now()), null, 'nothing asked for, nothing mailed');
      const back = await browser.follow(await browser.submit(stale, '/login', { username: user.username, password: user.password }));
      assert.equal(back.status, 200);
      assert.equal(new URL(back.url).pathname, '/account');
      assert.equal((await ask(browser, back, 'ida@elsewhere.example')).status, 303, 'the new sign-in may');
      await mailTo('ida@elsewhere.example');
    } finally {
      clock.advance(-16 * 60_000);
    }
  });

  it('writes the mail in the person’s language', async () => {
    const user = await server.addUser({ username: 'marie', email: 'marie@example.com', profile: { emailVerified: true, locale: 'fr' } });
    const { browser, page } = await signedIn(user);
    await ask(browser, page, 'marie@example.fr');
    const mail = await mailTo('marie@example.fr');
    assert.equal(mail.parsed.subject, 'Confirmez votre nouvelle adresse e-mail pour Tessera');
    assert.match(mail.parsed.html || '', /<html lang="fr"/);
  });

  it('lets an operator change an address at once, unverified unless the operator says it is, ending a change the person asked for', async () => {
    const user = await server.addUser({ username: 'barbara', email: 'barbara@example.com', profile: { emailVerified: true } });
    const { browser, page } = await signedIn(user);
    await ask(browser, page, 'barbara@asked.example');
    const link = changeLink((await mailTo('barbara@asked.example')).parsed.text);

    const deps = { ...manageDeps(server), clock };
    const updated = await updateUser(deps, 'barbara', { email: 'barbara@operator.example' });
    assert.equal(updated.email, 'barbara@operator.example');
    assert.equal(updated.emailVerified, false, 'the old address’s verification says nothing of the new one');
    assert.equal((await new FormBrowser(server.url).request(link)).status, 400, 'the person’s waiting change is ended');

    const vouched = await updateUser(deps, 'barbara', { email: 'barbara@vouched.example', email_verified: true });
    assert.equal(vouched.emailVerified, true);
    const renamed = await updateUser(deps, 'barbara', { name: 'Barbara Liskov' });
    assert.equal(renamed.emailVerified, true, 'a change that leaves the address keeps its verification');
    const recased = await updateUser(deps, 'barbara', { email: 'Barbara@Vouched.example' });
    assert.equal(recased.emailVerified, true, 'the same address in other letters');

    // The account goes, and its changes with it.
    await ask(browser, page, 'barbara@last.example');
    await removeUser(deps, 'barbara');
    assert.equal(await server.store.users.findByUsername('barbara'), null);
    assert.equal((await new FormBrowser(server.url).request(changeLink((await mailTo('barbara@last.example')).parsed.text))).status, 400);
  });
});

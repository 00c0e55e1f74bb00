/**
 * Sign-up with a passkey, and changing one's address, in Chromium with the DevTools
 * protocol's virtual authenticator and a real SMTP server on loopback. Where the browser can
 * make passkeys, the sign-up page offers "Create a passkey" first; the account is made when the
 * mailed link is followed, with that passkey and no password, and the passkey signs in. Then
 * the person changes their address on /account: the new one is theirs once its link is
 * followed where they are signed in (elsewhere, it is the sign-in page), the old one is told.
 * In English and Arabic, each new page passing axe-core.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { verifyPassword } from '../src/core/password.ts';
import { axeViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, launchChromium, reach, signInToAccountWithPasskey, withVirtualAuthenticator } from './helpers/chromium.ts';
import { startWithMail } from './helpers/fixtures.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, type TestServer } from './helpers/server.ts';

describe('sign-up with a passkey, and a new address, in Chromium', { skip: chromiumUnavailable() }, () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    ({ server, smtp } = await startWithMail({
      issuerHost: 'localhost',
      env: { TESSERA_SIGN_UP: 'open', TESSERA_MAIL_RETRY_DELAY_MS: '50' },
    }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server, smtp));

  /** The `nth` message to `address`, once it has arrived. */
  async function mailTo(address: string, nth = 1) {
    for (let count = 1, seen = 0; ; count++) {
      const mail = await smtp.next(count);
      if (mail.to.includes(address) && ++seen === nth) return mail;
    }
  }

  function linkIn(body: string | undefined, path: string): string {
    const link = new RegExp(`(http\\S+${path}\\?token=\\S+)`).exec(body ?? '')?.[1];
    assert.ok(link, body);
    assert.ok(link.startsWith(`${server.url}/`), link);
    return link;
  }

  async function withAuthenticator(locale: string): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
    return withVirtualAuthenticator(browser, { locale });
  }

  for (const locale of ['en', 'ar'] as const) {
    it(`${locale}: offers a passkey first, makes the account with it and no password once the link is followed, signs in with it, and changes the address by its link`, async () => {
      const username = `builder-${locale}`;
      const email = `${username}@example.com`;
      const { context, page, cdp, authenticatorId } = await withAuthenticator(locale);
      const scriptErrors: string[] = [];
      page.on('pageerror', (error) => scriptErrors.push(error.message));
      try {
        await page.goto(`${server.url}/sign-up`);
        const passkeyButton = page.locator('#passkey-sign-up-button');
        await reach(page, passkeyButton, 'the passkey button, shown where the browser can');
        assert.equal(await page.getAttribute('html', 'lang'), locale);
        assert.ok(await page.locator('#password').isVisible(), 'the password stays, as the alternative');
        assert.deepEqual(await axeViolations(page, `sign-up with a passkey (${locale})`), []);

        // A taken username is refused before the authenticator is asked.
        await server.addUser({ username: `taken-${locale}` });
        await page.locator('#username').fill(`taken-${locale}`);
        await page.locator('#name').fill('Builder');
        await page.locator('#email').fill(email);
        await passkeyButton.click();
        await reach(page, page.locator('#passkey-error'), 'the refusal beside the button');
        assert.equal((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials.length, 0);
        assert.deepEqual(await axeViolations(page, `sign-up with a passkey, refused (${locale})`), []);

        await page.locator('#username').fill(username);
        await passkeyButton.click();
        await reach(page, page.locator('p[role="status"]'), 'the page after the form');
        const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
        assert.equal(credentials.length, 1);
        assert.equal(credentials[0]!.rpId, 'localhost');
        assert.equal(await server.store.users.findByUsername(username), null, 'no account before the link');

        const link = linkIn((await mailTo(email)).parsed.text, '/sign-up/verify');
        await page.goto(link);
        await page.locator('form[action="/sign-up/verify"] button[type="submit"]').click();
        await reach(page, page.locator('p[role="status"]'), 'the account made');
        const user = await server.store.users.findByUsername(username);
        assert.ok(user);
        assert.equal(user.emailVerified, true);
        assert.equal(Buffer.from(credentials[0]!.userHandle!, 'base64').toString('utf8'), user.id, 'the passkey’s user handle is the account’s sub');
        assert.equal(await verifyPassword('', user.passwordHash), false, 'no password');
        const [passkey] = await server.store.passkeys.listForUser(user.id);
        assert.equal(passkey?.id, credentials[0]!.credentialId.replace(/=+$/, '').replace(/\+/g, '-').replace(/\//g, '_'));

        // The passkey signs in (the sign-in page's autofill request, or its button).
        await signInToAccountWithPasskey(page, server.url);

        // A new address: the account keeps the old one until the link is followed.
        const newEmail = `${username}@example.org`;
        await page.locator('#new_email').fill(newEmail);
        await page.locator('form[action="/account/email"] button[type="submit"]').click();
        await reach(page, page.locator('p.alert[role="status"]'), 'the notice that a link was sent');
        assert.deepEqual(await axeViolations(page, `account, address waiting (${locale})`), []);
        assert.equal((await server.store.users.findByUsername(username))?.email, email);

        const change = linkIn((await mailTo(newEmail)).parsed.text, '/account/email/verify');
        // Opened where no one is signed in (another device): the sign-in page, saying whose the link is.
        const elsewhere = await browser.newContext({ locale });
        try {
          const other = await elsewhere.newPage();
          await other.goto(change);
          await reach(other, other.locator('p.alert[role="status"]'), 'the sign-in page, naming the account');
          assert.equal(await other.locator('#username').inputValue(), username);
          assert.equal(await other.locator('form[action="/account/email/verify"]').count(), 0, 'no button to confirm');
          assert.deepEqual(await axeViolations(other, `new address, signed in as no one (${locale})`), []);
        } finally {
          await elsewhere.close();
        }
        assert.equal((await server.store.users.findByUsername(username))?.email, email);
        // Where the account is signed in: the button.
        await page.goto(change);
        assert.deepEqual(await axeViolations(page, `new address, confirm (${locale})`), []);
        await page.locator('form[action="/account/email/verify"] button[type="submit"]').click();
        await reach(page, page.locator('p[role="status"]'), 'the address changed');
        assert.deepEqual(await axeViolations(page, `new address, done (${locale})`), []);
        assert.equal((await server.store.users.findByUsername(username))?.email, newEmail);
        // After the sign-up's link, the notice of the change.
        const notice = await mailTo(email, 2);
        assert.match(notice.parsed.text ?? '', new RegExp(newEmail.replace(/\./g, '\\.')));

        await page.goto(change);
        await reach(page, page.getByRole('alert'), 'a used link refused');
        assert.deepEqual(await axeViolations(page, `new address, used link (${locale})`), []);
        assert.deepEqual(scriptErrors, []);
      } finally {
        await context.close();
      }
    });
  }
});

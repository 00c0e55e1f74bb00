/**
 * Sign-up in Chromium, from an app's authorization request to its first token: the sign-in
 * page's "Create an account", the form, the link that arrives at a real SMTP server on
 * loopback, the confirmation, then sign-in, consent and the code exchanged by openid-client,
 * whose ID token names the new account with its address verified. In English and Arabic, each
 * page passing axe-core (helpers/chromium.ts) and each named state checked once more here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { axeViolations } from './helpers/accessibility.ts';
import { catchRedirect, chromiumUnavailable, cleanPage, launchChromium } from './helpers/chromium.ts';
import { appConfig, authorizationAttempt, redeemAttempt, startWithMail } from './helpers/fixtures.ts';
import { manageDeps } from './helpers/manage.ts';
import { inviteUser } from '../src/flows/manage/invitations.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, REDIRECT_URI, type TestClient, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

describe('sign-up in Chromium, to a first token', { skip: chromiumUnavailable() }, () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let client: TestClient;
  let browser: Browser;

  before(async () => {
    ({ server, smtp } = await startWithMail({ env: { TESSERA_SIGN_UP: 'open' } }));
    client = await server.addClient({ name: 'Garden Planner' });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server, smtp));

  for (const locale of ['en', 'ar'] as const) {
    it(`${locale}: signs up, confirms the address from the mail, and the app gets an ID token for the new account`, async () => {
      const username = `gardener-${locale}`;
      const email = `${username}@example.com`;
      const config = await appConfig(server, client);
      const attempt = await authorizationAttempt(config, { scope: 'openid profile email' });
      const page = await cleanPage(browser, { locale });
      const callback = catchRedirect(page);
      await page.goto(attempt.url.href);
      await page.locator(`a[href^="/sign-up?"]`).click();
      await page.locator('#username').waitFor();
      assert.equal(await page.getAttribute('html', 'lang'), locale);
      assert.deepEqual(await axeViolations(page, `sign-up (${locale})`), []);

      // A username that is not one: said beside the form, which passes axe-core too.
      await page.locator('#username').fill('no spaces allowed');
      await page.locator('#name').fill('Gardener');
      await page.locator('#email').fill(email);
      await page.locator('#password').fill('a long enough password');
      await page.locator('form[action="/sign-up"] button[type="submit"]').click();
      await page.getByRole('alert').waitFor();
      assert.equal(await page.locator('#username').getAttribute('aria-invalid'), 'true');
      assert.deepEqual(await axeViolations(page, `sign-up, refused (${locale})`), []);

      const before = smtp.received.length;
      await page.locator('#username').fill(username);
      await page.locator('#password').fill('a long enough password');
      await page.locator('form[action="/sign-up"] button[type="submit"]').click();
      await page.locator('p[role="status"]').waitFor();
      assert.deepEqual(await axeViolations(page, `sign-up, sent (${locale})`), []);

      const mail = await smtp.next(before + 1);
      assert.deepEqual(mail.to, [email]);
      const link = /(http\S+\/sign-up\/verify\?token=\S+)/.exec(mail.parsed.text ?? '')?.[1];
      assert.ok(link, mail.parsed.text);
      assert.ok(link.startsWith(`${server.url}/`), link);
      // Not an account until the link is followed.
      assert.equal(await server.store.users.findByUsername(username), null);

      await page.goto(link);
      assert.deepEqual(await axeViolations(page, `sign-up, confirm (${locale})`), []);
      await page.locator('form[action="/sign-up/verify"] button[type="submit"]').click();
      await page.locator('p[role="status"]').waitFor();
      assert.deepEqual(await axeViolations(page, `sign-up, done (${locale})`), []);
      await page.locator('a.button').click();

      // The app's request again: sign in, approve, and the code goes back to the app.
      await page.locator('#username').fill(username);
      await page.locator('#password').fill('a long enough password');
      await page.locator('form[action="/login"] button[type="submit"]').click();
      await page.locator('button[value="approve"]').click();
      const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
      const user = await server.store.users.findByUsername(username);
      assert.equal(tokens.claims()?.sub, user?.id);
      const info = await oidc.fetchUserInfo(config, tokens.access_token, user!.id);
      assert.equal(info.email, email);
      assert.equal(info.email_verified, true);
      assert.equal(info.name, 'Gardener');
    });

    it(`${locale}: accepts an invitation, every page passing axe-core, and lands in the app`, async () => {
      const invitation = await inviteUser(manageDeps(server), { email: `invited-${locale}@example.com`, clientId: client.clientId });
      const page = await cleanPage(browser, { locale });
      await page.goto(`${server.url}/invitation?token=wrong`);
      assert.deepEqual(await axeViolations(page, `invitation invalid (${locale})`), []);
      await page.goto(invitation.url);
      await page.locator('#username').waitFor();
      assert.equal(await page.getAttribute('html', 'lang'), locale);
      assert.deepEqual(await axeViolations(page, `invitation (${locale})`), []);
      await page.locator('#username').fill(`invited-${locale}`);
      await page.locator('#name').fill('Invited');
      await page.locator('#password').fill('short');
      await page.locator('form[action="/invitation"]').evaluate((form) => form.setAttribute('novalidate', ''));
      await page.locator('form[action="/invitation"] button[type="submit"]').click();
      await page.getByRole('alert').waitFor();
      assert.deepEqual(await axeViolations(page, `invitation, refused (${locale})`), []);
      await page.locator('#password').fill('a long enough password');
      await page.locator('form[action="/invitation"] button[type="submit"]').click();
      await page.locator('p[role="status"]').waitFor();
      assert.equal(await page.locator('a.button').getAttribute('href'), new URL(REDIRECT_URI).origin);
      assert.equal((await server.store.users.findByUsername(`invited-${locale}`))?.emailVerified, true);
    });
  }
});

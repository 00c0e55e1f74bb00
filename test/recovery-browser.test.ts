/**
 * "Forgot password?" in Chromium, in English and in Arabic: from the sign-in page's link to a
 * new password set from the link that arrived at a real SMTP server on loopback. Every page on
 * the way is checked by axe-core (helpers/chromium.ts), and each named state once more here.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { axeViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { startWithMail } from './helpers/fixtures.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, type TestServer } from './helpers/server.ts';

const WORDS = {
  en: {
    forgot: 'Forgot password?',
    email: 'E-mail address',
    send: 'Send the link',
    sent: 'Check your e-mail',
    invalid: 'Enter an e-mail address',
    newPassword: 'New password',
    set: 'Set password',
    done: 'Password changed',
  },
  ar: {
    forgot: 'هل نسيت كلمة المرور؟',
    email: 'عنوان البريد الإلكتروني',
    send: 'إرسال الرابط',
    sent: 'تحقق من بريدك الإلكتروني',
    invalid: 'أدخل عنوان بريد إلكتروني',
    newPassword: null,
    set: null,
    done: null,
  },
} as const;

describe('recovery by e-mail in Chromium', { skip: chromiumUnavailable() }, () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    ({ server, smtp } = await startWithMail({ env: { TESSERA_MAIL_FROM: 'no-reply@auth.example.com' } }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server, smtp));

  for (const locale of ['en', 'ar'] as const) {
    it(`${locale}: from "Forgot password?" to a new password, every page passing axe-core`, async () => {
      const words = WORDS[locale];
      const username = `person-${locale}`;
      await server.addUser({ username, email: `${username}@example.com`, profile: { locale } });
      const context = await browser.newContext({ locale });
      const page = await context.newPage();
      try {
        await page.goto(`${server.url}/login`);
        assert.equal(await page.getAttribute('html', 'lang'), locale);
        await page.getByRole('link', { name: words.forgot }).click();
        await page.getByLabel(words.email).waitFor();
        assert.deepEqual(await axeViolations(page, `forgot password (${locale})`), []);

        // Not an address: the page says so, and passes axe-core with its error.
        await page.getByLabel(words.email).fill('not-an-address@');
        // The browser's own check would stop the form first: the server's answer is what is tested.
        await page.locator('form[action="/forgot-password"]').evaluate((form) => form.setAttribute('novalidate', ''));
        await page.getByRole('button', { name: words.send }).click();
        await page.getByRole('alert').filter({ hasText: words.invalid }).waitFor();
        assert.deepEqual(await axeViolations(page, `forgot password, refused (${locale})`), []);

        const before = smtp.received.length;
        await page.getByLabel(words.email).fill(`${username}@example.com`);
        await page.getByRole('button', { name: words.send }).click();
        await page.getByRole('heading', { name: words.sent }).waitFor();
        assert.deepEqual(await axeViolations(page, `forgot password, sent (${locale})`), []);

        const mail = await smtp.next(before + 1);
        const link = /(http\S+\/reset-password\?token=\S+)/.exec(mail.parsed.text ?? '')?.[1];
        assert.ok(link, mail.parsed.text);
        await page.goto(link);
        if (words.newPassword !== null) {
          await page.getByLabel(words.newPassword).fill('a brand new password');
          await page.getByRole('button', { name: words.set }).click();
          await page.getByRole('heading', { name: words.done }).waitFor();
        } else {
          await page.locator('#new_password').fill('a brand new password');
          await page.locator('form[action="/reset-password"] button[type="submit"]').click();
          await page.locator('p[role="status"]').waitFor();
        }
      } finally {
        await context.close();
      }
    });
  }
});

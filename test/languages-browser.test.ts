/**
 * Every page in every language, as a person sees it in Chromium at phone width:
 * the document's `lang` and `dir`, no message key or English sentence left where the
 * language has its own, nothing cut off or pushing the page sideways, and no axe-core
 * violation (WCAG 2.2 AA: every rule in the first language, the rules a page's words decide
 * in the others). Then the choice
 * of language end to end: `ui_locales` over `Accept-Language`, and the menu's choice
 * remembered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { LOCALES, type Locale } from '../src/config/locales.ts';
import { accountPage } from '../src/ui/account.ts';
import { deviceCodePage, deviceCodeUsedPage, deviceDetails, deviceDonePage } from '../src/ui/device.ts';
import { html } from '../src/ui/html.ts';
import { CATALOGUES, messages } from '../src/ui/i18n.ts';
import { logoutConfirmPage, signedOutPage } from '../src/ui/logout.ts';
import {
  consentPage,
  errorPage,
  forgotPasswordPage,
  forgotSentPage,
  invitationInvalidPage,
  invitationPage,
  resetDonePage,
  resetPasswordPage,
  signInPage,
  signUpConfirmPage,
  signUpDonePage,
  signUpPage,
  signUpSentPage,
  STYLESHEET,
  type Ui,
} from '../src/ui/pages.ts';
import { recoveryCodesPage, secondFactorPage, securitySection, totpSetupPage } from '../src/ui/second-factor.ts';
import { axeViolations, textViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, cleanPage, launchChromium } from './helpers/chromium.ts';
import { closeAll, REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizeUrl, startWithApp } from './helpers/fixtures.ts';

/** A phone held upright (the narrowest common one). */
const PHONE = { width: 360, height: 740 };
const T = Date.UTC(2026, 10, 24, 21, 30);
const ACCESS = {
  openid: [
    { name: 'openid', description: 'Sign you in and know who you are' },
    { name: 'profile', description: 'See your name and username' },
    { name: 'offline_access', description: 'Stay connected while you are away (until you revoke it)' },
  ],
  apis: [{ name: 'Photo Library', identifier: 'https://photos.example/api/v1/libraries', scopes: [{ name: 'photos:read', description: 'See your photos' }] }],
};
const AGENT = 'Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36';

/** Every page and page state the ui renders, with its longest realistic content. */
function everyPage(site: Ui['site'], locale: Locale): Record<string, string> {
  const ui: Ui = { site, t: messages(locale), here: '/' };
  const { t } = ui;
  const csrf = 'c'.repeat(43);
  const security = (totpEnabled: boolean, changeRefusal: 'prove-first' | 'sign-in-again' | null = null, removable = true) =>
    securitySection(ui, {
      csrf,
      changeRefusal,
      reauthenticateMinutes: 15,
      passkeysAvailable: true,
      passkeys: [{ id: 'pk1', name: 'Pixel 9', createdAt: T, lastUsedAt: null, synced: true, removable }],
      totpEnabled,
      recoveryCodesLeft: 3,
    });
  /** The consent page's fields for the Photo Printer app, asked at the authorization endpoint by Ada. */
  const printerConsent = {
    csrf,
    action: '/oauth/authorize',
    fields: {},
    clientName: 'Photo Printer',
    access: ACCESS,
    signedInAs: 'Ada Lovelace',
    returnTo: '/',
  };
  const details = deviceDetails(ui, {
    userCode: 'BCDF-GHJK',
    requestedAt: T - 180_000,
    now: T,
    deviceIp: '203.0.113.7',
    deviceUserAgent: 'Living Room TV',
    approverIp: '198.51.100.23',
    otherNetwork: true,
  });
  return {
    'sign-in': signInPage(ui, { csrf, returnTo: '/account', clientName: 'Photo Printer', passkeys: true }),
    'sign-in refused': signInPage(ui, { csrf, returnTo: '/account', username: 'ada', error: t.text('signIn.error.limitedUser', { minutes: 15 }) }),
    'sign-in needs a second factor': signInPage(ui, {
      csrf,
      returnTo: '/oauth/authorize?client_id=printer',
      clientName: 'Photo Printer',
      notice: t.text('signIn.refusal.secondFactorRequired', { client: 'Photo Printer' }),
      setUp: true,
      passkeys: true,
    }),
    'sign-in needs a passkey': signInPage(ui, {
      csrf,
      returnTo: '/account',
      clientName: 'Photo Printer',
      notice: t.text('signIn.refusal.passkeyRequired', { client: 'Photo Printer' }),
      passkeys: true,
    }),
    consent: consentPage(ui, {
      ...printerConsent,
      details: html`<p class="muted">${t.html('consent.returnTo', { target: 'printer.example' })}</p>`,
    }),
    'consent, app not verified': consentPage(ui, {
      ...printerConsent,
      unverified: { host: null },
    }),
    'consent, metadata-document app not verified': consentPage(ui, {
      ...printerConsent,
      unverified: { host: 'printer.example' },
    }),
    'consent for more': consentPage(ui, {
      ...printerConsent,
      more: true,
    }),
    'device code': deviceCodePage(ui, { csrf, value: '', error: t.text('device.code.lockedNetwork', { minutes: 10 }) }),
    'device approval': consentPage(ui, { ...printerConsent, action: '/device/approve', clientName: 'Living Room TV', returnTo: '/device', details }),
    'device approved': deviceDonePage(ui, true, 'Living Room TV'),
    'device denied': deviceDonePage(ui, false, 'Living Room TV'),
    'device code used': deviceCodeUsedPage(ui),
    account: accountPage(ui, {
      csrf,
      signedInAs: 'Ada Lovelace',
      notice: t.text('account.notice.password'),
      passwordError: t.text('account.password.tooShort', { min: 8 }),
      connections: [
        { grantId: 'g1', clientName: 'Photo Printer', access: ACCESS, approvedAt: T, lastUsedAt: null, device: null },
        {
          grantId: 'g2',
          clientName: 'Living Room TV',
          access: ACCESS,
          approvedAt: T,
          lastUsedAt: T,
          device: { ip: '203.0.113.7', userAgent: AGENT, requestedAt: T },
        },
      ],
      sessions: [
        { signedInAt: T, ip: '2001:db8:85a3::8a2e:370:7334', userAgent: AGENT, current: true },
        { signedInAt: T, ip: null, userAgent: null, current: false },
      ],
      activity: [
        { kind: 'signed-in', clientName: null, at: T, ip: '198.51.100.23', userAgent: AGENT },
        { kind: 'approved', clientName: 'Photo Printer', at: T, ip: null, userAgent: null },
        { kind: 'approved-device', clientName: null, at: T, ip: '203.0.113.7', userAgent: null },
      ],
      security: security(true),
    }),
    'account, codes off': accountPage(ui, { csrf, signedInAs: 'ada', connections: [], sessions: [], activity: [], security: security(false) }),
    'account, a passkey its only way in': accountPage(ui, {
      csrf,
      signedInAs: 'ada',
      connections: [],
      sessions: [],
      activity: [],
      security: security(false, null, false),
    }),
    'account, password alone after a second factor': accountPage(ui, {
      csrf,
      signedInAs: 'ada',
      connections: [],
      sessions: [],
      activity: [],
      security: security(true, 'prove-first'),
    }),
    'account, a sign-in too old to change a second factor': accountPage(ui, {
      csrf,
      signedInAs: 'ada',
      connections: [],
      sessions: [],
      activity: [],
      security: security(true, 'sign-in-again'),
    }),
    'one-time code': secondFactorPage(ui, { csrf, returnTo: '/', error: t.text('code.error.wrong') }),
    'authenticator setup': totpSetupPage(ui, {
      csrf,
      secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP',
      qr: 'data:image/gif;base64,R0lGODlhAQABAAAAACw=',
      error: t.text('totp.setup.wrong', { site: site.name }),
    }),
    'recovery codes': recoveryCodesPage(ui, ['k7mq-2xzp-9wrt', 'b3nd-8hvc-4fyl', 'q9tz-6kme-2ubs', 'w5rx-7gpa-3nhd']),
    'recovery codes, continuing an approval': recoveryCodesPage(ui, ['k7mq-2xzp-9wrt', 'b3nd-8hvc-4fyl'], '/oauth/authorize?client_id=printer'),
    'logout confirm': logoutConfirmPage(ui, { csrf, clientName: 'Photo Printer', fields: { client_id: 'printer' }, signedInAs: 'Ada Lovelace' }),
    'signed out': signedOutPage(ui),
    'reset password': resetPasswordPage(ui, { csrf, token: 'x', username: 'ada', error: t.text('reset.tooShort', { min: 8 }) }),
    'password reset': resetDonePage(ui, true),
    'forgot password': forgotPasswordPage(ui, { csrf, returnTo: '/account', email: 'ada.lovelace@example.com', error: t.text('forgot.busy', { minutes: 60 }) }),
    'sign-up': signUpPage(ui, {
      csrf,
      returnTo: '/account',
      values: { username: 'ada', name: 'Ada Lovelace', email: 'ada.lovelace@example.com' },
      error: { field: 'username', text: t.text('signUp.error.taken') },
    }),
    'sign-up, sent': signUpSentPage(ui, { email: 'someone.with.a.long.name@example.com', hours: 24, returnTo: '/account', later: true }),
    'sign-up, confirm': signUpConfirmPage(ui, { csrf, token: 'x', username: 'ada' }),
    'sign-up, confirm in another browser': signUpConfirmPage(ui, {
      csrf,
      token: 'x',
      username: 'ada',
      ask: 'password',
      error: t.text('signUp.confirm.passwordWrong'),
    }),
    'sign-up, confirm a passkey sign-up in another browser': signUpConfirmPage(ui, { csrf, token: 'x', username: 'ada', ask: 'maker-browser' }),
    'sign-up, done': signUpDonePage(ui, { kind: 'done', username: 'ada', returnTo: '/login' }),
    'sign-up, taken': signUpDonePage(ui, { kind: 'taken' }),
    invitation: invitationPage(ui, {
      csrf,
      token: 'x',
      email: 'hedy@example.com',
      values: { username: 'hedy' },
      error: { field: 'password', text: t.text('signUp.error.password') },
    }),
    'invitation invalid': invitationInvalidPage(ui),
    'forgot password, sent': forgotSentPage(ui, { email: 'someone.with.a.long.name@example.com', minutes: 60, returnTo: '/account' }),
    'reset link invalid': resetDonePage(ui, false),
    error: errorPage(ui, t.text('error.cannotComplete'), t.text('error.cannotCompleteText'), {
      details: 'invalid_request: redirect_uri is not registered for this client',
    }),
    'not found': errorPage(ui, t.text('error.notFound'), t.text('error.notFoundText', { path: '/acount/settings/notifications', site: site.name })),
    'passkey not added': errorPage(ui, t.text('passkey.add.failedTitle'), t.text('passkey.add.duplicate'), {
      back: { href: '/account', label: t.text('recovery.back') },
    }),
  };
}

/** Message keys look like `signIn.title`: one on a page is a message that was not found. */
const KEY = new RegExp(
  `(?:^|\\W)(${Object.keys(CATALOGUES.en)
    .map((key) => key.replaceAll('.', '\\.'))
    .join('|')})(?:\\W|$)`,
);

/** English sentences with a translation of their own in `locale`: none may be left on its pages. */
function englishOnly(locale: Locale): string[] {
  const english: Readonly<Record<string, string>> = CATALOGUES.en;
  const translated: Readonly<Record<string, string>> = CATALOGUES[locale];
  return Object.entries(english)
    .filter(([key, text]) => translated[key] !== text && !/[{<]/.test(text) && text.split(' ').length >= 3)
    .map(([, text]) => text);
}

/** The page as the test reads it: its lang and dir, its text, and what is cut off or sticks out at this width. */
const INSPECT = `(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  if (document.documentElement.scrollWidth > width + 1) out.push('the page scrolls sideways');
  for (const element of document.body.querySelectorAll('*')) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    if (box.left < -1 || box.right > width + 1 || (element.clientWidth > 0 && element.scrollWidth > element.clientWidth + 1)) {
      out.push(element.tagName.toLowerCase() + ': ' + (element.textContent || '').trim().slice(0, 60));
    }
  }
  return { lang: document.documentElement.lang, dir: document.documentElement.dir, text: document.body.innerText, cut: out };
})()`;

describe('every page in every language, in Chromium at phone width', { skip: chromiumUnavailable() }, () => {
  let server: TestServer, client: TestClient, user: TestUser, browser: Browser;

  before(async () => {
    ({ server, client, user } = await startWithApp({ client: { name: 'Photo Printer' }, user: { username: 'ada' } }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  // One page reused for every language: each page is set in place with the real stylesheet
  // inlined (its scripts left out), which is what keeps 8 x 21 pages fast.
  let page: Page;
  before(async () => {
    page = await (await browser.newContext({ viewport: PHONE })).newPage();
  });

  for (const locale of LOCALES) {
    it(`${locale}: shows each page with its lang and dir, no message key, no English left, and nothing cut off`, async () => {
      const problems: string[] = [];
      const leftovers = englishOnly(locale);
      for (const [name, body] of Object.entries(everyPage(server.config.site, locale))) {
        await page.setContent(body.replace(/<link rel="stylesheet"[^>]*>/, `<style>${STYLESHEET}</style>`).replace(/<script\b[^>]*><\/script>/g, ''));
        const where = `${locale} ${name}`;
        const seen = (await page.evaluate(INSPECT)) as { lang: string; dir: string; text: string; cut: string[] };
        assert.equal(seen.lang, locale, where);
        assert.equal(seen.dir, locale === 'ar' ? 'rtl' : 'ltr', where);
        const key = KEY.exec(seen.text);
        if (key) problems.push(`${where}: shows the key ${key[1]}`);
        for (const english of leftovers) if (seen.text.includes(english)) problems.push(`${where}: English left: ${english}`);
        for (const cut of seen.cut) problems.push(`${where}: ${cut}`);
        // axe-core: every rule on each page in the first language, and in every other the rules
        // a translation can break (a label left empty, an accessible name that no longer matches
        // the visible one): the structure is the same in each, the words are not.
        problems.push(...(await (locale === LOCALES[0] ? axeViolations(page, where) : textViolations(page, where))));
      }
      assert.deepEqual(problems, []);
    });
  }

  async function signedIn(options: Parameters<Browser['newContext']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext(options);
    const page = await context.newPage();
    await page.goto(`${server.url}/login?return_to=%2Faccount`);
    await page.locator('#username').fill(user.username);
    await page.locator('#password').fill(user.password);
    await page.locator('button.primary').click();
    await page.waitForURL(/\/account$/);
    return { context, page };
  }

  /** The app's authorization request, with `extra`. */
  const appRequest = (extra: Record<string, string>): string =>
    authorizeUrl(server.url, { client_id: client.clientId, redirect_uri: REDIRECT_URI, scope: 'openid profile', ...extra }).href;

  it('follows the app’s ui_locales over Accept-Language, through sign-in to the approval page, skipping a tag it does not know', async () => {
    const page = await cleanPage(browser, { locale: 'de-DE' });
    await page.goto(`${server.url}/login`);
    assert.equal(await page.getAttribute('html', 'lang'), 'de', 'Accept-Language alone: German');
    await page.goto(appRequest({ ui_locales: 'tlh xx-!! ja-JP en' }));
    assert.equal(await page.getAttribute('html', 'lang'), 'ja');
    await page.getByLabel('ユーザー名').fill(user.username);
    await page.getByLabel('パスワード').fill(user.password);
    await page.getByRole('button', { name: 'ログイン', exact: true }).click();
    await page.getByRole('button', { name: '許可' }).waitFor();
    assert.equal(await page.getAttribute('html', 'lang'), 'ja', 'the approval page after sign-in');
    assert.match(
      await page.locator('main').innerText(),
      /あなたの名前、ニックネーム、ユーザー名、プロフィール画像、ウェブページ、性別、生年月日、言語、タイムゾーンを見る/,
      'the profile scope in Japanese',
    );
  });

  it('shows the signed-in person’s pages in their account’s language (the locale claim) over Accept-Language, and the menu’s choice over that', async () => {
    const ana = await server.addUser({ username: 'ana', profile: { locale: 'pt-BR' } });
    const page = await cleanPage(browser, { locale: 'de-DE' });
    await page.goto(`${server.url}/login?return_to=%2Faccount`);
    assert.equal(await page.getAttribute('html', 'lang'), 'de', 'before signing in: the browser’s language');
    await page.locator('#username').fill(ana.username);
    await page.locator('#password').fill(ana.password);
    await page.locator('button.primary').click();
    await page.getByRole('heading', { name: 'Apps e dispositivos conectados' }).waitFor();
    assert.equal(await page.getAttribute('html', 'lang'), 'pt-BR');
    await page.getByRole('link', { name: 'English' }).click();
    await page.getByRole('heading', { name: 'Connected apps and devices' }).waitFor();
  });

  it('remembers the language chosen in the menu on every page, over the browser’s and the app’s, right to left for Arabic', async () => {
    const { context, page } = await signedIn({ locale: 'fr-FR', viewport: PHONE });
    assert.equal(await page.getAttribute('html', 'lang'), 'fr');
    await page.goto(appRequest({ ui_locales: 'es' }));
    assert.equal(await page.getAttribute('html', 'lang'), 'es');
    await page.getByRole('navigation', { name: 'Idioma' }).getByRole('link', { name: 'العربية' }).click();
    await page.getByRole('button', { name: 'سماح' }).waitFor();
    assert.equal(await page.getAttribute('html', 'dir'), 'rtl');
    // RTL throughout: the list's indent is on the right.
    assert.equal(await page.evaluate("getComputedStyle(document.querySelector('ul.scopes')).paddingRight"), '20px');
    await page.goto(`${server.url}/account`);
    assert.equal(await page.getAttribute('html', 'lang'), 'ar', 'the choice is kept on the next page');
    assert.equal(await page.getByRole('link', { name: 'العربية' }).getAttribute('aria-current'), 'true');
    // An unknown choice changes nothing.
    await page.goto(`${server.url}/locale?lang=xx&return_to=%2Faccount`);
    assert.equal(await page.getAttribute('html', 'lang'), 'ar');
    await context.close();
  });
});

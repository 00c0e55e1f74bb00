/**
 * The operator's name on the pages (TESSERA_SITE_NAME, with a logo and an accent colour),
 * as a person sees them in Chromium: the sign-in, approval and device pages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import { LOCALES } from '../src/config/locales.ts';
import { FormBrowser } from './helpers/browser.ts';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { closeAll, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizeUrl, startWithApp } from './helpers/fixtures.ts';

const SITE = { TESSERA_SITE_NAME: 'Acme Accounts', TESSERA_SITE_LOGO_URL: 'https://static.acme.example/logo.svg', TESSERA_SITE_ACCENT_COLOR: '#7A1F5C' };

describe('the site name on every page, in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer, client: TestClient, user: TestUser, browser: Browser;

  before(async () => {
    ({ server, client, user } = await startWithApp({ server: { env: SITE }, client: { name: 'Photo Printer' }, user: { username: 'ada' } }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  async function assertBranded(page: Page, title: RegExp): Promise<void> {
    assert.match(await page.title(), title);
    assert.match(await page.title(), / · Acme Accounts$/);
    assert.ok(await page.locator('header.brand').getByText('Acme Accounts', { exact: true }).isVisible(), 'the name above the page');
    assert.equal(await page.locator('header.brand img').getAttribute('src'), SITE.TESSERA_SITE_LOGO_URL);
    assert.doesNotMatch(await page.content(), /Tessera/, 'no mention of the software’s own name');
  }

  it('names the operator on the sign-in, approval and device pages, with its accent on the main button', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // The logo is on a host this offline machine cannot reach: answer it here.
    await context.route('https://static.acme.example/**', (route) =>
      route.fulfill({ contentType: 'image/svg+xml', body: '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"/>' }),
    );
    const authorize = authorizeUrl(server.url, { client_id: client.clientId, redirect_uri: REDIRECT_URI });
    await page.goto(authorize.href);
    await assertBranded(page, /^Sign in/);
    assert.ok(await page.getByText('with your Acme Accounts account').isVisible());
    const signIn = page.getByRole('button', { name: 'Sign in' });
    // Evaluated in the page (this project's TypeScript has no DOM types).
    const style = (await page.evaluate(
      "(({ backgroundColor, color }) => ({ backgroundColor, color }))(getComputedStyle(document.querySelector('button.primary')))",
    )) as { backgroundColor: string; color: string };
    assert.deepEqual(style, { backgroundColor: 'rgb(122, 31, 92)', color: 'rgb(255, 255, 255)' });
    assert.equal(await page.evaluate("document.querySelector('header.brand img').naturalWidth"), 32, 'the CSP lets the logo load');

    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await signIn.click();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await assertBranded(page, /^Allow Photo Printer\?/);

    await page.goto(`${server.url}/device`);
    await assertBranded(page, /^Connect a device/);
    assert.ok(await page.getByText('to connect it to your Acme Accounts account').isVisible());
    await context.close();
  });
});

describe('the site name on passkeys', () => {
  it('is the relying party name an authenticator shows beside a new passkey (WebAuthn §5.4.1 rp.name)', async (t) => {
    const server = await startTestServer({ issuerHost: 'localhost', env: { TESSERA_SITE_NAME: SITE.TESSERA_SITE_NAME } });
    t.after(() => server.close());
    const user = await server.addUser({ username: 'grace' });
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request('/account'));
    const page = await browser.follow(await browser.submit(login, '/login', { username: user.username, password: user.password }));
    const csrf = browser.form(page, '/account/passkeys').fields['csrf_token']!;
    const answer = await browser.request('/account/passkeys/options', { form: { csrf_token: csrf } });
    assert.equal(answer.status, 200, answer.html);
    const creation = JSON.parse(answer.html) as { rp: { id: string; name: string } };
    assert.deepEqual(creation.rp, { id: 'localhost', name: 'Acme Accounts' });
  });
});

describe('the accent colour setting', () => {
  it('refuses a colour white text cannot be read on (WCAG 2.2 4.5:1), naming the contrast', () => {
    assert.throws(
      () => loadConfig({ TESSERA_SITE_ACCENT_COLOR: '#ffcc00' }),
      (error: unknown) => error instanceof ConfigError && /TESSERA_SITE_ACCENT_COLOR: #ffcc00 has a contrast of 1\.\d\d:1/.test(error.message),
    );
    assert.throws(() => loadConfig({ TESSERA_SITE_ACCENT_COLOR: 'purple' }), /#rrggbb/);
    assert.equal(loadConfig({ TESSERA_SITE_ACCENT_COLOR: '#0B5CAD' }).site.accentColor, '#0b5cad');
    assert.throws(() => loadConfig({ TESSERA_SITE_LOGO_URL: 'http://acme.example/logo.png' }), /TESSERA_SITE_LOGO_URL: must be an https URL/);
    assert.deepEqual(loadConfig({}).site, { name: 'Tessera', logoUrl: null, accentColor: null, locales: LOCALES, defaultLocale: 'en' });
  });
});

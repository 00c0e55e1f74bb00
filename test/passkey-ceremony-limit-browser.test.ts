/**
 * The sign-in page's script, in Chromium, when its address has started too many passkey
 * ceremonies this minute (TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS): the person is told to wait
 * a minute, not that their browser cannot use a passkey. The limit itself, on all three
 * routes, is test/passkey-ceremony-limit.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { FormBrowser } from './helpers/browser.ts';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

describe('the sign-in page over the passkey ceremony limit', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let browser: Browser;

  before(async () => {
    server = await startTestServer({ issuerHost: 'localhost', env: { TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS: '1' } });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  it('says to wait a minute when the options are refused with 429', async (t) => {
    // The one ceremony this minute allows 127.0.0.1, spent by another client there.
    const other = new FormBrowser(server.url);
    const login = await other.follow(await other.request('/account'));
    const spent = await other.request('/login/passkey/options', { form: { csrf_token: other.form(login, '/login/passkey').fields['csrf_token']! } });
    assert.equal(spent.status, 200);

    const context = await browser.newContext();
    t.after(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(`${server.url}/account`);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'Too many passkey requests from your network. Wait a minute and try again.' });
    await alert.waitFor();
    assert.ok(await alert.isVisible());
  });
});

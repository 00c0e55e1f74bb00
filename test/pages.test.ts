/**
 * Pages for people, in Chromium, where axe-core checks every page state they
 * reach (test/helpers/accessibility.ts): a browser that opens an unknown path gets an HTML
 * 404 page while an API client still gets JSON; an error page says in plain words what to do,
 * with the protocol error in small print and a link back; the reset-password page's username
 * field for password managers is hidden; the account page is compact and names browsers as
 * people do.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { chromiumUnavailable, launchChromium, signInWithPassword } from './helpers/chromium.ts';
import { closeAll, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

describe('pages for people, in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let user: TestUser;

  before(async () => {
    server = await startTestServer();
    user = await server.addUser({ username: 'nora', name: 'Nora Ephron' });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  it('answers a browser at an unknown path with an HTML 404 page and a way back, and an API client with JSON', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${server.url}/no/such/page?x=1`);
    assert.equal(response?.status(), 404);
    assert.match(response?.headers()['content-type'] ?? '', /^text\/html/);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Page not found');
    assert.match(await page.getByRole('alert').innerText(), /^There is no page at \/no\/such\/page on Tessera\./);
    await page.getByRole('link', { name: 'Go to the Tessera start page' }).click();
    await page.waitForURL(`${server.url}/`);
    await page.close();

    for (const accept of ['application/json', '*/*', undefined]) {
      const api = await fetch(`${server.url}/no/such/endpoint`, { headers: accept ? { accept } : {} });
      assert.equal(api.status, 404);
      assert.deepEqual(await api.json(), { error: 'invalid_request', error_description: 'no endpoint at GET /no/such/endpoint' });
    }
  });

  it('explains an error in plain words, with the protocol error in small print and a link back', async () => {
    const page = await browser.newPage();
    const response = await page.goto(`${server.url}/oauth/authorize?response_type=code&client_id=nobody&redirect_uri=https%3A%2F%2Fapp.example%2Fcb`);
    assert.equal(response?.status(), 400);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'This request cannot be completed');
    const message = await page.getByRole('alert').innerText();
    assert.match(message, /^The app or link that brought you here asked for something this server cannot do\. Go back to the app and try again/);
    assert.doesNotMatch(message, /invalid_request|client_id/);
    assert.match(await page.getByText("For the app's developer:").innerText(), /invalid_request: /);
    assert.equal(await page.getByRole('link', { name: 'Go to the Tessera start page' }).getAttribute('href'), '/');
    await page.close();
  });

  it("hides the reset page's username field (for password managers) and labels every field it shows", async () => {
    const token = randomToken();
    const now = Date.now();
    await server.store.passwordResets.create({
      tokenHash: hashSecret(token),
      userId: user.id,
      createdAt: now,
      expiresAt: now + 600_000,
      usedAt: null,
      mailedTo: null,
    });
    const page = await browser.newPage();
    await page.goto(`${server.url}/reset-password?token=${token}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Set a new password');
    assert.equal(await page.locator('input[name=username]').isVisible(), false, 'the username field is hidden');
    // The one field offered is the labelled new password (axe-core checks the rest of the page).
    assert.equal(await page.getByRole('textbox').count(), 1);
    assert.equal(await page.getByRole('textbox', { name: 'New password' }).count(), 1);
    await page.getByLabel('New password').fill('a new password for nora');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('heading', { name: 'Password changed' }).waitFor();
    await page.goto(`${server.url}/reset-password?token=${randomUUID()}`);
    await page.getByRole('heading', { name: 'This link cannot be used' }).waitFor();
    await page.close();
    user = { ...user, password: 'a new password for nora' };
  });

  it('keeps the account page compact on a desktop: browsers named as people name them, recent activity folded away', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const now = Date.now();
    // A month of sign-ins from elsewhere: the page shows the recent ones, folded.
    for (let i = 0; i < 20; i += 1) {
      await server.store.events.add({
        id: randomUUID(),
        type: 'signin.succeeded',
        at: now - (i + 1) * 3_600_000,
        userId: user.id,
        username: user.username,
        clientId: null,
        grantId: null,
        ip: `203.0.113.${i + 1}`,
        userAgent: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0',
        detail: {},
      });
    }
    await page.goto(`${server.url}/account`);
    await signInWithPassword(page, user);
    const browsers = page.getByRole('list', { name: 'Signed-in browsers' }).getByRole('listitem');
    await browsers.first().waitFor();
    assert.match(await browsers.first().innerText(), /^Chrome on Linux, from 127\.0\.0\.1, signed in .* \(this browser\)$/);

    const activity = page.getByRole('region', { name: 'Recent sign-ins and approvals' });
    const entry = activity.getByRole('listitem').filter({ hasText: '203.0.113.1,' });
    assert.equal(await entry.isVisible(), false, 'folded until asked for');
    const height = await page.evaluate('document.documentElement.scrollHeight');
    assert.ok(Number(height) <= 1800, `the page is ${String(height)} px tall`);
    await activity.getByText(/^Show the last \d+$/).click();
    assert.match(await entry.innerText(), /^Signed in, .* UTC, from 203\.0\.113\.1, Firefox on Windows$/);
    await context.close();
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { catchRedirect, chromiumUnavailable, cleanPage, launchChromium, phonePageCatchingRedirect } from './helpers/chromium.ts';
import { closeAll, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, startWithApp, redeemAttempt } from './helpers/fixtures.ts';
import { within } from './helpers/wait.ts';

describe('signing in and approving in a real browser', { skip: chromiumUnavailable() }, () => {
  let server: TestServer, client: TestClient, user: TestUser, config: oidc.Configuration, browser: Browser;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({ client: { name: 'Garden Planner' }, user: { username: 'grace', name: 'Grace Hopper' } }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  async function signIn(page: Page, password = user.password): Promise<void> {
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  async function start(scope = 'openid profile email', extra: Record<string, string> = {}) {
    const { url, verifier, state, nonce } = await authorizationAttempt(config, { scope, ...extra });
    return { url, verifier, state, nonce };
  }

  it('signs in, shows the application and scopes, approves, and the client gets a valid ID token', async () => {
    const { page, callback } = await phonePageCatchingRedirect(browser);
    const attempt = await start();
    await page.goto(attempt.url.href);
    await signIn(page);

    await page.getByRole('heading', { level: 1 }).waitFor();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Garden Planner/);
    // The approval's own list, not the language menu at the foot of the page.
    const scopes = await page.locator('.card').getByRole('listitem').allInnerTexts();
    assert.deepEqual(scopes, [
      'Sign you in and know who you are',
      'See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone',
      'See your email address',
    ]);
    // Usable on a phone: the page fits the viewport without sideways scrolling.
    const { scrollWidth, innerWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })')) as {
      scrollWidth: number;
      innerWidth: number;
    };
    assert.ok(scrollWidth <= innerWidth, `page is ${scrollWidth}px wide in a ${innerWidth}px viewport`);
    await page.getByRole('button', { name: 'Approve' }).click();

    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the client'));
    assert.equal(tokens.claims()?.sub, user.id);
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.id))['name'], 'Grace Hopper');
  });

  it('sends access_denied to the client when the user presses Deny', async () => {
    const { page, callback } = await phonePageCatchingRedirect(browser);
    // The first test's approval is remembered: prompt=consent asks again.
    const attempt = await start('openid', { prompt: 'consent' });
    await page.goto(attempt.url.href);
    await signIn(page);
    await page.getByRole('button', { name: 'Deny' }).click();
    const url = await within(callback, 'the redirect back to the client');
    assert.equal(url.searchParams.get('error'), 'access_denied');
    assert.equal(url.searchParams.get('state'), attempt.state);
  });

  it('tells the user when the password is wrong, and lets them try again', async () => {
    const { page, callback } = await phonePageCatchingRedirect(browser);
    const attempt = await start('openid', { prompt: 'consent' });
    await page.goto(attempt.url.href);
    await signIn(page, 'not the password');
    assert.equal(await page.getByRole('alert').innerText(), 'The username or password is incorrect.');
    assert.equal(await page.getByText('to continue to').innerText(), 'to continue to Garden Planner', 'the page shown again still names the app');
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    assert.ok((await within(callback, 'the redirect back to the client')).searchParams.get('code'));
  });

  it('goes straight back to the app the second time, and signs out through the app after asking', async () => {
    const { page, callback } = await phonePageCatchingRedirect(browser);
    const attempt = await start('openid profile email');
    await page.goto(attempt.url.href);
    await signIn(page);
    // Approved in the first test: no approval page this time.
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the client'));
    assert.equal(tokens.claims()?.sub, user.id);

    // prompt=login, a wrong password first: the sign-in page shown again still leads on to
    // the app (its form-action allows the app's redirect URI).
    const second = await start('openid', { prompt: 'login' });
    await page.goto(second.url.href);
    await signIn(page, 'not the password');
    assert.equal(await page.getByRole('alert').innerText(), 'The username or password is incorrect.');
    assert.equal(await page.getByText('to continue to').innerText(), 'to continue to Garden Planner', 'the page shown again still names the app');
    const back = catchRedirect(page);
    await signIn(page);
    const returned = await within(back, 'the redirect back to the client');
    assert.equal(returned.searchParams.get('state'), second.state);
    assert.ok(returned.searchParams.get('code'));

    // Without id_token_hint: the person is asked first.
    await page.goto(`${server.url}/oauth/logout?client_id=${encodeURIComponent(client.clientId)}`);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Sign out of Tessera?');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'You are signed out' }).waitFor();
    await page.goto(`${server.url}/account`);
    await page.getByLabel('Password').waitFor();
  });

  it('ends a second browser\'s session with "Sign out everywhere" on /account', async () => {
    // Two browsers at once: a clean page (cleanPage) and a context of its own.
    const other = await browser.newContext();
    const [laptop, phone] = await Promise.all([cleanPage(browser), other.newPage()]);
    for (const page of [laptop!, phone!]) {
      await page.goto(`${server.url}/account`);
      await signIn(page);
      await page.getByRole('heading', { name: 'Signed-in browsers' }).waitFor();
    }
    const browsers = laptop!.getByRole('list', { name: 'Signed-in browsers' }).getByRole('listitem');
    assert.ok((await browsers.count()) >= 2);
    assert.equal(await browsers.filter({ hasText: '(this browser)' }).count(), 1);
    await laptop!.getByRole('button', { name: 'Sign out everywhere' }).click();
    await laptop!.getByLabel('Password').waitFor();
    await phone!.reload();
    await phone!.getByLabel('Password').waitFor();
    assert.equal(await phone!.getByRole('heading', { name: 'Signed-in browsers' }).count(), 0, 'the other browser is signed out');
    await other.close();
  });
});

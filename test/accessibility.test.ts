/**
 * axe-core over every page state a person meets, served by a running server and
 * driven in Chromium as a person would: each state is named and checked where it stands, and
 * the test fails on a violation or on a state it did not reach. test/languages-browser.test.ts
 * checks the same pages as rendered in each of the eight languages.
 *
 * On the way, the second-factor path: a person whose password is not enough to
 * approve follows the page's link to set up one-time codes, without signing in again, and is
 * led straight back to the approval they started, which then completes at the app.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { totpAt } from '../src/flows/second-factor/totp.ts';
import { resetLink } from '../src/flows/manage/users.ts';
import { MAX_PASSWORD_LENGTH } from '../src/flows/users.ts';
import { axeViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, launchChromium, phonePageCatchingRedirect } from './helpers/chromium.ts';
import { startDevice } from './helpers/device.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeAll, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt, startWithApp } from './helpers/fixtures.ts';
import { within } from './helpers/wait.ts';

/** Every state the test must reach and check. */
const STATES = [
  'not found',
  'error',
  'sign-in',
  'wrong password',
  'second factor required',
  'account',
  'authenticator setup',
  'authenticator setup, wrong code',
  'recovery codes',
  'consent',
  'device code',
  'device code, unknown',
  'device approval',
  'device approved',
  'logout confirm',
  'signed out',
  'one-time code',
  'one-time code, wrong',
  'reset password',
  'reset password, refused',
  'password reset',
  'reset link used',
] as const;
type State = (typeof STATES)[number];

describe('axe-core on every page state, served and driven in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer, client: TestClient, tv: TestClient, user: TestUser, browser: Browser;
  const checked = new Map<State, string[]>();

  before(async () => {
    // A password alone cannot approve: the second-factor states are on the path.
    ({ server, client, user } = await startWithApp({
      server: { env: { TESSERA_REQUIRE_SECOND_FACTOR: 'on' } },
      client: { name: 'Garden Planner' },
      user: { username: 'grace', name: 'Grace Hopper' },
    }));
    tv = await server.addClient({ name: 'Living Room TV', grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  /** Checks the page as it stands, as `state`; its violations fail the last test. */
  async function check(page: Page, state: State): Promise<void> {
    await page.waitForLoadState('load');
    checked.set(state, await axeViolations(page, `${state} (${page.url()})`));
  }

  async function signIn(page: Page, password: string): Promise<void> {
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForLoadState('load');
  }

  it('checks the error and 404 pages', async () => {
    const { page } = await phonePageCatchingRedirect(browser);
    await page.goto(`${server.url}/acount/settings`, { waitUntil: 'load' });
    await page.getByRole('heading', { level: 1 }).waitFor();
    await check(page, 'not found');
    await page.goto(
      `${server.url}/oauth/authorize?response_type=code&client_id=${client.clientId}&redirect_uri=${encodeURIComponent('https://elsewhere.example/cb')}&scope=openid`,
    );
    await page.getByRole('heading', { level: 1 }).waitFor();
    await check(page, 'error');
  });

  let session: Page;

  it('goes from "second factor required" to setting one up and straight back to the approval, which completes at the app', async () => {
    const { page, callback } = await phonePageCatchingRedirect(browser);
    session = page;
    const config = await oidc.discovery(new URL(server.url), client.clientId, undefined, oidc.ClientSecretBasic(client.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const attempt = await authorizationAttempt(config, { scope: 'openid profile' });
    const url = attempt.url;
    await page.goto(url.href);
    await check(page, 'sign-in');
    await signIn(page, 'not the password');
    await page.getByRole('alert').waitFor();
    await check(page, 'wrong password');
    await signIn(page, user.password);
    await page.getByText('Approving needs a second factor').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
    await check(page, 'second factor required');

    // The link opens the account page in the same session: no second sign-in.
    await page.getByRole('link', { name: 'Set up a passkey or one-time codes on your account page' }).click();
    await page.waitForURL(/\/account\?return_to=/);
    await check(page, 'account');
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
    await check(page, 'authenticator setup');
    const wrong = String((Number(totpAt(secret, Date.now())) + 1) % 1_000_000).padStart(6, '0');
    await page.getByLabel('Code from the app').fill(wrong);
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('alert').waitFor();
    await check(page, 'authenticator setup, wrong code');
    await page.getByLabel('Code from the app').fill(totpAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('list', { name: /recovery codes/i }).waitFor();
    await check(page, 'recovery codes');

    // Continue: the approval the person started, now with a second factor.
    await page.getByRole('link', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Garden Planner/);
    await check(page, 'consent');
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
    assert.equal(tokens.claims()?.sub, user.id);
    assert.deepEqual(tokens.claims()?.['amr'], ['pwd', 'otp', 'mfa']);
  });

  it('checks the device pages', async () => {
    const page = session;
    const device = await startDevice(server, tv);
    await page.goto(`${server.url}/device`);
    await check(page, 'device code');
    await page.getByLabel('Code').fill('BCDF-GHJK');
    await page.getByLabel('Code').press('Enter');
    await page.getByRole('alert').waitFor();
    await check(page, 'device code, unknown');
    await page.getByLabel('Code').fill(device.user_code);
    await page.getByLabel('Code').press('Enter');
    await page.getByRole('button', { name: 'Approve' }).waitFor();
    await check(page, 'device approval');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('heading', { name: 'Device approved' }).waitFor();
    await check(page, 'device approved');
  });

  it('checks the logout pages', async () => {
    const page = session;
    await page.goto(`${server.url}/oauth/logout?client_id=${client.clientId}`);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await check(page, 'logout confirm');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/oauth\/logout/);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await check(page, 'signed out');
  });

  it('checks the one-time code asked after the password', async () => {
    const page = session;
    await page.goto(`${server.url}/login?return_to=%2Faccount`);
    await signIn(page, user.password);
    await page.getByLabel('Code').waitFor();
    await check(page, 'one-time code');
    await page.getByLabel('Code').fill('000000');
    await page.getByLabel('Code').press('Enter');
    await page.getByRole('alert').waitFor();
    await check(page, 'one-time code, wrong');
  });

  it('checks the reset-password pages', async () => {
    const { page } = await phonePageCatchingRedirect(browser);
    const { url } = await resetLink(manageDeps(server), user.username);
    const path = new URL(url);
    await page.goto(`${server.url}${path.pathname}${path.search}${path.hash}`);
    await check(page, 'reset password');
    // The username field is for password managers only: hidden, so not a field a person sees.
    assert.equal(await page.locator('input[name=username]').isVisible(), false);
    // Longer than any password may be (the browser itself stops one that is too short).
    await page.getByLabel('New password').fill('x'.repeat(MAX_PASSWORD_LENGTH + 1));
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('alert').waitFor();
    await check(page, 'reset password, refused');
    await page.getByLabel('New password').fill('a much longer new password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('heading', { name: 'Password changed' }).waitFor();
    await check(page, 'password reset');
    await page.goto(`${server.url}${path.pathname}${path.search}${path.hash}`);
    await page.getByRole('heading', { name: 'This link cannot be used' }).waitFor();
    await check(page, 'reset link used');
  });

  it('reached every state, and axe-core found no violation in any', () => {
    assert.deepEqual(
      STATES.filter((state) => !checked.has(state)),
      [],
      'states not reached',
    );
    assert.deepEqual([...checked.values()].flat(), []);
  });
});

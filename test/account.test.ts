import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { ManualClock } from '../src/core/clock.ts';

import { GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { FormBrowser } from './helpers/browser.ts';
import { chromiumUnavailable, launchChromium, PHONE, signInWithPassword } from './helpers/chromium.ts';
import { deviceSignIn, discover, OFFLINE_SCOPES, refreshRaw, signIn, signInRaw, withRefresh } from './helpers/lifecycle.ts';
import { closeAll, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

/** A form browser signed in as `user`, on the account page. */
async function accountBrowser(server: TestServer, user: TestUser) {
  const browser = new FormBrowser(server.url);
  const login = await browser.follow(await browser.request('/account'));
  const page = await browser.follow(await browser.submit(login, '/login', { username: user.username, password: user.password }));
  return { browser, page };
}

describe('the account page', () => {
  let server: TestServer, tv: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    // The device's address comes through X-Forwarded-For, as behind a reverse proxy.
    ({ server, user, config } = await startWithApp({
      server: { env: { TESSERA_TRUST_PROXY: 'true' } },
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada', name: 'Ada Lovelace' },
    }));
    tv = await server.addClient({ name: 'Living Room TV', grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN] });
  });
  after(() => server.close());

  it('sends a visitor without a session to sign in, and back to the account page after', async () => {
    const browser = new FormBrowser(server.url);
    const first = await browser.request('/account');
    assert.equal(first.status, 303);
    assert.equal(first.location, '/login?return_to=%2Faccount');
    const login = await browser.follow(first);
    const after = await browser.submit(login, '/login', { username: user.username, password: user.password });
    assert.equal(after.location, '/account');
    const page = await browser.follow(after);
    assert.equal(page.status, 200);
    assert.match(page.html, /<h1>Connected apps and devices<\/h1>/);
    assert.equal(page.headers.get('cache-control'), 'no-store');
  });

  it('lists each application and device with its scopes, approval and last use, and a device as a device sign-in', async () => {
    const bob = await server.addUser({ username: 'bob', name: 'Bob' });
    await signIn(server, config, bob, 'openid profile offline_access');
    await deviceSignIn(server, tv, bob, { ip: '198.51.100.23', userAgent: 'LivingRoomTV/2.1' });
    const { page } = await accountBrowser(server, bob);
    const items = [...page.html.matchAll(/<li>\s*<section[\s\S]*?<\/section>\s*<\/li>/g)].map((match) => match[0]);
    assert.equal(items.length, 2);
    const [device, browserApp] = items as [string, string];
    assert.match(device, /<h2 id="[^"]+">Living Room TV<\/h2>/);
    assert.match(device, /Device sign-in/);
    assert.match(device, /LivingRoomTV\/2\.1, from 198\.51\.100\.23/);
    assert.match(browserApp, /<h2 id="[^"]+">Photo Printer<\/h2>/);
    assert.doesNotMatch(browserApp, /Device sign-in/);
    assert.match(browserApp, /Stay connected while you are away/);
    assert.match(browserApp, /<dt>Approved<\/dt><dd><time datetime="\d{4}-/);
    assert.match(browserApp, /<dt>Last used<\/dt><dd><time datetime="\d{4}-/);
    for (const item of items) assert.match(item, /<button type="submit">Revoke<\/button>/);
  });

  it("does not show another user's approvals", async () => {
    const carol = await server.addUser({ username: 'carol' });
    await signIn(server, config, user, 'openid offline_access');
    const { page } = await accountBrowser(server, carol);
    assert.match(page.html, /No applications or devices are connected to your account/);
  });

  it('revokes a grant from its Revoke button: its refresh token fails at once with invalid_grant', async () => {
    const dave = await server.addUser({ username: 'dave' });
    const tokens = await deviceSignIn(server, tv, dave);
    const { browser, page } = await accountBrowser(server, dave);
    const revoked = await browser.follow(await browser.submit(page, '/account/revoke', {}));
    assert.match(revoked.html, /Access revoked/);
    assert.match(revoked.html, /No applications or devices are connected/);
    const result = await refreshRaw(server, tv, tokens.refresh_token!);
    assert.deepEqual([result.status, result.body['error']], [400, 'invalid_grant']);
  });

  it("refuses to revoke another user's grant, answering as for one that does not exist", async () => {
    const erin = await server.addUser({ username: 'erin' });
    const mallory = await server.addUser({ username: 'mallory' });
    const tokens = await deviceSignIn(server, tv, erin);
    const grantId = decodeJwt(tokens.access_token)['gid'] as string;
    const { browser, page } = await accountBrowser(server, mallory);
    const form = browser.form(page, /^\/login$|^\/logout$/);
    for (const id of [grantId, 'no-such-grant']) {
      const result = await browser.request('/account/revoke', { form: { csrf_token: form.fields['csrf_token']!, grant_id: id } });
      assert.equal(result.status, 404, id);
      assert.match(result.html, /There is no such connection on your account/);
    }
    assert.equal((await refreshRaw(server, tv, tokens.refresh_token!)).status, 200, "erin's device still refreshes");
  });

  it('refuses a revocation without the CSRF token, or from another site, and revokes nothing', async () => {
    const frank = await server.addUser({ username: 'frank' });
    const tokens = await deviceSignIn(server, tv, frank);
    const grantId = decodeJwt(tokens.access_token)['gid'] as string;
    const { browser, page } = await accountBrowser(server, frank);
    const form = browser.form(page, '/account/revoke');
    const noToken = await browser.request('/account/revoke', { form: { grant_id: grantId } });
    assert.equal(noToken.status, 403);
    const crossSite = await browser.request('/account/revoke', { form: form.fields, headers: { origin: 'https://evil.example' } });
    assert.equal(crossSite.status, 403);
    assert.equal((await refreshRaw(server, tv, tokens.refresh_token!)).status, 200, "frank's device still refreshes");
  });

  it('sends a revocation without a session to sign in, revoking nothing', async () => {
    const grace = await server.addUser({ username: 'grace' });
    const tokens = await deviceSignIn(server, tv, grace);
    const { browser, page } = await accountBrowser(server, grace);
    const form = browser.form(page, '/account/revoke');
    await browser.submit(page, '/logout', {});
    const result = await browser.request('/account/revoke', { form: form.fields });
    assert.equal(result.status, 303);
    assert.equal(result.location, '/login?return_to=%2Faccount');
    assert.equal((await refreshRaw(server, tv, tokens.refresh_token!)).status, 200);
  });
});

describe('the account page as time passes', () => {
  it('stops listing a device approval once every token issued under it has expired', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const server = await startTestServer({ clock });
    try {
      const tv = await server.addClient({ name: 'Short Visit', grantTypes: [GRANT_DEVICE_CODE] });
      const user = await server.addUser({ username: 'ada' });
      await deviceSignIn(server, tv, user);
      assert.match(connectionsOf((await accountBrowser(server, user)).page.html), /Short Visit/);
      clock.advance(3600_000);
      assert.doesNotMatch(connectionsOf((await accountBrowser(server, user)).page.html), /Short Visit/, 'its only access token has expired');
    } finally {
      await server.close();
    }
  });

  it('keeps listing a remembered app approval after its tokens expired, so that the consent can be revoked', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const server = await startTestServer({ clock });
    try {
      const app = await server.addClient({ name: 'Short Visit', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
      const user = await server.addUser({ username: 'ada' });
      await signInRaw(server, app, user, 'openid');
      clock.advance(3600_000);
      assert.match(connectionsOf((await accountBrowser(server, user)).page.html), /Short Visit/);
    } finally {
      await server.close();
    }
  });
});

/** The list of connected apps and devices on the account page: the part before the signed-in browsers (the recent activity below names apps too). */
function connectionsOf(html: string): string {
  const end = html.indexOf('<h2 id="sessions-heading">');
  assert.ok(end > 0, 'the account page lists the signed-in browsers after the connections');
  return html.slice(0, end);
}

describe('the account page in a real browser', { skip: chromiumUnavailable() }, () => {
  let server: TestServer, app: TestClient, tv: TestClient, user: TestUser, browser: Browser;

  before(async () => {
    // The device's address comes through X-Forwarded-For, as behind a reverse proxy.
    ({
      server,
      client: app,
      user,
    } = await startWithApp({
      server: { env: { TESSERA_TRUST_PROXY: 'true' } },
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'grace', name: 'Grace Hopper' },
    }));
    tv = await server.addClient({ name: 'Living Room TV', grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN] });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  it('shows the device and the application, revokes the device, and its refresh token then fails', async () => {
    const appTokens = await signIn(server, await discover(server, app), user, 'openid profile offline_access');
    const deviceTokens = await deviceSignIn(server, tv, user, { ip: '203.0.113.7', userAgent: 'LivingRoomTV/2.1' });

    const context = await browser.newContext(PHONE);
    const page = await context.newPage();
    await page.goto(`${server.url}/account`);
    await signInWithPassword(page, user);

    await page.getByRole('heading', { level: 1, name: 'Connected apps and devices' }).waitFor();
    const device = page.getByRole('region', { name: 'Living Room TV' });
    const application = page.getByRole('region', { name: 'Photo Printer' });
    assert.match(await device.innerText(), /Device sign-in/);
    assert.match(await device.innerText(), /LivingRoomTV\/2\.1, from 203\.0\.113\.7/);
    assert.doesNotMatch(await application.innerText(), /Device sign-in/);
    const { scrollWidth, innerWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })')) as {
      scrollWidth: number;
      innerWidth: number;
    };
    assert.ok(scrollWidth <= innerWidth, `page is ${scrollWidth}px wide in a ${innerWidth}px viewport`);

    await device.getByRole('button', { name: 'Revoke' }).click();
    assert.match(await page.getByRole('status').innerText(), /Access revoked/);
    assert.equal(await page.getByRole('region', { name: 'Living Room TV' }).count(), 0);
    assert.equal(await page.getByRole('region', { name: 'Photo Printer' }).count(), 1);

    const refreshed = await refreshRaw(server, tv, deviceTokens.refresh_token!);
    assert.deepEqual([refreshed.status, refreshed.body['error']], [400, 'invalid_grant']);
    assert.equal((await refreshRaw(server, app, appTokens.refresh_token!)).status, 200, 'the application is still connected');
    await context.close();
  });
});

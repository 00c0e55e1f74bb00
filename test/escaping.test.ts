/**
 * What clients and devices write about themselves (a client's name, a device's User-Agent)
 * is shown to people as text on every page, never read as markup.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { assertApprovalPage, assertSignInPage, FormBrowser, type Page } from './helpers/browser.ts';
import { BrowserAt, poll, startDevice, text } from './helpers/device.ts';
import { REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizeUrl, startWithApp } from './helpers/fixtures.ts';

const MARKUP = `<img src=x onerror="alert(1)">Evil & Co's "app"`;

/** Shown as the text it is, and nowhere as markup. */
function assertShownAsText(page: Page, value: string): void {
  assert.equal(page.status, 200, page.html);
  assert.ok(text(page).includes(value), `the page shows ${value}:\n${text(page)}`);
  assert.doesNotMatch(page.html, /<img\b/i, 'no markup from the client or device');
}

describe('names and user agents on the pages are text, not markup', () => {
  let server: TestServer, evil: TestClient, user: TestUser;

  before(async () => {
    ({
      server,
      client: evil,
      user,
    } = await startWithApp({
      client: { name: MARKUP, grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN] },
      user: { username: 'ada' },
    }));
  });
  after(() => server.close());

  it("shows a client's name as text on the sign-in page and the approval page of the code flow", async () => {
    const url = authorizeUrl(server.url, { client_id: evil.clientId, redirect_uri: REDIRECT_URI });
    const browser = new FormBrowser(server.url);
    const signInPage = await browser.request(url.href);
    assertSignInPage(signInPage);
    assertShownAsText(signInPage, MARKUP);
    const approval = await browser.signIn(signInPage, user);
    assertApprovalPage(approval, '/oauth/authorize/decision');
    assertShownAsText(approval, `Allow ${MARKUP} to access your account?`);
    assertShownAsText(approval, `${MARKUP} will be able to:`);
  });

  it("shows an API's name, identifier and scope descriptions as text on the approval page", async () => {
    const identifier = 'https://api.example.com/?q=<b>"x"</b>';
    await server.store.transaction((tx) =>
      tx.resources.create({
        identifier,
        name: MARKUP,
        scopes: [{ name: 'evil:read', description: `${MARKUP} reads` }],
        accessTokenTtl: null,
        introspectionSecretHash: null,
        signingAlg: 'RS256',
        createdAt: 0,
      }),
    );
    const client = await server.addClient({ name: 'Plain App', scopes: ['openid', 'evil:read'] });
    const url = authorizeUrl(server.url, { client_id: client.clientId, redirect_uri: REDIRECT_URI, scope: 'openid evil:read', resource: identifier });
    const browser = new FormBrowser(server.url);
    const approval = await browser.signIn(await browser.request(url.href), user);
    assertApprovalPage(approval, '/oauth/authorize/decision');
    assertShownAsText(approval, MARKUP);
    assertShownAsText(approval, `${MARKUP} reads`);
    assertShownAsText(approval, identifier);
    assert.doesNotMatch(approval.html, /<b>/);
  });

  it("shows a client's name and a device's User-Agent as text on the device approval page, the page after it and the account page", async () => {
    const userAgent = `<script>alert(1)</script><img src=x onerror=alert(2)> SmartTV/1.0 "living room"`;
    const started = await startDevice(server, evil, 'openid', { 'user-agent': userAgent });
    const browser = new BrowserAt(server.url);
    const approval = await browser.reachApproval(started.user_code, user);
    assertShownAsText(approval, MARKUP);
    assertShownAsText(approval, userAgent);
    assert.doesNotMatch(approval.html, /<script>/);
    const done = await browser.submit(approval, '/device/approve', { decision: 'approve' });
    assertShownAsText(done, MARKUP);
    assert.equal((await poll(server, evil, started.device_code)).status, 200);

    const account = await browser.request('/account');
    assertShownAsText(account, MARKUP);
    assertShownAsText(account, userAgent);
    assert.doesNotMatch(account.html, /<script>/);
  });
});

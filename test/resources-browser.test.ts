/**
 * The consent and device approval pages name each API and what its scopes allow, as a
 * person sees them in Chromium; the tokens that follow are for that API (openid-client).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { catchRedirect, chromiumUnavailable, launchChromium, signInWithPassword } from './helpers/chromium.ts';
import { addPhotoLibrary, PHOTO_LIBRARY as PHOTOS, pkceRequest } from './helpers/fixtures.ts';
import { discover } from './helpers/lifecycle.ts';
import { closeAll, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { within } from './helpers/wait.ts';
import { QUICK_POLLS } from './helpers/device.ts';

describe('APIs on the consent and device approval pages, in Chromium', { skip: chromiumUnavailable(), concurrency: true }, () => {
  let server: TestServer;
  let client: TestClient;
  let user: TestUser;
  let config: oidc.Configuration;
  let browser: Browser;

  before(async () => {
    server = await startTestServer({ env: QUICK_POLLS });
    await addPhotoLibrary(server);
    client = await server.addClient({ name: 'Living Room TV', scopes: ['openid', 'profile', 'photos:read', 'photos:write'] });
    user = await server.addUser({ username: 'hedy', name: 'Hedy Lamarr' });
    config = await discover(server, client);
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    return context.newPage();
  }

  async function signIn(page: Page) {
    await signInWithPassword(page, user);
    await page.getByRole('button', { name: 'Approve' }).waitFor();
  }

  /** The API's section: a region named by the API, listing what its scopes allow. */
  async function assertApiShown(page: Page) {
    const api = page.getByRole('region', { name: 'Photo Library' });
    assert.deepEqual(await api.getByRole('listitem').allInnerTexts(), ['See your photos']);
    assert.ok(await api.getByText(PHOTOS).isVisible(), "the API's identifier");
    assert.ok(await page.getByText('Sign you in and know who you are').isVisible(), 'the OpenID scope beside it');
    assert.equal(await page.getByText('Upload and delete your photos').count(), 0, 'a scope not asked for is not shown');
  }

  it('shows "See your photos" under the API on the consent page, and the code flow gets a token for it', async () => {
    const { url, verifier } = await pkceRequest(config, { scope: 'openid photos:read', resource: PHOTOS, state: 'st' });
    const page = await newPage();
    const callback = catchRedirect(page);
    await page.goto(url.href);
    await signIn(page);
    await assertApiShown(page);
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await oidc.authorizationCodeGrant(
      config,
      await within(callback, 'the redirect back to the client'),
      { pkceCodeVerifier: verifier, expectedState: 'st' },
      { resource: PHOTOS },
    );
    assert.equal(decodeJwt(tokens.access_token).aud, PHOTOS);
    assert.equal(tokens.scope, 'openid photos:read');

    // The account page names the API the approval covers.
    await page.goto(`${server.url}/account`);
    const connection = page.getByRole('region', { name: 'Living Room TV' }).first();
    assert.match(await connection.locator('dl').innerText(), /Photo Library\s+See your photos/);
  });

  it('shows "See your photos" under the API on the device approval page, and the device gets a token for it', async () => {
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid photos:read', resource: PHOTOS });
    const controller = new AbortController();
    const polling = oidc.pollDeviceAuthorizationGrant(config, device, { resource: PHOTOS }, { signal: controller.signal });
    polling.catch(() => {});
    try {
      const page = await newPage();
      await page.goto(device.verification_uri_complete!);
      await page.getByRole('button', { name: 'Continue' }).click();
      await signIn(page);
      await assertApiShown(page);
      await page.getByRole('button', { name: 'Approve' }).click();
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Device approved');
      const tokens = await polling;
      const claims = decodeJwt(tokens.access_token);
      assert.equal(claims.aud, PHOTOS);
      assert.equal(claims['scope'], 'openid photos:read');
    } finally {
      controller.abort();
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { chromiumUnavailable, launchChromium, PHONE, signInWithPassword } from './helpers/chromium.ts';
import { pollWhileTestRuns, QUICK_POLLS } from './helpers/device.ts';
import { closeAll, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

/**
 * The whole device flow as people and devices do it: openid-client is the device, headless
 * Chromium on a phone-sized screen is the person. openid-client waits the real `interval`
 * before its first poll (a second here, QUICK_POLLS); the browser part runs meanwhile.
 */
// The two cases use their own device codes and browser contexts, so they wait their
// polling intervals side by side.
describe('the device flow end to end: openid-client polls, a person approves in Chromium', { skip: chromiumUnavailable(), concurrency: true }, () => {
  let server: TestServer, client: TestClient, user: TestUser, config: oidc.Configuration, browser: Browser;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({
      server: { env: QUICK_POLLS },
      client: { name: 'Living Room TV' },
      user: { username: 'katherine', name: 'Katherine Johnson' },
    }));
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  async function phone(): Promise<Page> {
    const context = await browser.newContext(PHONE);
    return context.newPage();
  }

  async function signInAndApprove(page: Page, userCode: string) {
    await signInWithPassword(page, user);

    await page.getByRole('button', { name: 'Approve' }).waitFor();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Living Room TV/);
    // The approval's own list, not the language menu at the foot of the page.
    assert.deepEqual(await page.locator('.card').getByRole('listitem').allInnerTexts(), [
      'Sign you in and know who you are',
      'See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone',
    ]);
    assert.equal(await page.locator('#user-code').innerText(), userCode, 'the code to compare with the device');
    assert.match(await page.locator('dl.origin').innerText(), /less than a minute ago/);
    assert.ok(await page.getByText('Approve only if you started this yourself').isVisible());
    assert.ok(await page.getByText('Did you not start this? Choose Deny, then report it to your administrator').isVisible());
    // draft-ietf-oauth-cross-device-security: Deny is as prominent as Approve.
    const look = (name: string) =>
      page.getByRole('button', { name }).evaluate(`(button) => {
        const style = getComputedStyle(button);
        const box = button.getBoundingClientRect();
        return [style.backgroundColor, style.color, style.borderColor, style.borderWidth, style.fontSize, style.fontWeight, Math.round(box.width), Math.round(box.height)];
      }`);
    assert.deepEqual(await look('Deny'), await look('Approve'));
    const { scrollWidth, innerWidth } = (await page.evaluate('({ scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth })')) as {
      scrollWidth: number;
      innerWidth: number;
    };
    assert.ok(scrollWidth <= innerWidth, `page is ${scrollWidth}px wide in a ${innerWidth}px viewport`);
    await page.getByRole('button', { name: 'Approve' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Device approved');
  }

  function assertTokens(tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers) {
    assert.equal(tokens.scope, 'openid profile');
    const claims = tokens.claims();
    assert.ok(claims, 'an ID token');
    assert.equal(claims.iss, server.url);
    assert.equal(claims.aud, client.clientId);
    assert.equal(claims.sub, user.id);
    assert.equal(claims['name'], undefined, "OIDC Core §5.4: the name is the UserInfo endpoint's");
    assert.equal(claims.nonce, undefined);
  }

  it('typed code: the person opens verification_uri, types the code, signs in and approves; the device gets tokens', async (t) => {
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    assert.equal(device.verification_uri, `${server.url}/device`);
    const polling = pollWhileTestRuns(t, config, device);

    const page = await phone();
    await page.goto(device.verification_uri);
    // Typed as a person might: lower case, no dash.
    await page.getByLabel('Code').fill(device.user_code.toLowerCase().replace('-', ''));
    await page.getByRole('button', { name: 'Continue' }).click();
    await signInAndApprove(page, device.user_code);

    assertTokens(await polling);
    await page.context().close();
  });

  it('verification_uri_complete: the code is filled in, the person confirms it, signs in and approves; the device gets tokens', async (t) => {
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    const polling = pollWhileTestRuns(t, config, device);

    const page = await phone();
    await page.goto(device.verification_uri_complete!);
    assert.equal(await page.getByLabel('Code').inputValue(), device.user_code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await signInAndApprove(page, device.user_code);

    assertTokens(await polling);
    await page.context().close();
  });
});

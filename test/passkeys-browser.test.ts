/**
 * Passkeys in a real browser: headless Chromium with the DevTools protocol's virtual
 * authenticator (WebAuthn.enable, WebAuthn.addVirtualAuthenticator: a platform
 * authenticator, CTAP2, resident keys, user verification). A person adds a passkey on
 * /account, signs out, signs in with it without typing a username, and approves a device;
 * openid-client is the device and reads how they signed in from the ID token's amr.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { pollWhileTestRuns } from './helpers/device.ts';
import { startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

describe('passkeys in Chromium with a virtual authenticator', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let tv: TestClient;
  let user: TestUser;
  let browser: Browser;

  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    server = await startTestServer({ issuerHost: 'localhost' });
    tv = await server.addClient({ name: 'Living Room TV', requirePhishingResistant: true });
    user = await server.addUser({ username: 'katherine', name: 'Katherine Johnson' });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  /** A browser profile with a platform authenticator that keeps passkeys and verifies its user. */
  async function withAuthenticator(): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable', { enableUI: false });
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        protocol: 'ctap2',
        transport: 'internal',
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    return { context, page, cdp, authenticatorId };
  }

  it('adds a passkey on /account, signs out, signs in with it without a username, and approves a device that requires one', async (t) => {
    const { context, page, cdp, authenticatorId } = await withAuthenticator();
    t.after(() => context.close());
    const scriptErrors: string[] = [];
    page.on('pageerror', (error) => scriptErrors.push(error.message));
    page.on('console', (message) => {
      // The browser asks for /favicon.ico by itself; Tessera has none.
      if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) scriptErrors.push(message.text());
    });

    await page.goto(`${server.url}/account`);
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Passkeys' }).waitFor();

    await page.getByLabel('Passkey name').fill('This laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added. You can now sign in with it.').waitFor();
    assert.ok(await page.getByRole('heading', { name: 'This laptop' }).isVisible());
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
    assert.equal(credentials.length, 1);
    assert.equal(credentials[0]!.isResidentCredential, true, 'a discoverable credential');
    assert.equal(credentials[0]!.rpId, 'localhost');

    // The virtual authenticator answers the sign-in page's conditional (autofill) request at
    // once, as if the person picked the passkey from the username field's suggestions; the
    // button is tested with it holding back until the person "touches" it.
    await cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId, enabled: false });
    await page.getByRole('button', { name: 'Not you? Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    const config = await oidc.discovery(new URL(server.url), tv.clientId, undefined, oidc.ClientSecretBasic(tv.clientSecret), { execute: [oidc.allowInsecureRequests] });
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    const polling = pollWhileTestRuns(t, config, device);

    await page.goto(device.verification_uri_complete!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.getByLabel('Username').inputValue(), '', 'no username typed');
    await cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId, enabled: true });
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();

    await page.getByRole('button', { name: 'Approve' }).waitFor();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Living Room TV/);
    await page.getByRole('button', { name: 'Approve' }).click();
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Device approved');

    const tokens = await polling;
    const claims = tokens.claims()!;
    assert.equal(claims.sub, user.id);
    assert.deepEqual(claims.amr, ['hwk', 'mfa'], 'a device-bound passkey, verified by the person');
    const [passkey] = await server.store.passkeys.listForUser(user.id);
    assert.notEqual(passkey!.lastUsedAt, null, 'the sign-in was recorded');
    assert.deepEqual(scriptErrors, [], 'no script errors, and nothing blocked by the CSP');
  });

  it('offers the passkey in the username autofill (conditional mediation): picking it signs in with nothing typed', async (t) => {
    const { context, page } = await withAuthenticator();
    t.after(() => context.close());
    const person = await server.addUser({ username: 'dorothy' });
    await page.goto(`${server.url}/account`);
    await page.getByLabel('Username').fill(person.username);
    await page.getByLabel('Password').fill(person.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added. You can now sign in with it.').waitFor();

    await page.getByRole('button', { name: 'Not you? Sign out' }).click();
    // The sign-in page's conditional request is answered by the virtual authenticator as a
    // person picking the passkey from the autofill: no button, no username.
    await page.waitForURL(`${server.url}/account`);
    await page.getByRole('heading', { name: 'Passkeys' }).waitFor();
    assert.ok(await page.getByText('Signed in as').isVisible());
    const [passkey] = await server.store.passkeys.listForUser(person.id);
    assert.equal(passkey!.name, 'Passkey', 'an unnamed passkey gets a name');
    assert.notEqual(passkey!.lastUsedAt, null);
  });
});

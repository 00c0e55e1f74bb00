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
import { catchRedirect, chromiumUnavailable, launchChromium, withVirtualAuthenticator, signInWithPassword } from './helpers/chromium.ts';
import { pollWhileTestRuns, QUICK_POLLS } from './helpers/device.ts';
import { appConfig, pkceRequest } from './helpers/fixtures.ts';
import { closeAll, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { WAIT_MS, within } from './helpers/wait.ts';

describe('passkeys in Chromium with a virtual authenticator', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  /** TESSERA_REQUIRE_SECOND_FACTOR=on. */
  let strict: TestServer;
  let tv: TestClient;
  let app: TestClient;
  let user: TestUser;
  let browser: Browser;

  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    server = await startTestServer({ issuerHost: 'localhost', env: QUICK_POLLS });
    strict = await startTestServer({ issuerHost: 'localhost', env: { ...QUICK_POLLS, TESSERA_REQUIRE_SECOND_FACTOR: 'on' } });
    tv = await server.addClient({ name: 'Living Room TV', requirePhishingResistant: true });
    app = await server.addClient({ name: 'Photo Printer' });
    user = await server.addUser({ username: 'katherine', name: 'Katherine Johnson' });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server, strict));

  /** A browser profile with a platform authenticator that keeps passkeys and verifies its user. */
  async function withAuthenticator(): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
    return withVirtualAuthenticator(browser);
  }

  /**
   * From now on the authenticator only tests that someone touched it, as a security key with
   * no PIN does: no UV flag in its answers (WebAuthn Level 3 §6.1). Chromium's virtual
   * authenticator refuses a request for discoverable credentials when it cannot verify at
   * all, so this one fails verification (isUserVerified false) and is never asked for it:
   * the browser's sign-in requests say userVerification "discouraged" instead of the
   * server's "preferred", and it answers with presence alone. The browser offers no passkeys
   * in autofill either, so only the button signs in: a sign-in page that a refusal shows
   * does not sign in again by itself, to be refused again, and so on.
   */
  async function stopVerifyingUser(page: Page, cdp: CDPSession, authenticatorId: string): Promise<void> {
    await cdp.send('WebAuthn.setUserVerified', { authenticatorId, isUserVerified: false });
    await page.route(
      (url) => url.pathname === '/login/passkey/options',
      async (route) => {
        const response = await route.fetch();
        const options = (await response.json()) as { userVerification?: string };
        await route.fulfill({ response, json: { ...options, userVerification: 'discouraged' } });
      },
    );
    await page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);');
  }

  /** Signs in on /account with a password and adds a passkey; returns on the account page. */
  async function addPasskey(page: Page, origin: string, person: TestUser, name: string): Promise<void> {
    await page.goto(`${origin}/account`);
    await signInWithPassword(page, person);
    await page.getByLabel('Passkey name').fill(name);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added. You can now sign in with it.').waitFor();
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
    await signInWithPassword(page, user);
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

    const config = await appConfig(server, tv);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid profile' });
    const polling = pollWhileTestRuns(t, config, device);

    // The sign-in page starts its conditional request only once its options have arrived. One
    // started after presence is simulated again is answered at once, signing in through the
    // autofill while the button is clicked (the button gone from under the click, once in
    // .ci/run): each page's requests are counted, and presence comes back once it waits.
    await page.addInitScript(
      'const get = navigator.credentials.get.bind(navigator.credentials); navigator.credentials.get = (options) => { window.credentialRequests = (window.credentialRequests ?? 0) + 1; return get(options); };',
    );
    await page.goto(device.verification_uri_complete!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(await page.getByLabel('Username').inputValue(), '', 'no username typed');
    // A function, not a string: the page's CSP refuses eval, which a string predicate polls with.
    await page.waitForFunction(() => ((globalThis as { credentialRequests?: number }).credentialRequests ?? 0) >= 1, undefined, { timeout: WAIT_MS });
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

  it('from "second factor required", adds a passkey on the way and comes back to the approval, which the passkey then passes', async (t) => {
    const { context, page } = await withAuthenticator();
    t.after(() => context.close());
    const person = await strict.addUser({ username: 'annie' });
    const garden = await strict.addClient({ name: 'Garden Planner' });
    const callback = catchRedirect(page);
    const config = await appConfig(strict, garden);
    const state = oidc.randomState();
    const { url, verifier } = await pkceRequest(config, { state });
    await page.goto(url.href);
    await signInWithPassword(page, person);
    await page.getByText('Approving needs a second factor').waitFor();

    await page.getByRole('link', { name: 'Set up a passkey or one-time codes on your account page' }).click();
    await page.getByLabel('Passkey name').fill('This phone');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    // Back at the request: the sign-in page, where the new passkey signs in (the autofill's
    // request is answered at once by the authenticator, or the button), then the approval.
    await page.waitForURL((where) => where.pathname === '/oauth/authorize');
    const approve = page.getByRole('button', { name: 'Approve' });
    const signInButton = page.getByRole('button', { name: 'Sign in with a passkey' });
    await approve.or(signInButton).first().waitFor();
    // The autofill may sign in at any moment, taking the button away: press it only until the
    // approval comes (a click that finds no button fails here only if the approval never comes).
    if (!(await approve.isVisible())) await Promise.race([approve.waitFor(), signInButton.click().catch(() => undefined)]);
    await approve.click();
    const tokens = await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the app'), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      idTokenExpected: true,
    });
    assert.equal(tokens.claims()!.sub, person.id);
    assert.deepEqual(tokens.claims()!.amr, ['hwk', 'mfa']);
  });

  it('from "second factor required", does not let the password alone set up a code for an account that has a passkey: it asks for the passkey', async (t) => {
    // The owner's passkey, added in their own browser (the first factor after the password).
    const owner = await withAuthenticator();
    t.after(() => owner.context.close());
    const person = await strict.addUser({ username: 'mae' });
    await addPasskey(owner.page, strict.url, person, 'Her phone');

    // Someone with only the password, in another browser, at the step that asks for a second factor.
    const thief = await browser.newContext();
    t.after(() => thief.close());
    const page = await thief.newPage();
    const garden = await strict.addClient({ name: 'Garden Planner' });
    const config = await appConfig(strict, garden);
    const { url } = await pkceRequest(config);
    await page.goto(url.href);
    await signInWithPassword(page, person);
    await page.getByText('Approving needs a second factor').waitFor();
    await page.getByRole('link', { name: 'Set up a passkey or one-time codes on your account page' }).click();
    // The account page says how, and offers no set-up that would be refused.
    await page.getByText('To add or remove one, sign in again with your passkey, or with your password and a one-time code.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Set up an authenticator app' }).count(), 0, 'no set-up offered');
    assert.equal(await page.getByRole('button', { name: 'Add a passkey' }).count(), 0, 'no passkey offered');
    assert.equal(await page.getByRole('img', { name: 'QR code for your authenticator app' }).count(), 0, 'no secret handed out');
    assert.equal(await strict.store.totp.get(person.id), null);
    await page.goto(url.href);
    await page.getByText('Approving needs a second factor').waitFor();
  });

  it('offers the passkey in the username autofill (conditional mediation): picking it signs in with nothing typed', async (t) => {
    const { context, page } = await withAuthenticator();
    t.after(() => context.close());
    const person = await server.addUser({ username: 'dorothy' });
    await page.goto(`${server.url}/account`);
    await signInWithPassword(page, person);
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

  it('counts a passkey that only tested presence (no UV flag) as one factor: amr hwk user, the lowest acr, and refused where a passkey or a second factor is required', async (t) => {
    const { context, page, cdp, authenticatorId } = await withAuthenticator();
    t.after(() => context.close());
    const person = await server.addUser({ username: 'mary' });
    const callback = catchRedirect(page);
    await addPasskey(page, server.url, person, 'Security key');
    await stopVerifyingUser(page, cdp, authenticatorId);
    await page.getByRole('button', { name: 'Not you? Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();

    // An ordinary client asking for the lowest class: approved, and told it was one factor.
    const config = await appConfig(server, app);
    const start = async (acr: string) => {
      const { url, verifier } = await pkceRequest(config, { acr_values: acr });
      return { url, verifier };
    };
    const lowest = await start('urn:tessera:acr:pwd');
    await page.goto(lowest.url.href);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    const claims = (
      await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the client'), {
        pkceCodeVerifier: lowest.verifier,
        idTokenExpected: true,
      })
    ).claims()!;
    assert.equal(claims.sub, person.id);
    assert.deepEqual(claims.amr, ['hwk', 'user'], 'a device-bound key that tested presence only: no mfa');
    assert.equal(claims.acr, 'urn:tessera:acr:pwd', 'one factor: the lowest class, not phrh');

    // The same session where more is asked: sent back to sign in, told why, never an Approve button.
    await page.goto((await start('phr')).url.href);
    await page.getByText(/Photo Printer can be approved only after signing in with a passkey that asks for your PIN, fingerprint or face/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, 'acr_values=phr');
    await page.goto((await start('urn:tessera:acr:mfa')).url.href);
    await page.getByText(/Approving needs a second factor/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, 'acr_values=urn:tessera:acr:mfa');

    // A device client registered with --require-phishing-resistant: not approved, even when forced.
    const tvConfig = await appConfig(server, tv);
    const device = await oidc.initiateDeviceAuthorization(tvConfig, { scope: 'openid' });
    await page.goto(device.verification_uri_complete!);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText(/Living Room TV can be approved only after signing in with a passkey that asks/).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, '--require-phishing-resistant');
    const forced = await page.request.post(`${server.url}/device/approve`, {
      form: { csrf_token: await page.locator('form[action="/login"] input[name="csrf_token"]').inputValue(), user_code: device.user_code, decision: 'approve' },
    });
    assert.equal(forced.status(), 403, 'approving anyway is refused');
    assert.equal((await server.store.devices.findByUserCode(device.user_code.replace('-', ''), Date.now()))?.status, 'pending');

    // TESSERA_REQUIRE_SECOND_FACTOR=on: the key alone is not a second factor.
    const other = await withAuthenticator();
    t.after(() => other.context.close());
    const strictPerson = await strict.addUser({ username: 'mary' });
    const strictApp = await strict.addClient({ name: 'Photo Printer' });
    await addPasskey(other.page, strict.url, strictPerson, 'Security key');
    await stopVerifyingUser(other.page, other.cdp, other.authenticatorId);
    await other.page.getByRole('button', { name: 'Not you? Sign out' }).click();
    await other.page.getByRole('heading', { name: 'Sign in' }).waitFor();
    const strictConfig = await appConfig(strict, strictApp);
    await other.page.goto(
      oidc.buildAuthorizationUrl(strictConfig, {
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
        code_challenge_method: 'S256',
      }).href,
    );
    await other.page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await other.page.getByText(/Approving needs a second factor/).waitFor();
    assert.equal(await other.page.getByRole('button', { name: 'Approve' }).count(), 0, 'TESSERA_REQUIRE_SECOND_FACTOR=on');
    const signIns = await strict.store.events.list({ userId: strictPerson.id, type: 'signin.succeeded', limit: 10 });
    assert.deepEqual(signIns.map((event) => event.detail['amr']).sort(), ['hwk user', 'pwd'], 'the key did sign in, and is refused only for approving');
  });
});

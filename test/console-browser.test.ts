/**
 * The operator console in Chromium. An admin signs in with a passkey (the DevTools
 * virtual authenticator) after being refused with a password alone, registers an app, a
 * person signs in to it in another browser context (openid-client is the app), the admin
 * finds that person and disables them (their access token stops working at once), and both
 * changes are on the events page naming the admin. A stale edit is refused with the other
 * change shown; a change after 15 minutes asks for the sign-in again; a support user is
 * refused at the app registration page, a person without a role at the door. axe-core checks
 * every console page at a desktop's and a phone's width (helpers/accessibility.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { createClient, updateClient } from '../src/flows/manage/clients.ts';
import { addResource, updateResource } from '../src/flows/manage/resources.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { addWebhook } from '../src/flows/manage/webhooks.ts';
import { addTrustedIssuer } from '../src/flows/manage/trusted-issuers.ts';
import { loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { createServer } from 'node:http';
import { closeAll, closeServer, listenOnFreePort } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import { upstreamRedirectUri } from '../src/flows/upstream/settings.ts';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { catchRedirect, chromiumUnavailable, cleanPage, launchChromium, PHONE, withVirtualAuthenticator, signInWithPassword } from './helpers/chromium.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';
import { within } from './helpers/wait.ts';
import { authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';

describe('the operator console in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let browser: Browser;
  let admin: TestUser;
  /** Added to the real time: moved on to make a sign-in old. */
  let offset = 0;
  const clock = { now: () => Date.now() + offset };

  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    // Webhook deliveries retried quickly and given up after a second: the webhooks' case lists a dead letter.
    server = await startTestServer({ issuerHost: 'localhost', clock, env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100', TESSERA_WEBHOOK_RETRY_WINDOW: '1' } });
    admin = await server.addUser({ username: 'grace', name: 'Grace Hopper' });
    await server.store.users.setRole(admin.id, 'admin');
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server));

  /** Each page's virtual authenticator, to copy the admin's passkey into (signInAdmin). */
  const authenticators = new WeakMap<Page, { cdp: CDPSession; authenticatorId: string }>();
  /** The admin's passkey as the first test's authenticator holds it (a synced passkey, in effect). */
  let adminPasskey: { credentialId: string; isResidentCredential: boolean; rpId?: string; privateKey: string; userHandle?: string; signCount: number } | null =
    null;
  let copies = 0;
  /** The admin's session (its cookies) after their first sign-in with the passkey: see signedInAdmin. */
  let adminSession: Awaited<ReturnType<BrowserContext['cookies']>> | null = null;

  /** A browser profile with a platform authenticator that keeps passkeys and verifies its user. */
  async function withAuthenticator(options: Parameters<Browser['newContext']>[0] = {}): Promise<{ context: BrowserContext; page: Page }> {
    const { context, page, cdp, authenticatorId } = await withVirtualAuthenticator(browser, options);
    authenticators.set(page, { cdp, authenticatorId });
    // Only the button signs in with the passkey, not the autofill the moment a sign-in page
    // loads (the virtual authenticator would answer it at once): a page that asks is seen first.
    await page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);');
    return { context, page };
  }

  async function signInWithPasskey(page: Page): Promise<void> {
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
  }

  const dashboard = (page: Page) => page.getByRole('heading', { name: 'Dashboard', level: 1 }).waitFor();

  it('signs an admin in with a passkey, registers an app, finds the person who signed in to it, disables them, and shows both in the events', async (t) => {
    const { context, page } = await withAuthenticator();
    t.after(() => context.close());
    const scriptErrors: string[] = [];
    page.on('pageerror', (error) => scriptErrors.push(error.message));

    // A password alone does not open the console: the second factor is asked for.
    await page.goto(`${server.url}/console`);
    await signInWithPassword(page, admin);
    await page.getByText('The console needs a sign-in with a passkey, or with your password and a one-time code.').waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Dashboard' }).count(), 0);

    // The page leads to the account page, where the admin adds a passkey, and back here.
    await page.getByRole('link', { name: 'Set up a passkey or one-time codes on your account page' }).click();
    await page.getByLabel('Passkey name').fill('Work laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.waitForURL(`${server.url}/console`);
    await page.getByText('The console needs a sign-in with a passkey').waitFor();
    await signInWithPasskey(page);
    await dashboard(page);
    assert.match(await page.getByText('Signed in as').innerText(), /Grace Hopper \(administrator\)/);
    const { cdp, authenticatorId } = authenticators.get(page)!;
    adminPasskey = (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials[0] ?? null;
    adminSession = await context.cookies();

    // Register an app with the choices of `client add`; its secret is shown once.
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Apps', exact: true }).click();
    await page.getByRole('link', { name: 'Register an app' }).click();
    await page.getByLabel('Name').fill('Garden <Planner>');
    await page.getByLabel('Redirect URIs, one a line').fill(REDIRECT_URI);
    await page.getByLabel('Scopes, separated by spaces').fill('openid profile');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Garden <Planner> is registered.' }).waitFor();
    const clientId = await page.locator('dt:text-is("Client ID") + dd').innerText();
    const clientSecret = await page.locator('dt:text-is("Client secret") + dd').innerText();
    assert.match(clientSecret, /^[\w-]{43}$/);
    assert.equal((await server.store.clients.get(clientId))?.name, 'Garden <Planner>', 'registered as typed, shown escaped');

    // Someone signs in to it in another browser context.
    const person = await server.addUser({ username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' });
    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.ClientSecretBasic(clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const attempt = await authorizationAttempt(config, { scope: 'openid profile' });
    const visitor = await cleanPage(browser);
    const callback = catchRedirect(visitor);
    await visitor.goto(attempt.url.href);
    await signInWithPassword(visitor, person);
    await visitor.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, person.id))['name'], 'Ada Lovelace');

    // The admin finds them by their e-mail address and sees the app on their page.
    const sections = page.getByRole('navigation', { name: 'Console sections' });
    await sections.getByRole('link', { name: 'Users' }).click();
    await page.getByLabel('Search by username, name or e-mail').fill('ADA@example');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: 'ada', exact: true }).click();
    await page.getByRole('heading', { name: 'ada', level: 1 }).waitFor();
    assert.ok(await page.getByRole('region', { name: 'Apps and devices' }).getByRole('link', { name: 'Garden <Planner>' }).isVisible());
    assert.ok(await page.getByRole('region', { name: 'Browser sessions' }).getByRole('listitem').first().isVisible(), 'their session is listed');

    // Disabling asks first, then ends their tokens at once.
    await page.getByRole('link', { name: 'Disable' }).click();
    await page.getByText('Disable ada? Their sessions end and every token of theirs stops working at once.').waitFor();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('ada is disabled: their sessions have ended and their tokens no longer work.').waitFor();
    await assert.rejects(oidc.fetchUserInfo(config, tokens.access_token, person.id), 'the access token is refused at once');
    await visitor.goto(`${server.url}/account`);
    await visitor.getByLabel('Password').waitFor();

    // The dashboard counts from the audit trail: the admin's two sign-ins and the person's.
    await sections.getByRole('link', { name: 'Dashboard' }).click();
    const figure = (name: string) =>
      page
        .locator('dl.figures > div')
        .filter({ has: page.locator('dt', { hasText: new RegExp(`^${name}$`) }) })
        .locator('dd');
    assert.deepEqual(await figure('Sign-ins').allInnerTexts(), ['3 Last hour', '3 Last 24 hours']);
    assert.deepEqual(await figure('Failed sign-ins').allInnerTexts(), ['0 Last hour', '0 Last 24 hours']);

    // Both changes are in the events, naming the admin, linking to the user and the app.
    await sections.getByRole('link', { name: 'Events' }).click();
    const events = page.getByRole('main').getByRole('listitem');
    const disabled = events.filter({ hasText: 'user.disabled' });
    assert.match(await disabled.innerText(), /by grace/);
    assert.equal(await disabled.getByRole('link', { name: 'ada' }).getAttribute('href'), '/console/users/ada');
    const created = events.filter({ hasText: 'client.created' });
    assert.match(await created.innerText(), /by grace/);
    assert.equal(await created.getByRole('link', { name: 'Garden <Planner>' }).getAttribute('href'), `/console/apps/${clientId}`);

    // Filtered by the user: only their events.
    await page.getByLabel('Username').fill('ada');
    await page.getByRole('button', { name: 'Show' }).click();
    await events.first().waitFor();
    assert.equal(await events.filter({ hasText: 'client.created' }).count(), 0);
    assert.ok((await events.filter({ hasText: 'signin.succeeded' }).count()) >= 1);
    assert.deepEqual(scriptErrors, []);
  });

  it('refuses a stale edit of an app with the other change shown, rotates its secret once, and removes it after a confirmation page', async (t) => {
    const app = await server.addClient({ name: 'Photo Printer' });
    const page = await signedInAdmin(t, `/console/apps/${app.clientId}`);
    await page.getByLabel('Name').fill('Photo Printer 2');
    // Someone else changes it meanwhile.
    await updateClient(manageDeps(server), app.clientId, { first_party: true }, 1);
    await page.getByRole('button', { name: 'Save' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('Not saved: someone else changed this app after you opened it.').waitFor();
    // The field by its label, its protocol name in small print.
    assert.match(await alert.innerText(), /First-party \(no approval page\) first_party: No → Yes/);
    assert.equal((await server.store.clients.get(app.clientId))?.name, 'Photo Printer', 'nothing of the stale edit was saved');
    assert.equal(await page.getByLabel('Name').inputValue(), 'Photo Printer 2', "the operator's change is kept");
    assert.equal(await page.getByLabel('First-party: no approval page').isChecked(), true, 'over the other change');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = await server.store.clients.get(app.clientId);
    assert.deepEqual([saved?.name, saved?.firstParty], ['Photo Printer 2', true]);

    await page.getByRole('link', { name: 'Rotate secret' }).click();
    await page.getByLabel('Grace period for the old secret').selectOption({ label: 'One hour' });
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const secret = await page.locator('dt:text-is("Client secret") + dd').innerText();
    assert.notEqual(secret, app.clientSecret);
    const rotated = await server.store.clients.get(app.clientId);
    assert.ok(rotated!.previousSecretExpiresAt! > clock.now() + 3500_000 && rotated!.previousSecretExpiresAt! <= clock.now() + 3600_000);
    await page.reload();
    assert.equal(await page.getByText(secret).count(), 0, 'shown once: the page is not a copy of it');

    await page.goto(`${server.url}/console/apps/${app.clientId}`);
    await page.getByRole('link', { name: 'Remove' }).click();
    await page.getByText('Remove Photo Printer 2? Everything issued to it ends').waitFor();
    await page.getByRole('button', { name: 'Remove' }).click();
    await page.getByText('The app was removed, and everything issued to it.').waitFor();
    assert.equal(await server.store.clients.get(app.clientId), null);
  });

  it('asks for the sign-in again for a change after 15 minutes, and comes back to it', async (t) => {
    // A sign-in of its own, with the passkey in its browser's authenticator to sign in again with.
    const { context, page } = await withAuthenticator();
    t.after(() => context.close());
    await signInAdmin(page);
    const person = await server.addUser({ username: 'katherine' });
    offset += 16 * 60_000;
    t.after(() => {
      offset -= 16 * 60_000;
    });
    await page.goto(`${server.url}/console/users/katherine`);
    await page.getByRole('heading', { name: 'katherine', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'End sessions' }).click();
    await page.getByText('Changes need a recent sign-in: it has been more than 15 minutes. Sign in again to continue.').waitFor();
    await signInWithPasskey(page);
    await page.getByText('Sign katherine out everywhere?').waitFor();
    await page.getByRole('button', { name: 'End sessions' }).click();
    await page.getByText('0 sessions ended.').waitFor();
    const [ended] = await server.store.events.list({ userId: person.id, type: 'logout', limit: 1 });
    assert.equal(ended?.detail['operator'], 'grace');

    // A form posted with an old sign-in: asked again, then back on the page the form was on.
    offset += 16 * 60_000;
    t.after(() => {
      offset -= 16 * 60_000;
    });
    await page.getByRole('button', { name: 'Make a reset link' }).click();
    await page.getByText('Changes need a recent sign-in').waitFor();
    assert.equal(
      await server.store.events.list({ userId: person.id, type: 'user.reset_link_created', limit: 1 }).then((found) => found.length),
      0,
      'nothing was done',
    );
    await signInWithPasskey(page);
    await page.getByRole('heading', { name: 'katherine', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Make a reset link' }).click();
    await page.getByText('Give this link to katherine only.').waitFor();
  });

  it('refuses a support user at the app registration page with a 403 that says so, and a person without a role at the door', async () => {
    const support = await server.addUser({ username: 'sam', name: 'Sam Support' });
    await server.store.users.setRole(support.id, 'support');
    const nobody = await server.addUser({ username: 'nobody' });
    // On a phone: the refusal and the sign-in that asks for more are checked at its width too.
    const page = await cleanPage(browser, PHONE);
    const context = page.context();
    const response = await page.goto(`${server.url}/console/apps/new`);
    assert.equal(response?.status(), 200, 'sent to sign in first');
    await page.getByLabel('Username').fill(support.username);
    await page.getByLabel('Password').fill(support.password);
    const refused = page.waitForResponse((answer) => answer.url().endsWith('/console/apps/new'));
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    assert.equal((await refused).status(), 403);
    await page.getByRole('heading', { name: 'No access to the console' }).waitFor();
    assert.equal(await page.getByRole('alert').innerText(), 'Your role (support) does not allow this. Ask an administrator if you need it.');
    assert.equal(await page.getByLabel('Name').count(), 0, 'no registration form');
    const posted = await page.request.post(`${server.url}/console/apps`, {
      form: { csrf_token: (await context.cookies()).find((cookie) => cookie.name.endsWith('csrf'))?.value ?? '', client_name: 'Sneaky' },
    });
    assert.equal(posted.status(), 403, 'nor can the form be posted');
    assert.equal((await server.store.clients.list()).filter((client) => client.name === 'Sneaky').length, 0);

    await page.getByRole('link', { name: 'Console' }).click();
    await page.getByText('The console needs a sign-in with a passkey').waitFor();

    const door = await cleanPage(browser);
    await door.goto(`${server.url}/console`);
    await door.getByLabel('Username').fill(nobody.username);
    await door.getByLabel('Password').fill(nobody.password);
    const answer = door.waitForResponse((reply) => new URL(reply.url()).pathname === '/console');
    await door.getByRole('button', { name: 'Sign in', exact: true }).click();
    assert.equal((await answer).status(), 403);
    assert.match(await door.getByRole('alert').innerText(), /^Your account, nobody, has no role in the Tessera console\./);
  });

  it("passes axe-core on every console page at a desktop's and a phone's width", async (t) => {
    // Its first page is the dashboard, below.
    const page = await signedInAdmin(t, null);
    const context = page.context();
    const app = await server.addClient({ name: 'Weather Station', grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const { client: selfRegistered } = await createClient(
      manageDeps(server),
      { client_name: 'Self-made App', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
      { registeredBy: 'dynamic' },
    );
    const api = encodeURIComponent('https://tides.example.com/v1');
    await addResource(manageDeps(server), {
      identifier: 'https://tides.example.com/v1',
      name: 'Tides',
      scopes: [{ name: 'tides:read', description: 'See the tides' }],
    });
    const dorothy = await server.addUser({ username: 'dorothy', name: 'Dorothy Vaughan' });
    // Someone guessed her password until the limit locked her out from their address.
    const guesser = new FormBrowser(server.url);
    const signInPage = await guesser.request('/login');
    for (let i = 0; i < server.config.signIn.perUserAddress; i++)
      assert.equal((await guesser.submit(signInPage, '/login', { username: 'dorothy', password: 'guess' })).status, 401);
    const paths = [
      '/console',
      '/console/users',
      '/console/users?q=zzz-none',
      '/console/users/dorothy',
      '/console/users/dorothy/disable',
      '/console/users/dorothy/end-sessions',
      '/console/users/dorothy/reset-second-factor',
      '/console/apps',
      '/console/apps/new',
      `/console/apps/${app.clientId}`,
      `/console/apps/${app.clientId}/rotate`,
      `/console/apps/${app.clientId}/remove`,
      `/console/apps/${selfRegistered.id}`,
      '/console/apis',
      '/console/apis/new',
      `/console/apis/${api}`,
      `/console/apis/${api}/remove`,
      '/console/events',
      '/console/events?type=signin.succeeded&since=1h',
      '/console/keys',
      '/console/keys/rotate',
    ];
    const directory = await runTessera(
      ['provider', 'add', 'ldap', '--name', 'Staff Directory', '--url', 'ldaps://ldap.example.com', '--user-search-base', 'ou=people,dc=example,dc=com'],
      { TESSERA_DATABASE: server.config.database },
    );
    assert.equal(directory.code, 0, directory.stderr);
    const { webhook } = await addWebhook(
      { ...manageDeps(server), secrets: secretBox(loadKeyEncryption(server.config.keyEncryption)) },
      { url: 'https://hooks.example.com/axe', events: ['client.deleted'] },
    );
    paths.push('/console/webhooks', '/console/webhooks/new', `/console/webhooks/${webhook.id}`, `/console/webhooks/${webhook.id}/remove`);
    paths.push(
      '/console/providers',
      '/console/providers/new?kind=oidc',
      '/console/providers/new?kind=github',
      '/console/providers/new?kind=ldap',
      '/console/providers/staff-directory',
      '/console/providers/staff-directory/remove',
    );
    const small = await phonePage(context);
    for (const [tab, width] of [
      [page, 'desktop'],
      [small, 'phone'],
    ] as const) {
      for (const path of paths) {
        const response = await tab.goto(`${server.url}${path}`);
        assert.equal(response?.status(), 200, `${width} ${path}`);
        await tab.getByRole('navigation', { name: 'Console sections' }).waitFor();
        // Nothing is wider than the screen.
        assert.ok(await tab.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), `${width} ${path} scrolls sideways`);
      }
    }
    // An operation's refusal is a page with the admin API's status for it.
    const missing = await page.goto(`${server.url}/console/users/nobody-at-all`);
    assert.equal(missing?.status(), 404);
    assert.equal(await page.getByRole('alert').innerText(), 'Not done: there is no user named nobody-at-all.');

    // In German, the same refusal is in German.
    const german = await browser.newContext({ storageState: await context.storageState(), locale: 'de-DE' });
    t.after(() => german.close());
    const deutsch = await german.newPage();
    assert.equal((await deutsch.goto(`${server.url}/console/users/nobody-at-all`))?.status(), 404);
    assert.equal(await deutsch.getByRole('alert').innerText(), 'Nicht ausgeführt: Es gibt keinen Benutzer namens nobody-at-all.');
    await deutsch.goto(`${server.url}/console/apis/new`);
    await deutsch.getByLabel('Kennung').fill('https://tides.example.com/v1');
    await deutsch.getByLabel('Name, auf Zustimmungsseiten angezeigt').fill('Gezeiten');
    await deutsch.getByLabel('Scopes, einer pro Zeile').fill('tides:write=Gezeiten ändern');
    await deutsch.getByRole('button', { name: 'Registrieren' }).click();
    assert.equal(
      await deutsch.getByRole('alert').innerText(),
      'Nicht ausgeführt: Eine API mit der Kennung https://tides.example.com/v1 ist bereits registriert.',
    );

    // A registration the operation refuses: the form again, saying why, with what was typed.
    await page.goto(`${server.url}/console/apps/new`);
    await page.getByLabel('Name').fill('Bad Redirect');
    await page.getByLabel('Redirect URIs, one a line').fill('ftp://files.example/callback');
    const refused = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Register' }).click();
    assert.equal((await refused).status(), 400);
    // In the reader's words, the field by its label; the operation's English detail in small print.
    const reason = page.getByRole('alert');
    assert.match(await reason.innerText(), /^Not done: the value of “Redirect URIs” was refused\. redirect_uris ftp:\/\/files\.example\/callback: /);
    assert.equal(await reason.locator('small[lang="en"]').count(), 1);
    assert.equal(await page.getByLabel('Name').inputValue(), 'Bad Redirect');

    // The rest of the pages: a lockout lifted, a change's result shown once, and a role given by an admin.
    await page.goto(`${server.url}/console/users/dorothy`);
    assert.match(await page.locator('dt:text-is("Status") + dd').innerText(), /^Enabled · locked out until /);
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByText(/^Unlocked: \d+ counters of wrong passwords and codes cleared\.$/).waitFor();
    assert.equal((await guesser.submit(signInPage, '/login', { username: 'dorothy', password: dorothy.password })).status, 303, 'she can sign in again');
    assert.equal(await page.getByRole('button', { name: 'Unlock' }).count(), 0);
    await page.getByRole('button', { name: 'Make a reset link' }).click();
    await page.getByText('Give this link to dorothy only.').waitFor();
    await page.goto(`${server.url}/console/users/dorothy`);
    await page.getByLabel('Console role').selectOption({ label: 'viewer' });
    await page.getByRole('button', { name: 'Change role' }).click();
    await page.getByText('Role changed.').waitFor();
    assert.equal((await server.store.users.findByUsername('dorothy'))?.role, 'viewer');
    const [given] = await server.store.events.list({ type: 'user.role_changed', limit: 1 });
    assert.deepEqual([given?.username, given?.detail['role'], given?.detail['operator']], ['dorothy', 'viewer', 'grace']);
  });

  it("edits a person's profile with the users' table's form, and refuses an edit made over someone else's change with the current values shown", async (t) => {
    const ada = await server.addUser({ username: 'augusta', name: 'Ada' });
    const page = await signedInAdmin(t, '/console/users/augusta');
    await page.getByRole('link', { name: 'Edit profile' }).click();
    assert.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'Ada');
    await page.getByLabel('Given name').fill('Ada');
    await page.getByLabel('Family name').fill('Lovelace');
    // An address no other account in this file has: one address, one account.
    await page.getByLabel('E-mail', { exact: true }).fill('augusta.ada@example.com');
    await page.getByLabel('E-mail address verified').check();
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByText('Profile saved.').waitFor();
    assert.equal(await page.locator('dt:text-is("Family name") + dd').innerText(), 'Lovelace');
    const saved = await server.store.users.get(ada.id);
    assert.deepEqual(
      [saved?.givenName, saved?.familyName, saved?.email, saved?.emailVerified, saved?.name],
      ['Ada', 'Lovelace', 'augusta.ada@example.com', true, 'Ada'],
    );

    // Someone else changes her while the form is open: the save is refused, their change shown under this one.
    await page.getByRole('link', { name: 'Edit profile' }).click();
    await server.store.users.update(ada.id, { locale: 'en-GB' }, Date.now() + 1000);
    await page.getByLabel('Name', { exact: true }).fill('Ada King');
    const refused = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save profile' }).click();
    assert.equal((await refused).status(), 409);
    assert.match(await page.getByRole('alert').innerText(), /^Someone else changed this person while you edited/);
    assert.deepEqual(
      [await page.getByLabel('Name', { exact: true }).inputValue(), await page.locator('input[name="locale"]').inputValue()],
      ['Ada King', 'en-GB'],
    );
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.getByText('Profile saved.').waitFor();
    assert.equal((await server.store.users.get(ada.id))?.name, 'Ada King');
  });

  it("registers an API with its scopes, refuses an edit made over someone else's change with it shown, and removes the API after a confirmation page", async (t) => {
    const page = await signedInAdmin(t);
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'APIs and scopes' }).click();
    await page.getByRole('link', { name: 'Register an API' }).click();
    await page.getByLabel('Identifier').fill('https://photos.example.com');
    await page.getByLabel('Name, shown on consent pages').fill('Photos <API>');
    await page.getByLabel('Scopes, one a line').fill('photos:read=See your photos\nphotos:write = Change your photos\n');
    await page.getByLabel('Access token lifetime, in seconds').fill('600');
    await page.getByLabel('Give it a secret to introspect tokens with').check();
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Photos <API> is registered.' }).waitFor();
    const secret = await page.locator('dt:text-is("Introspection secret") + dd').innerText();
    assert.match(secret, /^[\w-]{43}$/);
    const added = await server.store.resources.get('https://photos.example.com');
    assert.deepEqual(
      [added?.name, added?.scopes, added?.accessTokenTtl, added?.introspectionSecretHash === secret],
      [
        'Photos <API>',
        [
          { name: 'photos:read', description: 'See your photos' },
          { name: 'photos:write', description: 'Change your photos' },
        ],
        600,
        false,
      ],
      'as typed; the secret stored only hashed',
    );

    await page.getByRole('link', { name: 'Back' }).click();
    const section = page.getByRole('region', { name: 'Photos <API>' });
    assert.match(await section.innerText(), /photos:write: Change your photos/);
    await section.getByRole('link', { name: 'Edit Photos <API>' }).click();
    await page.getByLabel('Name, shown on consent pages').fill('Photo Library');
    // Someone else changes its token lifetime meanwhile, through the command's operation.
    await updateResource(manageDeps(server), 'https://photos.example.com', { access_token_ttl: 900 });
    const stale = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save' }).click();
    assert.equal((await stale).status(), 409);
    const alert = page.getByRole('alert');
    await alert.getByText('Not saved: someone else changed this API after you opened it.').waitFor();
    assert.match(await alert.innerText(), /access_token_ttl: 600 → 900/);
    assert.equal((await server.store.resources.get('https://photos.example.com'))?.name, 'Photos <API>', 'nothing of the stale edit was saved');
    assert.equal(await page.getByLabel('Access token lifetime, in seconds').inputValue(), '900', 'the other change is shown in the form');
    assert.equal(await page.getByLabel('Name, shown on consent pages').inputValue(), 'Photo Library', "with the operator's change over it");
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    assert.deepEqual(await server.store.resources.get('https://photos.example.com').then((saved) => [saved?.name, saved?.accessTokenTtl]), [
      'Photo Library',
      900,
    ]);

    // A scope an app still asks for cannot be taken away: the operation's rule, in the console's words.
    const printer = await server.addClient({ name: 'Print Shop', scopes: ['openid', 'photos:write'] });
    await page.getByRole('link', { name: 'Edit Photo Library' }).click();
    await page.getByLabel('Scopes, one a line').fill('photos:read=See your photos');
    await page.getByRole('button', { name: 'Save' }).click();
    assert.equal(
      await page.getByRole('alert').innerText(),
      `Not done: the scope photos:write is still in the registration of the app Print Shop (${printer.clientId}): remove it from the app first.`,
    );
    assert.equal((await server.store.resources.get('https://photos.example.com'))?.scopes.length, 2);
    await server.store.clients.remove(printer.clientId);

    await page.goto(`${server.url}/console/apis`);
    await page.getByRole('link', { name: 'Remove Photo Library' }).click();
    await page.getByText('Remove Photo Library (https://photos.example.com)? Tokens and approvals for it stop working at once.').waitFor();
    await page.getByRole('button', { name: 'Remove Photo Library' }).click();
    await page.getByText('The API was removed: tokens and approvals for it no longer work.').waitFor();
    assert.equal(await server.store.resources.get('https://photos.example.com'), null);
    const events = await server.store.events.list({ limit: 20 });
    for (const type of ['resource.created', 'resource.updated', 'resource.removed']) {
      assert.equal(
        events.find((event) => event.type === type && event.detail['resource'] === 'https://photos.example.com')?.detail['operator'],
        'grace',
        `${type} names the operator`,
      );
    }
  });

  it('marks a self-registered app not verified in the list and on its page, and verifies it', async (t) => {
    const { client } = await createClient(
      manageDeps(server),
      { client_name: 'Unknown Notes', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
      { registeredBy: 'dynamic' },
    );
    await server.addClient({ name: 'Our Own App' });
    const page = await signedInAdmin(t, '/console/apps');
    const item = (name: string) =>
      page
        .getByRole('main')
        .getByRole('listitem')
        .filter({ has: page.getByRole('link', { name, exact: true }) });
    assert.match(await item('Unknown Notes').innerText(), /not verified/);
    assert.doesNotMatch(await item('Our Own App').innerText(), /not verified/, "the operator's own apps are not marked");
    await item('Unknown Notes').getByRole('link', { name: 'Unknown Notes' }).click();
    await page.getByText('This app registered itself (dynamic client registration). No operator has verified it').waitFor();
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('Verified: its consent page no longer says it is not verified.').waitFor();
    assert.equal((await server.store.clients.get(client.id))?.verified, true);
    await page.getByText('An operator has verified it.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Verify' }).count(), 0);
    await page.goto(`${server.url}/console/apps`);
    assert.doesNotMatch(await item('Unknown Notes').innerText(), /not verified/);
    const [updated] = await server.store.events.list({ type: 'client.updated', limit: 1 });
    assert.deepEqual([updated?.clientId, updated?.detail['fields'], updated?.detail['operator']], [client.id, 'verified', 'grace']);

    // An app known by its Client ID Metadata Document: its client ID is a URL, in the page's address too.
    const documentId = 'https://notes.example.com/client.json';
    await createClient(
      manageDeps(server),
      { client_name: 'Notes by Document', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
      { registeredBy: 'metadata_document', id: documentId },
    );
    await page.goto(`${server.url}/console/apps`);
    assert.match(await item('Notes by Document').innerText(), /not verified/);
    await item('Notes by Document').getByRole('link', { name: 'Notes by Document' }).click();
    await page.getByText('This app is known by its Client ID Metadata Document').waitFor();
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByText('Verified: its consent page no longer says it is not verified.').waitFor();
    assert.equal((await server.store.clients.get(documentId))?.verified, true);
  });

  it('lets a support user signed in with a passkey disable a user and make a reset link, and refuses app registration, secrets and APIs', async (t) => {
    const support = await server.addUser({ username: 'sue', name: 'Sue Support' });
    await server.store.users.setRole(support.id, 'support');
    const person = await server.addUser({ username: 'lin', name: 'Lin Chen' });
    const app = await server.addClient({ name: 'Recipe Box' });
    const { client: selfRegistered } = await createClient(
      manageDeps(server),
      { client_name: 'Stranger App', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' },
      { registeredBy: 'dynamic' },
    );
    // On a phone: the support pages are checked at its width, and at a desktop's below.
    const { context, page } = await withAuthenticator(PHONE);
    t.after(() => context.close());
    await addPasskeyThenConsole(page, support, 'Support phone');
    await signInWithPasskey(page);
    await dashboard(page);
    assert.match(await page.getByText('Signed in as').innerText(), /Sue Support \(support\)/);

    // What support may do: a reset link, shown once; disabling, after a confirmation page.
    await page.goto(`${server.url}/console/users?q=lin`);
    await page.getByRole('link', { name: 'lin', exact: true }).click();
    await page.getByRole('button', { name: 'Make a reset link' }).click();
    await page.getByText('Give this link to lin only.').waitFor();
    assert.match(await page.locator('dt:text-is("URL") + dd').innerText(), new RegExp(`^${server.url}/`));
    await page.getByRole('link', { name: 'Back' }).click();
    await page.getByRole('link', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('lin is disabled: their sessions have ended and their tokens no longer work.').waitFor();
    assert.equal((await server.store.users.findByUsername('lin'))?.disabled, true);
    const [disabled] = await server.store.events.list({ userId: person.id, type: 'user.disabled', limit: 1 });
    assert.equal(disabled?.detail['operator'], 'sue');

    // What support may not: register apps, see or rotate secrets, verify apps, change APIs.
    await page.goto(`${server.url}/console/apps`);
    assert.equal(await page.getByRole('link', { name: 'Register an app' }).count(), 0);
    assert.equal((await page.goto(`${server.url}/console/apps/new`))?.status(), 403);
    await page.getByText('Your role (support) does not allow this.').waitFor();
    const appPage = await page.goto(`${server.url}/console/apps/${app.clientId}`);
    assert.equal(appPage?.status(), 200, 'the registration is readable');
    // Its fields by their names in the reader's language, the protocol's name in small print.
    assert.match(await page.locator('dt', { hasText: 'Redirect URIs' }).innerText(), /^Redirect URIs redirect_uris$/);
    assert.equal(await page.locator('dt:has-text("Redirect URIs") + dd').innerText(), REDIRECT_URI);
    assert.equal(await page.getByLabel('Name').count(), 0, 'no edit form');
    assert.equal(await page.getByRole('link', { name: 'Rotate secret' }).count(), 0);
    assert.equal(await page.getByRole('link', { name: 'Remove' }).count(), 0);
    const secretHash = (await server.store.clients.get(app.clientId))?.secretHash;
    assert.equal(await page.getByText('Client secret').count(), 0, 'no secret');
    assert.ok(!(await page.content()).includes(secretHash!) && !(await page.content()).includes(app.clientSecret), 'nor its hash');
    assert.equal((await page.goto(`${server.url}/console/apps/${app.clientId}/rotate`))?.status(), 403);
    const csrf = (await context.cookies()).find((cookie) => cookie.name.endsWith('csrf'))?.value ?? '';
    assert.equal((await page.request.post(`${server.url}/console/apps/${app.clientId}/rotate`, { form: { csrf_token: csrf, grace: '0' } })).status(), 403);
    assert.equal((await server.store.clients.get(app.clientId))?.secretHash, secretHash, 'the secret was not rotated');
    await page.goto(`${server.url}/console/apps/${selfRegistered.id}`);
    await page.getByText('No operator has verified it').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Verify' }).count(), 0);
    assert.equal((await page.request.post(`${server.url}/console/apps/${selfRegistered.id}/verify`, { form: { csrf_token: csrf } })).status(), 403);
    assert.equal((await server.store.clients.get(selfRegistered.id))?.verified, undefined);
    await page.goto(`${server.url}/console/apis`);
    assert.equal(await page.getByRole('link', { name: 'Register an API' }).count(), 0);
    assert.equal((await page.goto(`${server.url}/console/apis/new`))?.status(), 403);
    assert.equal(
      (
        await page.request.post(`${server.url}/console/apis`, {
          form: { csrf_token: csrf, identifier: 'https://sneaky.example.com', name: 'Sneaky', scopes: 'sneak=Sneak' },
        })
      ).status(),
      403,
    );
    assert.equal(await server.store.resources.get('https://sneaky.example.com'), null);

    // The same pages at a desktop's width (axe-core checks each as it loads).
    const wide = await cleanPage(browser);
    await wide.context().addCookies(await context.cookies());
    for (const path of ['/console/apps', `/console/apps/${app.clientId}`, `/console/apps/${selfRegistered.id}`, '/console/apis', '/console/users/lin']) {
      assert.equal((await wide.goto(`${server.url}${path}`))?.status(), 200, path);
    }
  });

  /**
   * Signs the admin in at /console with the passkey the first test added, copied into this
   * browser's authenticator as a synced passkey would be: once an account has a passkey, a
   * password sign-in may not add another. Each copy counts on from far above the last, so the
   * server never sees its signature counter go back. Without the first test (run alone), the
   * admin adds a first passkey after the password.
   */
  it('adds an OpenID provider that links accounts and is trusted for a second factor, edits it keeping its secret, refuses a stale edit, and removes it', async (t) => {
    const page = await signedInAdmin(t);
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Identity providers' }).click();
    await page.getByRole('heading', { name: 'Identity providers', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Add an OpenID provider' }).click();
    // The form has the OpenID provider's fields, not GitHub's or a directory's.
    assert.equal(await page.getByLabel('Directory address (ldaps:// or ldap://)').count(), 0);
    assert.equal(await page.getByLabel('GitHub organisations allowed, one a line').count(), 0);
    await page.getByLabel('Name on its sign-in button').fill('Team <ID>');
    await page.getByLabel('Issuer URL').fill('ftp://id.example.com');
    await page.getByLabel('Client ID').fill('tessera-client');
    await page.getByLabel('Client secret').fill('upstream secret');
    await page.getByLabel('Scopes asked for, one a line').fill('openid\nemail');
    await page.getByLabel('Count its second factor (amr “mfa”) as a second factor here').check();
    await page.getByLabel('Sign existing people in by their verified e-mail address').check();
    const refused = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    assert.equal((await refused).status(), 400);
    assert.match(await page.getByRole('alert').innerText(), /^Not done: .*issuer ftp:\/\/id\.example\.com: must be https/s);
    assert.equal(await page.getByLabel('Name on its sign-in button').inputValue(), 'Team <ID>', 'what was typed is kept');
    assert.equal(await page.getByLabel('Client secret').inputValue(), '', 'but never the secret');
    await page.getByLabel('Issuer URL').fill('https://id.example.com');
    await page.getByLabel('Client secret').fill('upstream secret');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByText('The provider is added. Register its redirect URI with it, above.').waitFor();
    assert.equal(
      await page.locator('dt:text-is("Redirect URI to register with the provider") + dd').innerText(),
      upstreamRedirectUri(server.config.issuer, 'team-id'),
    );
    assert.equal(await page.locator('dt:text-is("Secret stored") + dd').innerText(), 'Yes');
    const added = await server.store.identityProviders.get('team-id');
    assert.deepEqual(
      [added?.name, added?.settings['trustUpstreamMfa'], added?.settings['allowLinking'], added?.settings['scopes']],
      ['Team <ID>', true, true, ['openid', 'email']],
    );
    const sealed = added?.secret;
    assert.ok(sealed !== null && sealed !== undefined && !JSON.stringify(sealed).includes('upstream secret'), 'the secret is stored sealed');
    const [created] = await server.store.events.list({ type: 'provider.created', limit: 1 });
    assert.equal(created?.detail['operator'], 'grace');

    // An edit that leaves the secret empty keeps it.
    await page.getByLabel('Name on its sign-in button').fill('Team ID');
    await page.getByLabel('Count its second factor (amr “mfa”) as a second factor here').uncheck();
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = await server.store.identityProviders.get('team-id');
    assert.deepEqual([saved?.name, saved?.settings['trustUpstreamMfa'], saved?.settings['allowLinking']], ['Team ID', false, true]);
    assert.deepEqual(saved?.secret, sealed, 'the secret as it was');

    // Someone else changes it meanwhile: the edit is refused with their change shown.
    await page.getByLabel('Position among the sign-in buttons').fill('5');
    const changed = await runTessera(['provider', 'update', 'team-id', '--issuer', 'https://login.example.com'], { TESSERA_DATABASE: server.config.database });
    assert.equal(changed.code, 0, changed.stderr);
    const stale = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save' }).click();
    assert.equal((await stale).status(), 409);
    await page.getByRole('alert').getByText('Not saved: someone else changed this provider after you opened it.').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /https:\/\/id\.example\.com → https:\/\/login\.example\.com/);
    assert.equal(await page.getByLabel('Issuer URL').inputValue(), 'https://login.example.com');
    assert.equal(await page.getByLabel('Position among the sign-in buttons').inputValue(), '5', "with the operator's change over it");
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved.').waitFor();
    assert.equal((await server.store.identityProviders.get('team-id'))?.position, 5);

    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Identity providers' }).click();
    const item = page.getByRole('main').getByRole('listitem').filter({ hasText: 'Team ID' });
    assert.match(await item.innerText(), /links accounts/);
    await item.getByRole('link', { name: 'Team ID' }).click();
    await page.getByRole('link', { name: 'Remove Team ID' }).click();
    await page.getByText('Remove Team ID (team-id)? Nobody signs in through it any more').waitFor();
    await page.getByRole('button', { name: 'Remove Team ID' }).click();
    await page.getByText('The provider was removed').waitFor();
    assert.equal(await server.store.identityProviders.get('team-id'), null);
  });

  // Each page it opens is checked by axe-core as it goes (helpers/chromium.ts), at a phone's width too.
  it("trusts an identity provider from the apps page, refuses a jwks_uri into the server's network, and stops trusting it after a confirmation", async (t) => {
    await addTrustedIssuer(manageDeps(server), { issuer: 'https://idp.example.com', jwks_uri: 'https://idp.example.com/jwks.json' });
    const page = await signedInAdmin(t, '/console/apps');
    const context = page.context();
    await page.getByRole('link', { name: 'Trusted issuers' }).click();
    await page.getByRole('heading', { name: 'Trusted issuers', level: 1 }).waitFor();
    await page.getByRole('link', { name: 'Trust an issuer' }).click();
    await page.getByLabel('Issuer', { exact: true }).fill('https://corp-idp.example.com');
    await page.getByLabel('URL of its signing keys (JWK Set)').fill('http://127.0.0.1:9/jwks.json');
    await page.getByRole('button', { name: 'Trust', exact: true }).click();
    assert.match(await page.getByRole('alert').innerText(), /^Not done: the value of “URL of its public keys” was refused\./);
    await page.getByLabel('URL of its signing keys (JWK Set)').fill('https://corp-idp.example.com/jwks.json');
    await page.getByRole('button', { name: 'Trust', exact: true }).click();
    await page.getByText('The issuer is trusted.').waitFor();
    const added = await server.store.trustedIssuers.get('https://corp-idp.example.com');
    assert.deepEqual([added?.jwksUri, added?.addedByOwner], ['https://corp-idp.example.com/jwks.json', false]);
    await page.getByRole('link', { name: 'https://corp-idp.example.com' }).click();
    await page.getByRole('link', { name: 'Stop trusting this issuer' }).click();
    await page.getByText('Stop trusting https://corp-idp.example.com?').waitFor();
    await page.getByRole('button', { name: 'Stop trusting this issuer' }).click();
    await page.getByText('The issuer is no longer trusted.').waitFor();
    assert.equal(await server.store.trustedIssuers.get('https://corp-idp.example.com'), null);
    const small = await phonePage(context);
    const trusted = `/console/trusted-issuers/${encodeURIComponent('https://idp.example.com')}`;
    for (const path of ['/console/trusted-issuers', '/console/trusted-issuers/new', trusted, `${trusted}/remove`]) {
      assert.equal((await small.goto(`${server.url}${path}`))?.status(), 200, path);
      assert.ok(await small.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'), `${path} scrolls sideways`);
    }
  });

  it("adds a webhook with its secret shown once, refuses one into the server's network, lists deliveries by state, replays a dead letter, and removes it after a confirmation", async (t) => {
    // A receiver on loopback, added by the server's owner (the command may point there): it fails until told otherwise.
    let status = 500;
    const received: string[] = [];
    const receiver = createServer((request, response) => {
      request.resume().on('end', () => {
        received.push(String(request.headers['webhook-id']));
        response.writeHead(status).end();
      });
    });
    const { port } = await listenOnFreePort(receiver);
    t.after(() => closeServer(receiver));
    const secrets = secretBox(loadKeyEncryption(server.config.keyEncryption));
    const { webhook: owned } = await addWebhook({ ...manageDeps(server), secrets }, { url: `http://127.0.0.1:${port}/hooks`, events: ['user.disabled'] });
    await server.addUser({ username: 'hedy' });
    await setDisabled(manageDeps(server), 'hedy', true);
    await until(
      'the delivery to be given up',
      async () => (await server.store.webhooks.deliveries(owned.id, { state: 'dead', limit: 1 })).length === 1,
      10_000,
      100,
    );

    const page = await signedInAdmin(t);
    await page.getByRole('navigation', { name: 'Console sections' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    const item = page.getByRole('listitem').filter({ hasText: `http://127.0.0.1:${port}/hooks` });
    assert.match(await item.innerText(), /waiting: 0 · delivered: 0 · dead letters: 1/);

    // Added through the console, a URL into the server's network is refused, naming the field.
    await page.getByRole('link', { name: 'Add a webhook' }).click();
    await page.getByLabel('URL each event is sent to').fill('http://169.254.169.254/latest');
    await page.getByLabel('user.deleted').check();
    const refused = page.waitForResponse((answer) => answer.request().method() === 'POST');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    assert.equal((await refused).status(), 400);
    assert.match(
      await page.getByRole('alert').innerText(),
      /^Not done: the value of “URL” was refused\. url http:\/\/169\.254\.169\.254\/latest: .*TESSERA_ALLOW_PRIVATE_NETWORK_URLS/s,
    );
    assert.equal(await page.getByLabel('user.deleted').isChecked(), true, 'what was chosen is kept');
    await page.getByLabel('URL each event is sent to').fill('https://hooks.example.com/console');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByRole('heading', { name: 'Webhook added' }).waitFor();
    const secret = await page.locator('dt:text-is("Signing secret") + dd').innerText();
    assert.match(secret, /^whsec_/);
    const [added] = (await server.store.webhooks.list()).filter((webhook) => webhook.url === 'https://hooks.example.com/console');
    assert.deepEqual([added?.events, added?.addedByOwner], [['user.deleted'], false]);
    await page.getByRole('link', { name: 'Back' }).click();
    await page.getByRole('heading', { name: 'Webhook', level: 1 }).waitFor();
    assert.equal(await page.getByText(secret).count(), 0, 'shown once');

    // The dead letter, sent again with the same webhook-id.
    await page.goto(`${server.url}/console/webhooks/${owned.id}`);
    const [letter] = await server.store.webhooks.deliveries(owned.id, { state: 'dead', limit: 1 });
    const row = page.getByRole('row').filter({ hasText: letter!.eventId });
    assert.match(await row.innerText(), /answered 500/);
    status = 204;
    const tries = received.length;
    await row.getByRole('button', { name: 'Send again' }).click();
    await page.getByText('The dead letters are being sent again, with the same webhook-id.').waitFor();
    await until('the replay to arrive', () => received.length > tries, 5000, 20);
    assert.equal(received.at(-1), letter!.eventId);
    await page.reload();
    await page.getByText('No dead letters.').waitFor();
    const [replayed] = await server.store.events.list({ type: 'webhook.replayed', limit: 1 });
    assert.equal(replayed?.detail['operator'], 'grace');

    for (const webhook of [owned, added!]) {
      await page.goto(`${server.url}/console/webhooks/${webhook.id}`);
      await page.getByRole('link', { name: 'Remove this webhook' }).click();
      await page.getByText(`Remove the webhook to ${webhook.url}? Nothing more is sent to it`).waitFor();
      await page.getByRole('button', { name: 'Remove this webhook' }).click();
      await page.getByText('The webhook was removed: nothing more is sent to it.').waitFor();
      assert.equal(await server.store.webhooks.get(webhook.id), null);
    }
  });

  // Each page it opens (the list, the form, the token shown once, the confirmation) is checked by axe-core too.
  it('makes a SCIM token for a provisioning system, shown once, and withdraws it after a confirmation', async (t) => {
    const page = await signedInAdmin(t, '/console/scim');
    await page.getByText(`${server.config.issuer}/scim/v2`).waitFor();
    await page.getByRole('link', { name: 'Make a SCIM token' }).click();
    await page.getByLabel('Who calls with it').fill('Okta (console)');
    await page.getByRole('button', { name: 'Make', exact: true }).click();
    await page.getByRole('heading', { name: 'SCIM token made' }).waitFor();
    const token = await page.locator('dt:text-is("Token") + dd').innerText();
    assert.match(token, /^scim_/);
    const answer = await fetch(`${server.url}/scim/v2/ServiceProviderConfig`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(answer.status, 200, 'the token made calls /scim/v2');
    await page.getByRole('link', { name: 'Back' }).click();
    assert.equal(await page.getByText(token).count(), 0, 'shown once');
    await page.getByRole('row').filter({ hasText: 'Okta (console)' }).getByRole('link', { name: 'Withdraw' }).click();
    await page.getByText('Withdraw the SCIM token of Okta (console)?').waitFor();
    await page.getByRole('button', { name: 'Withdraw' }).click();
    await page.getByText('The SCIM token was withdrawn').waitFor();
    assert.equal((await fetch(`${server.url}/scim/v2/ServiceProviderConfig`, { headers: { authorization: `Bearer ${token}` } })).status, 401);
    const [made] = await server.store.events.list({ type: 'scim_token.created', limit: 1 });
    assert.equal(made?.detail['operator'], 'grace');
  });

  /** A page at a phone's size, touch and all, signed in as `context` is (the file's clean phone page, cleanPage). */
  async function phonePage(context: BrowserContext): Promise<Page> {
    const phone = await cleanPage(browser, PHONE);
    await phone.context().addCookies(await context.cookies());
    return phone;
  }

  /**
   * A page signed in to the console as the admin, at `path` (the dashboard unless told; null for
   * none yet). It is the file's clean page (cleanPage) with the admin's session of the first
   * passkey sign-in (`adminSession`): the passkey sign-in is the first test's, and the 15
   * minutes' and support's tests sign in with a passkey of their own, so another sign-in page and
   * ceremony in each test checked nothing new.
   */
  async function signedInAdmin(t: TestContext, path: string | null = '/console'): Promise<Page> {
    if (adminSession === null) {
      const { context, page } = await withAuthenticator();
      t.after(() => context.close());
      await signInAdmin(page);
      if (path !== null && path !== '/console') await page.goto(`${server.url}${path}`);
      return page;
    }
    const page = await cleanPage(browser);
    await page.context().addCookies(adminSession);
    if (path === '/console') {
      await page.goto(`${server.url}/console`);
      await dashboard(page);
    } else if (path !== null) await page.goto(`${server.url}${path}`);
    return page;
  }

  /** Signs `page` in to the console as the admin with a passkey; the first such session is the one signedInAdmin reuses. */
  async function signInAdmin(page: Page): Promise<void> {
    if (adminPasskey !== null) {
      const { cdp, authenticatorId } = authenticators.get(page)!;
      copies += 1;
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: { ...adminPasskey, signCount: copies * 1_000_000 } });
      await page.goto(`${server.url}/console`);
    } else await addPasskeyThenConsole(page, admin, 'Another laptop');
    await signInWithPasskey(page);
    await dashboard(page);
    adminSession ??= await page.context().cookies();
  }

  /**
   * Signs `person` in on /account with their password, adds a passkey named `name` in the
   * page's authenticator, and follows the account page's link to the console (a person with a
   * role has one), which asks for a passkey sign-in.
   */
  async function addPasskeyThenConsole(page: Page, person: TestUser, name: string): Promise<void> {
    await page.goto(`${server.url}/account`);
    await signInWithPassword(page, person);
    await page.getByLabel('Passkey name').fill(name);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByText('Passkey added. You can now sign in with it.').waitFor();
    await page.getByRole('link', { name: 'Console', exact: true }).click();
  }
});

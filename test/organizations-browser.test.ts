/**
 * Organizations in Chromium, each page checked by axe-core as it loads (helpers/chromium.ts),
 * in English and in Arabic: an invitation into an organization to the first token, whose
 * org_id openid-client reads, the member choosing among their organizations on the consent
 * page's radio group; an invitation accepted with a passkey (the DevTools protocol's virtual
 * authenticator), the account made with it and no password; a sign-in routed by an organization's verified domain, by login_hint and
 * by the address typed, to its upstream provider (another Tessera, as
 * test/upstream-oidc.test.ts has it); invite-only sign-up; and the console's organization pages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { verifyPassword } from '../src/core/password.ts';
import { inviteUser } from '../src/flows/manage/invitations.ts';
import { axeViolations } from './helpers/accessibility.ts';
import {
  chromiumUnavailable,
  cleanPage,
  launchChromium,
  pageCatchingRedirect,
  reach,
  signInToAccountWithPasskey,
  withVirtualAuthenticator,
} from './helpers/chromium.ts';
import { runTessera } from './helpers/cli.ts';
import { addUpstreamTessera, authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';
import { operatorBrowser } from './helpers/console.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeAll, REDIRECT_URI, startTestServer, type TestClient, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

describe('organizations in Chromium', { skip: chromiumUnavailable() }, () => {
  let upstream: TestServer;
  let server: TestServer;
  let app: TestClient;
  let config: oidc.Configuration;
  let browser: Browser;
  const orgIds: Record<string, string> = {};
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });

  async function tessera(args: string[], stdin = ''): Promise<string> {
    const run = await runTessera(args, env(), stdin);
    assert.equal(run.code, 0, `tessera ${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  }

  before(async () => {
    upstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme SSO' } });
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    server = await startTestServer({ issuerHost: 'localhost', env: { TESSERA_SIGN_UP: 'invite' } });
    await upstream.addUser({ username: 'ada', password: 'ada password 1', name: 'Ada Acme', email: 'ada@acme.example', profile: { emailVerified: true } });
    await addUpstreamTessera(server, upstream, { id: 'acme-sso', name: 'Acme SSO', clientName: 'Tessera' });
    for (const args of [
      ['--name', 'Acme', '--domain', 'acme.example', '--verified', '--provider', 'acme-sso'],
      ['--name', 'Globex'],
    ]) {
      const made = JSON.parse(await tessera(['org', 'add', ...args, '--json'])) as { id: string; name: string };
      orgIds[made.name] = made.id;
    }
    app = await server.addClient({ name: 'Team Board', scopes: ['openid', 'profile', 'email', 'organization'] });
    config = await oidc.discovery(new URL(server.url), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, server, upstream));

  /** An authorization request of the app's (openid-client's, with PKCE, state and nonce), redeemed by `redeemAttempt`. */
  const authorize = (extra: Record<string, string> = {}) => authorizationAttempt(config, { scope: 'openid email organization', ...extra });

  /** The file's clean page, whose redirects to the app are caught. */
  const appPage = () => pageCatchingRedirect(browser);

  it('takes an invitation into an organization to a first token naming the organization chosen on the consent page', async () => {
    const made = await tessera(['user', 'invite', '--email', 'hedy@globex.example', '--org', 'Globex', '--role', 'owner', '--client', app.clientId, '--json']);
    const { page, callback } = await appPage();
    await page.goto((JSON.parse(made) as { url: string }).url);
    await page.getByLabel('Username').fill('hedy');
    await page.getByLabel('Your name').fill('Hedy Globex');
    await page.getByLabel('Password').fill('frequency hopping');
    await page.getByRole('button', { name: 'Make the account' }).click();
    await page.getByRole('heading', { level: 1 }).waitFor();
    // A member of two: the consent page asks which.
    await tessera(['org', 'member', 'add', 'Acme', 'hedy']);

    const attempt = await authorize();
    await page.goto(attempt.url.href);
    await page.getByLabel('Username').fill('hedy');
    await page.getByLabel('Password').fill('frequency hopping');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const group = page.getByRole('group', { name: 'Which organization do you sign in to Team Board for?' });
    await reach(page, group, 'the choice of organization');
    assert.equal(await group.getByRole('radio').count(), 2);
    await group.getByRole('radio', { name: 'Globex' }).check();
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
    const claims = tokens.claims()!;
    assert.deepEqual([claims['org_id'], claims['org_name']], [orgIds['Globex'], 'Globex']);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    assert.deepEqual([info['email'], info['org_id']], ['hedy@globex.example', orgIds['Globex']]);

    // The same page in Arabic, right to left, asked again.
    const arabic = await authorize({ prompt: 'consent', ui_locales: 'ar' });
    await page.goto(arabic.url.href);
    await reach(page, page.getByRole('group'), 'the choice of organization, in Arabic');
    assert.equal(await page.locator('html').getAttribute('dir'), 'rtl');
    assert.equal(await page.getByRole('radio', { name: 'Globex' }).isChecked(), true, 'the choice kept is checked');
  });

  async function withAuthenticator(locale: string): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
    return withVirtualAuthenticator(browser, { locale });
  }

  for (const locale of ['en', 'ar'] as const) {
    it(`${locale}: accepts an invitation into an organization with a passkey, offered first, and makes the account with it and no password`, async () => {
      const username = `passkey-${locale}`;
      const { url } = await inviteUser(manageDeps(server), { email: `${username}@globex.example`, organization: 'Globex', clientId: app.clientId });
      const { context, page, cdp, authenticatorId } = await withAuthenticator(locale);
      const scriptErrors: string[] = [];
      page.on('pageerror', (error) => scriptErrors.push(error.message));
      try {
        await page.goto(url);
        const passkeyButton = page.locator('#passkey-sign-up-button');
        await reach(page, passkeyButton, 'the passkey button, shown where the browser can');
        assert.equal(await page.getAttribute('html', 'lang'), locale);
        assert.ok(await page.locator('#password').isVisible(), 'the password stays, as the alternative');
        assert.deepEqual(await axeViolations(page, `invitation with a passkey (${locale})`), []);

        // A taken username is refused before the authenticator is asked.
        await server.addUser({ username: `taken-${locale}` });
        await page.locator('#username').fill(`taken-${locale}`);
        await page.locator('#name').fill('Passkey Person');
        await passkeyButton.click();
        await reach(page, page.locator('#passkey-error'), 'the refusal beside the button');
        assert.equal((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials.length, 0);
        assert.deepEqual(await axeViolations(page, `invitation with a passkey, refused (${locale})`), []);

        await page.locator('#username').fill(username);
        await passkeyButton.click();
        await reach(page, page.locator('p[role="status"]'), 'the account made');
        const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
        assert.equal(credentials.length, 1);
        assert.equal(credentials[0]!.rpId, 'localhost');
        const user = await server.store.users.findByUsername(username);
        assert.ok(user);
        assert.equal(Buffer.from(credentials[0]!.userHandle!, 'base64').toString('utf8'), user.id, 'the passkey’s user handle is the account’s sub');
        assert.equal(await verifyPassword('', user.passwordHash), false, 'no password');
        assert.equal((await server.store.passkeys.listForUser(user.id)).length, 1);
        assert.deepEqual(
          (await server.store.organizations.membershipsOf(user.id)).map((membership) => [membership.organization.name, membership.role]),
          [['Globex', 'member']],
        );
        // It lands in the app that invited them.
        assert.equal(await page.locator('a.button').getAttribute('href'), new URL(REDIRECT_URI).origin);

        // The passkey signs in (the sign-in page's autofill request, or its button).
        await signInToAccountWithPasskey(page, server.url);
        assert.deepEqual(scriptErrors, []);
      } finally {
        await context.close();
      }
    });
  }

  it('sends an address of the verified domain to the organization’s provider, by login_hint and as typed, and back with a token, a member of it', async () => {
    const { page, callback } = await appPage();
    const attempt = await authorize({ login_hint: 'ada@acme.example' });
    await page.goto(attempt.url.href);
    // Straight to the upstream's own sign-in page: no password asked here.
    await reach(page, (url) => url.href.startsWith(upstream.url), 'the upstream provider');
    await page.getByLabel('Username').fill('ada');
    await page.getByLabel('Password').fill('ada password 1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub))['email'], 'ada@acme.example');
    const links = await server.store.linkedIdentities.listForUser(tokens.claims()!.sub);
    assert.deepEqual(
      links.map((link) => link.providerId),
      ['acme-sso'],
    );
    // Signed in by the organization's own provider with an address of its domain: one of its people.
    assert.deepEqual(
      (await server.store.organizations.membershipsOf(tokens.claims()!.sub)).map((membership) => [membership.organization.name, membership.role]),
      [['Acme', 'member']],
    );

    // Typed on the sign-in page: the same page, whether or not such an account exists here, no password checked.
    for (const address of ['ada@acme.example', 'nobody@acme.example']) {
      const typed = await appPage();
      await typed.page.goto((await authorize()).url.href);
      await typed.page.getByLabel('Username').fill(address);
      await typed.page.getByLabel('Password').fill('anything at all');
      await typed.page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await typed.page.getByText('Addresses at acme.example sign in with Acme SSO.').waitFor();
      await typed.page.getByRole('link', { name: 'Continue with Acme SSO' }).click();
      await reach(typed.page, (url) => url.href.startsWith(upstream.url), `the upstream provider, for ${address}`);
      assert.equal(new URL(typed.page.url()).searchParams.get('login_hint'), address, 'the address goes on as the login_hint');
    }
    // The page that leads there, in Arabic.
    const arabic = await cleanPage(browser, { locale: 'ar' });
    await arabic.goto((await authorize()).url.href);
    await arabic.locator('#username').fill('ada@acme.example');
    await arabic.locator('#password').fill('anything at all');
    await arabic.locator('form[action="/login"] button[type=submit].primary').click();
    await arabic.locator('a.button.primary', { hasText: 'Acme SSO' }).waitFor();
    assert.equal(await arabic.locator('html').getAttribute('dir'), 'rtl');
  });

  it('opens sign-up for an invitation alone, with no sign-up link, in English and Arabic', async () => {
    for (const locale of ['en', 'ar']) {
      const page = await cleanPage(browser, { locale });
      await page.goto(`${server.url}/login`);
      await page.getByRole('heading', { level: 1 }).waitFor();
      assert.equal(await page.locator('a[href^="/sign-up"]').count(), 0);
      const closed = await page.goto(`${server.url}/sign-up`);
      assert.equal(closed?.status(), 404);
      await page.getByRole('heading', { level: 1 }).waitFor();
    }
  });

  it('shows the console’s organization pages, in English and Arabic, and adds a member', async () => {
    const { browser: operator } = await operatorBrowser(server, 'admin');
    for (const locale of ['en', 'ar']) {
      const page = await cleanPage(browser, { locale });
      await page.context().addCookies([...operator.cookies].map(([name, value]) => ({ name, value, url: server.url })));
      await page.goto(`${server.url}/console/orgs`);
      await page.getByRole('link', { name: 'Acme' }).waitFor();
      await page.goto(`${server.url}/console/orgs/new`);
      await page.locator('#name').waitFor();
      await page.goto(`${server.url}/console/orgs/${orgIds['Acme']}`);
      await page.locator('#username').fill(locale === 'en' ? 'nobody-here' : 'hedy');
      await page.locator('#role').selectOption('admin');
      await page.locator('form[action$="/members"] button[type=submit]').click();
      await page.waitForLoadState('load');
      if (locale === 'en') {
        await page.getByRole('alert').waitFor();
        assert.match(await page.getByRole('alert').innerText(), /nobody-here/);
      } else {
        await page.getByRole('status').waitFor();
      }
      await page.goto(`${server.url}/console/orgs/${orgIds['Acme']}/remove`);
      await page.getByRole('heading', { level: 1 }).waitFor();
    }
    const members = JSON.parse(await tessera(['org', 'member', 'list', 'Acme', '--json'])) as { username: string; role: string }[];
    assert.ok(
      members.some((member) => member.username === 'hedy' && member.role === 'admin'),
      JSON.stringify(members),
    );
  });
});

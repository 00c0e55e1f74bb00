/**
 * Signing in through an upstream OpenID provider: a second Tessera is the
 * upstream, in the same process. In Chromium: the sign-in page's button, the upstream's own
 * sign-in, the way back, and an app registered with the downstream Tessera getting tokens
 * whose claims came from upstream (checked with openid-client, as a real app would); linking
 * by verified e-mail; and each refusal as a page in people's words with its `signin.failed`
 * event and no half-made user.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { newTotpSecret, timeStep, totpAt } from '../src/flows/second-factor/totp.ts';
import { FormBrowser } from './helpers/browser.ts';
import { chromiumUnavailable, cleanPage, launchChromium, pageCatchingRedirect, reach } from './helpers/chromium.ts';
import { runTessera } from './helpers/cli.ts';
import { addUpstreamTessera, authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';
import { closeAll, closeServer, listenOnFreePort, startTestServer, type TestClient, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

describe('signing in through an upstream OpenID provider (another Tessera)', { skip: chromiumUnavailable() }, () => {
  let upstream: TestServer;
  let downstream: TestServer;
  let upstreamClient: TestClient;
  let app: TestClient;
  let config: oidc.Configuration;
  let browser: Browser;
  let env: Record<string, string>;
  const callbackOf = (id: string) => `${downstream.url}/login/upstream/${id}/callback`;

  before(async () => {
    upstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Upstream ID' } });
    downstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme' } });
    env = { TESSERA_DATABASE: downstream.config.database, TESSERA_ISSUER: downstream.url };
    await upstream.addUser({
      username: 'ada',
      password: 'ada password 1',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      profile: { emailVerified: true, givenName: 'Ada' },
    });
    await upstream.addUser({ username: 'eve', password: 'eve password 1', name: 'Eve', email: 'eve@elsewhere.org', profile: { emailVerified: true } });
    await upstream.addUser({
      username: 'grace',
      password: 'grace password 1',
      name: 'Grace Upstream',
      email: 'grace@example.com',
      profile: { emailVerified: true },
    });
    await upstream.addUser({ username: 'unverified', password: 'unverified password 1', name: 'Una', email: 'una@example.com' });
    // The downstream Tessera is an ordinary first-party client of the upstream one.
    const added = await addUpstreamTessera(downstream, upstream, {
      id: 'upstream',
      name: 'Upstream ID',
      alsoFor: ['mixup'],
      args: ['--allowed-domain', 'example.com', '--allow-linking'],
    });
    upstreamClient = added.client;
    assert.match(added.stdout, new RegExp(`Register this redirect URI with the provider: ${callbackOf('upstream').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    app = await downstream.addClient({ name: 'Garden Planner' });
    config = await oidc.discovery(new URL(downstream.url), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    browser = await launchChromium();
  });
  after(() => closeAll(browser, downstream, upstream));

  /** A page as a new browser's, reused (cleanPage): the file opened 17 contexts, one a test. */
  const freshPage = () => cleanPage(browser);

  const authorize = (extra: Record<string, string> = {}) => authorizationAttempt(config, extra);

  /** An app's authorization request in a new page, taken to the upstream by its link on Acme's sign-in page. */
  async function continueUpstream(extra: Record<string, string> = {}) {
    const { page, callback } = await pageCatchingRedirect(browser);
    const attempt = await authorize(extra);
    await page.goto(attempt.url.href);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    return { page, callback, attempt };
  }

  /** The app's tokens for the code of the redirect back to it. */
  async function redeem(callback: Promise<URL>, attempt: Awaited<ReturnType<typeof authorize>>) {
    return redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
  }

  /** At the upstream Tessera's own sign-in page. */
  async function signInUpstream(page: Page, username: string, password: string): Promise<void> {
    // Acme's own sign-in page has the same heading: wait to be at the upstream first.
    await reach(page, (url) => url.href.startsWith(upstream.url), 'the upstream');
    await reach(page, page.getByRole('heading', { name: 'Sign in' }), 'the page "Sign in"');
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** Rewrites where Acme sends the browser upstream (the first request of the chain is Acme's). */
  async function upstreamBound(page: Page, rewrite: (upstreamUrl: URL) => URL): Promise<void> {
    await page.route(`${downstream.url}/login/upstream/upstream?**`, async (route) => {
      const response = await route.fetch({ maxRedirects: 0 });
      const location = rewrite(new URL(response.headers()['location']!));
      await route.fulfill({ response, headers: { ...response.headers(), location: location.href } });
    });
  }

  /**
   * Rewrites where the upstream sends the browser back to Acme. That address is the target of
   * the redirects after the upstream's sign-in form, which no route sees: the form's post is
   * made here instead, its redirects within the upstream followed with the browser's cookies,
   * and the browser sent on to the rewritten address. Resolves with the address as sent.
   */
  function downstreamBound(page: Page, rewrite: (callback: URL) => URL): Promise<URL> {
    return new Promise<URL>((resolve, reject) => {
      void page.route(
        (url) => url.href === `${upstream.url}/login`,
        async (route) => {
          if (route.request().method() !== 'POST') return route.continue();
          try {
            let response = await route.fetch({ maxRedirects: 0 });
            let location = response.headers()['location'];
            while (location !== undefined && new URL(location, upstream.url).origin === new URL(upstream.url).origin) {
              response = await page.context().request.get(new URL(location, upstream.url).href, { maxRedirects: 0 });
              location = response.headers()['location'];
            }
            if (location === undefined) throw new Error(`the upstream answered ${response.status()}, not a redirect back`);
            resolve(new URL(location));
            await route.fulfill({ status: 303, headers: { location: rewrite(new URL(location)).href } });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
            await route.abort();
          }
        },
      );
    });
  }

  async function failures(reason: string) {
    const events = await downstream.store.events.list({ type: 'signin.failed', limit: 50 });
    return events.filter((event) => event.detail['reason'] === reason);
  }

  it('signs in with the upstream account into an app, whose tokens carry the claims from upstream', async () => {
    const { page, callback, attempt } = await continueUpstream();
    await signInUpstream(page, 'ada', 'ada password 1');
    // Back at Acme, signed in: the app's consent page.
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeem(callback, attempt);
    const claims = tokens.claims()!;
    // The upstream checked Ada's password (its ID token says amr ["pwd"]); Acme repeats what
    // it was told, no more: no password was checked here, and no "federated" value exists.
    assert.deepEqual(claims.amr, ['pwd']);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    assert.equal(userinfo['name'], 'Ada Lovelace');
    assert.equal(userinfo['given_name'], 'Ada');
    assert.equal(userinfo['email'], 'ada@example.com');
    assert.equal(userinfo['email_verified'], true);
    assert.equal(userinfo['preferred_username'], 'ada');
    // A Tessera user made just in time, linked to the upstream identity; no upstream token kept.
    const user = await downstream.store.users.findByUsername('ada');
    assert.equal(user?.id, claims.sub);
    const links = await downstream.store.linkedIdentities.listForUser(claims.sub);
    assert.deepEqual(
      links.map((link) => [link.providerId, link.label]),
      [['upstream', 'ada@example.com']],
    );
    const shown = await runTessera(['user', 'show', 'ada'], env);
    assert.match(shown.stdout, /Upstream ID \(upstream\): ada@example\.com/);
    // The person sees the link on their account page.
    await page.goto(`${downstream.url}/account`);
    const linked = page.getByRole('region', { name: 'Linked accounts' });
    assert.match(await linked.getByRole('listitem').innerText(), /^Upstream ID: ada@example\.com, linked /);
  });

  it('signs in again as the same user through the link, without a second account', async () => {
    const { page, callback, attempt } = await continueUpstream();
    await signInUpstream(page, 'ada', 'ada password 1');
    // The approval is remembered from the first sign-in: straight back to the app.
    const tokens = await redeem(callback, attempt);
    assert.equal(tokens.claims()?.sub, (await downstream.store.users.findByUsername('ada'))?.id);
    assert.equal((await downstream.store.users.list()).filter((user) => user.email === 'ada@example.com').length, 1);
  });

  it("asks the provider for a new sign-in where one is needed, and dates the session by the provider's auth_time, never by its answer", async () => {
    // Rosa signed in upstream two hours ago, and that browser is still signed in there. (Two
    // cookie jars: a browser shares 127.0.0.1's cookies between the two servers' ports.)
    const rosa = await upstream.addUser({ username: 'rosa', password: 'rosa password 1', email: 'rosa@example.com', profile: { emailVerified: true } });
    const there = new FormBrowser(upstream.url);
    const value = randomToken(32);
    const twoHoursAgo = Date.now() - 2 * 3600_000;
    await upstream.store.sessions.create({
      idHash: hashSecret(value),
      sid: randomToken(16),
      userId: rosa.id,
      authTime: twoHoursAgo,
      createdAt: twoHoursAgo,
      expiresAt: Date.now() + 3600_000,
      amr: ['pwd'],
      ip: '127.0.0.1',
      userAgent: null,
    });
    there.cookies.set('tessera_session', value);
    /** From `start` at Acme to the upstream and back: what the upstream was asked, and Acme's answer. */
    const roundTrip = async (acme: FormBrowser, start: string, changeOnTheWay: (upstreamUrl: URL) => void = () => {}) => {
      const out = await acme.request(start);
      assert.equal(out.status, 303, out.html.slice(0, 300));
      const asked = new URL(out.location!);
      const sent = new URL(asked);
      changeOnTheWay(sent);
      let answer = await there.follow(await there.request(sent.href));
      // Asked for a new sign-in, the upstream shows its sign-in page: Rosa types her password.
      const signedInAgain = answer.status === 200;
      if (signedInAgain) answer = await there.follow(await there.submit(answer, '/login', { username: rosa.username, password: rosa.password }));
      assert.ok(answer.location?.startsWith(callbackOf('upstream')), `the upstream answered ${answer.status}: ${answer.html.slice(0, 300)}`);
      return { asked, signedInAgain, back: await acme.request(answer.location!) };
    };
    /** Whether Acme lets this browser set up one-time codes, which needs a recent sign-in. */
    const maySetUpCodes = async (acme: FormBrowser) => {
      await acme.request('/account');
      const setUp = await acme.request('/account/totp/setup', { form: { csrf_token: acme.cookies.get('tessera_csrf')! } });
      assert.ok(setUp.status === 200 || setUp.status === 403, `${setUp.status} ${setUp.html.slice(0, 300)}`);
      return setUp.status === 200;
    };
    const sessionOf = (acme: FormBrowser) => downstream.store.sessions.get(hashSecret(acme.cookies.get('tessera_session') ?? ''), Date.now());

    // The account page's link to sign in again (/login?prompt=login): the provider's button
    // asks for a new sign-in, and the upstream is sent prompt=login and max_age=0.
    const acme = new FormBrowser(downstream.url);
    const page = await acme.request('/login?prompt=login&return_to=%2Faccount');
    const button = /<a class="button" href="([^"]+)">Continue with Upstream ID<\/a>/.exec(page.html)?.[1]?.replace(/&amp;/g, '&');
    assert.equal(button, '/login/upstream/upstream?return_to=%2Faccount&max_age=0');
    // So does an app's request that asks for one (OIDC Core §3.1.2.1), passing on its max_age.
    for (const [extra, sent] of [
      [{ prompt: 'login' }, '0'],
      [{ max_age: '300' }, '300'],
    ] as const) {
      const asked = await new FormBrowser(downstream.url).request((await authorize(extra)).url.href);
      assert.match(asked.html, new RegExp(`href="/login/upstream/upstream\\?[^"]*&amp;max_age=${sent}"`), JSON.stringify(extra));
    }

    // A provider that ignores the request answers with its two-hour-old sign-in: refused,
    // since that is not the new one asked for (OIDC Core §3.1.3.7, auth_time and max_age).
    const ignored = await roundTrip(new FormBrowser(downstream.url), button, (upstreamUrl) => {
      assert.deepEqual([upstreamUrl.searchParams.get('prompt'), upstreamUrl.searchParams.get('max_age')], ['login', '0']);
      upstreamUrl.searchParams.delete('prompt');
      upstreamUrl.searchParams.delete('max_age');
    });
    assert.equal(ignored.signedInAgain, false);
    assert.equal(ignored.back.status, 502);
    assert.match(ignored.back.html, /The answer from Upstream ID could not be verified/);
    assert.match(String((await failures('invalid_response')).at(0)?.detail['upstream']), /auth_time|authentication/);

    // Whoever drops max_age from the button's address is signed in by the upstream's session
    // without a word, as of when that session signed in: too long ago to change the account.
    const silent = new FormBrowser(downstream.url);
    const unasked = await roundTrip(silent, '/login/upstream/upstream?return_to=%2Faccount');
    assert.equal(unasked.signedInAgain, false);
    assert.equal(unasked.back.status, 200);
    assert.equal((await sessionOf(silent))?.authTime, Math.floor(twoHoursAgo / 1000) * 1000, "the upstream's auth_time");
    assert.equal(await maySetUpCodes(silent), false, 'a second factor is not set up from a two-hour-old sign-in');

    // The button as it is: the upstream asks for the password though signed in, and the new
    // sign-in may change the account.
    const again = await roundTrip(acme, button);
    assert.equal(again.signedInAgain, true, 'the upstream asked for the password');
    assert.equal(again.back.status, 200);
    assert.ok(Date.now() - (await sessionOf(acme))!.authTime < 60_000, 'a sign-in made now');
    assert.equal(await maySetUpCodes(acme), true);
  });

  it('counts the upstream\'s "mfa" as a second factor only when the operator trusts the provider to say so', async () => {
    // Two upstream people with one-time codes on there: a sign-in there is amr pwd otp mfa.
    const withCodes = async (username: string) => {
      const person = await upstream.addUser({
        username,
        password: `${username} password 1`,
        name: username,
        email: `${username}@example.com`,
        profile: { emailVerified: true },
      });
      const secret = newTotpSecret();
      const now = Date.now();
      assert.equal(await upstream.store.totp.begin(person.id, secret, now), true);
      assert.ok(await upstream.store.totp.confirm(person.id, timeStep(now) - 2, now));
      return secret;
    };
    const hedy = await withCodes('hedy');
    const ivy = await withCodes('ivy');
    const signInWithCode = async (username: string, secret: string) => {
      const { page, callback, attempt } = await continueUpstream({ acr_values: 'urn:tessera:acr:mfa' });
      await signInUpstream(page, username, `${username} password 1`);
      await reach(page, page.getByRole('heading', { name: 'Enter your code' }), 'the page "Enter your code"');
      await page.getByLabel('Code', { exact: true }).fill(totpAt(secret, Date.now()));
      await page.getByRole('button', { name: 'Continue' }).click();
      // Chromium holds a form post's redirects to its form-action: the code page allows the client's.
      await reach(page, (url) => url.href.startsWith(downstream.url), 'the way back to Acme');
      return { page, callback, attempt };
    };

    // Not trusted (the default): the upstream's mfa is dropped, so a client asking for two
    // factors is refused; Acme's session says only what it may repeat.
    const untrusted = await signInWithCode('hedy', hedy);
    await reach(untrusted.page, untrusted.page.getByText(/Approving needs a second factor/), 'the refusal to approve');
    assert.equal(await untrusted.page.getByRole('button', { name: 'Approve' }).count(), 0);
    const hedyHere = (await downstream.store.users.findByUsername('hedy'))!;
    assert.deepEqual(
      (await downstream.store.sessions.listForUser(hedyHere.id, Date.now())).map((session) => session.amr),
      [['pwd']],
    );

    const updated = await runTessera(['provider', 'update', 'upstream', '--trust-upstream-mfa'], env);
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal(JSON.parse((await runTessera(['provider', 'show', 'upstream', '--json'], env)).stdout).trust_upstream_mfa, true);
    try {
      const trusted = await signInWithCode('ivy', ivy);
      await trusted.page.getByRole('button', { name: 'Approve' }).click();
      const tokens = await redeem(trusted.callback, trusted.attempt);
      const claims = tokens.claims()!;
      assert.deepEqual(claims.amr, ['pwd', 'otp', 'mfa']);
      assert.equal(claims.acr, 'urn:tessera:acr:mfa');
    } finally {
      const reverted = await runTessera(['provider', 'update', 'upstream', '--no-trust-upstream-mfa'], env);
      assert.equal(reverted.code, 0, reverted.stderr);
    }
  });

  it('links an existing Acme account by its verified e-mail address, when the provider allows linking', async () => {
    const local = await downstream.addUser({ username: 'grace.local', email: 'grace@example.com', profile: { emailVerified: true } });
    const { page, callback, attempt } = await continueUpstream();
    await signInUpstream(page, 'grace', 'grace password 1');
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeem(callback, attempt);
    assert.equal(tokens.claims()?.sub, local.id, 'signed in as the existing account');
    const linked = await downstream.store.events.list({ type: 'identity.linked', userId: local.id, limit: 5 });
    assert.equal(linked[0]?.detail['how'], 'email');
  });

  it('never links an account that holds a console role by its e-mail address, and makes no second account', async () => {
    const admin = await downstream.addUser({ username: 'grace.admin', email: 'grace.hopper@example.com', profile: { emailVerified: true } });
    const role = await runTessera(['user', 'update', 'grace.admin', '--role', 'admin'], env);
    assert.equal(role.code, 0, role.stderr);
    // The upstream asserts the admin's verified address, through a provider that allows linking.
    await upstream.addUser({ username: 'hopper', password: 'hopper password 1', email: 'grace.hopper@example.com', profile: { emailVerified: true } });
    const page = await freshPage();
    await page.goto(`${downstream.url}/login`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(page, 'hopper', 'hopper password 1');
    await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.equal(
      await page.getByRole('alert').innerText(),
      'An account with your email address already exists on Acme. Sign in with its password; to use Upstream ID instead, ask the people who run Acme.',
    );
    assert.deepEqual(await downstream.store.linkedIdentities.listForUser(admin.id), [], 'not linked');
    assert.deepEqual(
      (await downstream.store.users.list()).filter((user) => user.email === 'grace.hopper@example.com').map((user) => user.username),
      ['grace.admin'],
      'no second account',
    );
    const [event] = await failures('console_role');
    assert.equal(event?.userId, admin.id);
  });

  it('never counts the upstream\'s "mfa" for an account that holds a console role, even from a trusted provider', async () => {
    const person = await upstream.addUser({
      username: 'joan',
      password: 'joan password 1',
      name: 'Joan',
      email: 'joan@example.com',
      profile: { emailVerified: true },
    });
    const secret = newTotpSecret();
    const now = Date.now();
    assert.equal(await upstream.store.totp.begin(person.id, secret, now), true);
    assert.ok(await upstream.store.totp.confirm(person.id, timeStep(now) - 2, now));
    // Each sign-in upstream takes a code of its own time step (a code is used once), taken as
    // the code is typed: one taken before the upstream sign-in (seconds on a loaded machine)
    // could fall out of the window by the time it was entered ('That code is not right', once).
    // The first takes the current step's code and the second the next step's (the window
    // takes one step either side, RFC 6238 §5.2), so that each stays in the window for at
    // least a whole step after it is typed, and the second is never the first's step again;
    // the step before the current one had left as little as no time at all (a failure in CI).
    const signIn = async (stepsAhead: number) => {
      const page = await freshPage();
      await page.goto(`${downstream.url}/login?return_to=%2Faccount`);
      await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
      await signInUpstream(page, 'joan', 'joan password 1');
      await reach(page, page.getByRole('heading', { name: 'Enter your code' }), 'the page "Enter your code"');
      await page.getByLabel('Code', { exact: true }).fill(totpAt(secret, Date.now() + stepsAhead * 30_000));
      await page.getByRole('button', { name: 'Continue' }).click();
      await reach(page, (url) => url.href === `${downstream.url}/account`, 'the account page');
    };
    assert.equal((await runTessera(['provider', 'update', 'upstream', '--trust-upstream-mfa'], env)).code, 0);
    try {
      // The first sign-in makes her account, linked; an operator then gives it a console role.
      await signIn(0);
      const joan = (await downstream.store.users.findByUsername('joan'))!;
      assert.deepEqual(
        (await downstream.store.sessions.listForUser(joan.id, Date.now())).map((session) => session.amr),
        [['pwd', 'otp', 'mfa']],
        'without a role, the trusted mfa counts',
      );
      assert.equal((await runTessera(['user', 'update', 'joan', '--role', 'support'], env)).code, 0);
      await signIn(1);
      const amrs = (await downstream.store.sessions.listForUser(joan.id, Date.now())).map((session) => session.amr);
      assert.equal(amrs.length, 2);
      assert.ok(
        amrs.some((amr) => amr?.join(' ') === 'pwd'),
        `a console role holder's upstream sign-in is one factor here: ${JSON.stringify(amrs)}`,
      );
    } finally {
      assert.equal((await runTessera(['provider', 'update', 'upstream', '--no-trust-upstream-mfa'], env)).code, 0);
    }
  });

  it('makes no second account with an address an account here has, unverified: it is refused, not linked', async () => {
    // Linking is allowed, but an address nobody verified here proves nothing about who has the account.
    const local = await downstream.addUser({ username: 'ada.three.local', email: 'ada.three@example.com' });
    await upstream.addUser({ username: 'ada3', password: 'ada3 password 1', email: 'Ada.Three@example.com', profile: { emailVerified: true } });
    const page = await freshPage();
    await page.goto(`${downstream.url}/login`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(page, 'ada3', 'ada3 password 1');
    await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.equal(
      await page.getByRole('alert').innerText(),
      'An account with your email address already exists on Acme. Sign in with its password; to use Upstream ID instead, ask the people who run Acme.',
    );
    assert.deepEqual(
      (await downstream.store.users.list()).filter((user) => user.email?.toLowerCase() === 'ada.three@example.com').map((user) => user.id),
      [local.id],
    );
    assert.deepEqual(await downstream.store.linkedIdentities.listForUser(local.id), []);
    assert.equal(
      (await failures('email_taken')).some((event) => event.userId === local.id),
      true,
    );
  });

  it('takes line breaks, controls and bidirectional overrides out of the names the provider sends, keeping the rest', async () => {
    // The upstream Tessera says what its store holds: whatever another provider might send.
    await upstream.addUser({
      username: 'mal',
      password: 'mal password 1',
      name: 'Mal\u202Eory\n  console role: admin',
      email: 'mal@example.com',
      profile: { emailVerified: true, givenName: 'Mal\u001b[2J\u200Bory', familyName: 'Ne\u2066wton\u200D' },
    });
    const page = await freshPage();
    await page.goto(`${downstream.url}/login?return_to=%2Faccount`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(page, 'mal', 'mal password 1');
    await reach(page, (url) => url.href === `${downstream.url}/account`, 'the account page');
    const mal = (await downstream.store.users.findByUsername('mal'))!;
    assert.deepEqual([mal.name, mal.givenName, mal.familyName], ['Malory   console role: admin', 'Mal[2Jory', 'Newton\u200D']);
    const shown = await runTessera(['user', 'show', 'mal'], env);
    assert.match(shown.stdout, /^ {2}name: Malory {3}console role: admin$/m);
    assert.equal(shown.stdout.split('\n').filter((line) => line.includes('console role')).length, 2, 'her name, and her (absent) role');
  });

  it("refuses to link without the operator's permission, and makes no second account", async () => {
    const updated = await runTessera(['provider', 'update', 'upstream', '--no-allow-linking'], env);
    assert.equal(updated.code, 0, updated.stderr);
    try {
      const local = await downstream.addUser({ username: 'una.local', email: 'ada.two@example.com', profile: { emailVerified: true } });
      await upstream.addUser({ username: 'ada2', password: 'ada2 password 1', email: 'ada.two@example.com', profile: { emailVerified: true } });
      const page = await freshPage();
      await page.goto(`${downstream.url}/login`);
      await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
      await signInUpstream(page, 'ada2', 'ada2 password 1');
      await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
      assert.equal(
        await page.getByRole('alert').innerText(),
        'An account with your email address already exists on Acme. Sign in with its password; to use Upstream ID instead, ask the people who run Acme.',
      );
      assert.equal((await downstream.store.users.list()).filter((user) => user.email === 'ada.two@example.com').length, 1);
      assert.equal((await failures('email_taken')).filter((event) => event.userId === local.id).length, 1);
    } finally {
      await runTessera(['provider', 'update', 'upstream', '--allow-linking'], env);
    }
  });

  it('refuses an e-mail address outside the allowed domains, with a signin.failed event and no user made', async () => {
    const page = await freshPage();
    await page.goto(`${downstream.url}/login`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(page, 'eve', 'eve password 1');
    await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.equal(
      await page.getByRole('alert').innerText(),
      'The email address of your Upstream ID account is not one Acme accepts. Sign in with an account in an allowed domain.',
    );
    assert.equal(await downstream.store.users.findByUsername('eve'), null);
    const [event] = await failures('domain_not_allowed');
    assert.equal(event?.detail['provider'], 'upstream');
    // An unverified address in an allowed domain proves nothing either.
    const other = await freshPage();
    await other.goto(`${downstream.url}/login`);
    await other.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(other, 'unverified', 'unverified password 1');
    await reach(other, other.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.equal(await downstream.store.users.findByUsername('una@example.com'), null);
    assert.equal((await failures('domain_not_allowed')).length, 2);
  });

  it('refuses an answer that did not start in this browser (login CSRF), and one whose state was used', async () => {
    const visitor = new FormBrowser(downstream.url);
    const forged = await visitor.request(`/login/upstream/upstream/callback?code=stolen&state=${oidc.randomState()}&iss=${encodeURIComponent(upstream.url)}`);
    assert.equal(forged.status, 400);
    assert.match(forged.html, /This sign-in did not start in this browser/);
    assert.equal((await failures('state_mismatch')).length >= 1, true);
    // With the browser's state, but the sign-in under way already used.
    const started = await visitor.request('/login/upstream/upstream?return_to=%2Faccount');
    assert.equal(started.status, 303);
    const state = new URL(started.location!).searchParams.get('state')!;
    const used = await downstream.store.upstreamLogins.consume(await import('../src/core/crypto.ts').then(({ hashSecret }) => hashSecret(state)), Date.now());
    assert.ok(used, 'the sign-in under way was stored by the hash of its state');
    const replay = await visitor.request(`/login/upstream/upstream/callback?code=x&state=${state}`);
    assert.equal(replay.status, 400);
    assert.match(replay.html, /This sign-in took too long or was already finished/);
  });

  it('refuses when the provider answers with an error (the person cancelled there)', async () => {
    const page = await freshPage();
    // The upstream's authorization endpoint answers access_denied at once, as a cancelled
    // sign-in does. (Chromium routes only the first request of a redirect chain: the way out
    // is caught at Acme, the redirect upstream read, and the provider's answer sent instead.)
    await upstreamBound(page, (upstreamUrl) => {
      const back = new URL(upstreamUrl.searchParams.get('redirect_uri')!);
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('state', upstreamUrl.searchParams.get('state')!);
      back.searchParams.set('iss', upstream.url);
      return back;
    });
    await page.goto(`${downstream.url}/login`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.equal(await page.getByRole('alert').innerText(), 'Upstream ID did not sign you in. If you cancelled, that is fine: start again when you are ready.');
    const [event] = await failures('upstream_error');
    assert.equal(event?.detail['upstream'], 'access_denied');
  });

  it('refuses an ID token whose nonce is not the one sent', async () => {
    const page = await freshPage();
    // The request is changed on its way upstream: the ID token comes back with another nonce.
    await upstreamBound(page, (upstreamUrl) => {
      upstreamUrl.searchParams.set('nonce', 'not-the-nonce-sent');
      return upstreamUrl;
    });
    await page.goto(`${downstream.url}/login`);
    await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
    await signInUpstream(page, 'ada', 'ada password 1');
    await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
    assert.match(await page.getByRole('alert').innerText(), /^The answer from Upstream ID could not be verified/);
    const [event] = await failures('invalid_response');
    assert.match(String(event?.detail['upstream']), /nonce/);
  });

  it('refuses an ID token from another issuer than the provider added (a mix-up)', async () => {
    // A look-alike provider: its metadata names itself the issuer, but its endpoints are the upstream's.
    const metadata = (await (await fetch(`${upstream.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    const { server: lookalike, port } = await listenOnFreePort(
      createServer((request, response) => {
        if (request.url === '/.well-known/openid-configuration') {
          response.setHeader('content-type', 'application/json');
          response.end(JSON.stringify({ ...metadata, issuer: `http://127.0.0.1:${port}`, authorization_response_iss_parameter_supported: false }));
        } else {
          response.statusCode = 404;
          response.end();
        }
      }),
    );
    try {
      const added = await runTessera(
        [
          'provider',
          'add',
          'oidc',
          '--id',
          'mixup',
          '--name',
          'Lookalike',
          '--issuer',
          `http://127.0.0.1:${port}`,
          '--client-id',
          upstreamClient.clientId,
          '--client-secret-stdin',
        ],
        env,
        upstreamClient.clientSecret,
      );
      assert.equal(added.code, 0, added.stderr);
      const page = await freshPage();
      // Without the authorization response's iss (RFC 9207), the ID token's own iss is what gives it away.
      const sent = downstreamBound(page, (callback) => {
        callback.searchParams.delete('iss');
        return callback;
      });
      await page.goto(`${downstream.url}/login`);
      await page.getByRole('link', { name: 'Continue with Lookalike' }).click();
      await signInUpstream(page, 'ada', 'ada password 1');
      const callback = await within(sent, "the upstream's answer");
      assert.ok(
        callback.href.startsWith(callbackOf('mixup')) && callback.searchParams.get('iss') === upstream.url,
        'the upstream named itself, and that was taken out',
      );
      await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
      assert.match(await page.getByRole('alert').innerText(), /^The answer from Lookalike could not be verified/);
      const event = (await failures('invalid_response')).find((candidate) => candidate.detail['provider'] === 'mixup');
      assert.match(String(event?.detail['upstream']), /iss/);
    } finally {
      await runTessera(['provider', 'remove', 'mixup'], env);
      await closeServer(lookalike);
    }
  });

  it('says so when the provider does not answer', async () => {
    const { server: closed, port } = await listenOnFreePort();
    await closeServer(closed);
    const added = await runTessera(
      ['provider', 'add', 'oidc', '--id', 'down', '--name', 'Down ID', '--issuer', `http://127.0.0.1:${port}`, '--client-id', 'x'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    try {
      const visitor = new FormBrowser(downstream.url);
      const page = await visitor.request('/login/upstream/down?return_to=%2Faccount');
      assert.equal(page.status, 503);
      assert.match(page.html, /Down ID is not answering right now\. Try again in a few minutes\./);
      assert.doesNotMatch(page.html, /ECONNREFUSED|at .*\.ts/);
      // The audit trail says what to fix: the URL and the reason, not fetch's "fetch failed".
      const event = (await failures('unavailable')).find((candidate) => candidate.detail['provider'] === 'down');
      assert.equal(
        event?.detail['upstream'],
        `cannot reach http://127.0.0.1:${port}/.well-known/openid-configuration: connection refused: nothing listens there (ECONNREFUSED)`,
      );
    } finally {
      await runTessera(['provider', 'remove', 'down'], env);
    }
  });

  it('refuses a token answer larger than 1 MiB, reading no more of it, with a page saying the answer did not hold up', async () => {
    // A provider whose token endpoint answers 30 MB of JSON, as the attack run's did.
    let sent = 0;
    const { server: huge, port } = await listenOnFreePort(
      createServer((request, response) => {
        const issuer = `http://127.0.0.1:${port}`;
        const url = new URL(request.url!, issuer);
        response.setHeader('content-type', 'application/json');
        if (url.pathname === '/.well-known/openid-configuration') {
          response.end(
            JSON.stringify({
              issuer,
              authorization_endpoint: `${issuer}/authorize`,
              token_endpoint: `${issuer}/token`,
              jwks_uri: `${issuer}/jwks`,
              response_types_supported: ['code'],
              subject_types_supported: ['public'],
              id_token_signing_alg_values_supported: ['RS256'],
            }),
          );
        } else if (url.pathname === '/token') {
          const chunk = `"${'a'.repeat(64 * 1024)}",`;
          const more = () => {
            while (sent < 30 * 1024 * 1024) {
              sent += chunk.length;
              if (!response.write(sent === chunk.length ? `{"padding":[${chunk}` : chunk)) return void response.once('drain', more);
            }
            response.end('"x"],"access_token":"x","token_type":"Bearer"}');
          };
          response.on('error', () => {});
          response.socket?.on('error', () => {});
          more();
        } else {
          response.statusCode = 404;
          response.end();
        }
      }),
    );
    const added = await runTessera(
      ['provider', 'add', 'oidc', '--id', 'huge', '--name', 'Huge ID', '--issuer', `http://127.0.0.1:${port}`, '--client-id', 'acme'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    try {
      const visitor = new FormBrowser(downstream.url);
      const started = await visitor.request('/login/upstream/huge?return_to=%2Faccount');
      assert.equal(started.status, 303);
      // The provider signs the person in at once and sends them back with a code.
      const authorize = new URL(started.location!);
      const back = new URL(authorize.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', 'a-code');
      back.searchParams.set('state', authorize.searchParams.get('state')!);
      const page = await visitor.request(back.href);
      assert.equal(page.status, 502);
      assert.match(page.html, /The answer from Huge ID could not be verified, so you were not signed in\./);
      assert.ok(sent < 30 * 1024 * 1024, `the provider was stopped after ${sent} bytes`);
      const event = (await failures('invalid_response')).find((candidate) => candidate.detail['provider'] === 'huge');
      assert.match(String(event?.detail['upstream']), /larger than 1048576 bytes/);
    } finally {
      await runTessera(['provider', 'remove', 'huge'], env);
      huge.closeAllConnections();
      await closeServer(huge);
    }
  });

  it("goes straight to the provider that is the only way in, and to the one a login_hint's domain names", async () => {
    const visitor = new FormBrowser(downstream.url);
    const before = await visitor.request('/login');
    assert.equal(before.status, 200);
    assert.match(before.html, /Continue with Upstream ID/);
    assert.match(before.html, /name="password"/);
    assert.equal((await runTessera(['provider', 'update', 'upstream', '--only'], env)).code, 0);
    try {
      const only = await visitor.request('/login?return_to=%2Faccount');
      assert.equal(only.status, 303);
      assert.equal(only.location, '/login/upstream/upstream?return_to=%2Faccount');
      const onward = await visitor.request(only.location!);
      assert.ok(onward.location?.startsWith(`${upstream.url}/oauth/authorize?`), String(onward.location));
      // Nor does the password form's endpoint take a password any more: no sign-in, sent on.
      const local = await downstream.addUser({ username: 'local.only', password: 'local only password' });
      // The form's double-submitted CSRF token, as a page left open from before would post it.
      const csrf = oidc.randomState();
      visitor.cookies.set('tessera_csrf', csrf);
      const posted = await visitor.request('/login', { form: { username: local.username, password: local.password, return_to: '/account', csrf_token: csrf } });
      assert.equal(posted.status, 303, posted.html.slice(0, 200));
      assert.equal(posted.location, '/login/upstream/upstream?return_to=%2Faccount');
      assert.equal(visitor.cookies.has('tessera_session'), false);
    } finally {
      assert.equal((await runTessera(['provider', 'update', 'upstream', '--no-only', '--domain', 'example.com'], env)).code, 0);
    }
    const attempt = await authorize({ login_hint: 'someone@Example.com' });
    const routed = await visitor.request(attempt.url.href);
    assert.equal(routed.status, 303);
    const start = await visitor.request(routed.location!);
    assert.equal(new URL(start.location!).searchParams.get('login_hint'), 'someone@Example.com');
    const byDomain = await visitor.request((await authorize({ domain_hint: 'example.com' })).url.href);
    assert.equal(byDomain.status, 303, 'domain_hint names the provider as an address would');
    assert.match(byDomain.location!, /^\/login\/upstream\/upstream\?/);
    const elsewhere = await visitor.request((await authorize({ login_hint: 'someone@elsewhere.org' })).url.href);
    assert.equal(elsewhere.status, 200, "an address in no provider's domains signs in here");
  });

  it('refuses a disabled Acme user through the provider', async () => {
    assert.equal((await runTessera(['user', 'disable', 'ada'], env)).code, 0);
    try {
      const page = await freshPage();
      await page.goto(`${downstream.url}/login`);
      await page.getByRole('link', { name: 'Continue with Upstream ID' }).click();
      await signInUpstream(page, 'ada', 'ada password 1');
      await reach(page, page.getByRole('heading', { name: 'You are not signed in' }), 'the page "You are not signed in"');
      assert.equal(await page.getByRole('alert').innerText(), 'Your Acme account is disabled. Ask the people who run Acme.');
    } finally {
      await runTessera(['user', 'enable', 'ada'], env);
    }
  });
});

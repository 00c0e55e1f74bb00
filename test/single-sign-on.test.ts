/**
 * Single sign-on as an app sees it, through openid-client: remembered consent, prompt and
 * max_age (OIDC Core §3.1.2.1), RP-Initiated Logout 1.0 and Back-Channel Logout 1.0, and
 * the person's browser sessions on /account. The server runs on a manual clock that only
 * moves forward from now, so its tokens are never too old for openid-client's clock.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { assertApprovalPage, assertSignInPage, FormBrowser, type Page } from './helpers/browser.ts';
import { runTessera, tessera } from './helpers/cli.ts';
import { BrowserAt, startDevice, text } from './helpers/device.ts';
import { appConfig, authorizationAttempt } from './helpers/fixtures.ts';
import { basic, closeAll, closeServer, listenOnFreePort, postForm, REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const AFTER_LOGOUT = 'http://127.0.0.1:9/signed-out';

/** A test HTTP listener standing in for a client's back-channel logout endpoint. */
async function logoutReceiver(answers: number[] = []) {
  const received: string[] = [];
  const waiting: Array<() => void> = [];
  let calls = 0;
  const { server, port } = await listenOnFreePort(
    createServer((request: IncomingMessage, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        calls += 1;
        const status = answers.shift() ?? 200;
        if (status === 200) {
          assert.equal(request.headers['content-type'], 'application/x-www-form-urlencoded');
          received.push(new URLSearchParams(body).get('logout_token') ?? '');
          for (const wake of waiting.splice(0)) wake();
        }
        response.writeHead(status).end();
      });
    }),
  );
  return {
    uri: `http://127.0.0.1:${port}/backchannel-logout`,
    received,
    calls: () => calls,
    /** Resolves once `count` logout tokens have arrived; rejects if they have not after a while. */
    next(count = received.length + 1): Promise<string[]> {
      const arrived = (async () => {
        while (received.length < count) await new Promise<void>((resolve) => waiting.push(resolve));
        return received;
      })();
      return within(arrived, `${count} logout token(s) (${received.length} so far)`);
    },
    close: () => closeServer(server),
  };
}

describe('single sign-on through openid-client', () => {
  let clock: ManualClock;
  let server: TestServer;
  let receiver: Awaited<ReturnType<typeof logoutReceiver>>;

  before(async () => {
    clock = new ManualClock(Date.now());
    receiver = await logoutReceiver();
    server = await startTestServer({ clock, env: { TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS: '10', TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT: '2' } });
  });
  after(() => closeAll(server, receiver));

  async function app(options: Parameters<TestServer['addClient']>[0] = {}) {
    const client = await server.addClient({ postLogoutRedirectUris: [AFTER_LOGOUT], scopes: ['openid', 'profile', 'email'], ...options });
    return { client, config: await appConfig(server, client) };
  }

  async function start(config: oidc.Configuration, scope: string, extra: Record<string, string> = {}) {
    const { url, verifier, state, nonce } = await authorizationAttempt(config, { scope, ...extra });
    return { url, verifier, state, nonce, maxAge: extra['max_age'] === undefined ? undefined : Number(extra['max_age']) };
  }

  /** The redirect back to the client, asserted to be one. */
  function callbackOf(page: Page): URL {
    assert.equal(page.status, 303, `expected the redirect to the client, got ${page.status} ${page.html.slice(0, 300)}`);
    assert.ok(page.location?.startsWith(`${REDIRECT_URI}?`), `redirected to ${page.location}`);
    return new URL(page.location!);
  }

  /** Redeems the callback with openid-client, which validates the ID token (nonce, state, max_age). */
  async function redeem(config: oidc.Configuration, attempt: Awaited<ReturnType<typeof start>>, callback: URL) {
    return oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: attempt.verifier,
      expectedState: attempt.state,
      expectedNonce: attempt.nonce,
      idTokenExpected: true,
      ...(attempt.maxAge === undefined ? {} : { maxAge: attempt.maxAge }),
    });
  }

  async function signedIn(user: TestUser, browser = new FormBrowser(server.url)): Promise<FormBrowser> {
    const page = await browser.signIn(await browser.follow(await browser.request('/account')), user);
    assert.equal(page.status, 200);
    return browser;
  }

  const isSignedOut = async (browser: FormBrowser) => (await browser.request('/account')).location === '/login?return_to=%2Faccount';

  describe('remembered consent', () => {
    it('sends a second sign-in to the same app straight back with a code, and keeps one grant', async () => {
      const { client, config } = await app({ name: 'Recipe Box' });
      const user = await server.addUser();
      const browser = new FormBrowser(server.url);
      const first = await start(config, 'openid profile');
      const approval = await browser.signIn(await browser.follow(await browser.request(first.url.href)), user);
      assertApprovalPage(approval, '/oauth/authorize/decision');
      await redeem(config, first, callbackOf(await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' })));

      const second = await start(config, 'openid profile');
      const tokens = await redeem(config, second, callbackOf(await browser.request(second.url.href)));
      assert.equal(tokens.claims()?.sub, user.id);
      // A new browser, signing in again: no approval page either.
      const other = new FormBrowser(server.url);
      const third = await start(config, 'openid');
      await redeem(config, third, callbackOf(await other.signIn(await other.follow(await other.request(third.url.href)), user)));

      const grants = await server.store.grants.listForUser(user.id);
      assert.deepEqual(
        grants.map((grant) => [grant.clientId, grant.scope]),
        [[client.clientId, ['openid', 'profile']]],
        'one grant, not one a sign-in',
      );
    });

    it('asks only for the one scope more, and the approval grows to cover both', async () => {
      const { client, config } = await app({ name: 'Recipe Box' });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const first = await start(config, 'openid profile');
      await redeem(
        config,
        first,
        callbackOf(await browser.submit(await browser.request(first.url.href), '/oauth/authorize/decision', { decision: 'approve' })),
      );

      const more = await start(config, 'openid profile email');
      const page = await browser.request(more.url.href);
      assertApprovalPage(page, '/oauth/authorize/decision');
      assert.match(text(page), /Recipe Box also wants to: See your email address Deny Approve/);
      assert.doesNotMatch(text(page), /See your name/, 'what was approved before is not asked again');
      const tokens = await redeem(config, more, callbackOf(await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' })));
      assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.id))['email'], `${user.username}@example.com`);

      const again = await start(config, 'openid email profile');
      await redeem(config, again, callbackOf(await browser.request(again.url.href)));
      const grants = await server.store.grants.listForUser(user.id);
      assert.equal(grants.length, 1);
      assert.deepEqual([...grants[0]!.scope].sort(), ['email', 'openid', 'profile']);
      assert.equal(grants[0]!.clientId, client.clientId);
    });

    it('grows the approval to an API registered after it: the page asks for the API alone, and its tokens work and refresh', async () => {
      const { client, config } = await app({
        name: 'Photo Printer',
        scopes: ['openid', 'offline_access', 'prints:order'],
        grantTypes: ['authorization_code', 'refresh_token'],
      });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const first = await start(config, 'openid offline_access');
      await redeem(
        config,
        first,
        callbackOf(await browser.submit(await browser.request(first.url.href), '/oauth/authorize/decision', { decision: 'approve' })),
      );
      // The API is registered after the approval (the command dates it by the real clock,
      // which the server's has not passed yet), and asked for a minute later.
      const added = await runTessera(
        ['resource', 'add', '--identifier', 'https://prints.example', '--name', 'Print Shop', '--scope', 'prints:order=Order prints'],
        { TESSERA_DATABASE: server.config.database },
      );
      assert.equal(added.code, 0, added.stderr);
      clock.advance(60_000);
      const more = await start(config, 'openid offline_access prints:order');
      const page = await browser.request(more.url.href);
      assertApprovalPage(page, '/oauth/authorize/decision');
      assert.match(text(page), /Photo Printer also wants to: Print Shop https:\/\/prints\.example Order prints Deny Approve/);
      const tokens = await redeem(config, more, callbackOf(await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' })));
      assert.equal(decodeJwt(tokens.access_token).aud, 'https://prints.example');
      const introspected = await postForm(
        `${server.url}/oauth/introspect`,
        { token: tokens.access_token },
        { authorization: basic(client.clientId, client.clientSecret) },
      );
      assert.equal(introspected.body['active'], true, JSON.stringify(introspected.body));
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      assert.equal(decodeJwt(refreshed.access_token).aud, 'https://prints.example');
    });

    it('always asks with prompt=consent, showing everything asked for', async () => {
      const { config } = await app({ name: 'Recipe Box' });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const first = await start(config, 'openid profile');
      await browser.submit(await browser.request(first.url.href), '/oauth/authorize/decision', { decision: 'approve' });
      const asked = await start(config, 'openid profile', { prompt: 'consent' });
      const page = await browser.request(asked.url.href);
      assertApprovalPage(page, '/oauth/authorize/decision');
      assert.match(
        text(page),
        /Recipe Box will be able to: Sign you in and know who you are See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone/,
      );
    });

    it('forgets the consent when the app is revoked on /account', async () => {
      const { config } = await app({ name: 'Forgettable' });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const first = await start(config, 'openid');
      await redeem(
        config,
        first,
        callbackOf(await browser.submit(await browser.request(first.url.href), '/oauth/authorize/decision', { decision: 'approve' })),
      );
      const account = await browser.request('/account');
      const revoked = await browser.submit(account, '/account/revoke', {});
      assert.equal(revoked.location, '/account?revoked=1');
      const again = await start(config, 'openid');
      assertApprovalPage(await browser.request(again.url.href), '/oauth/authorize/decision');
    });

    it('asks a public native app every time: its redirect URI could be claimed by another app', async () => {
      const native = await server.addClient({ name: 'Pocket App', public: true, redirectUris: ['com.example.pocket:/callback'] });
      const config = await oidc.discovery(new URL(server.url), native.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
      const user = await server.addUser();
      const browser = await signedIn(user);
      for (let i = 0; i < 2; i++) {
        const attempt = oidc.buildAuthorizationUrl(config, {
          redirect_uri: 'com.example.pocket:/callback',
          scope: 'openid',
          state: 's',
          code_challenge: await oidc.calculatePKCECodeChallenge(oidc.randomPKCECodeVerifier()),
          code_challenge_method: 'S256',
        });
        const page = await browser.request(attempt.href);
        assertApprovalPage(page, '/oauth/authorize/decision');
        await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' });
      }
      assert.equal((await server.store.grants.listForUser(user.id)).length, 1, 'still one grant');
    });

    it('signs in to a first-party app without a consent page, but the device flow still asks every time', async () => {
      const { client, config } = await app({ name: 'Our Own Portal', firstParty: true });
      const user = await server.addUser();
      const browser = new FormBrowser(server.url);
      const attempt = await start(config, 'openid profile email');
      const tokens = await redeem(config, attempt, callbackOf(await browser.signIn(await browser.follow(await browser.request(attempt.url.href)), user)));
      assert.equal(tokens.claims()?.sub, user.id);

      // The device flow (RFC 8628 §5.4): the person confirms the code whatever is remembered.
      for (let i = 0; i < 2; i++) {
        const device = await startDevice(server, client, 'openid profile');
        const page = await new BrowserAt(server.url).reachApproval(device.user_code, user);
        assertApprovalPage(page, '/device/approve');
      }
    });
  });

  describe('prompt and max_age (OIDC Core §3.1.2.1)', () => {
    it('answers prompt=none with a code when signed in and approved, and login_required after sign-out', async () => {
      const { config } = await app({ name: 'Silent Checker' });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const notYet = await start(config, 'openid', { prompt: 'none' });
      const refused = callbackOf(await browser.request(notYet.url.href));
      assert.equal(refused.searchParams.get('error'), 'consent_required');

      const first = await start(config, 'openid');
      await redeem(
        config,
        first,
        callbackOf(await browser.submit(await browser.request(first.url.href), '/oauth/authorize/decision', { decision: 'approve' })),
      );
      const silent = await start(config, 'openid', { prompt: 'none' });
      const tokens = await redeem(config, silent, callbackOf(await browser.request(silent.url.href)));
      assert.equal(tokens.claims()?.sub, user.id);

      await browser.submit(await browser.request('/account'), '/logout', {});
      const after = await start(config, 'openid', { prompt: 'none' });
      const callback = callbackOf(await browser.request(after.url.href));
      assert.equal(callback.searchParams.get('error'), 'login_required');
      assert.equal(callback.searchParams.get('state'), after.state);
      assert.equal(callback.searchParams.get('code'), null);
    });

    it('asks for the password again with max_age=0, and auth_time moves', async () => {
      const { config } = await app({ name: 'Bank', firstParty: true });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const first = await start(config, 'openid');
      const before = (await redeem(config, first, callbackOf(await browser.request(first.url.href)))).claims()!;
      clock.advance(30_000);
      const strict = await start(config, 'openid', { max_age: '0' });
      const page = await browser.follow(await browser.request(strict.url.href));
      assertSignInPage(page);
      const after = (await redeem(config, strict, callbackOf(await browser.signIn(page, user)))).claims()!;
      assert.equal(after['auth_time'], (before['auth_time'] as number) + 30);
      assert.equal(after['sid'], before['sid'], 'the same person signing in again keeps the session');
    });

    it('answers select_account as login, and refuses an unknown prompt or none with another value', async () => {
      const { config } = await app({ name: 'Chooser', firstParty: true });
      const user = await server.addUser();
      const browser = await signedIn(user);
      assertSignInPage(await browser.follow(await browser.request((await start(config, 'openid', { prompt: 'select_account' })).url.href)));
      for (const prompt of ['create', 'none login']) {
        const callback = callbackOf(await browser.request((await start(config, 'openid', { prompt })).url.href));
        assert.equal(callback.searchParams.get('error'), 'invalid_request', prompt);
      }
    });
  });

  describe('RP-Initiated Logout 1.0', () => {
    async function signedInApp(options: Parameters<TestServer['addClient']>[0] = {}) {
      const { client, config } = await app({ name: 'Notes', firstParty: true, ...options });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const attempt = await start(config, 'openid');
      const tokens = await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)));
      return { client, config, user, browser, idToken: tokens.id_token! };
    }

    it('is in discovery with back-channel logout', async () => {
      const { config } = await app();
      const metadata = config.serverMetadata();
      assert.equal(metadata.end_session_endpoint, `${server.url}/oauth/logout`);
      assert.equal(metadata['backchannel_logout_supported'], true);
      assert.equal(metadata['backchannel_logout_session_supported'], true);
    });

    it('signs out with id_token_hint and lands on the registered URI with state, even with an expired hint', async () => {
      for (const wait of [0, 2 * 3600_000]) {
        const { config, browser, idToken } = await signedInApp();
        clock.advance(wait);
        const url = oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT, state: 'bye-1', ui_locales: 'fr' });
        const page = await browser.request(url.href);
        assert.equal(page.status, 303, page.html);
        assert.equal(page.location, `${AFTER_LOGOUT}?state=bye-1`);
        assert.equal(await isSignedOut(browser), true);
      }
    });

    it('accepts the same request as a form POST', async () => {
      const { client, browser, idToken } = await signedInApp();
      const page = await browser.request('/oauth/logout', {
        form: { id_token_hint: idToken, client_id: client.clientId, post_logout_redirect_uri: AFTER_LOGOUT },
      });
      assert.equal(page.location, AFTER_LOGOUT);
      assert.equal(await isSignedOut(browser), true);
    });

    it('asks before signing out without a hint, and the confirmation is protected like every form', async () => {
      const { client, browser } = await signedInApp();
      const url = `/oauth/logout?${new URLSearchParams({ client_id: client.clientId, post_logout_redirect_uri: AFTER_LOGOUT, state: 's' })}`;
      const page = await browser.request(url);
      assert.equal(page.status, 200);
      assert.match(text(page), /Sign out of Tessera\? Notes asks to sign you out\./);
      assert.equal(await isSignedOut(browser), false, 'a link alone signs nobody out');
      const form = browser.form(page, '/oauth/logout/confirm');
      const forged = await browser.request('/oauth/logout/confirm', { form: { ...form.fields, csrf_token: 'x'.repeat(43) } });
      assert.equal(forged.status, 403);
      const crossSite = await browser.request('/oauth/logout/confirm', { form: form.fields, headers: { origin: 'https://evil.example' } });
      assert.equal(crossSite.status, 403);
      assert.equal(await isSignedOut(browser), false);
      const confirmed = await browser.submit(page, '/oauth/logout/confirm', {});
      assert.equal(confirmed.location, `${AFTER_LOGOUT}?state=s`);
      assert.equal(await isSignedOut(browser), true);
    });

    it('shows the confirmation page, and signs nobody out, for a hint signed by someone else or for another issuer', async () => {
      const { client, browser, idToken } = await signedInApp();
      const { privateKey, publicKey } = await generateKeyPair('RS256');
      const claims = decodeJwt(idToken);
      const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: (await exportJWK(publicKey)).kid ?? 'k' }).sign(privateKey);
      const otherIssuer = await new SignJWT({ ...claims, iss: 'https://other.example' }).setProtectedHeader({ alg: 'RS256', typ: 'JWT' }).sign(privateKey);
      for (const hint of [forged, otherIssuer, `${idToken.slice(0, -4)}AAAA`]) {
        const page = await browser.request(`/oauth/logout?${new URLSearchParams({ id_token_hint: hint, client_id: client.clientId })}`);
        assert.equal(page.status, 200);
        assert.match(text(page), /Sign out of Tessera\?/);
        assert.equal(await isSignedOut(browser), false);
      }
    });

    it("refuses an unregistered post_logout_redirect_uri, or another client's, with an error page and no redirect", async () => {
      const { browser, idToken } = await signedInApp();
      const other = await server.addClient({ postLogoutRedirectUris: ['http://127.0.0.1:9/other-app'] });
      for (const uri of ['http://127.0.0.1:9/elsewhere', 'http://127.0.0.1:9/other-app', `${AFTER_LOGOUT}/`]) {
        const page = await browser.request(`/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: uri })}`);
        assert.equal(page.status, 400, uri);
        assert.equal(page.location, null);
        // The value received is shown, so the app's developer sees what was sent.
        assert.ok(text(page).includes(`post_logout_redirect_uri ${uri} is not registered for this client`), text(page));
      }
      const slashed = await browser.request(`/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: `${AFTER_LOGOUT}/` })}`);
      assert.match(text(slashed), /registered without the trailing slash/);
      const unslashed = await browser.request(
        `/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: 'http://127.0.0.1:9/elsewhere' })}`,
      );
      assert.doesNotMatch(text(unslashed), /trailing slash/);
      // Shown escaped, and cut short.
      const markup = await browser.request(
        `/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: `http://127.0.0.1:9/<b>bold</b>${'x'.repeat(300)}` })}`,
      );
      assert.equal(markup.status, 400);
      assert.ok(markup.html.includes('/&lt;b&gt;bold&lt;/b&gt;xxx'), markup.html);
      assert.doesNotMatch(markup.html, /<b>bold/);
      assert.doesNotMatch(markup.html, /x{250}/);
      const mismatch = await browser.request(`/oauth/logout?${new URLSearchParams({ id_token_hint: idToken, client_id: other.clientId })}`);
      assert.equal(mismatch.status, 400);
      assert.equal(await isSignedOut(browser), false);
    });
  });

  describe('Back-Channel Logout 1.0', () => {
    it('posts a logout token that jose verifies against the JWKS, with the sid of the ID token, when the person signs out', async () => {
      const { client, config } = await app({ name: 'Wiki', firstParty: true, backchannelLogoutUri: receiver.uri });
      const quiet = await app({ name: 'No Back Channel', firstParty: true });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const attempt = await start(config, 'openid');
      const idToken = (await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)))).claims()!;
      const other = await start(quiet.config, 'openid');
      await redeem(quiet.config, other, callbackOf(await browser.request(other.url.href)));
      assert.equal(typeof idToken['sid'], 'string');
      const before = receiver.received.length;

      const signOut = await browser.submit(await browser.request('/account'), '/logout', {});
      assert.equal(signOut.status, 303);
      const [token] = (await receiver.next(before + 1)).slice(before);
      const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(token!, jwks, {
        issuer: server.url,
        audience: client.clientId,
        typ: 'logout+jwt',
        currentDate: new Date(clock.now()),
        requiredClaims: ['iat', 'jti', 'sid', 'sub', 'events'],
      });
      assert.equal(protectedHeader.typ, 'logout+jwt');
      assert.equal(payload.sub, user.id);
      assert.equal(payload['sid'], idToken['sid']);
      assert.deepEqual(payload['events'], { 'http://schemas.openid.net/event/backchannel-logout': {} });
      assert.equal(payload['nonce'], undefined);
    });

    it('tries again when the client answers 503, and a client that never answers does not hold up the sign-out', async (t) => {
      const flaky = await logoutReceiver([503, 503]);
      t.after(() => flaky.close());
      const silent = await listenOnFreePort(createServer(() => {}));
      t.after(() => closeServer(silent.server));
      const first = await app({ name: 'Flaky', firstParty: true, backchannelLogoutUri: flaky.uri });
      const second = await app({ name: 'Silent', firstParty: true, backchannelLogoutUri: `http://127.0.0.1:${silent.port}/logout` });
      const user = await server.addUser();
      const browser = await signedIn(user);
      for (const { config } of [first, second]) {
        const attempt = await start(config, 'openid');
        await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)));
      }
      const started = performance.now();
      const signOut = await browser.submit(await browser.request('/account'), '/logout', {});
      assert.equal(signOut.status, 303);
      assert.ok(performance.now() - started < 1000, 'the sign-out answered before the silent client timed out');
      await flaky.next(1);
      assert.equal(flaky.calls(), 3, 'two 503s, then delivered');
    });
  });

  describe('Back-Channel Logout 1.0 when an account changes', () => {
    it('tells the app of the other browser when the person changes their password, and of every browser when an operator disables them', async () => {
      const { client, config } = await app({ name: 'Ledger', firstParty: true, backchannelLogoutUri: receiver.uri });
      const user = await server.addUser();
      const laptop = await signedIn(user, new FormBrowser(server.url));
      const phone = await signedIn(user, new FormBrowser(server.url));
      const [laptopSid, phoneSid] = await Promise.all(
        [laptop, phone].map(async (browser) => {
          const attempt = await start(config, 'openid');
          return (await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)))).claims()!['sid'] as string;
        }),
      );
      const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
      const verified = async (token: string, currentDate: Date) =>
        (
          await jwtVerify(token, jwks, {
            issuer: server.url,
            audience: client.clientId,
            typ: 'logout+jwt',
            currentDate,
            requiredClaims: ['sid', 'sub', 'events'],
          })
        ).payload;

      // The laptop changes the password: the phone is signed out, and its sign-in's app told.
      let before = receiver.received.length;
      const changed = await laptop.submit(await laptop.request('/account'), '/account/password', {
        current_password: user.password,
        new_password: 'a brand new password',
      });
      assert.equal(changed.status, 303);
      const [forPhone] = (await receiver.next(before + 1)).slice(before);
      assert.deepEqual(
        [(await verified(forPhone!, new Date(clock.now())))['sid'], (await verified(forPhone!, new Date(clock.now()))).sub],
        [phoneSid, user.id],
      );
      assert.equal(await isSignedOut(phone), true);
      assert.equal(await isSignedOut(laptop), false, 'the browser that changed it stays signed in');

      // The operator disables the account from the command line (the server's settings, its issuer).
      before = receiver.received.length;
      const disabled = await runTessera(['user', 'disable', user.username], { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
      assert.equal(disabled.code, 0, disabled.stderr);
      assert.equal(
        disabled.stdout,
        `Disabled ${user.username}: their sessions have ended and their tokens no longer work.\nSent a logout token to the app they were signed in to.\n`,
      );
      assert.equal(receiver.received.length, before + 1, 'delivered before the command exited');
      const forLaptop = receiver.received[before]!;
      // Signed by the command with the server's keys, on the machine's own clock.
      assert.deepEqual([(await verified(forLaptop, new Date()))['sid'], decodeJwt(forLaptop).sub], [laptopSid, user.id]);
      assert.equal(await isSignedOut(laptop), true);
      assert.equal((await runTessera(['user', 'enable', user.username], { TESSERA_DATABASE: server.config.database })).stdout, `Enabled ${user.username}.\n`);
    });

    it('keeps the tessera command running until a retried logout token is delivered (user set-password, as its own process)', async (t) => {
      const flaky = await logoutReceiver([503]);
      t.after(() => flaky.close());
      const { config } = await app({ name: 'Flaky Ledger', firstParty: true, backchannelLogoutUri: flaky.uri });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const attempt = await start(config, 'openid');
      const sid = (await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)))).claims()!['sid'];
      // The retry waits on a timer that does not hold a process open: the command must.
      const result = await tessera(
        ['user', 'set-password', user.username, '--password-stdin'],
        {
          TESSERA_DATABASE: server.config.database,
          TESSERA_ISSUER: server.url,
          TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS: '300',
        },
        'another long password\n',
      );
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `Set the password of ${user.username}; their sessions have ended.\nSent a logout token to the app they were signed in to.\n`);
      assert.equal(flaky.calls(), 2, 'a 503, then delivered');
      assert.equal(decodeJwt(flaky.received[0]!)['sid'], sid);
      assert.equal(await isSignedOut(browser), true);
    });
  });

  describe('the `logout` event, on each road out of a session', () => {
    /** The person's `logout` events, as the audit trail holds them. */
    async function logouts(userId: string) {
      const events = await server.store.events.list({ userId, limit: 50 });
      return events.filter((event) => event.type === 'logout').map((event) => ({ clientId: event.clientId, ...event.detail }));
    }

    it('records the person signing out on the sign-out button (by user)', async () => {
      const user = await server.addUser();
      const browser = await signedIn(user);
      assert.deepEqual(await logouts(user.id), []);
      await browser.submit(await browser.request('/account'), '/logout', {});
      assert.equal(await isSignedOut(browser), true);
      assert.deepEqual(await logouts(user.id), [{ clientId: null, by: 'user', sessions_ended: 1 }]);
    });

    it('records an app signing the person out at the end-session endpoint (by rp), naming the app, whether asked first or not', async () => {
      const { client, config } = await app({ name: 'Notes', firstParty: true });
      const user = await server.addUser();
      const browser = await signedIn(user);
      const attempt = await start(config, 'openid');
      const idToken = (await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)))).id_token!;
      await browser.request(oidc.buildEndSessionUrl(config, { id_token_hint: idToken, post_logout_redirect_uri: AFTER_LOGOUT }).href);
      assert.equal(await isSignedOut(browser), true);
      assert.deepEqual(await logouts(user.id), [{ clientId: client.clientId, by: 'rp', sessions_ended: 1 }]);

      await signedIn(user, browser);
      const page = await browser.request(`/oauth/logout?${new URLSearchParams({ client_id: client.clientId })}`);
      await browser.submit(page, '/oauth/logout/confirm', {});
      assert.equal(await isSignedOut(browser), true);
      assert.deepEqual(await logouts(user.id), [
        { clientId: client.clientId, by: 'rp', sessions_ended: 1 },
        { clientId: client.clientId, by: 'rp', sessions_ended: 1 },
      ]);
    });

    it('records "Sign out everywhere" on /account once, with the number of sessions it ended (by everywhere)', async () => {
      const user = await server.addUser();
      const laptop = await signedIn(user, new FormBrowser(server.url));
      const phone = await signedIn(user, new FormBrowser(server.url));
      await laptop.submit(await laptop.request('/account'), '/account/sign-out-everywhere', {});
      assert.equal(await isSignedOut(phone), true);
      assert.deepEqual(await logouts(user.id), [{ clientId: null, by: 'everywhere', sessions_ended: 2 }]);
    });
  });

  describe('browser sessions on /account', () => {
    it('lists the signed-in browsers, and "Sign out everywhere" ends a second browser\'s session and tells the apps', async () => {
      const { client, config } = await app({ name: 'Mail', firstParty: true, backchannelLogoutUri: receiver.uri });
      const user = await server.addUser();
      const laptop = await signedIn(user, new FormBrowser(server.url));
      const phone = await signedIn(user, new FormBrowser(server.url));
      const sids: string[] = [];
      for (const browser of [laptop, phone]) {
        const attempt = await start(config, 'openid');
        sids.push((await redeem(config, attempt, callbackOf(await browser.request(attempt.url.href)))).claims()!['sid'] as string);
      }
      const account = await laptop.request('/account');
      const listed = [...account.html.matchAll(/<li>([^<]*), from 127\.0\.0\.1, signed in .*?<\/li>/g)];
      assert.equal(listed.length, 2, account.html);
      assert.equal((account.html.match(/\(this browser\)/g) ?? []).length, 1);

      const before = receiver.received.length;
      const done = await laptop.submit(account, '/account/sign-out-everywhere', {});
      assert.equal(done.status, 303);
      assert.equal(await isSignedOut(phone), true, 'the other browser is signed out');
      assert.equal(await isSignedOut(laptop), true);
      const tokens = (await receiver.next(before + 2)).slice(before).map((token) => decodeJwt(token));
      assert.deepEqual(tokens.map((token) => token['sid']).sort(), [...sids].sort());
      assert.ok(tokens.every((token) => token.aud === client.clientId));
    });
  });
});

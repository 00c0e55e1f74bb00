/**
 * Signing in as a person sees it: when the password is asked for (prompt and max_age, OIDC
 * Core §3.1.2.1), where the browser goes after it, and how long a session lasts and ends.
 * The server runs on a manual clock, so tokens are read with jose at the server's time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { assertApprovalPage, assertSignInPage, FormBrowser, type Page } from './helpers/browser.ts';
import { text } from './helpers/device.ts';
import { basic, postForm, REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

const SESSION_TTL = 3600;

describe('signing in: prompt, max_age, return_to, sign-out and the session', () => {
  let clock: ManualClock, server: TestServer, client: TestClient, user: TestUser;

  before(async () => {
    clock = new ManualClock(Date.now());
    ({ server, client, user } = await startWithApp({
      server: { clock, env: { TESSERA_SESSION_TTL: String(SESSION_TTL) } },
      client: { name: 'Calendar' },
      user: { username: 'ada', name: 'Ada Lovelace' },
    }));
  });
  after(() => server.close());

  /** An authorization request from the client, with extra parameters. */
  async function authorizationRequest(extra: Record<string, string> = {}): Promise<{ url: string; verifier: string }> {
    const verifier = oidc.randomPKCECodeVerifier();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile',
      state: 'state-1',
      nonce: 'nonce-1',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      ...extra,
    });
    return { url: `/oauth/authorize?${query}`, verifier };
  }

  /** A browser that signed in on the sign-in page (at the clock's time now). */
  async function signedInBrowser(who: TestUser = user): Promise<FormBrowser> {
    const browser = new FormBrowser(server.url);
    const account = await browser.signIn(await browser.follow(await browser.request('/account')), who);
    assert.equal(account.status, 200, account.html);
    return browser;
  }

  /** The redirect to the client: where the browser was sent, which must be the registered redirect_uri. */
  function callbackOf(page: Page): URL {
    assert.equal(page.status, 303, page.html);
    assert.ok(page.location?.startsWith(`${REDIRECT_URI}?`), `redirected to ${page.location}`);
    return new URL(page.location!);
  }

  /** Redeems a code as the client, and verifies the ID token at the server's time. */
  async function idTokenFor(callback: URL, verifier: string) {
    const result = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code: callback.searchParams.get('code') ?? '',
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
      },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.equal(result.status, 200, JSON.stringify(result.body));
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload } = await jwtVerify(result.body['id_token'] as string, jwks, {
      issuer: server.url,
      audience: client.clientId,
      currentDate: new Date(clock.now()),
    });
    return payload;
  }

  const signedOut = async (browser: FormBrowser) => (await browser.request('/account')).location === '/login?return_to=%2Faccount';

  it('answers prompt=none for a signed-in user who has not approved the app with consent_required, and issues no code', async () => {
    const browser = await signedInBrowser();
    const callback = callbackOf(await browser.request((await authorizationRequest({ prompt: 'none' })).url));
    assert.equal(callback.searchParams.get('error'), 'consent_required');
    assert.equal(callback.searchParams.get('state'), 'state-1');
    assert.equal(callback.searchParams.get('code'), null);
  });

  it('asks a signed-in user for the password again with prompt=login, and the ID token carries the new auth_time', async () => {
    const browser = await signedInBrowser();
    clock.advance(10_000);
    const { url, verifier } = await authorizationRequest({ prompt: 'login' });
    const signInPage = await browser.follow(await browser.request(url));
    assertSignInPage(signInPage);
    const approval = await browser.signIn(signInPage, user);
    assertApprovalPage(approval, '/oauth/authorize/decision');
    const callback = callbackOf(await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' }));
    assert.equal((await idTokenFor(callback, verifier))['auth_time'], Math.floor(clock.now() / 1000));
  });

  it('asks for the password again once max_age seconds have passed since sign-in, and not before', async () => {
    const browser = await signedInBrowser();
    const signedInAt = Math.floor(clock.now() / 1000);
    clock.advance(60_000);
    const recent = await authorizationRequest({ max_age: '120', prompt: 'consent' });
    const approval = await browser.follow(await browser.request(recent.url));
    assertApprovalPage(approval, '/oauth/authorize/decision');
    const callback = callbackOf(await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' }));
    // OIDC Core §3.1.2.1: with max_age, the ID token must say when the user signed in.
    assert.equal((await idTokenFor(callback, recent.verifier))['auth_time'], signedInAt);

    const tooOld = await authorizationRequest({ max_age: '30', prompt: 'consent' });
    const signInPage = await browser.follow(await browser.request(tooOld.url));
    assertSignInPage(signInPage);
    const again = await browser.signIn(signInPage, user);
    const afresh = callbackOf(await browser.submit(again, '/oauth/authorize/decision', { decision: 'approve' }));
    assert.equal((await idTokenFor(afresh, tooOld.verifier))['auth_time'], Math.floor(clock.now() / 1000));
  });

  it('asks for the password again as soon as the sign-in is more than max_age seconds old: at max_age it is still good, a second later it is not', async () => {
    const browser = await signedInBrowser();
    clock.advance(30_000);
    assertApprovalPage(
      await browser.follow(await browser.request((await authorizationRequest({ max_age: '30', prompt: 'consent' })).url)),
      '/oauth/authorize/decision',
    );
    clock.advance(1_000);
    assertSignInPage(await browser.follow(await browser.request((await authorizationRequest({ max_age: '30', prompt: 'consent' })).url)));
  });

  for (const target of [
    '//other.example/inbox',
    '/\\other.example',
    '/\t/other.example',
    '/\n/other.example',
    'https://other.example/',
    // Dot segments resolved away leave a path that is another site's address.
    '/.//other.example/inbox',
    '/a/..//other.example/inbox',
    '/%2e//other.example/inbox',
  ]) {
    it(`keeps the browser on this server after sign-in when return_to is ${JSON.stringify(target)}`, async () => {
      const browser = new FormBrowser(server.url);
      const signInPage = await browser.request(`/login?return_to=${encodeURIComponent(target)}`);
      const signedIn = await browser.submit(signInPage, '/login', { username: user.username, password: user.password });
      assert.equal(signedIn.status, 303, signedIn.html);
      assert.equal(new URL(signedIn.location!, signedIn.url).origin, new URL(server.url).origin, `sent to ${signedIn.location}`);
      // Signed in already, /login sends the browser on at once: to this server too.
      const again = await browser.request(`/login?return_to=${encodeURIComponent(target)}`);
      assert.equal(again.status, 303);
      assert.equal(new URL(again.location!, again.url).origin, new URL(server.url).origin, `sent to ${again.location}`);
    });
  }

  it('returns to a path on this server after sign-in, with its query', async () => {
    const browser = new FormBrowser(server.url);
    const signInPage = await browser.request(`/login?return_to=${encodeURIComponent('/account?from=mail')}`);
    const signedIn = await browser.submit(signInPage, '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.location, '/account?from=mail');
  });

  it('ends the session on the server at sign-out: a copy of the cookie signs no one in', async () => {
    const browser = await signedInBrowser();
    const copy = new FormBrowser(server.url);
    for (const [name, value] of browser.cookies) copy.cookies.set(name, value);
    assert.equal(await signedOut(copy), false, 'the copy works while the session lives');
    const account = await browser.request('/account');
    const out = await browser.submit(account, '/logout', {});
    assert.equal(out.status, 303);
    assert.equal(await signedOut(browser), true);
    assert.equal(await signedOut(copy), true, 'the copied cookie no longer works');
  });

  it('gives a new session id at sign-in: a session id planted in the browser beforehand is worth nothing after', async () => {
    // An attacker signs in as themselves and plants their session cookie in the victim's browser.
    const attacker = await signedInBrowser(await server.addUser({ username: 'mallory', name: 'Mallory' }));
    const victim = new FormBrowser(server.url);
    victim.cookies.set('tessera_session', attacker.cookies.get('tessera_session')!);
    // The victim is asked for the password (prompt=login) and signs in as themselves.
    const approval = await victim.signIn(await victim.follow(await victim.request((await authorizationRequest({ prompt: 'login consent' })).url)), user);
    assert.match(text(approval), /Signed in as Ada Lovelace/);
    assert.notEqual(victim.cookies.get('tessera_session'), attacker.cookies.get('tessera_session'), 'a new session id');
    assert.equal(await signedOut(attacker), true, 'the planted id signs no one in');
  });

  it('ends a session TESSERA_SESSION_TTL after sign-in: the password is asked for again', async () => {
    const browser = await signedInBrowser();
    clock.advance((SESSION_TTL - 1) * 1000);
    assert.equal(await signedOut(browser), false, 'still signed in a second before');
    clock.advance(2000);
    assert.equal(await signedOut(browser), true);
    assertSignInPage(await browser.follow(await browser.request((await authorizationRequest()).url)));
  });

  it('refuses the sign-in of a disabled user as it refuses a wrong password, and starts no session', async () => {
    const leaver = await server.addUser({ username: 'leaver' });
    await server.store.users.setDisabled(leaver.id, true);
    const browser = new FormBrowser(server.url);
    const refused = await browser.submit(await browser.request('/login'), '/login', { username: leaver.username, password: leaver.password });
    assert.equal(refused.status, 401);
    assert.equal(/role="alert">([^<]*)</.exec(refused.html)?.[1], 'The username or password is incorrect.');
    assert.equal(browser.cookies.has('tessera_session'), false);
    assert.equal(await signedOut(browser), true);
  });

  it('ends the sessions of a user disabled while signed in', async () => {
    const leaver = await server.addUser({ username: 'leaver-later' });
    const browser = await signedInBrowser(leaver);
    await server.store.users.setDisabled(leaver.id, true);
    assert.equal(await signedOut(browser), true);
  });

  it('refuses a code redeemed after its 60 seconds with invalid_grant, and redeems one within them', async () => {
    const browser = await signedInBrowser();
    const late = await authorizationRequest({ prompt: 'consent' });
    const lateCallback = callbackOf(
      await browser.submit(await browser.follow(await browser.request(late.url)), '/oauth/authorize/decision', { decision: 'approve' }),
    );
    const onTime = await authorizationRequest({ prompt: 'consent' });
    const onTimeCallback = callbackOf(
      await browser.submit(await browser.follow(await browser.request(onTime.url)), '/oauth/authorize/decision', { decision: 'approve' }),
    );
    clock.advance(59_000);
    assert.equal((await idTokenFor(onTimeCallback, onTime.verifier))['sub'], user.id);
    clock.advance(1_000);
    const result = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code: lateCallback.searchParams.get('code')!,
        redirect_uri: REDIRECT_URI,
        code_verifier: late.verifier,
      },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.deepEqual([result.status, result.body['error']], [400, 'invalid_grant']);
  });
});

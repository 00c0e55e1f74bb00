import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { calculatePKCECodeChallenge, randomPKCECodeVerifier } from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('the authorization endpoint refuses bad requests', () => {
  let server: TestServer, client: TestClient, user: TestUser, challenge: string;

  before(async () => {
    ({ server, client, user } = await startWithApp({ client: { name: 'Calendar', scopes: ['openid', 'profile'] } }));
    challenge = await calculatePKCECodeChallenge(randomPKCECodeVerifier());
  });
  after(() => server.close());

  function params(overrides: Record<string, string | null> = {}): URLSearchParams {
    const values: Record<string, string | null> = {
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile',
      state: 'state-123',
      nonce: 'nonce-456',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...overrides,
    };
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(values)) if (value !== null) query.append(name, value);
    return query;
  }

  async function open(query: URLSearchParams | string) {
    return fetch(`${server.url}/oauth/authorize?${query}`, { redirect: 'manual' });
  }

  for (const [name, overrides] of [
    ['an unknown client_id', { client_id: 'no-such-client' }],
    ['a missing client_id', { client_id: null }],
    ['an unregistered redirect_uri', { redirect_uri: 'https://attacker.example/callback' }],
    ['a redirect_uri that only starts like the registered one', { redirect_uri: `${REDIRECT_URI}/../evil` }],
    ['a redirect_uri with an extra query', { redirect_uri: `${REDIRECT_URI}?next=https://attacker.example` }],
    ['a missing redirect_uri', { redirect_uri: null }],
  ] as const) {
    it(`shows an error page for ${name} and never redirects`, async () => {
      const response = await open(params(overrides));
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('location'), null);
      assert.match(response.headers.get('content-type') ?? '', /text\/html/);
      const body = await response.text();
      assert.match(body, /<h1>/);
      assert.doesNotMatch(body, /attacker\.example/);
    });
  }

  it('shows an error page for a repeated redirect_uri', async () => {
    const query = params();
    query.append('redirect_uri', 'https://attacker.example/callback');
    const response = await open(query);
    assert.equal(response.status, 400);
    assert.equal(response.headers.get('location'), null);
  });

  for (const [name, overrides, error] of [
    ['a response_type other than code', { response_type: 'token' }, 'unsupported_response_type'],
    ['a missing response_type', { response_type: null }, 'invalid_request'],
    ['a missing code_challenge', { code_challenge: null }, 'invalid_request'],
    ['the plain code_challenge_method', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['a missing code_challenge_method (which means plain)', { code_challenge_method: null }, 'invalid_request'],
    ['a code_challenge that is not an S256 digest', { code_challenge: 'too-short' }, 'invalid_request'],
    ['a scope the client is not allowed', { scope: 'openid email' }, 'invalid_scope'],
    ['an unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
    ['a missing scope', { scope: null }, 'invalid_scope'],
  ] as const) {
    it(`redirects ${name} back as ${error}, with state and iss`, async () => {
      const response = await open(params(overrides));
      assert.equal(response.status, 303);
      const location = new URL(response.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
      assert.equal(location.searchParams.get('error'), error);
      assert.ok(location.searchParams.get('error_description'));
      assert.equal(location.searchParams.get('state'), 'state-123');
      assert.equal(location.searchParams.get('iss'), server.url);
      assert.equal(location.searchParams.get('code'), null);
    });
  }

  it('redirects a repeated parameter back as invalid_request', async () => {
    const query = params();
    query.append('scope', 'openid');
    const location = new URL((await open(query)).headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
  });

  it('answers prompt=none without a session with login_required', async () => {
    const location = new URL((await open(params({ prompt: 'none' }))).headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'login_required');
  });

  it('shows the sign-in page, then the approval page with the application name and scopes', async () => {
    const browser = new FormBrowser(server.url);
    const signIn = await browser.request(`/oauth/authorize?${params()}`);
    assert.equal(signIn.status, 200);
    assert.match(signIn.html, /<label for="username">Username<\/label>/);
    assert.match(signIn.html, /<label for="password">Password<\/label>/);
    assert.match(signIn.html, />Sign in<\/button>/);
    const consent = await browser.follow(await browser.submit(signIn, '/login', { username: user.username, password: user.password }));
    assert.equal(consent.status, 200);
    assert.match(consent.html, /Calendar/);
    assert.match(consent.html, /See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone/);
    assert.deepEqual(browser.form(consent, '/oauth/authorize/decision').buttons.sort(), ['approve', 'deny']);
  });

  it('says a sign-in failed without telling whether the user exists', async () => {
    const browser = new FormBrowser(server.url);
    const page = await browser.request(`/oauth/authorize?${params()}`);
    const wrongPassword = await browser.submit(page, '/login', { username: user.username, password: 'wrong password' });
    const noSuchUser = await browser.submit(page, '/login', { username: 'nobody-here', password: 'wrong password' });
    assert.equal(wrongPassword.status, 401);
    assert.equal(noSuchUser.status, 401);
    const message = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
    assert.equal(message(wrongPassword.html), 'The username or password is incorrect.');
    assert.equal(message(noSuchUser.html), message(wrongPassword.html));
  });

  it('lets no more than 10 of 20 simultaneous wrong passwords for one username from one address be tried, and says what to do', async () => {
    const target = await server.addUser({ username: 'target' });
    const browser = new FormBrowser(server.url);
    const page = await browser.request(`/oauth/authorize?${params()}`);
    const tries = await Promise.all(Array.from({ length: 20 }, () => browser.submit(page, '/login', { username: 'target', password: 'guess' })));
    assert.equal(tries.filter((t) => t.status === 401).length, 10);
    assert.equal(tries.filter((t) => t.status === 429).length, 10);
    const right = await browser.submit(page, '/login', { username: 'target', password: target.password });
    assert.equal(right.status, 429);
    assert.ok(Number(right.headers.get('retry-after')) > 0);
    assert.match(
      right.html,
      /Too many wrong passwords for this username from your connection\. Wait 15 minutes, then try again, or ask your administrator to unlock your account\. If you have forgotten your password, they can give you a link to set a new one\./,
    );
  });

  it('refuses an approval posted without the CSRF token', async () => {
    const browser = new FormBrowser(server.url);
    const signIn = await browser.request(`/oauth/authorize?${params()}`);
    const consent = await browser.follow(await browser.submit(signIn, '/login', { username: user.username, password: user.password }));
    const form = browser.form(consent, '/oauth/authorize/decision');
    const forged = await browser.request('/oauth/authorize/decision', { form: { ...form.fields, csrf_token: 'forged', decision: 'approve' } });
    assert.equal(forged.status, 403);
    assert.equal(forged.location, null);
    const crossSite = await browser.request('/oauth/authorize/decision', {
      form: { ...form.fields, decision: 'approve' },
      headers: { origin: 'https://attacker.example' },
    });
    assert.equal(crossSite.status, 403);
  });

  it('sets a HttpOnly SameSite=Lax session cookie and forbids framing', async () => {
    const browser = new FormBrowser(server.url);
    const signIn = await browser.request(`/oauth/authorize?${params()}`);
    assert.equal(signIn.headers.get('x-frame-options'), 'DENY');
    assert.match(signIn.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    const form = browser.form(signIn, '/login');
    const response = await fetch(`${server.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [...browser.cookies].map(([n, v]) => `${n}=${v}`).join('; ') },
      body: new URLSearchParams({ ...form.fields, username: user.username, password: user.password }).toString(),
    });
    const session = response.headers.getSetCookie().find((cookie) => cookie.startsWith('tessera_session='));
    assert.ok(session, 'a session cookie is set');
    assert.match(session, /HttpOnly/i);
    assert.match(session, /SameSite=Lax/i);
    assert.doesNotMatch(session, /Secure/i, 'not Secure on an http issuer');
  });

  it('tells the browser to send no Referer to other sites, on its pages and on the redirect back to the app', async () => {
    const signIn = await open(params());
    assert.equal(signIn.headers.get('referrer-policy'), 'same-origin');
    const refused = await open(params({ response_type: 'token' }));
    assert.equal(refused.status, 303);
    assert.ok(refused.headers.get('location')?.startsWith(REDIRECT_URI));
    assert.equal(refused.headers.get('referrer-policy'), 'same-origin');
  });

  it('tells the browser not to guess the type of what it sends, on its pages and its JSON', async () => {
    const signIn = await open(params());
    assert.match(signIn.headers.get('content-type') ?? '', /text\/html/);
    assert.equal(signIn.headers.get('x-content-type-options'), 'nosniff');
    const token = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: client.clientId, code: '<script>' }).toString(),
    });
    assert.match(token.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(token.headers.get('x-content-type-options'), 'nosniff');
  });

  it('escapes a client name so it cannot inject markup', async () => {
    const evil = await server.addClient({ name: '<img src=x onerror=alert(1)>' });
    const browser = new FormBrowser(server.url);
    const page = await browser.request(`/oauth/authorize?${params({ client_id: evil.clientId })}`);
    assert.doesNotMatch(page.html, /<img src=x/);
    assert.match(page.html, /&lt;img src=x onerror=alert\(1\)&gt;/);
  });
});

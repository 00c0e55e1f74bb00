/**
 * OAuth 2.0 Form Post Response Mode: the answer to an authorization request posted to the
 * client by an auto-submitting form. Raw HTTP checks of the page and its policy, with
 * openid-client validating what is posted; express-openid-connect signing in through it in
 * Chromium.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { auth } from 'express-openid-connect';
import type * as oidc from 'openid-client';
import { chromiumUnavailable, launchChromium, signInWithPassword } from './helpers/chromium.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { closeServer, listenOnFreePort, REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, startWithApp, redeemAttempt } from './helpers/fixtures.ts';

describe('response_mode=form_post (OAuth 2.0 Form Post Response Mode)', () => {
  let server: TestServer, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, user, config } = await startWithApp({ client: { name: 'Intranet' } }));
  });
  after(() => server.close());

  const start = (extra: Record<string, string> = {}) =>
    authorizationAttempt(config, { scope: 'openid profile', response_mode: 'form_post', prompt: 'consent', ...extra });

  /** Signs in and decides; returns the page the decision is answered with. */
  async function decide(url: URL, decision: 'approve' | 'deny'): Promise<Page> {
    const browser = new FormBrowser(server.url);
    const approval = await browser.signIn(await browser.request(url.href), user);
    return browser.submit(approval, '/oauth/authorize/decision', { decision });
  }

  /** The §2 form as the browser would post it: its action and its fields; and checks the page's policy. */
  function postedForm(page: Page): { action: string; fields: Record<string, string> } {
    assert.equal(page.status, 200, page.html);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(page.headers.get('cache-control'), 'no-store');
    const form = new FormBrowser(server.url).form(page, REDIRECT_URI);
    // The one inline script is allowed by its hash, nothing else runs, and the form may post
    // only to the client.
    const scripts = [...page.html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((match) => match[1]!);
    assert.equal(scripts.length, 1);
    const hash = `'sha256-${createHash('sha256').update(scripts[0]!).digest('base64')}'`;
    const policy = page.headers.get('content-security-policy') ?? '';
    assert.match(policy, new RegExp(`script-src ${hash.replace(/[+/]/g, '\\$&')}(;|$)`));
    assert.doesNotMatch(policy, /unsafe-inline/);
    assert.match(policy, /form-action http:\/\/127\.0\.0\.1:9(;|$)/);
    assert.match(policy, /frame-ancestors 'none'/);
    // Without scripts, a button to press.
    assert.match(page.html, /<noscript>/);
    assert.match(page.html, /<button type="submit" class="primary">Continue<\/button>/);
    return { action: form.action, fields: form.fields };
  }

  it('answers an approval with a form that posts code, state and iss to the redirect URI, which openid-client validates', async () => {
    const attempt = await start();
    const { action, fields } = postedForm(await decide(attempt.url, 'approve'));
    assert.equal(action, REDIRECT_URI);
    assert.deepEqual(Object.keys(fields).sort(), ['code', 'iss', 'state']);
    assert.equal(fields['iss'], server.url);
    // openid-client reads a form post response from the POST request the browser makes.
    const callback = new Request(action, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
    });
    const tokens = await redeemAttempt(config, attempt, callback);
    assert.equal(tokens.claims()!.sub, user.id);
  });

  it('posts errors the same way: access_denied when the person denies', async () => {
    const attempt = await start();
    const { fields } = postedForm(await decide(attempt.url, 'deny'));
    assert.deepEqual(fields, { error: 'access_denied', error_description: 'the user denied the request', state: attempt.state, iss: server.url });
  });

  it('posts an error found in the request itself (invalid_scope), and login_required for prompt=none', async () => {
    for (const [extra, error] of [
      [{ scope: 'openid admin' }, 'invalid_scope'],
      [{ prompt: 'none' }, 'login_required'],
    ] as const) {
      const attempt = await start(extra);
      const page = await new FormBrowser(server.url).request(attempt.url.href);
      const { fields } = postedForm(page);
      assert.equal(fields['error'], error);
      assert.equal(fields['state'], attempt.state);
    }
  });

  it('refuses an unknown response_mode in the query, and never posts to an unregistered redirect_uri', async () => {
    const fragment = await start({ response_mode: 'fragment' });
    const response = await fetch(fragment.url, { redirect: 'manual' });
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.match(location.searchParams.get('error_description') ?? '', /response_mode fragment is not supported/);
    const elsewhere = await start();
    elsewhere.url.searchParams.set('redirect_uri', 'https://attacker.example/cb');
    const page = await fetch(elsewhere.url, { redirect: 'manual' });
    assert.equal(page.status, 400);
    assert.doesNotMatch(await page.text(), /attacker\.example/);
  });
});

describe('express-openid-connect with response_mode form_post, in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let app: { server: Server; url: string };

  before(async () => {
    server = await startTestServer();
    const listening = await listenOnFreePort();
    const url = `http://127.0.0.1:${listening.port}`;
    const client = await server.addClient({ name: 'Team Wiki', redirectUris: [`${url}/callback`] });
    const web = express();
    // Its README's configuration, with the code flow: the library's own default,
    // response_type=id_token (the implicit flow), is refused by Tessera.
    web.use(
      auth({
        issuerBaseURL: server.url,
        baseURL: url,
        clientID: client.clientId,
        clientSecret: client.clientSecret,
        secret: 'a long, randomly-generated string stored in env',
        authRequired: false,
        authorizationParams: { response_type: 'code', response_mode: 'form_post', scope: 'openid profile email' },
      }),
    );
    // The name comes from UserInfo (OIDC Core §5.4: with an access token, scope claims are there).
    web.get('/', async (request, response) => {
      if (!request.oidc.isAuthenticated()) return void response.type('text/plain').send('Signed out');
      const profile = await request.oidc.fetchUserInfo();
      response.type('text/plain').send(`Signed in as ${profile['name']} (${request.oidc.user?.sub})`);
    });
    listening.server.on('request', web);
    app = { server: listening.server, url };
  });
  after(async () => {
    if (app) await closeServer(app.server);
    await server?.close();
  });

  it('signs in: the form post reaches the app, which validates the ID token and shows the person', async () => {
    const user = await server.addUser({ name: 'Ada Lovelace' });
    const browser = await launchChromium();
    try {
      const page = await (await browser.newContext()).newPage();
      await page.goto(`${app.url}/login`);
      await signInWithPassword(page, user);
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL(`${app.url}/`, { timeout: 20_000 });
      assert.equal(await page.locator('body').innerText(), `Signed in as Ada Lovelace (${user.id})`);
    } finally {
      await browser.close();
    }
  });
});

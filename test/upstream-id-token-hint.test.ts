/**
 * id_token_hint with a sign-in through an upstream OpenID provider (OIDC Core §3.1.2.1: "If the
 * End-User identified by the ID Token is logged in or is logged in by the request, then the
 * Authorization Server returns a positive response; otherwise, it SHOULD return an error, such
 * as login_required"). The provider dates the session by its own auth_time, which may be hours
 * before the request: the wrong person coming back from it has still signed in since the
 * request asked, and the client is answered login_required rather than the sign-in page again.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type * as oidc from 'openid-client';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { addUpstreamTessera, appConfig, authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';
import { REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

describe('id_token_hint and a sign-in through an upstream provider', () => {
  let upstream: TestServer, acme: TestServer, ada: TestUser, config: oidc.Configuration, adaHint: string;
  /** Mallory's session at the provider, begun an hour ago: her browser is still signed in there. */
  const mallorySession = randomToken(32);

  before(async () => {
    upstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Upstream ID' } });
    acme = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme' } });
    const mallory = await upstream.addUser({ username: 'mallory', email: 'mallory@example.com', profile: { emailVerified: true } });
    await addUpstreamTessera(acme, upstream, { id: 'upstream', name: 'Upstream ID', args: ['--allowed-domain', 'example.com'] });
    const hourAgo = Date.now() - 3600_000;
    await upstream.store.sessions.create({
      idHash: hashSecret(mallorySession),
      sid: randomToken(16),
      userId: mallory.id,
      authTime: hourAgo,
      createdAt: hourAgo,
      expiresAt: Date.now() + 3600_000,
      amr: ['pwd'],
      ip: '127.0.0.1',
      userAgent: null,
    });
    config = await appConfig(acme, await acme.addClient({ name: 'App', scopes: ['openid', 'profile', 'email'] }));
    ada = await acme.addUser({ username: 'ada' });
    const first = await authorizationAttempt(config);
    adaHint = (await redeemAttempt(config, first, (await new FormBrowser(acme.url).authorize(first.url.href, ada)).location!)).id_token!;
  });
  after(async () => {
    await acme.close();
    await upstream.close();
  });

  /** From Acme's redirect to the provider, signed in there as Mallory, back to Acme's callback; what Acme then answers. */
  async function throughProvider(browser: FormBrowser, toProvider: Page): Promise<Page> {
    const there = new FormBrowser(upstream.url);
    there.cookies.set('tessera_session', mallorySession);
    const answer = await there.follow(await there.request(toProvider.location!));
    assert.ok(answer.location?.includes('/login/upstream/upstream/callback'), `${answer.status} ${answer.html.slice(0, 300)}`);
    const callback = await browser.request(answer.location!);
    // The callback's page goes on by a meta refresh (its cookie is SameSite=Lax).
    const next = /url=([^"]+)"/.exec(callback.html)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(next, `the callback's page: ${callback.status} ${callback.html.slice(0, 300)}`);
    return browser.request(next);
  }

  it('answers login_required when someone other than the hinted person signs in through the provider, however old their session there', async () => {
    const attempt = await authorizationAttempt(config, { id_token_hint: adaHint });
    const browser = new FormBrowser(acme.url);
    const signInPage = await browser.follow(await browser.request(attempt.url.href));
    const button = /href="(\/login\/upstream\/upstream\?[^"]+)"/.exec(signInPage.html)?.[1]?.replace(/&amp;/g, '&');
    assert.ok(button, `the sign-in page's provider button: ${signInPage.html.slice(0, 300)}`);
    const answered = await throughProvider(browser, await browser.request(button));
    assert.equal(answered.status, 303, `the client is answered, not the sign-in page again: ${answered.html.slice(0, 200)}`);
    assert.ok(answered.location?.startsWith(REDIRECT_URI), answered.location ?? '');
    const query = new URL(answered.location!).searchParams;
    assert.equal(query.get('error'), 'login_required');
    assert.equal(query.get('state'), attempt.state);
    assert.equal(query.get('code'), null);
  });

  it('ends the same way with the provider as the only way in, rather than in a loop of redirects', async () => {
    assert.equal(
      (await runTessera(['provider', 'update', 'upstream', '--only'], { TESSERA_DATABASE: acme.config.database, TESSERA_ISSUER: acme.url })).code,
      0,
    );
    const attempt = await authorizationAttempt(config, { id_token_hint: adaHint });
    const browser = new FormBrowser(acme.url);
    // The request, then the sign-in page, each send the browser on to the provider by themselves.
    let toProvider = await browser.request(attempt.url.href);
    while (toProvider.location && new URL(toProvider.location, acme.url).origin === new URL(acme.url).origin)
      toProvider = await browser.request(toProvider.location);
    const answered = await throughProvider(browser, toProvider);
    assert.ok(answered.location?.startsWith(REDIRECT_URI), `the client is answered after one trip: ${answered.status} ${answered.location ?? ''}`);
    assert.equal(new URL(answered.location!).searchParams.get('error'), 'login_required');
  });
});

/**
 * How an authorization request may arrive, as OpenID certification sends it: by POST (OIDC
 * Core §3.1.2.1), with long hints, and what the endpoints answer to a method they do not take.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type * as oidc from 'openid-client';
import { MAX_HINT_LENGTH } from '../src/flows/authorization-code/request.ts';
import { SIGN_IN_HINTED_FIELD } from '../src/flows/authorization-code/sign-in-asked.ts';
import { FormBrowser, assertApprovalPage, assertSignInPage } from './helpers/browser.ts';
import { REDIRECT_URI, type TestServer, type TestUser } from './helpers/server.ts';
import { appConfig, authorizationAttempt, startWithApp, redeemAttempt } from './helpers/fixtures.ts';

describe('authorization requests as certification sends them', () => {
  let server: TestServer, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, user, config } = await startWithApp({
      client: { name: 'Certification', scopes: ['openid', 'profile', 'email'] },
      // An ID token with a long name and address is longer than the 1,024 characters other
      // parameters may have.
      user: { username: 'long', name: `Maria ${'Antonia '.repeat(60)}Walburga`, email: `${'maria.antonia.'.repeat(12)}walburga@example.com` },
    }));
  });
  after(() => server.close());

  const start = (extra: Record<string, string> = {}) => authorizationAttempt(config, extra);

  /**
   * A browser signed in as `person` (`user` unless named) that has approved the app of `app`
   * (this file's client unless named) once, so prompt=none can answer, with the ID token issued.
   */
  async function signedIn(person: TestUser = user, app: oidc.Configuration = config) {
    const browser = new FormBrowser(server.url);
    // The name and e-mail address asked for in the ID token (OIDC Core §5.5), as an app that
    // reads only the ID token asks: what makes a real ID token long.
    const first = await authorizationAttempt(app, { claims: JSON.stringify({ id_token: { name: null, email: null } }) });
    const page = await browser.authorize(first.url.href, person);
    const tokens = await redeemAttempt(app, first, page.location!);
    return { browser, idToken: tokens.id_token! };
  }

  describe('POST to the authorization endpoint (OIDC Core §3.1.2.1: "MUST support the use of the HTTP GET and POST methods")', () => {
    it('takes the request as a form post and completes it: openid-client validates the tokens', async () => {
      const { browser } = await signedIn();
      const attempt = await start({ prompt: 'consent' });
      const posted = await browser.request('/oauth/authorize', { form: attempt.url.searchParams });
      assert.equal(posted.status, 303, posted.html);
      const approval = await browser.follow(posted);
      assertApprovalPage(approval, '/oauth/authorize/decision');
      const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
      assert.ok(decided.location?.startsWith(REDIRECT_URI), decided.location ?? decided.html);
      const tokens = await redeemAttempt(config, attempt, decided.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('answers a POSTed prompt=none request of a signed-in browser with a code, as it would a GET', async () => {
      const { browser } = await signedIn();
      const attempt = await start({ prompt: 'none' });
      const answered = await browser.follow(await browser.request('/oauth/authorize', { form: attempt.url.searchParams }));
      assert.ok(answered.location?.startsWith(REDIRECT_URI), answered.location ?? answered.html);
      const tokens = await redeemAttempt(config, attempt, answered.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('refuses a bad POSTed request as it would a GET: an error page for an unregistered redirect_uri, the error at the redirect URI otherwise', async () => {
      const browser = new FormBrowser(server.url);
      const attempt = await start();
      const unregistered = new URLSearchParams(attempt.url.searchParams);
      unregistered.set('redirect_uri', 'https://attacker.example/callback');
      const page = await browser.request('/oauth/authorize', { form: unregistered });
      assert.equal(page.status, 400);
      assert.equal(page.location, null);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);

      const badScope = new URLSearchParams(attempt.url.searchParams);
      badScope.set('scope', 'openid admin');
      const redirected = await browser.request('/oauth/authorize', { form: badScope });
      assert.equal(redirected.status, 303);
      const location = new URL(redirected.location!);
      assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
      assert.equal(location.searchParams.get('error'), 'invalid_scope');
      assert.equal(location.searchParams.get('state'), attempt.state);
      assert.equal(location.searchParams.get('iss'), server.url);
    });

    it('never takes a decision from a POSTed request: a form with csrf_token and decision=approve leads to the approval page, not a code', async () => {
      const { browser } = await signedIn();
      const attempt = await start({ prompt: 'consent' });
      const approval = await browser.follow(await browser.request(attempt.url.href));
      const csrf = browser.form(approval, '/oauth/authorize/decision').fields['csrf_token']!;
      const forged = new URLSearchParams(attempt.url.searchParams);
      forged.set('csrf_token', csrf);
      forged.set('decision', 'approve');
      const page = await browser.follow(await browser.request('/oauth/authorize', { form: forged }));
      assertApprovalPage(page, '/oauth/authorize/decision');
      const form = browser.form(page, '/oauth/authorize/decision');
      assert.equal(form.fields['decision'], undefined, 'the request brings no decision into the form');
      assert.equal(form.repeated.length, 0);
    });
  });

  describe('the approval form (its scope field is not trusted)', () => {
    it('refuses a decision whose scope was widened after the page was shown, and takes the one shown', async () => {
      const { browser } = await signedIn();
      const attempt = await start({ prompt: 'consent', scope: 'openid' });
      const approval = await browser.follow(await browser.request(attempt.url.href));
      assertApprovalPage(approval, '/oauth/authorize/decision');
      assert.equal(browser.form(approval, '/oauth/authorize/decision').fields['scope'], 'openid');
      const widened = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve', scope: 'openid profile email' });
      assert.equal(widened.status, 400, widened.html);
      assert.equal(widened.location, null, 'no code, and no redirect');
      assert.match(widened.html, /the approval form was changed after it was shown/);
      const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
      assert.ok(decided.location?.startsWith(REDIRECT_URI), decided.location ?? decided.html);
      const tokens = await redeemAttempt(config, attempt, decided.location!);
      assert.equal(tokens.scope, 'openid');
    });

    it('refuses a denial whose state was changed after the page was shown: no access_denied carries the changed state', async () => {
      const { browser } = await signedIn();
      const attempt = await start({ prompt: 'consent', scope: 'openid' });
      const approval = await browser.follow(await browser.request(attempt.url.href));
      const changed = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'deny', state: 'changed' });
      assert.equal(changed.status, 400, changed.html);
      assert.equal(changed.location, null, 'no redirect to the client');
      assert.match(changed.html, /the approval form was changed after it was shown/);
    });
  });

  describe('long hints (OIDC Core §3.1.2.1 id_token_hint and login_hint)', () => {
    it('takes a real ID token of more than 1,024 characters as id_token_hint, and login_hint up to the limit', async () => {
      const { browser, idToken } = await signedIn();
      assert.ok(idToken.length > 1024, `the ID token is ${idToken.length} characters`);
      const attempt = await start({ prompt: 'none', id_token_hint: idToken, login_hint: 'l'.repeat(MAX_HINT_LENGTH) });
      const answered = await browser.request(attempt.url.href);
      assert.ok(answered.location?.startsWith(REDIRECT_URI), answered.location ?? answered.html);
      const tokens = await redeemAttempt(config, attempt, answered.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('signs in and comes back with a long hint: the ID token is not carried past the sign-in, the person it names is', async () => {
      const browser = new FormBrowser(server.url);
      const { idToken } = await signedIn();
      const attempt = await start({ id_token_hint: idToken, login_hint: 'l'.repeat(MAX_HINT_LENGTH) });
      const page = await browser.authorize(attempt.url.href, user);
      assert.ok(page.location?.startsWith(REDIRECT_URI), page.location ?? page.html);
      await redeemAttempt(config, attempt, page.location!);
    });

    it('refuses a hint over the limit with invalid_request at the redirect URI, and keeps 1,024 for other parameters', async () => {
      for (const extra of [
        { login_hint: 'l'.repeat(MAX_HINT_LENGTH + 1) },
        { id_token_hint: 'x'.repeat(MAX_HINT_LENGTH + 1) },
        { ui_locales: 'x'.repeat(1025) },
      ] as Record<string, string>[]) {
        const attempt = await start(extra);
        const response = await fetch(attempt.url, { redirect: 'manual' });
        assert.equal(response.status, 303);
        const location = new URL(response.headers.get('location')!);
        assert.equal(location.searchParams.get('error'), 'invalid_request', JSON.stringify(Object.keys(extra)));
        assert.match(location.searchParams.get('error_description') ?? '', /too long/);
      }
    });
  });

  describe('id_token_hint (OIDC Core §3.1.2.1: "If the End-User identified by the ID Token is logged in ... a positive response; otherwise, it SHOULD return an error, such as login_required")', () => {
    /** Where the browser is sent for `attempt`, without following it. */
    async function answerTo(browser: FormBrowser, attempt: { readonly url: URL }): Promise<URL> {
      const answered = await browser.request(attempt.url.href);
      assert.equal(answered.status, 303, answered.html);
      return new URL(answered.location!);
    }

    it('answers prompt=none with login_required when the hint names another person, and with a code for the person signed in', async () => {
      const { idToken: othersHint } = await signedIn(await server.addUser({ username: 'bea' }));
      const { browser, idToken: ownHint } = await signedIn();
      const refused = await answerTo(browser, await start({ prompt: 'none', id_token_hint: othersHint }));
      assert.ok(refused.href.startsWith(REDIRECT_URI), refused.href);
      assert.equal(refused.searchParams.get('error'), 'login_required');
      assert.equal(refused.searchParams.get('code'), null);

      const attempt = await start({ prompt: 'none', id_token_hint: ownHint });
      const tokens = await redeemAttempt(config, attempt, await answerTo(browser, attempt));
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('asks for a sign-in, without prompt=none, when the hint names another person than the one signed in', async () => {
      const { idToken: othersHint } = await signedIn(await server.addUser({ username: 'carl' }));
      const { browser } = await signedIn();
      assertSignInPage(await browser.follow(await browser.request((await start({ id_token_hint: othersHint })).url.href)));
    });

    /** The error `page` sends the browser to the client with: login_required with the attempt's state, and no code. */
    function assertLoginRequired(
      page: { readonly status: number; readonly location: string | null; readonly html: string },
      attempt: { readonly state: string },
    ) {
      assert.equal(page.status, 303, page.html.slice(0, 300));
      const location = new URL(page.location!);
      assert.ok(location.href.startsWith(REDIRECT_URI), location.href);
      assert.equal(location.searchParams.get('error'), 'login_required');
      assert.match(location.searchParams.get('error_description') ?? '', /id_token_hint/);
      assert.equal(location.searchParams.get('state'), attempt.state);
      assert.equal(location.searchParams.get('code'), null);
    }

    it('issues a code from a signed-out browser only to the person the hint names: anyone else who signs in ends the request with login_required', async () => {
      const dan = await server.addUser({ username: 'dan' });
      const { idToken: hint } = await signedIn();
      const attempt = await start({ id_token_hint: hint });
      const browser = new FormBrowser(server.url);
      assertLoginRequired(await browser.signIn(await browser.follow(await browser.request(attempt.url.href)), dan), attempt);

      // The person it names, in a browser of their own: the sign-in page, then the approval.
      const again = await start({ id_token_hint: hint });
      const decided = await new FormBrowser(server.url).authorize(again.url.href, user);
      const tokens = await redeemAttempt(config, again, decided.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('asks a browser signed in as someone else to sign in once: the same person again is login_required, the person the hint names gets the code', async () => {
      const eve = await server.addUser({ username: 'eve' });
      const { browser } = await signedIn(eve);
      const { idToken: hint } = await signedIn();
      const attempt = await start({ id_token_hint: hint });
      const page = await browser.follow(await browser.request(attempt.url.href));
      assertSignInPage(page);
      assertLoginRequired(await browser.signIn(page, eve), attempt);

      const again = await start({ id_token_hint: hint });
      const decided = await browser.authorize(again.url.href, user);
      const tokens = await redeemAttempt(config, again, decided.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it(`never takes whom the hint names from the request: a ${SIGN_IN_HINTED_FIELD} the client sent is not carried to the address the sign-in returns to`, async () => {
      const fay = await server.addUser({ username: 'fay' });
      /** The address the sign-in page of `attempt`, in a signed-out browser, returns to, as the page shows it. */
      const returnTo = async (attempt: { readonly url: URL }) => {
        const browser = new FormBrowser(server.url);
        const page = await browser.follow(await browser.request(attempt.url.href));
        assertSignInPage(page);
        return { browser, page, url: new URL(browser.form(page, '/login').fields['return_to']!, server.url) };
      };

      // With a hint, the person it names, not the one the client's field names.
      const { idToken: hint } = await signedIn();
      const hinted = await returnTo(await start({ id_token_hint: hint, [SIGN_IN_HINTED_FIELD]: fay.id }));
      assert.deepEqual(hinted.url.searchParams.getAll(SIGN_IN_HINTED_FIELD), [user.id]);

      // Without one, nobody: the field is dropped, and whoever signs in is answered as without it.
      const attempt = await start({ prompt: 'consent', [SIGN_IN_HINTED_FIELD]: fay.id });
      const unhinted = await returnTo(attempt);
      assert.deepEqual(unhinted.url.searchParams.getAll(SIGN_IN_HINTED_FIELD), []);
      const approval = await unhinted.browser.signIn(unhinted.page, user);
      const decided = await unhinted.browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
      const tokens = await redeemAttempt(config, attempt, decided.location!);
      assert.equal(tokens.claims()!.sub, user.id);
    });

    it('refuses a hint issued to another client, or that is no ID token of this server, with invalid_request at the redirect URI', async () => {
      const elsewhere = await appConfig(server, await server.addClient({ name: 'Elsewhere' }));
      const { browser, idToken: anotherClientsHint } = await signedIn(user, elsewhere);
      for (const [what, hint] of [
        ['issued to another client', anotherClientsHint],
        ['forged', `${anotherClientsHint.slice(0, -4)}AAAA`],
        ['not a JWT', 'not-a-jwt'],
      ] as const) {
        const refused = await answerTo(browser, await start({ prompt: 'none', id_token_hint: hint }));
        assert.ok(refused.href.startsWith(REDIRECT_URI), `${what}: ${refused.href}`);
        assert.equal(refused.searchParams.get('error'), 'invalid_request', what);
        assert.match(refused.searchParams.get('error_description') ?? '', /id_token_hint/, what);
      }
    });
  });

  describe('a method an endpoint does not take (RFC 9110 §15.5.6)', () => {
    it('answers GET and PUT at the PAR endpoint with 405 and Allow: POST (RFC 9126 §2.3)', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const response = await fetch(`${server.url}/oauth/par`, { method });
        assert.equal(response.status, 405, method);
        assert.match(response.headers.get('allow') ?? '', /\bPOST\b/);
        assert.doesNotMatch(response.headers.get('allow') ?? '', /\bGET\b/);
        assert.equal(((await response.json()) as { error?: string }).error, 'invalid_request');
      }
    });

    it('answers 405 with Allow at the token, revocation, introspection, device, userinfo and JWKS endpoints, and 404 where there is no endpoint', async () => {
      for (const [path, method, allows] of [
        ['/oauth/token', 'GET', 'POST'],
        ['/oauth/revoke', 'GET', 'POST'],
        ['/oauth/introspect', 'GET', 'POST'],
        ['/oauth/device/authorization', 'GET', 'POST'],
        ['/oauth/userinfo', 'PUT', 'GET'],
        ['/.well-known/jwks.json', 'POST', 'GET'],
        ['/oauth/authorize', 'DELETE', 'POST'],
      ] as const) {
        const response = await fetch(`${server.url}${path}`, { method });
        assert.equal(response.status, 405, `${method} ${path}`);
        assert.ok((response.headers.get('allow') ?? '').split(', ').includes(allows), `${path}: Allow ${response.headers.get('allow')}`);
      }
      assert.equal((await fetch(`${server.url}/oauth/nothing-here`)).status, 404);
    });
  });
});

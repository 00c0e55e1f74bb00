/**
 * Passkeys over HTTP, with a software authenticator that can lie (test/helpers/authenticator.ts):
 * registration on the account page, sign-in without a username, and every answer that must
 * be refused with a clear page: another origin or RP ID, a replayed or expired challenge, a
 * counter that went backwards, an unknown or removed credential, garbage. Chromium's own
 * authenticator is test/passkeys-browser.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { SoftwarePasskey } from './helpers/authenticator.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { clockAtStart } from './helpers/clock.ts';
import { appConfig, pkceRequest, startWithApp } from './helpers/fixtures.ts';
import { NO_PASSWORD } from '../src/flows/users.ts';

describe('passkeys: registration, sign-in without a username, and refused answers', () => {
  const clock = clockAtStart();
  let server: TestServer;
  let user: TestUser;
  let other: TestUser;
  let client: TestClient;

  before(async () => {
    ({ server, user, client } = await startWithApp({
      server: { issuerHost: 'localhost', clock },
      client: { name: 'Photo Printer' },
      user: { username: 'grace', name: 'Grace Hopper' },
    }));
    other = await server.addUser({ username: 'alan' });
  });
  after(() => server?.close());

  /** The passkeys registered here for each user, to sign in with once they have one. */
  const registered = new Map<string, SoftwarePasskey[]>();

  /**
   * The account page, signed in as a person who wants to change their passkeys would: with a
   * passkey they have, else (the first one) with the password.
   */
  async function accountPage(who: TestUser): Promise<{ browser: FormBrowser; page: Page }> {
    for (const passkey of registered.get(who.id) ?? []) {
      if (!(await server.store.passkeys.get(passkey.id))) continue;
      const { browser, answer } = await signInWith(passkey);
      const page = await browser.follow(answer);
      assert.match(page.html, /<h1>Connected apps and devices<\/h1>/);
      return { browser, page };
    }
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request('/account'));
    const page = await browser.follow(await browser.submit(login, '/login', { username: who.username, password: who.password }));
    assert.match(page.html, /<h1>Connected apps and devices<\/h1>/);
    return { browser, page };
  }

  async function options(browser: FormBrowser, page: Page, formAction: string, path: string): Promise<Record<string, any>> {
    const csrf = browser.form(page, formAction).fields['csrf_token']!;
    const answer = await browser.request(path, { form: { csrf_token: csrf } });
    assert.equal(answer.status, 200, answer.html);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    return JSON.parse(answer.html) as Record<string, any>;
  }

  async function register(passkey: SoftwarePasskey, who: TestUser = user, lies: Parameters<SoftwarePasskey['register']>[2] = {}, name = 'Work laptop') {
    const { browser, page } = await accountPage(who);
    const creation = await options(browser, page, '/account/passkeys', '/account/passkeys/options');
    const response = passkey.register(creation, server.url, lies);
    const answer = await browser.submit(page, '/account/passkeys', { name, response: JSON.stringify(response) });
    if (answer.status === 303) registered.set(who.id, [...(registered.get(who.id) ?? []), passkey]);
    return { browser, page, creation, response, answer };
  }

  async function signInWith(passkey: SoftwarePasskey, lies: Parameters<SoftwarePasskey['authenticate']>[2] = {}, returnTo = '/account') {
    const browser = new FormBrowser(server.url);
    const page = await browser.follow(await browser.request(`/login?return_to=${encodeURIComponent(returnTo)}`));
    const request = await options(browser, page, '/login/passkey', '/login/passkey/options');
    const response = passkey.authenticate(request, server.url, lies);
    const answer = await browser.submit(page, '/login/passkey', { response: JSON.stringify(response) });
    return { browser, page, request, response, answer };
  }

  function assertRefusedSignIn(answer: Page, browser: FormBrowser, status: number, message: RegExp) {
    assert.equal(answer.status, status, answer.html.slice(0, 500));
    assert.match(answer.html, /<h1>Sign in<\/h1>/, 'the sign-in page again');
    assert.match(answer.html, message);
    assert.equal(browser.cookies.has('tessera_session'), false, 'no session');
  }

  it('registers a passkey from the account page, discoverable, with the issuer host as RP ID, and lists it named', async () => {
    const passkey = new SoftwarePasskey();
    const { browser, creation, answer } = await register(passkey);
    assert.equal(creation['rp']['id'], 'localhost');
    assert.equal(creation['authenticatorSelection']['residentKey'], 'required');
    assert.equal(creation['authenticatorSelection']['userVerification'], 'preferred');
    assert.equal(creation['attestation'], 'none');
    assert.equal(creation['user']['name'], 'grace');
    assert.equal(answer.status, 303, answer.html);
    assert.equal(answer.location, '/account?notice=passkey-added');
    const page = await browser.follow(answer);
    assert.match(page.html, /Passkey added/);
    assert.match(page.html, /<h3 id="passkey-[^"]+">Work laptop<\/h3>/);
    assert.match(page.html, /<dt>Last used<\/dt><dd>not yet<\/dd>/);
    const stored = await server.store.passkeys.get(passkey.id);
    assert.equal(stored?.userId, user.id);
    assert.equal(stored?.counter, 0);
    assert.equal(stored?.deviceType, 'singleDevice');
  });

  it('signs in with the passkey alone, no username, and the ID token says amr hwk and mfa', async () => {
    const passkey = new SoftwarePasskey();
    assert.equal((await register(passkey)).answer.status, 303);
    const config = await appConfig(server, client);
    const { url, verifier } = await pkceRequest(config, { scope: 'openid profile', acr_values: 'phr urn:tessera:acr:mfa' });
    const returnTo = `${url.pathname}${url.search}`;
    const { request, browser, answer } = await signInWith(passkey, {}, returnTo);
    assert.equal(request['rpId'], 'localhost');
    assert.equal(request['allowCredentials'], undefined, 'discoverable: no credential list, so no username is needed');
    assert.equal(answer.status, 303, answer.html.slice(0, 500));
    assert.equal(answer.location, returnTo);
    const approval = await browser.follow(answer);
    const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(decided.location!), { pkceCodeVerifier: verifier, idTokenExpected: true });
    const claims = tokens.claims()!;
    assert.equal(claims.sub, user.id);
    assert.deepEqual(claims.amr, ['hwk', 'mfa']);
    assert.equal(claims.acr, 'phrh', 'asked for through acr_values');
    const stored = await server.store.passkeys.get(passkey.id);
    assert.equal(stored?.counter, 1);
    assert.equal(stored?.lastUsedAt, clock.now());
  });

  it('refuses a sign-in answered for another origin, with a clear page and no session', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    const { browser, answer } = await signInWith(passkey, { origin: 'https://tessera.example.evil' });
    assertRefusedSignIn(answer, browser, 401, /could not be verified/);
  });

  it('refuses a sign-in signed for another RP ID', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    const { browser, answer } = await signInWith(passkey, { rpId: 'evil.example' });
    assertRefusedSignIn(answer, browser, 401, /could not be verified/);
  });

  it('refuses a replayed sign-in answer: its challenge was used', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    const { browser, page, response, answer } = await signInWith(passkey);
    assert.equal(answer.status, 303);
    const thief = new FormBrowser(server.url);
    const thiefPage = await thief.follow(await thief.request('/login'));
    const replay = await thief.submit(thiefPage, '/login/passkey', { response: JSON.stringify(response) });
    assertRefusedSignIn(replay, thief, 400, /expired or was already used/);
    assert.ok(page && browser);
  });

  it('refuses a sign-in answered in another browser than the one that asked for the challenge', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    // The attacker's browser asks for a challenge and has the victim's passkey answer it.
    const attacker = new FormBrowser(server.url);
    const attackerPage = await attacker.follow(await attacker.request('/login'));
    const request = await options(attacker, attackerPage, '/login/passkey', '/login/passkey/options');
    const response = passkey.authenticate(request, server.url);
    const elsewhere = new FormBrowser(server.url);
    const elsewherePage = await elsewhere.follow(await elsewhere.request('/login'));
    assertRefusedSignIn(
      await elsewhere.submit(elsewherePage, '/login/passkey', { response: JSON.stringify(response) }),
      elsewhere,
      400,
      /expired or was already used/,
    );
    // The browser that asked still can: the refusal above did not spend its challenge.
    assert.equal((await attacker.submit(attackerPage, '/login/passkey', { response: JSON.stringify(response) })).status, 303);
  });

  it('refuses an answer to a challenge older than TESSERA_WEBAUTHN_TIMEOUT', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    const browser = new FormBrowser(server.url);
    const page = await browser.follow(await browser.request('/login'));
    const request = await options(browser, page, '/login/passkey', '/login/passkey/options');
    clock.advance(server.config.secondFactor.ceremonyTimeout * 1000 + 1);
    const answer = await browser.submit(page, '/login/passkey', { response: JSON.stringify(passkey.authenticate(request, server.url)) });
    assertRefusedSignIn(answer, browser, 400, /expired or was already used/);
  });

  it('refuses a signature counter that went backwards (a cloned authenticator), and keeps the stored counter', async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey);
    assert.equal((await signInWith(passkey)).answer.status, 303);
    assert.equal((await signInWith(passkey)).answer.status, 303);
    assert.equal((await server.store.passkeys.get(passkey.id))?.counter, 2);
    const { browser, answer } = await signInWith(passkey, { counter: 1 });
    assertRefusedSignIn(answer, browser, 401, /looks like a copy/);
    const same = await signInWith(passkey, { counter: 2 });
    assertRefusedSignIn(same.answer, same.browser, 401, /looks like a copy/);
    assert.equal((await server.store.passkeys.get(passkey.id))?.counter, 2);
    // An audit event names the owner, so `tessera events --type passkey.refused` finds the clone.
    const refused = (await server.store.events.list({ userId: user.id, type: 'passkey.refused', limit: 10 })).filter(
      (event) => event.detail['reason'] === 'cloned',
    );
    assert.deepEqual(
      refused.map((event) => [event.detail['stored_counter'], event.detail['received_counter']]),
      [
        [2, 2],
        [2, 1],
      ],
    );
    assert.equal(refused[0]!.detail['passkey'], 'Work laptop');
    assert.ok(refused[0]!.ip);
    assert.equal((await signInWith(passkey, { counter: 3 })).answer.status, 303, 'the real authenticator goes on');
  });

  it('refuses a passkey that was never registered here', async () => {
    clock.advance(1);
    const since = clock.now();
    const { browser, answer } = await signInWith(new SoftwarePasskey());
    assertRefusedSignIn(answer, browser, 401, /not registered here/);
    const events = await server.store.events.list({ type: 'passkey.refused', since, limit: 10 });
    assert.deepEqual(
      events.map((event) => [event.userId, event.detail['reason']]),
      [[null, 'unknown_credential']],
    );
  });

  it('refuses answers that are not answers: no JSON, no response, no challenge, and never a 500', async () => {
    for (const response of ['', 'not json', '[]', '{"id":"abc"}', '{"id":"abc","response":{"clientDataJSON":"e30"}}', '{"id":"!!","response":{}}']) {
      const browser = new FormBrowser(server.url);
      const page = await browser.follow(await browser.request('/login'));
      const answer = await browser.submit(page, '/login/passkey', { response });
      assert.ok(answer.status === 400, `${response}: ${answer.status}`);
      assert.match(answer.html, /<h1>Sign in<\/h1>/);
      assert.equal(browser.cookies.has('tessera_session'), false);
    }
  });

  it('removes a passkey from the account page; it signs no one in after', async () => {
    const passkey = new SoftwarePasskey();
    const { browser } = await register(passkey, user, {}, 'Old phone');
    const page = await browser.follow(await browser.request('/account'));
    const forms = [...page.html.matchAll(/<input type="hidden" name="passkey_id" value="([^"]+)">/g)].map((match) => match[1]);
    assert.ok(forms.includes(passkey.id));
    assert.match(page.html, /aria-label="Remove Old phone"/);
    const removed = await browser.request('/account/passkeys/remove', {
      form: { csrf_token: browser.form(page, '/account/passkeys/remove').fields['csrf_token']!, passkey_id: passkey.id },
    });
    assert.equal(removed.status, 303);
    assert.match((await browser.follow(removed)).html, /Passkey removed/);
    assert.equal(await server.store.passkeys.get(passkey.id), null);
    const trail = await server.store.events.list({ userId: user.id, limit: 50 });
    const added = trail.find((event) => event.type === 'passkey.added' && event.detail['passkey'] === 'Old phone');
    assert.ok(added, 'the enrolment is an event');
    assert.equal(added.detail['synced'], false);
    const removal = trail.find((event) => event.type === 'passkey.removed');
    assert.deepEqual(removal?.detail, { by: 'user' });
    const { answer, browser: after } = await signInWith(passkey);
    assertRefusedSignIn(answer, after, 401, /not registered here/);
  });

  it('keeps the only passkey of a person with no password: no Remove on the page, and 409 with what to do first', async () => {
    const solo = await server.addUser({ username: 'solo' });
    const passkey = new SoftwarePasskey();
    await register(passkey, solo, {}, 'Only key');
    // As an account made with a passkey has it: no password to sign in with.
    await server.store.users.setPasswordHash(solo.id, NO_PASSWORD);
    const { browser, page } = await accountPage(solo);
    // The page offers no button that would be refused, and says why.
    assert.doesNotMatch(page.html, /name="passkey_id"/);
    assert.match(page.html, /<p>This passkey is the only way you can sign in\. Add another passkey before you remove this one\.<\/p>/);
    // A removal posted all the same is refused.
    const answer = await browser.request('/account/passkeys/remove', {
      form: { csrf_token: browser.form(page, '/account/totp/setup').fields['csrf_token']!, passkey_id: passkey.id },
    });
    assert.equal(answer.status, 409, answer.html.slice(0, 500));
    assert.match(answer.html, /only way you can sign in\. Add another passkey before you remove this one/);
    // Said as the page's own message, in the page's language, with the way back to the account.
    assert.match(answer.html, /<p role="alert">This passkey is the only way you can sign in\. Add another passkey before you remove this one\.<\/p>/);
    assert.match(answer.html, /href="\/account"[^>]*>Back to your account</);
    const inGerman = await browser.request('/account/passkeys/remove', {
      form: { csrf_token: browser.form(page, '/account/totp/setup').fields['csrf_token']!, passkey_id: passkey.id },
      headers: { 'accept-language': 'de' },
    });
    assert.equal(inGerman.status, 409);
    assert.match(inGerman.html, /Dieser Passkey ist Ihre einzige Möglichkeit, sich anzumelden\./);
    assert.ok(await server.store.passkeys.get(passkey.id), 'still there');
    assert.equal((await signInWith(passkey)).answer.status, 303, 'and still signs them in');
    // With a second passkey, either may go.
    const spare = new SoftwarePasskey();
    assert.equal((await register(spare, solo, {}, 'Spare key')).answer.status, 303);
    const both = (await accountPage(solo)).page;
    assert.match(both.html, /aria-label="Remove Only key"/);
    assert.match(both.html, /aria-label="Remove Spare key"/);
    assert.doesNotMatch(both.html, /only way you can sign in/);
  });

  it("does not remove someone else's passkey: answered as if it did not exist", async () => {
    const passkey = new SoftwarePasskey();
    await register(passkey, other);
    const { browser, page } = await accountPage(user);
    const answer = await browser.request('/account/passkeys/remove', {
      form: {
        csrf_token: browser.form(page, '/account/passkeys/remove').fields['csrf_token'] ?? browser.form(page, '/account/totp/setup').fields['csrf_token']!,
        passkey_id: passkey.id,
      },
    });
    assert.equal(answer.status, 404);
    assert.match(answer.html, /no such passkey on your account/);
    assert.ok(await server.store.passkeys.get(passkey.id));
  });

  it("refuses a registration for another origin or RP ID, a replayed one, and one answering another person's challenge", async () => {
    const forOrigin = await register(new SoftwarePasskey(), user, { origin: 'https://evil.example' });
    assert.equal(forOrigin.answer.status, 400);
    assert.match(forOrigin.answer.html, /could not be verified, so it was not added/);
    const forRp = await register(new SoftwarePasskey(), user, { rpId: 'evil.example' });
    assert.equal(forRp.answer.status, 400);

    const passkey = new SoftwarePasskey();
    const first = await register(passkey);
    assert.equal(first.answer.status, 303);
    const replay = await first.browser.submit(first.page, '/account/passkeys', { name: 'Again', response: JSON.stringify(first.response) });
    assert.equal(replay.status, 400);
    assert.match(replay.html, /expired or was already used/);

    // Alan asks for options; Grace's browser answers them: the challenge is Alan's.
    const alan = await accountPage(other);
    const creation = await options(alan.browser, alan.page, '/account/passkeys', '/account/passkeys/options');
    const grace = await accountPage(user);
    const crossed = await grace.browser.submit(grace.page, '/account/passkeys', {
      name: 'Crossed',
      response: JSON.stringify(new SoftwarePasskey().register(creation, server.url)),
    });
    assert.equal(crossed.status, 400);
    assert.match(crossed.html, /expired or was already used/);
  });

  it('lets only a session that proved a passkey or a code add or remove one once the account has one: the password alone is refused', async () => {
    const ada = await server.addUser();
    const passkey = new SoftwarePasskey();
    assert.equal((await register(passkey, ada)).answer.status, 303, 'the first one, from a password sign-in');

    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request('/account'));
    const page = await browser.follow(await browser.submit(login, '/login', { username: ada.username, password: ada.password }));
    const refusal = /sign in again with your passkey, or with your password and a one-time code/;
    // The page says so, and offers no button whose post would be refused.
    assert.match(page.html, refusal);
    for (const action of ['/account/totp/setup', '/account/passkeys', '/account/passkeys/remove']) {
      assert.ok(!page.html.includes(`action="${action}"`), `no form posting to ${action}`);
    }
    const csrf = browser.form(page, '/account/password').fields['csrf_token']!;
    const setup = await browser.request('/account/totp/setup', { form: { csrf_token: csrf } });
    assert.equal(setup.status, 403);
    assert.match(setup.html, refusal);
    assert.equal(await server.store.totp.get(ada.id), null, 'nothing set up');
    const creation = await browser.request('/account/passkeys/options', { form: { csrf_token: csrf } });
    assert.equal(creation.status, 403);
    const inGerman = await browser.request('/account/totp/setup', { form: { csrf_token: csrf }, headers: { 'accept-language': 'de' } });
    assert.equal(inGerman.status, 403);
    assert.match(inGerman.html, /melden Sie sich erneut mit Ihrem Passkey an/, "in the person's language");
    const removal = await browser.request('/account/passkeys/remove', { form: { csrf_token: csrf, passkey_id: passkey.id } });
    assert.equal(removal.status, 403);
    assert.match(removal.html, refusal);
    assert.ok(await server.store.passkeys.get(passkey.id), 'still there');

    // Signed in with the passkey, the same person may.
    const { browser: proved, page: account } = await accountPage(ada);
    assert.equal((await proved.submit(account, '/account/totp/setup', {})).status, 200);
    assert.equal((await register(new SoftwarePasskey(), ada, {}, 'Second key')).answer.status, 303);
  });

  it("asks for the options of either ceremony only with the page's CSRF token, and registration only when signed in", async () => {
    const browser = new FormBrowser(server.url);
    await browser.request('/login');
    assert.equal((await browser.request('/login/passkey/options', { form: { csrf_token: 'wrong' } })).status, 403);
    const page = await browser.request('/login');
    const csrf = browser.form(page, '/login').fields['csrf_token']!;
    assert.equal((await browser.request('/account/passkeys/options', { form: { csrf_token: csrf } })).status, 401);
  });

  it('serves the WebAuthn scripts from this server, and the sign-in page allows only them', async () => {
    const page = await new FormBrowser(server.url).request('/login');
    assert.match(page.html, /<script src="\/assets\/webauthn.js" defer><\/script>/);
    assert.match(page.html, /autocomplete="username webauthn"/, 'conditional UI: passkeys in the username autofill');
    assert.match(page.html, /<button type="button" id="passkey-button">Sign in with a passkey<\/button>/);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|https:/);
    const script = await fetch(`${server.url}/assets/webauthn.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /text\/javascript/);
    assert.match(await script.text(), /SimpleWebAuthnBrowser/);
    assert.equal((await fetch(`${server.url}/assets/passkeys.js`)).status, 200);
  });
});

describe('the "second factor required" step for an account that has a passkey', () => {
  it('does not let a password sign-in set up a code there: the person is asked for their passkey', async () => {
    const clock = new ManualClock(Date.now());
    const server = await startTestServer({ issuerHost: 'localhost', clock, env: { TESSERA_REQUIRE_SECOND_FACTOR: 'on' } });
    try {
      const user = await server.addUser();
      const client = await server.addClient({ name: 'Photo Printer' });
      // The passkey, set up from a password sign-in while the account had no second factor.
      const passkey = new SoftwarePasskey();
      const setup = new FormBrowser(server.url);
      const first = await setup.follow(
        await setup.submit(await setup.follow(await setup.request('/account')), '/login', { username: user.username, password: user.password }),
      );
      const creation = JSON.parse(
        (await setup.request('/account/passkeys/options', { form: { csrf_token: setup.form(first, '/account/passkeys').fields['csrf_token']! } })).html,
      ) as Record<string, unknown>;
      assert.equal(
        (await setup.submit(first, '/account/passkeys', { name: 'Phone', response: JSON.stringify(passkey.register(creation, server.url)) })).status,
        303,
      );

      // Someone with the password alone, at the step that asks for a second factor.
      const config = await appConfig(server, client);
      const { url } = await pkceRequest(config);
      const thief = new FormBrowser(server.url);
      const login = await thief.follow(await thief.request(url.href));
      const asked = await thief.follow(await thief.submit(login, '/login', { username: user.username, password: user.password }));
      assert.match(asked.html, /Approving needs a second factor/);
      const link = /<a href="(\/account\?return_to=[^"]+)">/.exec(asked.html)![1]!.replace(/&amp;/g, '&');
      const account = await thief.follow(await thief.request(link));
      assert.match(account.html, /sign in again with your passkey/, 'the account page says how, and offers no set-up');
      assert.ok(!account.html.includes('action="/account/totp/setup"'));
      const csrf = thief.form(account, '/account/password').fields['csrf_token']!;
      const refused = await thief.request('/account/totp/setup', { form: { csrf_token: csrf } });
      assert.equal(refused.status, 403);
      assert.match(refused.html, /sign in again with your passkey/);
      assert.equal(await server.store.totp.get(user.id), null);
      const again = await thief.follow(await thief.request(url.href));
      assert.match(again.html, /Approving needs a second factor/, 'still one factor');
    } finally {
      await server.close();
    }
  });
});

describe('passkeys on an issuer that is an IP address', () => {
  it('offers none: an RP ID must be a domain', async () => {
    const server = await startTestServer();
    try {
      const page = await new FormBrowser(server.url).request('/login');
      assert.doesNotMatch(page.html, /Sign in with a passkey/);
      assert.match(page.html, /autocomplete="username"/);
    } finally {
      await server.close();
    }
  });
});

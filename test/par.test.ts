import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import { assertApprovalPage, assertSignInPage, FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { text } from './helpers/device.ts';
import { approveAt, authorizationUrl, codeRequest, discover, dpopKey, handKeys, handProof, pushRequest, redeemCode, redeemedTokens } from './helpers/dpop.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { clockAtStart } from './helpers/clock.ts';

describe('pushed authorization requests (RFC 9126)', () => {
  const clock = clockAtStart();
  let server: TestServer;
  let as: oauth.AuthorizationServer;
  let client: TestClient;
  let spa: TestClient;
  let user: TestUser;
  let parUrl: string;

  before(async () => {
    ({ server, client, user } = await startWithApp({ server: { clock }, client: { name: 'Photo Printer' } }));
    spa = await server.addClient({ name: 'Notes', public: true });
    as = await discover(server);
    parUrl = `${server.url}/oauth/par`;
  });
  after(() => server.close());

  const push = (who: TestClient, params: Record<string, string> | URLSearchParams) => pushRequest(as, who, params);

  function authorizeUrl(clientId: string, requestUri: string, extra: Record<string, string> = {}): URL {
    return authorizationUrl(as, clientId, { ...extra, request_uri: requestUri });
  }

  /** The error the browser is sent to the client's redirect URI with. */
  function redirectedError(page: { status: number; location: string | null; html: string }): URLSearchParams {
    assert.equal(page.status, 303, page.html.slice(0, 300));
    const location = new URL(page.location!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
    return location.searchParams;
  }

  it('a public client pushes with its client_id, and the flow ends in Bearer tokens', async () => {
    const request = await codeRequest('openid');
    const pushed = await push(spa, request.params);
    const callback = await approveAt(as, spa, authorizeUrl(spa.clientId, pushed.request_uri), user, request.state);
    const tokens = await redeemedTokens(as, spa, await redeemCode(as, spa, callback, request), request);
    assert.equal(tokens.token_type, 'bearer');
  });

  it('ignores the parameters sent beside request_uri', async () => {
    const request = await codeRequest('openid');
    const pushed = await push(client, request.params);
    const browser = new FormBrowser(server.url);
    const url = authorizeUrl(client.clientId, pushed.request_uri, { scope: 'openid email', redirect_uri: 'https://evil.example/cb', state: 'forged' });
    let page = await browser.follow(await browser.request(url.href));
    page = await browser.signIn(page, user);
    assertApprovalPage(page, '/oauth/authorize/decision');
    assert.doesNotMatch(text(page), /email/i);
    const decided = await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' });
    const params = redirectedError(decided);
    assert.equal(params.get('state'), request.state);
    assert.ok(params.get('code'));
  });

  it('refuses a used request_uri: again in the same browser, in another, and as a second decision', async () => {
    const request = await codeRequest('openid');
    const pushed = await push(client, request.params);
    const browser = new FormBrowser(server.url);
    const url = authorizeUrl(client.clientId, pushed.request_uri);
    let page = await browser.follow(await browser.request(url.href));
    page = await browser.signIn(page, user);
    assertApprovalPage(page, '/oauth/authorize/decision');

    // Another browser cannot take over a request_uri claimed by the first; the state stays with its own browser.
    const intruder = redirectedError(await new FormBrowser(server.url).request(url.href));
    assert.equal(intruder.get('error'), 'invalid_request_uri');
    assert.equal(intruder.get('state'), null);

    const form = browser.form(page, '/oauth/authorize/decision');
    const decided = await browser.request(new URL(form.action, page.url).href, { form: { ...form.fields, decision: 'approve' } });
    assert.ok(redirectedError(decided).get('code'));
    const second = redirectedError(await browser.request(new URL(form.action, page.url).href, { form: { ...form.fields, decision: 'approve' } }));
    assert.equal(second.get('error'), 'invalid_request_uri');
    const reopened = redirectedError(await browser.request(url.href));
    assert.equal(reopened.get('error'), 'invalid_request_uri');
    assert.equal(reopened.get('state'), request.state);
  });

  it('refuses an expired request_uri after 60 seconds', async () => {
    const request = await codeRequest('openid');
    const pushed = await push(client, request.params);
    clock.advance(61_000);
    const params = redirectedError(await new FormBrowser(server.url).request(authorizeUrl(client.clientId, pushed.request_uri).href));
    assert.equal(params.get('error'), 'invalid_request_uri');
    assert.equal(params.get('state'), request.state);
  });

  it("refuses another client's request_uri at the client's redirect URI, an unknown one too, and shows a page for an unknown client", async () => {
    const request = await codeRequest('openid');
    const pushed = await push(spa, request.params);
    const browser = new FormBrowser(server.url);
    for (const requestUri of [pushed.request_uri, 'urn:ietf:params:oauth:request_uri:unknown', 'https://example.com/request']) {
      const params = redirectedError(await browser.request(authorizeUrl(client.clientId, requestUri).href));
      assert.equal(params.get('error'), 'invalid_request_uri');
      assert.equal(params.get('state'), null);
    }
    const several = await server.addClient({ redirectUris: [REDIRECT_URI, 'http://127.0.0.1:9/other'] });
    const page = await browser.request(authorizeUrl(several.clientId, pushed.request_uri).href);
    assert.equal(page.status, 400);
    assert.equal(page.location, null);
    assert.match(text(page), /request_uri has expired, has been used, or is not one this client pushed/);
    const unknown = await browser.request(authorizeUrl('no-such-client', pushed.request_uri).href);
    assert.equal(unknown.status, 400);
    assert.equal(unknown.location, null);
    // The refused attempts left the request usable by its own client.
    await approveAt(as, spa, authorizeUrl(spa.clientId, pushed.request_uri), user, request.state);
  });

  it('asks a signed-in browser to sign in again for a pushed prompt=login: after signing in, the approval comes', async () => {
    const browser = new FormBrowser(server.url);
    const first = await codeRequest('openid');
    await approveAt(as, client, authorizeUrl(client.clientId, (await push(client, first.params)).request_uri), user, first.state, browser);
    const request = await codeRequest('openid');
    const pushed = await push(client, { ...request.params, prompt: 'login consent' });
    const page = await browser.follow(await browser.request(authorizeUrl(client.clientId, pushed.request_uri).href));
    assertSignInPage(page);
    assertApprovalPage(await browser.signIn(page, user), '/oauth/authorize/decision');
  });

  it('keeps asking for the sign-in a pushed prompt=login or max_age=0 asks for until one is made: the address again, or the one to come back to, is none (OIDC Core §3.1.2.1)', async () => {
    const browser = new FormBrowser(server.url);
    const first = await codeRequest('openid');
    await approveAt(as, client, authorizeUrl(client.clientId, (await push(client, first.params)).request_uri), user, first.state, browser);
    for (const asks of [{ prompt: 'login' }, { max_age: '0' }] as Record<string, string>[]) {
      // Later than the browser's sign-in: the test's clock stands still otherwise.
      clock.advance(1000);
      const request = await codeRequest('openid');
      // Without prompt=consent: the remembered approval would answer at once, with a code.
      const { prompt: _consent, ...remembered } = request.params;
      const url = authorizeUrl(client.clientId, (await push(client, { ...remembered, ...asks })).request_uri).href;
      const signInPage = await browser.follow(await browser.request(url));
      assertSignInPage(signInPage);
      assertSignInPage(await browser.follow(await browser.request(url)));
      const returnTo = browser.form(signInPage, '/login').fields['return_to']!;
      assertSignInPage(await browser.follow(await browser.request(returnTo)));
      // The time it asked, moved back before the browser's sign-in, no longer matches its MAC.
      const backdated = new URL(returnTo, server.url);
      backdated.searchParams.set('sign_in_asked', backdated.searchParams.get('sign_in_asked')!.replace(/^\d+/, '0'));
      assertSignInPage(await browser.follow(await browser.request(backdated.href)));

      clock.advance(1000);
      const answered = await browser.signIn(signInPage, user);
      const callback = oauth.validateAuthResponse(as, { client_id: client.clientId }, new URL(answered.location!), request.state);
      assert.match(callback.get('code') ?? '', /^[A-Za-z0-9_-]{43}$/, JSON.stringify(asks));
    }
  });

  it('ends with login_required, not the sign-in page again, when someone other than the person a pushed id_token_hint names signs in (OIDC Core §3.1.2.1)', async () => {
    const first = await codeRequest('openid');
    const callback = await approveAt(as, client, authorizeUrl(client.clientId, (await push(client, first.params)).request_uri), user, first.state);
    const { id_token: hint } = await redeemedTokens(as, client, await redeemCode(as, client, callback, first), first);
    const gus = await server.addUser({ username: 'gus' });
    const browser = new FormBrowser(server.url);
    await browser.signIn(await browser.follow(await browser.request('/login?return_to=%2Faccount')), gus);
    // Later than Gus's sign-in: the test's clock stands still otherwise.
    clock.advance(1000);
    const request = await codeRequest('openid');
    const url = authorizeUrl(client.clientId, (await push(client, { ...request.params, id_token_hint: hint! })).request_uri).href;
    const page = await browser.follow(await browser.request(url));
    assertSignInPage(page);
    clock.advance(1000);
    // The pushed request comes back from the sign-in still hinting at another person: ended, not asked again.
    const refused = redirectedError(await browser.signIn(page, gus));
    assert.equal(refused.get('error'), 'login_required');
    assert.equal(refused.get('state'), request.state);
    assert.equal(refused.get('code'), null);

    const again = await codeRequest('openid');
    const answered = await approveAt(
      as,
      client,
      authorizeUrl(client.clientId, (await push(client, { ...again.params, id_token_hint: hint! })).request_uri),
      user,
      again.state,
      browser,
    );
    const tokens = await redeemedTokens(as, client, await redeemCode(as, client, answered, again), again);
    assert.equal(decodeJwt(tokens.id_token!).sub, user.id);
  });

  it('answers bad pushed requests with JSON errors, never a redirect', async () => {
    const request = await codeRequest('openid');
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const cases: [Record<string, string>, Record<string, string>, number, string][] = [
      [{ ...request.params, code_challenge: '' }, auth, 400, 'invalid_request'],
      [{ ...request.params, request_uri: 'urn:ietf:params:oauth:request_uri:x' }, auth, 400, 'invalid_request'],
      [{ ...request.params, redirect_uri: 'https://evil.example/cb' }, auth, 400, 'invalid_request'],
      [{ ...request.params, scope: 'openid admin' }, auth, 400, 'invalid_scope'],
      [{ ...request.params, response_type: 'token' }, auth, 400, 'unsupported_response_type'],
      [{ ...request.params, dpop_jkt: 'short' }, auth, 400, 'invalid_request'],
      [{ ...request.params, client_id: spa.clientId }, auth, 401, 'invalid_client'],
      [request.params, { authorization: basic(client.clientId, 'wrong') }, 401, 'invalid_client'],
      [request.params, {}, 401, 'invalid_client'],
    ];
    for (const [form, headers, status, error] of cases) {
      const result = await postForm(parUrl, form, headers);
      assert.equal(result.status, status, JSON.stringify([form, result.body]));
      assert.equal(result.body['error'], error);
      assert.equal(result.headers.get('location'), null);
    }
    const repeated = await postForm(parUrl, `${new URLSearchParams(request.params).toString()}&scope=openid`, auth);
    assert.equal(repeated.body['error'], 'invalid_request');
    // §2.3: "If the request did not use the POST method, the authorization server responds with an HTTP 405".
    const get = await fetch(parUrl);
    assert.equal(get.status, 405);
    assert.deepEqual(
      get.headers
        .get('allow')
        ?.split(', ')
        .filter((method) => method !== 'OPTIONS'),
      ['POST'],
    );
  });

  it('keeps several resource values of a pushed request (RFC 8707), and the token names the one asked for', async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    for (const [identifier, scope] of [
      ['https://photos.example', 'photos:read=See your photos'],
      ['https://calendar.example', 'calendar:read=See your calendar'],
    ] as const) {
      const added = await runTessera(['resource', 'add', '--identifier', identifier, '--name', identifier.slice(8), '--scope', scope], env);
      assert.equal(added.code, 0, added.stderr);
    }
    const both = await server.addClient({ scopes: ['openid', 'photos:read', 'calendar:read'] });
    const request = await codeRequest('openid photos:read calendar:read');
    const params = new URLSearchParams(request.params);
    params.append('resource', 'https://photos.example');
    params.append('resource', 'https://calendar.example');
    const pushed = await push(both, params);
    const browser = new FormBrowser(server.url);
    const page = await browser.signIn(await browser.follow(await browser.request(authorizeUrl(both.clientId, pushed.request_uri).href)), user);
    assertApprovalPage(page, '/oauth/authorize/decision');
    assert.match(text(page), /photos\.example.*calendar\.example|calendar\.example.*photos\.example/);
    const callback = oauth.validateAuthResponse(
      as,
      { client_id: both.clientId },
      new URL((await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' })).location!),
      request.state,
    );
    const tokens = await redeemedTokens(
      as,
      both,
      await redeemCode(as, both, callback, request, { additionalParameters: { resource: 'https://calendar.example' } }),
      request,
    );
    assert.equal(decodeJwt(tokens.access_token).aud, 'https://calendar.example');
    assert.equal(tokens.scope, 'openid calendar:read');
  });

  it('binds the code to the key of a proof sent with the push, and refuses a dpop_jkt of another key', async () => {
    const { keys } = await handKeys();
    const request = await codeRequest('openid');
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const other = await handKeys();
    const mismatch = await postForm(
      parUrl,
      { ...request.params, dpop_jkt: other.jkt },
      { ...auth, dpop: await handProof(keys, { htu: parUrl, iat: Math.floor(clock.now() / 1000) }) },
    );
    assert.equal(mismatch.body['error'], 'invalid_dpop_proof');
    const wrongHtu = await postForm(parUrl, request.params, {
      ...auth,
      dpop: await handProof(keys, { htu: `${server.url}/oauth/token`, iat: Math.floor(clock.now() / 1000) }),
    });
    assert.equal(wrongHtu.body['error'], 'invalid_dpop_proof');
    const pushed = await postForm(parUrl, request.params, { ...auth, dpop: await handProof(keys, { htu: parUrl, iat: Math.floor(clock.now() / 1000) }) });
    assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
    const callback = await approveAt(as, client, authorizeUrl(client.clientId, pushed.body['request_uri'] as string), user, request.state);
    const withoutProof = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'authorization_code', code: callback.get('code')!, redirect_uri: REDIRECT_URI, code_verifier: request.verifier },
      auth,
    );
    assert.equal(withoutProof.body['error'], 'invalid_dpop_proof');
    const withProof = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'authorization_code', code: callback.get('code')!, redirect_uri: REDIRECT_URI, code_verifier: request.verifier },
      { ...auth, dpop: await handProof(keys, { htu: `${server.url}/oauth/token`, iat: Math.floor(clock.now() / 1000) }) },
    );
    assert.equal(withProof.status, 200, JSON.stringify(withProof.body));
    assert.equal(withProof.body['token_type'], 'DPoP');
  });
});

describe('client add --require-dpop and --require-par', () => {
  let server: TestServer, as: oauth.AuthorizationServer, user: TestUser;

  before(async () => {
    server = await startTestServer();
    user = await server.addUser();
    as = await discover(server);
  });
  after(() => server.close());

  async function register(...flags: string[]): Promise<TestClient & { json: Record<string, unknown> }> {
    const result = await runTessera(
      ['client', 'add', '--name', 'Strict', '--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code', '--grant', 'device_code', ...flags, '--json'],
      { TESSERA_DATABASE: server.config.database },
    );
    assert.equal(result.code, 0, result.stderr);
    const json = JSON.parse(result.stdout) as Record<string, unknown>;
    return { clientId: json['client_id'] as string, clientSecret: (json['client_secret'] as string | undefined) ?? '', json };
  }

  it('--require-dpop takes a device authorization without a proof (RFC 9449 defines none there), refuses token requests without one, and takes them with one', async () => {
    const strict = await register('--require-dpop');
    assert.equal(strict.json['dpop_bound_access_tokens'], true);
    const listed = JSON.parse((await runTessera(['client', 'list', '--json'], { TESSERA_DATABASE: server.config.database })).stdout) as Record<
      string,
      unknown
    >[];
    assert.equal(listed.find((entry) => entry['client_id'] === strict.clientId)?.['dpop_bound_access_tokens'], true);
    const auth = { authorization: basic(strict.clientId, strict.clientSecret) };
    const device = await postForm(`${server.url}/oauth/device/authorization`, { scope: 'openid' }, auth);
    assert.equal(device.status, 200, JSON.stringify(device.body));
    const poll = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.body['device_code'] as string },
      auth,
    );
    assert.deepEqual([poll.status, poll.body['error']], [400, 'invalid_dpop_proof']);
    assert.match(String(poll.body['error_description']), new RegExp(`at ${server.url}/oauth/token\\)$`), 'names the endpoint that wanted the proof');

    const request = await codeRequest('openid');
    const callback = await approveAt(as, strict, authorizationUrl(as, strict.clientId, request.params), user, request.state);
    const plain = await redeemCode(as, strict, callback, request);
    assert.equal(plain.status, 400);
    assert.equal(((await plain.json()) as { error: string }).error, 'invalid_dpop_proof');
    const key = await dpopKey(strict);
    const tokens = await redeemedTokens(as, strict, await redeemCode(as, strict, callback, request, { DPoP: key.handle }), request);
    assert.equal(tokens.token_type, 'dpop');

    const env = { TESSERA_DATABASE: server.config.database };
    const relaxed = await runTessera(['client', 'update', strict.clientId, '--no-require-dpop', '--json'], env);
    assert.equal(relaxed.code, 0, relaxed.stderr);
    assert.equal((JSON.parse(relaxed.stdout) as Record<string, unknown>)['dpop_bound_access_tokens'], undefined, 'false, so left out (RFC 9449 §5.2)');
    const withoutProof = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: device.body['device_code'] as string },
      auth,
    );
    assert.deepEqual([withoutProof.status, withoutProof.body['error']], [400, 'authorization_pending'], 'no proof needed once the requirement is off');
  });

  it('--require-par refuses an authorization request sent in the URL, at the redirect URI, and takes a pushed one', async () => {
    const strict = await register('--require-par');
    assert.equal(strict.json['require_pushed_authorization_requests'], true);
    const request = await codeRequest('openid');
    const page = await new FormBrowser(server.url).request(authorizationUrl(as, strict.clientId, request.params).href);
    assert.equal(page.status, 303);
    const location = new URL(page.location!);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
    assert.match(location.searchParams.get('error_description') ?? '', /push/);

    const pushed = await pushRequest(as, strict, request.params);
    assert.ok((await approveAt(as, strict, authorizationUrl(as, strict.clientId, { request_uri: pushed.request_uri }), user, request.state)).get('code'));
  });

  it("TESSERA_REQUIRE_PAR refuses every client's unpushed request and says so in discovery", async () => {
    const strictServer = await startTestServer({ env: { TESSERA_REQUIRE_PAR: 'true' } });
    try {
      const strictAs = await discover(strictServer);
      assert.equal(strictAs.require_pushed_authorization_requests, true);
      const any = await strictServer.addClient();
      const request = await codeRequest('openid');
      const page = await new FormBrowser(strictServer.url).request(authorizationUrl(strictAs, any.clientId, request.params).href);
      assert.equal(new URL(page.location!).searchParams.get('error'), 'invalid_request');
      const pushed = await pushRequest(strictAs, any, request.params);
      const strictUser = await strictServer.addUser();
      assert.ok(
        (await approveAt(strictAs, any, authorizationUrl(strictAs, any.clientId, { request_uri: pushed.request_uri }), strictUser, request.state)).get('code'),
      );
    } finally {
      await strictServer.close();
    }
  });

  it('refuses --require-par for a client without the authorization_code grant', async () => {
    const result = await runTessera(['client', 'add', '--name', 'TV', '--grant', 'device_code', '--require-par'], { TESSERA_DATABASE: server.config.database });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--require-par/);
  });
});

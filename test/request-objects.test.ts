/**
 * Request objects (RFC 9101 JAR, OIDC Core §6.1 and §6.3): signed ones through openid-client's
 * JAR support, unsigned ones and every refusal over raw HTTP.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { assertApprovalPage, assertSignInPage, FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

describe('request objects (RFC 9101, OIDC Core §6.1)', () => {
  let server: TestServer;
  let user: TestUser;
  let key: { privateKey: CryptoKey; publicJwk: JWK };
  /** Registered with its public key and no algorithm: any asymmetric one, signed only. */
  let signing: TestClient;
  let signingConfig: oidc.Configuration;
  /** Registered with request_object_signing_alg RS256. */
  let rs256: TestClient;
  /** Registered with request_object_signing_alg none. */
  let unsigned: TestClient;

  before(async () => {
    const pair = await generateKeyPair('ES256');
    key = { privateKey: pair.privateKey, publicJwk: { ...(await exportJWK(pair.publicKey)), kid: 'request-key', alg: 'ES256' } };
    const jwks = { keys: [key.publicJwk] };
    ({ server, user, client: signing, config: signingConfig } = await startWithApp({ client: { name: 'Bank', jwks } }));
    rs256 = await server.addClient({ name: 'Strict Bank', jwks, requestObjectSigningAlg: 'RS256' });
    unsigned = await server.addClient({ name: 'Certification', requestObjectSigningAlg: 'none' });
  });
  after(() => server.close());

  async function pkce() {
    const verifier = oidc.randomPKCECodeVerifier();
    return { verifier, challenge: await oidc.calculatePKCECodeChallenge(verifier) };
  }

  /** The claims of an authorization request for `client`, as a request object carries them. */
  async function requestClaims(client: TestClient, extra: Record<string, unknown> = {}) {
    const { verifier, challenge } = await pkce();
    const claims = {
      iss: client.clientId,
      aud: server.url,
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid profile',
      state: oidc.randomState(),
      nonce: oidc.randomNonce(),
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...extra,
    };
    return { claims, verifier };
  }

  const sign = (claims: Record<string, unknown>, privateKey: CryptoKey = key.privateKey, kid = 'request-key') =>
    new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid, typ: 'oauth-authz-req+jwt' }).setIssuedAt().setExpirationTime('5m').sign(privateKey);

  /** Opens `/oauth/authorize` with `query` and returns where it sends the browser. */
  async function refusedAt(query: Record<string, string>): Promise<URL> {
    const response = await fetch(`${server.url}/oauth/authorize?${new URLSearchParams(query)}`, { redirect: 'manual' });
    assert.equal(response.status, 303, await response.text());
    return new URL(response.headers.get('location')!);
  }

  function assertRefused(location: URL, state: string | null, description: RegExp) {
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
    assert.equal(location.searchParams.get('error'), 'invalid_request_object');
    assert.match(location.searchParams.get('error_description') ?? '', description);
    assert.equal(location.searchParams.get('state'), state);
    assert.equal(location.searchParams.get('iss'), server.url);
    assert.equal(location.searchParams.get('code'), null);
  }

  it('completes a sign-in whose request is a signed request object built by openid-client (buildAuthorizationUrlWithJAR)', async () => {
    const { verifier, challenge } = await pkce();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = await oidc.buildAuthorizationUrlWithJAR(
      signingConfig,
      {
        redirect_uri: REDIRECT_URI,
        scope: 'openid profile',
        state,
        nonce,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      },
      { key: key.privateKey, kid: 'request-key' },
    );
    assert.deepEqual([...url.searchParams.keys()].sort(), ['client_id', 'request'], 'everything but client_id is in the request object');
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    assert.ok(page.location?.startsWith(REDIRECT_URI), page.location ?? page.html);
    const tokens = await oidc.authorizationCodeGrant(signingConfig, new URL(page.location!), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
    });
    assert.equal(tokens.claims()!.sub, user.id);
    assert.equal(tokens.scope, 'openid profile');
  });

  it('takes a signed request object pushed with PAR (RFC 9126 §3), through openid-client', async () => {
    const { verifier, challenge } = await pkce();
    const state = oidc.randomState();
    const jar = await oidc.buildAuthorizationUrlWithJAR(
      signingConfig,
      {
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        state,
        code_challenge: challenge,
        code_challenge_method: 'S256',
        // What the browser adds to the URL is ignored beside a request_uri: the approval page is asked for here.
        prompt: 'consent',
      },
      { key: key.privateKey, kid: 'request-key' },
    );
    const url = await oidc.buildAuthorizationUrlWithPAR(signingConfig, jar.searchParams);
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    assert.ok(page.location?.startsWith(REDIRECT_URI), page.location ?? page.html);
    const tokens = await oidc.authorizationCodeGrant(signingConfig, new URL(page.location!), { pkceCodeVerifier: verifier, expectedState: state });
    assert.equal(tokens.claims()!.sub, user.id);
  });

  it("uses the request object's values over the query's (OIDC Core §6.3.3), redirect_uri included", async () => {
    const { claims, verifier } = await requestClaims(signing, { scope: 'openid profile' });
    const query = { client_id: signing.clientId, response_type: 'code', scope: 'openid', state: 'from-the-query', request: await sign(claims) };
    const page = await new FormBrowser(server.url).authorize(`/oauth/authorize?${new URLSearchParams(query)}`, user);
    const location = new URL(page.location!);
    assert.equal(location.searchParams.get('state'), claims.state);
    const tokens = await oidc.authorizationCodeGrant(signingConfig, location, {
      pkceCodeVerifier: verifier,
      expectedState: claims.state,
      expectedNonce: claims.nonce,
    });
    assert.equal(tokens.scope, 'openid profile');
  });

  it('asks once for the sign-in that prompt=login or max_age=0 inside a signed request object asks for: after it, the approval page (OIDC Core §3.1.2.1)', async () => {
    const browser = new FormBrowser(server.url);
    await browser.signIn(await browser.follow(await browser.request('/login?return_to=%2Faccount')), user);
    for (const asks of [{ prompt: 'login consent' }, { max_age: 0, prompt: 'consent' }]) {
      const { claims, verifier } = await requestClaims(signing, asks);
      const url = `/oauth/authorize?${new URLSearchParams({ client_id: signing.clientId, request: await sign(claims) })}`;
      const signInPage = await browser.follow(await browser.request(url));
      assertSignInPage(signInPage);
      assertSignInPage(await browser.follow(await browser.request(url)));
      const approval = await browser.signIn(signInPage, user);
      assertApprovalPage(approval, '/oauth/authorize/decision');
      const decided = await browser.submit(approval, '/oauth/authorize/decision', { decision: 'approve' });
      const tokens = await oidc.authorizationCodeGrant(signingConfig, new URL(decided.location!), {
        pkceCodeVerifier: verifier,
        expectedState: claims.state,
        expectedNonce: claims.nonce,
        ...('max_age' in asks ? { maxAge: 0 } : {}),
      });
      assert.equal(tokens.claims()!.sub, user.id, JSON.stringify(asks));
    }
  });

  it('ends with login_required, not the sign-in page again, when someone other than the person the id_token_hint of a signed request object names signs in (OIDC Core §3.1.2.1)', async () => {
    const authorizeWith = async (claims: Record<string, unknown>) =>
      `/oauth/authorize?${new URLSearchParams({ client_id: signing.clientId, request: await sign(claims) })}`;
    const first = await requestClaims(signing, { prompt: 'consent' });
    const issued = await new FormBrowser(server.url).authorize(await authorizeWith(first.claims), user);
    const { id_token: hint } = await oidc.authorizationCodeGrant(signingConfig, new URL(issued.location!), {
      pkceCodeVerifier: first.verifier,
      expectedState: first.claims.state,
      expectedNonce: first.claims.nonce,
    });
    const hal = await server.addUser({ username: 'hal' });
    const browser = new FormBrowser(server.url);
    await browser.signIn(await browser.follow(await browser.request('/login?return_to=%2Faccount')), hal);

    const { claims } = await requestClaims(signing, { id_token_hint: hint });
    const page = await browser.follow(await browser.request(await authorizeWith(claims)));
    assertSignInPage(page);
    // The request object comes back from the sign-in still hinting at another person: ended, not asked again.
    const refused = await browser.signIn(page, hal);
    assert.equal(refused.status, 303, refused.html.slice(0, 300));
    const location = new URL(refused.location!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
    assert.equal(location.searchParams.get('error'), 'login_required');
    assert.equal(location.searchParams.get('state'), claims.state);
    assert.equal(location.searchParams.get('code'), null);

    const again = await requestClaims(signing, { id_token_hint: hint, prompt: 'consent' });
    const decided = await browser.authorize(await authorizeWith(again.claims), user);
    const tokens = await oidc.authorizationCodeGrant(signingConfig, new URL(decided.location!), {
      pkceCodeVerifier: again.verifier,
      expectedState: again.claims.state,
      expectedNonce: again.claims.nonce,
    });
    assert.equal(tokens.claims()!.sub, user.id);
  });

  it('takes an unsigned request object (alg none) from a client registered with request_object_signing_alg none', async () => {
    const { claims } = await requestClaims(unsigned);
    const request = new UnsecuredJWT(claims).setIssuedAt().setExpirationTime('5m').encode();
    const page = await new FormBrowser(server.url).authorize(
      `/oauth/authorize?${new URLSearchParams({ client_id: unsigned.clientId, response_type: 'code', scope: 'openid', request })}`,
      user,
    );
    const location = new URL(page.location!);
    assert.equal(location.searchParams.get('state'), claims.state);
    assert.match(location.searchParams.get('code') ?? '', /^[A-Za-z0-9_-]{43}$/);
  });

  it('takes an unsigned request object from a client that registered no algorithm, as discovery lists none (OIDC Registration §2)', async () => {
    const { claims } = await requestClaims(signing);
    const request = new UnsecuredJWT(claims).setIssuedAt().setExpirationTime('5m').encode();
    const page = await new FormBrowser(server.url).authorize(
      `/oauth/authorize?${new URLSearchParams({ client_id: signing.clientId, response_type: 'code', scope: 'openid', request })}`,
      user,
    );
    const location = new URL(page.location!);
    assert.equal(location.searchParams.get('state'), claims.state);
    assert.match(location.searchParams.get('code') ?? '', /^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses an unsigned request object from a client that registered a signing algorithm, with invalid_request_object at the redirect URI', async () => {
    for (const client of [rs256]) {
      const { claims } = await requestClaims(client);
      const request = new UnsecuredJWT(claims).encode();
      assertRefused(await refusedAt({ client_id: client.clientId, request }), claims.state, /unsigned request objects/);
    }
  });

  it('refuses a request object signed with another algorithm than the one the client registered', async () => {
    const { claims } = await requestClaims(rs256);
    assertRefused(await refusedAt({ client_id: rs256.clientId, request: await sign(claims) }), claims.state, /must be signed with RS256/);
  });

  it('refuses a signed request object from a client that registered none', async () => {
    const { claims } = await requestClaims(unsigned);
    assertRefused(await refusedAt({ client_id: unsigned.clientId, request: await sign(claims) }), claims.state, /registered unsigned request objects/);
  });

  it("refuses a request object signed with a key that is not among the client's, or whose signature does not verify", async () => {
    const { claims } = await requestClaims(signing);
    const stranger = await generateKeyPair('ES256');
    assertRefused(
      await refusedAt({ client_id: signing.clientId, request: await sign(claims, stranger.privateKey, 'other-key') }),
      claims.state,
      /not among the client's registered keys/,
    );
    assertRefused(
      await refusedAt({ client_id: signing.clientId, request: await sign(claims, stranger.privateKey) }),
      claims.state,
      /signature verification failed/,
    );
  });

  it("refuses a request object whose client_id differs from the request's (RFC 9101 §5), or that has expired", async () => {
    const { claims } = await requestClaims(signing);
    assertRefused(
      await refusedAt({ client_id: signing.clientId, request: await sign({ ...claims, client_id: rs256.clientId }) }),
      claims.state,
      /client_id differs/,
    );
    const expired = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'request-key' })
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
      .sign(key.privateKey);
    assertRefused(await refusedAt({ client_id: signing.clientId, request: expired }), claims.state, /expired/);
    assertRefused(await refusedAt({ client_id: signing.clientId, request: await sign({ ...claims, aud: 'https://other.example' }) }), claims.state, /aud/);
  });

  it('refuses a malformed request object at the redirect URI of the query, with its state, and on an error page when no registered redirect URI is named', async () => {
    assertRefused(
      await refusedAt({ client_id: signing.clientId, redirect_uri: REDIRECT_URI, state: 'query-state', request: 'not.a-jwt' }),
      'query-state',
      /not a JWT|not a valid JWT/,
    );
    for (const request of ['not.a-jwt', 'garbage']) {
      const response = await fetch(`${server.url}/oauth/authorize?${new URLSearchParams({ client_id: signing.clientId, request })}`, { redirect: 'manual' });
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('location'), null);
      assert.match(await response.text(), /not a JWT|not a valid JWT/);
    }
    const { claims } = await requestClaims(signing, { redirect_uri: 'https://attacker.example/cb' });
    const stranger = await generateKeyPair('ES256');
    const response = await fetch(
      `${server.url}/oauth/authorize?${new URLSearchParams({ client_id: signing.clientId, request: await sign(claims, stranger.privateKey) })}`,
      { redirect: 'manual' },
    );
    assert.equal(response.status, 400, 'an unregistered redirect_uri in a refused object is never redirected to');
    assert.equal(response.headers.get('location'), null);
  });

  it('refuses at PAR, as JSON, a request object that is not valid', async () => {
    const { claims } = await requestClaims(rs256);
    const response = await fetch(`${server.url}/oauth/par`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${btoa(`${rs256.clientId}:${rs256.clientSecret}`)}` },
      body: new URLSearchParams({ client_id: rs256.clientId, request: await sign(claims) }),
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_request_object');
  });
});

describe('client add --request-object-signing-alg', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let dir: string;

  before(async () => {
    server = await startTestServer();
    env = { TESSERA_DATABASE: server.config.database };
    dir = mkdtempSync(join(tmpdir(), 'tessera-jar-'));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers a client_secret_basic client with keys for its request objects, which then signs in with JAR through openid-client', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const file = join(dir, 'keys.json');
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'jar' }] }));
    const added = await runTessera(
      [
        'client',
        'add',
        '--name',
        'Bank',
        '--redirect-uri',
        REDIRECT_URI,
        '--auth-method',
        'client_secret_basic',
        '--jwks-file',
        file,
        '--request-object-signing-alg',
        'ES256',
        '--json',
      ],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    const client = JSON.parse(added.stdout) as {
      client_id: string;
      client_secret: string;
      request_object_signing_alg: string;
      token_endpoint_auth_method: string;
    };
    assert.equal(client.request_object_signing_alg, 'ES256');
    assert.equal(client.token_endpoint_auth_method, 'client_secret_basic');
    assert.match(client.client_secret, /^[A-Za-z0-9_-]{43}$/);
    const shown = await runTessera(['client', 'show', client.client_id], env);
    assert.match(shown.stdout, /request objects: signed with ES256 only/);

    const config = await oidc.discovery(new URL(server.url), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const url = await oidc.buildAuthorizationUrlWithJAR(
      config,
      {
        redirect_uri: REDIRECT_URI,
        scope: 'openid',
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      },
      { key: privateKey, kid: 'jar' },
    );
    const user = await server.addUser();
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.location!), { pkceCodeVerifier: verifier });
    assert.equal(tokens.claims()?.sub, user.id);

    const updated = await runTessera(['client', 'update', client.client_id, '--request-object-signing-alg', 'none', '--json'], env);
    assert.equal(updated.code, 0, updated.stderr);
    assert.equal((JSON.parse(updated.stdout) as Record<string, unknown>)['request_object_signing_alg'], 'none');
    const cleared = await runTessera(['client', 'update', client.client_id, '--no-request-object-signing-alg', '--json'], env);
    assert.equal((JSON.parse(cleared.stdout) as Record<string, unknown>)['request_object_signing_alg'], undefined);
  });

  it('refuses an unknown algorithm, a signing one without keys, and keys beside a secret without one', async () => {
    const { publicKey } = await generateKeyPair('ES256');
    const file = join(dir, 'other.json');
    writeFileSync(file, JSON.stringify({ keys: [await exportJWK(publicKey)] }));
    for (const [args, message] of [
      [['--request-object-signing-alg', 'HS256'], /--request-object-signing-alg HS256: must be one of none, RS256/],
      [['--request-object-signing-alg', 'RS256'], /--request-object-signing-alg RS256 needs the client's public keys/],
      [
        ['--auth-method', 'client_secret_post', '--jwks-file', file, '--request-object-signing-alg', 'none'],
        /are for --auth-method private_key_jwt, or for signed request objects/,
      ],
    ] as const) {
      const result = await runTessera(['client', 'add', '--name', 'X', '--redirect-uri', REDIRECT_URI, ...args], env);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  });
});

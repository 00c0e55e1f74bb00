import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { freshPostgresDatabase, postgresSkip } from './helpers/postgres.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, startWithApp, type Attempt, redeemAttempt } from './helpers/fixtures.ts';

describe('authorization code flow with PKCE, through openid-client', () => {
  let server: TestServer, client: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({
      client: { name: 'Photo Printer' },
      user: { username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' },
    }));
  });
  after(() => server.close());

  /** Runs the browser part; returns the callback URL the client receives. */
  async function callback(start: Attempt, browser = new FormBrowser(server.url), decision: 'approve' | 'deny' = 'approve'): Promise<URL> {
    const page = await browser.authorize(start.url.href, user, decision);
    assert.equal(page.status, 303, page.html);
    const location = page.location ?? '';
    assert.ok(location.startsWith(REDIRECT_URI), `redirected to ${location}`);
    return new URL(location);
  }

  it('completes the flow, and the client library validates the ID token with its nonce', async () => {
    const start = await authorizationAttempt(config);
    const tokens = await redeemAttempt(config, start, await callback(start));
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(tokens.scope, 'openid profile email');
    assert.ok((tokens.expires_in ?? 0) > 0);
    const claims = tokens.claims()!;
    assert.equal(claims.iss, server.url);
    assert.equal(claims.aud, client.clientId);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.nonce, start.nonce);
    assert.equal(typeof claims.auth_time, 'number');
    // OIDC Core §5.4: with an access token issued, the claims of profile and email are the
    // UserInfo endpoint's.
    assert.equal(claims['name'], undefined);
    assert.equal(claims['email'], undefined);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    assert.equal(userinfo['name'], 'Ada Lovelace');
    assert.equal(userinfo['email'], 'ada@example.com');
  });

  it('issues an RFC 9068 access token that verifies against the published JWKS', async () => {
    const start = await authorizationAttempt(config, { scope: 'openid' });
    const tokens = await redeemAttempt(config, start, await callback(start));
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(tokens.access_token, jwks, {
      issuer: server.url,
      audience: server.url,
      typ: 'at+jwt',
    });
    assert.equal(protectedHeader.alg, 'ES256', 'ES256 by default (TESSERA_ACCESS_TOKEN_ALG)');
    assert.equal(payload.sub, user.id);
    assert.equal(payload['client_id'], client.clientId);
    assert.equal(payload['scope'], 'openid');
    assert.equal(typeof payload.jti, 'string');
    assert.equal(decodeJwt(tokens.id_token!)['email'], undefined, 'no email claim without the email scope');
  });

  it('leaves out the ID token when openid was not asked for', async () => {
    const start = await authorizationAttempt(config, { scope: 'profile' });
    const tokens = await oidc.authorizationCodeGrant(config, await callback(start), {
      pkceCodeVerifier: start.verifier,
      expectedState: start.state,
    });
    assert.equal(tokens.id_token, undefined);
    assert.equal(tokens.scope, 'profile');
  });

  it('returns the state and the issuer on the callback (RFC 9207)', async () => {
    const start = await authorizationAttempt(config);
    const url = await callback(start);
    assert.equal(url.searchParams.get('state'), start.state);
    assert.equal(url.searchParams.get('iss'), server.url);
    assert.match(url.searchParams.get('code') ?? '', /^[A-Za-z0-9_-]{43}$/);
  });

  it('sends access_denied with the state when the user denies', async () => {
    const start = await authorizationAttempt(config);
    const url = await callback(start, undefined, 'deny');
    assert.equal(url.searchParams.get('error'), 'access_denied');
    assert.equal(url.searchParams.get('state'), start.state);
    assert.equal(url.searchParams.get('code'), null);
  });

  it('refuses a wrong code_verifier with invalid_grant, and the code still works with the right one', async () => {
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const wrong = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: oidc.randomPKCECodeVerifier(),
      },
      auth,
    );
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body['error'], 'invalid_grant');
    const right = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: start.verifier,
      },
      auth,
    );
    assert.equal(right.status, 200);
  });

  it('refuses a replayed code with invalid_grant and revokes the grant it came from', async () => {
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const first = await postForm(`${server.url}/oauth/token`, form, auth);
    assert.equal(first.status, 200);
    const replay = await postForm(`${server.url}/oauth/token`, form, auth);
    assert.equal(replay.status, 400);
    assert.equal(replay.body['error'], 'invalid_grant');
    // The grant is revoked: the access token the first redemption received is dead.
    assert.equal((await oidc.tokenIntrospection(config, first.body['access_token'] as string)).active, false);
    await assert.rejects(
      oidc.fetchUserInfo(config, first.body['access_token'] as string, oidc.skipSubjectCheck),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.status === 401,
    );
  });

  it('refuses a used code replayed by another client, public or confidential, and leaves the grant alone', async () => {
    const stranger = await server.addClient({ public: true });
    const confidential = await server.addClient();
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
    const first = await postForm(`${server.url}/oauth/token`, form, { authorization: basic(client.clientId, client.clientSecret) });
    assert.equal(first.status, 200);
    const byPublic = await postForm(`${server.url}/oauth/token`, { ...form, client_id: stranger.clientId });
    assert.equal(byPublic.status, 400);
    assert.equal(byPublic.body['error'], 'invalid_grant');
    const byConfidential = await postForm(`${server.url}/oauth/token`, form, { authorization: basic(confidential.clientId, confidential.clientSecret) });
    assert.equal(byConfidential.status, 400);
    assert.equal(byConfidential.body['error'], 'invalid_grant');
    // The rightful client's tokens still work: nobody else could end its grant.
    assert.equal((await oidc.tokenIntrospection(config, first.body['access_token'] as string)).active, true);
    const info = await oidc.fetchUserInfo(config, first.body['access_token'] as string, oidc.skipSubjectCheck);
    assert.equal(info.sub, user.id);
  });

  it('issues nothing for a user disabled after approving, before the code is redeemed', async () => {
    const leaver = await server.addUser({ username: 'leaver' });
    const start = await authorizationAttempt(config);
    const page = await new FormBrowser(server.url).authorize(start.url.href, leaver);
    await server.store.users.setDisabled(leaver.id, true);
    await assert.rejects(
      redeemAttempt(config, start, page.location!),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  it('gives a code to exactly one of 20 concurrent redemptions', async () => {
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const results = await Promise.all(Array.from({ length: 20 }, () => postForm(`${server.url}/oauth/token`, form, auth)));
    assert.equal(results.filter((result) => result.status === 200).length, 1);
    for (const result of results.filter((result) => result.status !== 200)) {
      assert.equal(result.status, 400);
      assert.equal(result.body['error'], 'invalid_grant');
    }
  });

  it('refuses a code presented with another redirect_uri, or by another client', async () => {
    const other = await server.addClient();
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
    const byOther = await postForm(`${server.url}/oauth/token`, form, { authorization: basic(other.clientId, other.clientSecret) });
    assert.equal(byOther.body['error'], 'invalid_grant');
    const elsewhere = await postForm(
      `${server.url}/oauth/token`,
      { ...form, redirect_uri: 'http://127.0.0.1:9/other' },
      {
        authorization: basic(client.clientId, client.clientSecret),
      },
    );
    assert.equal(elsewhere.status, 400);
    assert.equal(elsewhere.body['error'], 'invalid_grant');
  });

  it('refuses a malformed code_verifier with invalid_grant', async () => {
    const start = await authorizationAttempt(config);
    const code = (await callback(start)).searchParams.get('code')!;
    for (const verifier of ['short', 'x'.repeat(129), `${'a'.repeat(42)} `, `${'a'.repeat(42)}+`]) {
      const result = await postForm(
        `${server.url}/oauth/token`,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
        },
        { authorization: basic(client.clientId, client.clientSecret) },
      );
      assert.equal(result.status, 400, verifier);
      assert.equal(result.body['error'], 'invalid_grant', verifier);
    }
  });

  it('refuses an unknown code with invalid_grant', async () => {
    const result = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'authorization_code',
        code: 'not-a-code',
        redirect_uri: REDIRECT_URI,
        code_verifier: oidc.randomPKCECodeVerifier(),
      },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.equal(result.status, 400);
    assert.equal(result.body['error'], 'invalid_grant');
  });

  it('signs ID tokens with a key that the JWKS publishes', async () => {
    const start = await authorizationAttempt(config);
    const tokens = await redeemAttempt(config, start, await callback(start));
    const { kid } = decodeProtectedHeader(tokens.id_token!);
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string; d?: string }[] };
    assert.ok(jwks.keys.some((key) => key.kid === kid));
    assert.ok(
      jwks.keys.every((key) => key.d === undefined),
      'no private key material is published',
    );
  });
});

describe('single use of a code on PostgreSQL, where redemptions really overlap', async () => {
  const skip = await postgresSkip();
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;
  let server: TestServer | undefined;

  before(async () => {
    if (skip) return;
    database = await freshPostgresDatabase();
    server = await startTestServer({ database: database.url });
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  it('gives a code to exactly one of 20 concurrent redemptions, even though the losers revoke its grant', { skip }, async () => {
    const client = await server!.addClient();
    const user = await server!.addUser();
    const config = await oidc.discovery(new URL(server!.url), client.clientId, undefined, oidc.ClientSecretBasic(client.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    for (let round = 0; round < 3; round++) {
      const start = await authorizationAttempt(config);
      const page = await new FormBrowser(server!.url).authorize(start.url.href, user);
      const code = new URL(page.location!).searchParams.get('code')!;
      const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
      const auth = { authorization: basic(client.clientId, client.clientSecret) };
      const results = await Promise.all(Array.from({ length: 20 }, () => postForm(`${server!.url}/oauth/token`, form, auth)));
      assert.equal(results.filter((result) => result.status === 200).length, 1, `round ${round}: ${results.map((r) => r.body['error'] ?? r.status).join(',')}`);
      assert.ok(results.filter((result) => result.status !== 200).every((result) => result.body['error'] === 'invalid_grant'));
    }
  });
});

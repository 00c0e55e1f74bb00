import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWK } from 'jose';
import * as oidc from 'openid-client';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, type GrantType } from '../src/core/protocol.ts';
import { OFFLINE_SCOPES, signIn } from './helpers/lifecycle.ts';
import {
  basic,
  closeAll,
  closeServer,
  listenOnFreePort,
  postForm,
  REDIRECT_URI,
  startTestServer,
  type TestClient,
  type TestServer,
  type TestUser,
} from './helpers/server.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const GRANTS: GrantType[] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN];
// Long enough that a JWKS on loopback answers in time on a loaded machine (300 ms did not, once,
// with the full suite and other work on two cores), short enough for the hanging case to be quick.
const JWKS_TIMEOUT_MS = 1000;

interface KeyPair {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

async function keyPair(alg: 'ES256' | 'RS256' | 'PS256' | 'EdDSA' = 'ES256'): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = randomUUID();
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg } };
}

/** A JWKS server for a client: what it answers can be changed, and it counts the fetches. */
async function jwksServer() {
  let handler: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => response.end('{"keys":[]}');
  let fetches = 0;
  const { server, port } = await listenOnFreePort(
    createServer((request, response) => {
      fetches += 1;
      handler(request, response);
    }),
  );
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    serveKeys(keys: readonly KeyPair[]) {
      handler = (_request, response) => response.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: keys.map((key) => key.publicJwk) }));
    },
    serve(next: typeof handler) {
      handler = next;
    },
    get fetches() {
      return fetches;
    },
    close: () => closeServer(server),
  };
}

describe('private_key_jwt client authentication (RFC 7523, OIDC Core §9)', () => {
  let server: TestServer;
  let user: TestUser;
  let key: KeyPair;
  let fileClient: TestClient;
  let jwks: Awaited<ReturnType<typeof jwksServer>>;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_CLIENT_JWKS_TIMEOUT_MS: String(JWKS_TIMEOUT_MS), TESSERA_CLIENT_JWKS_REFETCH_INTERVAL: '0' } });
    user = await server.addUser({ username: 'ada' });
    key = await keyPair();
    fileClient = await server.addClient({
      name: 'Signed App',
      authMethod: 'private_key_jwt',
      jwks: { keys: [key.publicJwk] },
      scopes: OFFLINE_SCOPES,
      grantTypes: GRANTS,
    });
    jwks = await jwksServer();
  });
  after(() => closeAll(jwks, server));

  /** A client assertion as RFC 7523 §3 describes it; `claims` and `header` override the defaults. */
  function assertion(clientId: string, signer: KeyPair, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iss: clientId, sub: clientId, aud: server.url, jti: randomUUID(), exp: now + 60, iat: now, ...claims })
      .setProtectedHeader({ alg: signer.publicJwk.alg!, kid: signer.kid, ...header })
      .sign(signer.privateKey);
  }

  function token(clientAssertion: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) {
    return postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: 'refresh_token',
        refresh_token: 'x'.repeat(43),
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: clientAssertion,
        ...extra,
      },
      headers,
    );
  }

  /** A pushed authorization request (RFC 9126 §2.1) from the client, authenticated with `clientAssertion`. */
  function par(clientAssertion: string) {
    return postForm(`${server.url}/oauth/par`, {
      response_type: 'code',
      client_id: fileClient.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: clientAssertion,
    });
  }

  /** Authenticated: the made-up refresh token is what is refused. */
  function assertAuthenticated(result: Awaited<ReturnType<typeof postForm>>): void {
    assert.deepEqual([result.status, result.body['error']], [400, 'invalid_grant'], JSON.stringify(result.body));
  }

  function assertInvalidClient(result: Awaited<ReturnType<typeof postForm>>, description?: RegExp): void {
    assert.deepEqual([result.status, result.body['error']], [401, 'invalid_client'], JSON.stringify(result.body));
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
    if (description) assert.match(String(result.body['error_description']), description);
  }

  it("signs in, refreshes, introspects, revokes and starts a device flow with openid-client's PrivateKeyJwt", async () => {
    const config = await oidc.discovery(new URL(server.url), fileClient.clientId, undefined, oidc.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }), {
      execute: [oidc.allowInsecureRequests],
    });
    const tokens = await signIn(server, config, user, 'openid offline_access');
    assert.equal(tokens.claims()?.aud, fileClient.clientId);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal((await oidc.tokenIntrospection(config, refreshed.access_token)).active, true);
    await oidc.tokenRevocation(config, refreshed.access_token);
    assert.equal((await oidc.tokenIntrospection(config, refreshed.access_token)).active, false);
    const device = await oidc.initiateDeviceAuthorization(config, { scope: 'openid' });
    assert.equal(typeof device.device_code, 'string');
  });

  it('accepts an assertion that lives an hour, as authlib signs them, by default, and only once', async () => {
    // authlib's private_key_jwt sets exp = iat + 3600; openid-client lets a test sign the same.
    const hourLong = oidc.PrivateKeyJwt(
      { key: key.privateKey, kid: key.kid },
      {
        [oidc.modifyAssertion]: (_header, payload) => {
          payload['exp'] = (payload['iat'] as number) + 3600;
        },
      },
    );
    const config = await oidc.discovery(new URL(server.url), fileClient.clientId, undefined, hourLong, { execute: [oidc.allowInsecureRequests] });
    const tokens = await signIn(server, config, user, 'openid offline_access');
    assert.equal(tokens.claims()?.aud, fileClient.clientId);
    const now = Math.floor(Date.now() / 1000);
    const once = await assertion(fileClient.clientId, key, { iat: now, exp: now + 3600 });
    assertAuthenticated(await token(once));
    // OIDC Core §9: its jti is kept until its exp, so a replay within the hour is refused.
    assertInvalidClient(await token(once), /used already/);
  });

  it('accepts the issuer as the audience, as a string or the one member of an array, at the token, revocation and PAR endpoints', async () => {
    assertAuthenticated(await token(await assertion(fileClient.clientId, key, { aud: server.url })));
    assertAuthenticated(await token(await assertion(fileClient.clientId, key, { aud: [server.url] })));
    const revoke = await postForm(`${server.url}/oauth/revoke`, {
      token: 'x'.repeat(43),
      client_assertion_type: ASSERTION_TYPE,
      client_assertion: await assertion(fileClient.clientId, key),
    });
    assert.deepEqual([revoke.status, revoke.body], [200, {}]);
    const pushed = await par(await assertion(fileClient.clientId, key, { aud: server.url }, { typ: 'client-authentication+jwt' }));
    assert.equal(pushed.status, 201, JSON.stringify(pushed.body));
    // With client_id alongside, naming the same client.
    assertAuthenticated(await token(await assertion(fileClient.clientId, key), { client_id: fileClient.clientId }));
  });

  it('refuses the token endpoint, the endpoint called or the issuer among others as the audience (RFC 7523bis), saying what to send', async () => {
    const refusals = [
      await token(await assertion(fileClient.clientId, key, { aud: `${server.url}/oauth/token` })),
      await token(await assertion(fileClient.clientId, key, { aud: ['https://elsewhere.example', server.url] })),
      await postForm(`${server.url}/oauth/revoke`, {
        token: 'x'.repeat(43),
        client_assertion_type: ASSERTION_TYPE,
        client_assertion: await assertion(fileClient.clientId, key, { aud: `${server.url}/oauth/revoke` }),
      }),
      await par(await assertion(fileClient.clientId, key, { aud: `${server.url}/oauth/par` })),
      await par(await assertion(fileClient.clientId, key, { aud: `${server.url}/oauth/token` })),
    ];
    for (const refused of refusals) {
      assertInvalidClient(
        refused,
        /the aud claim must be this server's issuer identifier, http:\/\/127\.0\.0\.1:\d+, as its only value.*TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy/,
      );
    }
  });

  it('accepts the token endpoint and the endpoint called again with TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy', async () => {
    const legacy = await startTestServer({ env: { TESSERA_CLIENT_ASSERTION_AUDIENCE: 'legacy' } });
    try {
      const client = await legacy.addClient({ name: 'Old App', authMethod: 'private_key_jwt', jwks: { keys: [key.publicJwk] }, grantTypes: GRANTS });
      const signed = (aud: string | string[]) => {
        const now = Math.floor(Date.now() / 1000);
        return new SignJWT({ iss: client.clientId, sub: client.clientId, aud, jti: randomUUID(), exp: now + 60 })
          .setProtectedHeader({ alg: 'ES256', kid: key.kid })
          .sign(key.privateKey);
      };
      const refresh = async (aud: string | string[]) =>
        postForm(`${legacy.url}/oauth/token`, {
          grant_type: 'refresh_token',
          refresh_token: 'x'.repeat(43),
          client_assertion_type: ASSERTION_TYPE,
          client_assertion: await signed(aud),
        });
      for (const aud of [legacy.url, `${legacy.url}/oauth/token`, ['https://elsewhere.example', legacy.url]]) {
        assertAuthenticated(await refresh(aud));
      }
      assertInvalidClient(await refresh('https://elsewhere.example'), /the aud claim is not valid/);
    } finally {
      await legacy.close();
    }
  });

  it('refuses an assertion typed as another kind of JWT, and takes one typed client-authentication+jwt or JWT (RFC 7523bis, RFC 8725 §3.11)', async () => {
    for (const typ of ['client-authentication+jwt', 'JWT']) assertAuthenticated(await token(await assertion(fileClient.clientId, key, {}, { typ })));
    for (const typ of ['at+jwt', 'dpop+jwt', 'logout+jwt']) {
      assertInvalidClient(await token(await assertion(fileClient.clientId, key, {}, { typ })), /typ must be client-authentication\+jwt or JWT/);
    }
  });

  it('refuses a replayed assertion, at the same or another endpoint', async () => {
    const once = await assertion(fileClient.clientId, key);
    assertAuthenticated(await token(once));
    assertInvalidClient(await token(once), /used already/);
    const revoke = await postForm(`${server.url}/oauth/revoke`, { token: 'x', client_assertion_type: ASSERTION_TYPE, client_assertion: once });
    assertInvalidClient(revoke, /used already/);
  });

  it('refuses wrong, expired, unsigned and badly signed assertions with invalid_client', async () => {
    const now = Math.floor(Date.now() / 1000);
    const other = await keyPair();
    const impostor = { ...other, kid: key.kid };
    const hmac = new TextEncoder().encode('a shared secret of at least thirty-two bytes');
    const cases: [string, Promise<string> | string, RegExp][] = [
      ['signed by another key under the same kid', assertion(fileClient.clientId, impostor), /signature verification failed/],
      ['signed by a key the client does not have', assertion(fileClient.clientId, other), /not among the client's keys/],
      ['expired', assertion(fileClient.clientId, key, { exp: now - 120, iat: now - 180 }), /expired/],
      ['expiring too far ahead', assertion(fileClient.clientId, key, { exp: now + 3600 + 120 }), /expire within 3600 seconds/],
      ['issued in the future', assertion(fileClient.clientId, key, { nbf: now + 600 }), /nbf/],
      ['for another audience', assertion(fileClient.clientId, key, { aud: 'https://elsewhere.example' }), /aud/],
      ['issued by someone else', assertion(fileClient.clientId, key, { iss: 'someone-else' }), /iss/],
      ['without a jti', assertion(fileClient.clientId, key, { jti: undefined }), /jti/],
      ['without an exp', assertion(fileClient.clientId, key, { exp: undefined }), /exp/],
      [
        'unsigned (alg none)',
        new UnsecuredJWT({ iss: fileClient.clientId, sub: fileClient.clientId, aud: server.url, jti: randomUUID(), exp: now + 60 }).encode(),
        /signed/,
      ],
      [
        'signed with HS256, which is not listed',
        new SignJWT({ iss: fileClient.clientId, sub: fileClient.clientId, aud: server.url, jti: randomUUID(), exp: now + 60 })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(hmac),
        /must be signed with one of/,
      ],
      [
        'with a tampered payload',
        assertion(fileClient.clientId, key).then((jwt) => {
          const [header, , signature] = jwt.split('.');
          const payload = Buffer.from(
            JSON.stringify({ iss: fileClient.clientId, sub: fileClient.clientId, aud: server.url, jti: 'x', exp: now + 60 }),
          ).toString('base64url');
          return `${header}.${payload}.${signature}`;
        }),
        /signature verification failed/,
      ],
      ['that is not a JWT', 'not-a-jwt', /not a JWT/],
    ];
    for (const [name, jwt, description] of cases) {
      const result = await token(await jwt);
      assert.deepEqual([result.status, result.body['error']], [401, 'invalid_client'], `${name}: ${JSON.stringify(result.body)}`);
      assert.match(String(result.body['error_description']), description, name);
    }
    // sub names the client: a client_id alongside that names another client is refused.
    assertInvalidClient(await token(await assertion(fileClient.clientId, key), { client_id: 'someone-else' }));
  });

  it('refuses a secret from a private_key_jwt client, and an assertion from a client with a secret', async () => {
    const secretClient = await server.addClient({ grantTypes: GRANTS });
    const form = { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) };
    assertInvalidClient(await postForm(`${server.url}/oauth/token`, form, { authorization: basic(fileClient.clientId, 'anything') }), /private_key_jwt/);
    assertInvalidClient(await postForm(`${server.url}/oauth/token`, { ...form, client_id: fileClient.clientId, client_secret: 'anything' }), /private_key_jwt/);
    assertInvalidClient(await postForm(`${server.url}/oauth/token`, { ...form, client_id: fileClient.clientId }), /must authenticate/);
    assertInvalidClient(await token(await assertion(secretClient.clientId, key)), /not a client_assertion/);
  });

  it('fetches the keys from a jwks_uri once, and again when an assertion names a kid it has not seen', async () => {
    const first = await keyPair('RS256');
    jwks.serveKeys([first]);
    const client = await server.addClient({ name: 'Rotating App', authMethod: 'private_key_jwt', jwksUri: jwks.url('/rotating.json'), grantTypes: GRANTS });
    const before = jwks.fetches;
    assertAuthenticated(await token(await assertion(client.clientId, first)));
    assertAuthenticated(await token(await assertion(client.clientId, first)));
    assert.equal(jwks.fetches - before, 1, 'cached');

    const second = await keyPair('PS256');
    jwks.serveKeys([first, second]);
    assertAuthenticated(await token(await assertion(client.clientId, second)));
    assert.equal(jwks.fetches - before, 2, 'fetched again for the new kid');
    const stranger = await keyPair();
    assertInvalidClient(await token(await assertion(client.clientId, stranger)), /not among the client's keys/);
  });

  it('answers invalid_client within the fetch timeout when the jwks_uri hangs, and invalid_client when it answers garbage', async () => {
    const signer = await keyPair();
    const hanging = await server.addClient({ authMethod: 'private_key_jwt', jwksUri: jwks.url('/hang.json'), grantTypes: GRANTS });
    jwks.serve(() => {
      // Never answers.
    });
    const started = Date.now();
    assertInvalidClient(await token(await assertion(hanging.clientId, signer)), new RegExp(`did not answer within ${JWKS_TIMEOUT_MS} ms`));
    const took = Date.now() - started;
    assert.ok(took >= JWKS_TIMEOUT_MS - 20 && took < JWKS_TIMEOUT_MS + 1500, `answered after ${took} ms`);

    const garbage: [string, (request: IncomingMessage, response: ServerResponse) => void, RegExp][] = [
      ['not JSON', (_request, response) => response.end('<html>hello</html>'), /not JSON/],
      ['JSON without keys', (_request, response) => response.end('{"keys":"none"}'), /not a JWK Set/],
      ['a private key', (_request, response) => response.end(JSON.stringify({ keys: [{ ...signer.publicJwk, d: 'x' }] })), /public keys only/],
      ['an error status', (_request, response) => response.writeHead(500).end('{}'), /answered 500/],
      ['a redirect', (_request, response) => response.writeHead(302, { location: 'http://127.0.0.1:9/jwks.json' }).end(), /could not be fetched/],
      ['too large', (_request, response) => response.end(`{"keys":[],"pad":"${'x'.repeat(70 * 1024)}"}`), /larger than/],
      ['a dropped connection', (request) => request.socket.destroy(), /could not be fetched/],
    ];
    for (const [name, handler, description] of garbage) {
      const client = await server.addClient({ authMethod: 'private_key_jwt', jwksUri: jwks.url(`/${name.replace(/\W/g, '-')}.json`), grantTypes: GRANTS });
      jwks.serve(handler);
      const result = await token(await assertion(client.clientId, signer));
      assert.deepEqual([result.status, result.body['error']], [401, 'invalid_client'], `${name}: ${JSON.stringify(result.body)}`);
      assert.match(String(result.body['error_description']), description, name);
    }
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import {
  approveAt,
  ath,
  authorizationUrl,
  codeRequest,
  discover,
  dpopKey,
  handKeys,
  handProof,
  insecure,
  redeemCode,
  redeemedTokens,
  type KeyPair,
} from './helpers/dpop.ts';
import { basic, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { clockAtStart } from './helpers/clock.ts';

const now = () => Math.floor(Date.now() / 1000);

describe('DPoP proofs that must be refused (RFC 9449 §4.3)', () => {
  let server: TestServer, as: oauth.AuthorizationServer, client: TestClient, user: TestUser, tokenUrl: string, userinfoUrl: string;

  before(async () => {
    ({ server, client, user } = await startWithApp({
      client: { grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN], scopes: ['openid', 'profile', 'offline_access'] },
    }));
    as = await discover(server);
    tokenUrl = `${server.url}/oauth/token`;
    userinfoUrl = `${server.url}/oauth/userinfo`;
  });
  after(() => server.close());

  /** A token request whose grant would fail (an unknown refresh token): only the proof decides what comes first. */
  function tokenRequest(dpop: string | string[] | null) {
    const headers = new Headers({ authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' });
    for (const proof of dpop === null ? [] : [dpop].flat()) headers.append('dpop', proof);
    return fetch(tokenUrl, { method: 'POST', headers, body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'unknown' }) }).then(
      async (response) => ({
        status: response.status,
        body: (await response.json()) as Record<string, unknown>,
      }),
    );
  }

  async function assertRefused(dpop: string | string[], description: RegExp) {
    const result = await tokenRequest(dpop);
    assert.equal(result.status, 400, JSON.stringify(result.body));
    assert.equal(result.body['error'], 'invalid_dpop_proof');
    assert.match(String(result.body['error_description']), description);
  }

  it('lets a good proof through to the grant (the unknown refresh token is then invalid_grant), a query in htu included', async () => {
    const { keys } = await handKeys();
    for (const htu of [tokenUrl, `${tokenUrl}?x=1#y`]) {
      const result = await tokenRequest(await handProof(keys, { htu }));
      assert.equal(result.body['error'], 'invalid_grant', JSON.stringify(result.body));
    }
  });

  it('refuses a wrong htu, a wrong htm, a wrong typ and missing claims', async () => {
    const { keys } = await handKeys();
    await assertRefused(await handProof(keys, { htu: `${server.url}/oauth/par` }), /htu/);
    await assertRefused(await handProof(keys, { htu: tokenUrl.replace('127.0.0.1', 'localhost') }), /htu/);
    await assertRefused(await handProof(keys, { htu: tokenUrl, htm: 'GET' }), /htm/);
    await assertRefused(await handProof(keys, { htu: tokenUrl, typ: 'JWT' }), /typ/);
    await assertRefused(await handProof(keys, { htu: 'not a url' }), /htu/);
    const withoutHtm = await new SignJWT({ htu: tokenUrl })
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keys.publicKey) })
      .setJti('no-htm')
      .setIssuedAt()
      .sign(keys.privateKey);
    await assertRefused(withoutHtm, /htm/);
  });

  it('refuses a proof without jti, or with an empty one (RFC 9449 §4.2: jti is required)', async () => {
    const { keys } = await handKeys();
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keys.publicKey) };
    const withoutJti = await new SignJWT({ htm: 'POST', htu: tokenUrl }).setProtectedHeader(header).setIssuedAt().sign(keys.privateKey);
    await assertRefused(withoutJti, /jti/);
    const emptyJti = await new SignJWT({ htm: 'POST', htu: tokenUrl, jti: '' }).setProtectedHeader(header).setIssuedAt().sign(keys.privateKey);
    await assertRefused(emptyJti, /jti/);
  });

  it('refuses a replayed jti, and the same jti from another key is another proof', async () => {
    const { keys } = await handKeys();
    const proof = await handProof(keys, { htu: tokenUrl, jti: 'once' });
    assert.equal((await tokenRequest(proof)).body['error'], 'invalid_grant');
    await assertRefused(proof, /already been used/);
    const other = await handKeys();
    assert.equal((await tokenRequest(await handProof(other.keys, { htu: tokenUrl, jti: 'once' }))).body['error'], 'invalid_grant');
  });

  it('refuses an iat outside the window, in the past or the future', async () => {
    const { keys } = await handKeys();
    await assertRefused(await handProof(keys, { htu: tokenUrl, iat: now() - 120 }), /iat/);
    await assertRefused(await handProof(keys, { htu: tokenUrl, iat: now() + 120 }), /iat/);
  });

  it('refuses a symmetric alg, alg none, and an alg the server does not list', async () => {
    const { keys } = await handKeys();
    const publicJwk = await exportJWK(keys.publicKey);
    await assertRefused(await handProof(keys, { htu: tokenUrl, alg: 'HS256', signWith: new Uint8Array(32).fill(7) }), /alg/);
    const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const unsigned = `${encode({ alg: 'none', typ: 'dpop+jwt', jwk: publicJwk })}.${encode({ htm: 'POST', htu: tokenUrl, iat: now(), jti: 'x' })}.`;
    await assertRefused(unsigned, /well-formed/);
    const unsignedWithSignature = `${unsigned}c2ln`;
    await assertRefused(unsignedWithSignature, /alg/);
    const ed448 = (await generateKeyPair('Ed448' as 'EdDSA', { extractable: true }).catch(() => null)) as KeyPair | null;
    if (ed448) await assertRefused(await handProof(ed448, { htu: tokenUrl, alg: 'Ed448' }), /alg/);
  });

  it('refuses a private key in jwk, a symmetric jwk, and a signature by another key', async () => {
    const { keys, privateJwk } = await handKeys();
    await assertRefused(await handProof(keys, { htu: tokenUrl, jwk: privateJwk }), /public key/);
    await assertRefused(await handProof(keys, { htu: tokenUrl, jwk: { kty: 'oct', k: 'c2VjcmV0' } }), /public key/);
    const other = await handKeys();
    await assertRefused(await handProof(keys, { htu: tokenUrl, signWith: other.keys.privateKey }), /signature/);
  });

  it('refuses a malformed proof and two DPoP headers', async () => {
    const { keys } = await handKeys();
    await assertRefused('not.a.jwt!', /well-formed/);
    await assertRefused('a'.repeat(9000), /well-formed/);
    const proof = await handProof(keys, { htu: tokenUrl });
    await assertRefused([proof, await handProof(keys, { htu: tokenUrl })], /one DPoP header/);
  });

  describe('at userinfo: 401 with WWW-Authenticate: DPoP', () => {
    let token: string;
    let keys: KeyPair;
    let bearerToken: string;

    before(async () => {
      const key = await dpopKey(client);
      keys = key.keys;
      const request = await codeRequest('openid');
      const callback = await approveAt(as, client, authorizationUrl(as, client.clientId, request.params), user, request.state);
      token = (await redeemedTokens(as, client, await redeemCode(as, client, callback, request, { DPoP: key.handle }), request)).access_token;

      const plain = await codeRequest('openid');
      const plainCallback = await approveAt(as, client, authorizationUrl(as, client.clientId, plain.params), user, plain.state);
      bearerToken = (await redeemedTokens(as, client, await redeemCode(as, client, plainCallback, plain), plain)).access_token;
    });

    async function userinfo(scheme: string, accessToken: string, proof: string | null) {
      const response = await fetch(userinfoUrl, { headers: { authorization: `${scheme} ${accessToken}`, ...(proof === null ? {} : { dpop: proof }) } });
      return { status: response.status, challenge: response.headers.get('www-authenticate') ?? '', body: (await response.json()) as Record<string, unknown> };
    }

    it('accepts the right proof, and refuses it replayed', async () => {
      const proof = await handProof(keys, { htm: 'GET', htu: userinfoUrl, ath: ath(token) });
      const first = await userinfo('DPoP', token, proof);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      const replay = await userinfo('DPoP', token, proof);
      assert.equal(replay.status, 401);
      assert.match(replay.challenge, /^DPoP algs="[^"]+", error="invalid_dpop_proof"/);
    });

    it('refuses a mismatched ath, a missing ath, a wrong htu or htm, an old iat, and no proof', async () => {
      const cases = [
        await handProof(keys, { htm: 'GET', htu: userinfoUrl, ath: ath(bearerToken) }),
        await handProof(keys, { htm: 'GET', htu: userinfoUrl }),
        await handProof(keys, { htm: 'GET', htu: tokenUrl, ath: ath(token) }),
        await handProof(keys, { htm: 'POST', htu: userinfoUrl, ath: ath(token) }),
        await handProof(keys, { htm: 'GET', htu: userinfoUrl, ath: ath(token), iat: now() - 600 }),
        null,
      ];
      for (const proof of cases) {
        const result = await userinfo('DPoP', token, proof);
        assert.equal(result.status, 401, JSON.stringify(result.body));
        assert.equal(result.body['error'], 'invalid_dpop_proof');
        assert.match(result.challenge, /^DPoP algs="[^"]+", error="invalid_dpop_proof"/);
      }
    });

    it("refuses a proof by a key other than the token's", async () => {
      const other = await handKeys();
      const result = await userinfo('DPoP', token, await handProof(other.keys, { htm: 'GET', htu: userinfoUrl, ath: ath(token) }));
      assert.equal(result.status, 401);
      assert.match(result.challenge, /error="invalid_dpop_proof"/);
    });

    it('refuses the bound token as Bearer, and a Bearer token with the DPoP scheme', async () => {
      const asBearer = await userinfo('Bearer', token, null);
      assert.equal(asBearer.status, 401);
      assert.match(asBearer.challenge, /DPoP algs="[^"]+", error="invalid_token"/);
      const unbound = await userinfo('DPoP', bearerToken, await handProof(keys, { htm: 'GET', htu: userinfoUrl, ath: ath(bearerToken) }));
      assert.equal(unbound.status, 401);
      assert.match(unbound.challenge, /^DPoP algs="[^"]+", error="invalid_token"/);
      const fine = await userinfo('Bearer', bearerToken, null);
      assert.equal(fine.status, 200);
    });
  });
});

describe('DPoP server nonces (RFC 9449 §8, §9), with TESSERA_DPOP_NONCES', () => {
  let server: TestServer, as: oauth.AuthorizationServer, client: TestClient, user: TestUser;
  const clock = clockAtStart();

  before(async () => {
    ({ server, client, user } = await startWithApp({
      server: { clock, env: { TESSERA_DPOP_NONCES: 'true', TESSERA_DPOP_NONCE_LIFETIME: '10', TESSERA_DPOP_PROOF_WINDOW: '600' } },
      client: { grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE] },
    }));
    as = await discover(server);
  });
  after(() => server.close());

  it('answers a proof without the nonce with use_dpop_nonce and DPoP-Nonce; oauth4webapi retries with it, and userinfo takes it', async () => {
    const key = await dpopKey(client);
    const request = await codeRequest('openid');
    const callback = await approveAt(as, client, authorizationUrl(as, client.clientId, request.params), user, request.state);
    const exchange = () => redeemCode(as, client, callback, request, { DPoP: key.handle });
    const first = await exchange();
    assert.equal(first.status, 400);
    assert.ok(first.headers.get('dpop-nonce'));
    await assert.rejects(oauth.processAuthorizationCodeResponse(as, { client_id: client.clientId }, first), (error: unknown) => oauth.isDPoPNonceError(error));
    // The refused request left the code unused: the retry with the nonce redeems it.
    const tokens = await redeemedTokens(as, client, await exchange(), request);
    assert.equal(tokens.token_type, 'dpop');
    const info = await oauth.userInfoRequest(as, { client_id: client.clientId }, tokens.access_token, { DPoP: key.handle, ...insecure });
    assert.equal(info.status, 200);
  });

  it('refuses an old nonce once two lifetimes have passed, and hands out the new one', async () => {
    const { keys } = await handKeys();
    const htu = `${server.url}/oauth/token`;
    const iat = () => Math.floor(clock.now() / 1000);
    const post = (proof: string) =>
      fetch(htu, {
        method: 'POST',
        headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded', dpop: proof },
        body: new URLSearchParams({ grant_type: GRANT_DEVICE_CODE, device_code: 'unknown' }),
      });
    const withoutNonce = await post(await handProof(keys, { htu, iat: iat() }));
    assert.equal(withoutNonce.status, 400);
    assert.equal(((await withoutNonce.json()) as { error: string }).error, 'use_dpop_nonce');
    const nonce = withoutNonce.headers.get('dpop-nonce')!;
    const withNonce = await post(await handProof(keys, { htu, iat: iat(), nonce }));
    assert.equal(((await withNonce.json()) as { error: string }).error, 'invalid_grant', 'the proof passed');
    const wrong = await post(await handProof(keys, { htu, iat: iat(), nonce: 'made-up' }));
    assert.equal(((await wrong.json()) as { error: string }).error, 'use_dpop_nonce');

    clock.advance(10_000);
    const stillGood = await post(await handProof(keys, { htu, iat: iat(), nonce }));
    assert.equal(((await stillGood.json()) as { error: string }).error, 'invalid_grant', 'the previous nonce is still accepted');
    clock.advance(10_000);
    const stale = await post(await handProof(keys, { htu, iat: iat(), nonce }));
    assert.equal(((await stale.json()) as { error: string }).error, 'use_dpop_nonce');
    assert.notEqual(stale.headers.get('dpop-nonce'), nonce);
  });

  it('asks a resource request for the nonce with 401 and WWW-Authenticate error="use_dpop_nonce"', async () => {
    const { keys } = await handKeys();
    const response = await fetch(`${server.url}/oauth/userinfo`, {
      headers: {
        authorization: 'DPoP abc.def.ghi',
        dpop: await handProof(keys, { htm: 'GET', htu: `${server.url}/oauth/userinfo`, ath: ath('abc.def.ghi'), iat: Math.floor(clock.now() / 1000) }),
      },
    });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^DPoP algs="[^"]+", error="use_dpop_nonce"/);
    assert.ok(response.headers.get('dpop-nonce'));
  });
});

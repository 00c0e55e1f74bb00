/**
 * DPoP proofs without HTTP (RFC 9449 §4.3, §8, §11.1): proofs signed here with jose, checked
 * against a target on a clock the test moves, a check a row. test/dpop.test.ts sends the same
 * kinds of proof to the token endpoint and userinfo, through oauth4webapi.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { ManualClock } from '../../core/clock.ts';
import { OAuthError } from '../../core/errors.ts';
import { openStore } from '../../store/open.ts';
import type { Store } from '../../store/types.ts';
import { accessTokenHash, checkDpopProof, type DpopDeps, type DpopTarget } from './proof.ts';
import { DpopNonces } from './nonce.ts';

const TOKEN_ENDPOINT: DpopTarget = { method: 'POST', url: 'https://auth.example.com/oauth/token' };
const WINDOW = 60;
const NONCE_LIFETIME = 300;

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe('DPoP proofs (RFC 9449 §4.3)', () => {
  let store: Store;
  const clock = new ManualClock();
  let key: PrivateKey;
  let jwk: JWK;
  let otherKey: PrivateKey;
  let otherJwk: JWK;
  /** The keys' RFC 7638 thumbprints: what a good proof is answered. */
  let jkt: string;
  let otherJkt: string;
  let deps: DpopDeps;
  let withNonces: DpopDeps;

  before(async () => {
    store = await openStore(':memory:');
    const pair = await generateKeyPair('ES256', { extractable: true });
    key = pair.privateKey;
    jwk = await exportJWK(pair.publicKey);
    const other = await generateKeyPair('ES256', { extractable: true });
    otherKey = other.privateKey;
    otherJwk = await exportJWK(other.publicKey);
    [jkt, otherJkt] = await Promise.all([calculateJwkThumbprint(jwk, 'sha256'), calculateJwkThumbprint(otherJwk, 'sha256')]);
    const nonces = new DpopNonces(async () => new Uint8Array(32).fill(7), clock, NONCE_LIFETIME);
    deps = { store, clock, settings: { proofWindow: WINDOW, nonces: false, nonceLifetime: NONCE_LIFETIME }, nonces };
    withNonces = { ...deps, settings: { ...deps.settings, nonces: true } };
  });
  after(() => store.close());

  /** A proof for the token endpoint, made now, with `claims` and `header` changed. */
  function proof(claims: JWTPayload = {}, header: Record<string, unknown> = {}, signWith: PrivateKey = key): Promise<string> {
    const payload = { jti: randomUUID(), htm: 'POST', htu: TOKEN_ENDPOINT.url, iat: Math.floor(clock.now() / 1000), ...claims };
    const defined = Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined));
    return new SignJWT(defined).setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk, ...header } as { alg: string }).sign(signWith);
  }

  /** What `header` is answered at `target`: the key's thumbprint, or the error code. */
  async function check(header: string | readonly string[] | undefined, target = TOKEN_ENDPOINT, using = deps): Promise<string | null> {
    try {
      return (await checkDpopProof(using, header, target))?.jkt ?? null;
    } catch (error) {
      if (error instanceof OAuthError) return error.code;
      throw error;
    }
  }

  it('takes a good proof, answering the thumbprint of its key (RFC 7638), and nothing without a DPoP header', async () => {
    assert.equal(await check(await proof()), jkt);
    assert.equal(await check(undefined), null);
  });

  it('refuses a proof that fails a point of §4.3 with invalid_dpop_proof', async () => {
    const now = Math.floor(clock.now() / 1000);
    const good = await proof();
    const cases: [string, Promise<string | readonly string[]>][] = [
      ['1: two DPoP headers', Promise.resolve([good, good])],
      ['1: two proofs joined in one header', Promise.resolve(`${good}, ${good}`)],
      ['2: not a JWT', Promise.resolve('not-a-jwt')],
      ['2: unsigned', Promise.resolve(`${good.split('.').slice(0, 2).join('.')}.`)],
      ['2: too long', Promise.resolve(`${good}${'A'.repeat(9000)}`)],
      ['3: no jti', proof({ jti: undefined })],
      ['3: no htm', proof({ htm: undefined })],
      ['3: no htu', proof({ htu: undefined })],
      ['3: no iat', proof({ iat: undefined })],
      ['4: typ JWT', proof({}, { typ: 'JWT' })],
      ['6: signed by another key than its jwk', proof({}, {}, otherKey)],
      ['6: no jwk', proof({}, { jwk: undefined })],
      ['7: a private key in jwk', proof({}, { jwk: { ...jwk, d: 'c2VjcmV0' } })],
      ['8: htm GET at a POST endpoint', proof({ htm: 'GET' })],
      ['9: htu of another endpoint', proof({ htu: 'https://auth.example.com/oauth/userinfo' })],
      ['9: htu of another server', proof({ htu: 'https://evil.example/oauth/token' })],
      ['11: iat too old', proof({ iat: now - WINDOW - 1 })],
      ['11: iat in the future', proof({ iat: now + WINDOW + 1 })],
      ['a jti too long', proof({ jti: 'j'.repeat(257) })],
    ];
    for (const [what, header] of cases) assert.equal(await check(await header), 'invalid_dpop_proof', what);
    // Told what is wrong, where a later check would also refuse it for a vaguer reason.
    const said = async (header: string, reason: RegExp) =>
      assert.rejects(
        () => checkDpopProof(deps, header, TOKEN_ENDPOINT),
        (error: OAuthError) => reason.test(error.description),
      );
    await said(`${good}, ${good}`, /send one DPoP header/);
    await said(await proof({}, { jwk: { ...jwk, d: 'c2VjcmV0' } }), /must be a public key, never a private/);
  });

  it('compares htu as URLs, without its query and fragment (§4.3 point 9)', async () => {
    for (const htu of ['https://auth.example.com/oauth/token?x=1#y', 'HTTPS://AUTH.EXAMPLE.COM:443/oauth/token']) {
      assert.equal(await check(await proof({ htu })), jkt, htu);
    }
  });

  it('checks ath at a protected resource against the access token sent with it (§4.3 point 12)', async () => {
    const userinfo: DpopTarget = { method: 'GET', url: 'https://auth.example.com/oauth/userinfo', accessToken: 'the-access-token' };
    const at = (claims: JWTPayload) => proof({ htm: 'GET', htu: userinfo.url, ...claims });
    assert.equal(await check(await at({ ath: accessTokenHash('the-access-token') }), userinfo), jkt);
    assert.equal(await check(await at({ ath: accessTokenHash('another-token') }), userinfo), 'invalid_dpop_proof');
    assert.equal(await check(await at({}), userinfo), 'invalid_dpop_proof', 'no ath');
  });

  it('takes a proof once (§11.1): its jti again with the same key is refused, with another key it is another proof', async () => {
    const jti = randomUUID();
    const first = await proof({ jti });
    assert.equal(await check(first), jkt);
    assert.equal(await check(first), 'invalid_dpop_proof', 'the same proof again');
    assert.equal(await check(await proof({ jti })), 'invalid_dpop_proof', 'a new proof with the same jti and key');
    assert.equal(await check(await proof({ jti }, { jwk: otherJwk }, otherKey)), otherJkt, 'the same jti from another key');
  });

  it('remembers a proof for as long as its iat keeps it acceptable (§11.1): sent again late in the window, it is still refused', async () => {
    const first = await proof();
    assert.equal(await check(first), jkt);
    clock.advance((WINDOW - 1) * 1000);
    assert.equal(await check(first), 'invalid_dpop_proof', 'the same proof, a second before the window closes');
    // A proof dated ahead (a client clock that runs fast) stays acceptable that much longer.
    const ahead = await proof({ iat: Math.floor(clock.now() / 1000) + WINDOW - 1 });
    assert.equal(await check(ahead), jkt);
    clock.advance(2 * (WINDOW - 1) * 1000);
    assert.equal(await check(ahead), 'invalid_dpop_proof', 'the proof dated ahead, late in its window');
  });

  it('with nonces required (§8), answers use_dpop_nonce unless the proof carries the current nonce or the one before', async () => {
    const nonces = deps.nonces;
    const current = await nonces.current();
    assert.equal(await check(await proof(), TOKEN_ENDPOINT, withNonces), 'use_dpop_nonce', 'no nonce');
    assert.equal(await check(await proof({ nonce: 'made-up' }), TOKEN_ENDPOINT, withNonces), 'use_dpop_nonce', 'a nonce never issued');
    assert.equal(await check(await proof({ nonce: current }), TOKEN_ENDPOINT, withNonces), jkt, 'the current nonce');
    clock.advance(NONCE_LIFETIME * 1000);
    assert.notEqual(await nonces.current(), current, 'a new nonce each step');
    assert.equal(await check(await proof({ nonce: current }), TOKEN_ENDPOINT, withNonces), jkt, 'the one before it');
    clock.advance(NONCE_LIFETIME * 1000);
    assert.equal(await check(await proof({ nonce: current }), TOKEN_ENDPOINT, withNonces), 'use_dpop_nonce', 'two steps old');
    assert.equal(await check(await proof()), jkt, 'no nonce asked for when they are not required');
  });
});

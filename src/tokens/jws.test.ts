import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { compactVerify, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { signJws } from './jws.ts';

describe('signJws', () => {
  for (const [alg, options] of [
    ['RS256', { type: 'rsa', modulusLength: 2048 }],
    ['ES256', { type: 'ec', namedCurve: 'P-256' }],
  ] as const) {
    it(`signs a JWT with ${alg} that jose verifies with the public key`, async () => {
      const { privateKey, publicKey } =
        options.type === 'rsa'
          ? generateKeyPairSync('rsa', { modulusLength: options.modulusLength })
          : generateKeyPairSync('ec', { namedCurve: options.namedCurve });
      const jwt = await signJws({ alg, kid: 'k1', typ: 'JWT' }, { sub: 'ada', iss: 'https://issuer.example', exp: 2_000_000_000 }, privateKey);
      const { payload, protectedHeader } = await jwtVerify(jwt, publicKey, { issuer: 'https://issuer.example', algorithms: [alg] });
      assert.deepEqual(protectedHeader, { alg, kid: 'k1', typ: 'JWT' });
      assert.equal(payload.sub, 'ada');
    });
  }

  it('produces a signature that fails verification once the payload is changed', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwt = await signJws({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, { sub: 'ada' }, privateKey);
    const [header, , signature] = jwt.split('.');
    const forged = `${header}.${Buffer.from(JSON.stringify({ sub: 'eve' })).toString('base64url')}.${signature}`;
    assert.equal(decodeProtectedHeader(forged).alg, 'ES256');
    await assert.rejects(compactVerify(forged, publicKey), (error: unknown) => error instanceof errors.JWSSignatureVerificationFailed);
  });
});

describe('signJws ES256 signatures (R || S from DER)', () => {
  it('gives a 64-byte signature that verifies, over many signatures (R or S with a high bit, or shorter than 32 bytes)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    // About half of all R and S values have their high bit set (DER adds a zero byte) and 1 in
    // 128 is shorter than 32 bytes (DER drops leading zeros): 400 signatures meet both.
    for (let i = 0; i < 400; i += 1) {
      const jwt = await signJws({ alg: 'ES256', kid: 'k1', typ: 'JWT' }, { sub: `ada-${i}` }, privateKey);
      assert.equal(Buffer.from(jwt.split('.')[2]!, 'base64url').length, 64);
      const { payload } = await jwtVerify(jwt, publicKey, { algorithms: ['ES256'] });
      assert.equal(payload.sub, `ada-${i}`);
    }
  });
});

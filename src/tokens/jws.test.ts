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
        options.type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: options.modulusLength }) : generateKeyPairSync('ec', { namedCurve: options.namedCurve });
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

import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import type { KeyStore } from '../../src/store/types.ts';

/**
 * The RS256 key pair of this test process's fresh servers (./server.ts) and unit tests' worlds
 * (./flows.ts). Generating a 2048-bit RSA key was half of the CPU a test server took to start
 * (60 to 90 ms, the ES256 key a tenth of a millisecond), and the suite starts hundreds of
 * servers and worlds. Each stores it under a kid of its own, so no server finds another's
 * tokens' key by kid, and each still generates its own ES256 key. Every key is still generated
 * at the first start of a `tessera` command and of a server on a database of a test's own
 * (`database`): test/multi-instance.test.ts's instances publish what the first generated; and
 * src/tokens/keys.ts's rotation generates new ones.
 */
let rsaPair: Promise<{ privateJwk: JWK; publicJwk: JWK }> | undefined;

/** Stores this process's RS256 pair in `keys` under a new kid, signing from `now`. */
export async function seedRsaKey(keys: KeyStore, now: number): Promise<void> {
  rsaPair ??= generateKeyPair('RS256', { extractable: true, modulusLength: 2048 }).then(async ({ privateKey, publicKey }) => ({
    privateJwk: await exportJWK(privateKey),
    publicJwk: await exportJWK(publicKey),
  }));
  const { privateJwk, publicJwk } = await rsaPair;
  const kid = randomUUID();
  await keys.add({
    kid,
    alg: 'RS256',
    privateJwk: { ...privateJwk, kid, alg: 'RS256' },
    publicJwk: { ...publicJwk, kid, alg: 'RS256', use: 'sig' },
    createdAt: now,
    activatesAt: now,
    retiresAt: null,
    expiresAt: null,
  });
}

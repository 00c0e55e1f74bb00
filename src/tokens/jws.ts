import { sign, type KeyObject } from 'node:crypto';
import type { SigningAlgorithm } from '../config/index.ts';

/** The protected header of a JWS (RFC 7515 §4.1). */
export interface JwsHeader {
  readonly alg: SigningAlgorithm;
  readonly kid: string;
  readonly typ: string;
}

/**
 * Signs `payload` as a JWS in compact serialization (RFC 7515 §7.1), which is what a JWT is
 * (RFC 7519 §7.1). node:crypto signs on the libuv thread pool without the per-call work of
 * WebCrypto (algorithm normalisation, structured cloning, a promise job), which made RS256
 * signing through it cost twice as much CPU as the signature itself.
 * RFC 7518 §3.4: an ES256 signature is R || S, 64 bytes (IEEE P1363), not DER.
 */
export function signJws(header: JwsHeader, payload: Readonly<Record<string, unknown>>, key: KeyObject): Promise<string> {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  const signingKey = header.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
  return new Promise((resolve, reject) => {
    sign('sha256', Buffer.from(input), signingKey, (error, signature) => {
      if (error) reject(error);
      else resolve(`${input}.${signature.toString('base64url')}`);
    });
  });
}

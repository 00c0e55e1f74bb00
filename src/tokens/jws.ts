import { sign, type KeyObject } from 'node:crypto';
import type { SigningAlgorithm } from '../config/index.ts';

/** The protected header of a JWS (RFC 7515 §4.1). */
export interface JwsHeader {
  readonly alg: SigningAlgorithm;
  readonly kid: string;
  readonly typ: string;
}

/** Encoded headers by `alg kid typ`: a server signs with a handful of keys and three types. */
const encodedHeaders = new Map<string, string>();
/** Beyond this many, a header is encoded each time (keys rotate; the map must not grow forever). */
const MAX_ENCODED_HEADERS = 64;

function encodedHeader(header: JwsHeader): string {
  const key = `${header.alg} ${header.kid} ${header.typ}`;
  let encoded = encodedHeaders.get(key);
  if (encoded === undefined) {
    encoded = Buffer.from(JSON.stringify({ alg: header.alg, kid: header.kid, typ: header.typ })).toString('base64url');
    if (encodedHeaders.size < MAX_ENCODED_HEADERS) encodedHeaders.set(key, encoded);
  }
  return encoded;
}

/**
 * RFC 7518 §3.4: an ES256 signature is R || S, 32 bytes each, not the DER `SEQUENCE { INTEGER
 * r, INTEGER s }` node:crypto gives by default. node:crypto can give R || S itself
 * (`dsaEncoding: 'ieee-p1363'`), but only when the key is passed inside an options object,
 * which costs more main-thread time per signature (15-20 µs here, measured with
 * process.threadCpuUsage) than the whole ES256 signature does on the pool.
 */
function p1363FromDer(der: Buffer): Buffer {
  const out = Buffer.alloc(64);
  // 0x30 len (P-256 signatures are at most 72 bytes: the length is one byte), then two INTEGERs.
  let offset = 2;
  for (let part = 0; part < 2; part += 1) {
    if (der[offset] !== 0x02) throw new Error('not a DER ECDSA signature');
    let length = der[offset + 1]!;
    let start = offset + 2;
    offset = start + length;
    // An INTEGER is signed: a leading zero byte keeps a high bit from reading as negative.
    while (length > 32 && der[start] === 0) {
      start += 1;
      length -= 1;
    }
    if (length > 32) throw new Error('not a P-256 ECDSA signature');
    der.copy(out, part * 32 + (32 - length), start, start + length);
  }
  return out;
}

/**
 * Signs `payload` as a JWS in compact serialization (RFC 7515 §7.1), which is what a JWT is
 * (RFC 7519 §7.1). node:crypto signs on the libuv thread pool without the per-call work of
 * WebCrypto (algorithm normalisation, structured cloning, a promise job), which made RS256
 * signing through it cost twice as much CPU as the signature itself.
 */
export function signJws(header: JwsHeader, payload: Readonly<Record<string, unknown>>, key: KeyObject): Promise<string> {
  const input = `${encodedHeader(header)}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return new Promise((resolve, reject) => {
    sign('sha256', Buffer.from(input), key, (error, signature) => {
      if (error) reject(error);
      else resolve(`${input}.${(header.alg === 'ES256' ? p1363FromDer(signature) : signature).toString('base64url')}`);
    });
  });
}

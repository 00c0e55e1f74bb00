import { createHash, randomBytes, randomFillSync, timingSafeEqual } from 'node:crypto';

/**
 * CSPRNG output drawn 4 KiB at a time, as Node's own `randomUUID` and `randomInt` do: a
 * `randomBytes` call per token costs a native call and a fresh ArrayBuffer for the garbage
 * collector (6% of a device authorization's main thread). Each byte is handed out once,
 * then zeroed, so the buffer never holds a token already issued.
 */
const entropy = Buffer.allocUnsafeSlow(4096);
let entropyUsed = entropy.length;

/** A random bearer value with `bytes` bytes of entropy, base64url without padding. */
export function randomToken(bytes = 32): string {
  if (bytes > entropy.length) return randomBytes(bytes).toString('base64url');
  if (entropyUsed + bytes > entropy.length) {
    randomFillSync(entropy);
    entropyUsed = 0;
  }
  const start = entropyUsed;
  entropyUsed += bytes;
  const token = entropy.toString('base64url', start, entropyUsed);
  entropy.fill(0, start, entropyUsed);
  return token;
}

/**
 * How server-generated secrets (codes, device codes, refresh tokens, client secrets,
 * session ids) are stored. They carry at least 256 bits of entropy, so a fast hash is
 * enough: a slow password hash buys nothing against brute force of a 256-bit value and
 * would cost milliseconds on every request.
 */
export function hashSecret(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('base64url');
}

/** Constant-time string comparison: the time taken does not depend on where the inputs differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a, 'utf8').digest();
  const right = createHash('sha256').update(b, 'utf8').digest();
  // Comparing fixed-length digests keeps the lengths of the inputs out of the timing too.
  return timingSafeEqual(left, right) && a.length === b.length;
}

/**
 * Constant-time comparison of two `hashSecret` digests: fixed-length already, so they are
 * compared as they are, without the two extra hashes `constantTimeEqual` spends on inputs of
 * any length. Client authentication runs on every token request.
 */
export function digestsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'latin1');
  const right = Buffer.from(b, 'latin1');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** RFC 7636 §4.2: code_challenge = BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** RFC 7636 §4.1: code-verifier = 43*128unreserved. */
export const CODE_VERIFIER_PATTERN = /^[A-Za-z0-9\-._~]{43,128}$/;

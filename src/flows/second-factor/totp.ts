/**
 * RFC 6238 (TOTP) over RFC 4226 (HOTP): the codes authenticator apps show, computed with
 * node:crypto's HMAC. SHA-1, 6 digits and 30-second steps are the parameters every app
 * understands (Google Authenticator ignores any others in the otpauth URI).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { constantTimeEqual } from '../../core/crypto.ts';

/** RFC 6238 §4.1: X, the time step, in seconds (the recommended default). */
export const TOTP_STEP_SECONDS = 30;
export const TOTP_DIGITS = 6;
/**
 * RFC 6238 §5.2: "We RECOMMEND that at most one time step is allowed as the network delay":
 * the codes of the step before and after are accepted too, for clocks a little apart.
 */
export const TOTP_WINDOW = 1;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 §6 base32, without padding (as otpauth URIs carry it). */
export function base32Encode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index === -1) throw new Error('not base32');
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 §4 R6: the shared secret should be 160 bits. */
export function newTotpSecret(): string {
  return base32Encode(randomBytes(20));
}

/** RFC 6238 §4.2: T = floor((Current Unix time - T0) / X), with T0 = 0. */
export function timeStep(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_STEP_SECONDS);
}

/** RFC 4226 §5.3: HOTP(K, C) = Truncate(HMAC-SHA-1(K, C)), as `TOTP_DIGITS` decimal digits. */
export function hotp(secret: string, counter: number): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', base32Decode(secret)).update(message).digest();
  // Dynamic truncation: the low 4 bits of the last byte pick where the 31-bit number starts.
  const offset = mac[mac.length - 1]! & 0x0f;
  const number = mac.readUInt32BE(offset) & 0x7fffffff;
  return String(number % 10 ** TOTP_DIGITS).padStart(TOTP_DIGITS, '0');
}

export function totpAt(secret: string, nowMs: number): string {
  return hotp(secret, timeStep(nowMs));
}

/**
 * The time step whose code `code` is, within the window around `nowMs`, or null. Every step
 * in the window is computed and compared in constant time, so the answer takes as long
 * whichever matched.
 */
export function matchTotp(secret: string, code: string, nowMs: number): number | null {
  const typed = code.replace(/\s/g, '');
  if (!/^\d{6}$/.test(typed)) return null;
  const current = timeStep(nowMs);
  let matched: number | null = null;
  for (let step = current - TOTP_WINDOW; step <= current + TOTP_WINDOW; step++) {
    if (constantTimeEqual(hotp(secret, step), typed) && matched === null) matched = step;
  }
  return matched;
}

/**
 * The Key Uri Format authenticator apps read from a QR code. The app lists the code under
 * `issuer`: the site's name (TESSERA_SITE_NAME), with the host name to tell two servers apart.
 */
export function otpauthUri(siteName: string, hostname: string, username: string, secret: string): string {
  // The issuer is also the label's prefix, which ends at the first colon ("issuer:account").
  const issuer = `${siteName} (${hostname})`.replaceAll(':', '');
  const label = encodeURIComponent(`${issuer}:${username}`);
  const params = new URLSearchParams({ secret, issuer, algorithm: 'SHA1', digits: String(TOTP_DIGITS), period: String(TOTP_STEP_SECONDS) });
  return `otpauth://totp/${label}?${params.toString()}`;
}

/**
 * User codes (RFC 8628 §6.1): what a person reads on a device's screen and types on a
 * phone. 8 characters from 20 consonants, shown as `XXXX-XXXX`: no vowels, so no words,
 * and none of 0/O or 1/I to confuse. 20^8 ≈ 2.56 × 10^10 codes, about 34.5 bits
 * (docs/device-flow.md has the brute-force arithmetic).
 */
import { randomInt } from 'node:crypto';

export const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
export const USER_CODE_LENGTH = 8;

const NORMALISED = new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`);

/** A new user code in its stored form: 8 characters, upper case, no separator. */
export function generateUserCode(): string {
  let code = '';
  // randomInt draws without modulo bias, so every code is equally likely.
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/** How a user code is shown and put in links: `WDJB-MJHT`. */
export function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * What a person typed, in stored form, or null when it cannot be a user code. RFC 8628
 * §6.1: the input is case-insensitive and the separator (here also spaces) is ignored.
 */
export function normalizeUserCode(input: string): string | null {
  if (input.length > 64) return null;
  const code = input.replace(/[\s-]/g, '').toUpperCase();
  return NORMALISED.test(code) ? code : null;
}

import * as crypto from 'node:crypto';
import { promisify } from 'node:util';
import type { PasswordHashCost } from '../config/index.ts';

const { randomBytes, timingSafeEqual } = crypto;

// node:crypto gained argon2 in Node 24.7, which `engines` asks for; a Node that ignores
// `engines` gets one clear line instead of a TypeError.
function argon2Async(algorithm: 'argon2id', parameters: crypto.Argon2Parameters): Promise<Buffer> {
  if (typeof crypto.argon2 !== 'function') {
    return Promise.reject(new Error(`password hashing needs argon2 from node:crypto (Node.js >= 24.7); this is Node.js ${process.version}`));
  }
  return promisify(crypto.argon2)(algorithm, parameters);
}

/**
 * A PHC-format argon2id hash of a user password, at the cost `TESSERA_PASSWORD_HASH` sets
 * (`config.passwordHash`; RFC 9106 §4's t=3, m=64 MiB, p=4 by default). The cost is written
 * into the hash, so verifying never needs the setting.
 */
export async function hashPassword(password: string, cost: PasswordHashCost): Promise<string> {
  const nonce = randomBytes(16);
  const { memory, passes, parallelism } = cost;
  const tag = await argon2Async('argon2id', { message: password, nonce, memory, passes, parallelism, tagLength: 32 });
  return `$argon2id$v=19$m=${memory},t=${passes},p=${parallelism}$${nonce.toString('base64url')}$${tag.toString('base64url')}`;
}

const PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/;

/** The parts of a PHC-format argon2id hash; null when it is not one. */
export function parsePasswordHash(encoded: string): { cost: PasswordHashCost; nonce: Buffer; tag: Buffer } | null {
  const match = PHC.exec(encoded);
  if (!match) return null;
  const [, memory, passes, parallelism, nonce, tag] = match as unknown as [string, string, string, string, string, string];
  return {
    cost: { memory: Number(memory), passes: Number(passes), parallelism: Number(parallelism) },
    nonce: Buffer.from(nonce, 'base64url'),
    tag: Buffer.from(tag, 'base64url'),
  };
}

/**
 * Verifies on libuv's thread pool: for the command line. The server checks sign-in
 * passwords through its `PasswordQueue`, on threads of their own.
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parsed = parsePasswordHash(encoded);
  if (!parsed) return false;
  const actual = await argon2Async('argon2id', { message: password, nonce: parsed.nonce, ...parsed.cost, tagLength: parsed.tag.length });
  return timingSafeEqual(actual, parsed.tag);
}

/**
 * A hash of no password at the configured cost, verified against when the username is
 * unknown, so that a failed sign-in takes the same time whether or not the user exists.
 */
const decoys = new Map<string, Promise<string>>();
export function decoyPasswordHash(cost: PasswordHashCost): Promise<string> {
  const key = `${cost.memory},${cost.passes},${cost.parallelism}`;
  let decoy = decoys.get(key);
  if (!decoy) {
    decoy = hashPassword(randomBytes(32).toString('base64url'), cost);
    decoys.set(key, decoy);
  }
  return decoy;
}

/**
 * Bearer secrets the store finds by their key and that are written once each, often: device
 * codes (RFC 8628 §3.2) and refresh tokens (RFC 6749 §6, a new one at every rotation).
 *
 * A secret is the time it was made (milliseconds since 1970 in base 36, nine characters) then
 * 256 random bits (43 base64url characters). It is stored only as its key: that time prefix,
 * then the SHA-256 of the whole secret. The prefix is what its holder already knows (when it
 * was given the secret), and it keeps the keys in the order the secrets were made: each new
 * one adds its key at the end of the store's index instead of at a random place in it. A
 * random key dirtied a random leaf page of that index at every insert, and each such page is
 * another page written to SQLite's WAL and copied back at its checkpoint: device codes
 * inserted 20 to a commit wrote 2.84 WAL pages each with random keys and 1.73 with ordered
 * ones, and took 89–93 µs of the writer's time against 56 (docs/benchmarks.md, "What was made
 * faster").
 *
 * A secret of the earlier form (43 characters, its key the bare hash) is still found under its
 * key: what was issued before this form is used to its end.
 */
import { hashSecret, randomToken } from './crypto.ts';

/** Characters of the time prefix: base 36 milliseconds fit nine until the year 5188. */
const TIME_LENGTH = 9;

/** A secret of this form: the time prefix, then 43 base64url characters. */
const TIMED = new RegExp(`^[0-9a-z]{${TIME_LENGTH}}[A-Za-z0-9_-]{43}$`);

/** A new secret, made at `now` (epoch milliseconds). */
export function newTimedSecret(now: number): string {
  return `${Math.floor(now).toString(36).padStart(TIME_LENGTH, '0')}${randomToken(32)}`;
}

/**
 * The key `secret` is stored and looked up under: its time prefix and the SHA-256 of the whole
 * secret, or the bare hash for a secret of the earlier form (or none: such a key is never stored).
 */
export function timedSecretKey(secret: string): string {
  return TIMED.test(secret) ? `${secret.slice(0, TIME_LENGTH)}${hashSecret(secret)}` : hashSecret(secret);
}

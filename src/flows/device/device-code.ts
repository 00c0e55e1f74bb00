/**
 * Device codes (RFC 8628 §3.2 `device_code`): the bearer secret a device polls with, and the
 * key it is stored under.
 *
 * A code is the time it was made (milliseconds since 1970 in base 36, nine characters) then
 * 256 random bits (43 base64url characters). It is stored only as its key: that time prefix,
 * then the SHA-256 of the whole code. The prefix is what the device already knows (when it
 * asked), and it keeps the keys in the order the codes were made: each new device
 * authorization adds its key at the end of the store's index instead of at a random place
 * in it. A random key dirtied a random leaf page of that index at every insert, and each
 * such page is another page written to SQLite's WAL and copied back at its checkpoint:
 * inserts 20 to a commit wrote 2.84 WAL pages each with random keys and 1.73 with ordered
 * ones, and took 89–93 µs of the writer's time against 56 (docs/benchmarks.md, "What was
 * made faster").
 *
 * A code of the old form (43 characters, its key the bare hash) is still found under its
 * key: codes made before this form are polled to their end.
 */
import { hashSecret, randomToken } from '../../core/crypto.ts';

/** Characters of the time prefix: base 36 milliseconds fit nine until the year 5188. */
const TIME_LENGTH = 9;

/** A code of this form: the time prefix, then 43 base64url characters. */
const TIMED = new RegExp(`^[0-9a-z]{${TIME_LENGTH}}[A-Za-z0-9_-]{43}$`);

/** A new device code, made at `now` (epoch milliseconds). */
export function newDeviceCode(now: number): string {
  return `${Math.floor(now).toString(36).padStart(TIME_LENGTH, '0')}${randomToken(32)}`;
}

/**
 * The key `code` is stored and looked up under: its time prefix and the SHA-256 of the whole
 * code, or the bare hash for a code of the old form (or none: such a key is never stored).
 */
export function deviceCodeKey(code: string): string {
  return TIMED.test(code) ? `${code.slice(0, TIME_LENGTH)}${hashSecret(code)}` : hashSecret(code);
}

/**
 * Outstanding device codes written straight into Tessera's SQLite file, in large
 * transactions: a million through HTTP would take longer than the whole benchmark. The pool
 * the bench polls gets known device codes (stored, as always, only as their hash); the rest
 * are filler rows of the same shape generated inside SQLite. The codes are of the earlier
 * form (43 characters, stored under their bare hash), which every version of Tessera finds
 * (src/flows/device/device-code.ts), so that `--against` seeds an older checkout's store the
 * same way.
 */
import { DatabaseSync } from 'node:sqlite';
import { hashSecret, randomToken } from '../src/core/crypto.ts';

const COLUMNS = `device_code_hash, user_code, client_id, scope, status, poll_interval, last_polled_at, last_outcome,
  created_at, expires_at, request_ip, request_user_agent, user_id, auth_time, grant_id, decided_at`;
const CHUNK = 250_000;

/** Returns the pool's device codes; `outstanding` counts the pool too. */
export function seedDeviceCodes(path: string, clientId: string, outstanding: number, pool: number, interval: number): string[] {
  const db = new DatabaseSync(path);
  const now = Date.now();
  const expiresAt = now + 600_000;
  const scope = JSON.stringify(['openid', 'profile']);
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    const codes: string[] = [];
    db.exec('BEGIN');
    const insert = db.prepare(`INSERT INTO device_authorizations (${COLUMNS})
      VALUES (?, ?, ?, ?, 'pending', ?, NULL, NULL, ?, ?, '127.0.0.1', 'tessera-bench', NULL, NULL, NULL, NULL)`);
    for (let i = 0; i < pool; i += 1) {
      const code = randomToken(32);
      insert.run(hashSecret(code), `P${String(i).padStart(7, '0')}`, clientId, scope, interval, now, expiresAt);
      codes.push(code);
    }
    db.exec('COMMIT');
    // Filler hashes have the length of real ones (43 characters) so the index is as deep.
    const filler = db.prepare(`INSERT INTO device_authorizations (${COLUMNS})
      WITH RECURSIVE n(i) AS (SELECT :from UNION ALL SELECT i + 1 FROM n WHERE i < :to)
      SELECT substr(hex(randomblob(22)), 1, 43), printf('F%07d', i), :clientId, :scope, 'pending', :interval, NULL, NULL,
             :now, :expiresAt, '127.0.0.1', 'tessera-bench', NULL, NULL, NULL, NULL FROM n`);
    for (let from = 1; from <= outstanding - pool; from += CHUNK) {
      const to = Math.min(outstanding - pool, from + CHUNK - 1);
      db.exec('BEGIN');
      filler.run({ from, to, clientId, scope, interval, now, expiresAt });
      db.exec('COMMIT');
    }
    return codes;
  } finally {
    db.close();
  }
}

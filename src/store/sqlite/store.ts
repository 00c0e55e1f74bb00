/**
 * The embedded store: one SQLite file through `node:sqlite`, shared by every process that
 * opens it (node:cluster workers). Each method is one prepared statement, prepared once at
 * open; SQLite runs one writer at a time, so a conditional UPDATE has exactly one winner.
 */

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import {
  clientFromRow,
  codeFromRow,
  CorruptRowError,
  deviceFromRow,
  grantFromRow,
  integer,
  jsonObject,
  pollOutcomeFromRow,
  refreshTokenFromRow,
  sessionFromRow,
  signingKeyFromRow,
  stringList,
  text,
  userFromRow,
  type ColumnReader,
  type Row,
} from '../rows.ts';
import { devicePollAssignments, PURGE_BATCH_SIZE } from '../sql.ts';
import { DuplicateError, type Store } from '../types.ts';
import { GroupCommit } from './group-commit.ts';
import { migrateSqlite } from './migrate.ts';
import { storeError } from './unavailable.ts';

/** How long a statement waits for another process's write lock before failing with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

const read: ColumnReader = {
  strings: (row, column) => stringList(column, JSON.parse(text(row, column))),
  object: (row, column) => jsonObject(column, JSON.parse(text(row, column))),
  boolean: (row, column) => {
    const value = integer(row, column);
    if (value !== 0 && value !== 1) throw new CorruptRowError(column, '0 or 1', value);
    return value === 1;
  },
};

const list = (values: readonly string[]): string => JSON.stringify(values);
const flag = (value: boolean): number => (value ? 1 : 0);

/**
 * Opens (creating it if needed) the SQLite database at `path`, or an in-memory one for
 * `:memory:`, and brings its schema up to date.
 */
export function openSqliteStore(path: string): Store {
  const db = openDatabase(path);
  try {
    migrateSqlite(db);
    return sqliteStore(db);
  } catch (error) {
    db.close();
    throw error;
  }
}

function openDatabase(path: string): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path);
  try {
    // busy_timeout first: switching to WAL needs a lock another process may hold.
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec('PRAGMA journal_mode = WAL');
    // In WAL mode NORMAL loses no committed transaction when the process crashes, only
    // (possibly) the last ones on power loss, and saves an fsync per commit: polling
    // writes on every request.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

function sqliteStore(db: DatabaseSync): Store {
  const s = prepareStatements(db);
  const batch = new GroupCommit(db);
  const run = <T>(statement: StatementSync, execute: () => T): T => {
    try {
      return batch.run(statement, execute);
    } catch (error) {
      throw storeError(error);
    }
  };
  const one = (statement: StatementSync, parameters: Record<string, SQLInputValue> = {}): Row | undefined =>
    run(statement, () => statement.get(parameters));
  const all = (statement: StatementSync, parameters: Record<string, SQLInputValue> = {}): Row[] =>
    run(statement, () => statement.all(parameters));
  const changed = (statement: StatementSync, parameters: Record<string, SQLInputValue>): number =>
    run(statement, () => Number(statement.run(parameters).changes));

  const store: Store = {
    clients: {
      async create(client) {
        const inserted = changed(s.insertClient, {
          id: client.id,
          name: client.name,
          secretHash: client.secretHash,
          redirectUris: list(client.redirectUris),
          scopes: list(client.scopes),
          grantTypes: list(client.grantTypes),
          webOrigins: list(client.webOrigins),
          createdAt: client.createdAt,
        });
        if (inserted === 0) throw new DuplicateError(`client ${client.id}`);
      },
      async get(id) {
        const row = one(s.getClient, { id });
        return row ? clientFromRow(row, read) : null;
      },
      async list() {
        return all(s.listClients).map((row) => clientFromRow(row, read));
      },
      async remove(id) {
        return changed(s.removeClient, { id }) > 0;
      },
    },

    users: {
      async create(user) {
        const inserted = changed(s.insertUser, {
          id: user.id,
          username: user.username,
          passwordHash: user.passwordHash,
          name: user.name,
          email: user.email,
          emailVerified: flag(user.emailVerified),
          disabled: flag(user.disabled),
          createdAt: user.createdAt,
        });
        if (inserted === 0) throw new DuplicateError(`user ${JSON.stringify(user.username)}`);
      },
      async get(id) {
        const row = one(s.getUser, { id });
        return row ? userFromRow(row, read) : null;
      },
      async findByUsername(username) {
        const row = one(s.getUserByUsername, { username });
        return row ? userFromRow(row, read) : null;
      },
      async list() {
        return all(s.listUsers).map((row) => userFromRow(row, read));
      },
      async setDisabled(id, disabled) {
        return changed(s.setUserDisabled, { id, disabled: flag(disabled) }) > 0;
      },
    },

    sessions: {
      async create(session) {
        changed(s.insertSession, {
          idHash: session.idHash,
          userId: session.userId,
          authTime: session.authTime,
          createdAt: session.createdAt,
          expiresAt: session.expiresAt,
        });
      },
      async get(idHash, now) {
        const row = one(s.getSession, { idHash, now });
        return row ? sessionFromRow(row) : null;
      },
      async remove(idHash) {
        changed(s.removeSession, { idHash });
      },
    },

    grants: {
      async create(grant) {
        changed(s.insertGrant, {
          id: grant.id,
          userId: grant.userId,
          clientId: grant.clientId,
          scope: list(grant.scope),
          kind: grant.kind,
          authTime: grant.authTime,
          createdAt: grant.createdAt,
          revokedAt: grant.revokedAt,
          deviceIp: grant.device?.ip ?? null,
          deviceUserAgent: grant.device?.userAgent ?? null,
          deviceRequestedAt: grant.device?.requestedAt ?? null,
        });
      },
      async get(id) {
        const row = one(s.getGrant, { id });
        return row ? grantFromRow(row, read) : null;
      },
      async revoke(id, now) {
        return changed(s.revokeGrant, { id, now }) > 0;
      },
      async listForUser(userId) {
        return all(s.listGrantsForUser, { userId }).map((row) => grantFromRow(row, read));
      },
      async recordUse(id, now, activeUntil) {
        return changed(s.recordGrantUse, { id, now, activeUntil }) > 0;
      },
    },

    refreshTokens: {
      async create(token) {
        changed(s.insertRefreshToken, {
          hash: token.hash,
          grantId: token.grantId,
          clientId: token.clientId,
          userId: token.userId,
          scope: list(token.scope),
          authTime: token.authTime,
          createdAt: token.createdAt,
          expiresAt: token.expiresAt,
          rotatedAt: token.rotatedAt,
        });
      },
      async rotate(hash, clientId, now) {
        const row = one(s.rotateRefreshToken, { hash, clientId, now });
        return row ? refreshTokenFromRow(row, read) : null;
      },
      async find(hash) {
        const row = one(s.getRefreshToken, { hash });
        return row ? refreshTokenFromRow(row, read) : null;
      },
    },

    accessTokens: {
      async revoke(jti, expiresAt) {
        changed(s.revokeAccessToken, { jti, expiresAt });
      },
      async isRevoked(jti) {
        return one(s.getRevokedAccessToken, { jti }) !== undefined;
      },
    },

    codes: {
      async create(code) {
        changed(s.insertCode, {
          hash: code.hash,
          clientId: code.clientId,
          userId: code.userId,
          grantId: code.grantId,
          redirectUri: code.redirectUri,
          scope: list(code.scope),
          nonce: code.nonce,
          codeChallenge: code.codeChallenge,
          authTime: code.authTime,
          createdAt: code.createdAt,
          expiresAt: code.expiresAt,
          consumedAt: code.consumedAt,
        });
      },
      async consume(hash, binding, now) {
        const row = one(s.consumeCode, {
          hash,
          clientId: binding.clientId,
          redirectUri: binding.redirectUri,
          codeChallenge: binding.codeChallenge,
          now,
        });
        return row ? codeFromRow(row, read) : null;
      },
      async find(hash) {
        const row = one(s.getCode, { hash });
        return row ? codeFromRow(row, read) : null;
      },
    },

    devices: {
      async create(record) {
        const stored = changed(s.insertDevice, {
          deviceCodeHash: record.deviceCodeHash,
          userCode: record.userCode,
          clientId: record.clientId,
          scope: list(record.scope),
          status: record.status,
          interval: record.interval,
          lastPolledAt: record.lastPolledAt,
          createdAt: record.createdAt,
          expiresAt: record.expiresAt,
          requestIp: record.requestIp,
          requestUserAgent: record.requestUserAgent,
          userId: record.userId,
          authTime: record.authTime,
          grantId: record.grantId,
          decidedAt: record.decidedAt,
        });
        return stored > 0;
      },
      async findByUserCode(userCode, now) {
        const row = one(s.getDeviceByUserCode, { userCode, now });
        return row ? deviceFromRow(row, read) : null;
      },
      async decide(userCode, decision, now) {
        const row = one(s.decideDevice, {
          userCode,
          status: decision.approve ? 'approved' : 'denied',
          userId: decision.approve ? decision.userId : null,
          authTime: decision.approve ? decision.authTime : null,
          grantId: decision.approve ? decision.grantId : null,
          now,
        });
        return row ? deviceFromRow(row, read) : null;
      },
      async poll(deviceCodeHash, clientId, now) {
        const row = one(s.pollDevice, { deviceCodeHash, clientId, now });
        return row ? { outcome: pollOutcomeFromRow(row), record: deviceFromRow(row, read) } : null;
      },
    },

    rateLimits: {
      async hit(key, windowMs, now) {
        const row = one(s.hitRateLimit, { key, now, windowEndsAt: now + windowMs });
        if (!row) throw new Error('rate limit upsert returned no row');
        return integer(row, 'hits');
      },
      // The stored window carries its own end, so the window length is not needed to read it.
      async count(key, _windowMs, now) {
        const row = one(s.countRateLimit, { key, now });
        return row ? integer(row, 'hits') : 0;
      },
      async release(key, now) {
        changed(s.releaseRateLimit, { key, now });
      },
    },

    keys: {
      async add(key) {
        changed(s.insertKey, {
          kid: key.kid,
          alg: key.alg,
          privateJwk: JSON.stringify(key.privateJwk),
          publicJwk: JSON.stringify(key.publicJwk),
          createdAt: key.createdAt,
          activatesAt: key.activatesAt,
          retiresAt: key.retiresAt,
          expiresAt: key.expiresAt,
        });
      },
      async listPublished(now) {
        return all(s.listPublishedKeys, { now }).map((row) => signingKeyFromRow(row, read));
      },
      async schedule(kid, retiresAt, expiresAt) {
        changed(s.scheduleKey, { kid, retiresAt, expiresAt });
      },
    },

    async purgeExpired(before) {
      let deleted = 0;
      for (const statement of s.purge) {
        // Each batch is its own short transaction, so other processes wait at most one batch.
        for (;;) {
          const count = changed(statement, { before, limit: PURGE_BATCH_SIZE });
          batch.flush();
          deleted += count;
          if (count < PURGE_BATCH_SIZE) break;
        }
      }
      return deleted;
    },

    async close() {
      if (!db.isOpen) return;
      batch.flush();
      db.close();
    },
  };
  return settledAfterCommit(store, batch);
}

/**
 * The store with every call's answer held until its statements have committed (see
 * GroupCommit): each method runs at once, as before, and only its promise waits.
 */
function settledAfterCommit<T extends object>(target: T, batch: GroupCommit): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(target)) {
    if (typeof member === 'function') {
      wrapped[name] = (...args: unknown[]) => batch.settle((member as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    } else if (member !== null && typeof member === 'object') {
      wrapped[name] = settledAfterCommit(member as object, batch);
    } else {
      wrapped[name] = member;
    }
  }
  return wrapped as T;
}

function prepareStatements(db: DatabaseSync) {
  const purge = (table: string, key: string, expiry: string): StatementSync =>
    db.prepare(`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${expiry} < :before LIMIT :limit)`);

  return {
    insertClient: db.prepare(`
      INSERT INTO clients (id, name, secret_hash, redirect_uris, scopes, grant_types, web_origins, created_at)
      VALUES (:id, :name, :secretHash, :redirectUris, :scopes, :grantTypes, :webOrigins, :createdAt)
      ON CONFLICT DO NOTHING`),
    getClient: db.prepare('SELECT * FROM clients WHERE id = :id'),
    listClients: db.prepare('SELECT * FROM clients ORDER BY created_at, id'),
    // Codes, device records and grants go with it: ON DELETE CASCADE.
    removeClient: db.prepare('DELETE FROM clients WHERE id = :id'),

    insertUser: db.prepare(`
      INSERT INTO users (id, username, password_hash, name, email, email_verified, disabled, created_at)
      VALUES (:id, :username, :passwordHash, :name, :email, :emailVerified, :disabled, :createdAt)
      ON CONFLICT DO NOTHING`),
    getUser: db.prepare('SELECT * FROM users WHERE id = :id'),
    getUserByUsername: db.prepare('SELECT * FROM users WHERE username = :username'),
    listUsers: db.prepare('SELECT * FROM users ORDER BY created_at, id'),
    setUserDisabled: db.prepare('UPDATE users SET disabled = :disabled WHERE id = :id'),

    insertSession: db.prepare(`
      INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at)
      VALUES (:idHash, :userId, :authTime, :createdAt, :expiresAt)`),
    getSession: db.prepare('SELECT * FROM sessions WHERE id_hash = :idHash AND expires_at > :now'),
    removeSession: db.prepare('DELETE FROM sessions WHERE id_hash = :idHash'),

    insertGrant: db.prepare(`
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at,
                          device_ip, device_user_agent, device_requested_at)
      VALUES (:id, :userId, :clientId, :scope, :kind, :authTime, :createdAt, :revokedAt,
              :deviceIp, :deviceUserAgent, :deviceRequestedAt)`),
    getGrant: db.prepare('SELECT * FROM grants WHERE id = :id'),
    revokeGrant: db.prepare('UPDATE grants SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL'),
    listGrantsForUser: db.prepare(`
      SELECT * FROM grants WHERE user_id = :userId AND revoked_at IS NULL
      ORDER BY created_at DESC, id DESC`),
    // Both times only move forward, whatever order concurrent issuances commit in.
    recordGrantUse: db.prepare(`
      UPDATE grants SET last_used_at = MAX(COALESCE(last_used_at, 0), :now),
                        active_until = MAX(COALESCE(active_until, 0), :activeUntil)
      WHERE id = :id AND revoked_at IS NULL`),

    insertRefreshToken: db.prepare(`
      INSERT INTO refresh_tokens (hash, grant_id, client_id, user_id, scope, auth_time, created_at, expires_at, rotated_at)
      VALUES (:hash, :grantId, :clientId, :userId, :scope, :authTime, :createdAt, :expiresAt, :rotatedAt)`),
    // RFC 9700 §4.14.2: refresh token rotation; RFC 6749 §6: the token must have been issued
    // to the authenticated client. A revoked grant's tokens are refused in the same statement.
    rotateRefreshToken: db.prepare(`
      UPDATE refresh_tokens SET rotated_at = :now
      WHERE hash = :hash AND client_id = :clientId AND rotated_at IS NULL AND expires_at > :now
        AND EXISTS (SELECT 1 FROM grants WHERE grants.id = refresh_tokens.grant_id AND grants.revoked_at IS NULL)
      RETURNING *`),
    getRefreshToken: db.prepare('SELECT * FROM refresh_tokens WHERE hash = :hash'),

    revokeAccessToken: db.prepare(`
      INSERT INTO revoked_access_tokens (jti, expires_at) VALUES (:jti, :expiresAt)
      ON CONFLICT DO NOTHING`),
    getRevokedAccessToken: db.prepare('SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = :jti'),

    insertCode: db.prepare(`
      INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, nonce,
                                       code_challenge, auth_time, created_at, expires_at, consumed_at)
      VALUES (:hash, :clientId, :userId, :grantId, :redirectUri, :scope, :nonce,
              :codeChallenge, :authTime, :createdAt, :expiresAt, :consumedAt)`),
    // RFC 6749 §4.1.2: "The client MUST NOT use the authorization code more than once."
    // RFC 6749 §4.1.3 and RFC 7636 §4.6: the code is bound to its client, redirect_uri and
    // challenge; a mismatch leaves it untouched.
    consumeCode: db.prepare(`
      UPDATE authorization_codes SET consumed_at = :now
      WHERE hash = :hash AND consumed_at IS NULL AND expires_at > :now
        AND client_id = :clientId AND redirect_uri = :redirectUri AND code_challenge = :codeChallenge
      RETURNING *`),
    getCode: db.prepare('SELECT * FROM authorization_codes WHERE hash = :hash'),

    // A user code is unique among live records only: an expired record holding the same
    // code is replaced in the same statement, a live one makes the insert do nothing.
    insertDevice: db.prepare(`
      INSERT INTO device_authorizations (device_code_hash, user_code, client_id, scope, status, poll_interval,
                                         last_polled_at, last_outcome, created_at, expires_at, request_ip,
                                         request_user_agent, user_id, auth_time, grant_id, decided_at)
      VALUES (:deviceCodeHash, :userCode, :clientId, :scope, :status, :interval,
              :lastPolledAt, NULL, :createdAt, :expiresAt, :requestIp,
              :requestUserAgent, :userId, :authTime, :grantId, :decidedAt)
      ON CONFLICT (user_code) DO UPDATE SET
        device_code_hash = excluded.device_code_hash, client_id = excluded.client_id, scope = excluded.scope,
        status = excluded.status, poll_interval = excluded.poll_interval, last_polled_at = excluded.last_polled_at,
        last_outcome = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at,
        request_ip = excluded.request_ip, request_user_agent = excluded.request_user_agent,
        user_id = excluded.user_id, auth_time = excluded.auth_time, grant_id = excluded.grant_id,
        decided_at = excluded.decided_at
      WHERE device_authorizations.expires_at <= excluded.created_at`),
    getDeviceByUserCode: db.prepare('SELECT * FROM device_authorizations WHERE user_code = :userCode AND expires_at > :now'),
    decideDevice: db.prepare(`
      UPDATE device_authorizations
      SET status = :status, user_id = :userId, auth_time = :authTime, grant_id = :grantId, decided_at = :now
      WHERE user_code = :userCode AND status = 'pending' AND expires_at > :now
      RETURNING *`),
    pollDevice: db.prepare(`
      UPDATE device_authorizations SET ${devicePollAssignments(':now')}
      WHERE device_code_hash = :deviceCodeHash AND client_id = :clientId
      RETURNING *`),

    // A fixed window that starts at the first hit after the previous window ended.
    hitRateLimit: db.prepare(`
      INSERT INTO rate_limits (key, hits, window_ends_at) VALUES (:key, 1, :windowEndsAt)
      ON CONFLICT (key) DO UPDATE SET
        hits = CASE WHEN rate_limits.window_ends_at <= :now THEN 1 ELSE rate_limits.hits + 1 END,
        window_ends_at = CASE WHEN rate_limits.window_ends_at <= :now THEN excluded.window_ends_at
                              ELSE rate_limits.window_ends_at END
      RETURNING hits`),
    countRateLimit: db.prepare('SELECT hits FROM rate_limits WHERE key = :key AND window_ends_at > :now'),
    releaseRateLimit: db.prepare('UPDATE rate_limits SET hits = hits - 1 WHERE key = :key AND window_ends_at > :now AND hits > 0'),

    insertKey: db.prepare(`
      INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, activates_at, retires_at, expires_at)
      VALUES (:kid, :alg, :privateJwk, :publicJwk, :createdAt, :activatesAt, :retiresAt, :expiresAt)`),
    listPublishedKeys: db.prepare(`
      SELECT * FROM signing_keys WHERE expires_at IS NULL OR expires_at > :now
      ORDER BY created_at, kid`),
    scheduleKey: db.prepare('UPDATE signing_keys SET retires_at = :retiresAt, expires_at = :expiresAt WHERE kid = :kid'),

    purge: [
      purge('authorization_codes', 'hash', 'expires_at'),
      purge('device_authorizations', 'device_code_hash', 'expires_at'),
      purge('sessions', 'id_hash', 'expires_at'),
      purge('rate_limits', 'key', 'window_ends_at'),
      purge('refresh_tokens', 'hash', 'expires_at'),
      purge('revoked_access_tokens', 'jti', 'expires_at'),
    ],
  };
}

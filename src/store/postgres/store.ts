/**
 * The shared store: PostgreSQL through a `pg.Pool`, for several stateless instances behind
 * one database. Each method is one parameterised statement, named so that every pooled
 * connection prepares it once and reuses it. Under READ COMMITTED, a conditional UPDATE
 * that waited for another transaction's row lock re-checks its WHERE against the row that
 * transaction committed (and its SET sees that row), so exactly one caller wins.
 */

import pg from 'pg';
import { POSTGRES_DEFAULTS, type PostgresSettings } from '../../config/index.ts';
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
  userFromRow,
  type ColumnReader,
  type Row,
} from '../rows.ts';
import { devicePollAssignments, PURGE_BATCH_SIZE } from '../sql.ts';
import { DuplicateError, type Store } from '../types.ts';
import { migratePostgres } from './migrate.ts';
import { storeError } from './unavailable.ts';

/** The pool size and time limits (`POSTGRES_DEFAULTS` for those not given), and the schema. */
export interface PostgresStoreOptions extends Partial<PostgresSettings> {
  /**
   * The schema to keep Tessera's tables in, created if missing and put first on every
   * pooled connection's search_path. Lower-case letters, digits and `_`.
   */
  readonly schema?: string;
}

const read: ColumnReader = {
  strings: (row, column) => stringList(column, row[column]),
  object: (row, column) => jsonObject(column, row[column]),
  boolean: (row, column) => {
    const value = row[column];
    if (typeof value !== 'boolean') throw new CorruptRowError(column, 'a boolean', value);
    return value;
  },
};

const list = (values: readonly string[]): string[] => [...values];

/**
 * Timestamps are `bigint` milliseconds, which pg returns as strings by default. Every one
 * of them is below 2^53, so a JS number holds it exactly; anything else is refused rather
 * than rounded.
 */
function parseBigint(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new RangeError(`bigint ${value} does not fit in a JS number`);
  return parsed;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * How much longer than the statement timeout the driver waits for an answer before it gives
 * up on the connection: long enough that a live server's own cancellation (a clean error on
 * a connection that stays usable) comes first, short enough to bound a silent one.
 */
const ANSWER_GRACE_MS = 500;

/** A query with pg's `query_timeout`, which pg reads from a query's config but @types/pg's QueryConfig lacks. */
type TimedQuery = pg.QueryConfig & { readonly query_timeout: number };

/**
 * Connects to the PostgreSQL database at `url` (a `postgres://` connection string) and
 * brings its schema up to date.
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const schema = options.schema ?? null;
  if (schema !== null && !SCHEMA_NAME.test(schema)) {
    throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _`);
  }
  // Type parsers for this pool only, not pg's global ones, which belong to the process.
  const types = new pg.TypeOverrides();
  types.setTypeParser(pg.types.builtins.INT8, parseBigint);
  const statementTimeoutMs = (options.statementTimeoutSeconds ?? POSTGRES_DEFAULTS.statementTimeoutSeconds) * 1000;
  const answerTimeoutMs = statementTimeoutMs + ANSWER_GRACE_MS;
  const pool = new pg.Pool({
    connectionString: url,
    types,
    max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
    // When the database is unreachable (a failover, a partition) or every pooled connection
    // is busy, a request fails after this long instead of waiting for a connection forever,
    // and TCP keepalive finds pooled connections to a server that is gone.
    connectionTimeoutMillis: (options.connectTimeoutSeconds ?? POSTGRES_DEFAULTS.connectTimeoutSeconds) * 1000,
    keepAlive: true,
    // PostgreSQL cancels a statement that runs longer (57014), and ends a transaction left
    // idle as long, so that an instance that stalled mid-transaction does not hold its locks.
    // Set on each new connection rather than as startup parameters, which PgBouncer refuses
    // ("unsupported startup parameter") unless told to ignore them.
    onConnect: async (client) => {
      const limits: TimedQuery = {
        text: "SELECT set_config('statement_timeout', $1, false), set_config('idle_in_transaction_session_timeout', $1, false)",
        values: [String(statementTimeoutMs)],
        query_timeout: answerTimeoutMs,
      };
      await client.query(limits);
    },
    // A startup parameter, so that every connection has it before its first query.
    ...(schema === null ? {} : { options: `-c search_path=${schema}` }),
  });
  // Without a listener, an idle connection dropped by the server would crash the process;
  // the pool discards that connection and opens another when one is next needed.
  pool.on('error', (error) => {
    process.emitWarning(`an idle PostgreSQL connection failed: ${error.message}`, 'TesseraStoreWarning');
  });
  try {
    await migratePostgres(pool, schema);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return postgresStore(pool, answerTimeoutMs);
}

interface Statement {
  readonly name: string;
  readonly text: string;
}

/** `answerTimeoutMs`: how long to wait for a statement's answer before giving up on its connection. */
function postgresStore(pool: pg.Pool, answerTimeoutMs: number): Store {
  const s = statements();
  // A server or network that went silent answers nothing, not even the statement timeout's
  // cancellation: query_timeout bounds the wait, and pg then closes that connection.
  const query = (statement: Statement, values: readonly unknown[]): Promise<pg.QueryResult<Row>> => {
    const config: TimedQuery = { ...statement, values: [...values], query_timeout: answerTimeoutMs };
    return pool.query<Row>(config).catch((error: unknown) => {
      throw storeError(error);
    });
  };
  const all = async (statement: Statement, values: readonly unknown[]): Promise<Row[]> =>
    (await query(statement, values)).rows;
  const one = async (statement: Statement, values: readonly unknown[]): Promise<Row | undefined> =>
    (await all(statement, values))[0];
  const changed = async (statement: Statement, values: readonly unknown[]): Promise<number> =>
    (await query(statement, values)).rowCount ?? 0;

  return {
    clients: {
      async create(client) {
        const inserted = await changed(s.insertClient, [
          client.id,
          client.name,
          client.secretHash,
          list(client.redirectUris),
          list(client.scopes),
          list(client.grantTypes),
          list(client.webOrigins),
          client.createdAt,
        ]);
        if (inserted === 0) throw new DuplicateError(`client ${client.id}`);
      },
      async get(id) {
        const row = await one(s.getClient, [id]);
        return row ? clientFromRow(row, read) : null;
      },
      async list() {
        return (await all(s.listClients, [])).map((row) => clientFromRow(row, read));
      },
      async remove(id) {
        return (await changed(s.removeClient, [id])) > 0;
      },
    },

    users: {
      async create(user) {
        const inserted = await changed(s.insertUser, [
          user.id,
          user.username,
          user.passwordHash,
          user.name,
          user.email,
          user.emailVerified,
          user.disabled,
          user.createdAt,
        ]);
        if (inserted === 0) throw new DuplicateError(`user ${JSON.stringify(user.username)}`);
      },
      async get(id) {
        const row = await one(s.getUser, [id]);
        return row ? userFromRow(row, read) : null;
      },
      async findByUsername(username) {
        const row = await one(s.getUserByUsername, [username]);
        return row ? userFromRow(row, read) : null;
      },
      async list() {
        return (await all(s.listUsers, [])).map((row) => userFromRow(row, read));
      },
      async setDisabled(id, disabled) {
        return (await changed(s.setUserDisabled, [id, disabled])) > 0;
      },
    },

    sessions: {
      async create(session) {
        await changed(s.insertSession, [
          session.idHash,
          session.userId,
          session.authTime,
          session.createdAt,
          session.expiresAt,
        ]);
      },
      async get(idHash, now) {
        const row = await one(s.getSession, [idHash, now]);
        return row ? sessionFromRow(row) : null;
      },
      async remove(idHash) {
        await changed(s.removeSession, [idHash]);
      },
    },

    grants: {
      async create(grant) {
        await changed(s.insertGrant, [
          grant.id,
          grant.userId,
          grant.clientId,
          list(grant.scope),
          grant.kind,
          grant.authTime,
          grant.createdAt,
          grant.revokedAt,
          grant.device?.ip ?? null,
          grant.device?.userAgent ?? null,
          grant.device?.requestedAt ?? null,
        ]);
      },
      async get(id) {
        const row = await one(s.getGrant, [id]);
        return row ? grantFromRow(row, read) : null;
      },
      async revoke(id, now) {
        return (await changed(s.revokeGrant, [id, now])) > 0;
      },
      async listForUser(userId) {
        return (await all(s.listGrantsForUser, [userId])).map((row) => grantFromRow(row, read));
      },
      async recordUse(id, now, activeUntil) {
        return (await changed(s.recordGrantUse, [id, now, activeUntil])) > 0;
      },
    },

    refreshTokens: {
      async create(token) {
        await changed(s.insertRefreshToken, [
          token.hash,
          token.grantId,
          token.clientId,
          token.userId,
          list(token.scope),
          token.authTime,
          token.createdAt,
          token.expiresAt,
          token.rotatedAt,
        ]);
      },
      async rotate(hash, clientId, now) {
        const row = await one(s.rotateRefreshToken, [hash, clientId, now]);
        return row ? refreshTokenFromRow(row, read) : null;
      },
      async find(hash) {
        const row = await one(s.getRefreshToken, [hash]);
        return row ? refreshTokenFromRow(row, read) : null;
      },
    },

    accessTokens: {
      async revoke(jti, expiresAt) {
        await changed(s.revokeAccessToken, [jti, expiresAt]);
      },
      async isRevoked(jti) {
        return (await one(s.getRevokedAccessToken, [jti])) !== undefined;
      },
    },

    codes: {
      async create(code) {
        await changed(s.insertCode, [
          code.hash,
          code.clientId,
          code.userId,
          code.grantId,
          code.redirectUri,
          list(code.scope),
          code.nonce,
          code.codeChallenge,
          code.authTime,
          code.createdAt,
          code.expiresAt,
          code.consumedAt,
        ]);
      },
      async consume(hash, binding, now) {
        const row = await one(s.consumeCode, [hash, binding.clientId, binding.redirectUri, binding.codeChallenge, now]);
        return row ? codeFromRow(row, read) : null;
      },
      async find(hash) {
        const row = await one(s.getCode, [hash]);
        return row ? codeFromRow(row, read) : null;
      },
    },

    devices: {
      async create(record) {
        const stored = await changed(s.insertDevice, [
          record.deviceCodeHash,
          record.userCode,
          record.clientId,
          list(record.scope),
          record.status,
          record.interval,
          record.lastPolledAt,
          record.createdAt,
          record.expiresAt,
          record.requestIp,
          record.requestUserAgent,
          record.userId,
          record.authTime,
          record.grantId,
          record.decidedAt,
        ]);
        return stored > 0;
      },
      async findByUserCode(userCode, now) {
        const row = await one(s.getDeviceByUserCode, [userCode, now]);
        return row ? deviceFromRow(row, read) : null;
      },
      async decide(userCode, decision, now) {
        const row = await one(s.decideDevice, [
          userCode,
          decision.approve ? 'approved' : 'denied',
          decision.approve ? decision.userId : null,
          decision.approve ? decision.authTime : null,
          decision.approve ? decision.grantId : null,
          now,
        ]);
        return row ? deviceFromRow(row, read) : null;
      },
      async poll(deviceCodeHash, clientId, now) {
        const row = await one(s.pollDevice, [deviceCodeHash, clientId, now]);
        return row ? { outcome: pollOutcomeFromRow(row), record: deviceFromRow(row, read) } : null;
      },
    },

    rateLimits: {
      async hit(key, windowMs, now) {
        const row = await one(s.hitRateLimit, [key, now, now + windowMs]);
        if (!row) throw new Error('rate limit upsert returned no row');
        return integer(row, 'hits');
      },
      // The stored window carries its own end, so the window length is not needed to read it.
      async count(key, _windowMs, now) {
        const row = await one(s.countRateLimit, [key, now]);
        return row ? integer(row, 'hits') : 0;
      },
      async release(key, now) {
        await changed(s.releaseRateLimit, [key, now]);
      },
    },

    keys: {
      async add(key) {
        await changed(s.insertKey, [
          key.kid,
          key.alg,
          JSON.stringify(key.privateJwk),
          JSON.stringify(key.publicJwk),
          key.createdAt,
          key.activatesAt,
          key.retiresAt,
          key.expiresAt,
        ]);
      },
      async listPublished(now) {
        return (await all(s.listPublishedKeys, [now])).map((row) => signingKeyFromRow(row, read));
      },
      async schedule(kid, retiresAt, expiresAt) {
        await changed(s.scheduleKey, [kid, retiresAt, expiresAt]);
      },
    },

    async purgeExpired(before) {
      let deleted = 0;
      for (const statement of s.purge) {
        // Each batch is its own short transaction, so pollers wait at most one batch.
        for (;;) {
          const count = await changed(statement, [before, PURGE_BATCH_SIZE]);
          deleted += count;
          if (count < PURGE_BATCH_SIZE) break;
        }
      }
      return deleted;
    },

    async close() {
      if (!pool.ended) await pool.end();
    },
  };
}

function statements() {
  const statement = (name: string, text: string): Statement => ({ name: `tessera_${name}`, text });
  // SKIP LOCKED: rows a poll or a concurrent purge (another instance's) holds are left for
  // the next batch rather than waited for. The batch is found through the expiry index and
  // deleted through the primary key: `= ANY(ARRAY(…))` makes the batch one value computed
  // first, where `IN (…)` let the planner hash-join it against a scan of the whole table,
  // so that each batch cost the table's size rather than the batch's.
  const purge = (table: string, key: string, expiry: string): Statement =>
    statement(
      `purge_${table}`,
      `DELETE FROM ${table} WHERE ${key} = ANY(ARRAY(
        SELECT ${key} FROM ${table} WHERE ${expiry} < $1 LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    );

  return {
    insertClient: statement('insert_client', `
      INSERT INTO clients (id, name, secret_hash, redirect_uris, scopes, grant_types, web_origins, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT DO NOTHING`),
    getClient: statement('get_client', 'SELECT * FROM clients WHERE id = $1'),
    listClients: statement('list_clients', 'SELECT * FROM clients ORDER BY created_at, id'),
    // Codes, device records and grants go with it: ON DELETE CASCADE.
    removeClient: statement('remove_client', 'DELETE FROM clients WHERE id = $1'),

    insertUser: statement('insert_user', `
      INSERT INTO users (id, username, password_hash, name, email, email_verified, disabled, created_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT DO NOTHING`),
    getUser: statement('get_user', 'SELECT * FROM users WHERE id = $1'),
    getUserByUsername: statement('get_user_by_username', 'SELECT * FROM users WHERE username = $1'),
    listUsers: statement('list_users', 'SELECT * FROM users ORDER BY created_at, id'),
    setUserDisabled: statement('set_user_disabled', 'UPDATE users SET disabled = $2 WHERE id = $1'),

    insertSession: statement('insert_session', `
      INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at)
      VALUES ($1, $2, $3, $4, $5)`),
    getSession: statement('get_session', 'SELECT * FROM sessions WHERE id_hash = $1 AND expires_at > $2'),
    removeSession: statement('remove_session', 'DELETE FROM sessions WHERE id_hash = $1'),

    insertGrant: statement('insert_grant', `
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at,
                          device_ip, device_user_agent, device_requested_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`),
    getGrant: statement('get_grant', 'SELECT * FROM grants WHERE id = $1'),
    revokeGrant: statement('revoke_grant', 'UPDATE grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL'),
    listGrantsForUser: statement('list_grants_for_user', `
      SELECT * FROM grants WHERE user_id = $1 AND revoked_at IS NULL
      ORDER BY created_at DESC, id DESC`),
    // Both times only move forward, whatever order concurrent issuances commit in.
    recordGrantUse: statement('record_grant_use', `
      UPDATE grants SET last_used_at = GREATEST(last_used_at, $2), active_until = GREATEST(active_until, $3)
      WHERE id = $1 AND revoked_at IS NULL`),

    insertRefreshToken: statement('insert_refresh_token', `
      INSERT INTO refresh_tokens (hash, grant_id, client_id, user_id, scope, auth_time, created_at, expires_at, rotated_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`),
    // RFC 9700 §4.14.2: refresh token rotation; RFC 6749 §6: the token must have been issued
    // to the authenticated client. A revoked grant's tokens are refused in the same statement.
    rotateRefreshToken: statement('rotate_refresh_token', `
      UPDATE refresh_tokens SET rotated_at = $3
      WHERE hash = $1 AND client_id = $2 AND rotated_at IS NULL AND expires_at > $3
        AND EXISTS (SELECT 1 FROM grants WHERE grants.id = refresh_tokens.grant_id AND grants.revoked_at IS NULL)
      RETURNING *`),
    getRefreshToken: statement('get_refresh_token', 'SELECT * FROM refresh_tokens WHERE hash = $1'),

    revokeAccessToken: statement('revoke_access_token', `
      INSERT INTO revoked_access_tokens (jti, expires_at) VALUES ($1, $2)
      ON CONFLICT DO NOTHING`),
    getRevokedAccessToken: statement('get_revoked_access_token', 'SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = $1'),

    insertCode: statement('insert_code', `
      INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, nonce,
                                       code_challenge, auth_time, created_at, expires_at, consumed_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`),
    // RFC 6749 §4.1.2: "The client MUST NOT use the authorization code more than once."
    // RFC 6749 §4.1.3 and RFC 7636 §4.6: the code is bound to its client, redirect_uri and
    // challenge; a mismatch leaves it untouched.
    consumeCode: statement('consume_code', `
      UPDATE authorization_codes SET consumed_at = $5
      WHERE hash = $1 AND consumed_at IS NULL AND expires_at > $5
        AND client_id = $2 AND redirect_uri = $3 AND code_challenge = $4
      RETURNING *`),
    getCode: statement('get_code', 'SELECT * FROM authorization_codes WHERE hash = $1'),

    // A user code is unique among live records only: an expired record holding the same
    // code is replaced in the same statement, a live one makes the insert do nothing.
    insertDevice: statement('insert_device', `
      INSERT INTO device_authorizations (device_code_hash, user_code, client_id, scope, status, poll_interval,
                                         last_polled_at, last_outcome, created_at, expires_at, request_ip,
                                         request_user_agent, user_id, auth_time, grant_id, decided_at)
      VALUES ($1, $2, $3, $4, $5, $6,
              $7, NULL, $8, $9, $10,
              $11, $12, $13, $14, $15)
      ON CONFLICT (user_code) DO UPDATE SET
        device_code_hash = excluded.device_code_hash, client_id = excluded.client_id, scope = excluded.scope,
        status = excluded.status, poll_interval = excluded.poll_interval, last_polled_at = excluded.last_polled_at,
        last_outcome = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at,
        request_ip = excluded.request_ip, request_user_agent = excluded.request_user_agent,
        user_id = excluded.user_id, auth_time = excluded.auth_time, grant_id = excluded.grant_id,
        decided_at = excluded.decided_at
      WHERE device_authorizations.expires_at <= excluded.created_at`),
    getDeviceByUserCode: statement('get_device_by_user_code',
      'SELECT * FROM device_authorizations WHERE user_code = $1 AND expires_at > $2'),
    decideDevice: statement('decide_device', `
      UPDATE device_authorizations
      SET status = $2, user_id = $3, auth_time = $4, grant_id = $5, decided_at = $6
      WHERE user_code = $1 AND status = 'pending' AND expires_at > $6
      RETURNING *`),
    pollDevice: statement('poll_device', `
      UPDATE device_authorizations SET ${devicePollAssignments('$3::bigint')}
      WHERE device_code_hash = $1 AND client_id = $2
      RETURNING *`),

    // A fixed window that starts at the first hit after the previous window ended.
    hitRateLimit: statement('hit_rate_limit', `
      INSERT INTO rate_limits (key, hits, window_ends_at) VALUES ($1, 1, $3)
      ON CONFLICT (key) DO UPDATE SET
        hits = CASE WHEN rate_limits.window_ends_at <= $2 THEN 1 ELSE rate_limits.hits + 1 END,
        window_ends_at = CASE WHEN rate_limits.window_ends_at <= $2 THEN excluded.window_ends_at
                              ELSE rate_limits.window_ends_at END
      RETURNING hits`),
    countRateLimit: statement('count_rate_limit', 'SELECT hits FROM rate_limits WHERE key = $1 AND window_ends_at > $2'),
    releaseRateLimit: statement('release_rate_limit', 'UPDATE rate_limits SET hits = hits - 1 WHERE key = $1 AND window_ends_at > $2 AND hits > 0'),

    insertKey: statement('insert_key', `
      INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, activates_at, retires_at, expires_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`),
    listPublishedKeys: statement('list_published_keys', `
      SELECT * FROM signing_keys WHERE expires_at IS NULL OR expires_at > $1
      ORDER BY created_at, kid`),
    scheduleKey: statement('schedule_key', 'UPDATE signing_keys SET retires_at = $2, expires_at = $3 WHERE kid = $1'),

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

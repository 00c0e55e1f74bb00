/**
 * The shared store: PostgreSQL through a `pg.Pool`, for several stateless instances behind
 * one database. Each statement of `sql/statements.ts` is a named prepared statement, so
 * that every pooled connection prepares it once and reuses it. Under READ COMMITTED, a
 * conditional UPDATE that waited for another transaction's row lock re-checks its WHERE
 * against the row that transaction committed (and its SET sees that row), so exactly one
 * caller wins.
 */

import pg from 'pg';
import type { AuditEvent } from '../../core/events.ts';
import { POSTGRES_DEFAULTS, type PostgresSettings } from '../../config/index.ts';
import { CorruptRowError, jsonObject, stringList, text, type Row } from '../rows.ts';
import type { Dialect, Params, Runner, SqlValue } from '../sql/dialect.ts';
import { DEVICE_USER_CODE_CONFLICT, deviceFromRow, devicePollAssignments, pollOutcomeFromRow } from '../sql/devices.ts';
import { codeFromRow, LIVE_SESSION } from '../sql/codes.ts';
import { eventParams } from '../sql/events.ts';
import { refreshTokenFromRow, refreshTokenParams } from '../sql/tokens.ts';
import { grantFromRow } from '../sql/grants.ts';
import { resourceFromRow } from '../sql/resources.ts';
import { userFromRow } from '../sql/users.ts';
import { statements, type StatementName } from '../sql/statements.ts';
import { purgeExpired, sqlStores } from '../sql/store.ts';
import {
  DuplicateError,
  MissingReferenceError,
  type DeviceAuthorizationRecord,
  type RedemptionWrites,
  type RotationWrites,
  type ResourceRecord,
  type ResourceScope,
  type Store,
} from '../types.ts';
import { CLIENT_CHANGES_CHANNEL, ClientCache, listenForClientChanges } from './client-cache.ts';
import { migratePostgres } from './migrate.ts';
import { TurnBatch } from './turn-batch.ts';
import { storeError } from './unavailable.ts';

/** The pool size and time limits (`POSTGRES_DEFAULTS` for those not given), and the schema. */
export interface PostgresStoreOptions extends Partial<PostgresSettings> {
  /**
   * The schema to keep Tessera's tables in, created if missing and put first on every
   * pooled connection's search_path. Lower-case letters, digits and `_`.
   */
  readonly schema?: string;
}

/**
 * Lists are `text[]`, JWKs `jsonb` (bound as JSON text), booleans `boolean`. The purge's
 * batch is found through the expiry index and deleted through the primary key:
 * `= ANY(ARRAY(…))` makes the batch one value computed first, where `IN (…)` let the
 * planner hash-join it against a scan of the whole table, so that each batch cost the
 * table's size rather than the batch's. SKIP LOCKED: rows a poll or a concurrent purge
 * (another instance's) holds are left for the next batch rather than waited for.
 */
export const postgresDialect: Dialect = {
  read: {
    strings: (row, column) => stringList(column, row[column]),
    object: (row, column) => jsonObject(column, row[column]),
    boolean: (row, column) => {
      const value = row[column];
      if (typeof value !== 'boolean') throw new CorruptRowError(column, 'a boolean', value);
      return value;
    },
  },
  list: (values) => [...values],
  flag: (value) => value,
  listUnion: (a, b) => `ARRAY(SELECT DISTINCT value FROM unnest(${a} || ${b}) AS value ORDER BY 1)`,
  listWithout: (column, names) =>
    `ARRAY(SELECT value FROM unnest(${column}) WITH ORDINALITY AS item (value, position) WHERE value NOT IN ${names} ORDER BY position)`,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  bigint: (parameter) => `${parameter}::bigint`,
  keepsRows: 'FOR KEY SHARE',
  jsonText: (column, key) => `(CASE WHEN jsonb_typeof(${column}->'${key}') = 'string' THEN ${column}->>'${key}' END)`,
  jsonMembers: (column, key, member) =>
    `(SELECT e->>'${member}' AS v FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${column}->'${key}') = 'array' THEN ${column}->'${key}' ELSE '[]'::jsonb END) e)`,
  byCodePoint: (expression) => `(${expression}) COLLATE "C"`,
  inList: (expression, parameter) => `${expression} = ANY (${parameter}::text[])`,
  listHas: (column, expression) => `${expression} = ANY (${column})`,
  outboxHorizon: 'pg_snapshot_xmin(pg_current_snapshot())::text::bigint',
  outboxSnapshot: 'pg_current_snapshot()::text',
  outboxSeen: (seq, snapshot) => `pg_visible_in_snapshot(${seq}::text::xid8, CAST(${snapshot} AS pg_snapshot))`,
  outboxRunning: (snapshot) => `SELECT x::text::bigint FROM pg_snapshot_xip(CAST(${snapshot} AS pg_snapshot)) AS x`,
  likeExact: (expression, pattern) => `(${expression} LIKE ${pattern} ESCAPE '\\')`,
  purge: (table, key, condition) => `DELETE FROM ${table} WHERE ${key} = ANY(ARRAY(
    SELECT ${key} FROM ${table} WHERE ${condition} LIMIT :limit FOR UPDATE SKIP LOCKED))`,
};

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
  const connection: pg.ClientConfig = {
    connectionString: url,
    types,
    // When the database is unreachable (a failover, a partition) or every pooled connection
    // is busy, a request fails after this long instead of waiting for a connection forever,
    // and TCP keepalive finds pooled connections to a server that is gone.
    connectionTimeoutMillis: (options.connectTimeoutSeconds ?? POSTGRES_DEFAULTS.connectTimeoutSeconds) * 1000,
    keepAlive: true,
    // A startup parameter, so that every connection has it before its first query.
    ...(schema === null ? {} : { options: `-c search_path=${schema}` }),
  };
  const pool = new pg.Pool({
    ...connection,
    max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize,
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
  const clients = new ClientCache();
  const listener = listenForClientChanges(
    connection,
    schema,
    clients,
    (payload) => pool.query({ text: `SELECT pg_notify('${CLIENT_CHANGES_CHANNEL}', $1)`, values: [payload], query_timeout: answerTimeoutMs } as TimedQuery),
    (message) => process.emitWarning(message, 'TesseraStoreWarning'),
  );
  await listener.ready;
  return postgresStore(pool, answerTimeoutMs, clients, listener.close);
}

/**
 * The polls of one batch (`TurnBatch`) in one statement: the poll's own conditional SET
 * (sql/devices.ts `pollDevice`), applied to each row named by the arrays, each with its
 * own time. Every expression in the SET reads the row as it was before this statement.
 */
const POLL_DEVICES = `
  UPDATE device_authorizations SET ${devicePollAssignments('polls.now')}
  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS polls (device_code_hash, client_id, now, dpop_jkt)
  WHERE device_authorizations.device_code_hash = polls.device_code_hash
    AND device_authorizations.client_id = polls.client_id
    AND (device_authorizations.dpop_jkt IS NULL OR device_authorizations.dpop_jkt = polls.dpop_jkt)
  RETURNING device_authorizations.*`;

interface PollCall extends Readonly<Record<string, string | number | null>> {
  readonly deviceCodeHash: string;
  readonly clientId: string;
  readonly now: number;
  readonly dpopJkt: string | null;
}

/**
 * A device authorization's fields as the batch insert binds them: one array a column, of
 * the column's type (`last_outcome` is left out: a new record has none). A scope is bound
 * as its tokens joined by spaces, which no token holds (RFC 6749 §3.3), since `unnest`
 * would flatten an array of arrays.
 */
const INSERT_DEVICES_COLUMNS: readonly (readonly [field: keyof DeviceAuthorizationRecord, column: string, type: string])[] = [
  ['deviceCodeHash', 'device_code_hash', 'text'],
  ['userCode', 'user_code', 'text'],
  ['clientId', 'client_id', 'text'],
  ['scope', 'scope', 'text'],
  ['status', 'status', 'text'],
  ['interval', 'poll_interval', 'integer'],
  ['lastPolledAt', 'last_polled_at', 'bigint'],
  ['createdAt', 'created_at', 'bigint'],
  ['expiresAt', 'expires_at', 'bigint'],
  ['requestIp', 'request_ip', 'text'],
  ['requestUserAgent', 'request_user_agent', 'text'],
  ['userId', 'user_id', 'text'],
  ['authTime', 'auth_time', 'bigint'],
  ['grantId', 'grant_id', 'text'],
  ['decidedAt', 'decided_at', 'bigint'],
  ['dpopJkt', 'dpop_jkt', 'text'],
];

/** The events stored with them, by the device code hash of their record; `detail` as JSON text. */
const INSERT_DEVICE_EVENTS_COLUMNS: readonly (readonly [field: keyof AuditEvent, column: string, type: string])[] = [
  ['id', 'id', 'text'],
  ['type', 'type', 'text'],
  ['at', 'at', 'bigint'],
  ['userId', 'user_id', 'text'],
  ['username', 'username', 'text'],
  ['clientId', 'client_id', 'text'],
  ['grantId', 'grant_id', 'text'],
  ['ip', 'ip', 'text'],
  ['userAgent', 'user_agent', 'text'],
  ['detail', 'detail', 'text'],
];

const columnNames = (columns: readonly (readonly [unknown, string, string])[]) => columns.map(([, column]) => column).join(', ');

/**
 * The device authorizations of one batch in one statement, with the single insert's
 * conflict rule, and the events of those that were stored (RETURNING decides which).
 */
const INSERT_DEVICES = `
  WITH inserted AS (
    INSERT INTO device_authorizations (${columnNames(INSERT_DEVICES_COLUMNS)})
    SELECT ${INSERT_DEVICES_COLUMNS.map(([, column]) => (column === 'scope' ? "string_to_array(scope, ' ')" : column)).join(', ')}
    FROM unnest(${INSERT_DEVICES_COLUMNS.map(([, , type], index) => `$${index + 1}::${type}[]`).join(', ')})
      AS d (${columnNames(INSERT_DEVICES_COLUMNS)})
    ${DEVICE_USER_CODE_CONFLICT}
    RETURNING user_code, device_code_hash
  ), recorded AS (
    INSERT INTO events (${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
    SELECT ${INSERT_DEVICE_EVENTS_COLUMNS.map(([, column]) => (column === 'detail' ? 'detail::jsonb' : column)).join(', ')}
    FROM unnest(${['text', ...INSERT_DEVICE_EVENTS_COLUMNS.map(([, , type]) => type)].map((type, index) => `$${INSERT_DEVICES_COLUMNS.length + index + 1}::${type}[]`).join(', ')})
      AS e (device_code_hash, ${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
    JOIN inserted USING (device_code_hash)
  )
  SELECT user_code FROM inserted`;

interface DeviceInsert {
  readonly record: DeviceAuthorizationRecord;
  readonly event: AuditEvent | undefined;
}

/**
 * The DPoP proofs (RFC 9449 §11.1) of one batch in one statement: each key recorded, or an
 * expired record of it taken over, as `useDpopProof` does alone. The batch's earliest time
 * ($3) decides what has expired: the calls of a turn arrive within milliseconds, and a
 * record at most that much past its expiry is then refused once more, never wrongly taken.
 */
const USE_DPOP_PROOFS = `
  INSERT INTO dpop_proofs (key, expires_at)
  SELECT key, expires_at FROM unnest($1::text[], $2::bigint[]) AS p (key, expires_at)
  ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
  WHERE dpop_proofs.expires_at <= $3::bigint
  RETURNING key`;

/**
 * The events of one batch in one statement: every request that records one, a code
 * exchange's `code.redeemed` above all, shares the turn's round trip. Each row keeps its own
 * fields; ids are UUIDv7, so no two calls collide.
 */
const INSERT_EVENTS = `
  INSERT INTO events (${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
  SELECT ${INSERT_DEVICE_EVENTS_COLUMNS.map(([, column]) => (column === 'detail' ? 'detail::jsonb' : column)).join(', ')}
  FROM unnest(${INSERT_DEVICE_EVENTS_COLUMNS.map(([, , type], index) => `$${index + 1}::${type}[]`).join(', ')})
    AS e (${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
  RETURNING id`;

/**
 * The grant uses of one batch in one statement (sql/grants.ts `recordGrantUse` for each
 * row): both times only move forward, and a revoked grant records nothing.
 */
const RECORD_GRANT_USES = `
  UPDATE grants SET last_used_at = GREATEST(COALESCE(grants.last_used_at, 0), uses.now),
                    active_until = GREATEST(COALESCE(grants.active_until, 0), uses.active_until)
  FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS uses (id, now, active_until)
  WHERE grants.id = uses.id AND grants.revoked_at IS NULL
  RETURNING grants.id`;

/**
 * The code redemptions of one batch in one statement: sql/codes.ts `consumeCode`'s conditions
 * for each row, each with its own time and binding. Under READ COMMITTED a row another
 * transaction redeemed first is re-checked against its committed state (consumed_at is then
 * set), so exactly one caller gets each code, as with the single statement.
 */
const CONSUME_CODES = `
  UPDATE authorization_codes SET consumed_at = redemptions.now
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])
    AS redemptions (hash, client_id, redirect_uri, code_challenge, dpop_jkt, now)
  WHERE authorization_codes.hash = redemptions.hash AND authorization_codes.consumed_at IS NULL
    AND authorization_codes.expires_at > redemptions.now
    AND authorization_codes.client_id = redemptions.client_id AND authorization_codes.redirect_uri = redemptions.redirect_uri
    AND authorization_codes.code_challenge = redemptions.code_challenge
    AND (authorization_codes.dpop_jkt IS NULL OR authorization_codes.dpop_jkt = redemptions.dpop_jkt)
    AND EXISTS (SELECT 1 FROM grants WHERE grants.id = authorization_codes.grant_id AND grants.revoked_at IS NULL)
    AND ${LIVE_SESSION(postgresDialect, 'authorization_codes', 'redemptions.now')}
  RETURNING authorization_codes.*`;

interface Redemption extends Readonly<Record<string, string | number | null>> {
  readonly hash: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly dpopJkt: string | null;
  readonly now: number;
}

interface GrantUse {
  readonly id: string;
  readonly now: number;
  readonly activeUntil: number;
}

/**
 * The codes of one batch with their grants and users (`findForExchange`), each row as JSON:
 * the same columns, numbers and lists the tables' own rows give. A grant or user that is
 * gone is null. `row_to_json` writes each row out as text as it goes, where `to_jsonb` built
 * a binary value first, sorted its keys and then wrote it out (7% of PostgreSQL's CPU in
 * a profile of exchanges), for the same object in the end.
 */
const FIND_FOR_EXCHANGE = `
  SELECT c.hash, row_to_json(c) AS code, row_to_json(g) AS grant_row, row_to_json(u) AS user_row
  FROM authorization_codes c LEFT JOIN grants g ON g.id = c.grant_id LEFT JOIN users u ON u.id = c.user_id
  WHERE c.hash = ANY($1::text[])`;

/** The refresh tokens of one batch with their grants and users (`findForRefresh`), as `FIND_FOR_EXCHANGE` reads codes. */
const FIND_FOR_REFRESH = `
  SELECT t.hash, row_to_json(t) AS token_row, row_to_json(g) AS grant_row, row_to_json(u) AS user_row
  FROM refresh_tokens t LEFT JOIN grants g ON g.id = t.grant_id LEFT JOIN users u ON u.id = t.user_id
  WHERE t.hash = ANY($1::text[])`;

/** A refresh token's columns as the batched redemption binds them; lists as JSON text, since `unnest` would flatten an array of arrays. */
const REDEEM_REFRESH_COLUMNS: readonly (readonly [field: string, column: string, type: string])[] = [
  ['hash', 'hash', 'text'],
  ['grantId', 'grant_id', 'text'],
  ['clientId', 'client_id', 'text'],
  ['userId', 'user_id', 'text'],
  ['scope', 'scope', 'list'],
  ['authTime', 'auth_time', 'bigint'],
  ['sid', 'sid', 'text'],
  ['createdAt', 'created_at', 'bigint'],
  ['expiresAt', 'expires_at', 'bigint'],
  ['rotatedAt', 'rotated_at', 'bigint'],
  ['dpopJkt', 'dpop_jkt', 'text'],
  ['idTokenClaims', 'id_token_claims', 'list'],
  ['amr', 'amr', 'list'],
  ['acr', 'acr', 'text'],
  ['claimsLocales', 'claims_locales', 'list'],
  ['userinfoClaims', 'userinfo_claims', 'list'],
  ['claimsScope', 'claims_scope', 'list'],
];

/** Numbers the parameters of the batched redemption in the order they are bound. */
function parameterList(types: readonly string[], first: number): string {
  return types.map((type, index) => `$${first + index}::${type === 'list' ? 'text' : type}[]`).join(', ');
}

const REDEMPTION_TYPES = ['text', 'text', 'text', 'text', 'text', 'bigint', 'bigint'];
const REFRESH_TYPES = ['text', ...REDEEM_REFRESH_COLUMNS.map(([, , type]) => type)];
const SESSION_CLIENT_TYPES = ['text', 'text', 'bigint'];
const EVENT_TYPES = ['text', ...INSERT_DEVICE_EVENTS_COLUMNS.map(([, , type]) => type)];
const REFRESH_FIRST = 1 + REDEMPTION_TYPES.length;
const SESSION_CLIENT_FIRST = REFRESH_FIRST + REFRESH_TYPES.length;
const EVENT_FIRST = SESSION_CLIENT_FIRST + SESSION_CLIENT_TYPES.length;

/**
 * The code redemptions of one batch and everything that follows each, in one statement
 * (`AuthorizationCodeStore.redeem`): sql/codes.ts `consumeCode`'s conditions for each code,
 * each with its own time and binding; then, for the codes this statement redeemed only,
 * the grants' uses (sql/grants.ts `recordGrantUse`, one row a grant, its latest times),
 * the refresh tokens, the sessions' clients (`addSessionClient`, one row a pair) and the
 * events. One statement is one transaction: all of it is committed or none. Under READ
 * COMMITTED a code another transaction redeemed first is re-checked against its committed
 * state (consumed_at is then set), so exactly one caller gets each code and its writes.
 */
/**
 * The CTEs that follow what the CTE `source` changed (rows of a table with `hash` and
 * `grant_id`), each call's `now` and `active_until` in the CTE `calls`: the grants' uses (sql/grants.ts
 * `recordGrantUse`, one row a grant, its latest times), the next refresh tokens and the events,
 * each array of those two numbered from `refreshFirst` and `eventFirst`, and written only for
 * the rows `source` changed.
 */
function followUpCtes(source: string, calls: string, refreshFirst: number, eventFirst: number): { used: string; refreshed: string; recorded: string } {
  return {
    used: `used AS (
    UPDATE grants SET last_used_at = GREATEST(COALESCE(grants.last_used_at, 0), uses.now),
                      active_until = GREATEST(COALESCE(grants.active_until, 0), uses.active_until)
    FROM (SELECT ${source}.grant_id, max(${calls}.now) AS now, max(${calls}.active_until) AS active_until
          FROM ${source} JOIN ${calls} USING (hash) GROUP BY ${source}.grant_id) AS uses
    WHERE grants.id = uses.grant_id AND grants.revoked_at IS NULL
  )`,
    refreshed: `refreshed AS (
    INSERT INTO refresh_tokens (${columnNames(REDEEM_REFRESH_COLUMNS)})
    SELECT ${REDEEM_REFRESH_COLUMNS.map(([, column, type]) => (type === 'list' ? `CASE WHEN t.${column} IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text(t.${column}::jsonb)) END` : `t.${column}`)).join(', ')}
    FROM unnest(${parameterList(REFRESH_TYPES, refreshFirst)}) AS t (code_hash, ${columnNames(REDEEM_REFRESH_COLUMNS)})
    JOIN ${source} ON ${source}.hash = t.code_hash
  )`,
    recorded: `recorded AS (
    INSERT INTO events (${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
    SELECT ${INSERT_DEVICE_EVENTS_COLUMNS.map(([, column]) => (column === 'detail' ? 'e.detail::jsonb' : `e.${column}`)).join(', ')}
    FROM unnest(${parameterList(EVENT_TYPES, eventFirst)}) AS e (code_hash, ${columnNames(INSERT_DEVICE_EVENTS_COLUMNS)})
    JOIN ${source} ON ${source}.hash = e.code_hash
  )`,
  };
}

const REDEEMED = followUpCtes('consumed', 'redemptions', REFRESH_FIRST, EVENT_FIRST);
const REDEEM_CODES = `
  WITH redemptions AS (
    SELECT * FROM unnest(${parameterList(REDEMPTION_TYPES, 1)})
      AS r (hash, client_id, redirect_uri, code_challenge, dpop_jkt, now, active_until)
  ), consumed AS (
    UPDATE authorization_codes SET consumed_at = redemptions.now
    FROM redemptions
    WHERE authorization_codes.hash = redemptions.hash AND authorization_codes.consumed_at IS NULL
      AND authorization_codes.expires_at > redemptions.now
      AND authorization_codes.client_id = redemptions.client_id AND authorization_codes.redirect_uri = redemptions.redirect_uri
      AND authorization_codes.code_challenge = redemptions.code_challenge
      AND (authorization_codes.dpop_jkt IS NULL OR authorization_codes.dpop_jkt = redemptions.dpop_jkt)
      AND EXISTS (SELECT 1 FROM grants WHERE grants.id = authorization_codes.grant_id AND grants.revoked_at IS NULL)
      AND ${LIVE_SESSION(postgresDialect, 'authorization_codes', 'redemptions.now')}
    RETURNING authorization_codes.*
  ), ${REDEEMED.used}, ${REDEEMED.refreshed}, joined AS (
    INSERT INTO session_clients (sid, client_id, expires_at)
    SELECT DISTINCT ON (s.sid, consumed.client_id) s.sid, consumed.client_id, s.expires_at
    FROM unnest(${parameterList(SESSION_CLIENT_TYPES, SESSION_CLIENT_FIRST)}) AS s (code_hash, sid, expires_at)
    JOIN consumed ON consumed.hash = s.code_hash
    ORDER BY s.sid, consumed.client_id, s.expires_at DESC
    ON CONFLICT (sid, client_id) DO UPDATE SET expires_at = GREATEST(session_clients.expires_at, excluded.expires_at)
  ), ${REDEEMED.recorded}
  SELECT hash FROM consumed`;

const ROTATION_TYPES = ['text', 'text', 'bigint', 'bigint'];
const ROTATION_REFRESH_FIRST = 1 + ROTATION_TYPES.length;
const ROTATED = followUpCtes('rotated', 'rotations', ROTATION_REFRESH_FIRST, ROTATION_REFRESH_FIRST + REFRESH_TYPES.length);

/**
 * The refresh token rotations of one batch and what follows each, in one statement
 * (`RefreshTokenStore.rotateWith`): sql/tokens.ts `rotateRefreshToken`'s conditions for each
 * token, with its own client and time; then, for the tokens this statement rotated only, the
 * grants' uses, the next refresh tokens and the events, as a code's redemption writes them.
 * One statement is one transaction: all of it is committed or none; under READ COMMITTED a
 * token another transaction rotated first is re-checked against its committed state, so
 * exactly one caller rotates each token.
 */
const ROTATE_REFRESH_TOKENS = `
  WITH rotations AS (
    SELECT * FROM unnest(${parameterList(ROTATION_TYPES, 1)}) AS r (hash, client_id, now, active_until)
  ), rotated AS (
    UPDATE refresh_tokens SET rotated_at = rotations.now
    FROM rotations
    WHERE refresh_tokens.hash = rotations.hash AND refresh_tokens.client_id = rotations.client_id
      AND refresh_tokens.rotated_at IS NULL AND refresh_tokens.expires_at > rotations.now
      AND EXISTS (SELECT 1 FROM grants WHERE grants.id = refresh_tokens.grant_id AND grants.revoked_at IS NULL)
    RETURNING refresh_tokens.*
  ), ${ROTATED.used}, ${ROTATED.refreshed}, ${ROTATED.recorded}
  SELECT hash FROM rotated`;

interface RedeemCall {
  readonly hash: string;
  readonly clientId: string;
  readonly redirectUri: string;
  readonly codeChallenge: string;
  readonly dpopJkt: string | null;
  readonly now: number;
  readonly writes: RedemptionWrites;
}

/** The next refresh tokens' and the events' arrays of a batch, each row under the hash of the call it follows. */
function followUpValues(batch: readonly { readonly hash: string; readonly writes: RedemptionWrites }[]): { refreshed: unknown[]; recorded: unknown[] } {
  const refreshed = batch.flatMap((call) =>
    call.writes.refreshToken ? [{ hash: call.hash, params: refreshTokenParams(postgresDialect, call.writes.refreshToken) }] : [],
  );
  const recorded = batch.flatMap((call) => (call.writes.event ? [{ hash: call.hash, params: eventParams(call.writes.event) }] : []));
  const listText = (value: SqlValue | undefined) => (value === null || value === undefined ? null : JSON.stringify(value));
  return {
    refreshed: [
      refreshed.map((row) => row.hash),
      ...REDEEM_REFRESH_COLUMNS.map(([field, , type]) => refreshed.map((row) => (type === 'list' ? listText(row.params[field]) : (row.params[field] ?? null)))),
    ],
    recorded: [recorded.map((row) => row.hash), ...INSERT_DEVICE_EVENTS_COLUMNS.map(([field]) => recorded.map((row) => row.params[field] ?? null))],
  };
}

/** The values of `REDEEM_CODES` for a batch, array by array. */
function redeemValues(batch: readonly RedeemCall[]): unknown[] {
  const joined = batch.flatMap((call) => (call.writes.sessionClient ? [{ hash: call.hash, ...call.writes.sessionClient }] : []));
  const { refreshed, recorded } = followUpValues(batch);
  return [
    batch.map((call) => call.hash),
    batch.map((call) => call.clientId),
    batch.map((call) => call.redirectUri),
    batch.map((call) => call.codeChallenge),
    batch.map((call) => call.dpopJkt),
    batch.map((call) => call.now),
    batch.map((call) => call.writes.activeUntil),
    ...refreshed,
    joined.map((row) => row.hash),
    joined.map((row) => row.sid),
    joined.map((row) => row.expiresAt),
    ...recorded,
  ];
}

interface RotateCall {
  readonly hash: string;
  readonly clientId: string;
  readonly now: number;
  readonly writes: RotationWrites;
}

/** The values of `ROTATE_REFRESH_TOKENS` for a batch, array by array. */
function rotateValues(batch: readonly RotateCall[]): unknown[] {
  const { refreshed, recorded } = followUpValues(batch);
  return [
    batch.map((call) => call.hash),
    batch.map((call) => call.clientId),
    batch.map((call) => call.now),
    batch.map((call) => call.writes.activeUntil),
    ...refreshed,
    ...recorded,
  ];
}

/** The registered APIs with their scopes in order, as `resources.list` reads them with two statements. */
const LIST_RESOURCES_WITH_SCOPES = `
  SELECT resources.*, COALESCE((SELECT json_agg(json_build_object('name', s.name, 'description', s.description) ORDER BY s.position)
                                FROM resource_scopes s WHERE s.resource = resources.identifier), '[]'::json) AS scopes
  FROM resources ORDER BY created_at, identifier`;

/** The scopes `LIST_RESOURCES_WITH_SCOPES` gives a resource row. */
function resourceScopesOf(value: unknown): ResourceScope[] {
  if (!Array.isArray(value)) throw new CorruptRowError('scopes', 'a list of scopes', value);
  return value.map((scope: unknown) => {
    const row = (typeof scope === 'object' && scope !== null ? scope : {}) as Row;
    return { name: text(row, 'name'), description: text(row, 'description') };
  });
}

/** Rows of `table` by their key, for a batch of lookups by key (each the statement `SELECT * … WHERE key = :key`). */
const rowsByKey = (table: string, key: string) => `SELECT * FROM ${table} WHERE ${key} = ANY($1::text[])`;

interface ProofUse {
  readonly key: string;
  readonly expiresAt: number;
  readonly now: number;
}

/**
 * A batch failure that one of its calls may have caused, or that a call alone would escape:
 * a row refused by a constraint (SQLSTATE class 23, or its translation), a deadlock victim
 * (40P01) or a serialization failure (40001). Anything else, an outage or a statement
 * PostgreSQL cannot run, would fail each call alone too.
 */
function failedByOneCall(error: unknown): boolean {
  if (error instanceof DuplicateError || error instanceof MissingReferenceError) return true;
  if (!(error instanceof pg.DatabaseError) || error.code === undefined) return false;
  return error.code.startsWith('23') || error.code === '40P01' || error.code === '40001';
}

/** A refused write as the same error the SQLite store gives (SQLSTATE class 23). */
function constraintError(error: unknown): unknown {
  if (!(error instanceof pg.DatabaseError)) return error;
  if (error.code === '23505') return new DuplicateError(`a ${error.table} row with this key`, { cause: error });
  if (error.code === '23503') return new MissingReferenceError({ cause: error });
  return error;
}

type Prepared = { readonly name: string; readonly text: string; readonly parameters: readonly string[] };

/** A named statement with its parameters numbered (`:hash` to `$1`), and their names in that order. */
function prepare(name: string, sql: string): Prepared {
  const parameters: string[] = [];
  // `(?<![:\w])` leaves casts (`::bigint`) and words with a colon inside string literals alone.
  const text = sql.replace(/(?<![:\w]):([A-Za-z_]\w*)/g, (_, parameter: string) => {
    const index = parameters.includes(parameter) ? parameters.indexOf(parameter) : parameters.push(parameter) - 1;
    return `$${index + 1}`;
  });
  return { name: `tessera_${name}`, text, parameters };
}

/**
 * `answerTimeoutMs`: how long to wait for a statement's answer before giving up on its
 * connection. `clientCache`: client records kept between requests, so that a device poll or
 * a device authorization is one round trip (the client's record from memory, the device
 * statement to the database); reads inside a transaction always go to the database.
 */
function postgresStore(pool: pg.Pool, answerTimeoutMs: number, clientCache: ClientCache, stopListening: () => Promise<void>): Store {
  const prepared = Object.fromEntries(Object.entries(statements(postgresDialect)).map(([name, sql]) => [name, prepare(name, sql)])) as Record<
    StatementName,
    Prepared
  >;
  const send = async (connection: pg.Pool | pg.PoolClient, statement: pg.QueryConfig) => {
    // A server or network that went silent answers nothing, not even the statement timeout's
    // cancellation: query_timeout bounds the wait, and pg then closes that connection.
    const config: TimedQuery = { ...statement, query_timeout: answerTimeoutMs };
    try {
      return await connection.query<Row>(config);
    } catch (error) {
      throw constraintError(storeError(error));
    }
  };
  const runner = (connection: pg.Pool | pg.PoolClient): Runner<StatementName> => {
    const query = (name: StatementName, params: Params = {}) => {
      const { parameters, ...statement } = prepared[name];
      return send(connection, { ...statement, values: parameters.map((parameter) => params[parameter]) });
    };
    return {
      // Unnamed: a composed text is parsed each time rather than kept on every connection.
      select: async (sql, params) => {
        const { parameters, text } = prepare('composed', sql);
        return (await send(connection, { text, values: parameters.map((parameter) => params[parameter]) })).rows;
      },
      one: async (name, params) => (await query(name, params)).rows[0],
      all: async (name, params) => (await query(name, params)).rows,
      changed: async (name, params) => (await query(name, params)).rowCount ?? 0,
    };
  };
  const runPool = runner(pool);
  const stores = sqlStores(postgresDialect, runPool);
  const polls = new TurnBatch<PollCall, Row | undefined>({
    key: (poll) => poll.deviceCodeHash,
    one: (poll) => runPool.one('pollDevice', poll),
    async many(batch) {
      const values = [
        batch.map((poll) => poll.deviceCodeHash),
        batch.map((poll) => poll.clientId),
        batch.map((poll) => poll.now),
        batch.map((poll) => poll.dpopJkt),
      ];
      const { rows } = await send(pool, { name: 'tessera_pollDevices', text: POLL_DEVICES, values });
      return new Map(rows.map((row) => [row['device_code_hash'] as string, row]));
    },
    absent: undefined,
    retryAlone: failedByOneCall,
  });
  // A batch of one is the same statement: the record and its event in one round trip.
  const insertDevices = async (batch: readonly DeviceInsert[]): Promise<ReadonlyMap<string, boolean>> => {
    const events = batch.flatMap(({ record, event }) => (event ? [{ deviceCodeHash: record.deviceCodeHash, params: eventParams(event) }] : []));
    const values = [
      ...INSERT_DEVICES_COLUMNS.map(([field]) => batch.map(({ record }) => (field === 'scope' ? record.scope.join(' ') : record[field]))),
      events.map((event) => event.deviceCodeHash),
      ...INSERT_DEVICE_EVENTS_COLUMNS.map(([field]) => events.map((event) => event.params[field])),
    ];
    const { rows } = await send(pool, { name: 'tessera_insertDevices', text: INSERT_DEVICES, values });
    return new Map(rows.map((row) => [row['user_code'] as string, true]));
  };
  const deviceInserts = new TurnBatch<DeviceInsert, boolean>({
    key: (insert) => insert.record.userCode,
    one: async (insert) => (await insertDevices([insert])).get(insert.record.userCode) ?? false,
    many: insertDevices,
    absent: false,
    retryAlone: failedByOneCall,
  });

  // Every token request with a DPoP proof records it: batched like the device polls it
  // comes with, so that a proof costs no round trip of its own.
  const proofUses = new TurnBatch<ProofUse, boolean>({
    key: (use) => use.key,
    one: (use) => stores.dpopProofs.use(use.key, use.expiresAt, use.now),
    async many(batch) {
      const values = [batch.map((use) => use.key), batch.map((use) => use.expiresAt), Math.min(...batch.map((use) => use.now))];
      const { rows } = await send(pool, { name: 'tessera_useDpopProofs', text: USE_DPOP_PROOFS, values });
      return new Map(rows.map((row) => [row['key'] as string, true]));
    },
    absent: false,
    retryAlone: failedByOneCall,
  });

  // What a code exchange asks of the store besides redeeming its code (the code
  // looked up, the user, the grant, the grant's use, the event) is batched per turn as well,
  // so that the exchanges of one turn share each of those round trips.
  const byKey = (name: StatementName, table: string, key: string, param: string) =>
    new TurnBatch<string, Row | undefined>({
      key: (value) => value,
      one: (value) => runPool.one(name, { [param]: value }),
      async many(batch) {
        const { rows } = await send(pool, { name: `tessera_${name}_batch`, text: rowsByKey(table, key), values: [batch] });
        return new Map(rows.map((row) => [row[key] as string, row]));
      },
      absent: undefined,
      retryAlone: () => false,
    });
  const users = byKey('getUser', 'users', 'id', 'id');
  const grants = byKey('getGrant', 'grants', 'id', 'id');
  const codes = byKey('getCode', 'authorization_codes', 'hash', 'hash');
  const events = new TurnBatch<AuditEvent, boolean>({
    key: (event) => event.id,
    one: async (event) => {
      await stores.events.add(event);
      return true;
    },
    async many(batch) {
      const values = INSERT_DEVICE_EVENTS_COLUMNS.map(([field]) => batch.map((event) => eventParams(event)[field]));
      const { rows } = await send(pool, { name: 'tessera_insertEvents', text: INSERT_EVENTS, values });
      return new Map(rows.map((row) => [row['id'] as string, true]));
    },
    absent: false,
    retryAlone: failedByOneCall,
  });
  const grantUses = new TurnBatch<GrantUse, boolean>({
    key: (use) => use.id,
    one: (use) => stores.grants.recordUse(use.id, use.now, use.activeUntil),
    async many(batch) {
      const values = [batch.map((use) => use.id), batch.map((use) => use.now), batch.map((use) => use.activeUntil)];
      const { rows } = await send(pool, { name: 'tessera_recordGrantUses', text: RECORD_GRANT_USES, values });
      return new Map(rows.map((row) => [row['id'] as string, true]));
    },
    absent: false,
    retryAlone: failedByOneCall,
  });
  const redemptions = new TurnBatch<Redemption, Row | undefined>({
    key: (redemption) => redemption.hash,
    one: (redemption) => runPool.one('consumeCode', redemption),
    async many(batch) {
      const values = [
        batch.map((r) => r.hash),
        batch.map((r) => r.clientId),
        batch.map((r) => r.redirectUri),
        batch.map((r) => r.codeChallenge),
        batch.map((r) => r.dpopJkt),
        batch.map((r) => r.now),
      ];
      const { rows } = await send(pool, { name: 'tessera_consumeCodes', text: CONSUME_CODES, values });
      return new Map(rows.map((row) => [row['hash'] as string, row]));
    },
    absent: undefined,
    retryAlone: failedByOneCall,
  });
  // Every client-credentials grant reads the registered APIs (RFC 8707): the reads of one
  // turn share one statement, sent at the turn's end, so each still sees every write its
  // caller made before asking. Each caller gets its own array.
  let resourceReads = 0;
  // One statement for the APIs and their scopes, where `resources.list` reads each table on its own.
  const listResources = async () =>
    (await send(pool, { name: 'tessera_listResourcesWithScopes', text: LIST_RESOURCES_WITH_SCOPES })).rows.map((row) =>
      resourceFromRow(row, resourceScopesOf(row['scopes'])),
    );
  const resourceLists = new TurnBatch<number, readonly ResourceRecord[]>({
    key: (read) => String(read),
    one: listResources,
    async many(batch) {
      const list = await listResources();
      return new Map(batch.map((read) => [String(read), list]));
    },
    absent: [],
    retryAlone: () => false,
  });
  const { read } = postgresDialect;
  /** Reads of rows by hash (`text`, bound by the batch's hashes), a batch of them one statement. */
  const foundByHash = (name: string, text: string) =>
    new TurnBatch<string, Row | undefined>({
      key: (hash) => hash,
      one: async (hash) => (await send(pool, { name, text, values: [[hash]] })).rows[0],
      async many(batch) {
        const { rows } = await send(pool, { name, text, values: [batch] });
        return new Map(rows.map((row) => [row['hash'] as string, row]));
      },
      absent: undefined,
      retryAlone: () => false,
    });
  const codeOrNull = (row: Row | undefined) => (row === undefined ? null : codeFromRow(row, read));
  // A code exchange in two round trips, each shared with the exchanges of its turn: the
  // code with its grant and user, then its redemption with every write that follows it.
  const exchanges = foundByHash('tessera_findForExchange', FIND_FOR_EXCHANGE);
  // A refresh likewise: the token with its grant and user, then its rotation with its writes.
  const refreshes = foundByHash('tessera_findForRefresh', FIND_FOR_REFRESH);
  /**
   * Calls that each change the row of their `hash` and write what follows it, a batch of them
   * one statement (`text`, bound by `values`) whose changed rows come back by hash; a batch
   * that one call fails is tried again call by call.
   */
  const changedByHash = <T extends { readonly hash: string }>(name: string, text: string, values: (batch: readonly T[]) => unknown[]) => {
    const many = async (batch: readonly T[]): Promise<ReadonlyMap<string, Row>> => {
      const { rows } = await send(pool, { name, text, values: values(batch) });
      return new Map(rows.map((row) => [row['hash'] as string, row]));
    };
    return new TurnBatch<T, Row | undefined>({
      key: (call) => call.hash,
      one: async (call) => (await many([call])).get(call.hash),
      many,
      absent: undefined,
      retryAlone: failedByOneCall,
    });
  };
  const redeems = changedByHash('tessera_redeemCodes', REDEEM_CODES, redeemValues);
  // A refresh's rotation with every write that follows it, shared with the refreshes of its turn.
  const rotations = changedByHash('tessera_rotateRefreshTokens', ROTATE_REFRESH_TOKENS, rotateValues);
  const jsonRow = (value: unknown): Row | null => (value === null || value === undefined ? null : (value as Row));
  /** The grant and user a `FIND_FOR_EXCHANGE` or `FIND_FOR_REFRESH` row carries, null for those gone. */
  const grantAndUser = (row: Row) => {
    const grant = jsonRow(row['grant_row']);
    const user = jsonRow(row['user_row']);
    return { grant: grant === null ? null : grantFromRow(grant, read), user: user === null ? null : userFromRow(user, read) };
  };

  return {
    ...stores,
    resources: { ...stores.resources, list: async () => [...(await resourceLists.run(resourceReads++))] },
    users: { ...stores.users, get: async (id) => ((row) => (row === undefined ? null : userFromRow(row, read)))(await users.run(id)) },
    grants: {
      ...stores.grants,
      get: async (id) => ((row) => (row === undefined ? null : grantFromRow(row, read)))(await grants.run(id)),
      recordUse: (id, now, activeUntil) => grantUses.run({ id, now, activeUntil }),
    },
    refreshTokens: {
      ...stores.refreshTokens,
      rotateWith: async (hash, clientId, now, writes) => (await rotations.run({ hash, clientId, now, writes })) !== undefined,
      async findForRefresh(hash) {
        const row = await refreshes.run(hash);
        return row === undefined ? null : { token: refreshTokenFromRow(jsonRow(row['token_row'])!, read), ...grantAndUser(row) };
      },
    },
    codes: {
      ...stores.codes,
      find: async (hash) => codeOrNull(await codes.run(hash)),
      consume: async (hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now) =>
        codeOrNull(await redemptions.run({ hash, clientId, redirectUri, codeChallenge, dpopJkt, now })),
      async findForExchange(hash) {
        const row = await exchanges.run(hash);
        return row === undefined ? null : { code: codeFromRow(jsonRow(row['code'])!, read), ...grantAndUser(row) };
      },
      redeem: async (hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now, writes) =>
        (await redeems.run({ hash, clientId, redirectUri, codeChallenge, dpopJkt, now, writes })) !== undefined,
    },
    events: {
      ...stores.events,
      add: async (event) => {
        // The single statement's failure for a row the batch did not store: none is expected (ids are unique).
        if (!(await events.run(event))) throw new DuplicateError(`an events row with id ${event.id}`);
      },
    },
    dpopProofs: { use: (key, expiresAt, now) => proofUses.run({ key, expiresAt, now }) },
    clients: {
      ...stores.clients,
      get: (id) => clientCache.get(id, () => stores.clients.get(id)),
      // This instance forgets a changed client at once; the others when the trigger's notice
      // reaches them.
      async update(id, changes, expectedVersion) {
        const updated = await stores.clients.update(id, changes, expectedVersion);
        clientCache.invalidate(id);
        return updated;
      },
      async revokeTokens(id, now) {
        const revoked = await stores.clients.revokeTokens(id, now);
        clientCache.invalidate(id);
        return revoked;
      },
      async markUsed(id, now) {
        await stores.clients.markUsed(id, now);
        clientCache.invalidate(id);
      },
      async rotateSecret(id, secretHash, previousExpiresAt) {
        const rotated = await stores.clients.rotateSecret(id, secretHash, previousExpiresAt);
        clientCache.invalidate(id);
        return rotated;
      },
      async remove(id) {
        const removed = await stores.clients.remove(id);
        // This instance forgets it at once; the others when the trigger's notice reaches them.
        clientCache.invalidate(id);
        return removed;
      },
    },
    devices: {
      ...stores.devices,
      create: (record, event) => deviceInserts.run({ record, event }),
      async poll(deviceCodeHash, clientId, now, dpopJkt = null) {
        const row = await polls.run({ deviceCodeHash, clientId, now, dpopJkt });
        return row === undefined ? null : { outcome: pollOutcomeFromRow(row), record: deviceFromRow(row, postgresDialect.read) };
      },
    },
    async transaction(work) {
      const client = await pool.connect().catch((error: unknown) => {
        throw storeError(error);
      });
      const control = (text: string) => {
        const config: TimedQuery = { text, query_timeout: answerTimeoutMs };
        return client.query(config);
      };
      try {
        await control('BEGIN');
        const result = await work(sqlStores(postgresDialect, runner(client)));
        await control('COMMIT');
        client.release();
        return result;
      } catch (error) {
        try {
          await control('ROLLBACK');
          client.release();
        } catch {
          // A connection whose transaction may still be open never goes back to the pool.
          client.release(true);
        }
        throw storeError(error);
      }
    },
    purgeExpired: (before, cutoffs) => purgeExpired(runPool, before, cutoffs),
    async close() {
      await stopListening();
      if (!pool.ended) await pool.end();
    },
  };
}

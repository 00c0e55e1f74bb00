/**
 * The shared store: PostgreSQL through a `pg.Pool`, for several stateless instances behind
 * one database. Each statement of `sql/statements.ts` is a named prepared statement, so
 * that every pooled connection prepares it once and reuses it. Under READ COMMITTED, a
 * conditional UPDATE that waited for another transaction's row lock re-checks its WHERE
 * against the row that transaction committed (and its SET sees that row), so exactly one
 * caller wins.
 */

import pg from 'pg';
import { CorruptRowError, jsonObject, stringList, type Row } from '../rows.ts';
import type { Dialect, Params, Runner } from '../sql/dialect.ts';
import { statements, type StatementName } from '../sql/statements.ts';
import { purgeExpired, sqlStores } from '../sql/store.ts';
import { DuplicateError, MissingReferenceError, type Store } from '../types.ts';
import { migratePostgres } from './migrate.ts';

export interface PostgresStoreOptions {
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
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  bigint: (parameter) => `${parameter}::bigint`,
  purge: (table, key, expiry) => `DELETE FROM ${table} WHERE ${key} = ANY(ARRAY(
    SELECT ${key} FROM ${table} WHERE ${expiry} < :before LIMIT :limit FOR UPDATE SKIP LOCKED))`,
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
  const pool = new pg.Pool({
    connectionString: url,
    types,
    // When the database is unreachable (a failover, a partition), a request fails after
    // ten seconds instead of waiting for a connection forever, and TCP keepalive finds
    // pooled connections to a server that is gone.
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
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
  return postgresStore(pool);
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

function postgresStore(pool: pg.Pool): Store {
  const prepared = Object.fromEntries(
    Object.entries(statements(postgresDialect)).map(([name, sql]) => [name, prepare(name, sql)]),
  ) as Record<StatementName, Prepared>;
  const runner = (connection: pg.Pool | pg.PoolClient): Runner => {
    const query = async (name: StatementName, params: Params = {}) => {
      const { parameters, ...statement } = prepared[name];
      try {
        return await connection.query<Row>({ ...statement, values: parameters.map((parameter) => params[parameter]) });
      } catch (error) {
        throw constraintError(error);
      }
    };
    return {
      one: async (name, params) => (await query(name, params)).rows[0],
      all: async (name, params) => (await query(name, params)).rows,
      changed: async (name, params) => (await query(name, params)).rowCount ?? 0,
    };
  };
  const runPool = runner(pool);

  return {
    ...sqlStores(postgresDialect, runPool),
    async transaction(work) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work(sqlStores(postgresDialect, runner(client)));
        await client.query('COMMIT');
        client.release();
        return result;
      } catch (error) {
        try {
          await client.query('ROLLBACK');
          client.release();
        } catch {
          // A connection whose transaction may still be open never goes back to the pool.
          client.release(true);
        }
        throw error;
      }
    },
    purgeExpired: (before) => purgeExpired(runPool, before),
    async close() {
      if (!pool.ended) await pool.end();
    },
  };
}

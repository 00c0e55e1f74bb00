/**
 * The PostgreSQL the tests run against: `TESSERA_TEST_POSTGRES_URL`, or a local server
 * (127.0.0.1:5432, user postgres, database test) by default. Each test works in schemas of
 * its own (`tessera_test_<random>`) and drops them afterwards.
 *
 * The tests are mandatory when `TESSERA_TEST_POSTGRES_URL` is set (`.ci/run` sets it
 * wherever PostgreSQL is installed) or when `CI` is (`.ci/run` sets `CI=1`): an unreachable
 * server is then a failure, so they never pass by not running. Otherwise, without a server, they are
 * skipped with a message saying why.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { inCi } from './machine.ts';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

export const postgresUrl = process.env['TESSERA_TEST_POSTGRES_URL'] || DEFAULT_URL;
/** The same, under the name the token-lifecycle tests use. */
export const POSTGRES_URL = postgresUrl;

/** Why the PostgreSQL tests must run here, or null when they may be skipped. */
export function postgresRequiredBy(env: Readonly<Record<string, string | undefined>>): string | null {
  if (env['TESSERA_TEST_POSTGRES_URL']) return 'TESSERA_TEST_POSTGRES_URL is set';
  if (inCi(env)) return 'CI is set';
  return null;
}

/** The URL without its password, for messages. */
export function redacted(connectionString: string): string {
  try {
    const parsed = new URL(connectionString);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** Why the server cannot be used, or null when it can. */
async function unreachable(): Promise<string | null> {
  // Generous: this runs while the test file's other modules load, which on a loaded machine
  // keeps the event loop busy for seconds, and a 3-second timer fired before the answer was
  // read (test/database-outage.test.ts failed "timeout expired" with PostgreSQL up). A server
  // that is down refuses the connection at once whatever the limit.
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 15_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return `cannot reach PostgreSQL at ${redacted(postgresUrl)}: ${error instanceof Error ? error.message || error.name : String(error)}`;
  } finally {
    await client.end().catch(() => {});
  }
}

const reason = await unreachable();
const requiredBy = postgresRequiredBy(process.env);

/**
 * For tests that choose their stores themselves: why to skip PostgreSQL, or undefined to
 * run it (reachable, or mandatory, where an unreachable server then fails the test).
 */
export const postgresSkipReason: string | undefined =
  reason === null || requiredBy !== null
    ? undefined
    : `PostgreSQL tests skipped: ${reason}. Start PostgreSQL there or set TESSERA_TEST_POSTGRES_URL to run them.`;

/**
 * `describe(name, body)` when PostgreSQL is reachable; otherwise one failing case when the
 * tests are mandatory, or one skipped case whose reason the test report shows.
 */
export function describePostgres(name: string, body: () => void): void {
  if (reason === null) {
    describe(name, body);
  } else if (requiredBy !== null) {
    it(`${name}: reaches PostgreSQL (required because ${requiredBy})`, () => {
      assert.fail(`${reason}. The PostgreSQL tests must run because ${requiredBy}: start PostgreSQL or correct TESSERA_TEST_POSTGRES_URL.`);
    });
  } else {
    // One skipped case rather than a skipped suite, so that the run's summary counts it.
    it(name, { skip: postgresSkipReason }, () => {});
  }
}

/**
 * For `describe(…, { skip: await postgresSkip() })`: false to run, or why to skip. Throws
 * when the tests are mandatory and PostgreSQL cannot be reached, which fails the file.
 */
export async function postgresSkip(): Promise<string | false> {
  if (reason !== null && requiredBy !== null) throw new Error(`${reason}; the PostgreSQL tests must run because ${requiredBy}`);
  return postgresSkipReason ?? false;
}

/** A fresh schema name; nothing is created until a store opens it. */
export const newSchema = (): string => `tessera_test_${randomBytes(6).toString('hex')}`;

/** Runs `work` with a plain connection, for what the Store interface does not show. */
export async function withAdmin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

export const dropSchema = (schema: string): Promise<unknown> =>
  withAdmin((client) => client.query(`DROP SCHEMA IF EXISTS ${client.escapeIdentifier(schema)} CASCADE`));

/** The `TESSERA_DATABASE` value for a server or a command working in `schema`. */
export function databaseSetting(schema: string): string {
  const url = new URL(postgresUrl);
  url.searchParams.set('schema', schema);
  return url.href;
}

/**
 * Creates a fresh schema and returns a database URL whose connections use it (the
 * `TESSERA_DATABASE` of a test server), and how to drop it afterwards.
 */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const schema = newSchema();
  await withAdmin((client) => client.query(`CREATE SCHEMA ${client.escapeIdentifier(schema)}`));
  return { url: databaseSetting(schema), drop: () => dropSchema(schema).then(() => {}) };
}

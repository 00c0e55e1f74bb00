/**
 * A PostgreSQL schema of its own for an end-to-end test server: `TESSERA_TEST_POSTGRES_URL`,
 * or the local server. As in `test/store/postgres.test.ts`, an unreachable server skips the
 * tests with a message, except under CI, where it is a failure.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const POSTGRES_URL = process.env['TESSERA_TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';
const inCI = !['', '0', 'false'].includes((process.env['CI'] ?? '').toLowerCase());

/** `false` when PostgreSQL can be used, else why the tests are skipped; throws under CI. */
export async function postgresSkip(): Promise<string | false> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return false;
  } catch (error) {
    const reason = `cannot reach PostgreSQL (${error instanceof Error ? error.message : String(error)})`;
    if (inCI) throw new Error(`${reason}; under CI the PostgreSQL tests must run`);
    return `PostgreSQL tests skipped: ${reason} (set TESSERA_TEST_POSTGRES_URL to run them)`;
  } finally {
    await client.end().catch(() => {});
  }
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates a fresh schema and returns a database URL whose connections use it (the
 * `TESSERA_DATABASE` of a test server), and how to drop it afterwards.
 */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const schema = `tessera_test_${randomBytes(6).toString('hex')}`;
  await admin((client) => client.query(`CREATE SCHEMA ${client.escapeIdentifier(schema)}`));
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.href,
    async drop() {
      await admin((client) => client.query(`DROP SCHEMA IF EXISTS ${client.escapeIdentifier(schema)} CASCADE`));
    },
  };
}

import type pg from 'pg';
import { checkKnownVersions, migrations as allMigrations, statementFor, type Migration } from '../migrations.ts';
import { integer } from '../rows.ts';

/**
 * Applies the migrations this database lacks, all in one transaction, under a
 * transaction-level advisory lock: when several instances start at once, the first
 * migrates and the others wait for its commit, then find nothing left to do. The schema
 * itself, when one is named, is created under the same lock, since `CREATE SCHEMA IF NOT
 * EXISTS` is not safe against a concurrent twin.
 */
export async function migratePostgres(pool: pg.Pool, schema: string | null, migrations: readonly Migration[] = allMigrations): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    // Not held to the request statement timeout: waiting for another instance's migration,
    // or rewriting a large table, may take longer.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`tessera:migrate:${schema ?? ''}`]);
    if (schema !== null) {
      const found = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
      // The connection's search_path already names the schema, so once created it is used.
      if (found.rowCount === 0) await client.query(`CREATE SCHEMA ${client.escapeIdentifier(schema)}`);
    }
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at bigint NOT NULL
    )`);
    const rows = await client.query<Record<string, unknown>>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.rows.map((row) => integer(row, 'version')));
    checkKnownVersions(applied, migrations);
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      for (const statement of migration.statements) {
        const text = statementFor(statement, 'postgres');
        if (text !== null) await client.query(text);
      }
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, Date.now()]);
    }
    await client.query('COMMIT');
  } catch (error) {
    // Destroying the connection ends its transaction, whatever state the error left it in.
    client.release(true);
    throw error;
  }
  client.release();
}

import type { DatabaseSync } from 'node:sqlite';
import { checkKnownVersions, migrations as allMigrations, statementFor, type Migration } from '../migrations.ts';
import { integer } from '../rows.ts';

/**
 * Applies the migrations this database lacks, all in one transaction. `BEGIN IMMEDIATE`
 * takes the write lock before reading `schema_migrations`, so when several processes open
 * one file at once, the first migrates and the others wait (busy_timeout), then find
 * nothing left to do. A database already up to date is only read: a `tessera` command, a
 * restart or a worker process opening it does not wait for the write lock, which a busy
 * server holds through each of its commits.
 */
export function migrateSqlite(db: DatabaseSync, migrations: readonly Migration[] = allMigrations): void {
  const applied = appliedVersions(db);
  if (applied !== null) {
    checkKnownVersions(applied, migrations);
    if (migrations.every((migration) => applied.has(migration.version))) return;
  }
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    )`);
    // Read again under the lock: another process may have migrated since.
    const recorded = appliedVersions(db) ?? new Set<number>();
    checkKnownVersions(recorded, migrations);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of migrations) {
      if (recorded.has(migration.version)) continue;
      for (const statement of migration.statements) {
        const text = statementFor(statement, 'sqlite');
        if (text !== null) db.exec(text);
      }
      record.run(migration.version, migration.name, Date.now());
    }
    db.exec('COMMIT');
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

/** The versions `schema_migrations` records, read outside any write lock; null before the table exists. */
function appliedVersions(db: DatabaseSync): Set<number> | null {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (table === undefined) return null;
  return new Set(
    db
      .prepare('SELECT version FROM schema_migrations')
      .all()
      .map((row) => integer(row, 'version')),
  );
}

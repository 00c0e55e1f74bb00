import type { DatabaseSync } from 'node:sqlite';
import { checkKnownVersions, migrations as allMigrations, statementFor, type Migration } from '../migrations.ts';
import { integer } from '../rows.ts';

/**
 * Applies the migrations this database lacks, all in one transaction. `BEGIN IMMEDIATE`
 * takes the write lock before reading `schema_migrations`, so when several processes open
 * one file at once, the first migrates and the others wait (busy_timeout), then find
 * nothing left to do.
 */
export function migrateSqlite(db: DatabaseSync, migrations: readonly Migration[] = allMigrations): void {
  db.exec('BEGIN IMMEDIATE');
  try {
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at INTEGER NOT NULL
    )`);
    const applied = new Set(
      db
        .prepare('SELECT version FROM schema_migrations')
        .all()
        .map((row) => integer(row, 'version')),
    );
    checkKnownVersions(applied, migrations);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
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

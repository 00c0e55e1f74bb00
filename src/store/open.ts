import { fileURLToPath } from 'node:url';
import type { Store } from './types.ts';

/** Where the store lives, as read from the `database` setting. */
export type DatabaseLocation = { readonly kind: 'sqlite'; readonly path: string } | { readonly kind: 'postgres'; readonly url: string };

/**
 * Reads the `database` setting: `postgres://…` or `postgresql://…` is PostgreSQL;
 * `sqlite:PATH`, a `file:` URL or path, or a plain path is an SQLite file; `:memory:`
 * (or `sqlite::memory:`) is an in-memory SQLite database.
 */
export function parseDatabase(database: string): DatabaseLocation {
  if (/^postgres(ql)?:\/\//i.test(database)) return { kind: 'postgres', url: database };
  if (/^file:\/\//i.test(database)) return { kind: 'sqlite', path: fileURLToPath(database) };
  const path = database.replace(/^(sqlite|file):/i, '');
  if (path === '') throw new Error(`no SQLite path in the database setting ${JSON.stringify(database)}`);
  return { kind: 'sqlite', path };
}

/**
 * Opens the store named by the `database` setting (see `parseDatabase`). Only the chosen
 * implementation is loaded, so an SQLite deployment never loads `pg`, and the reverse.
 */
export async function openStore(database: string): Promise<Store> {
  const location = parseDatabase(database);
  if (location.kind === 'postgres') {
    const { openPostgresStore } = await import('./postgres/store.ts');
    return openPostgresStore(location.url);
  }
  const { openSqliteStore } = await import('./sqlite/store.ts');
  return openSqliteStore(location.path);
}

import { fileURLToPath } from 'node:url';
import type { PostgresSettings } from '../config/index.ts';
import type { Store } from './types.ts';

/** Where the store lives, as read from the `database` setting. */
export type DatabaseLocation =
  | { readonly kind: 'sqlite'; readonly path: string }
  /** `schema`: the PostgreSQL schema to keep the tables in; absent, the role's search_path decides. */
  | { readonly kind: 'postgres'; readonly url: string; readonly schema?: string };

/**
 * Reads the `database` setting: `postgres://…` or `postgresql://…` is PostgreSQL, with an
 * optional `schema=NAME` query parameter that is Tessera's, not the driver's;
 * `sqlite:PATH`, a `file:` URL or path, or a plain path is an SQLite file; `:memory:`
 * (or `sqlite::memory:`) is an in-memory SQLite database.
 */
export function parseDatabase(database: string): DatabaseLocation {
  if (/^postgres(ql)?:\/\//i.test(database)) return postgresLocation(database);
  if (/^file:\/\//i.test(database)) return { kind: 'sqlite', path: fileURLToPath(database) };
  const path = database.replace(/^(sqlite|file):/i, '');
  if (path === '') throw new Error(`no SQLite path in the database setting ${JSON.stringify(database)}`);
  return { kind: 'sqlite', path };
}

/**
 * Takes `schema` out of the URL's query, leaving the rest of the URL as written (pg reads
 * forms that WHATWG URL parsing would rewrite, such as `postgres://user@/db?host=/run`).
 */
function postgresLocation(url: string): DatabaseLocation {
  const mark = url.indexOf('?');
  if (mark === -1) return { kind: 'postgres', url };
  const query = new URLSearchParams(url.slice(mark + 1));
  const schemas = query.getAll('schema');
  if (schemas.length === 0) return { kind: 'postgres', url };
  if (schemas.length > 1) throw new Error('the database setting names more than one schema');
  query.delete('schema');
  const rest = query.toString();
  return { kind: 'postgres', url: rest === '' ? url.slice(0, mark) : `${url.slice(0, mark)}?${rest}`, schema: schemas[0]! };
}

/**
 * Opens the store named by the `database` setting (see `parseDatabase`), PostgreSQL with
 * the pool size and time limits of `postgres` (the defaults where absent). Only the chosen
 * implementation is loaded, so an SQLite deployment never loads `pg`, and the reverse.
 */
export async function openStore(database: string, postgres: Partial<PostgresSettings> = {}): Promise<Store> {
  const location = parseDatabase(database);
  if (location.kind === 'postgres') {
    const { openPostgresStore } = await import('./postgres/store.ts');
    return openPostgresStore(location.url, location.schema === undefined ? postgres : { ...postgres, schema: location.schema });
  }
  const { openSqliteStore } = await import('./sqlite/store.ts');
  return openSqliteStore(location.path);
}

/**
 * Where a store is, for the start log and start-up errors: the SQLite file, or the PostgreSQL
 * host, port and database, never the user name or password of the URL.
 */
export function describeDatabase(location: DatabaseLocation): string {
  if (location.kind === 'sqlite') return location.path === ':memory:' ? 'an in-memory SQLite database' : `the SQLite database ${location.path}`;
  let host = 'localhost';
  let port = '5432';
  let database = '';
  try {
    const url = new URL(location.url);
    host = url.hostname || new URLSearchParams(url.search).get('host') || host;
    port = url.port || port;
    database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  } catch {
    // pg reads some forms WHATWG URL parsing refuses; say no more than that it is PostgreSQL
    return 'a PostgreSQL database';
  }
  const schema = location.schema === undefined ? '' : `, schema ${location.schema}`;
  return `the PostgreSQL database ${database || "(the user's default)"} on ${host}:${port}${schema}`;
}

/**
 * A code or a refresh token read with its grant and its user in one statement, as the
 * PostgreSQL store reads them (`FIND_FOR_EXCHANGE`): a code exchange and a refresh each
 * began with three reads, which cost three times the work around a statement (its promise,
 * its row object, its turn through the group commit's queue) for rows a join reads together.
 * Measured on the 2-core AMD EPYC: 42 µs of the event loop for the three reads through the
 * store, 14 for this one (docs/benchmarks.md, "One read for a code exchange on SQLite").
 *
 * SQLite has no `row_to_json`: the joined row comes back as an array of values, and
 * `StatementSync.columns()` says which table each value is from, so that each table's row is
 * the same object its own `SELECT *` gives and goes through the same `…FromRow` check.
 */
import type { SQLInputValue, StatementSync } from 'node:sqlite';
import { codeFromRow } from '../sql/codes.ts';
import { grantFromRow } from '../sql/grants.ts';
import { refreshTokenFromRow } from '../sql/tokens.ts';
import { userFromRow } from '../sql/users.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { CodeExchange, GrantRecord, RefreshExchange, UserRecord } from '../types.ts';

/** Every column of the code, its grant and its user (null columns for a grant or user gone). */
export const FIND_FOR_EXCHANGE = `
  SELECT * FROM authorization_codes c LEFT JOIN grants g ON g.id = c.grant_id LEFT JOIN users u ON u.id = c.user_id
  WHERE c.hash = :hash`;

/** Every column of the refresh token, its grant and its user, as `FIND_FOR_EXCHANGE` reads a code. */
export const FIND_FOR_REFRESH = `
  SELECT * FROM refresh_tokens t LEFT JOIN grants g ON g.id = t.grant_id LEFT JOIN users u ON u.id = t.user_id
  WHERE t.hash = :hash`;

/**
 * Which value of the joined row is which column of which table, in the statement's order, and
 * each table's row with every column null: a row is made as a copy of it, every key in place,
 * rather than grown key by key (which copied the object's property store as it grew, for the
 * three rows of every code exchange and refresh).
 */
type Layout = readonly { readonly columns: readonly (readonly [column: string, index: number])[]; readonly blank: Readonly<Row> }[];

function layoutOf(statement: StatementSync, tables: readonly string[]): Layout {
  const columns = statement.columns();
  return tables.map((table) => {
    const own = columns.flatMap((column, index) => (column.table === table ? [[column.column ?? column.name, index] as const] : []));
    return { columns: own, blank: Object.fromEntries(own.map(([column]) => [column, null])) };
  });
}

/**
 * The rows of `tables` that `statement` (prepared by the caller, given back in arrays) joins,
 * by `params`; undefined when it found none, and null for a table whose LEFT JOIN found no
 * row (every column null: each table here has a NOT NULL primary key).
 */
export function joinedRows(statement: StatementSync, tables: readonly string[]): (params: Record<string, SQLInputValue>) => (Row | null)[] | undefined {
  statement.setReturnArrays(true);
  let layout = layoutOf(statement, tables);
  let width = layout.reduce((sum, table) => sum + table.columns.length, 0);
  return (params) => {
    const values = statement.get(params) as unknown as readonly unknown[] | undefined;
    if (values === undefined) return undefined;
    // `SELECT *` is expanded when SQLite prepares the statement again after another
    // connection changed the schema (a migration): read the layout again when it did.
    if (values.length !== width) {
      layout = layoutOf(statement, tables);
      width = layout.reduce((sum, table) => sum + table.columns.length, 0);
    }
    return layout.map(({ columns, blank }) => {
      const row: Record<string, unknown> = { ...blank };
      let found = false;
      for (const [column, index] of columns) {
        const value = values[index];
        row[column] = value;
        if (value !== null) found = true;
      }
      return found ? row : null;
    });
  };
}

/** A row of `table` as its record, under `K`, with its grant and its user as they are now. */
type WithGrantAndUser<K extends string, T> = { readonly [k in K]: T } & { readonly grant: GrantRecord | null; readonly user: UserRecord | null };

/**
 * A reader of `table`'s row (a code, a refresh token) with its grant and its user, over a
 * prepared `FIND_FOR_EXCHANGE` or `FIND_FOR_REFRESH`, the row as `fromRow` makes it, under `key`.
 */
function withGrantAndUser<K extends string, T>(
  statement: StatementSync,
  read: ColumnReader,
  table: string,
  key: K,
  fromRow: (row: Row, read: ColumnReader) => T,
): (hash: string) => WithGrantAndUser<K, T> | null {
  const rows = joinedRows(statement, [table, 'grants', 'users']);
  return (hash) => {
    const [issued, grant, user] = rows({ hash }) ?? [];
    if (!issued) return null;
    const found = { [key]: fromRow(issued, read), grant: grant ? grantFromRow(grant, read) : null, user: user ? userFromRow(user, read) : null };
    return found as WithGrantAndUser<K, T>;
  };
}

/** `findForExchange` over a prepared `FIND_FOR_EXCHANGE`. */
export const exchangeReader = (statement: StatementSync, read: ColumnReader): ((hash: string) => CodeExchange | null) =>
  withGrantAndUser(statement, read, 'authorization_codes', 'code', codeFromRow);

/** `findForRefresh` over a prepared `FIND_FOR_REFRESH`. */
export const refreshReader = (statement: StatementSync, read: ColumnReader): ((hash: string) => RefreshExchange | null) =>
  withGrantAndUser(statement, read, 'refresh_tokens', 'token', refreshTokenFromRow);

import type { ColumnReader, Row } from '../rows.ts';
import type { StatementName } from './statements.ts';

/** A value bound to a named parameter, already in the form its column stores. */
export type SqlValue = string | number | boolean | null | readonly string[];
export type Params = Readonly<Record<string, SqlValue>>;

/**
 * What differs between the databases, and nothing more: how lists and booleans are
 * stored and read back, and the few expressions each spells its own way.
 */
export interface Dialect {
  readonly read: ColumnReader;
  /** A list of strings: JSON text in SQLite, `text[]` in PostgreSQL. */
  list(values: readonly string[]): SqlValue;
  /** 0 or 1 in SQLite, `boolean` in PostgreSQL. */
  flag(value: boolean): SqlValue;
  /** The larger of two non-null integers (`MAX(a, b)` in SQLite, `GREATEST(a, b)` in PostgreSQL). */
  greatest(a: string, b: string): string;
  /** The distinct strings of two lists, as a list (a remembered grant's grown scope). */
  listUnion(a: string, b: string): string;
  /** A parameter used where nothing around it tells PostgreSQL its type (arithmetic, CASE). */
  bigint(parameter: string): string;
  /**
   * One batch of `purgeExpired`: deletes at most `:limit` rows of `table` whose `expiry` is
   * before `:before`, found through the expiry index and deleted through `key`.
   */
  purge(table: string, key: string, expiry: string): string;
}

/**
 * Runs the statements of `statements()` by name: the whole of what the store asks of a
 * driver. Each driver has one over its connection, and one per transaction.
 */
export interface Runner {
  one(name: StatementName, params?: Params): Promise<Row | undefined>;
  all(name: StatementName, params?: Params): Promise<Row[]>;
  /** The number of rows the statement inserted, updated or deleted. */
  changed(name: StatementName, params: Params): Promise<number>;
}

import type { ColumnReader, Row } from '../rows.ts';

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
  /** List column `column` without the strings that subquery `names` selects, in its order (an API's scope names taken out). */
  listWithout(column: string, names: string): string;
  /**
   * The locking clause of a subquery whose rows must stay until its transaction ends: in
   * PostgreSQL `FOR KEY SHARE`, which a delete waits for and an update of other columns does
   * not; none in SQLite, whose one writer runs each write alone.
   */
  readonly keepsRows: string;
  /** A parameter used where nothing around it tells PostgreSQL its type (arithmetic, CASE). */
  bigint(parameter: string): string;
  /**
   * One batch of `purgeExpired`: deletes at most `:limit` rows of `table` for which
   * `condition` holds (over `:before`), found through its index and deleted through `key`.
   */
  purge(table: string, key: string, condition: string): string;
  /** The text member `key` of a JSON object column (null when it is not there, or not text). */
  jsonText(column: string, key: string): string;
  /**
   * A FROM item of one row per element of the JSON array at member `key` of `column` (none
   * when it is not an array), whose member `member` is the text column `v`.
   */
  jsonMembers(column: string, key: string, member: string): string;
  /** Whether `expression` is one of the strings of the list parameter `parameter` (bound with `list`). */
  inList(expression: string, parameter: string): string;
  /** Whether `expression` is one of the strings of the list column `column`. */
  listHas(column: string, expression: string): string;
  /**
   * The `outbox_events.seq` below which every row there is committed, and so seen by whoever
   * reads now (migrations.ts, version 45): none waits in SQLite, whose writers take turns; in
   * PostgreSQL, the oldest transaction still running.
   */
  readonly outboxHorizon: string;
  /** What the reader sees of `outbox_events` now, as text (null in SQLite, where nothing committed is unseen). */
  readonly outboxSnapshot: string;
  /** Whether the row of `outbox_events` at `seq` was committed as `snapshot` (an `outboxSnapshot`) saw it. */
  outboxSeen(seq: string, snapshot: string): string;
  /** The rows of `outbox_events` whose transactions were still running as `snapshot` saw them, as a list of `seq` for IN (none in SQLite). */
  outboxRunning(snapshot: string): string;
  /** A text expression compared by code point (SQLite's BINARY; PostgreSQL's "C" collation), not by the database's locale. */
  byCodePoint(expression: string): string;
  /**
   * Whether text `expression`, its case kept, matches the LIKE `pattern` (escaped with `\`),
   * which is `value` with `%` around or after it as `op` asks: SQLite's LIKE ignores the case
   * of A-Z, so there the match is checked exactly too.
   */
  likeExact(expression: string, pattern: string, value: string, op: 'co' | 'sw' | 'ew'): string;
}

/**
 * Runs statements by name: the whole of what the store asks of a driver. Each driver has
 * one over its connection, and one per transaction, for every statement of `statements()`;
 * a concept's stores are given it for their own statements only (`Name`).
 */
export interface Runner<Name extends string> {
  /**
   * A read composed at run time from fragments written in this folder (a SCIM list's WHERE and
   * ORDER BY, sql/scim-search.ts; the audit trail's filters, sql/events.ts), its values bound as
   * named parameters, never in its text.
   */
  select(sql: string, params: Params): Promise<Row[]>;
  one(name: Name, params?: Params): Promise<Row | undefined>;
  all(name: Name, params?: Params): Promise<Row[]>;
  /** The number of rows the statement inserted, updated or deleted. */
  changed(name: Name, params: Params): Promise<number>;
}

/** The four shapes of a store method over `q`: one record or none, every record, whether a row changed, a write. */
export function queries<Name extends string>(q: Runner<Name>) {
  return {
    first: async <T>(name: Name, params: Params, record: (row: Row) => T): Promise<T | null> => {
      const row = await q.one(name, params);
      return row === undefined ? null : record(row);
    },
    every: async <T>(name: Name, params: Params, record: (row: Row) => T): Promise<T[]> => (await q.all(name, params)).map(record),
    changedAny: async (name: Name, params: Params): Promise<boolean> => (await q.changed(name, params)) > 0,
    write: async (name: Name, params: Params): Promise<void> => void (await q.changed(name, params)),
  };
}

/**
 * SCIM lists in SQL (RFC 7644 §3.4.2): a search's condition, order and page as one SELECT and
 * one count, composed from the fragments below (each field's expression, each comparison's
 * form), written once for both databases; the little that differs comes from the Dialect.
 * Every value is a bound parameter; a LIKE pattern has its `\`, `%` and `_` escaped.
 *
 * Each comparison is written to be true or false, never NULL (a value that is not there
 * matches no comparison but `ne`), so that NOT is the filter's `not`.
 */
import type { Row } from '../rows.ts';
import type { GroupSearchField, ScimCondition, ScimSearch, ScimSearchOp, UserSearchField } from '../scim.ts';
import type { Dialect, Params, SqlValue } from './dialect.ts';

/** How a field is compared. */
type FieldSql =
  /** One text value; `exact`: its case matters. */
  | { readonly kind: 'text'; readonly expression: string; readonly exact: boolean }
  /** Several text values, each of which a comparison may match: `any(predicate)` is the SQL that one of them does. */
  | { readonly kind: 'texts'; readonly exact: boolean; readonly any: (predicate: (value: string) => string) => string; readonly present: string }
  /** Milliseconds since the epoch. */
  | { readonly kind: 'time'; readonly expression: string }
  /** A boolean column that is the field's opposite (`active` is `NOT disabled`). */
  | { readonly kind: 'notFlag'; readonly expression: string };

/** What a search is composed over: its FROM, each field, and the order that breaks ties (the list's own). */
interface Table<F extends string> {
  readonly from: string;
  readonly select: string;
  readonly fields: Readonly<Record<F, FieldSql>>;
  readonly tieBreak: string;
}

export function userSearchTable(d: Dialect): Table<UserSearchField> {
  const emailValues = d.jsonMembers('s.attributes', 'emails', 'value');
  return {
    from: 'users u LEFT JOIN scim_users s ON s.user_id = u.id',
    select: 'u.*, s.user_id AS scim_user_id, s.external_id AS scim_external_id, s.attributes AS scim_attributes',
    fields: {
      id: { kind: 'text', expression: 'u.id', exact: true },
      userName: { kind: 'text', expression: 'u.username', exact: false },
      externalId: { kind: 'text', expression: 's.external_id', exact: true },
      active: { kind: 'notFlag', expression: 'u.disabled' },
      // Rendered as the displayName SCIM was given, else the name claim (flows/scim/users.ts userResource).
      displayName: { kind: 'text', expression: `COALESCE(${d.jsonText('s.attributes', 'displayName')}, u.name)`, exact: false },
      // The account's address, and every address SCIM was given beside it; none when the account has none.
      emails: {
        kind: 'texts',
        exact: false,
        any: (predicate) => `(u.email IS NOT NULL AND (${predicate('u.email')} OR EXISTS (SELECT 1 FROM ${emailValues} em WHERE ${predicate('em.v')})))`,
        present: "(u.email IS NOT NULL AND u.email <> '')",
      },
      created: { kind: 'time', expression: 'u.created_at' },
      lastModified: { kind: 'time', expression: 'u.updated_at' },
    },
    tieBreak: 'u.created_at, u.id',
  };
}

export function groupSearchTable(): Table<GroupSearchField> {
  return {
    from: 'user_groups g',
    select: 'g.*',
    fields: {
      id: { kind: 'text', expression: 'g.id', exact: true },
      displayName: { kind: 'text', expression: 'g.display_name', exact: false },
      externalId: { kind: 'text', expression: 'g.external_id', exact: true },
      members: {
        kind: 'texts',
        exact: true,
        any: (predicate) => `EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = g.id AND ${predicate('gm.user_id')})`,
        present: 'EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = g.id)',
      },
      created: { kind: 'time', expression: 'g.created_at' },
      lastModified: { kind: 'time', expression: 'g.updated_at' },
    },
    tieBreak: 'g.created_at, g.id',
  };
}

/** `value` as a LIKE pattern matching it literally: `\`, `%` and `_` escaped with `\`. */
export function likeLiteral(value: string): string {
  return value.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const ORDER: Readonly<Record<'gt' | 'ge' | 'lt' | 'le', string>> = { gt: '>', ge: '>=', lt: '<', le: '<=' };

/** Composes the WHERE of `condition`, binding its values into `params`. */
function whereOf<F extends string>(d: Dialect, table: Table<F>, condition: ScimCondition<F>, params: Record<string, SqlValue>): string {
  const bind = (value: SqlValue) => {
    const name = `p${Object.keys(params).length}`;
    params[name] = value;
    return `:${name}`;
  };
  /** One text value `e` compared; true or false, never NULL. */
  const textPredicate = (e: string, exact: boolean, op: Exclude<ScimSearchOp, 'ne'>, value: string): string => {
    const folded = (x: string) => (exact ? x : `lower(${x})`);
    if (op === 'co' || op === 'sw' || op === 'ew') {
      const pattern = `${op === 'sw' ? '' : '%'}${likeLiteral(value)}${op === 'ew' ? '' : '%'}`;
      if (exact) return `(${e} IS NOT NULL AND ${d.likeExact(e, bind(pattern), bind(value), op)})`;
      return `(${e} IS NOT NULL AND lower(${e}) LIKE lower(${bind(pattern)}) ESCAPE '\\')`;
    }
    const p = bind(value);
    if (op === 'eq') return `(${e} IS NOT NULL AND ${folded(e)} = ${folded(p)})`;
    return `(${e} IS NOT NULL AND ${d.byCodePoint(folded(e))} ${ORDER[op]} ${d.byCodePoint(folded(p))})`;
  };
  const walk = (c: ScimCondition<F>): string => {
    switch (c.kind) {
      case 'and':
      case 'or':
        return `(${walk(c.left)} ${c.kind.toUpperCase()} ${walk(c.right)})`;
      case 'not':
        return `(NOT ${walk(c.condition)})`;
      case 'present': {
        const field = table.fields[c.field];
        if (field.kind === 'texts') return field.present;
        if (field.kind === 'text') return `(${field.expression} IS NOT NULL AND ${field.expression} <> '')`;
        return field.kind === 'time' ? `(${field.expression} IS NOT NULL)` : '(1 = 1)';
      }
      case 'compare': {
        const field = table.fields[c.field];
        if (c.op === 'ne') return `(NOT ${walk({ ...c, op: 'eq' })})`;
        const op = c.op;
        switch (field.kind) {
          case 'text':
            return textPredicate(field.expression, field.exact, op, String(c.value));
          case 'texts':
            return field.any((e) => textPredicate(e, field.exact, op, String(c.value)));
          case 'time':
            if (op === 'eq') return `(${field.expression} = ${bind(Number(c.value))})`;
            if (op === 'co' || op === 'sw' || op === 'ew') throw new Error(`a time is not compared by ${op}`);
            return `(${field.expression} ${ORDER[op]} ${bind(Number(c.value))})`;
          case 'notFlag':
            if (op !== 'eq') throw new Error(`a boolean is not compared by ${op}`);
            return `(${field.expression} = ${bind(d.flag(c.value !== true))})`;
        }
      }
    }
  };
  return walk(condition);
}

/** The ORDER BY of a search: the field (without a value last if ascending, first if descending; text without regard to case unless its case matters), then the list's own order. */
function orderOf<F extends string>(d: Dialect, table: Table<F>, search: ScimSearch<F>): string {
  if (search.sortBy === null) return table.tieBreak;
  const field = table.fields[search.sortBy];
  const direction = search.descending ? ' DESC' : '';
  if (field.kind === 'text') {
    const key = field.expression;
    return `(${key} IS NULL)${direction}, ${d.byCodePoint(field.exact ? key : `lower(${key})`)}${direction}, ${table.tieBreak}`;
  }
  if (field.kind === 'time') return `${field.expression}${direction}, ${table.tieBreak}`;
  if (field.kind === 'notFlag') return `${field.expression}${search.descending ? '' : ' DESC'}, ${table.tieBreak}`;
  // A multi-valued field sorts by its primary value: not composed here (flows/scim/search.ts sorts those in memory).
  throw new Error(`${search.sortBy} is not sorted by the database`);
}

/** The page's SELECT and the count's, and their parameters. */
export function composeSearch<F extends string>(d: Dialect, table: Table<F>, search: ScimSearch<F>): { page: string; count: string; params: Params } {
  const params: Record<string, SqlValue> = {};
  const where = search.where === null ? '1 = 1' : whereOf(d, table, search.where, params);
  return {
    page: `SELECT ${table.select} FROM ${table.from} WHERE ${where} ORDER BY ${orderOf(d, table, search)} LIMIT :limit OFFSET :offset`,
    count: `SELECT count(*) AS n FROM ${table.from} WHERE ${where}`,
    params: { ...params, limit: search.limit, offset: search.offset },
  };
}

/** The count a composed count statement answers (PostgreSQL's bigint is read as a number or text). */
export function countOf(rows: readonly Row[]): number {
  const value = rows[0]?.['n'];
  return typeof value === 'number' ? value : Number(value ?? 0);
}

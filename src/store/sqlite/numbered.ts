/**
 * The store's statements are written with named parameters (`:hash`), once for both
 * databases; SQLite runs them with numbered ones (`?1`), bound from an array.
 *
 * Why: `node:sqlite` binds a named parameter by looking its name up in the statement
 * (`sqlite3_bind_parameter_index`, a scan of the statement's names, after the key is copied
 * out of V8 as UTF-8), for every key of the object, every run; a key the statement does not
 * name is tried under each of the three prefixes before it is let go. The audit event's insert
 * (ten parameters) cost 18 µs on the 2-core AMD EPYC bound by name and 13.5 bound by number,
 * and with several worker threads every write runs on the one writer thread, whose time per
 * write is the ceiling of what they answer together (docs/benchmarks.md, "Numbered parameters
 * and one test for the outbox trigger").
 */
import type { SQLInputValue } from 'node:sqlite';

/** A statement's text with `?N` for each named parameter, and the names in the order of their numbers. */
export interface Numbered {
  readonly text: string;
  readonly names: readonly string[];
}

const IDENTIFIER_START = /[A-Za-z_]/;
const IDENTIFIER_PART = /[A-Za-z0-9_]/;

/**
 * Numbers the named parameters of `sql` (`:name`, `@name`, `$name`) by their first
 * appearance; a name used twice gets one number, as SQLite gives it one slot. String
 * literals, quoted identifiers and comments are copied as they are: `'urn:ietf:params'` and
 * `'$.key'` name no parameter.
 */
export function numbered(sql: string): Numbered {
  const names: string[] = [];
  const numbers = new Map<string, number>();
  let text = '';
  let i = 0;
  while (i < sql.length) {
    const char = sql[i]!;
    const quoteEnd = char === "'" || char === '"' || char === '`' ? closingQuote(sql, i) : char === '[' ? sql.indexOf(']', i) + 1 || sql.length : -1;
    if (quoteEnd !== -1) {
      text += sql.slice(i, quoteEnd);
      i = quoteEnd;
    } else if (char === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const stop = end === -1 ? sql.length : end;
      text += sql.slice(i, stop);
      i = stop;
    } else if (char === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const stop = end === -1 ? sql.length : end + 2;
      text += sql.slice(i, stop);
      i = stop;
    } else if ((char === ':' || char === '@' || char === '$') && IDENTIFIER_START.test(sql[i + 1] ?? '')) {
      let end = i + 2;
      while (end < sql.length && IDENTIFIER_PART.test(sql[end]!)) end += 1;
      const name = sql.slice(i + 1, end);
      let number = numbers.get(name);
      if (number === undefined) {
        names.push(name);
        number = names.length;
        numbers.set(name, number);
      }
      text += `?${number}`;
      i = end;
    } else {
      text += char;
      i += 1;
    }
  }
  return { text, names };
}

/** The index just past the quote that closes the one at `start` (a doubled quote inside is the character itself). */
function closingQuote(sql: string, start: number): number {
  const quote = sql[start]!;
  let i = start + 1;
  while (i < sql.length) {
    if (sql[i] === quote) {
      if (sql[i + 1] !== quote) return i + 1;
      i += 2;
    } else i += 1;
  }
  return sql.length;
}

/**
 * The values to bind, in the statement's order: a name missing from `params` is bound to
 * NULL, as an unbound named parameter is, and a key the statement does not name is left out.
 */
export function valuesOf(names: readonly string[], params: Readonly<Record<string, unknown>>): SQLInputValue[] {
  const values = new Array<SQLInputValue>(names.length);
  for (let i = 0; i < names.length; i += 1) {
    const value = params[names[i]!];
    values[i] = value === undefined ? null : (value as SQLInputValue);
  }
  return values;
}

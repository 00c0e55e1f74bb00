/**
 * Reading rows back, the parts every table shares: the column types both dialects return
 * alike, and the dialect's `ColumnReader` for those SQL has no common form for. Each
 * concept's rows become records in its own file of `sql/`, through these. Every value is
 * checked: a row that does not fit its record is a corrupt database or a schema mismatch,
 * and fails loudly here rather than somewhere in a flow.
 */

import type { SigningAlgorithm } from '../config/index.ts';
import { AUTH_METHODS, type AuthMethod } from '../core/auth-methods.ts';

/** A row as a driver returns it: column name to value. */
export type Row = Readonly<Record<string, unknown>>;

/** How a dialect stores lists, JSON objects and booleans. */
export interface ColumnReader {
  /** A list of strings: JSON text in SQLite, `text[]` in PostgreSQL. */
  strings(row: Row, column: string): string[];
  /** A JSON object: JSON text in SQLite, `jsonb` in PostgreSQL. */
  object(row: Row, column: string): Record<string, unknown>;
  /** 0 or 1 in SQLite, `boolean` in PostgreSQL. */
  boolean(row: Row, column: string): boolean;
}

/** A column held a value its record cannot have: a corrupt database or a schema mismatch. */
export class CorruptRowError extends Error {
  constructor(column: string, expected: string, value: unknown) {
    super(`column ${column}: expected ${expected}, found ${typeof value === 'string' ? JSON.stringify(value) : String(value)}`);
    this.name = 'CorruptRowError';
  }
}

// Readers for the column types both dialects return alike.

export function text(row: Row, column: string): string {
  const value = row[column];
  if (typeof value !== 'string') throw new CorruptRowError(column, 'text', value);
  return value;
}

export function textOrNull(row: Row, column: string): string | null {
  return row[column] === null ? null : text(row, column);
}

export function integer(row: Row, column: string): number {
  const value = row[column];
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw new CorruptRowError(column, 'an integer', value);
  return value;
}

export function integerOrNull(row: Row, column: string): number | null {
  return row[column] === null ? null : integer(row, column);
}

/** Checks that every element of a decoded list is a string. */
export function stringList(column: string, value: unknown): string[] {
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new CorruptRowError(column, 'a list of strings', value);
  }
  return value;
}

/** Checks that a decoded JSON value is an object (a JWK), not an array or a scalar. */
export function jsonObject(column: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CorruptRowError(column, 'a JSON object', value);
  }
  return { ...value };
}

export function oneOf<T extends string>(allowed: readonly T[], column: string, value: string): T {
  const found = allowed.find((candidate) => candidate === value);
  if (found === undefined) throw new CorruptRowError(column, allowed.join(' | '), value);
  return found;
}

/** An `amr` list column; null in rows from before it was kept. */
export function authMethodsOrNull(row: Row, column: string, read: ColumnReader): AuthMethod[] | null {
  return row[column] === null || row[column] === undefined ? null : read.strings(row, column).map((value) => oneOf(AUTH_METHODS, column, value));
}

export function signingAlg(row: Row, column: string): SigningAlgorithm {
  const value = text(row, column);
  if (value !== 'RS256' && value !== 'ES256') throw new CorruptRowError(column, 'RS256 or ES256', value);
  return value;
}

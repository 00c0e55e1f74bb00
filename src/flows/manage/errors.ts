/**
 * The one error the management operations throw. Each front end renders it its own way: the
 * `tessera` command as one line (exit 2 with the usage for `invalid`, else exit 1), the
 * admin API as an RFC 9457 problem with the status of its kind. A message names the input
 * it is about through `field`, so that each front end can call the field what its user typed:
 * `--redirect-uri` on the command line, `redirect_uris` in the API's JSON.
 */

export type ManageErrorKind =
  /** The input is malformed or breaks a registration rule: 400; the command's usage error. */
  | 'invalid'
  /** Well-formed, but cannot be used as it is (a password too short): 422. */
  | 'rejected'
  /** Names nothing that exists: 404. */
  | 'not_found'
  /** Clashes with what exists (a taken name, a client without a secret to rotate): 409. */
  | 'conflict'
  /** Changed since the caller read it (RFC 9110 §13.1.1 If-Match): 412. */
  | 'stale'
  /** The caller may not do this (give a role that allows more than they hold): 403. */
  | 'forbidden';

/** The HTTP status of each kind, as the admin API answers it and the console's pages too. */
export const MANAGE_STATUS: Readonly<Record<ManageErrorKind, number>> = {
  invalid: 400,
  rejected: 422,
  not_found: 404,
  conflict: 409,
  stale: 412,
  forbidden: 403,
};

/** An input's name in a message, rendered by the front end. */
export interface FieldRef {
  readonly field: string;
}

/** A reference to an input (its wire name, as in the admin API's JSON) inside a message. */
export function field(name: string): FieldRef {
  return { field: name };
}

type Part = string | FieldRef;

export class ManageError extends Error {
  readonly kind: ManageErrorKind;
  /** The first input the message names: the API's problem points at it. */
  readonly field: string | null;
  readonly #parts: readonly Part[];

  constructor(kind: ManageErrorKind, parts: readonly Part[]) {
    super(render(parts, (name) => name));
    this.name = 'ManageError';
    this.kind = kind;
    this.#parts = parts;
    this.field = parts.find((part): part is FieldRef => typeof part !== 'string')?.field ?? null;
  }

  /** The message with each field called what `label` says. */
  render(label: (field: string) => string): string {
    return render(this.#parts, label);
  }
}

function render(parts: readonly Part[], label: (field: string) => string): string {
  return parts.map((part) => (typeof part === 'string' ? part : label(part.field))).join('');
}

/**
 * A tagged template for messages: `problem('invalid')`${field('scope')}: unknown scope x``
 * keeps the field as a reference and everything else as text.
 */
export function problem(kind: ManageErrorKind) {
  return (strings: TemplateStringsArray, ...values: readonly (FieldRef | string | number)[]): ManageError => {
    const parts: Part[] = [];
    strings.forEach((text, i) => {
      if (text) parts.push(text);
      if (i < values.length) {
        const value = values[i]!;
        parts.push(typeof value === 'object' ? value : String(value));
      }
    });
    return new ManageError(kind, parts);
  };
}

export const invalid = problem('invalid');
export const rejected = problem('rejected');
export const notFound = problem('not_found');
export const conflict = problem('conflict');
export const forbidden = problem('forbidden');

/**
 * The database cannot answer now: PostgreSQL is unreachable, dropped the connection
 * mid-statement, is shutting down, or a statement ran past its time limit; or another
 * process held SQLite's write lock for the whole busy timeout. Nothing is wrong with the
 * request, and the same request may succeed once the database is back, so the HTTP layer
 * answers 503 `temporarily_unavailable` rather than 500. Whether a write that was under way
 * took effect is unknown; every store write is one statement, so it either did or did not.
 * `cause` is the driver's error, for the logs.
 */
export class StoreUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the database is not available: ${describe(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }
}

/** The driver error's code and message: what an operator needs, never a connection string. */
function describe(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  const message = cause.message || (cause instanceof AggregateError ? cause.errors.map(describe).join('; ') : cause.name);
  return typeof code === 'string' && !message.includes(code) ? `${code} ${message}` : message;
}

/** A unique constraint refused the write. */
export class DuplicateError extends Error {
  /** Which of the record's unique values is taken, where a store says (a user's `username` or `email`); null: its key. */
  readonly field: string | null;

  constructor(what: string, options?: ErrorOptions & { readonly field?: string }) {
    super(`${what} already exists`, options);
    this.name = 'DuplicateError';
    this.field = options?.field ?? null;
  }
}

/** A foreign key refused the write: it names a client, user or grant that does not exist. */
export class MissingReferenceError extends Error {
  constructor(options?: ErrorOptions) {
    super('the record names a client, user or grant that does not exist', options);
    this.name = 'MissingReferenceError';
  }
}

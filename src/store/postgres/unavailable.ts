import pg from 'pg';
import { StoreUnavailableError } from '../errors.ts';

/** Socket errors (Node's `code`): the server, or the way to it, is gone. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs (PostgreSQL manual, Appendix A) that say the server cannot serve now rather
 * than that the statement is wrong: 57014 query_canceled is what `statement_timeout`
 * raises; 57P01-57P03 a server shutting down or starting; 57P05 idle_session_timeout;
 * 25P03 idle_in_transaction_session_timeout.
 */
const UNAVAILABLE_STATES = new Set(['57014', '57P01', '57P02', '57P03', '57P05', '25P03']);
/** Classes 08 connection_exception and 53 insufficient_resources (too many connections, disk full). */
const UNAVAILABLE_CLASSES = new Set(['08', '53']);

/**
 * pg's own errors for a lost or never-made connection, which carry no code: a connection
 * ended by the server or the network ("Connection terminated unexpectedly", "… due to
 * connection timeout"), no connection free within `connectionTimeoutMillis`, no answer
 * within `query_timeout`, a client whose socket already failed.
 */
const DRIVER_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'timeout expired',
  'Query read timeout',
  'Client has encountered a connection error',
];

/** Whether `error`, from pg, means the database cannot answer now (see `StoreUnavailableError`). */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof pg.DatabaseError) {
    const state = error.code ?? '';
    return UNAVAILABLE_STATES.has(state) || UNAVAILABLE_CLASSES.has(state.slice(0, 2));
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // Connecting to a host name with several addresses fails with each of them.
  if (error instanceof AggregateError) return error.errors.some(isUnavailable);
  return DRIVER_MESSAGES.some((message) => error.message.startsWith(message));
}

/** `error` as the store reports it: a `StoreUnavailableError` when the database cannot answer now. */
export function storeError(error: unknown): unknown {
  return isUnavailable(error) ? new StoreUnavailableError(error) : error;
}

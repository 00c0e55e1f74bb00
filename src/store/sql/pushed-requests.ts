/**
 * Pushed authorization requests: their statements, rows and store.
 */

import { type ColumnReader, integer, integerOrNull, type Row, stringList, text, textOrNull } from '../rows.ts';
import type { PushedRequestRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

export function pushedRequestFromRow(row: Row, read: ColumnReader): PushedRequestRecord {
  const params = read.object(row, 'params');
  for (const [name, value] of Object.entries(params)) {
    if (typeof value !== 'string') stringList(`params.${name}`, value);
  }
  return {
    hash: text(row, 'hash'),
    clientId: text(row, 'client_id'),
    params: params as Record<string, string | string[]>,
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    claimedAt: integerOrNull(row, 'claimed_at'),
    browser: textOrNull(row, 'browser'),
    decidedAt: integerOrNull(row, 'decided_at'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function pushedRequestsStatements(d: Dialect) {
  return {
    insertPushedRequest: `
      INSERT INTO pushed_requests (hash, client_id, params, created_at, expires_at, claimed_at, browser, decided_at)
      VALUES (:hash, :clientId, :params, :createdAt, :expiresAt, :claimedAt, :browser, :decidedAt)`,
    // RFC 9126 §4: the request_uri is used once: the first browser to bring it claims it.
    claimPushedRequest: `
      UPDATE pushed_requests SET claimed_at = :now, browser = :browser, expires_at = :until
      WHERE hash = :hash AND client_id = :clientId AND claimed_at IS NULL AND expires_at > :now
      RETURNING *`,
    resumePushedRequest: `
      SELECT * FROM pushed_requests
      WHERE hash = :hash AND client_id = :clientId AND browser = :browser AND decided_at IS NULL AND expires_at > :now`,
    getPushedRequest: 'SELECT * FROM pushed_requests WHERE hash = :hash',
    decidePushedRequest: `
      UPDATE pushed_requests SET decided_at = :now
      WHERE hash = :hash AND client_id = :clientId AND browser = :browser AND decided_at IS NULL AND expires_at > :now
      RETURNING *`,
    purgePushedRequests: d.purge('pushed_requests', 'hash', 'expires_at < :before'),
  };
}

export function pushedRequestsStores(d: Dialect, q: Runner<keyof ReturnType<typeof pushedRequestsStatements>>): Pick<Stores, 'pushedRequests'> {
  const { read } = d;
  const { first, write } = queries(q);
  const pushedRequest = (row: Row) => pushedRequestFromRow(row, read);
  return {
    pushedRequests: {
      create: (record) => write('insertPushedRequest', { ...record, params: JSON.stringify(record.params) }),
      claim: (hash, clientId, browser, now, until) => first('claimPushedRequest', { hash, clientId, browser, now, until }, pushedRequest),
      resume: (hash, clientId, browser, now) => first('resumePushedRequest', { hash, clientId, browser, now }, pushedRequest),
      decide: (hash, clientId, browser, now) => first('decidePushedRequest', { hash, clientId, browser, now }, pushedRequest),
      find: (hash) => first('getPushedRequest', { hash }, pushedRequest),
    },
  };
}

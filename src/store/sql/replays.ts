/**
 * DPoP proofs and client assertions seen: their statements and stores.
 */

import type { Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

/**
 * Records `:key` in `table` until `:expiresAt`, changing a row only for the first caller:
 * RFC 9449 §11.1 (a DPoP proof, its key and jti) and RFC 7523 §3 (a client assertion's jti)
 * accept each once. A record that expired and is not yet purged gives way in the same
 * statement.
 */
function acceptOnce(table: string, key: string): string {
  return `
      INSERT INTO ${table} (${key}, expires_at) VALUES (:key, :expiresAt)
      ON CONFLICT (${key}) DO UPDATE SET expires_at = excluded.expires_at
      WHERE ${table}.expires_at <= :now`;
}

/** The statements, by name, in `d`'s SQL. */
export function replaysStatements(d: Dialect) {
  return {
    useDpopProof: acceptOnce('dpop_proofs', 'key'),
    useClientAssertion: acceptOnce('client_assertions', 'jti_hash'),
    purgeDpopProofs: d.purge('dpop_proofs', 'key', 'expires_at < :before'),
    purgeClientAssertions: d.purge('client_assertions', 'jti_hash', 'expires_at < :before'),
  };
}

export function replaysStores(_d: Dialect, q: Runner<keyof ReturnType<typeof replaysStatements>>): Pick<Stores, 'dpopProofs' | 'clientAssertions'> {
  const { changedAny } = queries(q);
  return {
    dpopProofs: {
      use: (key, expiresAt, now) => changedAny('useDpopProof', { key, expiresAt, now }),
    },
    clientAssertions: {
      use: (jtiHash, expiresAt, now) => changedAny('useClientAssertion', { key: jtiHash, expiresAt, now }),
    },
  };
}

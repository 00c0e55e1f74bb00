/**
 * Signing keys: their statements, rows and store.
 */

import { type ColumnReader, integer, integerOrNull, type Row, signingAlg, text } from '../rows.ts';
import type { SigningKeyRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

export function signingKeyFromRow(row: Row, read: ColumnReader): SigningKeyRecord {
  return {
    kid: text(row, 'kid'),
    alg: signingAlg(row, 'alg'),
    privateJwk: read.object(row, 'private_jwk'),
    publicJwk: read.object(row, 'public_jwk'),
    createdAt: integer(row, 'created_at'),
    activatesAt: integer(row, 'activates_at'),
    retiresAt: integerOrNull(row, 'retires_at'),
    expiresAt: integerOrNull(row, 'expires_at'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function keysStatements(d: Dialect) {
  return {
    insertKey: `
      INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, activates_at, retires_at, expires_at)
      VALUES (:kid, :alg, :privateJwk, :publicJwk, :createdAt, :activatesAt, :retiresAt, :expiresAt)`,
    listPublishedKeys: `
      SELECT * FROM signing_keys WHERE expires_at IS NULL OR expires_at > :now
      ORDER BY created_at, kid`,
    scheduleKey: 'UPDATE signing_keys SET retires_at = :retiresAt, expires_at = :expiresAt WHERE kid = :kid',
    listKeys: 'SELECT * FROM signing_keys ORDER BY created_at, kid',
    setKeyPrivateJwk: 'UPDATE signing_keys SET private_jwk = :privateJwk WHERE kid = :kid',
    // A key left the JWKS at expires_at, after the last token it signed had expired.
    purgeKeys: d.purge('signing_keys', 'kid', 'expires_at < :before'),
  };
}

export function keysStores(d: Dialect, q: Runner<keyof ReturnType<typeof keysStatements>>): Pick<Stores, 'keys'> {
  const { read } = d;
  const { every, write } = queries(q);
  return {
    keys: {
      add: (key) => write('insertKey', { ...key, privateJwk: JSON.stringify(key.privateJwk), publicJwk: JSON.stringify(key.publicJwk) }),
      listPublished: (now) => every('listPublishedKeys', { now }, (row) => signingKeyFromRow(row, read)),
      schedule: (kid, retiresAt, expiresAt) => write('scheduleKey', { kid, retiresAt, expiresAt }),
      list: () => every('listKeys', {}, (row) => signingKeyFromRow(row, read)),
      setPrivateJwk: (kid, privateJwk) => write('setKeyPrivateJwk', { kid, privateJwk: JSON.stringify(privateJwk) }),
    },
  };
}

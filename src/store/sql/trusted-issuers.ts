/** Trusted issuers (`../trusted-issuers.ts`): statements written once, and the store over a driver's `Runner`. */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import { DuplicateError } from '../errors.ts';
import type { TrustedIssuerRecord } from '../trusted-issuers.ts';
import type { Stores } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';

/** The statements, by name, in `d`'s SQL. */
export function trustedIssuersStatements(_d: Dialect) {
  return {
    insertTrustedIssuer: `
      INSERT INTO trusted_issuers (issuer, jwks_uri, jwks, added_by_owner, created_at)
      VALUES (:issuer, :jwksUri, :jwks, :addedByOwner, :createdAt)
      ON CONFLICT DO NOTHING`,
    getTrustedIssuer: 'SELECT * FROM trusted_issuers WHERE issuer = :issuer',
    listTrustedIssuers: 'SELECT * FROM trusted_issuers ORDER BY created_at, issuer',
    removeTrustedIssuer: 'DELETE FROM trusted_issuers WHERE issuer = :issuer',
  };
}

function trustedIssuerFromRow(row: Row, read: ColumnReader): TrustedIssuerRecord {
  return {
    issuer: rows.text(row, 'issuer'),
    jwksUri: rows.textOrNull(row, 'jwks_uri'),
    jwks: row['jwks'] === null ? null : read.object(row, 'jwks'),
    addedByOwner: read.boolean(row, 'added_by_owner'),
    createdAt: rows.integer(row, 'created_at'),
  };
}

export function trustedIssuersStores(d: Dialect, q: Runner<keyof ReturnType<typeof trustedIssuersStatements>>): Pick<Stores, 'trustedIssuers'> {
  const { read } = d;
  return {
    trustedIssuers: {
      async create(record) {
        const inserted = await q.changed('insertTrustedIssuer', {
          issuer: record.issuer,
          jwksUri: record.jwksUri,
          jwks: record.jwks === null ? null : JSON.stringify(record.jwks),
          addedByOwner: d.flag(record.addedByOwner),
          createdAt: record.createdAt,
        });
        if (inserted === 0) throw new DuplicateError(`trusted issuer ${record.issuer}`);
      },
      get: async (issuer) => {
        const row = await q.one('getTrustedIssuer', { issuer });
        return row === undefined ? null : trustedIssuerFromRow(row, read);
      },
      list: async () => (await q.all('listTrustedIssuers')).map((row) => trustedIssuerFromRow(row, read)),
      remove: async (issuer) => (await q.changed('removeTrustedIssuer', { issuer })) > 0,
    },
  };
}

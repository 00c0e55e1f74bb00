/**
 * Registration access tokens, initial access tokens and cached metadata documents: their
 * statements, rows and stores.
 */

import { integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { InitialAccessTokenRecord, MetadataDocumentRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

function initialAccessTokenFromRow(row: Row): InitialAccessTokenRecord {
  return {
    id: text(row, 'id'),
    tokenHash: text(row, 'token_hash'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    maxUses: integerOrNull(row, 'max_uses'),
    uses: integer(row, 'uses'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function registrationsStatements(d: Dialect) {
  return {
    setRegistrationToken: `
      INSERT INTO registration_tokens (client_id, token_hash, issued_at) VALUES (:clientId, :tokenHash, :now)
      ON CONFLICT (client_id) DO UPDATE SET token_hash = excluded.token_hash, issued_at = excluded.issued_at`,
    getRegistrationToken: 'SELECT token_hash FROM registration_tokens WHERE client_id = :clientId',
    rotateRegistrationToken: `
      UPDATE registration_tokens SET token_hash = :nextHash, issued_at = :now
      WHERE client_id = :clientId AND token_hash = :presentedHash`,
    insertInitialAccessToken: `
      INSERT INTO initial_access_tokens (id, token_hash, created_at, expires_at, max_uses, uses)
      VALUES (:id, :tokenHash, :createdAt, :expiresAt, :maxUses, :uses)`,
    useInitialAccessToken: `
      UPDATE initial_access_tokens SET uses = uses + 1
      WHERE token_hash = :tokenHash AND expires_at > :now AND (max_uses IS NULL OR uses < max_uses)
      RETURNING *`,
    refundInitialAccessToken: 'UPDATE initial_access_tokens SET uses = uses - 1 WHERE id = :id AND uses > 0',
    listInitialAccessTokens: 'SELECT * FROM initial_access_tokens WHERE expires_at > :now ORDER BY created_at DESC, id',
    removeInitialAccessToken: 'DELETE FROM initial_access_tokens WHERE id = :id',
    purgeInitialAccessTokens: d.purge('initial_access_tokens', 'id', 'expires_at < :before'),
    getMetadataDocument: 'SELECT * FROM client_metadata_documents WHERE url = :url AND expires_at > :now',
    putMetadataDocument: `
      INSERT INTO client_metadata_documents (url, document, problem, fetched_at, expires_at)
      VALUES (:url, :document, :problem, :fetchedAt, :expiresAt)
      ON CONFLICT (url) DO UPDATE SET document = excluded.document, problem = excluded.problem,
        fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
    purgeMetadataDocuments: d.purge('client_metadata_documents', 'url', 'expires_at < :before'),
  };
}

export function registrationsStores(
  d: Dialect,
  q: Runner<keyof ReturnType<typeof registrationsStatements>>,
): Pick<Stores, 'registrationTokens' | 'initialAccessTokens' | 'metadataDocuments'> {
  const { first, every, changedAny, write } = queries(q);
  const metadataDocument = (row: Row): MetadataDocumentRecord => ({
    url: text(row, 'url'),
    document: row['document'] == null ? null : d.read.object(row, 'document'),
    problem: textOrNull(row, 'problem'),
    fetchedAt: integer(row, 'fetched_at'),
    expiresAt: integer(row, 'expires_at'),
  });
  return {
    registrationTokens: {
      set: (clientId, tokenHash, now) => write('setRegistrationToken', { clientId, tokenHash, now }),
      get: (clientId) => first('getRegistrationToken', { clientId }, (row) => text(row, 'token_hash')),
      rotate: (clientId, presentedHash, nextHash, now) => changedAny('rotateRegistrationToken', { clientId, presentedHash, nextHash, now }),
    },
    initialAccessTokens: {
      create: (token) => write('insertInitialAccessToken', { ...token }),
      use: (tokenHash, now) => first('useInitialAccessToken', { tokenHash, now }, initialAccessTokenFromRow),
      refund: (id) => write('refundInitialAccessToken', { id }),
      list: (now) => every('listInitialAccessTokens', { now }, initialAccessTokenFromRow),
      remove: (id) => changedAny('removeInitialAccessToken', { id }),
    },
    metadataDocuments: {
      get: (url, now) => first('getMetadataDocument', { url, now }, metadataDocument),
      put: (record) => write('putMetadataDocument', { ...record, document: record.document === null ? null : JSON.stringify(record.document) }),
    },
  };
}

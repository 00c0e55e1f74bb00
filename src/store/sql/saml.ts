/**
 * SAML service providers and the AuthnRequest ids seen (`../saml.ts`): their statements,
 * written once, and their stores over a driver's `Runner`.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import { DuplicateError, type Stores } from '../types.ts';
import { acsIndexesByPosition, NAME_ID_FORMATS, SLO_BINDINGS, type SamlServiceProviderRecord, type SamlSessionSpRecord } from '../saml.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

/** The statements, by name, in `d`'s SQL. */
export function samlStatements(d: Dialect) {
  return {
    insertSamlServiceProvider: `
      INSERT INTO saml_service_providers (id, entity_id, name, acs_urls, acs_indexes, slo_url, slo_binding, name_id_format, attributes, want_signed_requests, sign_response, idp_initiated, certificate, encryption_certificate, name_id_salt, created_at, updated_at)
      VALUES (:id, :entityId, :name, :acsUrls, :acsIndexes, :sloUrl, :sloBinding, :nameIdFormat, :attributes, :wantSignedRequests, :signResponse, :idpInitiated, :certificate, :encryptionCertificate, :nameIdSalt, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getSamlServiceProvider: 'SELECT * FROM saml_service_providers WHERE id = :id',
    samlServiceProviderByEntityId: 'SELECT * FROM saml_service_providers WHERE entity_id = :entityId',
    listSamlServiceProviders: 'SELECT * FROM saml_service_providers ORDER BY created_at, id',
    updateSamlServiceProvider: `
      UPDATE saml_service_providers SET name = :name, acs_urls = :acsUrls, acs_indexes = :acsIndexes, slo_url = :sloUrl, slo_binding = :sloBinding, name_id_format = :nameIdFormat,
        attributes = :attributes, want_signed_requests = :wantSignedRequests, sign_response = :signResponse, idp_initiated = :idpInitiated, certificate = :certificate, encryption_certificate = :encryptionCertificate, updated_at = :updatedAt
      WHERE id = :id`,
    removeSamlServiceProvider: 'DELETE FROM saml_service_providers WHERE id = :id',
    // As the DPoP proofs and client assertions (replays.ts): the first caller only; an
    // expired record not yet purged gives way in the same statement.
    useSamlRequest: `
      INSERT INTO saml_requests (key, expires_at) VALUES (:key, :expiresAt)
      ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
      WHERE saml_requests.expires_at <= :now`,
    purgeSamlRequests: d.purge('saml_requests', 'key', 'expires_at < :before'),
    joinSamlSession: `
      INSERT INTO saml_session_sps (sid, sp_id, name_id, name_id_format, session_index, expires_at)
      VALUES (:sid, :spId, :nameId, :nameIdFormat, :sessionIndex, :expiresAt)
      ON CONFLICT (sid, sp_id) DO UPDATE SET name_id = excluded.name_id, name_id_format = excluded.name_id_format,
        session_index = excluded.session_index, expires_at = excluded.expires_at`,
    // Sent once: whoever deletes a row is the one who sends its LogoutRequest.
    takeSamlSessionSps: 'DELETE FROM saml_session_sps WHERE sid = :sid RETURNING *',
    // By session: a sid's SPs go once its last sign-in has expired (the same person signing in
    // again goes on with the sid, and the SPs joined under it then still take part in its logout).
    purgeSamlSessionSps: d.purge(
      'saml_session_sps',
      'sid',
      'expires_at < :before AND NOT EXISTS (SELECT 1 FROM saml_session_sps later WHERE later.sid = saml_session_sps.sid AND later.expires_at >= :before)',
    ),
    saveSamlLogout: 'INSERT INTO saml_logouts (request_hash, chain, expires_at) VALUES (:requestHash, :chain, :expiresAt)',
    takeSamlLogout: 'DELETE FROM saml_logouts WHERE request_hash = :requestHash AND expires_at > :now RETURNING chain',
    purgeSamlLogouts: d.purge('saml_logouts', 'request_hash', 'expires_at < :before'),
  };
}

function spFromRow(row: Row, read: ColumnReader): SamlServiceProviderRecord {
  const attributes = read.object(row, 'attributes');
  const acsUrls = read.strings(row, 'acs_urls');
  return {
    id: rows.text(row, 'id'),
    entityId: rows.text(row, 'entity_id'),
    name: rows.textOrNull(row, 'name'),
    acsUrls,
    // Null: registered before its metadata's indexes were kept (migration 53), named by position as then.
    acsIndexes:
      row['acs_indexes'] === null || row['acs_indexes'] === undefined
        ? acsIndexesByPosition(acsUrls)
        : Object.fromEntries(Object.entries(read.object(row, 'acs_indexes')).map(([index, url]) => [index, String(url)])),
    sloUrl: rows.textOrNull(row, 'slo_url'),
    sloBinding: rows.oneOf(SLO_BINDINGS, 'slo_binding', rows.text(row, 'slo_binding')),
    nameIdFormat: rows.oneOf(NAME_ID_FORMATS, 'name_id_format', rows.text(row, 'name_id_format')),
    attributes: Object.fromEntries(Object.entries(attributes).map(([name, claim]) => [name, String(claim)])),
    wantSignedRequests: read.boolean(row, 'want_signed_requests'),
    signResponse: read.boolean(row, 'sign_response'),
    idpInitiated: read.boolean(row, 'idp_initiated'),
    certificate: rows.textOrNull(row, 'certificate'),
    encryptionCertificate: rows.textOrNull(row, 'encryption_certificate'),
    nameIdSalt: rows.text(row, 'name_id_salt'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

function sessionSpFromRow(row: Row): SamlSessionSpRecord {
  return {
    sid: rows.text(row, 'sid'),
    spId: rows.text(row, 'sp_id'),
    nameId: rows.text(row, 'name_id'),
    nameIdFormat: rows.text(row, 'name_id_format'),
    sessionIndex: rows.text(row, 'session_index'),
    expiresAt: rows.integer(row, 'expires_at'),
  };
}

export function samlStores(
  d: Dialect,
  q: Runner<keyof ReturnType<typeof samlStatements>>,
): Pick<Stores, 'samlServiceProviders' | 'samlRequests' | 'samlSessionSps' | 'samlLogouts'> {
  const { read } = d;
  const { first, every, changedAny, write } = queries(q);
  const params = (sp: SamlServiceProviderRecord) => ({
    id: sp.id,
    entityId: sp.entityId,
    name: sp.name,
    acsUrls: d.list(sp.acsUrls),
    acsIndexes: JSON.stringify(sp.acsIndexes),
    sloUrl: sp.sloUrl,
    sloBinding: sp.sloBinding,
    nameIdFormat: sp.nameIdFormat,
    attributes: JSON.stringify(sp.attributes),
    wantSignedRequests: d.flag(sp.wantSignedRequests),
    signResponse: d.flag(sp.signResponse),
    idpInitiated: d.flag(sp.idpInitiated),
    certificate: sp.certificate,
    encryptionCertificate: sp.encryptionCertificate,
    updatedAt: sp.updatedAt,
  });
  const record = (row: Row) => spFromRow(row, read);
  return {
    samlServiceProviders: {
      async create(sp) {
        if ((await q.changed('insertSamlServiceProvider', { ...params(sp), createdAt: sp.createdAt, nameIdSalt: sp.nameIdSalt })) === 0)
          throw new DuplicateError(`SAML service provider ${sp.entityId}`);
      },
      get: (id) => first('getSamlServiceProvider', { id }, record),
      byEntityId: (entityId) => first('samlServiceProviderByEntityId', { entityId }, record),
      list: () => every('listSamlServiceProviders', {}, record),
      update: (sp) => changedAny('updateSamlServiceProvider', params(sp)),
      remove: (id) => changedAny('removeSamlServiceProvider', { id }),
    },
    samlRequests: {
      use: (key, expiresAt, now) => changedAny('useSamlRequest', { key, expiresAt, now }),
    },
    samlSessionSps: {
      join: (record) => write('joinSamlSession', { ...record }),
      take: (sid) => every('takeSamlSessionSps', { sid }, sessionSpFromRow),
    },
    samlLogouts: {
      save: (requestHash, chain, expiresAt) => write('saveSamlLogout', { requestHash, chain: JSON.stringify(chain), expiresAt }),
      take: (requestHash, now) => first('takeSamlLogout', { requestHash, now }, (row) => read.object(row, 'chain')),
    },
  };
}

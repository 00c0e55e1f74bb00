/**
 * SAML service providers and the AuthnRequest ids seen (`../saml.ts`): their statements,
 * written once, and their stores over a driver's `Runner`.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import { DuplicateError, type Stores } from '../types.ts';
import { NAME_ID_FORMATS, type SamlServiceProviderRecord } from '../saml.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

/** The statements, by name, in `d`'s SQL. */
export function samlStatements(d: Dialect) {
  return {
    insertSamlServiceProvider: `
      INSERT INTO saml_service_providers (id, entity_id, name, acs_urls, slo_url, name_id_format, attributes, want_signed_requests, sign_response, certificate, name_id_salt, created_at, updated_at)
      VALUES (:id, :entityId, :name, :acsUrls, :sloUrl, :nameIdFormat, :attributes, :wantSignedRequests, :signResponse, :certificate, :nameIdSalt, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getSamlServiceProvider: 'SELECT * FROM saml_service_providers WHERE id = :id',
    samlServiceProviderByEntityId: 'SELECT * FROM saml_service_providers WHERE entity_id = :entityId',
    listSamlServiceProviders: 'SELECT * FROM saml_service_providers ORDER BY created_at, id',
    updateSamlServiceProvider: `
      UPDATE saml_service_providers SET name = :name, acs_urls = :acsUrls, slo_url = :sloUrl, name_id_format = :nameIdFormat,
        attributes = :attributes, want_signed_requests = :wantSignedRequests, sign_response = :signResponse, certificate = :certificate, updated_at = :updatedAt
      WHERE id = :id`,
    removeSamlServiceProvider: 'DELETE FROM saml_service_providers WHERE id = :id',
    // As the DPoP proofs and client assertions (replays.ts): the first caller only; an
    // expired record not yet purged gives way in the same statement.
    useSamlRequest: `
      INSERT INTO saml_requests (key, expires_at) VALUES (:key, :expiresAt)
      ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
      WHERE saml_requests.expires_at <= :now`,
    purgeSamlRequests: d.purge('saml_requests', 'key', 'expires_at < :before'),
  };
}

function spFromRow(row: Row, read: ColumnReader): SamlServiceProviderRecord {
  const attributes = read.object(row, 'attributes');
  return {
    id: rows.text(row, 'id'),
    entityId: rows.text(row, 'entity_id'),
    name: rows.textOrNull(row, 'name'),
    acsUrls: read.strings(row, 'acs_urls'),
    sloUrl: rows.textOrNull(row, 'slo_url'),
    nameIdFormat: rows.oneOf(NAME_ID_FORMATS, 'name_id_format', rows.text(row, 'name_id_format')),
    attributes: Object.fromEntries(Object.entries(attributes).map(([name, claim]) => [name, String(claim)])),
    wantSignedRequests: read.boolean(row, 'want_signed_requests'),
    signResponse: read.boolean(row, 'sign_response'),
    certificate: rows.textOrNull(row, 'certificate'),
    nameIdSalt: rows.text(row, 'name_id_salt'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

export function samlStores(d: Dialect, q: Runner<keyof ReturnType<typeof samlStatements>>): Pick<Stores, 'samlServiceProviders' | 'samlRequests'> {
  const { read } = d;
  const { first, every, changedAny } = queries(q);
  const params = (sp: SamlServiceProviderRecord) => ({
    id: sp.id,
    entityId: sp.entityId,
    name: sp.name,
    acsUrls: d.list(sp.acsUrls),
    sloUrl: sp.sloUrl,
    nameIdFormat: sp.nameIdFormat,
    attributes: JSON.stringify(sp.attributes),
    wantSignedRequests: d.flag(sp.wantSignedRequests),
    signResponse: d.flag(sp.signResponse),
    certificate: sp.certificate,
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
  };
}

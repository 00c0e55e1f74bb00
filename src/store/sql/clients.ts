/**
 * Registered clients: their statements, rows and store.
 */

import {
  CLIENT_AUTH_METHODS,
  GRANT_AUTHORIZATION_CODE,
  GRANT_CLIENT_CREDENTIALS,
  GRANT_DEVICE_CODE,
  GRANT_JWT_BEARER,
  GRANT_REFRESH_TOKEN,
  GRANT_TOKEN_EXCHANGE,
  type GrantType,
  REQUEST_OBJECT_ALGORITHMS,
} from '../../core/protocol.ts';
import { type ColumnReader, integer, integerOrNull, oneOf, type Row, text, textOrNull } from '../rows.ts';
import { type ClientChanges, type ClientRecord, DuplicateError, type SelfRegistration, type Stores } from '../types.ts';
import { type Dialect, type Params, queries, type Runner } from './dialect.ts';

const grantTypes: readonly GrantType[] = [
  GRANT_AUTHORIZATION_CODE,
  GRANT_DEVICE_CODE,
  GRANT_REFRESH_TOKEN,
  GRANT_CLIENT_CREDENTIALS,
  GRANT_TOKEN_EXCHANGE,
  GRANT_JWT_BEARER,
];
const pkceColumn = ['required', 'optional'] as const;

/** Migration 14: `optional-without-nonce` is stored as `optional` with `nonce_required` false. */
function clientPkce(column: (typeof pkceColumn)[number], nonceRequired: boolean): ClientRecord['pkce'] {
  if (column === 'required') return 'required';
  return nonceRequired ? 'optional' : 'optional-without-nonce';
}

export function clientFromRow(row: Row, read: ColumnReader): ClientRecord {
  return {
    id: text(row, 'id'),
    name: text(row, 'name'),
    secretHash: textOrNull(row, 'secret_hash'),
    redirectUris: read.strings(row, 'redirect_uris'),
    scopes: read.strings(row, 'scopes'),
    grantTypes: read.strings(row, 'grant_types').map((value) => oneOf(grantTypes, 'grant_types', value)),
    webOrigins: read.strings(row, 'web_origins'),
    requireDpop: read.boolean(row, 'require_dpop'),
    requirePar: read.boolean(row, 'require_par'),
    version: integer(row, 'version'),
    tokensRevokedAt: integerOrNull(row, 'tokens_revoked_at'),
    deviceNetworks: read.strings(row, 'device_networks'),
    createdAt: integer(row, 'created_at'),
    authMethod: oneOf(CLIENT_AUTH_METHODS, 'auth_method', text(row, 'auth_method')),
    previousSecretHash: textOrNull(row, 'previous_secret_hash'),
    previousSecretExpiresAt: integerOrNull(row, 'previous_secret_expires_at'),
    jwksUri: textOrNull(row, 'jwks_uri'),
    jwks: row['jwks'] === null ? null : read.object(row, 'jwks'),
    pkce: clientPkce(oneOf(pkceColumn, 'pkce', text(row, 'pkce')), read.boolean(row, 'nonce_required')),
    // Absent when null, as a record made before the setting existed.
    ...(row['request_object_signing_alg'] == null
      ? {}
      : { requestObjectSigningAlg: oneOf(REQUEST_OBJECT_ALGORITHMS, 'request_object_signing_alg', text(row, 'request_object_signing_alg')) }),
    // Absent when false, as a record made before the setting existed.
    ...(read.boolean(row, 'require_phishing_resistant') ? { requirePhishingResistant: true } : {}),
    firstParty: read.boolean(row, 'first_party'),
    postLogoutRedirectUris: read.strings(row, 'post_logout_redirect_uris'),
    backchannelLogoutUri: textOrNull(row, 'backchannel_logout_uri'),
    // Absent for the operator's clients and when not verified, as records made before them.
    ...(row['registered_by'] == null || row['registered_by'] === 'operator'
      ? {}
      : { registeredBy: oneOf(selfRegistrations, 'registered_by', text(row, 'registered_by')) }),
    ...(row['verified'] != null && read.boolean(row, 'verified') ? { verified: true } : {}),
    ...(row['used_at'] == null ? {} : { usedAt: integer(row, 'used_at') }),
    // Absent when empty, as a record made before token exchange.
    ...(row['exchange_audiences'] == null || read.strings(row, 'exchange_audiences').length === 0
      ? {}
      : { exchangeAudiences: read.strings(row, 'exchange_audiences') }),
  };
}

const selfRegistrations: readonly SelfRegistration[] = ['dynamic', 'metadata_document'];

/** The statements, by name, in `d`'s SQL. */
export function clientsStatements(d: Dialect) {
  return {
    insertClient: `
      INSERT INTO clients (id, name, secret_hash, redirect_uris, scopes, grant_types, web_origins, created_at, require_phishing_resistant,
                           auth_method, previous_secret_hash, previous_secret_expires_at, jwks_uri, jwks, pkce,
                           first_party, post_logout_redirect_uris, backchannel_logout_uri, require_dpop, require_par, device_networks,
                           request_object_signing_alg, nonce_required, registered_by, verified, exchange_audiences)
      VALUES (:id, :name, :secretHash, :redirectUris, :scopes, :grantTypes, :webOrigins, :createdAt, :requirePhishingResistant,
              :authMethod, :previousSecretHash, :previousSecretExpiresAt, :jwksUri, :jwks, :pkce,
              :firstParty, :postLogoutRedirectUris, :backchannelLogoutUri, :requireDpop, :requirePar, :deviceNetworks,
              :requestObjectSigningAlg, :nonceRequired, :registeredBy, :verified, :exchangeAudiences)
      ON CONFLICT DO NOTHING`,
    updateClient: `
      UPDATE clients SET name = :name, secret_hash = :secretHash, redirect_uris = :redirectUris, scopes = :scopes,
        grant_types = :grantTypes, web_origins = :webOrigins, auth_method = :authMethod,
        previous_secret_hash = :previousSecretHash, previous_secret_expires_at = :previousSecretExpiresAt,
        jwks_uri = :jwksUri, jwks = :jwks, pkce = :pkce, require_phishing_resistant = :requirePhishingResistant,
        first_party = :firstParty, post_logout_redirect_uris = :postLogoutRedirectUris, backchannel_logout_uri = :backchannelLogoutUri,
        require_dpop = :requireDpop, require_par = :requirePar,
        device_networks = :deviceNetworks, request_object_signing_alg = :requestObjectSigningAlg, nonce_required = :nonceRequired,
        verified = :verified, exchange_audiences = :exchangeAudiences, version = version + 1
      WHERE id = :id AND (${d.bigint(':expectedVersion')} IS NULL OR version = :expectedVersion)
      RETURNING *`,
    revokeClientTokens: 'UPDATE clients SET tokens_revoked_at = :now WHERE id = :id',
    markClientUsed: "UPDATE clients SET used_at = :now WHERE id = :id AND used_at IS NULL AND registered_by <> 'operator'",
    // A self-registered app nobody approved and that had no token, made before the
    // cutoff. Its grants are looked for too, so that an approval whose mark is being written
    // (in the same transaction as its grant) is never raced.
    purgeUnusedClients: d.purge(
      'clients',
      'id',
      "used_at IS NULL AND registered_by <> 'operator' AND created_at < :before AND NOT EXISTS (SELECT 1 FROM grants WHERE grants.client_id = clients.id)",
    ),
    // Every SET expression reads the row as it was: the current secret becomes the previous one.
    rotateClientSecret: `
      UPDATE clients SET previous_secret_hash = secret_hash, previous_secret_expires_at = :previousExpiresAt,
        secret_hash = :secretHash
      WHERE id = :id AND secret_hash IS NOT NULL
      RETURNING *`,
    getClient: 'SELECT * FROM clients WHERE id = :id',
    listClients: 'SELECT * FROM clients ORDER BY created_at, id',
    listOperatorClients: "SELECT * FROM clients WHERE registered_by = 'operator' ORDER BY created_at, id",
    // Codes, device records and grants go with it: ON DELETE CASCADE.
    removeClient: 'DELETE FROM clients WHERE id = :id',
  };
}

export function clientsStores(d: Dialect, q: Runner<keyof ReturnType<typeof clientsStatements>>): Pick<Stores, 'clients'> {
  const { read, list, flag } = d;
  const { first, every, changedAny } = queries(q);
  const client = (row: Row) => clientFromRow(row, read);
  const clientFields = (record: ClientChanges): Params => ({
    name: record.name,
    secretHash: record.secretHash,
    redirectUris: list(record.redirectUris),
    scopes: list(record.scopes),
    grantTypes: list(record.grantTypes),
    webOrigins: list(record.webOrigins),
    deviceNetworks: list(record.deviceNetworks),
    authMethod: record.authMethod,
    previousSecretHash: record.previousSecretHash,
    previousSecretExpiresAt: record.previousSecretExpiresAt,
    jwksUri: record.jwksUri,
    jwks: record.jwks === null ? null : JSON.stringify(record.jwks),
    // See migration 14: the third policy is `optional` without a required nonce.
    pkce: record.pkce === 'required' ? 'required' : 'optional',
    nonceRequired: flag(record.pkce !== 'optional-without-nonce'),
    requestObjectSigningAlg: record.requestObjectSigningAlg ?? null,
    requirePhishingResistant: flag(record.requirePhishingResistant === true),
    firstParty: flag(record.firstParty),
    postLogoutRedirectUris: list(record.postLogoutRedirectUris),
    backchannelLogoutUri: record.backchannelLogoutUri,
    requireDpop: flag(record.requireDpop),
    requirePar: flag(record.requirePar),
    verified: flag(record.verified === true),
    exchangeAudiences: list(record.exchangeAudiences ?? []),
  });
  return {
    clients: {
      async create(record) {
        const inserted = await changedAny('insertClient', {
          id: record.id,
          createdAt: record.createdAt,
          registeredBy: record.registeredBy ?? 'operator',
          ...clientFields({
            ...record,
            authMethod: record.authMethod ?? (record.secretHash === null ? 'none' : 'client_secret_basic'),
            previousSecretHash: record.previousSecretHash ?? null,
            previousSecretExpiresAt: record.previousSecretExpiresAt ?? null,
            jwksUri: record.jwksUri ?? null,
            jwks: record.jwks ?? null,
            pkce: record.pkce ?? 'required',
            firstParty: record.firstParty ?? false,
            postLogoutRedirectUris: record.postLogoutRedirectUris ?? [],
            backchannelLogoutUri: record.backchannelLogoutUri ?? null,
            requireDpop: record.requireDpop ?? false,
            requirePar: record.requirePar ?? false,
            deviceNetworks: record.deviceNetworks ?? [],
          }),
        });
        if (!inserted) throw new DuplicateError(`client ${record.id}`);
      },
      get: (id) => first('getClient', { id }, client),
      list: () => every('listClients', {}, client),
      listOperatorClients: () => every('listOperatorClients', {}, client),
      update: (id, changes, expectedVersion) => first('updateClient', { id, ...clientFields(changes), expectedVersion: expectedVersion ?? null }, client),
      revokeTokens: (id, now) => changedAny('revokeClientTokens', { id, now }),
      async markUsed(id, now) {
        await changedAny('markClientUsed', { id, now });
      },
      rotateSecret: (id, secretHash, previousExpiresAt) => first('rotateClientSecret', { id, secretHash, previousExpiresAt }, client),
      remove: (id) => changedAny('removeClient', { id }),
    },
  };
}

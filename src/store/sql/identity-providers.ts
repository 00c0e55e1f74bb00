/**
 * Upstream identity providers, linked identities and sign-ins under way upstream
 * (`../identity-providers.ts`): their statements, written once, and their stores over a
 * driver's `Runner`, beside `sqlStores`.
 */

import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import { PROVIDER_KINDS, type IdentityProviderRecord, type LinkedIdentityRecord, type ProviderKind, type UpstreamLoginRecord } from '../identity-providers.ts';
import { DuplicateError, type Stores } from '../types.ts';
import { userFromRow } from './users.ts';
import type { Dialect, Runner } from './dialect.ts';

/** The statements, by name, in `d`'s SQL. */
export function identityProvidersStatements(d: Dialect) {
  return {
    insertIdentityProvider: `
      INSERT INTO identity_providers (id, kind, name, position, settings, secret, created_at, updated_at)
      VALUES (:id, :kind, :name, :position, :settings, :secret, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getIdentityProvider: 'SELECT * FROM identity_providers WHERE id = :id',
    listIdentityProviders: 'SELECT * FROM identity_providers ORDER BY position, id',
    updateIdentityProvider: `
      UPDATE identity_providers SET name = :name, position = :position, settings = :settings, secret = :secret, updated_at = :updatedAt
      WHERE id = :id`,
    // Its links and sign-ins under way go with it: ON DELETE CASCADE.
    removeIdentityProvider: 'DELETE FROM identity_providers WHERE id = :id',

    insertLinkedIdentity: `
      INSERT INTO linked_identities (provider_id, subject, user_id, label, groups, created_at, last_used_at)
      VALUES (:providerId, :subject, :userId, :label, :groups, :createdAt, :lastUsedAt)
      ON CONFLICT DO NOTHING`,
    getLinkedIdentity: 'SELECT * FROM linked_identities WHERE provider_id = :providerId AND subject = :subject',
    listLinkedIdentitiesForUser: 'SELECT * FROM linked_identities WHERE user_id = :userId ORDER BY created_at, provider_id, subject',
    anyLinkedIdentityForProvider: 'SELECT 1 AS linked FROM linked_identities WHERE provider_id = :providerId LIMIT 1',
    recordLinkedIdentityUse: `
      UPDATE linked_identities SET label = :label, groups = :groups, last_used_at = :now
      WHERE provider_id = :providerId AND subject = :subject`,
    usersWithEmail: 'SELECT * FROM users WHERE lower(email) = lower(:email) ORDER BY created_at, id',
    removeLinkedIdentity: 'DELETE FROM linked_identities WHERE provider_id = :providerId AND subject = :subject AND user_id = :userId',
    removeLinkedIdentitiesForUser: 'DELETE FROM linked_identities WHERE user_id = :userId',

    insertUpstreamLogin: `
      INSERT INTO upstream_logins (state_hash, provider_id, nonce, code_verifier, return_to, client_id, max_age, created_at, expires_at)
      VALUES (:stateHash, :providerId, :nonce, :codeVerifier, :returnTo, :clientId, :maxAge, :createdAt, :expiresAt)`,
    // Single use: the one caller whose DELETE finds the row may finish the sign-in.
    consumeUpstreamLogin: `
      DELETE FROM upstream_logins WHERE state_hash = :stateHash AND expires_at > :now
      RETURNING *`,
    purgeUpstreamLogins: d.purge('upstream_logins', 'state_hash', 'expires_at < :before'),
  };
}

const providerKinds = new Set<string>(PROVIDER_KINDS);

function providerFromRow(row: Row, read: ColumnReader): IdentityProviderRecord {
  const kind = rows.text(row, 'kind');
  if (!providerKinds.has(kind)) throw new rows.CorruptRowError('kind', 'a provider kind', kind);
  return {
    id: rows.text(row, 'id'),
    kind: kind as ProviderKind,
    name: rows.text(row, 'name'),
    position: rows.integer(row, 'position'),
    settings: read.object(row, 'settings'),
    secret: row['secret'] === null ? null : read.object(row, 'secret'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

function linkFromRow(row: Row, read: ColumnReader): LinkedIdentityRecord {
  return {
    providerId: rows.text(row, 'provider_id'),
    subject: rows.text(row, 'subject'),
    userId: rows.text(row, 'user_id'),
    label: rows.textOrNull(row, 'label'),
    groups: read.strings(row, 'groups'),
    createdAt: rows.integer(row, 'created_at'),
    lastUsedAt: rows.integerOrNull(row, 'last_used_at'),
  };
}

function upstreamLoginFromRow(row: Row): UpstreamLoginRecord {
  return {
    stateHash: rows.text(row, 'state_hash'),
    providerId: rows.text(row, 'provider_id'),
    nonce: rows.text(row, 'nonce'),
    codeVerifier: rows.text(row, 'code_verifier'),
    returnTo: rows.text(row, 'return_to'),
    clientId: rows.textOrNull(row, 'client_id'),
    maxAge: rows.integerOrNull(row, 'max_age'),
    createdAt: rows.integer(row, 'created_at'),
    expiresAt: rows.integer(row, 'expires_at'),
  };
}

export function identityProvidersStores(
  d: Dialect,
  q: Runner<keyof ReturnType<typeof identityProvidersStatements>>,
): Pick<Stores, 'identityProviders' | 'linkedIdentities' | 'upstreamLogins'> {
  const { read, list } = d;
  const provider = (row: Row) => providerFromRow(row, read);
  const link = (row: Row) => linkFromRow(row, read);
  const fields = (record: IdentityProviderRecord) => ({
    id: record.id,
    name: record.name,
    position: record.position,
    settings: JSON.stringify(record.settings),
    secret: record.secret === null ? null : JSON.stringify(record.secret),
    updatedAt: record.updatedAt,
  });
  return {
    identityProviders: {
      async create(record) {
        const inserted = await q.changed('insertIdentityProvider', { ...fields(record), kind: record.kind, createdAt: record.createdAt });
        if (inserted === 0) throw new DuplicateError(`identity provider ${record.id}`);
      },
      get: async (id) => {
        const row = await q.one('getIdentityProvider', { id });
        return row === undefined ? null : provider(row);
      },
      list: async () => (await q.all('listIdentityProviders')).map(provider),
      update: async (record) => (await q.changed('updateIdentityProvider', fields(record))) > 0,
      remove: async (id) => (await q.changed('removeIdentityProvider', { id })) > 0,
    },
    linkedIdentities: {
      async create(record) {
        const inserted = await q.changed('insertLinkedIdentity', { ...record, groups: list(record.groups) });
        if (inserted === 0) throw new DuplicateError('linked identity');
      },
      get: async (providerId, subject) => {
        const row = await q.one('getLinkedIdentity', { providerId, subject });
        return row === undefined ? null : link(row);
      },
      listForUser: async (userId) => (await q.all('listLinkedIdentitiesForUser', { userId })).map(link),
      anyForProvider: async (providerId) => (await q.one('anyLinkedIdentityForProvider', { providerId })) !== undefined,
      recordUse: async (providerId, subject, use, now) =>
        (await q.changed('recordLinkedIdentityUse', { providerId, subject, label: use.label, groups: list(use.groups), now })) > 0,
      usersWithEmail: async (email) => (await q.all('usersWithEmail', { email })).map((row) => userFromRow(row, read)),
      remove: async (providerId, subject, userId) => (await q.changed('removeLinkedIdentity', { providerId, subject, userId })) > 0,
      removeAllForUser: (userId) => q.changed('removeLinkedIdentitiesForUser', { userId }),
    },
    upstreamLogins: {
      create: async (record) => void (await q.changed('insertUpstreamLogin', { ...record })),
      consume: async (stateHash, now) => {
        const row = await q.one('consumeUpstreamLogin', { stateHash, now });
        return row === undefined ? null : upstreamLoginFromRow(row);
      },
    },
  };
}

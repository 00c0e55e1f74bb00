/**
 * Grants: their statements, rows and store.
 */

import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import { authMethodsOrNull, type ColumnReader, integer, integerOrNull, oneOf, type Row, text, textOrNull } from '../rows.ts';
import type { GrantRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

const grantKinds: readonly GrantRecord['kind'][] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE];

export function grantFromRow(row: Row, read: ColumnReader): GrantRecord {
  const ip = textOrNull(row, 'device_ip');
  const amr = authMethodsOrNull(row, 'amr', read);
  const acr = row['acr'] === undefined ? null : textOrNull(row, 'acr');
  const organizationId = row['organization_id'] === undefined ? null : textOrNull(row, 'organization_id');
  return {
    id: text(row, 'id'),
    userId: text(row, 'user_id'),
    clientId: text(row, 'client_id'),
    scope: read.strings(row, 'scope'),
    kind: oneOf(grantKinds, 'kind', text(row, 'kind')),
    authTime: integer(row, 'auth_time'),
    createdAt: integer(row, 'created_at'),
    revokedAt: integerOrNull(row, 'revoked_at'),
    device: ip === null ? null : { ip, userAgent: textOrNull(row, 'device_user_agent'), requestedAt: integer(row, 'device_requested_at') },
    remembered: read.boolean(row, 'remembered'),
    renewedAt: integerOrNull(row, 'renewed_at'),
    lastUsedAt: integerOrNull(row, 'last_used_at'),
    activeUntil: integerOrNull(row, 'active_until'),
    ...(amr === null ? {} : { amr }),
    ...(acr === null ? {} : { acr }),
    ...(organizationId === null ? {} : { organizationId }),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function grantsStatements(d: Dialect) {
  return {
    insertGrant: `
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at,
                          device_ip, device_user_agent, device_requested_at, amr, acr, organization_id)
      VALUES (:id, :userId, :clientId, :scope, :kind, :authTime, :createdAt, :revokedAt,
              :deviceIp, :deviceUserAgent, :deviceRequestedAt, :amr, :acr, :organizationId)`,
    getGrant: 'SELECT * FROM grants WHERE id = :id',
    revokeGrant: 'UPDATE grants SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL',
    // The partial unique index grants_remembered makes this the one remembered grant of the
    // user and client: the insert when there is none, else the live one grows (its scope
    // becomes the union) and is renewed, in the same statement.
    rememberGrant: `
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at, remembered, renewed_at, amr, acr, organization_id)
      VALUES (:id, :userId, :clientId, :scope, 'authorization_code', :authTime, :now, NULL, :remembered, :now, :amr, :acr, :organizationId)
      ON CONFLICT (user_id, client_id) WHERE remembered = TRUE AND revoked_at IS NULL
      DO UPDATE SET scope = ${d.listUnion('grants.scope', 'excluded.scope')}, auth_time = excluded.auth_time,
                    renewed_at = excluded.renewed_at, amr = excluded.amr, acr = excluded.acr,
                    organization_id = COALESCE(excluded.organization_id, grants.organization_id)
      RETURNING *`,
    findRememberedGrant: `
      SELECT * FROM grants
      WHERE user_id = :userId AND client_id = :clientId AND remembered = TRUE AND revoked_at IS NULL`,
    listGrantsForUser: `
      SELECT * FROM grants WHERE user_id = :userId AND revoked_at IS NULL
      ORDER BY created_at DESC, id DESC`,
    // Both times only move forward, whatever order concurrent issuances commit in.
    recordGrantUse: `
      UPDATE grants SET last_used_at = ${d.greatest('COALESCE(last_used_at, 0)', ':now')},
                        active_until = ${d.greatest('COALESCE(active_until, 0)', ':activeUntil')}
      WHERE id = :id AND revoked_at IS NULL`,
    // Codes and refresh tokens go with them: ON DELETE CASCADE.
    removeGrantsForUser: 'DELETE FROM grants WHERE user_id = :userId',
    revokeGrantsForClient: 'UPDATE grants SET revoked_at = :now WHERE client_id = :clientId AND revoked_at IS NULL RETURNING *',
    // A grant revoked, whose tokens have all expired, or under which nothing was
    // ever issued (an approval whose code was never redeemed) can issue nothing more; it is
    // deleted that long after the last of revocation, expiry or creation that applies, with
    // its codes and refresh tokens (ON DELETE CASCADE). Three terms, each over an index. A
    // live remembered grant is the person's consent, kept until they revoke it (one per user
    // and client, so bounded): only its revocation lets the purge take it.
    purgeGrants: d.purge(
      'grants',
      'id',
      `(revoked_at < :before
        OR (revoked_at IS NULL AND remembered = FALSE AND active_until < :before)
        OR (revoked_at IS NULL AND remembered = FALSE AND active_until IS NULL AND created_at < :before))`,
    ),
  };
}

export function grantsStores(d: Dialect, q: Runner<keyof ReturnType<typeof grantsStatements>>): Pick<Stores, 'grants'> {
  const { read, list, flag } = d;
  const { first, every, changedAny, write } = queries(q);
  const grant = (row: Row) => grantFromRow(row, read);
  return {
    grants: {
      create: (record) =>
        write('insertGrant', {
          id: record.id,
          userId: record.userId,
          clientId: record.clientId,
          scope: list(record.scope),
          kind: record.kind,
          authTime: record.authTime,
          createdAt: record.createdAt,
          revokedAt: record.revokedAt,
          deviceIp: record.device?.ip ?? null,
          deviceUserAgent: record.device?.userAgent ?? null,
          deviceRequestedAt: record.device?.requestedAt ?? null,
          amr: record.amr === undefined ? null : list(record.amr),
          acr: record.acr ?? null,
          organizationId: record.organizationId ?? null,
        }),
      get: (id) => first('getGrant', { id }, grant),
      revoke: (id, now) => changedAny('revokeGrant', { id, now }),
      listForUser: (userId) => every('listGrantsForUser', { userId }, grant),
      revokeForClient: (clientId, now) => every('revokeGrantsForClient', { clientId, now }, grant),
      async remember(approval, now) {
        const row = await q.one('rememberGrant', {
          ...approval,
          scope: list(approval.scope),
          remembered: flag(true),
          now,
          amr: approval.amr === undefined ? null : list(approval.amr),
          acr: approval.acr ?? null,
          organizationId: approval.organizationId ?? null,
        });
        if (!row) throw new Error('remembering a grant returned no row');
        return grant(row);
      },
      findRemembered: (userId, clientId) => first('findRememberedGrant', { userId, clientId }, grant),
      recordUse: (id, now, activeUntil) => changedAny('recordGrantUse', { id, now, activeUntil }),
      removeForUser: (userId) => q.changed('removeGrantsForUser', { userId }),
    },
  };
}

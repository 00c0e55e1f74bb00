/**
 * The stores by concern, written once over a driver's `Runner`: which statement each
 * method runs, with which parameters, and how its rows become records. Each method is
 * one statement, so single use stays one conditional UPDATE on both databases.
 */

import type { AuditEvent } from '../../core/events.ts';
import * as rows from '../rows.ts';
import type { Row } from '../rows.ts';
import { DuplicateError, USER_PROFILE_TEXT_FIELDS, type ClientChanges, type PurgeCutoffs, type Stores } from '../types.ts';
import type { Dialect, Params, Runner } from './dialect.ts';
import { secondFactorStores } from './second-factor.ts';
import { PURGE_BATCH_SIZE, PURGES, type StatementName } from './statements.ts';

/**
 * An insert binds its record as it is, field by field to the parameter of the same name
 * (the statements name their parameters after the record's fields), with the fields
 * whose column stores another form converted; fields no parameter names are ignored.
 */
/** An event's columns: its details as JSON text (`jsonb` in PostgreSQL parses it). */
export function eventParams(event: AuditEvent): Params {
  return { ...event, detail: JSON.stringify(event.detail) };
}

export function sqlStores(d: Dialect, q: Runner): Stores {
  const { read, list, flag } = d;
  const first = async <T>(name: StatementName, params: Params, record: (row: Row) => T): Promise<T | null> => {
    const row = await q.one(name, params);
    return row === undefined ? null : record(row);
  };
  const every = async <T>(name: StatementName, params: Params, record: (row: Row) => T): Promise<T[]> =>
    (await q.all(name, params)).map(record);
  const changedAny = async (name: StatementName, params: Params): Promise<boolean> => (await q.changed(name, params)) > 0;
  const write = async (name: StatementName, params: Params): Promise<void> => void (await q.changed(name, params));
  const client = (row: Row) => rows.clientFromRow(row, read);
  const user = (row: Row) => rows.userFromRow(row, read);
  const grant = (row: Row) => rows.grantFromRow(row, read);
  const refreshToken = (row: Row) => rows.refreshTokenFromRow(row, read);
  const code = (row: Row) => rows.codeFromRow(row, read);
  const device = (row: Row) => rows.deviceFromRow(row, read);
  const pushedRequest = (row: Row) => rows.pushedRequestFromRow(row, read);
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
  });

  return {
    clients: {
      async create(record) {
        const inserted = await changedAny('insertClient', {
          id: record.id,
          createdAt: record.createdAt,
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
      update: (id, changes, expectedVersion) => first('updateClient', { id, ...clientFields(changes), expectedVersion: expectedVersion ?? null }, client),
      revokeTokens: (id, now) => changedAny('revokeClientTokens', { id, now }),
      rotateSecret: (id, secretHash, previousExpiresAt) => first('rotateClientSecret', { id, secretHash, previousExpiresAt }, client),
      remove: (id) => changedAny('removeClient', { id }),
    },

    users: {
      async create(record) {
        const inserted = await changedAny('insertUser', {
          ...record,
          emailVerified: flag(record.emailVerified),
          disabled: flag(record.disabled),
        });
        if (!inserted) throw new DuplicateError(`user ${JSON.stringify(record.username)}`);
      },
      get: (id) => first('getUser', { id }, user),
      findByUsername: (username) => first('getUserByUsername', { username }, user),
      list: () => every('listUsers', {}, user),
      setDisabled: (id, disabled) => changedAny('setUserDisabled', { id, disabled: flag(disabled) }),
      setRole: (id, role) => changedAny('setUserRole', { id, role }),
      update: (id, changes, now) => {
        // Each field with a flag saying whether it is set, since null is a value to set.
        const fields = USER_PROFILE_TEXT_FIELDS.flatMap((field) => [
          [`set${field[0]!.toUpperCase()}${field.slice(1)}`, changes[field] === undefined ? 0 : 1],
          [field, changes[field] ?? null],
        ]);
        return changedAny('updateUser', {
          id,
          now,
          ...Object.fromEntries(fields),
          setEmailVerified: changes.emailVerified === undefined ? 0 : 1,
          emailVerified: flag(changes.emailVerified ?? false),
        });
      },
      setPasswordHash: (id, passwordHash) => changedAny('setUserPassword', { id, passwordHash }),
      remove: (id) => changedAny('removeUser', { id }),
    },

    sessions: {
      create: (session) => write('insertSession', { ...session, amr: session.amr === undefined ? null : list(session.amr) }),
      get: (idHash, now) => first('getSession', { idHash, now }, (row) => rows.sessionFromRow(row, read)),
      remove: (idHash) => first('removeSession', { idHash }, (row) => rows.sessionFromRow(row, read)),
      listForUser: (userId, now) => every('listSessionsForUser', { userId, now }, (row) => rows.sessionFromRow(row, read)),
      // No session id hashes to the empty string.
      removeForUser: (userId, except) => every('removeSessionsForUser', { userId, except: except ?? '' }, (row) => rows.sessionFromRow(row, read)),
      addClient: (sid, clientId, expiresAt) => write('addSessionClient', { sid, clientId, expiresAt }),
      takeClients: (sid) => every('takeSessionClients', { sid }, (row) => rows.text(row, 'client_id')),
    },

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
        }),
      get: (id) => first('getGrant', { id }, grant),
      revoke: (id, now) => changedAny('revokeGrant', { id, now }),
      listForUser: (userId) => every('listGrantsForUser', { userId }, grant),
      async remember(approval, now) {
        const row = await q.one('rememberGrant', {
          ...approval,
          scope: list(approval.scope),
          remembered: flag(true),
          now,
          amr: approval.amr === undefined ? null : list(approval.amr),
          acr: approval.acr ?? null,
        });
        if (!row) throw new Error('remembering a grant returned no row');
        return grant(row);
      },
      findRemembered: (userId, clientId) => first('findRememberedGrant', { userId, clientId }, grant),
      recordUse: (id, now, activeUntil) => changedAny('recordGrantUse', { id, now, activeUntil }),
      removeForUser: (userId) => q.changed('removeGrantsForUser', { userId }),
    },

    refreshTokens: {
      create: (token) => write('insertRefreshToken', { ...token, scope: list(token.scope) }),
      rotate: (hash, clientId, now) => first('rotateRefreshToken', { hash, clientId, now }, refreshToken),
      find: (hash) => first('getRefreshToken', { hash }, refreshToken),
    },

    accessTokens: {
      revoke: (jti, expiresAt) => write('revokeAccessToken', { jti, expiresAt }),
      isRevoked: async (jti) => (await q.one('getRevokedAccessToken', { jti })) !== undefined,
    },

    codes: {
      create: (record) => write('insertCode', { ...record, scope: list(record.scope), idTokenClaims: list(record.idTokenClaims) }),
      consume: (hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now) =>
        first('consumeCode', { hash, clientId, redirectUri, codeChallenge, dpopJkt, now }, code),
      find: (hash) => first('getCode', { hash }, code),
    },

    devices: {
      async create(record, event) {
        const inserted = changedAny('insertDevice', { ...record, scope: list(record.scope) });
        if (!event) return inserted;
        // Issued together, not one after the other's answer: a driver runs a connection's
        // statements in order, and SQLite's group commit commits both at once.
        const [stored] = await Promise.all([
          inserted,
          write('insertDeviceEvent', { ...eventParams(event), deviceCodeHash: record.deviceCodeHash, createdAt: record.createdAt }),
        ]);
        return stored;
      },
      findByUserCode: (userCode, now) => first('getDeviceByUserCode', { userCode, now }, device),
      decide: (userCode, decision, now) =>
        first(
          'decideDevice',
          {
            userCode,
            status: decision.approve ? 'approved' : 'denied',
            userId: decision.approve ? decision.userId : null,
            authTime: decision.approve ? decision.authTime : null,
            grantId: decision.approve ? decision.grantId : null,
            now,
          },
          device,
        ),
      poll: (deviceCodeHash, clientId, now, dpopJkt = null) =>
        first('pollDevice', { deviceCodeHash, clientId, now, dpopJkt }, (row) => ({ outcome: rows.pollOutcomeFromRow(row), record: device(row) })),
      find: (deviceCodeHash) => first('getDevice', { deviceCodeHash }, device),
      // COUNT(*) is a bigint in PostgreSQL, which the driver reads as a number.
      countPending: async (now) => (await first('countPendingDevices', { now }, (row) => Number(row['pending']))) ?? 0,
      removeForUser: (userId) => q.changed('removeDevicesForUser', { userId }),
    },

    dpopProofs: {
      use: (key, expiresAt, now) => changedAny('useDpopProof', { key, expiresAt, now }),
    },

    pushedRequests: {
      create: (record) => write('insertPushedRequest', { ...record, params: JSON.stringify(record.params) }),
      claim: (hash, clientId, browser, now, until) => first('claimPushedRequest', { hash, clientId, browser, now, until }, pushedRequest),
      resume: (hash, clientId, browser, now) => first('resumePushedRequest', { hash, clientId, browser, now }, pushedRequest),
      decide: (hash, clientId, browser, now) => first('decidePushedRequest', { hash, clientId, browser, now }, pushedRequest),
      find: (hash) => first('getPushedRequest', { hash }, pushedRequest),
    },

    rateLimits: {
      async hit(key, windowMs, now) {
        const row = await q.one('hitRateLimit', { key, now, windowEndsAt: now + windowMs });
        if (!row) throw new Error('rate limit upsert returned no row');
        return rows.integer(row, 'hits');
      },
      // The stored window carries its own end, so the window length is not needed to read it.
      count: async (key, _windowMs, now) => (await first('countRateLimit', { key, now }, (row) => rows.integer(row, 'hits'))) ?? 0,
      window: (key, now) => first('getRateLimit', { key, now }, (row) => ({ hits: rows.integer(row, 'hits'), endsAt: rows.integer(row, 'window_ends_at') })),
      release: (key, now) => write('releaseRateLimit', { key, now }),
      listOpen: (prefix, now, limit) =>
        every('listOpenRateLimits', { prefix, now, limit }, (row) => ({ key: rows.text(row, 'key'), hits: rows.integer(row, 'hits'), endsAt: rows.integer(row, 'window_ends_at') })),
      remove: (key) => changedAny('removeRateLimit', { key }),
    },

    resources: {
      async create(record) {
        const inserted = await changedAny('insertResource', {
          identifier: record.identifier,
          name: record.name,
          accessTokenTtl: record.accessTokenTtl,
          introspectionSecretHash: record.introspectionSecretHash,
          signingAlg: record.signingAlg,
          createdAt: record.createdAt,
        });
        if (!inserted) throw new DuplicateError(`resource ${record.identifier}`);
        for (const [position, scope] of record.scopes.entries()) {
          const added = await changedAny('insertResourceScope', { name: scope.name, resource: record.identifier, description: scope.description, position });
          if (!added) throw new DuplicateError(`scope ${scope.name}`);
        }
      },
      async get(identifier) {
        const [row, scopes] = await Promise.all([q.one('getResource', { identifier }), q.all('getResourceScopes', { identifier })]);
        return row === undefined ? null : rows.resourceFromRow(row, scopes.map(rows.resourceScopeFromRow).map(({ name, description }) => ({ name, description })));
      },
      async list() {
        const [resources, scopes] = await Promise.all([q.all('listResources', {}), q.all('listResourceScopes', {})]);
        const byResource = new Map<string, { name: string; description: string }[]>();
        for (const { resource, name, description } of scopes.map(rows.resourceScopeFromRow)) {
          const list = byResource.get(resource) ?? [];
          list.push({ name, description });
          byResource.set(resource, list);
        }
        return resources.map((row) => rows.resourceFromRow(row, byResource.get(rows.text(row, 'identifier')) ?? []));
      },
      update: (identifier, changes) =>
        changedAny('updateResource', { identifier, setSigningAlg: changes.signingAlg === undefined ? 0 : 1, signingAlg: changes.signingAlg ?? null }),
      remove: (identifier) => changedAny('removeResource', { identifier }),
    },

    clientAssertions: {
      use: (jtiHash, expiresAt, now) => changedAny('useClientAssertion', { jtiHash, expiresAt, now }),
    },

    keys: {
      add: (key) =>
        write('insertKey', { ...key, privateJwk: JSON.stringify(key.privateJwk), publicJwk: JSON.stringify(key.publicJwk) }),
      listPublished: (now) => every('listPublishedKeys', { now }, (row) => rows.signingKeyFromRow(row, read)),
      schedule: (kid, retiresAt, expiresAt) => write('scheduleKey', { kid, retiresAt, expiresAt }),
      list: () => every('listKeys', {}, (row) => rows.signingKeyFromRow(row, read)),
      setPrivateJwk: (kid, privateJwk) => write('setKeyPrivateJwk', { kid, privateJwk: JSON.stringify(privateJwk) }),
    },

    passwordResets: {
      create: (reset) => write('insertPasswordReset', { ...reset }),
      find: (tokenHash, now) => first('getPasswordReset', { tokenHash, now }, rows.passwordResetFromRow),
      consume: (tokenHash, now) => first('consumePasswordReset', { tokenHash, now }, rows.passwordResetFromRow),
      spendAllForUser: (userId, now) => write('spendPasswordResetsForUser', { userId, now }),
    },

    events: {
      add: (event) => write('insertEvent', eventParams(event)),
      list: (filter) =>
        every(
          'listEvents',
          {
            userId: filter.userId ?? null,
            username: filter.username ?? null,
            clientId: filter.clientId ?? null,
            type: filter.type ?? null,
            since: filter.since ?? null,
            beforeAt: filter.before?.at ?? null,
            beforeId: filter.before?.id ?? null,
            limit: filter.limit,
          },
          (row) => rows.eventFromRow(row, read),
        ),
    },
    ...secondFactorStores(d, q),
  };
}

/**
 * `Store.purgeExpired`: batch after batch, each committed before the next starts (on
 * SQLite, an answer waits for its commit), so that other writers wait at most one batch.
 */
export async function purgeExpired(q: Runner, before: number, cutoffs: PurgeCutoffs = {}): Promise<number> {
  const purges: [StatementName, number][] = PURGES.map((name) => [name, before]);
  if (cutoffs.eventsBefore !== undefined) purges.push(['purgeEvents', cutoffs.eventsBefore]);
  // Grants last: their codes and refresh tokens go with them, and are purged by then anyway.
  if (cutoffs.grantsBefore !== undefined) purges.push(['purgeGrants', cutoffs.grantsBefore]);
  let deleted = 0;
  for (const [name, cutoff] of purges) {
    for (;;) {
      const count = await q.changed(name, { before: cutoff, limit: PURGE_BATCH_SIZE });
      deleted += count;
      if (count < PURGE_BATCH_SIZE) break;
    }
  }
  return deleted;
}

/**
 * Refresh tokens and revoked access tokens: their statements, rows and stores.
 */

import { authMethodsOrNull, type ColumnReader, integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { GrantRecord, RedemptionWrites, RefreshTokenRecord, Stores, UserRecord } from '../types.ts';
import { type Dialect, type Params, queries, type Runner } from './dialect.ts';
import { eventParams, type eventsStatements } from './events.ts';
import type { grantsStatements } from './grants.ts';
import type { sessionsStatements } from './sessions.ts';

export function refreshTokenFromRow(row: Row, read: ColumnReader): RefreshTokenRecord {
  const claimsLocales = read.strings(row, 'claims_locales');
  const userinfoClaims = read.strings(row, 'userinfo_claims');
  const claimsScope = read.strings(row, 'claims_scope');
  const amr = authMethodsOrNull(row, 'amr', read);
  const acr = textOrNull(row, 'acr');
  return {
    hash: text(row, 'hash'),
    grantId: text(row, 'grant_id'),
    clientId: text(row, 'client_id'),
    userId: text(row, 'user_id'),
    scope: read.strings(row, 'scope'),
    authTime: integer(row, 'auth_time'),
    sid: textOrNull(row, 'sid'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    rotatedAt: integerOrNull(row, 'rotated_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
    idTokenClaims: read.strings(row, 'id_token_claims'),
    ...(amr === null ? {} : { amr }),
    ...(acr === null ? {} : { acr }),
    ...(claimsLocales.length === 0 ? {} : { claimsLocales }),
    ...(userinfoClaims.length === 0 ? {} : { userinfoClaims }),
    ...(claimsScope.length === 0 ? {} : { claimsScope }),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function tokensStatements(d: Dialect) {
  return {
    insertRefreshToken: `
      INSERT INTO refresh_tokens (hash, grant_id, client_id, user_id, scope, auth_time, sid, created_at, expires_at, rotated_at, dpop_jkt,
                                  id_token_claims, amr, acr, claims_locales, userinfo_claims, claims_scope)
      VALUES (:hash, :grantId, :clientId, :userId, :scope, :authTime, :sid, :createdAt, :expiresAt, :rotatedAt, :dpopJkt,
              :idTokenClaims, :amr, :acr, :claimsLocales, :userinfoClaims, :claimsScope)`,
    // RFC 9700 §4.14.2: refresh token rotation; RFC 6749 §6: the token must have been issued
    // to the authenticated client. A revoked grant's tokens are refused in the same statement.
    rotateRefreshToken: `
      UPDATE refresh_tokens SET rotated_at = :now
      WHERE hash = :hash AND client_id = :clientId AND rotated_at IS NULL AND expires_at > :now
        AND EXISTS (SELECT 1 FROM grants WHERE grants.id = refresh_tokens.grant_id AND grants.revoked_at IS NULL)
      RETURNING grant_id`,
    getRefreshToken: 'SELECT * FROM refresh_tokens WHERE hash = :hash',
    revokeAccessToken: `
      INSERT INTO revoked_access_tokens (jti, expires_at) VALUES (:jti, :expiresAt)
      ON CONFLICT DO NOTHING`,
    getRevokedAccessToken: 'SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = :jti',
    purgeRefreshTokens: d.purge('refresh_tokens', 'hash', 'expires_at < :before'),
    purgeRevokedAccessTokens: d.purge('revoked_access_tokens', 'jti', 'expires_at < :before'),
  };
}

/** A refresh token's columns for `insertRefreshToken`. */
export function refreshTokenParams(d: Dialect, token: RefreshTokenRecord): Params {
  const { list } = d;
  return {
    ...token,
    scope: list(token.scope),
    idTokenClaims: list(token.idTokenClaims),
    claimsLocales: list(token.claimsLocales ?? []),
    userinfoClaims: list(token.userinfoClaims ?? []),
    claimsScope: list(token.claimsScope ?? []),
    amr: token.amr === undefined ? null : list(token.amr),
    acr: token.acr ?? null,
  };
}

/** The statements of the stores that a code's redemption or a refresh token's rotation runs after it, named as their modules name them. */
export type FollowUpStatement =
  | keyof ReturnType<typeof grantsStatements>
  | keyof ReturnType<typeof tokensStatements>
  | keyof ReturnType<typeof sessionsStatements>
  | keyof ReturnType<typeof eventsStatements>;

/**
 * The statements that follow a code's redemption (`AuthorizationCodeStore.redeem`) or a
 * refresh token's rotation (`RefreshTokenStore.rotateWith`), each with its parameters: the
 * grant's use, the next refresh token, the session's client, the event.
 */
export function followUpWrites(
  d: Dialect,
  redeemed: { readonly grantId: string; readonly clientId: string },
  now: number,
  writes: RedemptionWrites,
): [FollowUpStatement, Params][] {
  const steps: [FollowUpStatement, Params][] = [['recordGrantUse', { id: redeemed.grantId, now, activeUntil: writes.activeUntil }]];
  if (writes.refreshToken) steps.push(['insertRefreshToken', refreshTokenParams(d, writes.refreshToken)]);
  if (writes.sessionClient)
    steps.push(['addSessionClient', { sid: writes.sessionClient.sid, clientId: redeemed.clientId, expiresAt: writes.sessionClient.expiresAt }]);
  if (writes.event) steps.push(['insertEvent', eventParams(writes.event)]);
  return steps;
}

/** The grant and user a code or refresh token was issued under, as they are now (null for those gone), read side by side. */
export async function grantAndUserOf(
  others: Pick<Stores, 'grants' | 'users'>,
  issued: { readonly grantId: string; readonly userId: string },
): Promise<{ grant: GrantRecord | null; user: UserRecord | null }> {
  const [grant, user] = await Promise.all([others.grants.get(issued.grantId), others.users.get(issued.userId)]);
  return { grant, user };
}

/**
 * The refresh and access token stores over `q`. `findForRefresh` here is three reads (the
 * token, then its grant and user), as a transaction reads them; each store reads them in one
 * statement at the top level (sqlite/joined.ts, postgres/store.ts). `rotateWith` is its statements one after another, atomic
 * as it promises only inside a transaction, which is where this form of it runs: each store
 * gives its own at the top level (SQLite one write of the group commit, PostgreSQL one
 * statement a turn).
 */
export function tokensStores(
  d: Dialect,
  q: Runner<FollowUpStatement>,
  others: Pick<Stores, 'grants' | 'users'>,
): Pick<Stores, 'refreshTokens' | 'accessTokens'> {
  const { read } = d;
  const { first, write } = queries(q);
  const refreshToken = (row: Row) => refreshTokenFromRow(row, read);
  return {
    refreshTokens: {
      create: (token) => write('insertRefreshToken', refreshTokenParams(d, token)),
      async rotateWith(hash, clientId, now, writes) {
        const grantId = await first('rotateRefreshToken', { hash, clientId, now }, (row) => text(row, 'grant_id'));
        if (grantId === null) return false;
        for (const [name, params] of followUpWrites(d, { grantId, clientId }, now, writes)) await q.changed(name, params);
        return true;
      },
      find: (hash) => first('getRefreshToken', { hash }, refreshToken),
      async findForRefresh(hash) {
        const token = await first('getRefreshToken', { hash }, refreshToken);
        return token === null ? null : { token, ...(await grantAndUserOf(others, token)) };
      },
    },

    accessTokens: {
      revoke: (jti, expiresAt) => write('revokeAccessToken', { jti, expiresAt }),
      isRevoked: async (jti) => (await q.one('getRevokedAccessToken', { jti })) !== undefined,
    },
  };
}

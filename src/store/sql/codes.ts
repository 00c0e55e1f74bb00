/**
 * Authorization codes: their statements, rows and store.
 */

import { authMethodsOrNull, type ColumnReader, integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { AuthorizationCodeRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';
import { type FollowUpStatement, followUpWrites, grantAndUserOf } from './tokens.ts';

export function codeFromRow(row: Row, read: ColumnReader): AuthorizationCodeRecord {
  const claimsLocales = read.strings(row, 'claims_locales');
  const userinfoClaims = read.strings(row, 'userinfo_claims');
  const claimsScope = read.strings(row, 'claims_scope');
  const amr = authMethodsOrNull(row, 'amr', read);
  const acr = textOrNull(row, 'acr');
  return {
    hash: text(row, 'hash'),
    clientId: text(row, 'client_id'),
    userId: text(row, 'user_id'),
    grantId: text(row, 'grant_id'),
    redirectUri: text(row, 'redirect_uri'),
    scope: read.strings(row, 'scope'),
    nonce: textOrNull(row, 'nonce'),
    codeChallenge: text(row, 'code_challenge'),
    authTime: integer(row, 'auth_time'),
    sid: textOrNull(row, 'sid'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    consumedAt: integerOrNull(row, 'consumed_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
    idTokenClaims: read.strings(row, 'id_token_claims'),
    ...(amr === null ? {} : { amr }),
    ...(acr === null ? {} : { acr }),
    ...(claimsLocales.length === 0 ? {} : { claimsLocales }),
    ...(userinfoClaims.length === 0 ? {} : { userinfoClaims }),
    ...(claimsScope.length === 0 ? {} : { claimsScope }),
  };
}

/**
 * A code issued in a sign-in session (its `sid`) is redeemed only while a session with that sid
 * lives: one the person signed out of before the app redeemed the code would otherwise give an
 * ID token for a session no logout token will ever end (Back-Channel Logout 1.0 §2.7: the
 * logout found no client to tell), as Keycloak refuses a code whose session is not active.
 * Checked in the statement that redeems the code and records the session's client, so that a
 * logout either comes after both or finds the code refused. On PostgreSQL that needs the
 * session's row kept (`keepsRows`): under READ COMMITTED a redemption that saw the session
 * and then waited (on its grant's row) would otherwise record its client after a logout had
 * deleted the session and taken the clients it found. Kept, the logout's delete waits for the
 * redemption to commit and then finds its client; a delete that came first makes the
 * redemption wait, then find no session. A session continued under a new cookie changes its
 * row's key in place (`SessionStore.continue`): the redemption waits for that too, then follows
 * the row to its new version and finds the session live. `table` is the codes' name or alias.
 */
export const LIVE_SESSION = (d: Dialect, table: string, now: string) =>
  `(${table}.sid IS NULL OR EXISTS (SELECT 1 FROM sessions WHERE sessions.sid = ${table}.sid AND sessions.expires_at > ${now} ${d.keepsRows}))`;

/** The statement that redeems a code (`consume`, `redeem`), giving back `returning` of its row. */
const consumeCode = (d: Dialect, returning: string) =>
  // RFC 6749 §4.1.2: "The client MUST NOT use the authorization code more than once."
  // RFC 6749 §4.1.3 and RFC 7636 §4.6: the code is bound to its client, redirect_uri and
  // challenge; a mismatch leaves it untouched. RFC 9449 §10: a code bound to a DPoP key is
  // redeemed only with a proof by that key (a NULL :dpopJkt matches no bound code).
  // RFC 6749 §5.2: a code of a revoked grant is invalid_grant. Checked here, in the statement
  // that redeems it, as a refresh token's rotation checks its grant: a grant revoked after
  // the code was read (its person disabled, a replay of another code of the grant) is seen.
  `UPDATE authorization_codes SET consumed_at = :now
      WHERE hash = :hash AND consumed_at IS NULL AND expires_at > :now
        AND client_id = :clientId AND redirect_uri = :redirectUri AND code_challenge = :codeChallenge
        AND (dpop_jkt IS NULL OR dpop_jkt = :dpopJkt)
        AND EXISTS (SELECT 1 FROM grants WHERE grants.id = authorization_codes.grant_id AND grants.revoked_at IS NULL)
        AND ${LIVE_SESSION(d, 'authorization_codes', ':now')}
      RETURNING ${returning}`;

/** The statements, by name, in `d`'s SQL. */
export function codesStatements(d: Dialect) {
  return {
    insertCode: `
      INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, nonce,
                                       code_challenge, auth_time, sid, created_at, expires_at, consumed_at, dpop_jkt, id_token_claims, amr, acr, claims_locales, userinfo_claims, claims_scope)
      VALUES (:hash, :clientId, :userId, :grantId, :redirectUri, :scope, :nonce,
              :codeChallenge, :authTime, :sid, :createdAt, :expiresAt, :consumedAt, :dpopJkt, :idTokenClaims, :amr, :acr, :claimsLocales, :userinfoClaims, :claimsScope)`,
    consumeCode: consumeCode(d, '*'),
    // A redemption needs only which grant's use to record with it (`redeem`, whose caller already read the code).
    redeemCode: consumeCode(d, 'grant_id'),
    getCode: 'SELECT * FROM authorization_codes WHERE hash = :hash',
    purgeCodes: d.purge('authorization_codes', 'hash', 'expires_at < :before'),
  };
}

/**
 * The code stores over `q`. `findForExchange` here is three reads (the code, then its grant
 * and user), as a transaction reads them; each store reads them in one statement at the top
 * level (sqlite/joined.ts, postgres/store.ts). `redeem` is its statements one after another, atomic as it promises only inside
 * a transaction, which is where this form of it runs: each store gives its own at the top
 * level (SQLite one write of the group commit, PostgreSQL one statement).
 */
export function codesStores(
  d: Dialect,
  q: Runner<keyof ReturnType<typeof codesStatements> | FollowUpStatement>,
  others: Pick<Stores, 'grants' | 'users'>,
): Pick<Stores, 'codes'> {
  const { read, list } = d;
  const { first, write } = queries(q);
  const code = (row: Row) => codeFromRow(row, read);
  return {
    codes: {
      create: (record) =>
        write('insertCode', {
          ...record,
          scope: list(record.scope),
          idTokenClaims: list(record.idTokenClaims),
          claimsLocales: list(record.claimsLocales ?? []),
          userinfoClaims: list(record.userinfoClaims ?? []),
          claimsScope: list(record.claimsScope ?? []),
          amr: record.amr === undefined ? null : list(record.amr),
          acr: record.acr ?? null,
        }),
      consume: (hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now) =>
        first('consumeCode', { hash, clientId, redirectUri, codeChallenge, dpopJkt, now }, code),
      find: (hash) => first('getCode', { hash }, code),
      async findForExchange(hash) {
        const found = await first('getCode', { hash }, code);
        return found === null ? null : { code: found, ...(await grantAndUserOf(others, found)) };
      },
      async redeem(hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now, writes) {
        const grantId = await first('redeemCode', { hash, clientId, redirectUri, codeChallenge, dpopJkt, now }, (row) => text(row, 'grant_id'));
        if (grantId === null) return false;
        for (const [name, params] of followUpWrites(d, { grantId, clientId }, now, writes)) await q.changed(name, params);
        return true;
      },
    },
  };
}

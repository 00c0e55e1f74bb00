/**
 * Every statement of the store, written once. Parameters are named (`:hash`) in the SQL
 * text; each driver compiles them to its own form (SQLite binds the names, PostgreSQL
 * numbers them). The little that differs between the databases comes from the `Dialect`.
 */

import type { Dialect } from './dialect.ts';

/** Rows deleted per statement by `purgeExpired`: small enough that no statement holds its lock for long. */
export const PURGE_BATCH_SIZE = 1000;

/**
 * The interval stops growing here: no device code lives longer (the seed's ten minutes), so
 * a larger interval would change no answer, and the bound keeps `poll_interval * 1000` far
 * inside PostgreSQL's 32-bit integer however often a device is told to slow down.
 */
export const MAX_POLL_INTERVAL_SECONDS = 600;

/**
 * What inserting a device authorization does when its user code is taken: a user code is
 * unique among live records only, so an expired record holding it is replaced in the same
 * statement, and a live one makes the insert do nothing.
 */
export const DEVICE_USER_CODE_CONFLICT = `ON CONFLICT (user_code) DO UPDATE SET
  device_code_hash = excluded.device_code_hash, client_id = excluded.client_id, scope = excluded.scope,
  status = excluded.status, poll_interval = excluded.poll_interval, last_polled_at = excluded.last_polled_at,
  last_outcome = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at,
  request_ip = excluded.request_ip, request_user_agent = excluded.request_user_agent,
  user_id = excluded.user_id, auth_time = excluded.auth_time, grant_id = excluded.grant_id,
  decided_at = excluded.decided_at, dpop_jkt = excluded.dpop_jkt
WHERE device_authorizations.expires_at <= excluded.created_at`;

/**
 * What one device poll finds (`DevicePollOutcome`), as an SQL expression over the row as
 * it was before the poll, in the documented order. RFC 8628 §3.5: "expired_token: The
 * device_code has expired"; "slow_down: ... the interval MUST be increased by 5 seconds
 * for this and all subsequent requests". A first poll (no `last_polled_at`) is never too
 * soon.
 */
function devicePollOutcome(now: string): string {
  return `(CASE
    WHEN expires_at <= ${now} THEN 'expired'
    WHEN status = 'consumed' THEN 'consumed'
    WHEN status = 'denied' THEN 'denied'
    WHEN last_polled_at IS NOT NULL AND ${now} - last_polled_at < poll_interval * 1000 THEN 'slow_down'
    WHEN status = 'approved' THEN 'issue'
    ELSE 'pending'
  END)`;
}

/**
 * The SET list of the device poll's one UPDATE. Every expression in a SET list sees the
 * row as it was before the UPDATE (in SQLite and PostgreSQL alike), so the outcome is
 * computed once from the old row and drives the other columns: `slow_down` grows the
 * interval, `issue` consumes the record. Concurrent polls are serialised (SQLite's write
 * lock, PostgreSQL's row lock) and each sees the row its predecessor left: one `issue`,
 * then `consumed`. Once a record has expired, `last_polled_at` keeps the time of the first
 * poll that found it so: that poll alone is told it was the first (`last_polled_at` equal
 * to its `now`), so that a device polling on after `expired_token` is recorded once.
 */
export function devicePollAssignments(now: string): string {
  const outcome = devicePollOutcome(now);
  return `last_outcome = ${outcome},
    poll_interval = CASE WHEN ${outcome} = 'slow_down' AND poll_interval < ${MAX_POLL_INTERVAL_SECONDS} THEN poll_interval + 5 ELSE poll_interval END,
    status = CASE ${outcome} WHEN 'issue' THEN 'consumed' ELSE status END,
    last_polled_at = CASE WHEN ${outcome} = 'expired' AND last_outcome = 'expired' THEN last_polled_at ELSE ${now} END`;
}

/** The statements, by name, in `dialect`'s SQL. */
export function statements(d: Dialect) {
  return {
    insertClient: `
      INSERT INTO clients (id, name, secret_hash, redirect_uris, scopes, grant_types, web_origins, created_at, require_phishing_resistant,
                           auth_method, previous_secret_hash, previous_secret_expires_at, jwks_uri, jwks, pkce,
                           first_party, post_logout_redirect_uris, backchannel_logout_uri, require_dpop, require_par, device_networks,
                           request_object_signing_alg, nonce_required)
      VALUES (:id, :name, :secretHash, :redirectUris, :scopes, :grantTypes, :webOrigins, :createdAt, :requirePhishingResistant,
              :authMethod, :previousSecretHash, :previousSecretExpiresAt, :jwksUri, :jwks, :pkce,
              :firstParty, :postLogoutRedirectUris, :backchannelLogoutUri, :requireDpop, :requirePar, :deviceNetworks,
              :requestObjectSigningAlg, :nonceRequired)
      ON CONFLICT DO NOTHING`,
    updateClient: `
      UPDATE clients SET name = :name, secret_hash = :secretHash, redirect_uris = :redirectUris, scopes = :scopes,
        grant_types = :grantTypes, web_origins = :webOrigins, auth_method = :authMethod,
        previous_secret_hash = :previousSecretHash, previous_secret_expires_at = :previousSecretExpiresAt,
        jwks_uri = :jwksUri, jwks = :jwks, pkce = :pkce, require_phishing_resistant = :requirePhishingResistant,
        first_party = :firstParty, post_logout_redirect_uris = :postLogoutRedirectUris, backchannel_logout_uri = :backchannelLogoutUri,
        require_dpop = :requireDpop, require_par = :requirePar,
        device_networks = :deviceNetworks, request_object_signing_alg = :requestObjectSigningAlg, nonce_required = :nonceRequired,
        version = version + 1
      WHERE id = :id AND (${d.bigint(':expectedVersion')} IS NULL OR version = :expectedVersion)
      RETURNING *`,
    revokeClientTokens: 'UPDATE clients SET tokens_revoked_at = :now WHERE id = :id',
    // Every SET expression reads the row as it was: the current secret becomes the previous one.
    rotateClientSecret: `
      UPDATE clients SET previous_secret_hash = secret_hash, previous_secret_expires_at = :previousExpiresAt,
        secret_hash = :secretHash
      WHERE id = :id AND secret_hash IS NOT NULL
      RETURNING *`,
    getClient: 'SELECT * FROM clients WHERE id = :id',
    listClients: 'SELECT * FROM clients ORDER BY created_at, id',
    // Codes, device records and grants go with it: ON DELETE CASCADE.
    removeClient: 'DELETE FROM clients WHERE id = :id',

    insertUser: `
      INSERT INTO users (id, username, password_hash, name, email, email_verified, given_name, family_name, locale, zoneinfo, picture,
                         disabled, role, created_at, updated_at)
      VALUES (:id, :username, :passwordHash, :name, :email, :emailVerified, :givenName, :familyName, :locale, :zoneinfo, :picture,
              :disabled, :role, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getUser: 'SELECT * FROM users WHERE id = :id',
    getUserByUsername: 'SELECT * FROM users WHERE username = :username',
    listUsers: 'SELECT * FROM users ORDER BY created_at, id',
    setUserDisabled: 'UPDATE users SET disabled = :disabled WHERE id = :id',
    setUserRole: 'UPDATE users SET role = :role WHERE id = :id',
    // A field not given keeps its value: CASE on a flag, since null is a value to set.
    updateUser: `
      UPDATE users SET name = CASE WHEN :setName = 1 THEN CAST(:name AS TEXT) ELSE name END,
                       given_name = CASE WHEN :setGivenName = 1 THEN CAST(:givenName AS TEXT) ELSE given_name END,
                       family_name = CASE WHEN :setFamilyName = 1 THEN CAST(:familyName AS TEXT) ELSE family_name END,
                       email = CASE WHEN :setEmail = 1 THEN CAST(:email AS TEXT) ELSE email END,
                       email_verified = CASE WHEN :setEmailVerified = 1 THEN :emailVerified ELSE email_verified END,
                       locale = CASE WHEN :setLocale = 1 THEN CAST(:locale AS TEXT) ELSE locale END,
                       zoneinfo = CASE WHEN :setZoneinfo = 1 THEN CAST(:zoneinfo AS TEXT) ELSE zoneinfo END,
                       picture = CASE WHEN :setPicture = 1 THEN CAST(:picture AS TEXT) ELSE picture END,
                       updated_at = ${d.bigint(':now')}
      WHERE id = :id`,
    setUserPassword: 'UPDATE users SET password_hash = :passwordHash WHERE id = :id',
    removeUser: 'DELETE FROM users WHERE id = :id',

    insertSession: `
      INSERT INTO sessions (id_hash, sid, user_id, auth_time, created_at, expires_at, ip, user_agent, amr)
      VALUES (:idHash, :sid, :userId, :authTime, :createdAt, :expiresAt, :ip, :userAgent, :amr)`,
    getSession: 'SELECT * FROM sessions WHERE id_hash = :idHash AND expires_at > :now',
    removeSession: 'DELETE FROM sessions WHERE id_hash = :idHash RETURNING *',
    listSessionsForUser: `
      SELECT * FROM sessions WHERE user_id = :userId AND expires_at > :now
      ORDER BY created_at DESC, id_hash`,
    removeSessionsForUser: 'DELETE FROM sessions WHERE user_id = :userId AND id_hash <> :except RETURNING *',
    addSessionClient: `
      INSERT INTO session_clients (sid, client_id, expires_at) VALUES (:sid, :clientId, :expiresAt)
      ON CONFLICT (sid, client_id) DO UPDATE SET expires_at = ${d.greatest('session_clients.expires_at', 'excluded.expires_at')}`,
    // Delivered once: whoever deletes a row is the one who sends its logout token.
    takeSessionClients: 'DELETE FROM session_clients WHERE sid = :sid RETURNING client_id',

    insertGrant: `
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at,
                          device_ip, device_user_agent, device_requested_at, amr, acr)
      VALUES (:id, :userId, :clientId, :scope, :kind, :authTime, :createdAt, :revokedAt,
              :deviceIp, :deviceUserAgent, :deviceRequestedAt, :amr, :acr)`,
    getGrant: 'SELECT * FROM grants WHERE id = :id',
    revokeGrant: 'UPDATE grants SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL',
    // The partial unique index grants_remembered makes this the one remembered grant of the
    // user and client: the insert when there is none, else the live one grows (its scope
    // becomes the union) and is renewed, in the same statement.
    rememberGrant: `
      INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at, revoked_at, remembered, renewed_at, amr, acr)
      VALUES (:id, :userId, :clientId, :scope, 'authorization_code', :authTime, :now, NULL, :remembered, :now, :amr, :acr)
      ON CONFLICT (user_id, client_id) WHERE remembered = TRUE AND revoked_at IS NULL
      DO UPDATE SET scope = ${d.listUnion('grants.scope', 'excluded.scope')}, auth_time = excluded.auth_time,
                    renewed_at = excluded.renewed_at, amr = excluded.amr, acr = excluded.acr
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

    insertRefreshToken: `
      INSERT INTO refresh_tokens (hash, grant_id, client_id, user_id, scope, auth_time, sid, created_at, expires_at, rotated_at, dpop_jkt)
      VALUES (:hash, :grantId, :clientId, :userId, :scope, :authTime, :sid, :createdAt, :expiresAt, :rotatedAt, :dpopJkt)`,
    // RFC 9700 §4.14.2: refresh token rotation; RFC 6749 §6: the token must have been issued
    // to the authenticated client. A revoked grant's tokens are refused in the same statement.
    rotateRefreshToken: `
      UPDATE refresh_tokens SET rotated_at = :now
      WHERE hash = :hash AND client_id = :clientId AND rotated_at IS NULL AND expires_at > :now
        AND EXISTS (SELECT 1 FROM grants WHERE grants.id = refresh_tokens.grant_id AND grants.revoked_at IS NULL)
      RETURNING *`,
    getRefreshToken: 'SELECT * FROM refresh_tokens WHERE hash = :hash',

    revokeAccessToken: `
      INSERT INTO revoked_access_tokens (jti, expires_at) VALUES (:jti, :expiresAt)
      ON CONFLICT DO NOTHING`,
    getRevokedAccessToken: 'SELECT 1 AS revoked FROM revoked_access_tokens WHERE jti = :jti',

    insertCode: `
      INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, nonce,
                                       code_challenge, auth_time, sid, created_at, expires_at, consumed_at, dpop_jkt, id_token_claims)
      VALUES (:hash, :clientId, :userId, :grantId, :redirectUri, :scope, :nonce,
              :codeChallenge, :authTime, :sid, :createdAt, :expiresAt, :consumedAt, :dpopJkt, :idTokenClaims)`,
    // RFC 6749 §4.1.2: "The client MUST NOT use the authorization code more than once."
    // RFC 6749 §4.1.3 and RFC 7636 §4.6: the code is bound to its client, redirect_uri and
    // challenge; a mismatch leaves it untouched. RFC 9449 §10: a code bound to a DPoP key is
    // redeemed only with a proof by that key (a NULL :dpopJkt matches no bound code).
    consumeCode: `
      UPDATE authorization_codes SET consumed_at = :now
      WHERE hash = :hash AND consumed_at IS NULL AND expires_at > :now
        AND client_id = :clientId AND redirect_uri = :redirectUri AND code_challenge = :codeChallenge
        AND (dpop_jkt IS NULL OR dpop_jkt = :dpopJkt)
      RETURNING *`,
    getCode: 'SELECT * FROM authorization_codes WHERE hash = :hash',

    insertDevice: `
      INSERT INTO device_authorizations (device_code_hash, user_code, client_id, scope, status, poll_interval,
                                         last_polled_at, last_outcome, created_at, expires_at, request_ip,
                                         request_user_agent, user_id, auth_time, grant_id, decided_at, dpop_jkt)
      VALUES (:deviceCodeHash, :userCode, :clientId, :scope, :status, :interval,
              :lastPolledAt, NULL, :createdAt, :expiresAt, :requestIp,
              :requestUserAgent, :userId, :authTime, :grantId, :decidedAt, :dpopJkt)
      ${DEVICE_USER_CODE_CONFLICT}`,
    getDeviceByUserCode: 'SELECT * FROM device_authorizations WHERE user_code = :userCode AND expires_at > :now',
    decideDevice: `
      UPDATE device_authorizations
      SET status = :status, user_id = :userId, auth_time = :authTime, grant_id = :grantId, decided_at = :now
      WHERE user_code = :userCode AND status = 'pending' AND expires_at > :now
      RETURNING *`,
    // A device code bound to a DPoP key is polled only with a proof by that key: any other
    // poll leaves the record as it is, so it can neither take the tokens nor slow the device.
    pollDevice: `
      UPDATE device_authorizations SET ${devicePollAssignments(d.bigint(':now'))},
        dpop_jkt = COALESCE(dpop_jkt, :dpopJkt)
      WHERE device_code_hash = :deviceCodeHash AND client_id = :clientId
        AND (dpop_jkt IS NULL OR dpop_jkt = :dpopJkt)
      RETURNING *`,
    getDevice: 'SELECT * FROM device_authorizations WHERE device_code_hash = :deviceCodeHash',

    // RFC 9449 §11.1: a proof (its key and jti) is accepted once; an expired record of the
    // same proof, not yet purged, is taken over in the same statement.
    useDpopProof: `
      INSERT INTO dpop_proofs (key, expires_at) VALUES (:key, :expiresAt)
      ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at
      WHERE dpop_proofs.expires_at <= :now`,

    insertPushedRequest: `
      INSERT INTO pushed_requests (hash, client_id, params, created_at, expires_at, claimed_at, browser, decided_at)
      VALUES (:hash, :clientId, :params, :createdAt, :expiresAt, :claimedAt, :browser, :decidedAt)`,
    // RFC 9126 §4: the request_uri is used once: the first browser to bring it claims it.
    claimPushedRequest: `
      UPDATE pushed_requests SET claimed_at = :now, browser = :browser, expires_at = :until
      WHERE hash = :hash AND client_id = :clientId AND claimed_at IS NULL AND expires_at > :now
      RETURNING *`,
    resumePushedRequest: `
      SELECT * FROM pushed_requests
      WHERE hash = :hash AND client_id = :clientId AND browser = :browser AND decided_at IS NULL AND expires_at > :now`,
    getPushedRequest: 'SELECT * FROM pushed_requests WHERE hash = :hash',
    decidePushedRequest: `
      UPDATE pushed_requests SET decided_at = :now
      WHERE hash = :hash AND client_id = :clientId AND browser = :browser AND decided_at IS NULL AND expires_at > :now
      RETURNING *`,
    countPendingDevices: `SELECT COUNT(*) AS pending FROM device_authorizations WHERE status = 'pending' AND expires_at > :now`,
    removeDevicesForUser: 'DELETE FROM device_authorizations WHERE user_id = :userId',
    removeWebauthnChallengesForUser: 'DELETE FROM webauthn_challenges WHERE user_id = :userId',
    removePendingSignInsForUser: 'DELETE FROM pending_sign_ins WHERE user_id = :userId',

    insertPasswordReset: `
      INSERT INTO password_resets (token_hash, user_id, created_at, expires_at, used_at)
      VALUES (:tokenHash, :userId, :createdAt, :expiresAt, :usedAt)`,
    getPasswordReset: 'SELECT * FROM password_resets WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumePasswordReset: `
      UPDATE password_resets SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    spendPasswordResetsForUser: 'UPDATE password_resets SET used_at = :now WHERE user_id = :userId AND used_at IS NULL',

    insertEvent: `
      INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail)
      VALUES (:id, :type, :at, :userId, :username, :clientId, :grantId, :ip, :userAgent, :detail)`,
    // Run just after insertDevice, in the same commit: the event of a record that was stored.
    insertDeviceEvent: `
      INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail)
      SELECT :id, :type, :at, :userId, :username, :clientId, :grantId, :ip, :userAgent, :detail
      WHERE EXISTS (SELECT 1 FROM device_authorizations WHERE device_code_hash = :deviceCodeHash AND created_at = :createdAt)`,
    // Each filter is off when its parameter is null; the casts tell PostgreSQL the types.
    listEvents: `
      SELECT * FROM events
      WHERE ((CAST(:userId AS TEXT) IS NULL AND CAST(:username AS TEXT) IS NULL) OR user_id = :userId OR username = :username)
        AND (CAST(:clientId AS TEXT) IS NULL OR client_id = :clientId)
        AND (CAST(:type AS TEXT) IS NULL OR type = :type)
        AND (${d.bigint(':since')} IS NULL OR at >= :since)
        AND (CAST(:beforeId AS TEXT) IS NULL OR at < :beforeAt OR (at = :beforeAt AND id < :beforeId))
      ORDER BY at DESC, id DESC
      LIMIT :limit`,

    // A fixed window that starts at the first hit after the previous window ended.
    hitRateLimit: `
      INSERT INTO rate_limits (key, hits, window_ends_at) VALUES (:key, 1, :windowEndsAt)
      ON CONFLICT (key) DO UPDATE SET
        hits = CASE WHEN rate_limits.window_ends_at <= :now THEN 1 ELSE rate_limits.hits + 1 END,
        window_ends_at = CASE WHEN rate_limits.window_ends_at <= :now THEN excluded.window_ends_at
                              ELSE rate_limits.window_ends_at END
      RETURNING hits`,
    countRateLimit: 'SELECT hits FROM rate_limits WHERE key = :key AND window_ends_at > :now',
    getRateLimit: 'SELECT hits, window_ends_at FROM rate_limits WHERE key = :key AND window_ends_at > :now',
    releaseRateLimit: 'UPDATE rate_limits SET hits = hits - 1 WHERE key = :key AND window_ends_at > :now AND hits > 0',
    // A prefix compared as a substring, not with LIKE: keys hold usernames, where _ and % are literal.
    listOpenRateLimits: `
      SELECT key, hits, window_ends_at FROM rate_limits
      WHERE substr(key, 1, length(:prefix)) = :prefix AND window_ends_at > :now AND hits > 0
      ORDER BY window_ends_at DESC, key
      LIMIT :limit`,
    removeRateLimit: 'DELETE FROM rate_limits WHERE key = :key',

    insertKey: `
      INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk, created_at, activates_at, retires_at, expires_at)
      VALUES (:kid, :alg, :privateJwk, :publicJwk, :createdAt, :activatesAt, :retiresAt, :expiresAt)`,
    listPublishedKeys: `
      SELECT * FROM signing_keys WHERE expires_at IS NULL OR expires_at > :now
      ORDER BY created_at, kid`,
    scheduleKey: 'UPDATE signing_keys SET retires_at = :retiresAt, expires_at = :expiresAt WHERE kid = :kid',
    listKeys: 'SELECT * FROM signing_keys ORDER BY created_at, kid',
    setKeyPrivateJwk: 'UPDATE signing_keys SET private_jwk = :privateJwk WHERE kid = :kid',

    insertResource: `
      INSERT INTO resources (identifier, name, access_token_ttl, introspection_secret_hash, signing_alg, created_at)
      VALUES (:identifier, :name, :accessTokenTtl, :introspectionSecretHash, :signingAlg, :createdAt)
      ON CONFLICT DO NOTHING`,
    insertResourceScope: `
      INSERT INTO resource_scopes (name, resource, description, position)
      VALUES (:name, :resource, :description, :position)
      ON CONFLICT DO NOTHING`,
    getResource: 'SELECT * FROM resources WHERE identifier = :identifier',
    getResourceScopes: 'SELECT * FROM resource_scopes WHERE resource = :identifier ORDER BY position',
    listResources: 'SELECT * FROM resources ORDER BY created_at, identifier',
    listResourceScopes: 'SELECT * FROM resource_scopes ORDER BY resource, position',
    // Its scopes go with it: ON DELETE CASCADE.
    removeResource: 'DELETE FROM resources WHERE identifier = :identifier',
    updateResource: `
      UPDATE resources SET signing_alg = CASE WHEN :setSigningAlg = 1 THEN CAST(:signingAlg AS TEXT) ELSE signing_alg END
      WHERE identifier = :identifier`,
    // RFC 7523 §3: a jti is refused while an unexpired assertion used it; an expired record
    // that the purge has not yet removed gives way in the same statement.
    useClientAssertion: `
      INSERT INTO client_assertions (jti_hash, expires_at) VALUES (:jtiHash, :expiresAt)
      ON CONFLICT (jti_hash) DO UPDATE SET expires_at = excluded.expires_at
      WHERE client_assertions.expires_at <= :now`,

    ...secondFactorStatements(d),

    purgeCodes: d.purge('authorization_codes', 'hash', 'expires_at < :before'),
    purgeDevices: d.purge('device_authorizations', 'device_code_hash', 'expires_at < :before'),
    purgeSessions: d.purge('sessions', 'id_hash', 'expires_at < :before'),
    purgeRateLimits: d.purge('rate_limits', 'key', 'window_ends_at < :before'),
    purgeRefreshTokens: d.purge('refresh_tokens', 'hash', 'expires_at < :before'),
    purgeRevokedAccessTokens: d.purge('revoked_access_tokens', 'jti', 'expires_at < :before'),
    purgeClientAssertions: d.purge('client_assertions', 'jti_hash', 'expires_at < :before'),
    purgeSessionClients: d.purge('session_clients', 'sid', 'expires_at < :before'),
    purgeDpopProofs: d.purge('dpop_proofs', 'key', 'expires_at < :before'),
    purgePushedRequests: d.purge('pushed_requests', 'hash', 'expires_at < :before'),
    // A key left the JWKS at expires_at, after the last token it signed had expired.
    purgeKeys: d.purge('signing_keys', 'kid', 'expires_at < :before'),
    // Issue 12: a grant revoked, whose tokens have all expired, or under which nothing was
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
    purgePasswordResets: d.purge('password_resets', 'token_hash', 'expires_at < :before'),
    purgeEvents: d.purge('events', 'id', 'at < :before'),
  };
}

export type StatementName = keyof ReturnType<typeof statements>;

/** What `purgeExpired` runs, each in batches of `PURGE_BATCH_SIZE` until one comes back short. */
export const PURGES = ['purgeCodes', 'purgeDevices', 'purgeSessions', 'purgeRateLimits', 'purgeRefreshTokens', 'purgeRevokedAccessTokens', 'purgeClientAssertions', 'purgeSessionClients', 'purgeWebauthnChallenges', 'purgePendingSignIns', 'purgeDpopProofs', 'purgePushedRequests', 'purgeKeys', 'purgePasswordResets'] as const satisfies readonly StatementName[];

/**
 * Passkeys (WebAuthn Level 3) and one-time codes (RFC 6238): every single use is one
 * conditional statement, as for codes and device decisions.
 */
function secondFactorStatements(d: Dialect) {
  return {
    insertPasskey: `
      INSERT INTO passkeys (id, user_id, name, public_key, counter, transports, device_type, backed_up, created_at, last_used_at)
      VALUES (:id, :userId, :name, :publicKey, :counter, :transports, :deviceType, :backedUp, :createdAt, :lastUsedAt)
      ON CONFLICT DO NOTHING`,
    getPasskey: 'SELECT * FROM passkeys WHERE id = :id',
    listPasskeysForUser: 'SELECT * FROM passkeys WHERE user_id = :userId ORDER BY created_at, id',
    // WebAuthn §6.1.1: a signature counter that does not move forward (both zero excepted:
    // an authenticator without one) means a cloned authenticator, or a replay racing this
    // sign-in; either way this statement changes nothing and the caller refuses.
    recordPasskeyUse: `
      UPDATE passkeys SET counter = :counter, backed_up = :backedUp, last_used_at = :now
      WHERE id = :id AND (counter < ${d.bigint(':counter')} OR (counter = 0 AND ${d.bigint(':counter')} = 0))
      RETURNING *`,
    removePasskey: 'DELETE FROM passkeys WHERE id = :id AND user_id = :userId',
    removePasskeysForUser: 'DELETE FROM passkeys WHERE user_id = :userId',

    insertWebauthnChallenge: `
      INSERT INTO webauthn_challenges (challenge_hash, purpose, user_id, created_at, expires_at)
      VALUES (:challengeHash, :purpose, :userId, :createdAt, :expiresAt)`,
    // Single use: the one caller whose DELETE finds the row may finish the ceremony.
    consumeWebauthnChallenge: `
      DELETE FROM webauthn_challenges
      WHERE challenge_hash = :challengeHash AND purpose = :purpose AND expires_at > :now
      RETURNING *`,

    // A new secret replaces one never confirmed, never a confirmed one.
    beginTotp: `
      INSERT INTO totp_secrets (user_id, secret, created_at, confirmed_at, last_step)
      VALUES (:userId, :secret, :now, NULL, NULL)
      ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = NULL
      WHERE totp_secrets.confirmed_at IS NULL`,
    getTotp: 'SELECT * FROM totp_secrets WHERE user_id = :userId',
    confirmTotp: `
      UPDATE totp_secrets SET confirmed_at = :now, last_step = :step
      WHERE user_id = :userId AND confirmed_at IS NULL
      RETURNING *`,
    // RFC 6238 §5.2: "the verifier MUST NOT accept the second attempt of the same OTP after
    // the successful validation has been issued for the first OTP".
    useTotpStep: `
      UPDATE totp_secrets SET last_step = :step
      WHERE user_id = :userId AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ${d.bigint(':step')})`,
    removeTotp: 'DELETE FROM totp_secrets WHERE user_id = :userId',

    insertRecoveryCode: `
      INSERT INTO recovery_codes (user_id, hash, created_at, used_at) VALUES (:userId, :hash, :createdAt, NULL)`,
    consumeRecoveryCode: `
      UPDATE recovery_codes SET used_at = :now
      WHERE user_id = :userId AND hash = :hash AND used_at IS NULL`,
    countRecoveryCodes: 'SELECT COUNT(*) AS unused FROM recovery_codes WHERE user_id = :userId AND used_at IS NULL',
    removeRecoveryCodes: 'DELETE FROM recovery_codes WHERE user_id = :userId',

    insertPendingSignIn: `
      INSERT INTO pending_sign_ins (id_hash, user_id, created_at, expires_at)
      VALUES (:idHash, :userId, :createdAt, :expiresAt)`,
    getPendingSignIn: 'SELECT * FROM pending_sign_ins WHERE id_hash = :idHash AND expires_at > :now',
    consumePendingSignIn: `
      DELETE FROM pending_sign_ins WHERE id_hash = :idHash AND expires_at > :now
      RETURNING *`,

    purgeWebauthnChallenges: d.purge('webauthn_challenges', 'challenge_hash', 'expires_at < :before'),
    purgePendingSignIns: d.purge('pending_sign_ins', 'id_hash', 'expires_at < :before'),
  };
}

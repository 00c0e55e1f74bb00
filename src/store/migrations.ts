/**
 * The schema, as versioned migrations shared by both stores. Each statement is written
 * once; what differs between the dialects is the column types (SQLite keeps lists and
 * JWKs as JSON text and booleans as 0/1; PostgreSQL uses `text[]`, `jsonb`, `boolean`
 * and `bigint` millisecond timestamps), which a table's statement takes from
 * `ColumnTypes`; one that differs in more than that can branch on the dialect it is also
 * given (Ory Hydra keeps such statements per dialect: `persistence/sql/migrations`).
 *
 * Migrations are append-only: a released migration is never edited, a change is a new
 * version. Each store applies the missing ones at open, in one transaction, under a lock
 * (`BEGIN IMMEDIATE` in SQLite, `pg_advisory_xact_lock` in PostgreSQL), and records them
 * in `schema_migrations`.
 */

export type Dialect = 'sqlite' | 'postgres';

/** The column types that differ, as each dialect spells them. */
export interface ColumnTypes {
  readonly text: string;
  /** Milliseconds since the epoch. */
  readonly time: string;
  readonly integer: string;
  /** A list of strings. */
  readonly list: string;
  /** A JSON object (a JWK). */
  readonly json: string;
  /** A boolean column's type and constraints, NOT NULL (`column` is its name). */
  boolean(column: string): string;
}

const columnTypes: Readonly<Record<Dialect, ColumnTypes>> = {
  sqlite: {
    text: 'TEXT',
    time: 'INTEGER',
    integer: 'INTEGER',
    list: 'TEXT',
    json: 'TEXT',
    boolean: (column) => `INTEGER NOT NULL CHECK (${column} IN (0, 1))`,
  },
  postgres: { text: 'text', time: 'bigint', integer: 'integer', list: 'text[]', json: 'jsonb', boolean: () => 'boolean NOT NULL' },
};

/**
 * One statement: the same text for both dialects, or a text written over their column
 * types; null where a dialect has nothing to do (a PostgreSQL trigger, say).
 */
export type MigrationStatement = string | ((t: ColumnTypes, dialect: Dialect) => string | null);

/** One schema version. `version` orders migrations and is what `schema_migrations` records. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly MigrationStatement[];
}

/** The text of `statement` for `dialect`, or null when it has none for that dialect. */
export function statementFor(statement: MigrationStatement, dialect: Dialect): string | null {
  return typeof statement === 'string' ? statement : statement(columnTypes[dialect], dialect);
}

const initial: Migration = {
  version: 1,
  name: 'initial',
  statements: [
    (t) => `CREATE TABLE clients (
      id            ${t.text} PRIMARY KEY,
      name          ${t.text} NOT NULL,
      secret_hash   ${t.text},
      redirect_uris ${t.list} NOT NULL,
      scopes        ${t.list} NOT NULL,
      grant_types   ${t.list} NOT NULL,
      web_origins   ${t.list} NOT NULL,
      created_at    ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE users (
      id             ${t.text} PRIMARY KEY,
      username       ${t.text} NOT NULL UNIQUE,
      password_hash  ${t.text} NOT NULL,
      name           ${t.text},
      email          ${t.text},
      email_verified ${t.boolean('email_verified')},
      disabled       ${t.boolean('disabled')},
      created_at     ${t.time} NOT NULL
    )`,
    // Users are never deleted (their id is the OIDC `sub`), so references to them need no
    // cascade. Everything issued to a client goes with it (ClientStore.remove).
    (t) => `CREATE TABLE sessions (
      id_hash    ${t.text} PRIMARY KEY,
      user_id    ${t.text} NOT NULL REFERENCES users (id),
      auth_time  ${t.time} NOT NULL,
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE grants (
      id                  ${t.text} PRIMARY KEY,
      user_id             ${t.text} NOT NULL REFERENCES users (id),
      client_id           ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      scope               ${t.list} NOT NULL,
      kind                ${t.text} NOT NULL CHECK (kind IN ('authorization_code', 'urn:ietf:params:oauth:grant-type:device_code')),
      auth_time           ${t.time} NOT NULL,
      created_at          ${t.time} NOT NULL,
      revoked_at          ${t.time},
      device_ip           ${t.text},
      device_user_agent   ${t.text},
      device_requested_at ${t.time}
    )`,
    (t) => `CREATE TABLE authorization_codes (
      hash           ${t.text} PRIMARY KEY,
      client_id      ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      user_id        ${t.text} NOT NULL REFERENCES users (id),
      grant_id       ${t.text} NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
      redirect_uri   ${t.text} NOT NULL,
      scope          ${t.list} NOT NULL,
      nonce          ${t.text},
      code_challenge ${t.text} NOT NULL,
      auth_time      ${t.time} NOT NULL,
      created_at     ${t.time} NOT NULL,
      expires_at     ${t.time} NOT NULL,
      consumed_at    ${t.time}
    )`,
    // grant_id is not a foreign key here: it is recorded by the user's decision, and the
    // flow may write the grant only after winning that decision. `last_outcome` is what
    // the latest poll found, written and returned by the poll's one UPDATE.
    (t) => `CREATE TABLE device_authorizations (
      device_code_hash   ${t.text} PRIMARY KEY,
      user_code          ${t.text} NOT NULL UNIQUE,
      client_id          ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      scope              ${t.list} NOT NULL,
      status             ${t.text} NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
      poll_interval      ${t.integer} NOT NULL,
      last_polled_at     ${t.time},
      last_outcome       ${t.text} CHECK (last_outcome IN ('expired', 'consumed', 'denied', 'slow_down', 'issue', 'pending')),
      created_at         ${t.time} NOT NULL,
      expires_at         ${t.time} NOT NULL,
      request_ip         ${t.text} NOT NULL,
      request_user_agent ${t.text},
      user_id            ${t.text} REFERENCES users (id),
      auth_time          ${t.time},
      grant_id           ${t.text},
      decided_at         ${t.time}
    )`,
    (t) => `CREATE TABLE rate_limits (
      key            ${t.text} PRIMARY KEY,
      hits           ${t.integer} NOT NULL,
      window_ends_at ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE signing_keys (
      kid          ${t.text} PRIMARY KEY,
      alg          ${t.text} NOT NULL CHECK (alg IN ('RS256', 'ES256')),
      private_jwk  ${t.json} NOT NULL,
      public_jwk   ${t.json} NOT NULL,
      created_at   ${t.time} NOT NULL,
      activates_at ${t.time} NOT NULL,
      retires_at   ${t.time},
      expires_at   ${t.time}
    )`,
    // purgeExpired deletes by expiry; listForUser reads a user's grants newest first; the
    // client_id and grant_id indexes keep ON DELETE CASCADE from scanning whole tables.
    'CREATE INDEX sessions_expires_at ON sessions (expires_at)',
    'CREATE INDEX grants_user_id_created_at ON grants (user_id, created_at)',
    'CREATE INDEX grants_client_id ON grants (client_id)',
    'CREATE INDEX authorization_codes_expires_at ON authorization_codes (expires_at)',
    'CREATE INDEX authorization_codes_client_id ON authorization_codes (client_id)',
    'CREATE INDEX authorization_codes_grant_id ON authorization_codes (grant_id)',
    'CREATE INDEX device_authorizations_expires_at ON device_authorizations (expires_at)',
    'CREATE INDEX device_authorizations_client_id ON device_authorizations (client_id)',
    'CREATE INDEX rate_limits_window_ends_at ON rate_limits (window_ends_at)',
    'CREATE INDEX signing_keys_expires_at ON signing_keys (expires_at)',
  ],
};

/**
 * Version 3, the token lifecycle: refresh tokens (stored by hash, rotated on every use and
 * kept after rotation so that reuse is recognised), access tokens revoked one by one, and
 * when each grant was last used and until when its tokens live (the account page).
 */
const tokenLifecycle: Migration = {
  version: 3,
  name: 'token lifecycle',
  statements: [
    (t) => `ALTER TABLE grants ADD COLUMN last_used_at ${t.time}`,
    (t) => `ALTER TABLE grants ADD COLUMN active_until ${t.time}`,
    // client_id has no foreign key of its own: removing a client removes its grants, and
    // their refresh tokens go with them.
    (t) => `CREATE TABLE refresh_tokens (
      hash       ${t.text} PRIMARY KEY,
      grant_id   ${t.text} NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
      client_id  ${t.text} NOT NULL,
      user_id    ${t.text} NOT NULL REFERENCES users (id),
      scope      ${t.list} NOT NULL,
      auth_time  ${t.time} NOT NULL,
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL,
      rotated_at ${t.time}
    )`,
    (t) => `CREATE TABLE revoked_access_tokens (
      jti        ${t.text} PRIMARY KEY,
      expires_at ${t.time} NOT NULL
    )`,
    'CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at)',
    'CREATE INDEX refresh_tokens_grant_id ON refresh_tokens (grant_id)',
    'CREATE INDEX revoked_access_tokens_expires_at ON revoked_access_tokens (expires_at)',
  ],
};

/**
 * Version 4: PostgreSQL announces every change to a client (RFC 6749 §2 registration:
 * secret, redirect URIs, removal) on the `tessera_clients` channel when it commits, with
 * the payload `<schema> <client id>`, so that each instance may keep client records in
 * memory and drop one the moment it changes (src/store/postgres/client-cache.ts). A
 * trigger rather than a statement in the store: every change notifies, whoever makes it,
 * and the notice commits or rolls back with the change. SQLite has no cache to keep true.
 */
const clientChangeNotices: Migration = {
  version: 4,
  name: 'client change notices',
  statements: [
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE FUNCTION tessera_client_changed() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              PERFORM pg_notify('tessera_clients', TG_TABLE_SCHEMA || ' ' || OLD.id);
              RETURN NULL;
            END
          $$`
        : null,
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE TRIGGER clients_changed AFTER UPDATE OR DELETE ON clients
            FOR EACH ROW EXECUTE FUNCTION tessera_client_changed()`
        : null,
  ],
};

/**
 * Version 5, clients that connect as the standard libraries do: how each authenticates
 * (RFC 7591 §2 `token_endpoint_auth_method`; existing clients keep HTTP Basic, or `none`
 * when public), the secret a rotation replaced and until when it is still accepted, the
 * public keys of a `private_key_jwt` client (a URL or a registered JWK Set), whether it may
 * go without PKCE, and the ids of used client assertions, kept until they expire (RFC 7523
 * §3). The new columns have defaults, so the ALTERs rewrite nothing.
 */
const clientAuthentication: Migration = {
  version: 5,
  name: 'client authentication',
  statements: [
    (t) => `ALTER TABLE clients ADD COLUMN auth_method ${t.text} NOT NULL DEFAULT 'client_secret_basic'
      CHECK (auth_method IN ('client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'))`,
    "UPDATE clients SET auth_method = 'none' WHERE secret_hash IS NULL",
    (t) => `ALTER TABLE clients ADD COLUMN previous_secret_hash ${t.text}`,
    (t) => `ALTER TABLE clients ADD COLUMN previous_secret_expires_at ${t.time}`,
    (t) => `ALTER TABLE clients ADD COLUMN jwks_uri ${t.text}`,
    (t) => `ALTER TABLE clients ADD COLUMN jwks ${t.json}`,
    (t) => `ALTER TABLE clients ADD COLUMN pkce ${t.text} NOT NULL DEFAULT 'required' CHECK (pkce IN ('required', 'optional'))`,
    (t) => `CREATE TABLE client_assertions (
      jti_hash   ${t.text} PRIMARY KEY,
      expires_at ${t.time} NOT NULL
    )`,
    'CREATE INDEX client_assertions_expires_at ON client_assertions (expires_at)',
  ],
};

/**
 * Version 8, single sign-on (OIDC Core §3.1.2.1 prompt, RP-Initiated Logout 1.0, Back-Channel
 * Logout 1.0):
 * - clients: `first_party` (the operator's own apps skip the consent page in the code flow),
 *   the `post_logout_redirect_uris` an app may be sent back to after logout, and the
 *   `backchannel_logout_uri` logout tokens are posted to;
 * - grants: `remembered` marks the one live code-flow grant of a user and client that stands
 *   for their consent (approvals grow it instead of adding rows; a partial unique index
 *   keeps it one), and `renewed_at` the last time it was approved again, from which its
 *   refresh tokens' lifetime runs. Grants made before this version are not remembered;
 *   the next sign-in asks once more;
 * - sessions: `sid` (the OIDC session id put in ID tokens and logout tokens, not the cookie),
 *   and where the browser signed in from, for the account page. Sessions that exist at
 *   the upgrade get a random sid;
 * - codes and refresh tokens carry the sid of the session they came from, and
 *   `session_clients` records which clients received an ID token in which session.
 */
const singleSignOn: Migration = {
  version: 8,
  name: 'single sign-on',
  statements: [
    (t, dialect) => `ALTER TABLE clients ADD COLUMN first_party ${t.boolean('first_party')} DEFAULT ${dialect === 'postgres' ? 'false' : '0'}`,
    (t, dialect) => `ALTER TABLE clients ADD COLUMN post_logout_redirect_uris ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t) => `ALTER TABLE clients ADD COLUMN backchannel_logout_uri ${t.text}`,
    (t, dialect) => `ALTER TABLE grants ADD COLUMN remembered ${t.boolean('remembered')} DEFAULT ${dialect === 'postgres' ? 'false' : '0'}`,
    (t) => `ALTER TABLE grants ADD COLUMN renewed_at ${t.time}`,
    'CREATE UNIQUE INDEX grants_remembered ON grants (user_id, client_id) WHERE remembered = TRUE AND revoked_at IS NULL',
    (t) => `ALTER TABLE sessions ADD COLUMN sid ${t.text}`,
    (t) => `ALTER TABLE sessions ADD COLUMN ip ${t.text}`,
    (t) => `ALTER TABLE sessions ADD COLUMN user_agent ${t.text}`,
    (_, dialect) => `UPDATE sessions SET sid = ${dialect === 'postgres' ? 'md5(random()::text || id_hash)' : 'lower(hex(randomblob(16)))'}`,
    'CREATE INDEX sessions_user_id ON sessions (user_id)',
    'CREATE INDEX sessions_sid ON sessions (sid)',
    (t) => `ALTER TABLE authorization_codes ADD COLUMN sid ${t.text}`,
    (t) => `ALTER TABLE refresh_tokens ADD COLUMN sid ${t.text}`,
    // No foreign key to sessions: a sid outlives the session row that carried it when the
    // same person signs in again (a new cookie, the same OIDC session).
    (t) => `CREATE TABLE session_clients (
      sid        ${t.text} NOT NULL,
      client_id  ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      expires_at ${t.time} NOT NULL,
      PRIMARY KEY (sid, client_id)
    )`,
    'CREATE INDEX session_clients_expires_at ON session_clients (expires_at)',
    'CREATE INDEX session_clients_client_id ON session_clients (client_id)',
  ],
};

/**
 * Version 7, for operators: the audit trail (`events`, kept for TESSERA_EVENT_RETENTION and
 * read newest first, by user or client), single-use password reset links stored by the hash
 * of their token, and an index to end all of a user's sessions at once when the user is
 * disabled or removed. Events name users and clients without foreign keys: the trail
 * outlives what it describes (a removed user's sign-ins stay on record).
 */
const operators: Migration = {
  version: 7,
  name: 'operators',
  statements: [
    (t) => `CREATE TABLE events (
      id         ${t.text} PRIMARY KEY,
      type       ${t.text} NOT NULL,
      at         ${t.time} NOT NULL,
      user_id    ${t.text},
      username   ${t.text},
      client_id  ${t.text},
      grant_id   ${t.text},
      ip         ${t.text},
      user_agent ${t.text},
      detail     ${t.json} NOT NULL
    )`,
    'CREATE INDEX events_at ON events (at)',
    'CREATE INDEX events_user_id_at ON events (user_id, at)',
    'CREATE INDEX events_client_id_at ON events (client_id, at)',
    (t) => `CREATE TABLE password_resets (
      token_hash ${t.text} PRIMARY KEY,
      user_id    ${t.text} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL,
      used_at    ${t.time}
    )`,
    'CREATE INDEX password_resets_expires_at ON password_resets (expires_at)',
    'CREATE INDEX password_resets_user_id ON password_resets (user_id)',
    'CREATE INDEX device_authorizations_user_id ON device_authorizations (user_id)',
  ],
};

/**
 * Version 9, API resources (RFC 8707): each with its scopes, whose names are unique across
 * the server (the primary key of `resource_scopes`), so that a granted scope names its API.
 * Grants keep only their scope: removing a resource ends its grants' access to it, since
 * their scopes no longer name it.
 */
const apiResources: Migration = {
  version: 9,
  name: 'api resources',
  statements: [
    (t) => `CREATE TABLE resources (
      identifier                ${t.text} PRIMARY KEY,
      name                      ${t.text} NOT NULL,
      access_token_ttl          ${t.integer},
      introspection_secret_hash ${t.text},
      created_at                ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE resource_scopes (
      name        ${t.text} PRIMARY KEY,
      resource    ${t.text} NOT NULL REFERENCES resources (identifier) ON DELETE CASCADE,
      description ${t.text} NOT NULL,
      position    ${t.integer} NOT NULL
    )`,
    'CREATE INDEX resource_scopes_resource ON resource_scopes (resource)',
  ],
};

/**
 * Version 10, sender-constrained tokens and pushed requests. DPoP (RFC 9449): the key
 * thumbprint a code (§10), a device code or a public client's refresh token (§5) is bound
 * to, the proof ids seen within the proof window (§11.1), and the clients that must use it.
 * PAR (RFC 9126): pushed authorization requests by the hash of their `request_uri`, and the
 * clients that must push.
 */
const senderConstraint: Migration = {
  version: 10,
  name: 'dpop and pushed authorization requests',
  statements: [
    (t) => `ALTER TABLE clients ADD COLUMN require_dpop ${t.boolean('require_dpop')} DEFAULT FALSE`,
    (t) => `ALTER TABLE clients ADD COLUMN require_par ${t.boolean('require_par')} DEFAULT FALSE`,
    (t) => `ALTER TABLE authorization_codes ADD COLUMN dpop_jkt ${t.text}`,
    (t) => `ALTER TABLE device_authorizations ADD COLUMN dpop_jkt ${t.text}`,
    (t) => `ALTER TABLE refresh_tokens ADD COLUMN dpop_jkt ${t.text}`,
    // `key` is a hash of the proof's key thumbprint and jti: a jti is unique per key.
    (t) => `CREATE TABLE dpop_proofs (
      key        ${t.text} PRIMARY KEY,
      expires_at ${t.time} NOT NULL
    )`,
    // `browser` is the hash of the CSRF cookie of the browser that first brought the
    // request_uri to the authorization endpoint: from then on, only that browser goes on.
    (t) => `CREATE TABLE pushed_requests (
      hash       ${t.text} PRIMARY KEY,
      client_id  ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      params     ${t.json} NOT NULL,
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL,
      claimed_at ${t.time},
      browser    ${t.text},
      decided_at ${t.time}
    )`,
    'CREATE INDEX dpop_proofs_expires_at ON dpop_proofs (expires_at)',
    'CREATE INDEX pushed_requests_expires_at ON pushed_requests (expires_at)',
    'CREATE INDEX pushed_requests_client_id ON pushed_requests (client_id)',
  ],
};

/**
 * Version 11, passkeys and one-time codes. A session and a grant remember how the person
 * signed in (RFC 8176 `amr`; null in a row from before: a password); a client may require
 * a phishing-resistant sign-in. Passkeys keep the signature counter and backup state the
 * last sign-in reported (WebAuthn §6.1.1, §6.3.3); ceremony challenges and sign-ins that
 * wait for their one-time code live here, not in one instance's memory, so any instance can
 * finish what another began. Recovery codes are stored hashed; a TOTP secret cannot be (the
 * server computes codes from it).
 */
const secondFactors: Migration = {
  version: 11,
  name: 'passkeys and one-time codes',
  statements: [
    (t) => `ALTER TABLE sessions ADD COLUMN amr ${t.list}`,
    (t) => `ALTER TABLE grants ADD COLUMN amr ${t.list}`,
    (t) => `ALTER TABLE grants ADD COLUMN acr ${t.text}`,
    (t, dialect) =>
      `ALTER TABLE clients ADD COLUMN require_phishing_resistant ${t.boolean('require_phishing_resistant')} DEFAULT ${dialect === 'postgres' ? 'false' : '0'}`,
    // The credential id is the authenticator's, base64url; the counter is an unsigned 32-bit
    // number, which a PostgreSQL integer cannot hold: it takes the time column's bigint.
    (t) => `CREATE TABLE passkeys (
      id           ${t.text} PRIMARY KEY,
      user_id      ${t.text} NOT NULL REFERENCES users (id),
      name         ${t.text} NOT NULL,
      public_key   ${t.text} NOT NULL,
      counter      ${t.time} NOT NULL,
      transports   ${t.list} NOT NULL,
      device_type  ${t.text} NOT NULL CHECK (device_type IN ('singleDevice', 'multiDevice')),
      backed_up    ${t.boolean('backed_up')},
      created_at   ${t.time} NOT NULL,
      last_used_at ${t.time}
    )`,
    (t) => `CREATE TABLE webauthn_challenges (
      challenge_hash ${t.text} PRIMARY KEY,
      purpose        ${t.text} NOT NULL CHECK (purpose IN ('register', 'authenticate')),
      user_id        ${t.text} REFERENCES users (id),
      created_at     ${t.time} NOT NULL,
      expires_at     ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE totp_secrets (
      user_id      ${t.text} PRIMARY KEY REFERENCES users (id),
      secret       ${t.text} NOT NULL,
      created_at   ${t.time} NOT NULL,
      confirmed_at ${t.time},
      last_step    ${t.time}
    )`,
    (t) => `CREATE TABLE recovery_codes (
      user_id    ${t.text} NOT NULL REFERENCES users (id),
      hash       ${t.text} NOT NULL,
      created_at ${t.time} NOT NULL,
      used_at    ${t.time},
      PRIMARY KEY (user_id, hash)
    )`,
    (t) => `CREATE TABLE pending_sign_ins (
      id_hash    ${t.text} PRIMARY KEY,
      user_id    ${t.text} NOT NULL REFERENCES users (id),
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL
    )`,
    'CREATE INDEX passkeys_user_id ON passkeys (user_id)',
    'CREATE INDEX webauthn_challenges_expires_at ON webauthn_challenges (expires_at)',
    'CREATE INDEX pending_sign_ins_expires_at ON pending_sign_ins (expires_at)',
  ],
};

/**
 * Version 6 (security hardening): indexes for the purge of spent grants, and the
 * networks a client's devices may start a device authorization from
 * (draft-ietf-oauth-cross-device-security; empty: any).
 */
const securityHardening: Migration = {
  version: 6,
  name: 'security hardening',
  statements: [
    'CREATE INDEX grants_revoked_at ON grants (revoked_at)',
    'CREATE INDEX grants_active_until ON grants (active_until)',
    'CREATE INDEX grants_created_at ON grants (created_at)',
    (t, dialect) => `ALTER TABLE clients ADD COLUMN device_networks ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
  ],
};

/**
 * Version 12: the standard claims of a person (OIDC Core §5.1) beyond `name`,
 * `email` and `email_verified`, and when their profile last changed (`updated_at`, the
 * account's creation for those from before); the claims a code's ID token carries (the
 * `claims` parameter, OIDC Core §5.5); and the algorithm an API's access tokens are
 * signed with, RS256 unless the operator chooses otherwise (RFC 9068 §2.1 promises
 * resource servers only RS256), for APIs from before too.
 */
const standardClaims: Migration = {
  version: 12,
  name: 'standard claims',
  statements: [
    (t) => `ALTER TABLE users ADD COLUMN given_name ${t.text}`,
    (t) => `ALTER TABLE users ADD COLUMN family_name ${t.text}`,
    (t) => `ALTER TABLE users ADD COLUMN locale ${t.text}`,
    (t) => `ALTER TABLE users ADD COLUMN zoneinfo ${t.text}`,
    (t) => `ALTER TABLE users ADD COLUMN picture ${t.text}`,
    (t) => `ALTER TABLE users ADD COLUMN updated_at ${t.time}`,
    'UPDATE users SET updated_at = created_at',
    (t, dialect) => `ALTER TABLE authorization_codes ADD COLUMN id_token_claims ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t) => `ALTER TABLE resources ADD COLUMN signing_alg ${t.text} NOT NULL DEFAULT 'RS256' CHECK (signing_alg IN ('RS256', 'ES256'))`,
  ],
};

/**
 * Version 13 (the admin API): a client's registration version, which every update
 * moves on (the admin API's ETag: an update made against an older version is refused, so two
 * admins cannot overwrite each other's change unseen), and when its own tokens (the
 * client_credentials grant's, which no grant records) were last all revoked.
 */
const adminApi: Migration = {
  version: 13,
  name: 'admin API',
  statements: [
    (t) => `ALTER TABLE clients ADD COLUMN version ${t.integer} NOT NULL DEFAULT 1`,
    (t) => `ALTER TABLE clients ADD COLUMN tokens_revoked_at ${t.time}`,
  ],
};

/**
 * Refuses a database that a newer Tessera has migrated: this code does not know its
 * schema, and there are no down migrations to return to one it knows.
 */
export function checkKnownVersions(applied: ReadonlySet<number>, known: readonly Migration[]): void {
  const versions = new Set(known.map((migration) => migration.version));
  const unknown = [...applied].filter((version) => !versions.has(version));
  if (unknown.length > 0) {
    throw new Error(`the database has schema migrations this version of Tessera does not know (${unknown.join(', ')}): a newer version migrated it`);
  }
}

/**
 * Version 14 (OpenID certification): the algorithm a client's request objects must
 * use (RFC 9101; null: any asymmetric one), and whether a client without PKCE may also go
 * without a nonce (the `pkce` column's CHECK cannot take a third value in SQLite, so the
 * policy `optional-without-nonce` is `optional` here with `nonce_required` false).
 */
const certification: Migration = {
  version: 14,
  name: 'request objects and nonce policy',
  statements: [
    (t) => `ALTER TABLE clients ADD COLUMN request_object_signing_alg ${t.text}`,
    (t) => `ALTER TABLE clients ADD COLUMN nonce_required ${t.boolean('nonce_required')} DEFAULT TRUE`,
  ],
};

/**
 * Version 18: upstream identity providers. A provider's kind-specific settings
 * are one JSON object and its secret (a client secret, a bind password) another, encrypted
 * under the key encryption key before it gets here. A linked identity is a person at a
 * provider, linked to the user they sign in as; a sign-in under way upstream is kept by the
 * hash of its state until the provider sends the browser back. Links and sign-ins under way
 * go with their provider, and links with their user (ON DELETE CASCADE).
 */
const identityProviders: Migration = {
  version: 18,
  name: 'identity providers',
  statements: [
    (t) => `CREATE TABLE identity_providers (
      id         ${t.text} PRIMARY KEY,
      kind       ${t.text} NOT NULL CHECK (kind IN ('oidc', 'github', 'ldap')),
      name       ${t.text} NOT NULL,
      position   ${t.integer} NOT NULL,
      settings   ${t.json} NOT NULL,
      secret     ${t.json},
      created_at ${t.time} NOT NULL,
      updated_at ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE linked_identities (
      provider_id  ${t.text} NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
      subject      ${t.text} NOT NULL,
      user_id      ${t.text} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      label        ${t.text},
      groups       ${t.list} NOT NULL,
      created_at   ${t.time} NOT NULL,
      last_used_at ${t.time},
      PRIMARY KEY (provider_id, subject)
    )`,
    (t) => `CREATE TABLE upstream_logins (
      state_hash    ${t.text} PRIMARY KEY,
      provider_id   ${t.text} NOT NULL REFERENCES identity_providers (id) ON DELETE CASCADE,
      nonce         ${t.text} NOT NULL,
      code_verifier ${t.text} NOT NULL,
      return_to     ${t.text} NOT NULL,
      client_id     ${t.text},
      created_at    ${t.time} NOT NULL,
      expires_at    ${t.time} NOT NULL
    )`,
    'CREATE INDEX linked_identities_user_id ON linked_identities (user_id)',
    'CREATE INDEX upstream_logins_expires_at ON upstream_logins (expires_at)',
  ],
};

/**
 * Version 15 (the operator console): the role a person holds in the console
 * (`admin`, `support`, `viewer`), none for everyone from before.
 */
const operatorRoles: Migration = {
  version: 15,
  name: 'operator roles',
  statements: [(t) => `ALTER TABLE users ADD COLUMN role ${t.text} CHECK (role IN ('admin', 'support', 'viewer'))`],
};

/**
 * Version 17 (apps that register themselves): who registered a client (the
 * operator, RFC 7591 dynamic registration, or a Client ID Metadata Document) and whether the
 * operator has verified it; the hashed registration access tokens of RFC 7592; the
 * operator's initial access tokens (RFC 7591 §3, single table, used up by one conditional
 * UPDATE); and the fetched metadata documents, cached by URL.
 */
const selfRegistration: Migration = {
  version: 17,
  name: 'dynamic client registration',
  statements: [
    (t) =>
      `ALTER TABLE clients ADD COLUMN registered_by ${t.text} NOT NULL DEFAULT 'operator' CHECK (registered_by IN ('operator', 'dynamic', 'metadata_document'))`,
    (t) => `ALTER TABLE clients ADD COLUMN verified ${t.boolean('verified')} DEFAULT FALSE`,
    (t) => `CREATE TABLE registration_tokens (
      client_id  ${t.text} PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
      token_hash ${t.text} NOT NULL,
      issued_at  ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE initial_access_tokens (
      id          ${t.text} PRIMARY KEY,
      token_hash  ${t.text} NOT NULL UNIQUE,
      created_at  ${t.time} NOT NULL,
      expires_at  ${t.time} NOT NULL,
      max_uses    ${t.integer},
      uses        ${t.integer} NOT NULL DEFAULT 0
    )`,
    'CREATE INDEX initial_access_tokens_expires_at ON initial_access_tokens (expires_at)',
    (t) => `CREATE TABLE client_metadata_documents (
      url        ${t.text} PRIMARY KEY,
      document   ${t.json},
      problem    ${t.text},
      fetched_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL
    )`,
    'CREATE INDEX client_metadata_documents_expires_at ON client_metadata_documents (expires_at)',
  ],
};

/**
 * Version 19 (ID tokens that say what happened): a code and a refresh token keep how the
 * person signed in for their approval (`amr`, `acr`; a remembered grant keeps only its
 * latest approval's), and a refresh token the claims the original request asked for in the
 * ID token (the `claims` parameter, OIDC Core §5.5), which refreshed ID tokens repeat
 * (§12.2). Null and empty in rows from before: the grant's, and no claims, as until now.
 */
const refreshedIdTokens: Migration = {
  version: 19,
  name: 'sign-in facts on codes and refresh tokens',
  statements: [
    (t) => `ALTER TABLE authorization_codes ADD COLUMN amr ${t.list}`,
    (t) => `ALTER TABLE authorization_codes ADD COLUMN acr ${t.text}`,
    (t, dialect) => `ALTER TABLE refresh_tokens ADD COLUMN id_token_claims ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t) => `ALTER TABLE refresh_tokens ADD COLUMN amr ${t.list}`,
    (t) => `ALTER TABLE refresh_tokens ADD COLUMN acr ${t.text}`,
  ],
};

/**
 * Version 20 (names in the person's languages): a person's names in other
 * languages and scripts (OIDC Core §5.2), and the `claims_locales` a request asked for, kept
 * with its code and its refresh token as the `claims` parameter is, so that refreshed ID
 * tokens name the person as the first did. Null and empty in rows from before: none.
 */
const localizedNames: Migration = {
  version: 20,
  name: 'names in other languages',
  statements: [
    (t) => `ALTER TABLE users ADD COLUMN localized_names ${t.json}`,
    (t, dialect) => `ALTER TABLE authorization_codes ADD COLUMN claims_locales ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t, dialect) => `ALTER TABLE refresh_tokens ADD COLUMN claims_locales ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
  ],
};

/**
 * Version 21 (a second step remembers the first): a sign-in waiting for its one-time code
 * keeps the methods its first step proved (RFC 8176 `amr`), so a sign-in through an upstream
 * provider that checked no password here is not recorded as one after the code. Rows from
 * before were all password sign-ins.
 */
const pendingSignInMethods: Migration = {
  version: 21,
  name: 'methods of a sign-in waiting for its code',
  statements: [(t, dialect) => `ALTER TABLE pending_sign_ins ADD COLUMN amr ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{pwd}'" : `'["pwd"]'`}`],
};

/**
 * Version 22 (self-registration without bound): when an app that registered itself
 * was first used (approved by a person, or given a token), so that the purge can remove those
 * never used after TESSERA_UNUSED_REGISTRATION_RETENTION. Null for the operator's clients,
 * which are never purged. The self-registered clients already there count as used (from their
 * creation): whether they were cannot be told now, and removing an app in use would break it.
 * The partial index holds only the clients the purge looks at.
 */
const unusedRegistrations: Migration = {
  version: 22,
  name: 'first use of self-registered clients',
  statements: [
    (t) => `ALTER TABLE clients ADD COLUMN used_at ${t.time}`,
    "UPDATE clients SET used_at = created_at WHERE registered_by <> 'operator'",
    "CREATE INDEX clients_unused ON clients (created_at) WHERE used_at IS NULL AND registered_by <> 'operator'",
  ],
};

/**
 * Version 23 (every standard claim): the rest of a person's OIDC Core §5.1 claims,
 * `middle_name`, `nickname`, `profile`, `website`, `gender`, `birthdate`, `phone_number` and
 * `phone_number_verified`, and their postal `address` (§5.1.1) as one JSON object. Null and
 * false in rows from before: none.
 */
const everyStandardClaim: Migration = {
  version: 23,
  name: 'every standard claim',
  statements: [
    ...['middle_name', 'nickname', 'profile', 'website', 'gender', 'birthdate', 'phone_number'].map(
      (column) => (t: ColumnTypes) => `ALTER TABLE users ADD COLUMN ${column} ${t.text}`,
    ),
    (t, dialect) =>
      `ALTER TABLE users ADD COLUMN phone_number_verified ${t.boolean('phone_number_verified')} DEFAULT ${dialect === 'postgres' ? 'false' : '0'}`,
    (t) => `ALTER TABLE users ADD COLUMN address ${t.json}`,
  ],
};

/**
 * Version 24 (events out): webhooks and their outbox. A webhook is a URL, the event
 * types it hears (the public names of core/webhook-events.ts) and its signing secret, sealed
 * under the key encryption key as providers' secrets are (it must be used in clear to sign);
 * a rotated one keeps signing beside the new one until `previous_secret_expires_at`.
 *
 * The outbox is written by a trigger on `events`, per dialect: each event of a type some
 * webhook hears adds one delivery row per such webhook, in the transaction that stores the
 * event, so a change, its event and its deliveries commit or roll back together, and no code
 * path can store an event and forget to announce it. The trigger's WHEN names the types that
 * have a webhook name at all: a token request's event (`code.redeemed`, `refresh.rotated`)
 * does not run the trigger's body. Its CASE is core/webhook-events.ts's map written in SQL
 * (the store contract suite checks that they agree); a change to the map is a new migration
 * that replaces the trigger.
 *
 * A delivery is keyed by its webhook and event (the event's id is the message's
 * `webhook-id`, the same on every try and every endpoint), `pending` until it is `delivered`
 * or `dead` (given up after the retry window: a dead letter an operator can replay). Whoever
 * sends it holds a lease (`lease_until`); `attempts` fences a late answer from an instance
 * whose lease ran out. `queued_at` starts the retry window (again, on a replay). Deliveries
 * go with their webhook, and with their event when the audit trail is purged.
 */
const WEBHOOK_TYPE_OF_EVENT = `CASE NEW.type
  WHEN 'user.role_changed' THEN 'user.updated'
  WHEN 'user.removed' THEN 'user.deleted'
  WHEN 'password.changed' THEN 'user.credential_changed'
  WHEN 'user.password_set' THEN 'user.credential_changed'
  WHEN 'user.password_reset' THEN 'user.credential_changed'
  WHEN 'second_factor.reset' THEN 'user.credential_changed'
  WHEN 'logout' THEN 'session.ended'
  WHEN 'client.registered' THEN 'client.created'
  WHEN 'client.removed' THEN 'client.deleted'
  ELSE NEW.type END`;
/** The events a webhook is told of (core/webhook-events.ts), as the outbox triggers since version 24 know them. */
const WEBHOOK_SOURCE_TYPE_NAMES = [
  ...['user.created', 'user.updated', 'user.role_changed', 'user.disabled', 'user.enabled', 'user.removed'],
  ...['password.changed', 'user.password_set', 'user.password_reset', 'second_factor.reset', 'logout', 'grant.revoked'],
  ...['client.created', 'client.registered', 'client.updated', 'client.removed', 'signin.failed'],
];
const WEBHOOK_SOURCE_TYPES = `NEW.type IN (${WEBHOOK_SOURCE_TYPE_NAMES.map((type) => `'${type}'`).join(', ')})`;

const webhooks: Migration = {
  version: 24,
  name: 'webhooks and their outbox',
  statements: [
    (t) => `CREATE TABLE webhooks (
      id                         ${t.text} PRIMARY KEY,
      url                        ${t.text} NOT NULL,
      events                     ${t.list} NOT NULL,
      secret                     ${t.json} NOT NULL,
      previous_secret            ${t.json},
      previous_secret_expires_at ${t.time},
      created_at                 ${t.time} NOT NULL,
      updated_at                 ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE webhook_deliveries (
      webhook_id      ${t.text} NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event_id        ${t.text} NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      event_at        ${t.time} NOT NULL,
      state           ${t.text} NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
      attempts        ${t.integer} NOT NULL,
      queued_at       ${t.time} NOT NULL,
      next_attempt_at ${t.time} NOT NULL,
      lease_until     ${t.time},
      delivered_at    ${t.time},
      last_status     ${t.integer},
      last_error      ${t.text},
      PRIMARY KEY (webhook_id, event_id)
    )`,
    // The oldest pending delivery of a webhook (its head), and what is due anywhere.
    'CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook_id, state, event_at, event_id)',
    "CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'",
    'CREATE INDEX webhook_deliveries_event_id ON webhook_deliveries (event_id)',
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE FUNCTION tessera_webhook_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO webhook_deliveries (webhook_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT w.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM webhooks w
              WHERE (${WEBHOOK_TYPE_OF_EVENT}) = ANY (w.events);
              RETURN NULL;
            END
          $$`
        : null,
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events
            FOR EACH ROW WHEN (${WEBHOOK_SOURCE_TYPES}) EXECUTE FUNCTION tessera_webhook_outbox()`
        : `CREATE TRIGGER events_webhook_outbox AFTER INSERT ON events
            WHEN ${WEBHOOK_SOURCE_TYPES}
            BEGIN
              INSERT INTO webhook_deliveries (webhook_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT w.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM webhooks w
              WHERE EXISTS (SELECT 1 FROM json_each(w.events) WHERE value = (${WEBHOOK_TYPE_OF_EVENT}));
            END`,
  ],
};

/**
 * Version 25 (RFC 8693 token exchange): the APIs a client may ask for a token for
 * when it exchanges a person's token (`--exchange-audience`); none in rows from before.
 */
const tokenExchange: Migration = {
  version: 25,
  name: 'token exchange audiences',
  statements: [(t, dialect) => `ALTER TABLE clients ADD COLUMN exchange_audiences ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`],
};

/**
 * Version 26: who added a webhook. One the server's owner added (the `tessera`
 * command) is requested wherever its URL points; one added through the admin API or the
 * console is held to the public network, on every connection (core/outbound.ts). Every
 * webhook before this version was added by the command, the only door there was.
 */
const webhookOwners: Migration = {
  version: 26,
  name: 'who added each webhook',
  statements: [
    (t, dialect) => `ALTER TABLE webhooks ADD COLUMN added_by_owner ${t.boolean('added_by_owner')} DEFAULT ${dialect === 'postgres' ? 'true' : '1'}`,
  ],
};

/**
 * Version 27: a `claims` request asking for one claim releases that claim
 * alone (OIDC Core §5.5). The code and the refresh token keep the claims asked for in
 * UserInfo by name and the scopes the person approved for them, beside the scope asked for,
 * which no longer grows by those scopes. Empty in rows from before, whose scope holds them.
 */
const namedClaims: Migration = {
  version: 27,
  name: 'claims asked for by name',
  statements: [
    (t, dialect) => `ALTER TABLE authorization_codes ADD COLUMN userinfo_claims ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t, dialect) => `ALTER TABLE authorization_codes ADD COLUMN claims_scope ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t, dialect) => `ALTER TABLE refresh_tokens ADD COLUMN userinfo_claims ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
    (t, dialect) => `ALTER TABLE refresh_tokens ADD COLUMN claims_scope ${t.list} NOT NULL DEFAULT ${dialect === 'postgres' ? "'{}'" : "'[]'"}`,
  ],
};

/**
 * Version 30: SAML 2.0 service providers (docs/saml.md), and the AuthnRequest ids accepted
 * from them, each kept until the request could no longer be accepted, so that a replayed
 * request is refused (SAML Profiles §4.1.4.5 for the assertion's side of the same rule).
 */
const samlServiceProviders: Migration = {
  version: 30,
  name: 'SAML service providers',
  statements: [
    (t) => `CREATE TABLE saml_service_providers (
      id                   ${t.text} PRIMARY KEY,
      entity_id            ${t.text} NOT NULL UNIQUE,
      name                 ${t.text},
      acs_urls             ${t.list} NOT NULL,
      slo_url              ${t.text},
      name_id_format       ${t.text} NOT NULL CHECK (name_id_format IN ('email', 'persistent', 'transient')),
      attributes           ${t.json} NOT NULL,
      want_signed_requests ${t.boolean('want_signed_requests')},
      sign_response        ${t.boolean('sign_response')},
      certificate          ${t.text},
      name_id_salt         ${t.text} NOT NULL,
      created_at           ${t.time} NOT NULL,
      updated_at           ${t.time} NOT NULL
    )`,
    (t) => `CREATE TABLE saml_requests (
      key        ${t.text} PRIMARY KEY,
      expires_at ${t.time} NOT NULL
    )`,
    'CREATE INDEX saml_requests_expires_at ON saml_requests (expires_at)',
  ],
};

/**
 * Version 31 (SAML single logout, docs/saml.md): which SP was sent an assertion in which
 * session (`sid`), naming the person by which NameID and the session by which SessionIndex,
 * so that the session's end sends each a LogoutRequest that names them as the SP knows them
 * (a transient NameID cannot be made again); kept until the session would have expired, and
 * taken once, as `session_clients` is. `saml_logouts` holds a single logout under way, by
 * the hash of the ID of the LogoutRequest it waits on an answer to, each taken once. An SP
 * registers the binding its SingleLogoutService takes, and may register a certificate its
 * assertions are encrypted for.
 */
const samlSingleLogout: Migration = {
  version: 31,
  name: 'SAML single logout',
  statements: [
    (t) => `CREATE TABLE saml_session_sps (
      sid            ${t.text} NOT NULL,
      sp_id          ${t.text} NOT NULL REFERENCES saml_service_providers (id) ON DELETE CASCADE,
      name_id        ${t.text} NOT NULL,
      name_id_format ${t.text} NOT NULL,
      session_index  ${t.text} NOT NULL,
      expires_at     ${t.time} NOT NULL,
      PRIMARY KEY (sid, sp_id)
    )`,
    'CREATE INDEX saml_session_sps_expires_at ON saml_session_sps (expires_at)',
    'CREATE INDEX saml_session_sps_sp_id ON saml_session_sps (sp_id)',
    (t) => `CREATE TABLE saml_logouts (
      request_hash ${t.text} PRIMARY KEY,
      chain        ${t.json} NOT NULL,
      expires_at   ${t.time} NOT NULL
    )`,
    'CREATE INDEX saml_logouts_expires_at ON saml_logouts (expires_at)',
    (t) => `ALTER TABLE saml_service_providers ADD COLUMN slo_binding ${t.text} NOT NULL DEFAULT 'redirect' CHECK (slo_binding IN ('redirect', 'post'))`,
    (t) => `ALTER TABLE saml_service_providers ADD COLUMN encryption_certificate ${t.text}`,
  ],
};

/**
 * Version 32 (SCIM 2.0 provisioning, docs/scim.md): the long-lived tokens a provisioning
 * system calls `/scim/v2` with, by the hash of each (the token is shown once), and what SCIM
 * keeps of a person beyond their standard claims: the provisioning system's `externalId` and
 * the other attributes it gave, as one JSON object. Both go with their account.
 */
const scimProvisioning: Migration = {
  version: 32,
  name: 'scim tokens and attributes',
  statements: [
    (t) => `CREATE TABLE scim_tokens (
      id           ${t.text} PRIMARY KEY,
      name         ${t.text} NOT NULL UNIQUE,
      token_hash   ${t.text} NOT NULL UNIQUE,
      created_at   ${t.time} NOT NULL,
      last_used_at ${t.time}
    )`,
    (t) => `CREATE TABLE scim_users (
      user_id     ${t.text} PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      external_id ${t.text},
      attributes  ${t.json} NOT NULL
    )`,
  ],
};

/**
 * Version 33 (SCIM 2.0 groups): groups and their members. A group's name is unique without
 * regard to case, as the `groups` claim carries it; its memberships go with the group and
 * with the person.
 */
const groups: Migration = {
  version: 33,
  name: 'groups and members',
  statements: [
    (t) => `CREATE TABLE user_groups (
      id           ${t.text} PRIMARY KEY,
      display_name ${t.text} NOT NULL,
      external_id  ${t.text},
      created_at   ${t.time} NOT NULL,
      updated_at   ${t.time} NOT NULL
    )`,
    'CREATE UNIQUE INDEX user_groups_name ON user_groups (lower(display_name))',
    (t) => `CREATE TABLE group_members (
      group_id ${t.text} NOT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
      user_id  ${t.text} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      PRIMARY KEY (group_id, user_id)
    )`,
    'CREATE INDEX group_members_user ON group_members (user_id)',
  ],
};

/**
 * Version 37 (unique e-mail addresses): no two accounts share an e-mail address, compared
 * without case, whichever door made them (the unique index `users_email_unique` replaces the
 * plain `users_email`). A database from before may hold accounts that share one (made by the
 * command line, the admin API or an upstream sign-in, which did not refuse them). The address
 * stays with one of them: the account that verified it (an address typed for an account proves
 * nothing), the oldest of those, else the oldest. The others lose it (and its verification),
 * nothing else: each is recorded in `cleared_emails` (the address, who kept it) and named in a
 * warning at every start until the account is changed again (docs/operations.md). Refusing to
 * upgrade would stop every sign-in for what an operator can put right afterwards; keeping the
 * address where it was proved is what the accounts already meant.
 */
const nowMs = (dialect: Dialect) =>
  dialect === 'postgres' ? 'CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS bigint)' : "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
/** The account that keeps the address `u.email` (`u` an account that has it). */
const EMAIL_KEEPER = `(SELECT k.id FROM users k WHERE lower(k.email) = lower(u.email) ORDER BY k.email_verified DESC, k.created_at, k.id LIMIT 1)`;

const uniqueEmails: Migration = {
  version: 37,
  name: 'unique e-mail addresses',
  statements: [
    (t) => `CREATE TABLE cleared_emails (
      user_id        ${t.text} PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      email          ${t.text} NOT NULL,
      email_verified ${t.boolean('email_verified')},
      kept_by        ${t.text} REFERENCES users (id) ON DELETE SET NULL,
      cleared_at     ${t.time} NOT NULL
    )`,
    "UPDATE users SET email = NULL WHERE email = ''",
    (_, dialect) => `INSERT INTO cleared_emails (user_id, email, email_verified, kept_by, cleared_at)
      SELECT u.id, u.email, u.email_verified, ${EMAIL_KEEPER}, ${nowMs(dialect)}
      FROM users u WHERE u.email IS NOT NULL AND u.id <> ${EMAIL_KEEPER}`,
    (_, dialect) => `UPDATE users SET email = NULL, email_verified = ${dialect === 'postgres' ? 'false' : '0'},
      updated_at = (SELECT c.cleared_at FROM cleared_emails c WHERE c.user_id = users.id)
      WHERE id IN (SELECT user_id FROM cleared_emails)`,
    'DROP INDEX users_email',
    'CREATE UNIQUE INDEX users_email_unique ON users (lower(email))',
  ],
};

/**
 * Version 38 (Identity Assertion JWT Authorization Grants): the identity providers whose
 * ID-JAGs this server redeems (`tessera trust add`), each with its keys' URL or its keys.
 * Versions 28 to 37 belong to other branches.
 */
const trustedIssuers: Migration = {
  version: 38,
  name: 'trusted issuers of identity assertion grants',
  statements: [
    (t) => `CREATE TABLE trusted_issuers (
      issuer         ${t.text} PRIMARY KEY,
      jwks_uri       ${t.text},
      jwks           ${t.json},
      added_by_owner ${t.boolean('added_by_owner')},
      created_at     ${t.time} NOT NULL,
      CHECK ((jwks_uri IS NULL) <> (jwks IS NULL))
    )`,
  ],
};

/**
 * Version 34 (mail): messages in the outbox. Each row is written in the transaction of the
 * event it announces (its `event_id`; it goes with the event when the audit trail is purged)
 * and sent by whichever instance claims it (`lease_until`, fenced by `attempts`), `pending`
 * until `delivered` or `dead`, as a webhook's delivery is. The message (its address and its
 * link) is sealed under the key encryption key and dropped once delivered. Accounts are found
 * by their e-mail address, without case, for recovery by e-mail.
 */
const mail: Migration = {
  version: 34,
  name: 'mail in the outbox',
  statements: [
    (t) => `CREATE TABLE mail_deliveries (
      id              ${t.text} PRIMARY KEY,
      event_id        ${t.text} NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      kind            ${t.text} NOT NULL,
      message         ${t.json},
      state           ${t.text} NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
      attempts        ${t.integer} NOT NULL,
      queued_at       ${t.time} NOT NULL,
      next_attempt_at ${t.time} NOT NULL,
      lease_until     ${t.time},
      delivered_at    ${t.time},
      last_error      ${t.text}
    )`,
    "CREATE INDEX mail_deliveries_due ON mail_deliveries (next_attempt_at, id) WHERE state = 'pending'",
    'CREATE INDEX mail_deliveries_event_id ON mail_deliveries (event_id)',
    'CREATE INDEX users_email ON users (lower(email))',
  ],
};

/**
 * Version 35 (sign-up): sign-ups waiting for their e-mail link, by the hash of its token. A new
 * account waits here and is made when the link is followed; with `user_id` (the account was
 * made at once, TESSERA_SIGN_UP_VERIFY=later) the link verifies its address. Purged once expired.
 */
const signUps: Migration = {
  version: 35,
  name: 'sign-ups waiting for their e-mail link',
  statements: [
    (t) => `CREATE TABLE sign_ups (
      token_hash    ${t.text} PRIMARY KEY,
      user_id       ${t.text} REFERENCES users (id) ON DELETE CASCADE,
      username      ${t.text} NOT NULL,
      name          ${t.text},
      email         ${t.text} NOT NULL,
      password_hash ${t.text} NOT NULL,
      locale        ${t.text},
      return_to     ${t.text} NOT NULL,
      created_at    ${t.time} NOT NULL,
      expires_at    ${t.time} NOT NULL,
      used_at       ${t.time}
    )`,
    'CREATE INDEX sign_ups_expires_at ON sign_ups (expires_at)',
  ],
};

/**
 * Version 36 (invitations): a single-use link, by the hash of its token, bound to the e-mail
 * address it was sent to, where the person invited makes their account (with the console role
 * it names, landing in the app that invited them). Purged once expired.
 */
const invitations: Migration = {
  version: 36,
  name: 'invitations',
  statements: [
    (t) => `CREATE TABLE invitations (
      token_hash ${t.text} PRIMARY KEY,
      email      ${t.text} NOT NULL,
      role       ${t.text} CHECK (role IN ('admin', 'support', 'viewer')),
      client_id  ${t.text},
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL,
      used_at    ${t.time}
    )`,
    'CREATE INDEX invitations_expires_at ON invitations (expires_at)',
  ],
};

/**
 * Version 39 (SCIM lists in SQL): the indexes a provisioning system's own lookups are answered
 * through (store/sql/scim-search.ts): `userName eq` (compared without case, as the SQL
 * compares it), `externalId eq` (with case). `displayName eq` of a group has
 * `user_groups_name`; an account's address, `users_email_unique`.
 */
const scimSearchIndexes: Migration = {
  version: 39,
  name: 'scim search indexes',
  statements: ['CREATE INDEX users_username_lower ON users (lower(username))', 'CREATE INDEX scim_users_external_id ON scim_users (external_id)'],
};

/**
 * Version 40 (Shared Signals): receivers' event streams (SSF 1.0 §8) and their
 * deliveries, from the same outbox as the webhooks': a second trigger on `events` adds one
 * delivery row per stream that hears the event, in the transaction that stores it. A stream
 * belongs to the client that made it (its receiver) and goes with it. `disabled` streams get
 * nothing; `paused` ones keep what comes, sent once enabled again (§8.1.2).
 *
 * The trigger's CASE is core/ssf.ts's map written in SQL (the store contract suite checks that
 * they agree): the audit trail's type to the CAEP or RISC event URI; a passkey refused as a
 * copy (`detail.reason` `cloned`) is a credential compromise. A verification request
 * (`ssf.verification`) goes to the stream it names in `detail.stream_id` alone, whatever
 * events that stream asked for (§8.1.4).
 *
 * The delivery rows are the webhooks' with `stream_id` for `webhook_id`: pushed one at a time
 * per stream, in event order, under a lease; a polling receiver (RFC 8936) acknowledges them.
 */
const SSF_TYPE_OF_EVENT = (dialect: Dialect) => `CASE
  WHEN NEW.type = 'logout' THEN 'https://schemas.openid.net/secevent/caep/event-type/session-revoked'
  WHEN NEW.type IN ('password.changed', 'user.password_set', 'user.password_reset', 'second_factor.reset', 'passkey.added', 'passkey.removed', 'totp.enabled', 'totp.disabled')
    THEN 'https://schemas.openid.net/secevent/caep/event-type/credential-change'
  WHEN NEW.type = 'user.updated' THEN 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change'
  WHEN NEW.type = 'user.disabled' THEN 'https://schemas.openid.net/secevent/risc/event-type/account-disabled'
  WHEN NEW.type = 'user.enabled' THEN 'https://schemas.openid.net/secevent/risc/event-type/account-enabled'
  WHEN NEW.type = 'user.removed' THEN 'https://schemas.openid.net/secevent/risc/event-type/account-purged'
  WHEN NEW.type = 'passkey.refused' AND ${detailText(dialect, 'reason')} = 'cloned' THEN 'https://schemas.openid.net/secevent/risc/event-type/credential-compromise'
  ELSE NULL END`;
/** The events a Shared Signals stream is told of (core/ssf.ts), as the outbox triggers since version 40 know them. */
const SSF_SOURCE_TYPE_NAMES = [
  ...['logout', 'password.changed', 'user.password_set', 'user.password_reset', 'second_factor.reset'],
  ...['passkey.added', 'passkey.removed', 'totp.enabled', 'totp.disabled', 'user.updated', 'user.disabled', 'user.enabled', 'user.removed'],
  ...['passkey.refused', 'ssf.verification'],
];
const SSF_SOURCE_TYPES = `NEW.type IN (${SSF_SOURCE_TYPE_NAMES.map((type) => `'${type}'`).join(', ')})`;
/** A text field of the details of the event row `row` (the new event's, in a trigger). */
const detailText = (dialect: Dialect, name: string, row = 'NEW') =>
  dialect === 'postgres' ? `(${row}.detail->>'${name}')` : `json_extract(${row}.detail, '$.${name}')`;

const ssfStreams: Migration = {
  version: 40,
  name: 'shared signals streams and their outbox',
  statements: [
    (t) => `CREATE TABLE ssf_streams (
      id                   ${t.text} PRIMARY KEY,
      client_id            ${t.text} NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
      audience             ${t.list} NOT NULL,
      events_requested     ${t.list} NOT NULL,
      events_delivered     ${t.list} NOT NULL,
      delivery_method      ${t.text} NOT NULL,
      endpoint_url         ${t.text},
      authorization_header ${t.json},
      format               ${t.text} NOT NULL,
      description          ${t.text},
      status               ${t.text} NOT NULL CHECK (status IN ('enabled', 'paused', 'disabled')),
      reason               ${t.text},
      created_at           ${t.time} NOT NULL,
      updated_at           ${t.time} NOT NULL
    )`,
    'CREATE INDEX ssf_streams_client_id ON ssf_streams (client_id)',
    (t) => `CREATE TABLE ssf_deliveries (
      stream_id       ${t.text} NOT NULL REFERENCES ssf_streams (id) ON DELETE CASCADE,
      event_id        ${t.text} NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      event_at        ${t.time} NOT NULL,
      state           ${t.text} NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
      attempts        ${t.integer} NOT NULL,
      queued_at       ${t.time} NOT NULL,
      next_attempt_at ${t.time} NOT NULL,
      lease_until     ${t.time},
      delivered_at    ${t.time},
      last_status     ${t.integer},
      last_error      ${t.text},
      PRIMARY KEY (stream_id, event_id)
    )`,
    'CREATE INDEX ssf_deliveries_order ON ssf_deliveries (stream_id, state, event_at, event_id)',
    'CREATE INDEX ssf_deliveries_event_id ON ssf_deliveries (event_id)',
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE FUNCTION tessera_ssf_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO ssf_deliveries (stream_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT s.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM ssf_streams s
              WHERE s.status <> 'disabled' AND CASE WHEN NEW.type = 'ssf.verification' THEN s.id = ${detailText(dialect, 'stream_id')}
                ELSE (${SSF_TYPE_OF_EVENT(dialect)}) = ANY (s.events_delivered) END;
              RETURN NULL;
            END
          $$`
        : null,
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE TRIGGER events_ssf_outbox AFTER INSERT ON events
            FOR EACH ROW WHEN (${SSF_SOURCE_TYPES}) EXECUTE FUNCTION tessera_ssf_outbox()`
        : `CREATE TRIGGER events_ssf_outbox AFTER INSERT ON events
            WHEN ${SSF_SOURCE_TYPES}
            BEGIN
              INSERT INTO ssf_deliveries (stream_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT s.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM ssf_streams s
              WHERE s.status <> 'disabled' AND CASE WHEN NEW.type = 'ssf.verification' THEN s.id = ${detailText(dialect, 'stream_id')}
                ELSE EXISTS (SELECT 1 FROM json_each(s.events_delivered) WHERE value = (${SSF_TYPE_OF_EVENT(dialect)})) END;
            END`,
  ],
};

/**
 * Version 41 (organizations, docs/organizations.md): organizations, each with at most one
 * verified e-mail domain (unique among verified ones: a domain routes sign-in to one
 * organization's provider) and its sign-in policy; their members, each with a role; the
 * organization an approval was given for (kept with the grant, so that refreshing keeps it);
 * and the organization an invitation makes its person a member of, with the role.
 */
const organizations: Migration = {
  version: 41,
  name: 'organizations and their members',
  statements: [
    (t) => `CREATE TABLE organizations (
      id                    ${t.text} PRIMARY KEY,
      name                  ${t.text} NOT NULL,
      domain                ${t.text},
      domain_verified       ${t.boolean('domain_verified')},
      provider_id           ${t.text} REFERENCES identity_providers (id) ON DELETE SET NULL,
      require_passkey       ${t.boolean('require_passkey')},
      require_second_factor ${t.boolean('require_second_factor')},
      created_at            ${t.time} NOT NULL,
      updated_at            ${t.time} NOT NULL
    )`,
    'CREATE UNIQUE INDEX organizations_name ON organizations (lower(name))',
    'CREATE UNIQUE INDEX organizations_verified_domain ON organizations (domain) WHERE domain_verified = TRUE',
    (t) => `CREATE TABLE organization_members (
      organization_id ${t.text} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      user_id         ${t.text} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role            ${t.text} NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      created_at      ${t.time} NOT NULL,
      PRIMARY KEY (organization_id, user_id)
    )`,
    'CREATE INDEX organization_members_user ON organization_members (user_id)',
    (t) => `ALTER TABLE grants ADD COLUMN organization_id ${t.text} REFERENCES organizations (id) ON DELETE SET NULL`,
    (t) => `ALTER TABLE invitations ADD COLUMN organization_id ${t.text} REFERENCES organizations (id) ON DELETE CASCADE`,
    (t) => `ALTER TABLE invitations ADD COLUMN organization_role ${t.text} CHECK (organization_role IN ('owner', 'admin', 'member'))`,
  ],
};

/**
 * Version 43 (passkey sign-ups and e-mail changes): a sign-up may wait with the passkey it was
 * made with (its account then has no password), and a person's new e-mail address waits, by
 * the hash of the link mailed to it, until that link is followed. Purged once expired.
 */
const passkeySignUpsAndEmailChanges: Migration = {
  version: 43,
  name: 'passkey sign-ups and e-mail changes',
  statements: [
    (t) => `ALTER TABLE sign_ups ADD COLUMN passkey ${t.json}`,
    (t) => `CREATE TABLE email_changes (
      token_hash ${t.text} PRIMARY KEY,
      user_id    ${t.text} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      email      ${t.text} NOT NULL,
      created_at ${t.time} NOT NULL,
      expires_at ${t.time} NOT NULL,
      used_at    ${t.time}
    )`,
    'CREATE INDEX email_changes_user_id ON email_changes (user_id)',
    'CREATE INDEX email_changes_expires_at ON email_changes (expires_at)',
  ],
};

/**
 * Version 44 (SSF 1.0 §8.1.3, subjects): a stream's subjects mode, `ALL` (every person's
 * events, but those of a person the receiver removed) or `NONE` (only those of a person the
 * receiver added), taken from TESSERA_SSF_DEFAULT_SUBJECTS when the stream is made (§7.1
 * `default_subjects`: the default of new streams), and the people added and removed. The
 * outbox trigger consults them in the event's transaction: a SET is queued for a stream only
 * about a person it is to hear of. No reference to users: a person's row goes before the
 * event of their removal, which their streams are still sent.
 */
const SSF_SUBJECT_WANTED = `(NEW.type = 'ssf.verification' OR CASE WHEN s.default_subjects = 'NONE'
  THEN EXISTS (SELECT 1 FROM ssf_stream_subjects x WHERE x.stream_id = s.id AND x.user_id = NEW.user_id AND x.state = 'added')
  ELSE NOT EXISTS (SELECT 1 FROM ssf_stream_subjects x WHERE x.stream_id = s.id AND x.user_id = NEW.user_id AND x.state = 'removed') END)`;

const ssfSubjects: Migration = {
  version: 44,
  name: 'shared signals stream subjects',
  statements: [
    (t) => `ALTER TABLE ssf_streams ADD COLUMN default_subjects ${t.text} NOT NULL DEFAULT 'ALL' CHECK (default_subjects IN ('ALL', 'NONE'))`,
    (t) => `CREATE TABLE ssf_stream_subjects (
      stream_id  ${t.text} NOT NULL REFERENCES ssf_streams (id) ON DELETE CASCADE,
      user_id    ${t.text} NOT NULL,
      state      ${t.text} NOT NULL CHECK (state IN ('added', 'removed')),
      verified   ${t.boolean('verified')},
      updated_at ${t.time} NOT NULL,
      PRIMARY KEY (stream_id, user_id)
    )`,
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE OR REPLACE FUNCTION tessera_ssf_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO ssf_deliveries (stream_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT s.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM ssf_streams s
              WHERE s.status <> 'disabled' AND CASE WHEN NEW.type = 'ssf.verification' THEN s.id = ${detailText(dialect, 'stream_id')}
                ELSE (${SSF_TYPE_OF_EVENT(dialect)}) = ANY (s.events_delivered) END
                AND ${SSF_SUBJECT_WANTED};
              RETURN NULL;
            END
          $$`
        : 'DROP TRIGGER events_ssf_outbox',
    (_, dialect) =>
      dialect === 'postgres'
        ? null
        : `CREATE TRIGGER events_ssf_outbox AFTER INSERT ON events
            WHEN ${SSF_SOURCE_TYPES}
            BEGIN
              INSERT INTO ssf_deliveries (stream_id, event_id, event_at, state, attempts, queued_at, next_attempt_at)
              SELECT s.id, NEW.id, NEW.at, 'pending', 0, NEW.at, NEW.at FROM ssf_streams s
              WHERE s.status <> 'disabled' AND CASE WHEN NEW.type = 'ssf.verification' THEN s.id = ${detailText(dialect, 'stream_id')}
                ELSE EXISTS (SELECT 1 FROM json_each(s.events_delivered) WHERE value = (${SSF_TYPE_OF_EVENT(dialect)})) END
                AND ${SSF_SUBJECT_WANTED};
            END`,
  ],
};

/**
 * Version 45 (the outbox's cursors): an event no longer writes a delivery row for each webhook
 * and stream that hears it, in its own transaction, but one row (`outbox_events`) saying what
 * it is to each kind of queue: the webhook type it is heard as, its SSF event type, the stream
 * a verification names, the person it is about. Each webhook and stream keeps a cursor
 * (`outbox_seq`): how far along `outbox_events` its deliveries have been written, and
 * `outbox_written`, which may be further (below). Its outbox
 * (store/sql/outbox.ts) writes the delivery rows of the events past its cursor that it wants
 * (the rules the versions 24, 40 and 44 triggers applied, read when they are written), a batch
 * at a time, when they are about to be claimed, listed or counted, and when the stream's rules
 * are about to change; the rows then go out, fail, die and are replayed as before.
 *
 * `seq` is the commit order the cursors read in. In SQLite, whose writers take turns, it is an
 * AUTOINCREMENT key: a row committed later has a larger one, and none is used twice. In
 * PostgreSQL, where transactions commit in any order, it is the id of the transaction that
 * stored the event, and a queue reads only rows of transactions older than every one still
 * running (`pg_snapshot_xmin`) before its cursor moves past them: a row it has not read
 * cannot then appear behind its cursor. The rows of events committed past that point are
 * written at once all the same (`outbox_written` says how far, `outbox_snapshot` which
 * transactions that reading saw committed), and the rows between the cursor and there that it
 * did not see are read again until the cursor catches up: a long transaction elsewhere delays
 * nothing but the cursor, and no event is judged twice.
 *
 * The rows already written (pending, delivered, dead) stay as they are; the cursors start at 0,
 * behind the first event stored after this version, since every event before it has its rows.
 * An event purged from the audit trail takes its row with it, as it took its deliveries.
 */
const OUTBOX_EVENT_COLUMNS = 'event_id, event_at, user_id, webhook_type, ssf_type, ssf_stream';
const outboxEventValues = (dialect: Dialect) => `NEW.id, NEW.at, NEW.user_id,
  CASE WHEN ${WEBHOOK_SOURCE_TYPES} THEN (${WEBHOOK_TYPE_OF_EVENT}) END,
  (${SSF_TYPE_OF_EVENT(dialect)}),
  CASE WHEN NEW.type = 'ssf.verification' THEN ${detailText(dialect, 'stream_id')} END`;

const outboxCursors: Migration = {
  version: 45,
  name: 'outbox cursors',
  statements: [
    (t, dialect) => `CREATE TABLE outbox_events (
      ${dialect === 'postgres' ? 'seq bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),' : 'seq INTEGER PRIMARY KEY AUTOINCREMENT,'}
      event_id     ${t.text} NOT NULL ${dialect === 'postgres' ? 'PRIMARY KEY' : 'UNIQUE'} REFERENCES events (id) ON DELETE CASCADE,
      event_at     ${t.time} NOT NULL,
      user_id      ${t.text},
      webhook_type ${t.text},
      ssf_type     ${t.text},
      ssf_stream   ${t.text}
    )`,
    (_, dialect) => (dialect === 'postgres' ? 'CREATE INDEX outbox_events_seq ON outbox_events (seq)' : null),
    ...['webhooks', 'ssf_streams'].flatMap((table) => [
      ...['outbox_seq', 'outbox_written'].map((column) => (t: ColumnTypes) => `ALTER TABLE ${table} ADD COLUMN ${column} ${t.time} NOT NULL DEFAULT 0`),
      (t: ColumnTypes) => `ALTER TABLE ${table} ADD COLUMN outbox_snapshot ${t.text}`,
    ]),
    (_, dialect) => (dialect === 'postgres' ? 'DROP TRIGGER events_webhook_outbox ON events' : 'DROP TRIGGER events_webhook_outbox'),
    (_, dialect) => (dialect === 'postgres' ? 'DROP TRIGGER events_ssf_outbox ON events' : 'DROP TRIGGER events_ssf_outbox'),
    (_, dialect) => (dialect === 'postgres' ? 'DROP FUNCTION tessera_webhook_outbox()' : null),
    (_, dialect) => (dialect === 'postgres' ? 'DROP FUNCTION tessera_ssf_outbox()' : null),
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE FUNCTION tessera_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              INSERT INTO outbox_events (${OUTBOX_EVENT_COLUMNS}) VALUES (${outboxEventValues(dialect)});
              RETURN NULL;
            END
          $$`
        : null,
    (_, dialect) =>
      dialect === 'postgres'
        ? `CREATE TRIGGER events_outbox AFTER INSERT ON events
            FOR EACH ROW WHEN (${WEBHOOK_SOURCE_TYPES} OR ${SSF_SOURCE_TYPES}) EXECUTE FUNCTION tessera_outbox()`
        : `CREATE TRIGGER events_outbox AFTER INSERT ON events
            WHEN ${WEBHOOK_SOURCE_TYPES} OR ${SSF_SOURCE_TYPES}
            BEGIN
              INSERT INTO outbox_events (${OUTBOX_EVENT_COLUMNS}) VALUES (${outboxEventValues(dialect)});
            END`,
  ],
};

/**
 * Version 47 (PostgreSQL's writes per request): PostgreSQL writes a new version of a row at
 * every UPDATE, and an entry in every one of the table's indexes for it unless the new
 * version fits on the old one's page and no indexed column changed (a heap-only tuple, HOT).
 * A code's redemption (`consumed_at`) and a device's poll (`last_polled_at`, `last_outcome`)
 * change no indexed column, but a page filled by inserts has no room: each wrote four or five
 * index entries. Both tables keep half of each page free for those versions (each code is
 * updated once, and all the codes of a page may be redeemed in one statement; a device's
 * first poll makes its row longer, by its time and outcome, hence a little more than half
 * for devices; later polls reuse the space of versions no transaction can see any more);
 * their rows live minutes, so the tables stay small. A grant's use changes `active_until`, which the
 * purge's index holds, so it is never HOT: the purge's two other indexes hold only the rows
 * their terms can match, so that a use writes no entry into them. SQLite rewrites only the
 * indexes whose columns an UPDATE changes and has no fill factor: nothing to do there.
 */
const writesInPlace: Migration = {
  version: 47,
  name: "PostgreSQL's writes in place",
  statements: [
    (_, dialect) => (dialect === 'postgres' ? 'ALTER TABLE authorization_codes SET (fillfactor = 50)' : null),
    (_, dialect) => (dialect === 'postgres' ? 'ALTER TABLE device_authorizations SET (fillfactor = 45)' : null),
    (_, dialect) => (dialect === 'postgres' ? 'DROP INDEX grants_revoked_at' : null),
    (_, dialect) => (dialect === 'postgres' ? 'CREATE INDEX grants_revoked_at ON grants (revoked_at) WHERE revoked_at IS NOT NULL' : null),
    (_, dialect) => (dialect === 'postgres' ? 'DROP INDEX grants_created_at' : null),
    (_, dialect) =>
      dialect === 'postgres'
        ? 'CREATE INDEX grants_created_at ON grants (created_at) WHERE revoked_at IS NULL AND remembered = FALSE AND active_until IS NULL'
        : null,
  ],
};

/**
 * Version 48 (the audit trail's indexes): an operator's listing of a person's events
 * (`tessera events --user`, the admin API's `user`) matches their id or the username an event
 * names alone (a failed sign-in names what was typed), and a removed person's id is looked up by
 * the events of their username. With an index for each side of that OR, SQLite and PostgreSQL
 * read the person's events from both and sort those, instead of walking the whole trail in time
 * order (222 ms of the event loop at a million events). Each of the three indexes holds only the
 * events that name what it is searched by: most events name no person or no app (a device
 * authorization names neither a person nor a username), and those are written into none of them.
 * `user_id = :userId` implies `user_id IS NOT NULL`, so both planners take the partial indexes.
 */
const eventIndexes: Migration = {
  version: 48,
  name: "the audit trail's indexes",
  statements: [
    'DROP INDEX events_user_id_at',
    'CREATE INDEX events_user_id_at ON events (user_id, at) WHERE user_id IS NOT NULL',
    'DROP INDEX events_client_id_at',
    'CREATE INDEX events_client_id_at ON events (client_id, at) WHERE client_id IS NOT NULL',
    'CREATE INDEX events_username_at ON events (username, at) WHERE username IS NOT NULL',
  ],
};

/**
 * Version 49 (signing in again through a provider): the `max_age` a sign-in under way sent its
 * OpenID provider (OIDC Core §3.1.2.1), which the ID token's `auth_time` must meet when the
 * browser comes back; null for a sign-in not asked to be a new one, as every one before this.
 */
const upstreamMaxAge: Migration = {
  version: 49,
  name: 'upstream max_age',
  statements: [(t) => `ALTER TABLE upstream_logins ADD COLUMN max_age ${t.integer}`],
};

/**
 * Version 50 (mailed reset links): the address a reset link was mailed to ("Forgot password?"),
 * null for an operator's link and for every link made before. Used on an account whose address
 * is unverified, only a mailed link shows that its user reads that address (flows/users.ts,
 * `proveAddressIn`); a link made before this version proves nothing and is used as before.
 */
const mailedResetLinks: Migration = {
  version: 50,
  name: 'mailed reset links',
  statements: [(t) => `ALTER TABLE password_resets ADD COLUMN mailed_to ${t.text}`],
};

/**
 * Version 51 (self-asserted addresses): whether the account's maker chose its address
 * themselves and it has been neither verified nor replaced since (`UserRecord.emailSelfAsserted`).
 * Only such an account may have been made with someone else's address, waiting for its owner;
 * a mailed reset link ends what was set up on it before (flows/users.ts `proveAddressIn`). An
 * address an operator or SCIM gave was chosen by neither an attacker nor the person, and what
 * the person set up on it stays.
 *
 * Accounts made before are set from the audit trail, which sign-up has always written and
 * nothing prunes: made by sign-up (`user.created`, `detail.by` `sign_up`; made unverified only
 * with the link later, since the link first makes it verified), still unverified, and with no
 * event since that verified the address or may have replaced it (`user.email_verified`; a
 * `user.updated` naming `email` in its fields, or by SCIM, which names none). Leaving them all
 * false would take the protection away from exactly the accounts that may already be
 * pre-hijacked on a server with open sign-up; where the trail cannot tell, false: that leaves
 * what the person set up, as an operator's account.
 */
const selfAssertedEmails: Migration = {
  version: 51,
  name: 'self-asserted addresses',
  statements: [
    (t) => `ALTER TABLE users ADD COLUMN email_self_asserted ${t.boolean('email_self_asserted')} DEFAULT FALSE`,
    (_, dialect) => `UPDATE users SET email_self_asserted = TRUE
      WHERE email IS NOT NULL AND email_verified = FALSE
        AND EXISTS (SELECT 1 FROM events e WHERE e.user_id = users.id AND e.type = 'user.created' AND ${detailText(dialect, 'by', 'e')} = 'sign_up')
        AND NOT EXISTS (SELECT 1 FROM events e WHERE e.user_id = users.id AND (e.type = 'user.email_verified'
          OR (e.type = 'user.updated' AND (${detailText(dialect, 'fields', 'e')} LIKE '%email%' OR ${detailText(dialect, 'by', 'e')} = 'scim'))))`,
  ],
};

/**
 * Version 52 (SAML IdP-initiated sign-in): whether an SP takes sign-ins started at this IdP
 * (SAML Profiles §4.1.5: unsolicited Responses), which it must accept deliberately: off for a
 * new SP. The SPs registered before keep what they had, sign-ins started here: an upgrade must
 * not break the start-page links a deployment has, silently (docs/saml.md says how to turn it off).
 */
const samlIdpInitiated: Migration = {
  version: 52,
  name: 'SAML IdP-initiated sign-in',
  statements: [
    (t, dialect) =>
      `ALTER TABLE saml_service_providers ADD COLUMN idp_initiated ${t.boolean('idp_initiated')} DEFAULT ${dialect === 'postgres' ? 'false' : '0'}`,
    (_, dialect) => `UPDATE saml_service_providers SET idp_initiated = ${dialect === 'postgres' ? 'TRUE' : '1'}`,
  ],
};

/**
 * Version 53 (SAML AssertionConsumerServiceIndex): what each index an SP's AuthnRequest may name
 * is (SAML Core §3.4.1), the index its metadata gave each ACS URL (SAML Metadata §2.2.3). Null
 * for the SPs registered before, whose metadata's indexes were not kept: their ACS URLs are
 * named by their position, as they were (store/sql/saml.ts).
 */
const samlAcsIndexes: Migration = {
  version: 53,
  name: 'SAML ACS indexes',
  statements: [(t) => `ALTER TABLE saml_service_providers ADD COLUMN acs_indexes ${t.json}`],
};

/**
 * Version 54 (the browser that signed up): the hash of the sign-up cookie (`tessera_sign_up`,
 * flows/session/cookies.ts) of the browser a sign-up form was posted from. With TESSERA_SIGN_UP_VERIFY=first the link makes the account with the
 * password or passkey that form chose, and whoever posted it may have typed someone else's
 * address: followed in that browser the link is one step; anywhere else it asks for that
 * password (flows/address-link.ts). Null for the sign-ups waiting from before, whose browser
 * was not kept: their links ask for the password wherever they are followed.
 */
const signUpBrowsers: Migration = {
  version: 54,
  name: 'the browser that signed up',
  statements: [(t) => `ALTER TABLE sign_ups ADD COLUMN browser ${t.text}`],
};

/**
 * Version 55 (one test for the outbox trigger, SQLite): every event row runs the outbox
 * trigger's WHEN, and most events (a code redeemed, a device polled to its tokens, a sign-in)
 * are in neither list. SQLite tested `NEW.type IN (…) OR NEW.type IN (…)` by building a
 * temporary index of each list's constants again at every insert, which cost the audit
 * event's insert 8 of its 18 µs on the 2-core AMD EPYC; one `instr` over the names between
 * bars costs 2.5. With several worker threads every insert runs on the one writer thread,
 * whose time per write is the ceiling of what they answer together. PostgreSQL keeps its
 * trigger: it tests a list of constants without building anything.
 */
const OUTBOX_SOURCE_TYPES_TEST = `instr('|${[...new Set([...WEBHOOK_SOURCE_TYPE_NAMES, ...SSF_SOURCE_TYPE_NAMES])].join('|')}|', '|' || NEW.type || '|') > 0`;

const outboxTriggerTest: Migration = {
  version: 55,
  name: 'one test for the outbox trigger',
  statements: [
    (_, dialect) => (dialect === 'postgres' ? null : 'DROP TRIGGER events_outbox'),
    (_, dialect) =>
      dialect === 'postgres'
        ? null
        : `CREATE TRIGGER events_outbox AFTER INSERT ON events
            WHEN ${OUTBOX_SOURCE_TYPES_TEST}
            BEGIN
              INSERT INTO outbox_events (${OUTBOX_EVENT_COLUMNS}) VALUES (${outboxEventValues(dialect)});
            END`,
  ],
};

/** Every migration, oldest first. */
export const migrations: readonly Migration[] = [
  initial,
  tokenLifecycle,
  clientChangeNotices,
  clientAuthentication,
  securityHardening,
  operators,
  singleSignOn,
  apiResources,
  senderConstraint,
  secondFactors,
  standardClaims,
  adminApi,
  certification,
  operatorRoles,
  selfRegistration,
  identityProviders,
  refreshedIdTokens,
  localizedNames,
  pendingSignInMethods,
  unusedRegistrations,
  everyStandardClaim,
  webhooks,
  tokenExchange,
  webhookOwners,
  namedClaims,
  samlServiceProviders,
  samlSingleLogout,
  scimProvisioning,
  groups,
  mail,
  signUps,
  invitations,
  uniqueEmails,
  trustedIssuers,
  scimSearchIndexes,
  ssfStreams,
  organizations,
  passkeySignUpsAndEmailChanges,
  ssfSubjects,
  outboxCursors,
  writesInPlace,
  eventIndexes,
  upstreamMaxAge,
  mailedResetLinks,
  selfAssertedEmails,
  samlIdpInitiated,
  samlAcsIndexes,
  signUpBrowsers,
  outboxTriggerTest,
];

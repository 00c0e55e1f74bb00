/**
 * The schema, as versioned migrations shared by both stores. As in Ory Hydra
 * (`persistence/sql/migrations`), a statement is written once when both dialects accept
 * it and once per dialect only where they differ: column types (SQLite keeps lists and
 * JWKs as JSON text and booleans as 0/1; PostgreSQL uses `text[]`, `jsonb`, `boolean`
 * and `bigint` millisecond timestamps).
 *
 * Migrations are append-only: a released migration is never edited, a change is a new
 * version. Each store applies the missing ones at open, in one transaction, under a lock
 * (`BEGIN IMMEDIATE` in SQLite, `pg_advisory_xact_lock` in PostgreSQL), and records them
 * in `schema_migrations`.
 */

export type Dialect = 'sqlite' | 'postgres';

/**
 * One statement: the same text for both dialects, or one text per dialect; a dialect left
 * out has nothing to do for it (a PostgreSQL trigger, say).
 */
export type MigrationStatement = string | { readonly sqlite?: string; readonly postgres?: string };

/** One schema version. `version` orders migrations and is what `schema_migrations` records. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly MigrationStatement[];
}

/** The text of `statement` for `dialect`, or null when it has none for that dialect. */
export function statementFor(statement: MigrationStatement, dialect: Dialect): string | null {
  return typeof statement === 'string' ? statement : (statement[dialect] ?? null);
}

const initial: Migration = {
  version: 1,
  name: 'initial',
  statements: [
    {
      sqlite: `CREATE TABLE clients (
        id            TEXT PRIMARY KEY,
        name          TEXT NOT NULL,
        secret_hash   TEXT,
        redirect_uris TEXT NOT NULL,
        scopes        TEXT NOT NULL,
        grant_types   TEXT NOT NULL,
        web_origins   TEXT NOT NULL,
        created_at    INTEGER NOT NULL
      )`,
      postgres: `CREATE TABLE clients (
        id            text PRIMARY KEY,
        name          text NOT NULL,
        secret_hash   text,
        redirect_uris text[] NOT NULL,
        scopes        text[] NOT NULL,
        grant_types   text[] NOT NULL,
        web_origins   text[] NOT NULL,
        created_at    bigint NOT NULL
      )`,
    },
    {
      sqlite: `CREATE TABLE users (
        id             TEXT PRIMARY KEY,
        username       TEXT NOT NULL UNIQUE,
        password_hash  TEXT NOT NULL,
        name           TEXT,
        email          TEXT,
        email_verified INTEGER NOT NULL CHECK (email_verified IN (0, 1)),
        disabled       INTEGER NOT NULL CHECK (disabled IN (0, 1)),
        created_at     INTEGER NOT NULL
      )`,
      postgres: `CREATE TABLE users (
        id             text PRIMARY KEY,
        username       text NOT NULL UNIQUE,
        password_hash  text NOT NULL,
        name           text,
        email          text,
        email_verified boolean NOT NULL,
        disabled       boolean NOT NULL,
        created_at     bigint NOT NULL
      )`,
    },
    // Users are never deleted (their id is the OIDC `sub`), so references to them need no
    // cascade. Everything issued to a client goes with it (ClientStore.remove).
    {
      sqlite: `CREATE TABLE sessions (
        id_hash    TEXT PRIMARY KEY,
        user_id    TEXT NOT NULL REFERENCES users (id),
        auth_time  INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      )`,
      postgres: `CREATE TABLE sessions (
        id_hash    text PRIMARY KEY,
        user_id    text NOT NULL REFERENCES users (id),
        auth_time  bigint NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL
      )`,
    },
    {
      sqlite: `CREATE TABLE grants (
        id                  TEXT PRIMARY KEY,
        user_id             TEXT NOT NULL REFERENCES users (id),
        client_id           TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        scope               TEXT NOT NULL,
        kind                TEXT NOT NULL CHECK (kind IN ('authorization_code', 'urn:ietf:params:oauth:grant-type:device_code')),
        auth_time           INTEGER NOT NULL,
        created_at          INTEGER NOT NULL,
        revoked_at          INTEGER,
        device_ip           TEXT,
        device_user_agent   TEXT,
        device_requested_at INTEGER
      )`,
      postgres: `CREATE TABLE grants (
        id                  text PRIMARY KEY,
        user_id             text NOT NULL REFERENCES users (id),
        client_id           text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        scope               text[] NOT NULL,
        kind                text NOT NULL CHECK (kind IN ('authorization_code', 'urn:ietf:params:oauth:grant-type:device_code')),
        auth_time           bigint NOT NULL,
        created_at          bigint NOT NULL,
        revoked_at          bigint,
        device_ip           text,
        device_user_agent   text,
        device_requested_at bigint
      )`,
    },
    {
      sqlite: `CREATE TABLE authorization_codes (
        hash           TEXT PRIMARY KEY,
        client_id      TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        user_id        TEXT NOT NULL REFERENCES users (id),
        grant_id       TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
        redirect_uri   TEXT NOT NULL,
        scope          TEXT NOT NULL,
        nonce          TEXT,
        code_challenge TEXT NOT NULL,
        auth_time      INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        expires_at     INTEGER NOT NULL,
        consumed_at    INTEGER
      )`,
      postgres: `CREATE TABLE authorization_codes (
        hash           text PRIMARY KEY,
        client_id      text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        user_id        text NOT NULL REFERENCES users (id),
        grant_id       text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
        redirect_uri   text NOT NULL,
        scope          text[] NOT NULL,
        nonce          text,
        code_challenge text NOT NULL,
        auth_time      bigint NOT NULL,
        created_at     bigint NOT NULL,
        expires_at     bigint NOT NULL,
        consumed_at    bigint
      )`,
    },
    // grant_id is not a foreign key here: it is recorded by the user's decision, and the
    // flow may write the grant only after winning that decision. `last_outcome` is what
    // the latest poll found, written and returned by the poll's one UPDATE.
    {
      sqlite: `CREATE TABLE device_authorizations (
        device_code_hash   TEXT PRIMARY KEY,
        user_code          TEXT NOT NULL UNIQUE,
        client_id          TEXT NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        scope              TEXT NOT NULL,
        status             TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
        poll_interval      INTEGER NOT NULL,
        last_polled_at     INTEGER,
        last_outcome       TEXT CHECK (last_outcome IN ('expired', 'consumed', 'denied', 'slow_down', 'issue', 'pending')),
        created_at         INTEGER NOT NULL,
        expires_at         INTEGER NOT NULL,
        request_ip         TEXT NOT NULL,
        request_user_agent TEXT,
        user_id            TEXT REFERENCES users (id),
        auth_time          INTEGER,
        grant_id           TEXT,
        decided_at         INTEGER
      )`,
      postgres: `CREATE TABLE device_authorizations (
        device_code_hash   text PRIMARY KEY,
        user_code          text NOT NULL UNIQUE,
        client_id          text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
        scope              text[] NOT NULL,
        status             text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
        poll_interval      integer NOT NULL,
        last_polled_at     bigint,
        last_outcome       text CHECK (last_outcome IN ('expired', 'consumed', 'denied', 'slow_down', 'issue', 'pending')),
        created_at         bigint NOT NULL,
        expires_at         bigint NOT NULL,
        request_ip         text NOT NULL,
        request_user_agent text,
        user_id            text REFERENCES users (id),
        auth_time          bigint,
        grant_id           text,
        decided_at         bigint
      )`,
    },
    {
      sqlite: `CREATE TABLE rate_limits (
        key            TEXT PRIMARY KEY,
        hits           INTEGER NOT NULL,
        window_ends_at INTEGER NOT NULL
      )`,
      postgres: `CREATE TABLE rate_limits (
        key            text PRIMARY KEY,
        hits           integer NOT NULL,
        window_ends_at bigint NOT NULL
      )`,
    },
    {
      sqlite: `CREATE TABLE signing_keys (
        kid          TEXT PRIMARY KEY,
        alg          TEXT NOT NULL CHECK (alg IN ('RS256', 'ES256')),
        private_jwk  TEXT NOT NULL,
        public_jwk   TEXT NOT NULL,
        created_at   INTEGER NOT NULL,
        activates_at INTEGER NOT NULL,
        retires_at   INTEGER,
        expires_at   INTEGER
      )`,
      postgres: `CREATE TABLE signing_keys (
        kid          text PRIMARY KEY,
        alg          text NOT NULL CHECK (alg IN ('RS256', 'ES256')),
        private_jwk  jsonb NOT NULL,
        public_jwk   jsonb NOT NULL,
        created_at   bigint NOT NULL,
        activates_at bigint NOT NULL,
        retires_at   bigint,
        expires_at   bigint
      )`,
    },
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
    { sqlite: 'ALTER TABLE grants ADD COLUMN last_used_at INTEGER', postgres: 'ALTER TABLE grants ADD COLUMN last_used_at bigint' },
    { sqlite: 'ALTER TABLE grants ADD COLUMN active_until INTEGER', postgres: 'ALTER TABLE grants ADD COLUMN active_until bigint' },
    // client_id has no foreign key of its own: removing a client removes its grants, and
    // their refresh tokens go with them.
    {
      sqlite: `CREATE TABLE refresh_tokens (
        hash       TEXT PRIMARY KEY,
        grant_id   TEXT NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
        client_id  TEXT NOT NULL,
        user_id    TEXT NOT NULL REFERENCES users (id),
        scope      TEXT NOT NULL,
        auth_time  INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        rotated_at INTEGER
      )`,
      postgres: `CREATE TABLE refresh_tokens (
        hash       text PRIMARY KEY,
        grant_id   text NOT NULL REFERENCES grants (id) ON DELETE CASCADE,
        client_id  text NOT NULL,
        user_id    text NOT NULL REFERENCES users (id),
        scope      text[] NOT NULL,
        auth_time  bigint NOT NULL,
        created_at bigint NOT NULL,
        expires_at bigint NOT NULL,
        rotated_at bigint
      )`,
    },
    {
      sqlite: `CREATE TABLE revoked_access_tokens (
        jti        TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
      )`,
      postgres: `CREATE TABLE revoked_access_tokens (
        jti        text PRIMARY KEY,
        expires_at bigint NOT NULL
      )`,
    },
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
    {
      postgres: `CREATE FUNCTION tessera_client_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('tessera_clients', TG_TABLE_SCHEMA || ' ' || OLD.id);
          RETURN NULL;
        END
      $$`,
    },
    {
      postgres: `CREATE TRIGGER clients_changed AFTER UPDATE OR DELETE ON clients
        FOR EACH ROW EXECUTE FUNCTION tessera_client_changed()`,
    },
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

/** Every migration, oldest first. */
export const migrations: readonly Migration[] = [initial, tokenLifecycle, clientChangeNotices];

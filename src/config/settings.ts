/**
 * Every setting, declared once: its name, default, accepted range and what it does. The
 * loader (`./index.ts`) reads each value through this table, the misspelt-variable check
 * compares unknown `TESSERA_*` names against it, and test/settings-table.test.ts holds the
 * README's settings table and the docs to it (each setting was written in three or
 * four places that drifted apart).
 */

interface SettingBase {
  readonly name: string;
  /** What it does, as the README's table says it (Markdown). */
  readonly description: string;
}

/**
 * A whole number in `min`-`max`. Where it is bounded by another whole-number setting declared
 * before it (a shorter lifetime at most the general one), `atMost`/`atLeast` name that one: the
 * value must stay on its side, and an unset one is its default moved there.
 */
export interface IntegerSetting extends SettingBase {
  readonly type: 'integer';
  readonly default: number;
  /** The default as the README shows it when it is not simply the number (a derived one, or with days). */
  readonly shown?: string;
  readonly min: number;
  readonly max: number;
  readonly atMost?: string;
  readonly atLeast?: string;
  /** Unset, this other setting's value instead of `default` (a lifetime that follows the general one). */
  readonly defaultFrom?: string;
  /** Unset, the loader gets null: the setting is off, or the loader works its default out (`shown` says how). */
  readonly optional?: true;
}

/** On or off: 1, true, yes, on / 0, false, no, off. */
export interface BooleanSetting extends SettingBase {
  readonly type: 'boolean';
  readonly default: boolean;
  readonly shown?: string;
}

/** Anything else; its own parser checks it and `accepts` says what it takes. */
export interface TextSetting extends SettingBase {
  readonly type: 'text';
  /** The default as the README shows it. */
  readonly shown: string;
  readonly accepts: string;
}

export type Setting = IntegerSetting | BooleanSetting | TextSetting;

const DAY = 86400;

/**
 * The words an on/off setting takes, the first of each the one the docs use. The README's
 * accepts cell lists them all (it said `true`, `false` while its text set `on`).
 */
export const BOOLEAN_WORDS = { on: ['true', 'on', 'yes', '1'], off: ['false', 'off', 'no', '0'] } as const;

export const SETTINGS = [
  {
    name: 'PORT',
    type: 'integer',
    default: 8080,
    min: 0,
    max: 65535,
    description: 'TCP port; `0`: one the system picks, and without `TESSERA_ISSUER` the issuer is then that address (as the tests start servers)',
  },
  { name: 'HOST', type: 'text', shown: '`localhost`', accepts: 'a host name or address', description: 'address to listen on (`0.0.0.0` for every interface)' },
  {
    name: 'TESSERA_ISSUER',
    type: 'text',
    shown: '`http://localhost:$PORT`',
    accepts: 'an https URL (http on a loopback host), no query or fragment',
    description:
      'the issuer URL, the base of every endpoint: a host of its own with no path (`https://auth.example.com`, not `https://example.com/auth`, which is refused)',
  },
  {
    name: 'TESSERA_DATABASE',
    type: 'text',
    shown: '`./data/tessera.db`',
    accepts: 'a file path or a `postgres://` URL',
    description:
      'a SQLite file (created on first start at the default path; elsewhere only with `TESSERA_DATABASE_CREATE`), or a `postgres://` URL (`?schema=NAME` keeps the tables in that schema)',
  },
  {
    name: 'TESSERA_DATABASE_CREATE',
    type: 'boolean',
    default: false,
    description:
      '`true`: a SQLite file that does not exist is created (with its directory) as a new, empty database. Otherwise only the default `./data/tessera.db` is created, and any other missing file stops the start (and every `tessera` command), since it is more often a misspelt path than a new database: set it for the first start on a new path',
  },
  {
    name: 'TESSERA_DATABASE_POOL_SIZE',
    type: 'integer',
    default: 10,
    min: 1,
    max: 1000,
    description: 'PostgreSQL only: the most database connections one server process opens for requests (it holds one more, which listens for client changes)',
  },
  {
    name: 'TESSERA_DATABASE_STATEMENT_TIMEOUT',
    type: 'integer',
    default: 5,
    min: 1,
    max: 600,
    description:
      'PostgreSQL only: the longest one statement may take, seconds; a request that needs an unavailable database is answered `503 temporarily_unavailable` instead of waiting',
  },
  {
    name: 'TESSERA_DATABASE_CONNECT_TIMEOUT',
    type: 'integer',
    default: 5,
    min: 1,
    max: 600,
    description: 'PostgreSQL only: the longest a request waits for a database connection (a new one, or a busy one to be free), seconds',
  },
  {
    name: 'TESSERA_LOG_LEVEL',
    type: 'text',
    shown: '`info`',
    accepts: '`fatal`, `error`, `warn`, `info`, `debug`, `trace`, `silent`',
    description: 'how much the server logs (JSON lines on standard output)',
  },
  {
    name: 'TESSERA_TRUST_PROXY',
    type: 'text',
    shown: '`false`',
    accepts: '`false`, `true`, or addresses and CIDR ranges',
    description:
      "whose `X-Forwarded-For` to believe: `false`, `true`, or the proxies' addresses and CIDR ranges (behind a proxy, use these); an https issuer without it is reminded at start that TLS must be terminated in front",
  },
  {
    name: 'TESSERA_ALLOW_PRIVATE_NETWORK_URLS',
    type: 'boolean',
    default: false,
    description:
      "`true`: a client's back-channel logout URI or jwks_uri may be on a private or link-local address (10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16, fc00::/7, fe80::/10), which the server would then request from inside its network; so may a webhook added through the admin API or the console, and on loopback too (the `tessera` command's may always)",
  },
  {
    name: 'TESSERA_ALLOW_UNKNOWN_SETTINGS',
    type: 'boolean',
    default: false,
    description:
      "`true`: a `TESSERA_*` variable Tessera does not know is ignored, even one close to a setting's name, which otherwise stops the start, and without the warning one close to none gets (for environments shared with other software or versions)",
  },
  { name: 'TESSERA_ACCESS_TOKEN_TTL', type: 'integer', default: 3600, min: 60, max: DAY, description: 'access token lifetime, seconds' },
  { name: 'TESSERA_ID_TOKEN_TTL', type: 'integer', default: 3600, min: 60, max: DAY, description: 'ID token lifetime, seconds' },
  { name: 'TESSERA_SESSION_TTL', type: 'integer', default: DAY, min: 300, max: 30 * DAY, description: 'how long a browser sign-in lasts, seconds' },
  {
    name: 'TESSERA_REFRESH_TOKEN_TTL',
    type: 'integer',
    default: 90 * DAY,
    shown: '`7776000` (90 days)',
    min: 300,
    max: 3650 * DAY,
    description: "how long after the user's approval its refresh tokens can be used, however often they are rotated, seconds",
  },
  {
    name: 'TESSERA_REFRESH_TOKEN_IDLE_TTL',
    type: 'integer',
    default: 30 * DAY,
    shown: '`2592000` (30 days)',
    min: 60,
    max: 3650 * DAY,
    atMost: 'TESSERA_REFRESH_TOKEN_TTL',
    description: 'a refresh token unused this long expires (each refresh starts it again), seconds',
  },
  {
    name: 'TESSERA_PUBLIC_ACCESS_TOKEN_TTL',
    type: 'integer',
    default: 3600,
    shown: 'the access token lifetime',
    min: 60,
    max: DAY,
    defaultFrom: 'TESSERA_ACCESS_TOKEN_TTL',
    atMost: 'TESSERA_ACCESS_TOKEN_TTL',
    description: 'a shorter access token lifetime for public clients, seconds',
  },
  {
    name: 'TESSERA_PUBLIC_REFRESH_TOKEN_TTL',
    type: 'integer',
    default: 90 * DAY,
    shown: 'the refresh token lifetime',
    min: 300,
    max: 3650 * DAY,
    defaultFrom: 'TESSERA_REFRESH_TOKEN_TTL',
    atMost: 'TESSERA_REFRESH_TOKEN_TTL',
    description: 'a shorter refresh token lifetime for public clients, seconds',
  },
  {
    name: 'TESSERA_DEVICE_ACCESS_TOKEN_TTL',
    type: 'integer',
    default: 3600,
    shown: 'the access token lifetime',
    min: 60,
    max: DAY,
    defaultFrom: 'TESSERA_ACCESS_TOKEN_TTL',
    atMost: 'TESSERA_ACCESS_TOKEN_TTL',
    description: 'a shorter access token lifetime for grants approved through the device flow, seconds',
  },
  {
    name: 'TESSERA_DEVICE_REFRESH_TOKEN_TTL',
    type: 'integer',
    default: 90 * DAY,
    shown: 'the refresh token lifetime',
    min: 300,
    max: 3650 * DAY,
    defaultFrom: 'TESSERA_REFRESH_TOKEN_TTL',
    atMost: 'TESSERA_REFRESH_TOKEN_TTL',
    description: 'a shorter refresh token lifetime for grants approved through the device flow, seconds',
  },
  {
    name: 'TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT',
    type: 'integer',
    default: 5,
    min: 1,
    max: 60,
    description: 'the longest one back-channel logout POST to a client may take, seconds',
  },
  {
    name: 'TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS',
    type: 'integer',
    default: 3,
    min: 1,
    max: 10,
    description: 'tries per client when its back-channel logout endpoint cannot be reached or answers 5xx',
  },
  {
    name: 'TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS',
    type: 'integer',
    default: 2000,
    min: 0,
    max: 600_000,
    description: 'the wait before the second try, doubled before each later one, milliseconds',
  },
  {
    name: 'TESSERA_WEBHOOK_TIMEOUT',
    type: 'integer',
    default: 10,
    min: 1,
    max: 60,
    description: 'the longest one webhook delivery may take, seconds: a receiver that answers later is tried again ([docs/events.md](docs/events.md))',
  },
  {
    name: 'TESSERA_WEBHOOK_RETRY_WINDOW',
    type: 'integer',
    default: 3 * DAY,
    shown: '`259200` (3 days)',
    min: 1,
    max: 30 * DAY,
    description:
      'how long after its event a webhook delivery that fails is tried again, seconds; then it is a dead letter, which `tessera webhook replay` sends again',
  },
  {
    name: 'TESSERA_WEBHOOK_RETRY_DELAY_MS',
    type: 'integer',
    default: 5000,
    min: 10,
    max: 3_600_000,
    description: "the wait before a failed webhook delivery's second try, doubled before each later one (at most an hour), milliseconds",
  },
  {
    name: 'TESSERA_SSF_DEFAULT_SUBJECTS',
    type: 'text',
    shown: '`ALL`',
    accepts: '`ALL`, `NONE`',
    description:
      "the subjects of a Shared Signals stream made from now on (SSF 1.0 `default_subjects`): `ALL`, every person's events but those of people its receiver removes; `NONE`, only those of people its receiver adds ([docs/events.md](docs/events.md#subjects))",
  },
  {
    name: 'TESSERA_OUTBOX_BATCH',
    type: 'integer',
    default: 32,
    min: 1,
    max: 1000,
    description:
      "how many of one webhook's or one Shared Signals stream's deliveries one statement claims, to be sent in order ([docs/events.md](docs/events.md#delivery)); fewer statements under a flood of events",
  },
  {
    name: 'TESSERA_OUTBOX_TRIES_PER_TURN',
    type: 'integer',
    default: 4,
    min: 1,
    max: 1000,
    description:
      "how many deliveries (webhooks', Shared Signals', mail) one server process begins in one turn of its event loop; the rest wait for the next turn, so that a flood of events leaves requests their share ([docs/events.md](docs/events.md#delivery))",
  },
  {
    name: 'TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND',
    type: 'integer',
    default: 20,
    min: 1,
    max: 10000,
    description:
      'how many deliveries (all kinds together) one server process still begins a second while its event loop is busy (90% or more of a tenth of a second): deliveries slow down to this, giving way to requests, and speed up again as the loop has room ([docs/events.md](docs/events.md#delivery))',
  },
  {
    name: 'TESSERA_TOKEN_EXCHANGE_MAX_ACTORS',
    type: 'integer',
    default: 4,
    min: 1,
    max: 16,
    description:
      "how many actors a token exchange's delegation chain may name (RFC 8693 `act`, nested), the exchanging client included; a longer chain is refused ([docs/agents.md](docs/agents.md))",
  },
  {
    name: 'TESSERA_ID_JAG_LIFETIME',
    type: 'integer',
    default: 300,
    min: 10,
    max: 300,
    description:
      'how long an ID-JAG this server issues lives, seconds, and how long and how old one it redeems may be (never more than 5 minutes: [docs/agents.md](docs/agents.md))',
  },
  {
    name: 'TESSERA_SAML_REQUEST_LIFETIME',
    type: 'integer',
    default: 300,
    min: 30,
    max: 600,
    description: "how far from now a SAML request's IssueInstant may be, seconds, and how long a SAML assertion may be used ([docs/saml.md](docs/saml.md))",
  },
  {
    name: 'TESSERA_SAML_MAX_REQUEST_SIZE',
    type: 'integer',
    default: 32768,
    min: 4096,
    max: 65536,
    description: 'the largest SAML request read, in characters, as it came and once inflated; a larger one is refused before it is parsed',
  },
  {
    name: 'TESSERA_SAML_SIGN_IN_TIMEOUT',
    type: 'integer',
    default: 1800,
    min: 60,
    max: 86400,
    description: 'how long a person may take to sign in for a SAML service provider, seconds, from its request to the answer',
  },
  {
    name: 'TESSERA_KEY_LEAD_TIME',
    type: 'integer',
    default: 3600,
    min: 0,
    max: 30 * DAY,
    description: 'how long a new signing key is published before it signs, seconds',
  },
  {
    name: 'TESSERA_WORKERS',
    type: 'integer',
    default: 1,
    min: 1,
    max: 64,
    description:
      'worker threads of one process on an SQLite file on Linux (one writer for all; the port shared), processes (node:cluster) otherwise, to use several cores',
  },
  {
    name: 'TESSERA_ACCESS_TOKEN_ALG',
    type: 'text',
    shown: '`ES256`',
    accepts: '`ES256`, `RS256`',
    description:
      "signature of the JWT access tokens for Tessera's own API (userinfo) (ID tokens are always RS256; an API's access tokens are RS256 unless `resource add\\|update --signing-alg` says otherwise)",
  },
  {
    name: 'TESSERA_DPOP_PROOF_WINDOW',
    type: 'integer',
    default: 60,
    min: 1,
    max: 600,
    description: "how far a DPoP proof's `iat` may be from the server's clock, either way, and so how long its `jti` is remembered to refuse a replay, seconds",
  },
  {
    name: 'TESSERA_DPOP_NONCES',
    type: 'boolean',
    default: false,
    description:
      '`true`: every DPoP proof must carry a nonce the server issued (`DPoP-Nonce`, RFC 9449 §8); one without the current nonce gets `use_dpop_nonce` with it',
  },
  {
    name: 'TESSERA_DPOP_NONCE_LIFETIME',
    type: 'integer',
    default: 300,
    min: 10,
    max: DAY,
    description: 'how long a DPoP nonce is the current one; the one before is accepted for as long again, seconds',
  },
  {
    name: 'TESSERA_PAR_TTL',
    type: 'integer',
    default: 60,
    min: 5,
    max: 600,
    description: "how long a pushed request's `request_uri` waits for the browser to bring it to the authorization endpoint, seconds",
  },
  {
    name: 'TESSERA_PAR_INTERACTION_TTL',
    type: 'integer',
    default: 600,
    min: 60,
    max: DAY,
    description: 'once a browser has brought a `request_uri`, how long it has to sign in and decide, seconds',
  },
  {
    name: 'TESSERA_REQUIRE_PAR',
    type: 'boolean',
    default: false,
    description: '`true`: every client must push its authorization requests (discovery `require_pushed_authorization_requests`)',
  },
  {
    name: 'TESSERA_REQUIRE_SECOND_FACTOR',
    type: 'boolean',
    default: false,
    description:
      '`true`: only a passkey sign-in, or a password and a one-time code, may approve an application or a device; a person with neither signs in with their password to set one up on `/account`',
  },
  {
    name: 'TESSERA_CONSOLE_REAUTHENTICATE',
    type: 'integer',
    default: 900,
    min: 60,
    max: DAY,
    description:
      'how long after signing in an operator may make changes in the console at `/console` before being asked to sign in again (with a passkey or a one-time code), seconds',
  },
  {
    name: 'TESSERA_ACCOUNT_REAUTHENTICATE',
    type: 'integer',
    default: 900,
    min: 60,
    max: DAY,
    description:
      'how long after signing in a person may change their e-mail address, passkeys or one-time codes on `/account` before being asked to sign in again, seconds: a browser left signed in cannot move the address (and with it the password reset) elsewhere, or add a passkey of its own',
  },
  {
    name: 'TESSERA_WEBAUTHN_TIMEOUT',
    type: 'integer',
    default: 300,
    min: 30,
    max: 3600,
    description: 'how long a passkey request (its challenge) can be answered, seconds',
  },
  {
    name: 'TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS',
    type: 'integer',
    default: 300,
    min: 1,
    max: 100_000_000,
    description:
      "passkey ceremonies one address (IPv6: its /64) may start a minute (sign-in, sign-up, invitation and a signed-in person's new-passkey options, counted together), per instance; generous because the sign-in page's passkey autofill starts one at every page load, for everyone behind an office's one address",
  },
  {
    name: 'TESSERA_SECOND_FACTOR_TIMEOUT',
    type: 'integer',
    default: 300,
    min: 30,
    max: 3600,
    description: 'how long after a right password the one-time code may be entered, seconds',
  },
  {
    name: 'TESSERA_UPSTREAM_TIMEOUT',
    type: 'integer',
    default: 10,
    min: 1,
    max: 120,
    description:
      "the longest Tessera waits for an upstream identity provider or directory to answer one request (discovery, tokens, UserInfo, GitHub's API, an LDAP connection, search or bind), seconds; past it the person is told the provider is not answering ([docs/identity-providers.md](docs/identity-providers.md))",
  },
  {
    name: 'TESSERA_UPSTREAM_SIGN_IN_TIMEOUT',
    type: 'integer',
    default: 600,
    min: 60,
    max: 3600,
    description: 'how long a person has to sign in at an upstream identity provider and come back, seconds',
  },
  {
    name: 'TESSERA_PASSWORD_HASH',
    type: 'text',
    shown: '`m=47104,t=1,p=1`',
    accepts: '`m=KIB,t=PASSES,p=LANES`: p 1-64, t 1-100, m 8×p-4194304',
    description:
      "argon2id cost of new password hashes: memory in KiB, passes, lanes (OWASP's first configuration: about 90 ms of one core). Lower values make stolen hashes cheaper to guess; the test suite uses `m=8,t=1,p=1` to run fast. Existing hashes keep the cost they were made with",
  },
  {
    name: 'TESSERA_PASSWORD_HASH_THREADS',
    type: 'integer',
    default: 1,
    shown: 'half the cores (at least 1)',
    min: 1,
    max: 64,
    optional: true,
    description: "threads that compute argon2id, apart from libuv's pool, which signs tokens",
  },
  {
    name: 'TESSERA_PASSWORD_HASH_NICE',
    type: 'integer',
    default: 10,
    min: 0,
    max: 19,
    description:
      "how far the hashing threads yield the cores to the rest of the server when the cores are busy, as Linux's nice value above the process's own: 0 is an equal share, 10 about a tenth of a busy core's time, 19 the least; on an idle machine a check takes as long either way. Linux only ([docs/security.md](docs/security.md))",
  },
  {
    name: 'TESSERA_SIGN_IN_WINDOW',
    type: 'integer',
    default: 900,
    min: 60,
    max: DAY,
    description: 'the window wrong passwords are counted in, seconds ([docs/security.md](docs/security.md))',
  },
  {
    name: 'TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS',
    type: 'integer',
    default: 10,
    min: 1,
    max: 10_000,
    description: 'wrong passwords for one username from one address (IPv6: its /64) in the window, before that address is refused for it',
  },
  {
    name: 'TESSERA_SIGN_IN_FAILURES_PER_ADDRESS',
    type: 'integer',
    default: 100,
    min: 1,
    max: 1_000_000,
    description: 'wrong passwords from one address (IPv6: its /64), any usernames, in the window',
  },
  {
    name: 'TESSERA_SIGN_IN_FREE_FAILURES',
    type: 'integer',
    default: 5,
    min: 0,
    max: 10_000,
    description: 'wrong passwords for one username, from anywhere, before each check of it is delayed',
  },
  {
    name: 'TESSERA_SIGN_IN_DELAY_MS',
    type: 'integer',
    default: 1000,
    min: 0,
    max: 60_000,
    description: 'the first such delay, milliseconds; each further failure doubles it',
  },
  {
    name: 'TESSERA_SIGN_IN_MAX_DELAY_MS',
    type: 'integer',
    default: 30_000,
    min: 0,
    max: 300_000,
    atLeast: 'TESSERA_SIGN_IN_DELAY_MS',
    description: 'the longest such delay, milliseconds',
  },
  {
    name: 'TESSERA_SIGN_IN_QUEUE',
    type: 'integer',
    default: 32,
    min: 0,
    max: 100_000,
    description: 'sign-ins that may wait for a hashing thread; past it a sign-in is answered 429 at once',
  },
  {
    name: 'TESSERA_SIGN_IN_QUEUE_PER_ADDRESS',
    type: 'integer',
    default: 4,
    min: 1,
    max: 100_000,
    description: 'places in that queue one address (IPv6: its /64) may hold',
  },
  {
    name: 'TESSERA_SIGN_IN_GOOD_RECORD',
    type: 'integer',
    default: 30 * DAY,
    shown: '`2592000` (30 days)',
    min: 0,
    max: 400 * DAY,
    description:
      'how long a right password vouches for the browser and the address it came from, seconds (`0`: never): their later sign-ins for that username skip the wait a guesser causes and go first on a full password queue',
  },
  { name: 'TESSERA_USER_CODE_WINDOW', type: 'integer', default: 600, min: 60, max: DAY, description: 'the window wrong user codes are counted in, seconds' },
  {
    name: 'TESSERA_USER_CODE_FAILURES_PER_BROWSER',
    type: 'integer',
    default: 5,
    min: 1,
    max: 1000,
    description: 'wrong user codes from one browser in the window',
  },
  {
    name: 'TESSERA_USER_CODE_FAILURES_PER_ADDRESS',
    type: 'integer',
    default: 20,
    min: 1,
    max: 100_000,
    atLeast: 'TESSERA_USER_CODE_FAILURES_PER_BROWSER',
    description: 'wrong user codes from one address (IPv6: its /64) in the window',
  },
  {
    name: 'TESSERA_USER_CODE_FAILURES_PER_NETWORK',
    type: 'integer',
    default: 60,
    min: 1,
    max: 1_000_000,
    atLeast: 'TESSERA_USER_CODE_FAILURES_PER_ADDRESS',
    description: 'wrong user codes from one network (IPv4 /24, IPv6 /64) in the window',
  },
  {
    name: 'TESSERA_USER_CODE_FAILURES_PER_LARGE_NETWORK',
    type: 'integer',
    default: 240,
    min: 1,
    max: 10_000_000,
    atLeast: 'TESSERA_USER_CODE_FAILURES_PER_NETWORK',
    description: 'wrong user codes from one larger network (IPv4 /16, IPv6 /48) in the window',
  },
  {
    name: 'TESSERA_USER_CODE_FAILURES_PER_MINUTE',
    type: 'integer',
    default: 600,
    min: 1,
    max: 10_000_000,
    description:
      'wrong user codes a minute across the server; once spent, an alert is logged and lookups from browsers that are not signed in are refused until the minute ends',
  },
  {
    name: 'TESSERA_USER_CODE_SLOW_MS',
    type: 'integer',
    default: 2000,
    min: 0,
    max: 60_000,
    description: "the wait a signed-in browser's user-code lookup gets while that budget is spent, milliseconds",
  },
  {
    name: 'TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT',
    type: 'integer',
    default: 600,
    min: 1,
    max: 100_000_000,
    description: 'device authorizations one client may start a minute, per instance',
  },
  {
    name: 'TESSERA_DEVICE_CODE_LIFETIME',
    type: 'integer',
    default: 600,
    min: 60,
    max: 1800,
    description: 'how long a device code and its user code can be approved and redeemed (RFC 8628 §3.2 `expires_in`), seconds',
  },
  {
    name: 'TESSERA_DEVICE_POLL_INTERVAL',
    type: 'integer',
    default: 5,
    min: 1,
    max: 60,
    description:
      "how long a device waits between polls of the token endpoint (RFC 8628 §3.2 `interval`), seconds; a poll sooner is answered `slow_down` and the device's interval grows by 5 s",
  },
  {
    name: 'TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS',
    type: 'integer',
    default: 30,
    min: 1,
    max: 100_000_000,
    description: 'device authorizations one address (IPv6: its /64) may start a minute, per instance',
  },
  {
    name: 'TESSERA_GRANT_RETENTION',
    type: 'integer',
    default: 7 * DAY,
    shown: '`604800` (7 days)',
    min: 3600,
    max: 3650 * DAY,
    description: 'how long a revoked or spent grant (and one never used) is kept before the purge deletes it, seconds',
  },
  {
    name: 'TESSERA_KEY_ENCRYPTION_KEY',
    type: 'text',
    shown: 'none: the key file',
    accepts: '32-byte keys in base64, comma-separated',
    description:
      'the key that encrypts the private signing keys in the store (AES-256-GCM); the first encrypts, any decrypts. Every instance sharing a database needs the same one; see [docs/security.md](docs/security.md)',
  },
  {
    name: 'TESSERA_KEY_FILE',
    type: 'text',
    shown: '`<database>.key` (`./data/tessera.key` with PostgreSQL)',
    accepts: 'a file path',
    description: 'where the key is kept when `TESSERA_KEY_ENCRYPTION_KEY` is not set, created (mode 0600) on first start; back it up with the database',
  },
  {
    name: 'TESSERA_CLIENT_JWKS_TIMEOUT_MS',
    type: 'integer',
    default: 3000,
    min: 100,
    max: 60_000,
    description: "the longest a token request waits for a `private_key_jwt` client's `jwks_uri` to answer; past it the request gets `invalid_client`",
  },
  {
    name: 'TESSERA_CLIENT_JWKS_CACHE_TTL',
    type: 'integer',
    default: 300,
    min: 0,
    max: DAY,
    description: 'seconds a fetched client JWKS is used before it is fetched again',
  },
  {
    name: 'TESSERA_CLIENT_JWKS_REFETCH_INTERVAL',
    type: 'integer',
    default: 10,
    min: 0,
    max: 3600,
    description: 'an assertion with a `kid` missing from the cached JWKS fetches it again at once, but no sooner than this many seconds after the last fetch',
  },
  {
    name: 'TESSERA_CLIENT_ASSERTION_MAX_LIFETIME',
    type: 'integer',
    default: 3600,
    min: 30,
    max: 3600,
    description:
      'seconds: a client assertion whose `exp` is further ahead is refused; each `jti` is remembered until its `exp`, so at most this long (an hour by default, as authlib signs them)',
  },
  {
    name: 'TESSERA_CLIENT_ASSERTION_AUDIENCE',
    type: 'text',
    shown: '`issuer`',
    accepts: '`issuer`, `legacy`',
    description:
      "the `aud` a client assertion (`private_key_jwt`, at every endpoint a client authenticates at, PAR included) must carry. `issuer`: the issuer alone, as RFC 7523bis requires, so that an assertion a client signed for another server that passed this server's token endpoint off as its own cannot be replayed here (audience injection); `legacy`: also the token endpoint's URL or the endpoint called, alone or among other values, as before RFC 7523bis, only for clients that still name the token endpoint (openid-client and oauth4webapi send the issuer) ([docs/security.md](docs/security.md#client-assertions-audience-injection))",
  },
  {
    name: 'TESSERA_EVENT_RETENTION',
    type: 'integer',
    default: 90 * DAY,
    shown: '`7776000` (90 days)',
    min: 3600,
    max: 3650 * DAY,
    description: 'how long the audit trail is kept, seconds; older events are purged with expired records',
  },
  {
    name: 'TESSERA_METRICS_PORT',
    type: 'integer',
    default: 0,
    shown: 'off',
    min: 0,
    max: 65535,
    optional: true,
    description:
      'serve Prometheus metrics at `/metrics` on this port, on a listener of its own ([docs/operations.md](docs/operations.md)); `0`: one the system picks',
  },
  {
    name: 'TESSERA_METRICS_HOST',
    type: 'text',
    shown: '`127.0.0.1`',
    accepts: 'a host name or address',
    description: 'address of the metrics listener (`0.0.0.0` to let a scraper on another machine in)',
  },
  {
    name: 'TESSERA_REGISTRATION',
    type: 'text',
    shown: '`off`',
    accepts: '`off`, `token`, `open`',
    description:
      'dynamic client registration (RFC 7591) at `/oauth/register`: `off`; `token`: with an initial access token from `tessera registration-token create`; `open`: anyone, for public apps with loopback or private-use redirect URIs only ([docs/registration.md](docs/registration.md))',
  },
  {
    name: 'TESSERA_REGISTRATIONS_PER_ADDRESS',
    type: 'integer',
    default: 10,
    min: 1,
    max: 1_000_000,
    description:
      'with `TESSERA_REGISTRATION=open`: registrations one address (IPv6: its /64) may make an hour (those made with an initial access token are not counted)',
  },
  {
    name: 'TESSERA_REGISTRATIONS_PER_NETWORK',
    type: 'integer',
    default: 30,
    min: 1,
    max: 1_000_000,
    description: 'with `TESSERA_REGISTRATION=open`: registrations one network (IPv4 /24, IPv6 /64) may make an hour',
  },
  {
    name: 'TESSERA_REGISTRATIONS_PER_HOUR',
    type: 'integer',
    default: 200,
    min: 1,
    max: 10_000_000,
    description:
      'with `TESSERA_REGISTRATION=open`: registrations the whole server takes an hour; past it, open registration is refused until the hour ends (an initial access token still registers)',
  },
  {
    name: 'TESSERA_UNUSED_REGISTRATION_RETENTION',
    type: 'integer',
    default: 7 * DAY,
    shown: '`604800` (7 days)',
    min: 3600,
    max: 3650 * DAY,
    description:
      'how long an app that registered itself (dynamic registration or a metadata document) is kept when nobody has approved it and it has had no token, seconds; then the purge removes it',
  },
  {
    name: 'TESSERA_SOFTWARE_STATEMENT_JWKS',
    type: 'text',
    shown: 'none',
    accepts: 'a JWK Set (JSON) or a file holding one',
    description:
      "the public keys whose signed `software_statement`s (RFC 7591 §2.3) registration accepts; their claims win over the request's. Without it a software statement is refused",
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_DOCUMENTS',
    type: 'boolean',
    default: false,
    description:
      '`true`: a `client_id` that is an https URL is the address of its metadata (Client ID Metadata Documents), fetched and checked, and the app is treated as a public client ([docs/registration.md](docs/registration.md))',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_TIMEOUT_MS',
    type: 'integer',
    default: 3000,
    min: 100,
    max: 30_000,
    description: 'the longest a metadata document fetch may take, milliseconds',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_MAX_BYTES',
    type: 'integer',
    default: 5120,
    min: 512,
    max: 1_048_576,
    description: 'the largest metadata document taken, bytes',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_CACHE_TTL',
    type: 'integer',
    default: 3600,
    min: 1,
    max: 7 * DAY,
    description: 'the longest a fetched document is kept (less when its `Cache-Control` says so); a refused one is kept a minute, seconds',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS',
    type: 'integer',
    default: 10,
    min: 1,
    max: 1_000_000,
    description: 'new metadata-document apps (a client_id URL not seen before, or seen and removed) one address (IPv6: its /64) may bring an hour',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_HOUR',
    type: 'integer',
    default: 200,
    min: 1,
    max: 10_000_000,
    description:
      'new metadata-document apps the whole server takes an hour; past it, a new one is refused until the hour ends (apps already known are not affected)',
  },
  {
    name: 'TESSERA_CLIENT_ID_METADATA_DEVELOPMENT',
    type: 'boolean',
    default: false,
    description: '`true`, for development only: metadata documents may be fetched over http and from loopback and private addresses (a local test app)',
  },
  {
    name: 'TESSERA_ADMIN_LISTEN',
    type: 'text',
    shown: 'off',
    accepts: '`host:port`',
    description:
      'serve the admin API (`/admin/v1`, [docs/admin-api.md](docs/admin-api.md)) on a listener of its own at this address and nowhere else: `/admin` then answers 404 on the public listener; port `0`: one the system picks',
  },
  {
    name: 'TESSERA_REQUEST_TIMEOUT',
    type: 'integer',
    default: 30,
    min: 1,
    max: 600,
    description:
      'how long a client may take to send a whole request, headers and body, seconds; a slower one is answered 408 and its connection closed, so that a client sending a byte now and then cannot hold connections open. It does not limit how long the server takes to answer',
  },
  {
    name: 'TESSERA_SHUTDOWN_DELAY',
    type: 'integer',
    default: 5,
    min: 0,
    max: 300,
    description:
      'on SIGTERM, `/readyz` answers 503 at once while requests are still served this long, seconds, so a load balancer stops sending new ones first',
  },
  {
    name: 'TESSERA_SHUTDOWN_TIMEOUT',
    type: 'integer',
    default: 30,
    min: 1,
    max: 3600,
    description: 'then the server stops accepting and waits at most this long for requests in flight, seconds',
  },
  {
    name: 'TESSERA_SMTP_URL',
    type: 'text',
    shown: 'none: no mail is sent',
    accepts: 'an `smtp://` or `smtps://` URL, with `user:password@` where the server asks for them',
    description:
      'the mail server Tessera sends its messages through (recovery links, sign-up and e-mail verification, notices): `smtps://` speaks TLS from the start (port 465 by default), `smtp://` upgrades with STARTTLS as `TESSERA_SMTP_STARTTLS` says (port 587 by default) ([docs/mail.md](docs/mail.md))',
  },
  {
    name: 'TESSERA_SMTP_STARTTLS',
    type: 'text',
    shown: '`require`',
    accepts: '`require`, `try`, `off`',
    description:
      'with an `smtp://` URL: `require`: a server that does not offer STARTTLS gets no message; `try`: upgrade when offered (a server on the same machine or network); `off`: never (a test server)',
  },
  {
    name: 'TESSERA_MAIL_FROM',
    type: 'text',
    shown: "`TESSERA_SITE_NAME` at `no-reply@` the issuer's host",
    accepts: 'an address, or `Name <address>`',
    description: 'the sender of every message',
  },
  {
    name: 'TESSERA_SMTP_TIMEOUT',
    type: 'integer',
    default: 10,
    min: 1,
    max: 120,
    description:
      'the longest one try to hand a message to the mail server may take (connecting, the greeting, each answer), seconds; a slower try is tried again later',
  },
  {
    name: 'TESSERA_MAIL_RETRY_WINDOW',
    type: 'integer',
    default: DAY,
    shown: '`86400` (a day)',
    min: 60,
    max: 30 * DAY,
    description: 'how long after its event a message the mail server does not take is tried again, seconds; then it is a dead letter (`mail.dead_lettered`)',
  },
  {
    name: 'TESSERA_MAIL_RETRY_DELAY_MS',
    type: 'integer',
    default: 5000,
    min: 10,
    max: 3_600_000,
    description: "the wait before a message's second try, doubled before each later one (at most an hour), milliseconds",
  },
  {
    name: 'TESSERA_RECOVERY_LINK_TTL',
    type: 'integer',
    default: 3600,
    min: 300,
    max: DAY,
    description: 'how long a reset link sent by "Forgot password?" works, seconds',
  },
  {
    name: 'TESSERA_RECOVERY_PER_ADDRESS',
    type: 'integer',
    default: 10,
    min: 1,
    max: 1_000_000,
    description:
      'recovery links one address (IPv6: its /64) may ask for an hour (whether the e-mail address has an account or not), and links to confirm a new address on `/account`',
  },
  {
    name: 'TESSERA_RECOVERY_PER_EMAIL',
    type: 'integer',
    default: 3,
    min: 1,
    max: 1000,
    description: 'recovery links asked for one e-mail address an hour, from anywhere, and links to confirm it as a new address',
  },
  {
    name: 'TESSERA_SIGN_UP',
    type: 'text',
    shown: '`off`',
    accepts: '`off`, `open`, `invite`',
    description:
      'whether people make their own accounts: `open`: a "Create an account" link on the sign-in page; the account is made when the link mailed to its address is followed (a mail server is then needed: [docs/mail.md](docs/mail.md)), unless `TESSERA_SIGN_UP_VERIFY=later`; `invite`: only through an invitation (`tessera user invite`): no link on the sign-in page, and `/sign-up` opens for an invitation\'s token alone',
  },
  {
    name: 'TESSERA_SIGN_UP_VERIFY',
    type: 'text',
    shown: '`first`',
    accepts: '`first`, `later`',
    description:
      '`first`: a new account exists only once its e-mail link is followed, in one step in the browser that signed up; in another, only with the password chosen at sign-up (a passkey sign-up: only in the browser that signed up); `later`: it is made and usable at once, the browser that made it signed in to it, with `email_verified` false until the link (mailed when there is a mail server) is followed in a browser signed in as that account',
  },
  {
    name: 'TESSERA_SIGN_UP_DOMAINS',
    type: 'text',
    shown: 'any',
    accepts: 'comma-separated domain names',
    description: 'the e-mail domains a new account may have (`example.com,example.org`); another is refused on the sign-up page',
  },
  {
    name: 'TESSERA_SIGN_UP_LINK_TTL',
    type: 'integer',
    default: DAY,
    shown: '`86400` (a day)',
    min: 600,
    max: 7 * DAY,
    description: 'how long the link that confirms a sign-up, or a new e-mail address, works, seconds',
  },
  {
    name: 'TESSERA_SIGN_UP_PER_ADDRESS',
    type: 'integer',
    default: 10,
    min: 1,
    max: 1_000_000,
    description: 'sign-ups one address (IPv6: its /64) may make an hour',
  },
  {
    name: 'TESSERA_SIGN_UP_PER_EMAIL',
    type: 'integer',
    default: 3,
    min: 1,
    max: 1000,
    description: 'sign-ups with one e-mail address an hour, from anywhere (whether it has an account or not)',
  },
  {
    name: 'TESSERA_SITE_NAME',
    type: 'text',
    shown: '`Tessera`',
    accepts: 'up to 64 characters',
    description:
      'the name people see on every page: titles, above each page, the sign-in and device pages, in their authenticator app, and beside their passkeys',
  },
  { name: 'TESSERA_SITE_LOGO_URL', type: 'text', shown: 'none', accepts: 'an https URL', description: 'an image shown beside the name' },
  {
    name: 'TESSERA_SITE_ACCENT_COLOR',
    type: 'text',
    shown: 'none',
    accepts: '`#rrggbb`, 4.5:1 against white',
    description: 'the colour of the main buttons (white text on it); refused unless its contrast with white is at least 4.5:1 (WCAG 2.2)',
  },
  {
    name: 'TESSERA_LOCALES',
    type: 'text',
    shown: '`en,de,fr,es,pt-BR,ja,zh-Hans,ar`',
    accepts: 'comma-separated tags from that list',
    description: 'the languages the pages are offered in; the language menu lists these and no page is shown in another ([Languages](#languages))',
  },
  {
    name: 'TESSERA_API_TRANSLATIONS',
    type: 'text',
    shown: 'none',
    accepts: 'a JSON file',
    description:
      'registered APIs\' names and scope descriptions in other languages, read at start: `{"de": {"apis": {"https://api.example.com": "Fotoarchiv"}, "scopes": {"photos:read": "Ihre Fotos ansehen"}}}`; where a language has none, the registered words are shown ([Languages](#languages))',
  },
  {
    name: 'TESSERA_DEFAULT_LOCALE',
    type: 'text',
    shown: '`en`',
    accepts: 'one of `TESSERA_LOCALES`',
    description: 'the language of a page when neither the app, the person nor the browser asks for an offered one',
  },
] as const satisfies readonly Setting[];

export type SettingName = (typeof SETTINGS)[number]['name'];
export type IntegerSettingName = Extract<(typeof SETTINGS)[number], { type: 'integer' }>['name'];
export type BooleanSettingName = Extract<(typeof SETTINGS)[number], { type: 'boolean' }>['name'];
export type TextSettingName = Extract<(typeof SETTINGS)[number], { type: 'text' }>['name'];

const BY_NAME: ReadonlyMap<string, Setting> = new Map(SETTINGS.map((setting) => [setting.name, setting]));

export function setting(name: SettingName): Setting {
  return BY_NAME.get(name)!;
}

/**
 * `TESSERA_*` variables that are not server settings but are read elsewhere, so the
 * misspelt-variable check leaves them alone.
 */
export const OTHER_VARIABLES: Readonly<Record<string, string>> = {
  TESSERA_CLIENT_SECRET: '`tessera device-login`: the client secret, kept out of the process list',
  TESSERA_TEST_POSTGRES_URL: 'the test suite: the PostgreSQL server its store tests use',
  TESSERA_CHROMIUM: 'the test suite: the Chromium binary its browser tests drive',
};

/** The README's cell for a setting's default. */
export function shownDefault(entry: Setting): string {
  if (entry.type === 'text') return entry.shown;
  if (entry.shown !== undefined) return entry.shown;
  return `\`${String(entry.default)}\``;
}

/** The README's cell for what a setting accepts. */
export function shownRange(entry: Setting): string {
  if (entry.type === 'integer') {
    const bound = entry.atMost ? `, at most \`${entry.atMost}\`` : entry.atLeast ? `, at least \`${entry.atLeast}\`` : '';
    return `${entry.min}-${entry.max}${bound}`;
  }
  if (entry.type === 'boolean')
    return `${BOOLEAN_WORDS.on.map((word) => `\`${word}\``).join(', ')}; ${BOOLEAN_WORDS.off.map((word) => `\`${word}\``).join(', ')}`;
  return entry.accepts;
}

/** The README's settings table, row by row, as the test expects it. */
export function settingsTable(): string {
  const rows = SETTINGS.map((entry) => `| \`${entry.name}\` | ${shownDefault(entry)} | ${shownRange(entry)} | ${entry.description} |`);
  return ['| variable | default | accepts | meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** Levenshtein distance, for "did you mean". */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The candidate closest to `word`, or null when none is close (more than a third of it differs). */
export function closest(word: string, candidates: Iterable<string>): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const d = distance(word.toUpperCase(), candidate.toUpperCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

/** The `TESSERA_*` variables in `env` that Tessera does not read. */
export function unknownVariables(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.keys(env).filter((name) => name.startsWith('TESSERA_') && !BY_NAME.has(name) && !(name in OTHER_VARIABLES));
}

const PREFIX = 'TESSERA_';

/**
 * The setting an unknown `TESSERA_*` variable is most likely a misspelling of, or null when it
 * is close to none, as a wrapper's or an image's own variable is (such a variable
 * stopped the start). Close: its name past `TESSERA_` is at most a quarter of a setting's
 * (past the prefix) away (`TESSERA_ACESS_TOKEN_TTL`, `TESSERA_LOGLEVEL`, `TESSERA_PORT` for
 * `PORT`), or is a setting's with more after it (`TESSERA_DATABASE_URL`). A third, as the
 * command's suggestions allow, would take `TESSERA_SERVICE_HOST` for `TESSERA_METRICS_HOST`.
 */
export function misspeltSetting(name: string): string | null {
  const word = name.toUpperCase().slice(PREFIX.length);
  const wordOf = (setting: string) => (setting.startsWith(PREFIX) ? setting.slice(PREFIX.length) : setting);
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const { name: setting } of SETTINGS) {
    const d = distance(word, wordOf(setting));
    if (d <= Math.max(1, Math.floor(wordOf(setting).length / 4)) && d < bestDistance) {
      best = setting;
      bestDistance = d;
    }
  }
  if (best !== null) return best;
  const extended = SETTINGS.filter(({ name: setting }) => word.startsWith(`${wordOf(setting)}_`));
  return extended.sort((a, b) => b.name.length - a.name.length)[0]?.name ?? null;
}

/**
 * The variables Kubernetes gives every pod for each Service in its namespace (unless the pod
 * says `enableServiceLinks: false`): a Service named `tessera`, as deploy/kubernetes/ has,
 * brings `TESSERA_SERVICE_HOST`, `TESSERA_SERVICE_PORT[_NAME]`, `TESSERA_PORT=tcp://…` and
 * `TESSERA_PORT_80_TCP[_PROTO|_PORT|_ADDR]`; one named `tessera-x`, the same with `TESSERA_X_`.
 * They are the platform's, not a mistake, so the start neither refuses nor warns about them.
 */
export function isKubernetesServiceLink(name: string, value: string | undefined): boolean {
  if (/^TESSERA(?:_[A-Z0-9_]+)?_SERVICE_(?:HOST|PORT(?:_[A-Z0-9_]+)?)$/.test(name)) return true;
  if (/^TESSERA(?:_[A-Z0-9_]+)?_PORT_\d+_(?:TCP|UDP|SCTP)(?:_(?:PROTO|PORT|ADDR))?$/.test(name)) return true;
  return /^TESSERA(?:_[A-Z0-9_]+)?_PORT$/.test(name) && /^(?:tcp|udp|sctp):\/\//.test(value ?? '');
}

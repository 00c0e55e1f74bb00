/**
 * What the settings become: the `Config` every part of the server is given, grouped by what
 * uses it. `./index.ts` builds it from the values `./settings.ts` declares; what each setting
 * accepts and defaults to is said there, once, and the comments here say why it exists. Types
 * only, so that no process loads this file.
 */
import type { Locale } from './locales.ts';

/** Everything a running server is told from outside. Read once at start by `loadConfig`. */
export interface Config {
  /** TCP port to listen on (`PORT`, default 8080; 0 picks a free one). */
  readonly port: number;
  /** Address to listen on (`HOST`, default `localhost`). */
  readonly host: string;
  /**
   * The issuer identifier (`TESSERA_ISSUER`): the `iss` of every token and the base of
   * every endpoint URL. https, or http on a loopback host (OIDC Discovery §2, RFC 8414 §2).
   */
  readonly issuer: string;
  /** `TESSERA_DATABASE`: a SQLite file path (default `./data/tessera.db`) or a `postgres://` URL. */
  readonly database: string;
  /**
   * `TESSERA_DATABASE_CREATE` (default off): whether a SQLite file that does not exist may be
   * created anywhere; otherwise only at the default path (a misspelt file name in an
   * existing directory quietly became a new, empty database).
   */
  readonly createDatabase: boolean;
  /** `TESSERA_LOG_LEVEL`: fatal, error, warn, info (default), debug, trace or silent. */
  readonly logLevel: string;
  /**
   * `TESSERA_TRUST_PROXY`: whose `X-Forwarded-For` (the client address used by the per-address
   * sign-in limit and shown for device requests) to believe. `false` (default): nobody, the
   * peer's address is the client's; `true`: every peer, so the header's first entry, which
   * a client can write, is taken; a list of proxy addresses and CIDR ranges (or `loopback`,
   * `linklocal`, `uniquelocal`): the header is read from the right, up to the first address
   * that is not one of them.
   */
  readonly trustProxy: boolean | readonly string[];
  /**
   * `TESSERA_ALLOW_PRIVATE_NETWORK_URLS` (default off): whether an operator may register a
   * back-channel logout URI or a jwks_uri whose host is a private or link-local address
   * (10/8, 172.16/12, 192.168/16, 100.64/10, 169.254/16, fc00::/7, fe80::/10), where the
   * server's own requests could reach what the internet cannot (a cloud metadata service).
   */
  readonly allowPrivateNetworkUrls: boolean;
  readonly lifetimes: Lifetimes;
  readonly device: DeviceSettings;
  /**
   * `TESSERA_KEY_LEAD_TIME` seconds (default 3600): how long a new signing key is published in
   * the JWKS before it signs anything, so relying parties that cache the JWKS see it first.
   */
  readonly keyLeadTimeSeconds: number;
  /**
   * `TESSERA_WORKERS` (default 1): servers sharing the port, so one machine can use all its
   * cores: worker threads of one process on an SQLite file, whose writes go to one connection
   * in the main thread (on Linux); node:cluster processes on PostgreSQL, in the single
   * executable and elsewhere.
   */
  readonly workers: number;
  /**
   * `TESSERA_ACCESS_TOKEN_ALG`: ES256 (default) or RS256, the signature of RFC 9068 access
   * tokens (both keys are always in the JWKS). ID tokens are RS256, the OIDC default. An
   * RS256 signature costs about six times the CPU of an ES256 one, and signing is most of
   * the work of a token response: RS256 access tokens cut its rate by about a third.
   */
  readonly accessTokenAlg: SigningAlgorithm;
  /** The PostgreSQL connection pool and its time limits; an SQLite store ignores them. */
  readonly postgres: PostgresSettings;
  /**
   * `TESSERA_PASSWORD_HASH` (default `m=47104,t=1,p=1`): the argon2id cost of new password
   * hashes, as memory in KiB, passes and lanes (RFC 9106 §3.1). The default is OWASP's
   * first recommended configuration. Lowering it makes stolen hashes cheaper to guess; the test
   * suite lowers it to run fast. Existing hashes keep the cost they were made with.
   */
  readonly passwordHash: PasswordHashCost;
  readonly dpop: DpopSettings;
  readonly par: ParSettings;
  /** Sign-in limits and the password hashing queue (docs/security.md). */
  readonly signIn: SignInSettings;
  /** Limits on typed user codes (RFC 8628 §5.1; docs/security.md). */
  readonly userCode: UserCodeSettings;
  /** Device authorizations a client, and an address, may start per minute. */
  readonly deviceAuthorizationLimits: DeviceAuthorizationLimits;
  /**
   * `TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS` (default 300): passkey ceremonies (a stored
   * challenge each) one address may start per minute, per instance: sign-in, sign-up,
   * invitation and a signed-in person's new-passkey options.
   */
  readonly passkeyCeremoniesPerAddressPerMinute: number;
  /**
   * `TESSERA_GRANT_RETENTION` seconds (default 604800, 7 days): how long a grant is kept
   * after it was revoked or its last token expired (or, never used, after it was made),
   * before the purge deletes it with its codes and refresh tokens.
   */
  readonly grantRetentionSeconds: number;
  /** Where the key that encrypts the private signing keys comes from (docs/security.md). */
  readonly keyEncryption: KeyEncryptionSettings;
  readonly secondFactor: SecondFactorSettings;
  readonly upstream: UpstreamSettings;
  readonly clientAuth: ClientAuthSettings;
  readonly logout: LogoutSettings;
  /** Webhook delivery (docs/events.md). */
  readonly webhooks: WebhookSettings;
  readonly outbox: OutboxSettings;
  readonly ssf: SsfSettings;
  /** Mail through the outbox (docs/mail.md). */
  readonly mail: MailSettings;
  /** "Forgot password?": reset links sent by mail. */
  readonly recovery: RecoverySettings;
  /** People making their own accounts (docs/mail.md). */
  readonly signUp: SignUpSettings;
  readonly agents: AgentSettings;
  /** The SAML identity provider's limits (docs/saml.md). */
  readonly saml: SamlSettings;
  /**
   * `TESSERA_EVENT_RETENTION` seconds (default 7776000, 90 days): how long the audit trail
   * (sign-ins, approvals, revocations, operator changes) is kept before the purge deletes it.
   */
  readonly eventRetentionSeconds: number;
  readonly metrics: MetricsSettings;
  /**
   * `TESSERA_ADMIN_LISTEN`: where the admin API is served apart from everything else (as
   * Hydra separates its admin port); null (the default): on the public listener.
   */
  readonly adminListen: { readonly host: string; readonly port: number } | null;
  readonly registration: RegistrationSettings;
  /**
   * `TESSERA_REQUEST_TIMEOUT` seconds (default 30): how long a client may take to send a whole
   * request, so that slow senders (slowloris) cannot hold the listeners' connections open.
   */
  readonly requestTimeoutSeconds: number;
  readonly shutdown: ShutdownSettings;
  readonly site: SiteSettings;
  /**
   * `TESSERA_*` variables that are no setting and not close to one (a wrapper's or an image's
   * own), which the start ignores and warns about; a close one stops it instead (a misspelling).
   */
  readonly ignoredVariables: readonly string[];
}

/** Apps that register themselves (docs/registration.md). */
export interface RegistrationSettings {
  /** `TESSERA_REGISTRATION`: who may use `/oauth/register`. */
  readonly policy: 'off' | 'token' | 'open';
  /** `TESSERA_REGISTRATIONS_PER_ADDRESS`: per address and hour, with the open policy. */
  readonly perAddressPerHour: number;
  /** `TESSERA_REGISTRATIONS_PER_NETWORK`: per IPv4 /24 or IPv6 /64 and hour, with the open policy. */
  readonly perNetworkPerHour: number;
  /** `TESSERA_REGISTRATIONS_PER_HOUR`: across the server, with the open policy. */
  readonly perHour: number;
  /** `TESSERA_UNUSED_REGISTRATION_RETENTION`: seconds a self-registered client nobody used is kept. */
  readonly unusedRetentionSeconds: number;
  /** `TESSERA_SOFTWARE_STATEMENT_JWKS`: the trusted keys of software statements, a JWK Set; null: none. */
  readonly softwareStatementJwks: Readonly<Record<string, unknown>> | null;
  readonly metadataDocuments: {
    /** `TESSERA_CLIENT_ID_METADATA_DOCUMENTS`. */
    readonly enabled: boolean;
    readonly timeoutMs: number;
    readonly maxBytes: number;
    readonly cacheSeconds: number;
    /** `TESSERA_CLIENT_ID_METADATA_DEVELOPMENT`: http, loopback and private addresses allowed. */
    readonly development: boolean;
    /** `TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS`: new metadata-document clients per address and hour. */
    readonly newPerAddressPerHour: number;
    /** `TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_HOUR`: new metadata-document clients across the server an hour. */
    readonly newPerHour: number;
  };
}

/** Prometheus metrics, on a listener of their own so that they are never public by accident. */
export interface MetricsSettings {
  /** `TESSERA_METRICS_PORT`: the port of `/metrics` (0: one the system picks); null (the default) serves no metrics. */
  readonly port: number | null;
  /** `TESSERA_METRICS_HOST` (default `127.0.0.1`): the address the metrics listener binds. */
  readonly host: string;
}

/** How a server stops on SIGTERM (a rolling deploy). */
export interface ShutdownSettings {
  /**
   * `TESSERA_SHUTDOWN_DELAY` seconds (default 5): after SIGTERM, `/readyz` answers 503 while
   * requests are still served this long, so the load balancer stops sending new ones first.
   */
  readonly delaySeconds: number;
  /**
   * `TESSERA_SHUTDOWN_TIMEOUT` seconds (default 30): then the server stops accepting and
   * waits at most this long for requests in flight before it closes their connections.
   */
  readonly timeoutSeconds: number;
}

/** The operator's name on every page. */
export interface SiteSettings {
  /** `TESSERA_SITE_NAME` (default `Tessera`): in every page's title and heading. */
  readonly name: string;
  /** `TESSERA_SITE_LOGO_URL`: an https image shown above the name; none by default. */
  readonly logoUrl: string | null;
  /**
   * `TESSERA_SITE_ACCENT_COLOR`: `#rrggbb` for buttons and links. Refused when white text on
   * it, or it on white, falls short of WCAG 2.2's 4.5:1 contrast for text.
   */
  readonly accentColor: string | null;
  /**
   * `TESSERA_LOCALES` (default: every shipped language): the languages pages are offered in,
   * comma-separated tags from `LOCALES`; the language menu lists these, and nothing else is shown.
   */
  readonly locales: readonly Locale[];
  /**
   * `TESSERA_DEFAULT_LOCALE` (default `en`, or the first of `TESSERA_LOCALES` without it): the
   * language of a page when neither the app, the person nor their browser asks for an offered one.
   */
  readonly defaultLocale: Locale;
  /**
   * `TESSERA_API_TRANSLATIONS`: registered APIs' names and scope descriptions in other
   * languages, read from a JSON file at start; absent, every page shows them as registered.
   */
  readonly apiTranslations?: ApiTranslations;
}

/** An API's name (by its identifier) and its scopes' descriptions (by scope name) in one language. */
export interface ApiTranslation {
  readonly apis: Readonly<Record<string, string>>;
  readonly scopes: Readonly<Record<string, string>>;
}

export type ApiTranslations = Readonly<Partial<Record<Locale, ApiTranslation>>>;

/** DPoP (RFC 9449) at the token endpoint and the resource endpoints. */
export interface DpopSettings {
  /**
   * `TESSERA_DPOP_PROOF_WINDOW` seconds (default 60): how far a proof's `iat` may be from the
   * server's clock either way (RFC 9449 §4.3 point 11: "within an acceptable window"), and so
   * how long its `jti` is remembered to refuse a replay (§11.1).
   */
  readonly proofWindow: number;
  /**
   * `TESSERA_DPOP_NONCES` (default false): every proof must carry a nonce the server issued
   * (RFC 9449 §8), which bounds a proof's use to the nonce's lifetime even with a client clock
   * that is wrong; a proof without the current one is answered `use_dpop_nonce` with it.
   */
  readonly nonces: boolean;
  /**
   * `TESSERA_DPOP_NONCE_LIFETIME` seconds (default 300): a nonce is good for this long and
   * the one before it for as long again, so every instance computes the same one.
   */
  readonly nonceLifetime: number;
}

/** Pushed authorization requests (RFC 9126). */
export interface ParSettings {
  /**
   * `TESSERA_PAR_TTL` seconds (default 60): how long a `request_uri` may wait for the browser
   * to bring it to the authorization endpoint (RFC 9126 §2.2: short-lived, "5 to 600 seconds").
   */
  readonly requestLifetime: number;
  /**
   * `TESSERA_PAR_INTERACTION_TTL` seconds (default 600): once a browser has brought a
   * `request_uri` to the authorization endpoint, how long that browser has to sign in and
   * decide. The request_uri is then spent for every other browser.
   */
  readonly interactionLifetime: number;
  /**
   * `TESSERA_REQUIRE_PAR` (default false): every client must push its authorization requests
   * (discovery `require_pushed_authorization_requests`); per client: `client add --require-par`.
   */
  readonly required: boolean;
}

/**
 * Sign-in limits. Failures are counted per username and address together (a guesser at one
 * address stops; the owner elsewhere does not) and per address; per username alone they
 * only slow: each failure past `freeFailures` doubles a wait before the next check, up to
 * `maxDelayMs`, and the owner's right password still signs in after it.
 */
export interface SignInSettings {
  /** `TESSERA_SIGN_IN_WINDOW` seconds (default 900): the window failures are counted in. */
  readonly windowSeconds: number;
  /** `TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS` (default 10): wrong passwords for one username from one address. */
  readonly perUserAddress: number;
  /** `TESSERA_SIGN_IN_FAILURES_PER_ADDRESS` (default 100): wrong passwords from one address, any usernames. */
  readonly perAddress: number;
  /** `TESSERA_SIGN_IN_FREE_FAILURES` (default 5): failures for a username before its checks are delayed. */
  readonly freeFailures: number;
  /** `TESSERA_SIGN_IN_DELAY_MS` (default 1000): the first delay; each further failure doubles it. */
  readonly delayMs: number;
  /** `TESSERA_SIGN_IN_MAX_DELAY_MS` (default 30000): the longest delay. */
  readonly maxDelayMs: number;
  /**
   * `TESSERA_PASSWORD_HASH_THREADS` (default: half the cores, at least 1): threads that
   * compute argon2id, apart from libuv's pool, which signs tokens.
   */
  readonly hashThreads: number;
  /**
   * `TESSERA_PASSWORD_HASH_NICE` (default 10): the hashing threads' nice value above the
   * process's, so that on busy cores token signing and requests come first (Linux only).
   */
  readonly hashNice: number;
  /** `TESSERA_SIGN_IN_QUEUE` (default 32): sign-ins that may wait for a hashing thread. */
  readonly queue: number;
  /** `TESSERA_SIGN_IN_QUEUE_PER_ADDRESS` (default 4): places in the queue one address may hold. */
  readonly queuePerAddress: number;
  /**
   * `TESSERA_SIGN_IN_GOOD_RECORD` seconds (default 2592000, 30 days; 0 turns it off): how long
   * a right password for a username vouches for the browser and the address it came from.
   * Their later attempts for that username skip the per-username wait and go first on a full
   * password queue (docs/security.md).
   */
  readonly goodRecordSeconds: number;
}

/**
 * RFC 8628 §5.1: wrong user codes counted per browser (strictest), per address and per
 * network (/24, /64), each a refusal for that one; and across the server, where going over
 * only slows every lookup and raises an alert, so no one can lock everyone out.
 */
export interface UserCodeSettings {
  /** `TESSERA_USER_CODE_WINDOW` seconds (default 600). */
  readonly windowSeconds: number;
  /** `TESSERA_USER_CODE_FAILURES_PER_BROWSER` (default 5). */
  readonly perBrowser: number;
  /** `TESSERA_USER_CODE_FAILURES_PER_ADDRESS` (default 20). */
  readonly perAddress: number;
  /** `TESSERA_USER_CODE_FAILURES_PER_NETWORK` (default 60). */
  readonly perNetwork: number;
  /** `TESSERA_USER_CODE_FAILURES_PER_LARGE_NETWORK` (default 240): per IPv4 /16 or IPv6 /48. */
  readonly perLargeNetwork: number;
  /**
   * `TESSERA_USER_CODE_FAILURES_PER_MINUTE` (default 600): wrong codes per minute, whole
   * server; once spent, lookups from browsers that are not signed in are refused, and an
   * alert is logged.
   */
  readonly globalPerMinute: number;
  /** `TESSERA_USER_CODE_SLOW_MS` (default 2000): the wait a signed-in browser's lookup gets while the budget is spent. */
  readonly globalDelayMs: number;
}

/** RFC 8628 §3.1 device authorization requests, per minute and per server instance. */
export interface DeviceAuthorizationLimits {
  /** `TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT` (default 600). */
  readonly perClientPerMinute: number;
  /** `TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS` (default 30). */
  readonly perAddressPerMinute: number;
}

export interface KeyEncryptionSettings {
  /**
   * `TESSERA_KEY_ENCRYPTION_KEY`: 32-byte keys, base64 or base64url, comma-separated; the
   * first encrypts, any decrypts (rotation). Empty: the key file is used.
   */
  readonly keys: readonly Buffer[];
  /**
   * `TESSERA_KEY_FILE`: the file holding the key when no key is given, created (mode 0600)
   * on first start. Default: beside an SQLite database (`<database>.key`), or
   * `./data/tessera.key` with PostgreSQL.
   */
  readonly file: string | null;
}

/** Passkeys (WebAuthn) and one-time codes (RFC 6238). */
export interface SecondFactorSettings {
  /**
   * `TESSERA_REQUIRE_SECOND_FACTOR` (default off): when on, only a session that signed in
   * with a passkey, or with a password and a one-time code, may approve an application or
   * a device. A person with neither can still sign in with their password, to set one up on
   * their account page.
   */
  readonly required: boolean;
  /**
   * `TESSERA_WEBAUTHN_TIMEOUT` seconds (default 300): how long a passkey ceremony's
   * challenge can be answered, and how long the browser waits for the person.
   */
  readonly ceremonyTimeout: number;
  /**
   * `TESSERA_SECOND_FACTOR_TIMEOUT` seconds (default 300): how long after a correct password
   * the one-time code may be entered before the password is asked again.
   */
  readonly pendingSignInTimeout: number;
  /**
   * `TESSERA_CONSOLE_REAUTHENTICATE` seconds (default 900): how old an operator's sign-in may
   * be for a change in the console; an older one is asked again, as `max_age` asks.
   */
  readonly consoleReauthenticate: number;
  /**
   * `TESSERA_ACCOUNT_REAUTHENTICATE` seconds (default 900): how old a person's sign-in may be
   * for a change of their e-mail address, passkeys or one-time codes on the account page; an
   * older one is asked again.
   */
  readonly accountReauthenticate: number;
}

/** Upstream identity providers and directories (docs/identity-providers.md). */
export interface UpstreamSettings {
  /** `TESSERA_UPSTREAM_TIMEOUT` seconds (default 10): the longest one request upstream may take. */
  readonly timeout: number;
  /** `TESSERA_UPSTREAM_SIGN_IN_TIMEOUT` seconds (default 600): how long a sign-in may be away upstream. */
  readonly signInTimeout: number;
}

/**
 * How `private_key_jwt` clients (RFC 7523 §2.2, OIDC Core §9) are checked: their keys are
 * fetched from the `jwks_uri` they registered, and their assertions are short-lived.
 */
export interface ClientAuthSettings {
  /**
   * `TESSERA_CLIENT_JWKS_TIMEOUT_MS` (default 3000): the longest a request waits for a
   * client's JWKS to be fetched; past it the request is answered `invalid_client`.
   */
  readonly jwksTimeoutMs: number;
  /** `TESSERA_CLIENT_JWKS_CACHE_TTL` seconds (default 300): how long a fetched JWKS is used before it is fetched again. */
  readonly jwksCacheSeconds: number;
  /**
   * `TESSERA_CLIENT_JWKS_REFETCH_INTERVAL` seconds (default 10): an assertion whose `kid` is
   * not in the cached JWKS makes Tessera fetch it again at once (the client rotated its
   * keys), but no sooner than this after the previous fetch, so that made-up `kid`s cannot
   * turn Tessera into a stream of requests to the client's server.
   */
  readonly jwksRefetchSeconds: number;
  /**
   * `TESSERA_CLIENT_ASSERTION_MAX_LIFETIME` seconds (default 3600, at most 3600): an
   * assertion whose `exp` is further ahead than this is refused; its `jti` is remembered
   * until `exp`, so this also bounds how long each one is kept. An hour because common
   * client libraries (authlib) sign hour-long assertions; the `jti` makes each usable once.
   */
  readonly assertionMaxLifetimeSeconds: number;
  /**
   * `TESSERA_CLIENT_ASSERTION_AUDIENCE` (default `issuer`): the `aud` a client assertion may
   * carry. `issuer`: the issuer identifier as its sole value (draft-ietf-oauth-rfc7523bis,
   * replacing RFC 7523 §3 item 3 and RFC 9126 §2's audiences), which closes audience
   * injection: an assertion a client was led to sign for another server that named this
   * server's token endpoint, or this server among others, is refused. `legacy`: the issuer,
   * the token endpoint or the endpoint called, alone or among other values, as before; for
   * clients written before RFC 7523bis that name the token endpoint.
   */
  readonly assertionAudience: 'issuer' | 'legacy';
}

/**
 * Back-Channel Logout 1.0 §2.8 delivery: how long each POST of a logout token may take, and
 * how often it is tried. Delivery runs after the browser is signed out and never delays it.
 */
/**
 * Webhook delivery: how long one try may take, and how long and how often a
 * delivery that fails is tried again before it becomes a dead letter.
 */
export interface MailSettings {
  /** `TESSERA_SMTP_URL`; null: no mail server, so no mail is sent. */
  readonly smtpUrl: string | null;
  /** `TESSERA_SMTP_STARTTLS` (default `require`): with an smtp:// URL, whether STARTTLS is required, tried, or never used. */
  readonly startTls: 'require' | 'try' | 'off';
  /** `TESSERA_MAIL_FROM`: the sender (default: the site's name, at no-reply@ the issuer's host). */
  readonly from: { readonly name: string; readonly address: string };
  /** `TESSERA_SMTP_TIMEOUT` seconds (default 10): the longest one try may take. */
  readonly timeoutSeconds: number;
  /** `TESSERA_MAIL_RETRY_WINDOW` seconds (default a day): how long after its event a message is tried. */
  readonly retryWindowSeconds: number;
  /** `TESSERA_MAIL_RETRY_DELAY_MS` (default 5000): the wait before the second try, doubled before each later one. */
  readonly retryDelayMs: number;
}

export interface SignUpSettings {
  /** `TESSERA_SIGN_UP` (default `off`). */
  readonly policy: 'off' | 'open' | 'invite';
  /** `TESSERA_SIGN_UP_VERIFY` (default `first`): whether the account waits for its e-mail link. */
  readonly verify: 'first' | 'later';
  /** `TESSERA_SIGN_UP_DOMAINS`: the e-mail domains taken, lower-cased; null: any. */
  readonly domains: readonly string[] | null;
  /** `TESSERA_SIGN_UP_LINK_TTL` seconds (default a day). */
  readonly linkTtlSeconds: number;
  /** `TESSERA_SIGN_UP_PER_ADDRESS` (default 10): sign-ups one network address may make an hour. */
  readonly perAddressPerHour: number;
  /** `TESSERA_SIGN_UP_PER_EMAIL` (default 3): sign-ups with one e-mail address an hour. */
  readonly perEmailPerHour: number;
}

export interface RecoverySettings {
  /** `TESSERA_RECOVERY_LINK_TTL` seconds (default 3600): how long a mailed reset link works. */
  readonly linkTtlSeconds: number;
  /** `TESSERA_RECOVERY_PER_ADDRESS` (default 10): links one network address may ask for an hour. */
  readonly perAddressPerHour: number;
  /** `TESSERA_RECOVERY_PER_EMAIL` (default 3): links asked for one e-mail address an hour. */
  readonly perEmailPerHour: number;
}

/** The Shared Signals transmitter (docs/events.md). */
export interface SsfSettings {
  /** `TESSERA_SSF_DEFAULT_SUBJECTS` (default `ALL`): the subjects of a stream made from now on (SSF 1.0 §7.1 `default_subjects`). */
  readonly defaultSubjects: 'ALL' | 'NONE';
}

/** How the outbox's workers share the work (flows/outbox/worker.ts). */
export interface OutboxSettings {
  /** `TESSERA_OUTBOX_BATCH` (default 32): a queue's deliveries claimed by one statement. */
  readonly batch: number;
  /** `TESSERA_OUTBOX_TRIES_PER_TURN` (default 4): deliveries begun in one turn of the event loop, every kind together. */
  readonly triesPerTurn: number;
  /** `TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND` (default 20): deliveries begun a second, at least, while the event loop is busy, every kind together. */
  readonly busyTriesPerSecond: number;
}

export interface WebhookSettings {
  /** `TESSERA_WEBHOOK_TIMEOUT` seconds (default 10): the longest one try may take. */
  readonly timeoutSeconds: number;
  /** `TESSERA_WEBHOOK_RETRY_WINDOW` seconds (default 259200, 3 days): how long after its event a delivery is tried. */
  readonly retryWindowSeconds: number;
  /** `TESSERA_WEBHOOK_RETRY_DELAY_MS` (default 5000): the wait before the second try, doubled before each later one (at most an hour). */
  readonly retryDelayMs: number;
}

/** Agents acting for people (docs/agents.md): token exchange chains and ID-JAGs. */
export interface SamlSettings {
  /** `TESSERA_SAML_REQUEST_LIFETIME` seconds (default 300): how far from now a request's IssueInstant may be; an assertion's lifetime. */
  readonly requestLifetime: number;
  /** `TESSERA_SAML_MAX_REQUEST_SIZE` characters (default 32768): the largest request read, encoded and inflated. */
  readonly maxRequestChars: number;
  /** `TESSERA_SAML_SIGN_IN_TIMEOUT` seconds (default 1800): how long a sign-in for an SP may take. */
  readonly signInSeconds: number;
}

export interface AgentSettings {
  /** `TESSERA_TOKEN_EXCHANGE_MAX_ACTORS` (default 4): how many actors a delegation chain may name. */
  readonly maxActors: number;
  /** `TESSERA_ID_JAG_LIFETIME` seconds (default 300): an ID-JAG's lifetime here, and the most one redeemed here may have. */
  readonly idJagLifetime: number;
}

export interface LogoutSettings {
  /** `TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT` seconds (default 5): the longest one POST may take. */
  readonly timeoutSeconds: number;
  /**
   * `TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS` (default 3): tries per client, counting the first,
   * when the client's endpoint cannot be reached or answers 5xx. Other answers are final.
   */
  readonly attempts: number;
  /**
   * `TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS` (default 2000): the wait before the second
   * try; it doubles before each later one.
   */
  readonly retryDelayMs: number;
}

/** argon2id cost parameters (RFC 9106 §3.1). */
export interface PasswordHashCost {
  /** m: memory in KiB, at least 8 per lane. */
  readonly memory: number;
  /** t: passes over the memory. */
  readonly passes: number;
  /** p: lanes. */
  readonly parallelism: number;
}

/** The JWS algorithms Tessera signs with (RFC 7518 §3.1): RS256 for ID tokens, either for access tokens. */
export type SigningAlgorithm = 'RS256' | 'ES256';

/** Lifetimes in seconds. */
export interface Lifetimes {
  /** RFC 6749 §4.1.2 says at most 10 minutes; RFC 9700 §4.2.1 short: 60 s. */
  readonly authorizationCode: number;
  /** `TESSERA_ACCESS_TOKEN_TTL` (default 3600). */
  readonly accessToken: number;
  /** `TESSERA_ID_TOKEN_TTL` (default 3600). */
  readonly idToken: number;
  /** `TESSERA_SESSION_TTL` (default 86400): how long a browser sign-in lasts. */
  readonly session: number;
  /**
   * `TESSERA_REFRESH_TOKEN_TTL` (default 7776000, 90 days): how long after the user's approval
   * the refresh tokens of that grant can be used, however often they are rotated
   * (RFC 9700 §4.14.2 recommends refresh tokens expire).
   */
  readonly refreshToken: number;
  /**
   * `TESSERA_REFRESH_TOKEN_IDLE_TTL` (default 2592000, 30 days): a refresh token not used for
   * this long expires; each refresh starts the idle time again. At most the lifetime.
   */
  readonly refreshTokenIdle: number;
  /**
   * `TESSERA_PUBLIC_ACCESS_TOKEN_TTL` and `TESSERA_PUBLIC_REFRESH_TOKEN_TTL` (default: the
   * same as for confidential clients): shorter lifetimes for public clients, whose tokens sit
   * in browsers and on devices anyone can unpack (RFC 9700 §2.2.2, §4.14.2).
   */
  readonly publicClient: { readonly accessToken: number; readonly refreshToken: number };
  /**
   * `TESSERA_DEVICE_ACCESS_TOKEN_TTL` and `TESSERA_DEVICE_REFRESH_TOKEN_TTL` (default: the
   * same as above): shorter lifetimes for grants approved through the device flow, the flow
   * a remote phishing attack abuses (draft-ietf-oauth-cross-device-security). A grant gets
   * the shorter of these and its client's.
   */
  readonly deviceGrant: { readonly accessToken: number; readonly refreshToken: number };
}

/** RFC 8628 settings, in seconds. */
export interface DeviceSettings {
  /** `TESSERA_DEVICE_CODE_LIFETIME`: device code and user code lifetime, by default the seed's ten minutes. */
  readonly codeLifetime: number;
  /** `TESSERA_DEVICE_POLL_INTERVAL`: the `interval` returned; RFC 8628 §3.2's default 5 by default. */
  readonly interval: number;
}

/**
 * How an instance uses PostgreSQL. The time limits bound how long a request waits for the
 * database: when it is unreachable or stops answering, the request is answered 503
 * `temporarily_unavailable` after at most the connect timeout plus the statement timeout
 * for each statement, instead of waiting for it.
 */
export interface PostgresSettings {
  /**
   * `TESSERA_DATABASE_POOL_SIZE` (default 10, pg's own default): the most connections one
   * instance (one worker) opens. Instances × workers × this must stay below the server's
   * `max_connections` (100 by default), with room for administration.
   */
  readonly poolSize: number;
  /**
   * `TESSERA_DATABASE_STATEMENT_TIMEOUT` seconds (default 5): the longest one statement may
   * run. PostgreSQL cancels it then (`statement_timeout`); the driver gives up on an answer
   * that does not come (a server or network that went silent) shortly after. Every
   * statement Tessera runs for a request is an indexed read or write of a few rows, which
   * takes milliseconds; migrations at start are not limited.
   */
  readonly statementTimeoutSeconds: number;
  /**
   * `TESSERA_DATABASE_CONNECT_TIMEOUT` seconds (default 5): the longest a request waits for
   * a connection, whether a new one to open or a busy pooled one to be free.
   */
  readonly connectTimeoutSeconds: number;
}

/** The environment the settings are read from. */
export type Env = Readonly<Record<string, string | undefined>>;

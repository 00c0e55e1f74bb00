import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import path from 'node:path';
import { LOCALES, shippedLocale, type Locale } from './locales.ts';
import { closest, setting, SETTINGS, unknownVariables, type BooleanSettingName, type IntegerSetting, type IntegerSettingName, type SettingName } from './settings.ts';

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
   * created anywhere; otherwise only at the default path (issue 31: a misspelt file name in an
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
   * `TESSERA_WORKERS` (default 1): server processes sharing the port through node:cluster, so
   * one machine can use all its cores. They share the store (SQLite in WAL mode, or PostgreSQL).
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
  /** Webhook delivery (issue 45, docs/events.md). */
  readonly webhooks: WebhookSettings;
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
  readonly shutdown: ShutdownSettings;
  readonly site: SiteSettings;
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

/** As long as a registered API's name and scope description may be (src/flows/manage/resources.ts). */
const MAX_TRANSLATED = { apis: 100, scopes: 200 } as const;

/**
 * Reads TESSERA_API_TRANSLATIONS (issue 29: an API's scope descriptions in each language):
 * `{"de": {"apis": {"https://api.example.com": "Fotos"}, "scopes": {"photos:read": "Ihre Fotos ansehen"}}}`.
 * Every mistake stops the start naming the setting, the file and where in it.
 */
function apiTranslations(env: Env): ApiTranslations | null {
  const file = env['TESSERA_API_TRANSLATIONS']?.trim();
  if (!file) return null;
  const refuse = (why: string): never => {
    throw new ConfigError('TESSERA_API_TRANSLATIONS', `${file}: ${why}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    return refuse(error instanceof SyntaxError ? `not valid JSON (${error.message})` : `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(parsed)) return refuse('must be a JSON object of languages, such as {"de": {"scopes": {"photos:read": "Ihre Fotos ansehen"}}}');
  const translations: Partial<Record<Locale, ApiTranslation>> = {};
  for (const [tag, entry] of Object.entries(parsed)) {
    const locale = shippedLocale(tag);
    if (locale === null || locale !== tag) refuse(`${JSON.stringify(tag)} is not a language Tessera has pages in (${LOCALES.join(', ')})`);
    if (!isObject(entry)) return refuse(`${tag}: must be an object with "apis" and "scopes"`);
    const unknownKey = Object.keys(entry).find((key) => key !== 'apis' && key !== 'scopes');
    if (unknownKey !== undefined) refuse(`${tag}: ${JSON.stringify(unknownKey)} is neither "apis" (names by identifier) nor "scopes" (descriptions by scope name)`);
    const part = (kind: 'apis' | 'scopes'): Record<string, string> => {
      const texts = entry[kind] ?? {};
      if (!isObject(texts)) return refuse(`${tag}.${kind}: must be an object`);
      for (const [key, text] of Object.entries(texts)) {
        if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_TRANSLATED[kind] || /[\u0000-\u001f\u007f]/.test(text)) {
          refuse(`${tag}.${kind}.${key}: must be text of 1 to ${MAX_TRANSLATED[kind]} characters`);
        }
      }
      return texts as Record<string, string>;
    };
    translations[locale as Locale] = { apis: part('apis'), scopes: part('scopes') };
  }
  return translations;
}

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
}


/**
 * Back-Channel Logout 1.0 §2.8 delivery: how long each POST of a logout token may take, and
 * how often it is tried. Delivery runs after the browser is signed out and never delays it.
 */
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

/**
 * Webhook delivery (issue 45): how long one try may take, and how long and how often a
 * delivery that fails is tried again before it becomes a dead letter.
 */
export interface WebhookSettings {
  /** `TESSERA_WEBHOOK_TIMEOUT` seconds (default 10): the longest one try may take. */
  readonly timeoutSeconds: number;
  /** `TESSERA_WEBHOOK_RETRY_WINDOW` seconds (default 259200, 3 days): how long after its event a delivery is tried. */
  readonly retryWindowSeconds: number;
  /** `TESSERA_WEBHOOK_RETRY_DELAY_MS` (default 5000): the wait before the second try, doubled before each later one (at most an hour). */
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

/**
 * OWASP's first argon2id configuration: m=46 MiB, t=1, p=1. About 90 ms of one core on the
 * development machine, where RFC 9106 §4's t=3, m=64 MiB, p=4 took about 270 ms (and 1.5 s
 * with the machine busy); p above 1 buys nothing here, where one check runs on one thread
 * (docs/security.md, docs/benchmarks.md).
 */
export const DEFAULT_PASSWORD_HASH: PasswordHashCost = { memory: 47104, passes: 1, parallelism: 1 };

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
  /** Device code and user code lifetime: the seed's ten minutes. */
  readonly codeLifetime: number;
  /** The `interval` returned; RFC 8628 §3.2 default 5. */
  readonly interval: number;
}

export class ConfigError extends Error {
  constructor(setting: string, why: string) {
    super(`${setting}: ${why}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * A whole-number setting, its default and range from the table (`./settings.ts`); `bounds`
 * narrows them where they follow another setting (an idle lifetime at most the lifetime).
 */
function integer(env: Env, name: IntegerSettingName, bounds: { fallback?: number; min?: number; max?: number } = {}): number {
  const entry = setting(name) as IntegerSetting;
  const fallback = bounds.fallback ?? entry.default;
  const min = bounds.min ?? entry.min;
  const max = bounds.max ?? entry.max;
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: BooleanSettingName | 'TESSERA_TRUST_PROXY'): boolean {
  const entry = setting(name);
  const fallback = entry.type === 'boolean' ? entry.default : false;
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `must be true or false, got ${JSON.stringify(env[name])}`);
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** An IPv4 or IPv6 address, a CIDR range, or one of the named ranges of proxy-addr. */
function isProxyRange(entry: string): boolean {
  if (PROXY_RANGE_NAMES.includes(entry.toLowerCase())) return true;
  const [address = '', prefix, extra] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 6 ? 128 : 32));
}

function trustProxy(env: Env): boolean | readonly string[] {
  const raw = env['TESSERA_TRUST_PROXY']?.trim() ?? '';
  if (raw === '' || /^(1|0|true|false|yes|no|on|off)$/i.test(raw)) return boolean(env, 'TESSERA_TRUST_PROXY');
  const entries = raw.split(',').map((entry) => entry.trim());
  const wrong = entries.find((entry) => !isProxyRange(entry));
  if (wrong !== undefined) {
    throw new ConfigError(
      'TESSERA_TRUST_PROXY',
      `must be true, false, or a comma-separated list of proxy addresses, CIDR ranges, loopback, linklocal or uniquelocal; ${JSON.stringify(wrong)} is none of these`,
    );
  }
  return entries.map((entry) => (PROXY_RANGE_NAMES.includes(entry.toLowerCase()) ? entry.toLowerCase() : entry));
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** OIDC Discovery §2 / RFC 8414 §2: https, no query or fragment; http only for a loopback host. */
export function parseIssuer(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('TESSERA_ISSUER', `must be an absolute URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new ConfigError('TESSERA_ISSUER', `must use https (http is allowed only for localhost), got ${JSON.stringify(raw)}`);
  }
  if (url.search || url.hash || raw.includes('?') || raw.includes('#')) {
    throw new ConfigError('TESSERA_ISSUER', `must not have a query or fragment, got ${JSON.stringify(raw)}`);
  }
  if (url.username || url.password) {
    throw new ConfigError('TESSERA_ISSUER', 'must not contain a user name or password');
  }
  // Every page, form and redirect is at the root of the host: an issuer with a path would
  // publish endpoints under it that answer 404 (issue 31), so it is refused.
  if (url.pathname.replace(/\/+$/, '') !== '') {
    throw new ConfigError('TESSERA_ISSUER', `must have no path: Tessera serves its endpoints at the root of its host; use ${JSON.stringify(url.origin)} (a host of its own, such as https://auth.example.com), got ${JSON.stringify(raw)}`);
  }
  return url.href.replace(/\/+$/, '');
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function database(env: Env): string {
  const raw = env['TESSERA_DATABASE']?.trim();
  if (!raw) return path.resolve('data', 'tessera.db');
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('TESSERA_DATABASE', 'is not a valid postgres:// URL');
    }
    return raw;
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    throw new ConfigError('TESSERA_DATABASE', 'must be a SQLite file path or a postgres:// URL');
  }
  return raw;
}

function accessTokenAlg(env: Env): SigningAlgorithm {
  const raw = env['TESSERA_ACCESS_TOKEN_ALG']?.trim().toUpperCase();
  if (raw === undefined || raw === '') return 'ES256';
  if (raw === 'ES256' || raw === 'RS256') return raw;
  throw new ConfigError('TESSERA_ACCESS_TOKEN_ALG', `must be ES256 or RS256, got ${JSON.stringify(env['TESSERA_ACCESS_TOKEN_ALG'])}`);
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

const defaultOf = (name: IntegerSettingName) => (setting(name) as IntegerSetting).default;

export const POSTGRES_DEFAULTS: PostgresSettings = {
  poolSize: defaultOf('TESSERA_DATABASE_POOL_SIZE'),
  statementTimeoutSeconds: defaultOf('TESSERA_DATABASE_STATEMENT_TIMEOUT'),
  connectTimeoutSeconds: defaultOf('TESSERA_DATABASE_CONNECT_TIMEOUT'),
};

function postgresSettings(env: Env): PostgresSettings {
  return {
    poolSize: integer(env, 'TESSERA_DATABASE_POOL_SIZE'),
    statementTimeoutSeconds: integer(env, 'TESSERA_DATABASE_STATEMENT_TIMEOUT'),
    connectTimeoutSeconds: integer(env, 'TESSERA_DATABASE_CONNECT_TIMEOUT'),
  };
}

function passwordHash(env: Env): PasswordHashCost {
  const raw = env['TESSERA_PASSWORD_HASH']?.trim();
  if (raw === undefined || raw === '') return DEFAULT_PASSWORD_HASH;
  const match = /^m=(\d{1,8}),t=(\d{1,3}),p=(\d{1,3})$/.exec(raw.replace(/\s+/g, ''));
  const [memory, passes, parallelism] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  // RFC 9106 §3.1: p from 1 to 2^24-1, m at least 8p KiB, t at least 1; bounded above here
  // so that a typo cannot make every sign-in take minutes (4 GiB, 100 passes, 64 lanes).
  if (!match || parallelism < 1 || parallelism > 64 || passes < 1 || passes > 100 || memory < 8 * parallelism || memory > 4 * 1024 * 1024) {
    throw new ConfigError(
      'TESSERA_PASSWORD_HASH',
      `must be m=KIB,t=PASSES,p=LANES with p 1-64, t 1-100 and m from 8*p to 4194304 (default m=47104,t=1,p=1), got ${JSON.stringify(env['TESSERA_PASSWORD_HASH'])}`,
    );
  }
  return { memory, passes, parallelism };
}

function signIn(env: Env): SignInSettings {
  const delayMs = integer(env, 'TESSERA_SIGN_IN_DELAY_MS');
  return {
    windowSeconds: integer(env, 'TESSERA_SIGN_IN_WINDOW'),
    perUserAddress: integer(env, 'TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS'),
    perAddress: integer(env, 'TESSERA_SIGN_IN_FAILURES_PER_ADDRESS'),
    freeFailures: integer(env, 'TESSERA_SIGN_IN_FREE_FAILURES'),
    delayMs,
    maxDelayMs: integer(env, 'TESSERA_SIGN_IN_MAX_DELAY_MS', { fallback: Math.max(30_000, delayMs), min: delayMs }),
    hashThreads: integer(env, 'TESSERA_PASSWORD_HASH_THREADS', { fallback: Math.max(1, Math.floor(availableParallelism() / 2)) }),
    queue: integer(env, 'TESSERA_SIGN_IN_QUEUE'),
    queuePerAddress: integer(env, 'TESSERA_SIGN_IN_QUEUE_PER_ADDRESS'),
    goodRecordSeconds: integer(env, 'TESSERA_SIGN_IN_GOOD_RECORD'),
  };
}

function userCode(env: Env): UserCodeSettings {
  const perBrowser = integer(env, 'TESSERA_USER_CODE_FAILURES_PER_BROWSER');
  const perAddress = integer(env, 'TESSERA_USER_CODE_FAILURES_PER_ADDRESS', { fallback: Math.max(20, perBrowser), min: perBrowser });
  const perNetwork = integer(env, 'TESSERA_USER_CODE_FAILURES_PER_NETWORK', { fallback: Math.max(60, perAddress), min: perAddress });
  return {
    windowSeconds: integer(env, 'TESSERA_USER_CODE_WINDOW'),
    perBrowser,
    perAddress,
    perNetwork,
    perLargeNetwork: integer(env, 'TESSERA_USER_CODE_FAILURES_PER_LARGE_NETWORK', { fallback: Math.max(240, perNetwork), min: perNetwork }),
    globalPerMinute: integer(env, 'TESSERA_USER_CODE_FAILURES_PER_MINUTE'),
    globalDelayMs: integer(env, 'TESSERA_USER_CODE_SLOW_MS'),
  };
}

/** A 32-byte key, as base64 or base64url. */
export function parseKeyEncryptionKey(raw: string, setting: string): Buffer {
  const trimmed = raw.trim();
  const key = /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed) ? Buffer.from(trimmed.replace(/=$/, ''), 'base64url') : Buffer.alloc(0);
  if (key.length !== 32) throw new ConfigError(setting, 'each key must be 32 bytes in base64 or base64url (43 characters; `openssl rand -base64 32` makes one)');
  return key;
}

function keyEncryption(env: Env, database: string): KeyEncryptionSettings {
  const raw = env['TESSERA_KEY_ENCRYPTION_KEY']?.trim() ?? '';
  const keys = raw === '' ? [] : raw.split(',').map((entry) => parseKeyEncryptionKey(entry, 'TESSERA_KEY_ENCRYPTION_KEY'));
  const file = env['TESSERA_KEY_FILE']?.trim();
  if (file) return { keys, file };
  if (/^postgres(ql)?:\/\//.test(database)) return { keys, file: path.resolve('data', 'tessera.key') };
  const sqlitePath = database.replace(/^(sqlite|file):/i, '');
  return { keys, file: sqlitePath === ':memory:' ? null : `${sqlitePath}.key` };
}

/** WCAG 2.2 relative luminance of an sRGB `#rrggbb` colour. */
export function relativeLuminance(hex: string): number {
  const channel = (offset: number) => {
    const value = parseInt(hex.slice(offset, offset + 2), 16) / 255;
    return value <= 0.04045 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** WCAG 2.2 contrast ratio of `hex` against white. */
export function contrastWithWhite(hex: string): number {
  return 1.05 / (relativeLuminance(hex) + 0.05);
}

function site(env: Env): SiteSettings {
  const name = env['TESSERA_SITE_NAME']?.trim() || 'Tessera';
  if (name.length > 64 || /[\u0000-\u001f\u007f]/.test(name)) throw new ConfigError('TESSERA_SITE_NAME', 'must be at most 64 characters with no control characters');
  const rawLogo = env['TESSERA_SITE_LOGO_URL']?.trim() || null;
  if (rawLogo !== null) {
    let url: URL | null = null;
    try {
      url = new URL(rawLogo);
    } catch {
      // reported below
    }
    if (url === null || url.protocol !== 'https:') throw new ConfigError('TESSERA_SITE_LOGO_URL', `must be an https URL, got ${JSON.stringify(rawLogo)}`);
  }
  const accent = env['TESSERA_SITE_ACCENT_COLOR']?.trim().toLowerCase() || null;
  if (accent !== null) {
    if (!/^#[0-9a-f]{6}$/.test(accent)) throw new ConfigError('TESSERA_SITE_ACCENT_COLOR', `must be a colour as #rrggbb, got ${JSON.stringify(env['TESSERA_SITE_ACCENT_COLOR'])}`);
    const ratio = contrastWithWhite(accent);
    // WCAG 2.2 SC 1.4.3: 4.5:1 for text. Buttons carry white text on the colour; links are the colour on white.
    if (ratio < 4.5) {
      throw new ConfigError('TESSERA_SITE_ACCENT_COLOR', `${accent} has a contrast of ${ratio.toFixed(2)}:1 with white; text needs at least 4.5:1 (WCAG 2.2 1.4.3): choose a darker colour`);
    }
  }
  const translations = apiTranslations(env);
  return { name, logoUrl: rawLogo, accentColor: accent, ...locales(env), ...(translations === null ? {} : { apiTranslations: translations }) };
}

function locales(env: Env): { locales: readonly Locale[]; defaultLocale: Locale } {
  const known = `one of ${LOCALES.join(', ')}`;
  const raw = env['TESSERA_LOCALES']?.trim();
  const offered: Locale[] = [];
  for (const entry of raw ? raw.split(',').map((tag) => tag.trim()).filter((tag) => tag !== '') : LOCALES) {
    const locale = shippedLocale(entry);
    if (locale === null) throw new ConfigError('TESSERA_LOCALES', `${JSON.stringify(entry)} is not a language Tessera has pages in; each must be ${known}`);
    if (!offered.includes(locale)) offered.push(locale);
  }
  if (offered.length === 0) throw new ConfigError('TESSERA_LOCALES', `must name at least one language, ${known}`);
  const rawDefault = env['TESSERA_DEFAULT_LOCALE']?.trim();
  if (!rawDefault) return { locales: offered, defaultLocale: offered.includes('en') ? 'en' : offered[0]! };
  const defaultLocale = shippedLocale(rawDefault);
  if (defaultLocale === null || !offered.includes(defaultLocale)) {
    throw new ConfigError('TESSERA_DEFAULT_LOCALE', `must be one of the offered languages (${offered.join(', ')}), got ${JSON.stringify(rawDefault)}`);
  }
  return { locales: offered, defaultLocale };
}

/**
 * A misspelt variable would otherwise be ignored and its setting silently left at its
 * default (issue 31): a `TESSERA_*` name Tessera does not read stops the start, naming the
 * closest real one, unless TESSERA_ALLOW_UNKNOWN_SETTINGS says the environment is shared.
 */
function checkNames(env: Env): void {
  const allowed = boolean(env, 'TESSERA_ALLOW_UNKNOWN_SETTINGS');
  const unknown = unknownVariables(env);
  if (unknown.length === 0 || allowed) return;
  const name = unknown[0]!;
  const near = closest(name, SETTINGS.map((entry) => entry.name));
  throw new ConfigError(
    name,
    `is not a Tessera setting${near ? `; did you mean ${near}?` : ''} (TESSERA_ALLOW_UNKNOWN_SETTINGS=true ignores unknown TESSERA_* variables)`,
  );
}

/** Reads and validates the settings. Throws `ConfigError` naming the first wrong one. */
export function loadConfig(env: Env = process.env): Config {
  checkNames(env);
  const port = integer(env, 'PORT');
  const host = env['HOST']?.trim() || 'localhost';
  const issuer = parseIssuer(env['TESSERA_ISSUER']?.trim() || `http://localhost:${port}`);
  const logLevel = env['TESSERA_LOG_LEVEL']?.trim().toLowerCase() || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('TESSERA_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);
  }
  const refreshToken = integer(env, 'TESSERA_REFRESH_TOKEN_TTL');
  const accessToken = integer(env, 'TESSERA_ACCESS_TOKEN_TTL');
  const db = database(env);
  return {
    port,
    host,
    issuer,
    database: db,
    createDatabase: boolean(env, 'TESSERA_DATABASE_CREATE'),
    logLevel,
    trustProxy: trustProxy(env),
    allowPrivateNetworkUrls: boolean(env, 'TESSERA_ALLOW_PRIVATE_NETWORK_URLS'),
    lifetimes: {
      authorizationCode: 60,
      accessToken,
      idToken: integer(env, 'TESSERA_ID_TOKEN_TTL'),
      session: integer(env, 'TESSERA_SESSION_TTL'),
      refreshToken,
      refreshTokenIdle: integer(env, 'TESSERA_REFRESH_TOKEN_IDLE_TTL', { fallback: Math.min(30 * 86400, refreshToken), max: refreshToken }),
      publicClient: {
        accessToken: integer(env, 'TESSERA_PUBLIC_ACCESS_TOKEN_TTL', { fallback: accessToken, max: accessToken }),
        refreshToken: integer(env, 'TESSERA_PUBLIC_REFRESH_TOKEN_TTL', { fallback: refreshToken, max: refreshToken }),
      },
      deviceGrant: {
        accessToken: integer(env, 'TESSERA_DEVICE_ACCESS_TOKEN_TTL', { fallback: accessToken, max: accessToken }),
        refreshToken: integer(env, 'TESSERA_DEVICE_REFRESH_TOKEN_TTL', { fallback: refreshToken, max: refreshToken }),
      },
    },
    device: { codeLifetime: 600, interval: 5 },
    keyLeadTimeSeconds: integer(env, 'TESSERA_KEY_LEAD_TIME'),
    workers: integer(env, 'TESSERA_WORKERS'),
    accessTokenAlg: accessTokenAlg(env),
    postgres: postgresSettings(env),
    passwordHash: passwordHash(env),
    dpop: {
      proofWindow: integer(env, 'TESSERA_DPOP_PROOF_WINDOW'),
      nonces: boolean(env, 'TESSERA_DPOP_NONCES'),
      nonceLifetime: integer(env, 'TESSERA_DPOP_NONCE_LIFETIME'),
    },
    par: {
      requestLifetime: integer(env, 'TESSERA_PAR_TTL'),
      interactionLifetime: integer(env, 'TESSERA_PAR_INTERACTION_TTL'),
      required: boolean(env, 'TESSERA_REQUIRE_PAR'),
    },
    signIn: signIn(env),
    userCode: userCode(env),
    deviceAuthorizationLimits: {
      perClientPerMinute: integer(env, 'TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT'),
      perAddressPerMinute: integer(env, 'TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS'),
    },
    grantRetentionSeconds: integer(env, 'TESSERA_GRANT_RETENTION'),
    keyEncryption: keyEncryption(env, db),
    secondFactor: {
      required: boolean(env, 'TESSERA_REQUIRE_SECOND_FACTOR'),
      ceremonyTimeout: integer(env, 'TESSERA_WEBAUTHN_TIMEOUT'),
      pendingSignInTimeout: integer(env, 'TESSERA_SECOND_FACTOR_TIMEOUT'),
      consoleReauthenticate: integer(env, 'TESSERA_CONSOLE_REAUTHENTICATE'),
    },
    upstream: {
      timeout: integer(env, 'TESSERA_UPSTREAM_TIMEOUT'),
      signInTimeout: integer(env, 'TESSERA_UPSTREAM_SIGN_IN_TIMEOUT'),
    },
    clientAuth: {
      jwksTimeoutMs: integer(env, 'TESSERA_CLIENT_JWKS_TIMEOUT_MS'),
      jwksCacheSeconds: integer(env, 'TESSERA_CLIENT_JWKS_CACHE_TTL'),
      jwksRefetchSeconds: integer(env, 'TESSERA_CLIENT_JWKS_REFETCH_INTERVAL'),
      assertionMaxLifetimeSeconds: integer(env, 'TESSERA_CLIENT_ASSERTION_MAX_LIFETIME'),
    },
    eventRetentionSeconds: integer(env, 'TESSERA_EVENT_RETENTION'),
    metrics: {
      port: env['TESSERA_METRICS_PORT']?.trim() ? integer(env, 'TESSERA_METRICS_PORT') : null,
      host: env['TESSERA_METRICS_HOST']?.trim() || '127.0.0.1',
    },
    adminListen: hostPort(env, 'TESSERA_ADMIN_LISTEN'),
    registration: {
      policy: registrationPolicy(env),
      perAddressPerHour: integer(env, 'TESSERA_REGISTRATIONS_PER_ADDRESS'),
      perNetworkPerHour: integer(env, 'TESSERA_REGISTRATIONS_PER_NETWORK'),
      perHour: integer(env, 'TESSERA_REGISTRATIONS_PER_HOUR'),
      unusedRetentionSeconds: integer(env, 'TESSERA_UNUSED_REGISTRATION_RETENTION'),
      softwareStatementJwks: trustedJwks(env, 'TESSERA_SOFTWARE_STATEMENT_JWKS'),
      metadataDocuments: {
        enabled: boolean(env, 'TESSERA_CLIENT_ID_METADATA_DOCUMENTS'),
        timeoutMs: integer(env, 'TESSERA_CLIENT_ID_METADATA_TIMEOUT_MS'),
        maxBytes: integer(env, 'TESSERA_CLIENT_ID_METADATA_MAX_BYTES'),
        cacheSeconds: integer(env, 'TESSERA_CLIENT_ID_METADATA_CACHE_TTL'),
        development: boolean(env, 'TESSERA_CLIENT_ID_METADATA_DEVELOPMENT'),
        newPerAddressPerHour: integer(env, 'TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS'),
        newPerHour: integer(env, 'TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_HOUR'),
      },
    },
    shutdown: {
      delaySeconds: integer(env, 'TESSERA_SHUTDOWN_DELAY'),
      timeoutSeconds: integer(env, 'TESSERA_SHUTDOWN_TIMEOUT'),
    },
    site: site(env),
    logout: {
      timeoutSeconds: integer(env, 'TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT'),
      attempts: integer(env, 'TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS'),
      retryDelayMs: integer(env, 'TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS'),
    },
    webhooks: {
      timeoutSeconds: integer(env, 'TESSERA_WEBHOOK_TIMEOUT'),
      retryWindowSeconds: integer(env, 'TESSERA_WEBHOOK_RETRY_WINDOW'),
      retryDelayMs: integer(env, 'TESSERA_WEBHOOK_RETRY_DELAY_MS'),
    },
  };
}

/** `host:port` (an IPv6 address in brackets: `[::1]:9000`), or null when the variable is unset or empty. */
function hostPort(env: Env, name: SettingName): { host: string; port: number } | null {
  const raw = env[name]?.trim();
  if (!raw) return null;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(raw);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new ConfigError(name, `must be host:port, such as 127.0.0.1:9001 or [::1]:9001, got ${JSON.stringify(raw)}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

function registrationPolicy(env: Env): RegistrationSettings['policy'] {
  const raw = env['TESSERA_REGISTRATION']?.trim().toLowerCase() || 'off';
  if (raw === 'off' || raw === 'token' || raw === 'open') return raw;
  throw new ConfigError('TESSERA_REGISTRATION', `must be off, token or open, got ${JSON.stringify(env['TESSERA_REGISTRATION'])}`);
}

/** A JWK Set given inline (JSON) or as the path of a file holding one; its keys must be public. */
function trustedJwks(env: Env, name: SettingName): Record<string, unknown> | null {
  const raw = env[name]?.trim();
  if (!raw) return null;
  let text = raw;
  if (!raw.startsWith('{')) {
    try {
      text = readFileSync(raw, 'utf8');
    } catch (error) {
      throw new ConfigError(name, `cannot read ${raw}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(name, 'must be a JWK Set, as JSON or in a file');
  }
  const keys = (parsed as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((key) => typeof key === 'object' && key !== null && !('d' in key))) {
    throw new ConfigError(name, 'must be a JWK Set ({"keys": [...]}) of public keys');
  }
  return parsed as Record<string, unknown>;
}

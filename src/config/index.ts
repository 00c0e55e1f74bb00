/**
 * The loader: reads every setting `./settings.ts` declares, through its row, and groups the
 * values into the `Config` the rest of the server is given (`./types.ts`). A whole number is
 * checked against its row's range (and the setting it is bounded by), an on/off value against
 * the words for on and off, text by its parser (`./parsers.ts`); each refusal is one
 * `ConfigError` naming the setting and what it accepts.
 */
import { availableParallelism } from 'node:os';
import { ConfigError, TEXT_PARSERS, type Earlier, type TextValue } from './parsers.ts';
import {
  BOOLEAN_WORDS,
  isKubernetesServiceLink,
  misspeltSetting,
  setting,
  SETTINGS,
  unknownVariables,
  type BooleanSetting,
  type IntegerSetting,
  type IntegerSettingName,
  type Setting,
  type TextSettingName,
} from './settings.ts';
import type { Config, Env, MailSettings, PostgresSettings } from './types.ts';

export type * from './types.ts';
export { ConfigError, DEFAULT_PASSWORD_HASH, parseKeyEncryptionKey } from './parsers.ts';

type Row = (typeof SETTINGS)[number];

type ValueOf<R extends Row> = R extends { type: 'integer'; optional: true }
  ? number | null
  : R extends { type: 'integer' }
    ? number
    : R extends { type: 'boolean' }
      ? boolean
      : R extends { name: infer N extends TextSettingName }
        ? TextValue<N>
        : never;

/** Every setting's value by name, as its row reads it. */
export type Settings = { readonly [R in Row as R['name']]: ValueOf<R> };

/** Reads and validates the settings. Throws `ConfigError` naming the first wrong one. */
export function loadConfig(env: Env = process.env): Config {
  const ignoredVariables = checkNames(env);
  const s = readSettings(env);
  return {
    port: s.PORT,
    host: s.HOST,
    issuer: s.TESSERA_ISSUER,
    database: s.TESSERA_DATABASE,
    createDatabase: s.TESSERA_DATABASE_CREATE,
    logLevel: s.TESSERA_LOG_LEVEL,
    trustProxy: s.TESSERA_TRUST_PROXY,
    allowPrivateNetworkUrls: s.TESSERA_ALLOW_PRIVATE_NETWORK_URLS,
    lifetimes: {
      authorizationCode: 60,
      accessToken: s.TESSERA_ACCESS_TOKEN_TTL,
      idToken: s.TESSERA_ID_TOKEN_TTL,
      session: s.TESSERA_SESSION_TTL,
      refreshToken: s.TESSERA_REFRESH_TOKEN_TTL,
      refreshTokenIdle: s.TESSERA_REFRESH_TOKEN_IDLE_TTL,
      publicClient: { accessToken: s.TESSERA_PUBLIC_ACCESS_TOKEN_TTL, refreshToken: s.TESSERA_PUBLIC_REFRESH_TOKEN_TTL },
      deviceGrant: { accessToken: s.TESSERA_DEVICE_ACCESS_TOKEN_TTL, refreshToken: s.TESSERA_DEVICE_REFRESH_TOKEN_TTL },
    },
    device: { codeLifetime: s.TESSERA_DEVICE_CODE_LIFETIME, interval: s.TESSERA_DEVICE_POLL_INTERVAL },
    keyLeadTimeSeconds: s.TESSERA_KEY_LEAD_TIME,
    workers: s.TESSERA_WORKERS,
    accessTokenAlg: s.TESSERA_ACCESS_TOKEN_ALG,
    postgres: {
      poolSize: s.TESSERA_DATABASE_POOL_SIZE,
      statementTimeoutSeconds: s.TESSERA_DATABASE_STATEMENT_TIMEOUT,
      connectTimeoutSeconds: s.TESSERA_DATABASE_CONNECT_TIMEOUT,
    },
    passwordHash: s.TESSERA_PASSWORD_HASH,
    dpop: { proofWindow: s.TESSERA_DPOP_PROOF_WINDOW, nonces: s.TESSERA_DPOP_NONCES, nonceLifetime: s.TESSERA_DPOP_NONCE_LIFETIME },
    par: { requestLifetime: s.TESSERA_PAR_TTL, interactionLifetime: s.TESSERA_PAR_INTERACTION_TTL, required: s.TESSERA_REQUIRE_PAR },
    signIn: {
      windowSeconds: s.TESSERA_SIGN_IN_WINDOW,
      perUserAddress: s.TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS,
      perAddress: s.TESSERA_SIGN_IN_FAILURES_PER_ADDRESS,
      freeFailures: s.TESSERA_SIGN_IN_FREE_FAILURES,
      delayMs: s.TESSERA_SIGN_IN_DELAY_MS,
      maxDelayMs: s.TESSERA_SIGN_IN_MAX_DELAY_MS,
      hashThreads: s.TESSERA_PASSWORD_HASH_THREADS ?? Math.max(1, Math.floor(availableParallelism() / 2)),
      hashNice: s.TESSERA_PASSWORD_HASH_NICE,
      queue: s.TESSERA_SIGN_IN_QUEUE,
      queuePerAddress: s.TESSERA_SIGN_IN_QUEUE_PER_ADDRESS,
      goodRecordSeconds: s.TESSERA_SIGN_IN_GOOD_RECORD,
    },
    userCode: {
      windowSeconds: s.TESSERA_USER_CODE_WINDOW,
      perBrowser: s.TESSERA_USER_CODE_FAILURES_PER_BROWSER,
      perAddress: s.TESSERA_USER_CODE_FAILURES_PER_ADDRESS,
      perNetwork: s.TESSERA_USER_CODE_FAILURES_PER_NETWORK,
      perLargeNetwork: s.TESSERA_USER_CODE_FAILURES_PER_LARGE_NETWORK,
      globalPerMinute: s.TESSERA_USER_CODE_FAILURES_PER_MINUTE,
      globalDelayMs: s.TESSERA_USER_CODE_SLOW_MS,
    },
    deviceAuthorizationLimits: {
      perClientPerMinute: s.TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT,
      perAddressPerMinute: s.TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS,
    },
    passkeyCeremoniesPerAddressPerMinute: s.TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS,
    grantRetentionSeconds: s.TESSERA_GRANT_RETENTION,
    keyEncryption: { keys: s.TESSERA_KEY_ENCRYPTION_KEY, file: s.TESSERA_KEY_FILE },
    secondFactor: {
      required: s.TESSERA_REQUIRE_SECOND_FACTOR,
      ceremonyTimeout: s.TESSERA_WEBAUTHN_TIMEOUT,
      pendingSignInTimeout: s.TESSERA_SECOND_FACTOR_TIMEOUT,
      consoleReauthenticate: s.TESSERA_CONSOLE_REAUTHENTICATE,
      accountReauthenticate: s.TESSERA_ACCOUNT_REAUTHENTICATE,
    },
    upstream: { timeout: s.TESSERA_UPSTREAM_TIMEOUT, signInTimeout: s.TESSERA_UPSTREAM_SIGN_IN_TIMEOUT },
    clientAuth: {
      jwksTimeoutMs: s.TESSERA_CLIENT_JWKS_TIMEOUT_MS,
      jwksCacheSeconds: s.TESSERA_CLIENT_JWKS_CACHE_TTL,
      jwksRefetchSeconds: s.TESSERA_CLIENT_JWKS_REFETCH_INTERVAL,
      assertionMaxLifetimeSeconds: s.TESSERA_CLIENT_ASSERTION_MAX_LIFETIME,
      assertionAudience: s.TESSERA_CLIENT_ASSERTION_AUDIENCE,
    },
    eventRetentionSeconds: s.TESSERA_EVENT_RETENTION,
    metrics: { port: s.TESSERA_METRICS_PORT, host: s.TESSERA_METRICS_HOST },
    adminListen: s.TESSERA_ADMIN_LISTEN,
    registration: {
      policy: s.TESSERA_REGISTRATION,
      perAddressPerHour: s.TESSERA_REGISTRATIONS_PER_ADDRESS,
      perNetworkPerHour: s.TESSERA_REGISTRATIONS_PER_NETWORK,
      perHour: s.TESSERA_REGISTRATIONS_PER_HOUR,
      unusedRetentionSeconds: s.TESSERA_UNUSED_REGISTRATION_RETENTION,
      softwareStatementJwks: s.TESSERA_SOFTWARE_STATEMENT_JWKS,
      metadataDocuments: {
        enabled: s.TESSERA_CLIENT_ID_METADATA_DOCUMENTS,
        timeoutMs: s.TESSERA_CLIENT_ID_METADATA_TIMEOUT_MS,
        maxBytes: s.TESSERA_CLIENT_ID_METADATA_MAX_BYTES,
        cacheSeconds: s.TESSERA_CLIENT_ID_METADATA_CACHE_TTL,
        development: s.TESSERA_CLIENT_ID_METADATA_DEVELOPMENT,
        newPerAddressPerHour: s.TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS,
        newPerHour: s.TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_HOUR,
      },
    },
    requestTimeoutSeconds: s.TESSERA_REQUEST_TIMEOUT,
    shutdown: { delaySeconds: s.TESSERA_SHUTDOWN_DELAY, timeoutSeconds: s.TESSERA_SHUTDOWN_TIMEOUT },
    site: {
      name: s.TESSERA_SITE_NAME,
      logoUrl: s.TESSERA_SITE_LOGO_URL,
      accentColor: s.TESSERA_SITE_ACCENT_COLOR,
      locales: s.TESSERA_LOCALES,
      defaultLocale: s.TESSERA_DEFAULT_LOCALE,
      ...(s.TESSERA_API_TRANSLATIONS === null ? {} : { apiTranslations: s.TESSERA_API_TRANSLATIONS }),
    },
    logout: {
      timeoutSeconds: s.TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT,
      attempts: s.TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS,
      retryDelayMs: s.TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS,
    },
    webhooks: {
      timeoutSeconds: s.TESSERA_WEBHOOK_TIMEOUT,
      retryWindowSeconds: s.TESSERA_WEBHOOK_RETRY_WINDOW,
      retryDelayMs: s.TESSERA_WEBHOOK_RETRY_DELAY_MS,
    },
    ssf: { defaultSubjects: s.TESSERA_SSF_DEFAULT_SUBJECTS },
    outbox: {
      batch: s.TESSERA_OUTBOX_BATCH,
      triesPerTurn: s.TESSERA_OUTBOX_TRIES_PER_TURN,
      busyTriesPerSecond: s.TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND,
    },
    mail: mailSettings(s),
    signUp: {
      policy: s.TESSERA_SIGN_UP,
      verify: s.TESSERA_SIGN_UP_VERIFY,
      domains: s.TESSERA_SIGN_UP_DOMAINS,
      linkTtlSeconds: s.TESSERA_SIGN_UP_LINK_TTL,
      perAddressPerHour: s.TESSERA_SIGN_UP_PER_ADDRESS,
      perEmailPerHour: s.TESSERA_SIGN_UP_PER_EMAIL,
    },
    recovery: {
      linkTtlSeconds: s.TESSERA_RECOVERY_LINK_TTL,
      perAddressPerHour: s.TESSERA_RECOVERY_PER_ADDRESS,
      perEmailPerHour: s.TESSERA_RECOVERY_PER_EMAIL,
    },
    agents: {
      maxActors: s.TESSERA_TOKEN_EXCHANGE_MAX_ACTORS,
      idJagLifetime: s.TESSERA_ID_JAG_LIFETIME,
    },
    saml: {
      requestLifetime: s.TESSERA_SAML_REQUEST_LIFETIME,
      maxRequestChars: s.TESSERA_SAML_MAX_REQUEST_SIZE,
      signInSeconds: s.TESSERA_SAML_SIGN_IN_TIMEOUT,
    },
    ignoredVariables,
  };
}

/** The mail server (null: no mail is sent) and the sender: the site by name at no-reply@ the issuer's host, unless set. */
function mailSettings(s: Settings): MailSettings {
  return {
    smtpUrl: s.TESSERA_SMTP_URL === null ? null : s.TESSERA_SMTP_URL.href,
    startTls: s.TESSERA_SMTP_STARTTLS,
    from: s.TESSERA_MAIL_FROM ?? { name: s.TESSERA_SITE_NAME, address: `no-reply@${new URL(s.TESSERA_ISSUER).hostname}` },
    timeoutSeconds: s.TESSERA_SMTP_TIMEOUT,
    retryWindowSeconds: s.TESSERA_MAIL_RETRY_WINDOW,
    retryDelayMs: s.TESSERA_MAIL_RETRY_DELAY_MS,
  };
}

/** Every row of the table read from `env`, in the table's order, so a row may follow one before it. */
export function readSettings(env: Env): Settings {
  const values = new Map<string, unknown>();
  const before = (name: string): unknown => {
    // A bug in the table, not in the environment: test/settings-table.test.ts keeps it out.
    if (!values.has(name)) throw new Error(`${name} is read before the settings that follow it`);
    return values.get(name);
  };
  const earlier: Earlier = {
    integer: (name) => before(name) as number,
    text: <N extends TextSettingName>(name: N) => before(name) as TextValue<N>,
  };
  for (const row of SETTINGS as readonly Setting[]) {
    const raw = env[row.name]?.trim() || undefined;
    if (row.type === 'integer') values.set(row.name, integer(row, raw, before));
    else if (row.type === 'boolean') values.set(row.name, boolean(row, raw));
    else values.set(row.name, textParser(row.name)(raw, earlier));
  }
  return Object.fromEntries(values) as Settings;
}

function textParser(name: string): (raw: string | undefined, earlier: Earlier) => unknown {
  const parser = (TEXT_PARSERS as Readonly<Record<string, (raw: string | undefined, earlier: Earlier) => unknown>>)[name];
  // As the type of TEXT_PARSERS says, for a table edited without the type check.
  if (parser === undefined) throw new Error(`${name} has no parser in src/config/parsers.ts`);
  return parser;
}

/**
 * A whole number in its row's range, and on its side of the setting it is bounded by; unset,
 * its default (or the setting it follows), moved to that side.
 */
function integer(row: IntegerSetting, raw: string | undefined, before: (name: string) => unknown): number | null {
  const atMost = row.atMost === undefined ? null : (before(row.atMost) as number);
  const atLeast = row.atLeast === undefined ? null : (before(row.atLeast) as number);
  const min = Math.max(row.min, atLeast ?? row.min);
  const max = Math.min(row.max, atMost ?? row.max);
  if (raw === undefined) {
    if (row.optional) return null;
    const fallback = row.defaultFrom === undefined ? row.default : (before(row.defaultFrom) as number);
    return Math.min(Math.max(fallback, min), max);
  }
  if (!/^\d+$/.test(raw)) throw new ConfigError(row.name, `must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) {
    const bound = atMost !== null && max === atMost ? ` (at most ${row.atMost})` : atLeast !== null && min === atLeast ? ` (at least ${row.atLeast})` : '';
    throw new ConfigError(row.name, `must be between ${min} and ${max}${bound}, got ${value}`);
  }
  return value;
}

function boolean(row: BooleanSetting, raw: string | undefined): boolean {
  if (raw === undefined) return row.default;
  const word = raw.toLowerCase();
  if ((BOOLEAN_WORDS.on as readonly string[]).includes(word)) return true;
  if ((BOOLEAN_WORDS.off as readonly string[]).includes(word)) return false;
  throw new ConfigError(row.name, `must be true or false, got ${JSON.stringify(raw)}`);
}

/**
 * A misspelt variable would otherwise be ignored and its setting silently left at its default,
 * so a `TESSERA_*` name close to a setting's stops the start, naming that setting.
 * One close to none is a wrapper's or an image's own: the start goes on, and the
 * names are returned for the server to warn about. TESSERA_ALLOW_UNKNOWN_SETTINGS=true lets
 * both pass quietly; Kubernetes' service variables always pass.
 */
function checkNames(env: Env): readonly string[] {
  if (boolean(setting('TESSERA_ALLOW_UNKNOWN_SETTINGS') as BooleanSetting, env['TESSERA_ALLOW_UNKNOWN_SETTINGS']?.trim() || undefined)) return [];
  const ignored: string[] = [];
  for (const name of unknownVariables(env)) {
    if (isKubernetesServiceLink(name, env[name])) continue;
    const near = misspeltSetting(name);
    if (near !== null)
      throw new ConfigError(name, `is not a Tessera setting; did you mean ${near}? (TESSERA_ALLOW_UNKNOWN_SETTINGS=true ignores unknown TESSERA_* variables)`);
    ignored.push(name);
  }
  return ignored;
}

const defaultOf = (name: IntegerSettingName) => (setting(name) as IntegerSetting).default;

export const POSTGRES_DEFAULTS: PostgresSettings = {
  poolSize: defaultOf('TESSERA_DATABASE_POOL_SIZE'),
  statementTimeoutSeconds: defaultOf('TESSERA_DATABASE_STATEMENT_TIMEOUT'),
  connectTimeoutSeconds: defaultOf('TESSERA_DATABASE_CONNECT_TIMEOUT'),
};

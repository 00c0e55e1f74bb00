/**
 * The parser of each text setting in `./settings.ts`, by name. Whole numbers and on/off values
 * are read from their rows by the loader (`./index.ts`); text needs checks of its own. Each
 * parser gets the trimmed value (undefined when unset or empty) and the values of the settings
 * before it in the table, and throws a `ConfigError` naming its setting and what it accepts.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { LOCALES, shippedLocale, type Locale } from './locales.ts';
import type { TextSettingName } from './settings.ts';
import type { ApiTranslation, ApiTranslations, ClientAuthSettings, PasswordHashCost, RegistrationSettings, SigningAlgorithm } from './types.ts';

/** A setting's value refused: `SETTING: why`, the one line a start or a command stops with. */
export class ConfigError extends Error {
  constructor(setting: string, why: string) {
    super(`${setting}: ${why}`);
    this.name = 'ConfigError';
  }
}

/** The values of the settings read before the one being parsed. */
export interface Earlier {
  integer(name: 'PORT'): number;
  text<N extends TextSettingName>(name: N): TextValue<N>;
}

export type TextValue<N extends TextSettingName> = ReturnType<(typeof TEXT_PARSERS)[N]>;

type Parser = (raw: string | undefined, earlier: Earlier) => unknown;

/** Each text setting's parser; a text row without one does not type-check. */
export const TEXT_PARSERS = {
  HOST: (raw): string => raw ?? 'localhost',
  TESSERA_ISSUER: (raw, earlier): string => parseIssuer(raw ?? `http://localhost:${earlier.integer('PORT')}`),
  TESSERA_DATABASE: database,
  TESSERA_LOG_LEVEL: logLevel,
  TESSERA_TRUST_PROXY: trustProxy,
  TESSERA_ACCESS_TOKEN_ALG: accessTokenAlg,
  TESSERA_PASSWORD_HASH: passwordHash,
  TESSERA_KEY_ENCRYPTION_KEY: (raw): readonly Buffer[] =>
    raw === undefined ? [] : raw.split(',').map((entry) => parseKeyEncryptionKey(entry, 'TESSERA_KEY_ENCRYPTION_KEY')),
  TESSERA_KEY_FILE: keyFile,
  TESSERA_METRICS_HOST: (raw): string => raw ?? '127.0.0.1',
  TESSERA_CLIENT_ASSERTION_AUDIENCE: clientAssertionAudience,
  TESSERA_REGISTRATION: registrationPolicy,
  TESSERA_SOFTWARE_STATEMENT_JWKS: (raw): Readonly<Record<string, unknown>> | null => trustedJwks(raw, 'TESSERA_SOFTWARE_STATEMENT_JWKS'),
  TESSERA_ADMIN_LISTEN: (raw): { readonly host: string; readonly port: number } | null => hostPort(raw, 'TESSERA_ADMIN_LISTEN'),
  TESSERA_SMTP_URL: smtpUrl,
  TESSERA_SMTP_STARTTLS: smtpStartTls,
  TESSERA_MAIL_FROM: mailFrom,
  TESSERA_SIGN_UP: signUpPolicy,
  TESSERA_SIGN_UP_VERIFY: signUpVerify,
  TESSERA_SSF_DEFAULT_SUBJECTS: ssfDefaultSubjects,
  TESSERA_SIGN_UP_DOMAINS: signUpDomains,
  TESSERA_SITE_NAME: siteName,
  TESSERA_SITE_LOGO_URL: logoUrl,
  TESSERA_SITE_ACCENT_COLOR: accentColor,
  TESSERA_LOCALES: locales,
  TESSERA_API_TRANSLATIONS: apiTranslations,
  TESSERA_DEFAULT_LOCALE: (raw, earlier): Locale => defaultLocale(raw, earlier.text('TESSERA_LOCALES')),
} as const satisfies { readonly [N in TextSettingName]: Parser };

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
  // publish endpoints under it that answer 404, so it is refused.
  if (url.pathname.replace(/\/+$/, '') !== '') {
    throw new ConfigError(
      'TESSERA_ISSUER',
      `must have no path: Tessera serves its endpoints at the root of its host; use ${JSON.stringify(url.origin)} (a host of its own, such as https://auth.example.com), got ${JSON.stringify(raw)}`,
    );
  }
  return url.href.replace(/\/+$/, '');
}

function database(raw: string | undefined): string {
  if (raw === undefined) return path.resolve('data', 'tessera.db');
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(raw: string | undefined): string {
  const level = raw?.toLowerCase() ?? 'info';
  if (!LOG_LEVELS.includes(level)) throw new ConfigError('TESSERA_LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  return level;
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

function trustProxy(raw: string | undefined): boolean | readonly string[] {
  if (raw === undefined || /^(0|false|no|off)$/i.test(raw)) return false;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
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

function accessTokenAlg(raw: string | undefined): SigningAlgorithm {
  const alg = raw?.toUpperCase() ?? 'ES256';
  if (alg === 'ES256' || alg === 'RS256') return alg;
  throw new ConfigError('TESSERA_ACCESS_TOKEN_ALG', `must be ES256 or RS256, got ${JSON.stringify(raw)}`);
}

/**
 * OWASP's first argon2id configuration: m=46 MiB, t=1, p=1. About 90 ms of one core on the
 * development machine, where RFC 9106 §4's t=3, m=64 MiB, p=4 took about 270 ms (and 1.5 s
 * with the machine busy); p above 1 buys nothing here, where one check runs on one thread
 * (docs/security.md, docs/benchmarks.md).
 */
export const DEFAULT_PASSWORD_HASH: PasswordHashCost = { memory: 47104, passes: 1, parallelism: 1 };

function passwordHash(raw: string | undefined): PasswordHashCost {
  if (raw === undefined) return DEFAULT_PASSWORD_HASH;
  const match = /^m=(\d{1,8}),t=(\d{1,3}),p=(\d{1,3})$/.exec(raw.replace(/\s+/g, ''));
  const [memory, passes, parallelism] = match ? [Number(match[1]), Number(match[2]), Number(match[3])] : [0, 0, 0];
  // RFC 9106 §3.1: p from 1 to 2^24-1, m at least 8p KiB, t at least 1; bounded above here
  // so that a typo cannot make every sign-in take minutes (4 GiB, 100 passes, 64 lanes).
  if (!match || parallelism < 1 || parallelism > 64 || passes < 1 || passes > 100 || memory < 8 * parallelism || memory > 4 * 1024 * 1024) {
    throw new ConfigError(
      'TESSERA_PASSWORD_HASH',
      `must be m=KIB,t=PASSES,p=LANES with p 1-64, t 1-100 and m from 8*p to 4194304 (default m=47104,t=1,p=1), got ${JSON.stringify(raw)}`,
    );
  }
  return { memory, passes, parallelism };
}

/** A 32-byte key, as base64 or base64url. */
export function parseKeyEncryptionKey(raw: string, setting: string): Buffer {
  const trimmed = raw.trim();
  const key = /^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed) ? Buffer.from(trimmed.replace(/=$/, ''), 'base64url') : Buffer.alloc(0);
  if (key.length !== 32)
    throw new ConfigError(setting, 'each key must be 32 bytes in base64 or base64url (43 characters; `openssl rand -base64 32` makes one)');
  return key;
}

/** Unset: beside an SQLite file, `./data/tessera.key` with PostgreSQL, none for an in-memory database. */
function keyFile(raw: string | undefined, earlier: Earlier): string | null {
  if (raw !== undefined) return raw;
  const database = earlier.text('TESSERA_DATABASE');
  if (/^postgres(ql)?:\/\//.test(database)) return path.resolve('data', 'tessera.key');
  const sqlitePath = database.replace(/^(sqlite|file):/i, '');
  return sqlitePath === ':memory:' ? null : `${sqlitePath}.key`;
}

function clientAssertionAudience(raw: string | undefined): ClientAuthSettings['assertionAudience'] {
  const value = raw?.toLowerCase() ?? 'issuer';
  if (value === 'issuer' || value === 'legacy') return value;
  throw new ConfigError('TESSERA_CLIENT_ASSERTION_AUDIENCE', `must be issuer or legacy, got ${JSON.stringify(raw)}`);
}

function registrationPolicy(raw: string | undefined): RegistrationSettings['policy'] {
  const policy = raw?.toLowerCase() ?? 'off';
  if (policy === 'off' || policy === 'token' || policy === 'open') return policy;
  throw new ConfigError('TESSERA_REGISTRATION', `must be off, token or open, got ${JSON.stringify(raw)}`);
}

/** A JWK Set given inline (JSON) or as the path of a file holding one; its keys must be public. */
function trustedJwks(raw: string | undefined, name: TextSettingName): Record<string, unknown> | null {
  if (raw === undefined) return null;
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

/** `host:port` (an IPv6 address in brackets: `[::1]:9000`), or null when unset. */
function hostPort(raw: string | undefined, name: TextSettingName): { host: string; port: number } | null {
  if (raw === undefined) return null;
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(raw);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new ConfigError(name, `must be host:port, such as 127.0.0.1:9001 or [::1]:9001, got ${JSON.stringify(raw)}`);
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port };
}

function siteName(raw: string | undefined): string {
  const name = raw ?? 'Tessera';
  if (name.length > 64 || /[\u0000-\u001f\u007f]/.test(name))
    throw new ConfigError('TESSERA_SITE_NAME', 'must be at most 64 characters with no control characters');
  return name;
}

function logoUrl(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {
    // reported below
  }
  if (url === null || url.protocol !== 'https:') throw new ConfigError('TESSERA_SITE_LOGO_URL', `must be an https URL, got ${JSON.stringify(raw)}`);
  return raw;
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

function accentColor(raw: string | undefined): string | null {
  if (raw === undefined) return null;
  const accent = raw.toLowerCase();
  if (!/^#[0-9a-f]{6}$/.test(accent)) throw new ConfigError('TESSERA_SITE_ACCENT_COLOR', `must be a colour as #rrggbb, got ${JSON.stringify(raw)}`);
  const ratio = contrastWithWhite(accent);
  // WCAG 2.2 SC 1.4.3: 4.5:1 for text. Buttons carry white text on the colour; links are the colour on white.
  if (ratio < 4.5) {
    throw new ConfigError(
      'TESSERA_SITE_ACCENT_COLOR',
      `${accent} has a contrast of ${ratio.toFixed(2)}:1 with white; text needs at least 4.5:1 (WCAG 2.2 1.4.3): choose a darker colour`,
    );
  }
  return accent;
}

const KNOWN_LOCALES = `one of ${LOCALES.join(', ')}`;

function locales(raw: string | undefined): readonly Locale[] {
  const offered: Locale[] = [];
  for (const entry of raw
    ? raw
        .split(',')
        .map((tag) => tag.trim())
        .filter((tag) => tag !== '')
    : LOCALES) {
    const locale = shippedLocale(entry);
    if (locale === null)
      throw new ConfigError('TESSERA_LOCALES', `${JSON.stringify(entry)} is not a language Tessera has pages in; each must be ${KNOWN_LOCALES}`);
    if (!offered.includes(locale)) offered.push(locale);
  }
  if (offered.length === 0) throw new ConfigError('TESSERA_LOCALES', `must name at least one language, ${KNOWN_LOCALES}`);
  return offered;
}

/** Unset: English when it is offered, else the first language offered. */
function defaultLocale(raw: string | undefined, offered: readonly Locale[]): Locale {
  if (raw === undefined) return offered.includes('en') ? 'en' : offered[0]!;
  const locale = shippedLocale(raw);
  if (locale === null || !offered.includes(locale)) {
    throw new ConfigError('TESSERA_DEFAULT_LOCALE', `must be one of the offered languages (${offered.join(', ')}), got ${JSON.stringify(raw)}`);
  }
  return locale;
}

/** As long as a registered API's name and scope description may be (src/flows/manage/resources.ts). */
const MAX_TRANSLATED = { apis: 100, scopes: 200 } as const;

/**
 * Reads TESSERA_API_TRANSLATIONS (an API's scope descriptions in each language):
 * `{"de": {"apis": {"https://api.example.com": "Fotos"}, "scopes": {"photos:read": "Ihre Fotos ansehen"}}}`.
 * Every mistake stops the start naming the setting, the file and where in it.
 */
function apiTranslations(file: string | undefined): ApiTranslations | null {
  if (file === undefined) return null;
  const refuse = (why: string): never => {
    throw new ConfigError('TESSERA_API_TRANSLATIONS', `${file}: ${why}`);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    return refuse(
      error instanceof SyntaxError ? `not valid JSON (${error.message})` : `cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    );
  }
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!isObject(parsed)) return refuse('must be a JSON object of languages, such as {"de": {"scopes": {"photos:read": "Ihre Fotos ansehen"}}}');
  const translations: Partial<Record<Locale, ApiTranslation>> = {};
  for (const [tag, entry] of Object.entries(parsed)) {
    const locale = shippedLocale(tag);
    if (locale === null || locale !== tag) refuse(`${JSON.stringify(tag)} is not a language Tessera has pages in (${LOCALES.join(', ')})`);
    if (!isObject(entry)) return refuse(`${tag}: must be an object with "apis" and "scopes"`);
    const unknownKey = Object.keys(entry).find((key) => key !== 'apis' && key !== 'scopes');
    if (unknownKey !== undefined)
      refuse(`${tag}: ${JSON.stringify(unknownKey)} is neither "apis" (names by identifier) nor "scopes" (descriptions by scope name)`);
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

/** The mail server: smtp:// (STARTTLS) or smtps:// (TLS from the start), a host, perhaps a port, a user and a password. */
function smtpUrl(raw: string | undefined): URL | null {
  if (raw === undefined) return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('TESSERA_SMTP_URL', 'must be an smtp:// or smtps:// URL');
  }
  // The URL may hold a password: the error does not repeat it.
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new ConfigError('TESSERA_SMTP_URL', `must be an smtp:// or smtps:// URL, got the scheme ${JSON.stringify(url.protocol)}`);
  if (url.hostname === '') throw new ConfigError('TESSERA_SMTP_URL', 'must name a host');
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash)
    throw new ConfigError('TESSERA_SMTP_URL', 'must have no path, query or fragment');
  return url;
}

function smtpStartTls(raw: string | undefined): 'require' | 'try' | 'off' {
  const value = raw?.toLowerCase() ?? 'require';
  if (value === 'require' || value === 'try' || value === 'off') return value;
  throw new ConfigError('TESSERA_SMTP_STARTTLS', `must be require, try or off, got ${JSON.stringify(raw)}`);
}

/** A line break in the sender would write headers of its own into every message. */
const MAIL_FROM = /^(?:([^<>\p{Cc}]*?)\s*<([^<>\s@\p{Cc}]+@[^<>\s@\p{Cc}]+)>|([^<>\s@\p{Cc}]+@[^<>\s@\p{Cc}]+))$/u;

function mailFrom(raw: string | undefined): { readonly name: string; readonly address: string } | null {
  if (raw === undefined) return null;
  const match = MAIL_FROM.exec(raw);
  if (match === null) throw new ConfigError('TESSERA_MAIL_FROM', `must be an address or Name <address>, on one line, got ${JSON.stringify(raw)}`);
  return { name: displayName((match[1] ?? '').trim()), address: match[2] ?? match[3]! };
}

/**
 * A sender's name as written in a From header, quoted where it holds a comma or a dot
 * (RFC 5322 §3.2.4: `"Tessera, Ltd." <no-reply@…>`): the name itself, without the quotes and
 * their backslashes, which the mailer writes again as the header needs.
 */
function displayName(written: string): string {
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(written);
  return quoted === null ? written : quoted[1]!.replace(/\\(.)/g, '$1');
}

function signUpPolicy(raw: string | undefined): 'off' | 'open' | 'invite' {
  const value = raw?.toLowerCase() ?? 'off';
  if (value === 'off' || value === 'open' || value === 'invite') return value;
  throw new ConfigError('TESSERA_SIGN_UP', `must be off, open or invite, got ${JSON.stringify(raw)}`);
}

function ssfDefaultSubjects(raw: string | undefined): 'ALL' | 'NONE' {
  const value = raw?.toUpperCase() ?? 'ALL';
  if (value === 'ALL' || value === 'NONE') return value;
  throw new ConfigError('TESSERA_SSF_DEFAULT_SUBJECTS', `must be ALL or NONE, got ${JSON.stringify(raw)}`);
}

function signUpVerify(raw: string | undefined): 'first' | 'later' {
  const value = raw?.toLowerCase() ?? 'first';
  if (value === 'first' || value === 'later') return value;
  throw new ConfigError('TESSERA_SIGN_UP_VERIFY', `must be first or later, got ${JSON.stringify(raw)}`);
}

const DOMAIN = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** The e-mail domains sign-up takes, lower-cased; null: any. */
function signUpDomains(raw: string | undefined): readonly string[] | null {
  if (raw === undefined) return null;
  const domains = raw
    .split(',')
    .map((domain) => domain.trim().toLowerCase())
    .filter((domain) => domain !== '');
  const bad = domains.find((domain) => !DOMAIN.test(domain));
  if (bad !== undefined || domains.length === 0)
    throw new ConfigError('TESSERA_SIGN_UP_DOMAINS', `must be comma-separated domain names, got ${JSON.stringify(bad ?? raw)}`);
  return domains;
}

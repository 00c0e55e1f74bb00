/**
 * Each setting is declared once, in src/config/settings.ts: the loader reads its
 * default and range from there, the README's settings table is that table written out, and
 * the docs name no variable that is not a setting.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import { TEXT_PARSERS } from '../src/config/parsers.ts';
import { OTHER_VARIABLES, SETTINGS, settingsTable, shownDefault, shownRange, type Setting } from '../src/config/settings.ts';

const ROOT = new URL('..', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const DOCS = [
  'README.md',
  ...readdirSync(new URL('docs/', ROOT))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

const dir = mkdtempSync(join(tmpdir(), 'tessera-settings-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const translations = join(dir, 'translations.json');
writeFileSync(translations, JSON.stringify({ de: { scopes: { 'photos:read': 'Ihre Fotos ansehen' } } }));

/** A good value other than the default, for each text setting. */
const TEXT_SAMPLES: Readonly<Record<string, string>> = {
  HOST: '0.0.0.0',
  TESSERA_ISSUER: 'https://auth.example.com',
  TESSERA_DATABASE: 'postgres://tessera@db.internal/tessera',
  TESSERA_LOG_LEVEL: 'debug',
  TESSERA_TRUST_PROXY: 'loopback',
  TESSERA_ACCESS_TOKEN_ALG: 'RS256',
  TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1',
  TESSERA_KEY_ENCRYPTION_KEY: 'A'.repeat(43),
  TESSERA_KEY_FILE: join(dir, 'tessera.key'),
  TESSERA_METRICS_HOST: '0.0.0.0',
  TESSERA_CLIENT_ASSERTION_AUDIENCE: 'legacy',
  TESSERA_REGISTRATION: 'open',
  TESSERA_SOFTWARE_STATEMENT_JWKS: '{"keys": [{"kty": "EC", "crv": "P-256", "x": "x", "y": "y"}]}',
  TESSERA_ADMIN_LISTEN: '127.0.0.1:9001',
  TESSERA_SMTP_URL: 'smtps://tessera:secret@smtp.example.com',
  TESSERA_SMTP_STARTTLS: 'try',
  TESSERA_MAIL_FROM: 'Example <no-reply@example.com>',
  TESSERA_SIGN_UP: 'open',
  TESSERA_SIGN_UP_VERIFY: 'later',
  TESSERA_SSF_DEFAULT_SUBJECTS: 'NONE',
  TESSERA_SIGN_UP_DOMAINS: 'example.com,example.org',
  TESSERA_SITE_NAME: 'Example',
  TESSERA_SITE_LOGO_URL: 'https://example.com/logo.png',
  TESSERA_SITE_ACCENT_COLOR: '#1a4d8f',
  TESSERA_LOCALES: 'de',
  TESSERA_API_TRANSLATIONS: translations,
  TESSERA_DEFAULT_LOCALE: 'de',
};

/** Values to try for a row, one of which must load and differ from its default. */
function samples(entry: Setting): string[] {
  if (entry.type === 'integer') return [entry.min, entry.max, entry.min + 1].map(String);
  if (entry.type === 'boolean') return [String(!entry.default)];
  return TEXT_SAMPLES[entry.name] === undefined ? [] : [TEXT_SAMPLES[entry.name]!];
}

describe('the settings table', () => {
  it('is parsed by the loader row for row: each setting, set, changes what the server is given', () => {
    // A wrapper's variable, which TESSERA_ALLOW_UNKNOWN_SETTINGS decides about.
    const base = { TESSERA_WRAPPER_VERSION: '1' };
    const defaults = loadConfig(base);
    for (const entry of SETTINGS as readonly Setting[]) {
      assert.ok(
        entry.type !== 'text' || typeof (TEXT_PARSERS as Record<string, unknown>)[entry.name] === 'function',
        `${entry.name} has a parser in src/config/parsers.ts`,
      );
      const tried = samples(entry);
      assert.ok(tried.length > 0, `${entry.name} has a sample value in this test`);
      const changed = tried.some((value) => {
        try {
          return !isDeepStrictEqual(loadConfig({ ...base, [entry.name]: value }), defaults);
        } catch (error) {
          if (error instanceof ConfigError) return false;
          throw error;
        }
      });
      assert.ok(changed, `${entry.name} set to ${tried.join(' or ')} changes nothing in the Config: the loader does not read it`);
    }
  });

  it('bounds a whole-number setting only by one declared before it', () => {
    const order = new Map(SETTINGS.map((entry, index) => [entry.name as string, { index, type: entry.type }]));
    SETTINGS.forEach((entry: Setting, index) => {
      if (entry.type !== 'integer') return;
      for (const other of [entry.atMost, entry.atLeast, entry.defaultFrom]) {
        if (other === undefined) continue;
        const found = order.get(other);
        assert.ok(found && found.type === 'integer' && found.index < index, `${entry.name} follows ${other}, a whole-number setting before it`);
      }
    });
  });

  it("is the README's settings table, row for row", () => {
    const readme = read('README.md');
    const start = readme.indexOf('| variable | default | accepts | meaning |');
    assert.notEqual(start, -1, 'the README has a settings table');
    const end = readme.indexOf('\n\n', start);
    const expected = settingsTable();
    assert.equal(readme.slice(start, end), expected, `README.md's settings table differs from src/config/settings.ts; the table it should be:\n${expected}`);
  });

  it('names every TESSERA_* variable the README and the docs mention', () => {
    const known = new Set<string>([...SETTINGS.map((entry) => entry.name), ...Object.keys(OTHER_VARIABLES)]);
    for (const file of DOCS) {
      // A trailing `_` or `*` is a family of settings (`TESSERA_DATABASE_*`).
      const names = [...read(file).matchAll(/\bTESSERA_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_*])/g)].map((match) => match[0]);
      const unknown = [...new Set(names)].filter((name) => !known.has(name));
      assert.deepEqual(unknown, [], `${file} names variables that are not settings`);
    }
  });

  it('is what the loader reads: each whole-number setting is refused past its maximum, naming it', () => {
    for (const entry of SETTINGS) {
      if (entry.type !== 'integer') continue;
      assert.throws(
        () => loadConfig({ [entry.name]: String(entry.max + 1) }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${entry.name}: must be between `),
        entry.name,
      );
      if (entry.min > 0) {
        assert.throws(
          () => loadConfig({ [entry.name]: String(entry.min - 1) }),
          (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${entry.name}:`),
          entry.name,
        );
      }
    }
  });

  it('is what the loader reads: each on/off setting takes true and refuses anything else, naming it', () => {
    for (const entry of SETTINGS) {
      if (entry.type !== 'boolean') continue;
      loadConfig({ [entry.name]: 'true' });
      assert.throws(
        () => loadConfig({ [entry.name]: 'maybe' }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${entry.name}:`),
        entry.name,
      );
    }
  });

  it('speaks of each on/off setting in the words the loader takes: its accepts cell names them, its default is one, and the docs set it with one', () => {
    const text = DOCS.map((file) => read(file)).join('\n');
    for (const entry of SETTINGS) {
      if (entry.type !== 'boolean') continue;
      const words = [...shownRange(entry).matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
      for (const word of words) assert.doesNotThrow(() => loadConfig({ [entry.name]: word }), `${entry.name}=${word}`);
      assert.ok(words.includes(shownDefault(entry).replaceAll('`', '')), `${entry.name}: its default ${shownDefault(entry)} is among ${shownRange(entry)}`);
      for (const match of text.matchAll(new RegExp(`${entry.name}=([A-Za-z0-9]+)`, 'g')))
        assert.ok(words.includes(match[1]!), `the docs set ${match[0]}, which the table does not list`);
    }
  });

  it('gives the defaults the loader uses when nothing is set', () => {
    const config = loadConfig({});
    const defaults = Object.fromEntries(SETTINGS.flatMap((entry) => (entry.type === 'integer' ? [[entry.name, entry.default]] : [])));
    assert.equal(config.port, defaults['PORT']);
    assert.equal(config.lifetimes.accessToken, defaults['TESSERA_ACCESS_TOKEN_TTL']);
    assert.equal(config.lifetimes.refreshToken, defaults['TESSERA_REFRESH_TOKEN_TTL']);
    assert.equal(config.lifetimes.refreshTokenIdle, defaults['TESSERA_REFRESH_TOKEN_IDLE_TTL']);
    assert.equal(config.signIn.maxDelayMs, defaults['TESSERA_SIGN_IN_MAX_DELAY_MS']);
    assert.equal(config.userCode.perNetwork, defaults['TESSERA_USER_CODE_FAILURES_PER_NETWORK']);
    assert.equal(config.postgres.poolSize, defaults['TESSERA_DATABASE_POOL_SIZE']);
    assert.equal(config.eventRetentionSeconds, defaults['TESSERA_EVENT_RETENTION']);
  });
});

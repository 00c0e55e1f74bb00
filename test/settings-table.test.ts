/**
 * Each setting is declared once, in src/config/settings.ts (issue 33): the loader reads its
 * default and range from there, the README's settings table is that table written out, and
 * the docs name no variable that is not a setting.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import { OTHER_VARIABLES, SETTINGS, settingsTable } from '../src/config/settings.ts';

const ROOT = new URL('..', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const DOCS = ['README.md', ...readdirSync(new URL('docs/', ROOT)).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

describe('the settings table', () => {
  it('is the README\'s settings table, row for row', () => {
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
        assert.throws(() => loadConfig({ [entry.name]: String(entry.min - 1) }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${entry.name}:`), entry.name);
      }
    }
  });

  it('is what the loader reads: each on/off setting takes true and refuses anything else, naming it', () => {
    for (const entry of SETTINGS) {
      if (entry.type !== 'boolean') continue;
      loadConfig({ [entry.name]: 'true' });
      assert.throws(() => loadConfig({ [entry.name]: 'maybe' }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${entry.name}:`), entry.name);
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

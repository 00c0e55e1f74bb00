import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from './index.ts';

describe('loadConfig', () => {
  it('works out of the box: port 8080, issuer on localhost, SQLite under ./data', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.issuer, 'http://localhost:8080');
    assert.match(config.database, /data[/\\]tessera\.db$/);
    assert.equal(config.device.codeLifetime, 600);
    assert.equal(config.device.interval, 5);
  });

  it('derives the default issuer from PORT and strips a trailing slash from TESSERA_ISSUER', () => {
    assert.equal(loadConfig({ PORT: '9000' }).issuer, 'http://localhost:9000');
    assert.equal(loadConfig({ TESSERA_ISSUER: 'https://auth.example.com/tenant/' }).issuer, 'https://auth.example.com/tenant');
  });

  for (const [env, setting] of [
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ TESSERA_ISSUER: 'http://auth.example.com' }, 'TESSERA_ISSUER'],
    [{ TESSERA_ISSUER: 'https://auth.example.com/?x=1' }, 'TESSERA_ISSUER'],
    [{ TESSERA_ISSUER: 'not a url' }, 'TESSERA_ISSUER'],
    [{ TESSERA_DATABASE: 'mysql://db/x' }, 'TESSERA_DATABASE'],
    [{ TESSERA_LOG_LEVEL: 'loud' }, 'TESSERA_LOG_LEVEL'],
    [{ TESSERA_TRUST_PROXY: 'maybe' }, 'TESSERA_TRUST_PROXY'],
    [{ TESSERA_ACCESS_TOKEN_TTL: '5' }, 'TESSERA_ACCESS_TOKEN_TTL'],
    [{ TESSERA_WORKERS: '0' }, 'TESSERA_WORKERS'],
    [{ TESSERA_ACCESS_TOKEN_ALG: 'HS256' }, 'TESSERA_ACCESS_TOKEN_ALG'],
  ] as const) {
    it(`names ${setting} when it is wrong (${JSON.stringify(env)})`, () => {
      assert.throws(() => loadConfig(env), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${setting}:`));
    });
  }

  it('accepts a postgres URL', () => {
    assert.equal(loadConfig({ TESSERA_DATABASE: 'postgres://u@db:5432/tessera' }).database, 'postgres://u@db:5432/tessera');
  });
});

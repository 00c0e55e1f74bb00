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
    assert.deepEqual(config.secondFactor, {
      required: false,
      ceremonyTimeout: 300,
      consoleReauthenticate: 900,
      accountReauthenticate: 900,
      pendingSignInTimeout: 300,
    });
  });

  it('turns TESSERA_REQUIRE_SECOND_FACTOR on with on, true, yes or 1', () => {
    for (const value of ['on', 'true', 'YES', '1']) assert.equal(loadConfig({ TESSERA_REQUIRE_SECOND_FACTOR: value }).secondFactor.required, true);
    assert.equal(loadConfig({ TESSERA_REQUIRE_SECOND_FACTOR: 'off' }).secondFactor.required, false);
  });

  it('derives the default issuer from PORT and strips a trailing slash from TESSERA_ISSUER', () => {
    assert.equal(loadConfig({ PORT: '9000' }).issuer, 'http://localhost:9000');
    assert.equal(loadConfig({ TESSERA_ISSUER: 'https://auth.example.com/' }).issuer, 'https://auth.example.com');
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
    [{ TESSERA_TRUST_PROXY: '10.0.0.0/33' }, 'TESSERA_TRUST_PROXY'],
    [{ TESSERA_TRUST_PROXY: '10.0.0.1,proxy.internal' }, 'TESSERA_TRUST_PROXY'],
    [{ TESSERA_ACCESS_TOKEN_TTL: '5' }, 'TESSERA_ACCESS_TOKEN_TTL'],
    [{ TESSERA_WORKERS: '0' }, 'TESSERA_WORKERS'],
    [{ TESSERA_ACCESS_TOKEN_ALG: 'HS256' }, 'TESSERA_ACCESS_TOKEN_ALG'],
    [{ TESSERA_ACCESS_TOKEN_TTL: '600', TESSERA_PUBLIC_ACCESS_TOKEN_TTL: '900' }, 'TESSERA_PUBLIC_ACCESS_TOKEN_TTL'],
    [{ TESSERA_REFRESH_TOKEN_TTL: '30 days' }, 'TESSERA_REFRESH_TOKEN_TTL'],
    [{ TESSERA_REFRESH_TOKEN_TTL: '3600', TESSERA_REFRESH_TOKEN_IDLE_TTL: '7200' }, 'TESSERA_REFRESH_TOKEN_IDLE_TTL'],
    [{ TESSERA_PASSWORD_HASH: 'cheap' }, 'TESSERA_PASSWORD_HASH'],
    [{ TESSERA_REQUIRE_SECOND_FACTOR: 'sometimes' }, 'TESSERA_REQUIRE_SECOND_FACTOR'],
    [{ TESSERA_WEBAUTHN_TIMEOUT: '5' }, 'TESSERA_WEBAUTHN_TIMEOUT'],
    [{ TESSERA_SECOND_FACTOR_TIMEOUT: 'five minutes' }, 'TESSERA_SECOND_FACTOR_TIMEOUT'],
    [{ TESSERA_PASSWORD_HASH: 'm=65536,t=3' }, 'TESSERA_PASSWORD_HASH'],
    [{ TESSERA_PASSWORD_HASH: 'm=16,t=1,p=4' }, 'TESSERA_PASSWORD_HASH'],
    [{ TESSERA_PASSWORD_HASH: 'm=65536,t=0,p=4' }, 'TESSERA_PASSWORD_HASH'],
    [{ TESSERA_CLIENT_JWKS_TIMEOUT_MS: '50' }, 'TESSERA_CLIENT_JWKS_TIMEOUT_MS'],
    [{ TESSERA_CLIENT_JWKS_TIMEOUT_MS: 'soon' }, 'TESSERA_CLIENT_JWKS_TIMEOUT_MS'],
    [{ TESSERA_CLIENT_JWKS_CACHE_TTL: '-1' }, 'TESSERA_CLIENT_JWKS_CACHE_TTL'],
    [{ TESSERA_CLIENT_JWKS_REFETCH_INTERVAL: '3601' }, 'TESSERA_CLIENT_JWKS_REFETCH_INTERVAL'],
    [{ TESSERA_CLIENT_ASSERTION_MAX_LIFETIME: '10' }, 'TESSERA_CLIENT_ASSERTION_MAX_LIFETIME'],
    [{ TESSERA_CLIENT_ASSERTION_AUDIENCE: 'token-endpoint' }, 'TESSERA_CLIENT_ASSERTION_AUDIENCE'],
  ] as const) {
    it(`names ${setting} when it is wrong (${JSON.stringify(env)})`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${setting}:`),
      );
    });
  }

  it('reads TESSERA_TRUST_PROXY as true, false, or the proxies to believe', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ TESSERA_TRUST_PROXY: 'true' }).trustProxy, true);
    assert.deepEqual(loadConfig({ TESSERA_TRUST_PROXY: '10.0.0.0/8, 192.0.2.10,fd00::/8 , Loopback' }).trustProxy, [
      '10.0.0.0/8',
      '192.0.2.10',
      'fd00::/8',
      'loopback',
    ]);
  });

  it('keeps refresh tokens 90 days from approval and 30 days idle by default, and reads both settings', () => {
    assert.deepEqual([loadConfig({}).lifetimes.refreshToken, loadConfig({}).lifetimes.refreshTokenIdle], [90 * 86400, 30 * 86400]);
    const set = loadConfig({ TESSERA_REFRESH_TOKEN_TTL: '86400', TESSERA_REFRESH_TOKEN_IDLE_TTL: '3600' }).lifetimes;
    assert.deepEqual([set.refreshToken, set.refreshTokenIdle], [86400, 3600]);
    // A lifetime shorter than the default idle time caps the idle time.
    assert.equal(loadConfig({ TESSERA_REFRESH_TOKEN_TTL: '86400' }).lifetimes.refreshTokenIdle, 86400);
  });

  it('hashes passwords with argon2id m=46 MiB, t=1, p=1 by default (OWASP), and reads TESSERA_PASSWORD_HASH', () => {
    assert.deepEqual(loadConfig({}).passwordHash, { memory: 47104, passes: 1, parallelism: 1 });
    assert.deepEqual(loadConfig({ TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1' }).passwordHash, { memory: 8, passes: 1, parallelism: 1 });
    assert.deepEqual(loadConfig({ TESSERA_PASSWORD_HASH: ' m=19456, t=2, p=1 ' }).passwordHash, { memory: 19456, passes: 2, parallelism: 1 });
  });

  it('checks DPoP proofs within 60 s, without nonces, and keeps a request_uri 60 s by default; reads the settings', () => {
    const defaults = loadConfig({});
    assert.deepEqual(defaults.dpop, { proofWindow: 60, nonces: false, nonceLifetime: 300 });
    assert.deepEqual(defaults.par, { requestLifetime: 60, interactionLifetime: 600, required: false });
    const set = loadConfig({
      TESSERA_DPOP_PROOF_WINDOW: '30',
      TESSERA_DPOP_NONCES: 'true',
      TESSERA_DPOP_NONCE_LIFETIME: '120',
      TESSERA_PAR_TTL: '90',
      TESSERA_PAR_INTERACTION_TTL: '300',
      TESSERA_REQUIRE_PAR: 'yes',
    });
    assert.deepEqual(set.dpop, { proofWindow: 30, nonces: true, nonceLifetime: 120 });
    assert.deepEqual(set.par, { requestLifetime: 90, interactionLifetime: 300, required: true });
    for (const [setting, value] of [
      ['TESSERA_DPOP_PROOF_WINDOW', '0'],
      ['TESSERA_DPOP_PROOF_WINDOW', '601'],
      ['TESSERA_DPOP_NONCES', 'sometimes'],
      ['TESSERA_DPOP_NONCE_LIFETIME', '5'],
      ['TESSERA_PAR_TTL', '601'],
      ['TESSERA_PAR_INTERACTION_TTL', 'ten'],
      ['TESSERA_REQUIRE_PAR', '2'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [setting]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(setting),
        `${setting}=${value}`,
      );
    }
  });

  it('has the sign-in, user code, device authorization and retention limits of docs/security.md by default', () => {
    const config = loadConfig({});
    assert.deepEqual(
      { ...config.signIn, hashThreads: 0 },
      {
        windowSeconds: 900,
        perUserAddress: 10,
        perAddress: 100,
        freeFailures: 5,
        delayMs: 1000,
        maxDelayMs: 30000,
        hashThreads: 0,
        hashNice: 10,
        queue: 32,
        queuePerAddress: 4,
        goodRecordSeconds: 30 * 86400,
      },
    );
    assert.ok(config.signIn.hashThreads >= 1);
    assert.deepEqual(config.userCode, {
      windowSeconds: 600,
      perBrowser: 5,
      perAddress: 20,
      perNetwork: 60,
      perLargeNetwork: 240,
      globalPerMinute: 600,
      globalDelayMs: 2000,
    });
    assert.deepEqual(config.deviceAuthorizationLimits, { perClientPerMinute: 600, perAddressPerMinute: 30 });
    assert.equal(config.passkeyCeremoniesPerAddressPerMinute, 300);
    assert.equal(config.grantRetentionSeconds, 7 * 86400);
    assert.throws(() => loadConfig({ TESSERA_USER_CODE_FAILURES_PER_ADDRESS: '2' }), /TESSERA_USER_CODE_FAILURES_PER_ADDRESS: must be between 5/);
    assert.throws(() => loadConfig({ TESSERA_KEY_ENCRYPTION_KEY: 'short' }), /TESSERA_KEY_ENCRYPTION_KEY: each key must be 32 bytes/);
  });

  it('checks private_key_jwt clients with a 3 s JWKS timeout, a 5-minute cache, refetches 10 s apart, hour-long assertions and the issuer as aud by default', () => {
    assert.deepEqual(loadConfig({}).clientAuth, {
      jwksTimeoutMs: 3000,
      jwksCacheSeconds: 300,
      jwksRefetchSeconds: 10,
      assertionMaxLifetimeSeconds: 3600,
      assertionAudience: 'issuer',
    });
    assert.deepEqual(
      loadConfig({
        TESSERA_CLIENT_JWKS_TIMEOUT_MS: '500',
        TESSERA_CLIENT_JWKS_CACHE_TTL: '0',
        TESSERA_CLIENT_JWKS_REFETCH_INTERVAL: '60',
        TESSERA_CLIENT_ASSERTION_MAX_LIFETIME: '120',
        TESSERA_CLIENT_ASSERTION_AUDIENCE: 'Legacy',
      }).clientAuth,
      { jwksTimeoutMs: 500, jwksCacheSeconds: 0, jwksRefetchSeconds: 60, assertionMaxLifetimeSeconds: 120, assertionAudience: 'legacy' },
    );
    assert.equal(loadConfig({ TESSERA_CLIENT_ASSERTION_AUDIENCE: 'issuer' }).clientAuth.assertionAudience, 'issuer');
  });

  it('reads TESSERA_MAIL_FROM as an address, or a name and an address, the name unquoted as RFC 5322 §3.2.4 quotes it', () => {
    const from = (value: string) => loadConfig({ TESSERA_MAIL_FROM: value }).mail.from;
    assert.deepEqual(from('no-reply@example.com'), { name: '', address: 'no-reply@example.com' });
    assert.deepEqual(from('Example <no-reply@example.com>'), { name: 'Example', address: 'no-reply@example.com' });
    assert.deepEqual(from('"Tessera, Ltd." <no-reply@example.com>'), { name: 'Tessera, Ltd.', address: 'no-reply@example.com' });
    assert.deepEqual(from('"The \\"Best\\" Site" <a@example.com>'), { name: 'The "Best" Site', address: 'a@example.com' });
    assert.throws(() => from('Example\r\nBcc: x@example.com <a@example.com>'), ConfigError, 'a line break would write a header');
  });

  it('accepts a postgres URL', () => {
    assert.equal(loadConfig({ TESSERA_DATABASE: 'postgres://u@db:5432/tessera' }).database, 'postgres://u@db:5432/tessera');
  });

  it('keeps 10 PostgreSQL connections and 5-second time limits by default, and reads the three settings', () => {
    assert.deepEqual(loadConfig({}).postgres, { poolSize: 10, statementTimeoutSeconds: 5, connectTimeoutSeconds: 5 });
    const set = loadConfig({
      TESSERA_DATABASE_POOL_SIZE: '25',
      TESSERA_DATABASE_STATEMENT_TIMEOUT: '2',
      TESSERA_DATABASE_CONNECT_TIMEOUT: '3',
    }).postgres;
    assert.deepEqual(set, { poolSize: 25, statementTimeoutSeconds: 2, connectTimeoutSeconds: 3 });
  });

  for (const [setting, value] of [
    ['TESSERA_DATABASE_POOL_SIZE', '0'],
    ['TESSERA_DATABASE_POOL_SIZE', 'ten'],
    ['TESSERA_DATABASE_STATEMENT_TIMEOUT', '0'],
    ['TESSERA_DATABASE_STATEMENT_TIMEOUT', '1.5'],
    ['TESSERA_DATABASE_CONNECT_TIMEOUT', '0'],
    ['TESSERA_DATABASE_CONNECT_TIMEOUT', '5s'],
  ] as const) {
    it(`names ${setting} when it is wrong (${JSON.stringify(value)})`, () => {
      assert.throws(
        () => loadConfig({ [setting]: value }),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${setting}:`),
      );
    });
  }
});

/**
 * Private signing keys are encrypted at rest under a key that is not in
 * the database, and the database, its WAL and its directory are the owner's alone.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it, type TestContext } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { loadConfig } from '../src/config/index.ts';
import { startServer } from '../src/main.ts';
import { openStore } from '../src/store/open.ts';
import { TEST_ENV } from './helpers/server.ts';

type Running = Awaited<ReturnType<typeof startServer>>;

/** Starts a server that the test stops when it ends, passed or failed. */
async function serve(t: TestContext, config: Parameters<typeof startServer>[0]): Promise<Running> {
  const server = await startServer(config);
  t.after(() => server.close());
  return server;
}

/** Asserts that the server refuses to start; one that starts anyway is stopped at once. */
async function refusesToStart(config: Parameters<typeof startServer>[0], message: RegExp): Promise<void> {
  await assert.rejects(
    startServer(config).then((server) => server.close()),
    message,
  );
}

describe('signing keys at rest', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-keys-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const config = (database: string, env: Record<string, string> = {}) =>
    loadConfig({ ...TEST_ENV, PORT: '0', HOST: '127.0.0.1', TESSERA_DATABASE: database, TESSERA_LOG_LEVEL: 'silent', ...env });

  /** Every `d` (the private exponent or scalar) of a private JWK found in the database files. */
  function clearPrivateKeys(database: string): string[] {
    const found: string[] = [];
    const db = new DatabaseSync(database, { readOnly: true });
    try {
      for (const row of db.prepare('SELECT private_jwk FROM signing_keys').all() as { private_jwk: string }[]) {
        const jwk = JSON.parse(row.private_jwk) as Record<string, unknown>;
        if (typeof jwk['d'] === 'string') found.push(jwk['d']);
      }
    } finally {
      db.close();
    }
    return found;
  }

  it('creates the data directory 0700, the database and its WAL 0600, and a 0600 key file beside them; no private key is in clear', async (t) => {
    // The default ./data/tessera.db, the one database whose directory a start creates (any
    // other path in a directory that does not exist is refused: test/start-up.test.ts).
    const home = join(dir, 'fresh');
    mkdirSync(home);
    const data = join(home, 'data');
    const database = join(data, 'tessera.db');
    const cwd = process.cwd();
    process.chdir(home);
    const server = await serve(t, config(join('data', 'tessera.db'))).finally(() => process.chdir(cwd));
    // A write, so the WAL exists.
    await server.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    assert.equal(statSync(data).mode & 0o777, 0o700);
    const files = readdirSync(data);
    for (const name of ['tessera.db', 'tessera.db-wal', 'tessera.db.key']) {
      assert.ok(files.includes(name), `${name} in ${files.join(', ')}`);
      assert.equal(statSync(join(data, name)).mode & 0o777, 0o600, name);
    }
    assert.deepEqual(clearPrivateKeys(database), []);
    // The key file is one 32-byte key, and it is not inside the database.
    const kek = readFileSync(join(data, 'tessera.db.key'), 'utf8').trim();
    assert.equal(Buffer.from(kek, 'base64url').length, 32);
    for (const name of files.filter((file) => file.startsWith('tessera.db') && file !== 'tessera.db.key')) {
      assert.equal(readFileSync(join(data, name)).includes(kek), false, name);
    }
  });

  it('encrypts the clear keys of an existing database when it opens, and signs with them still', async (t) => {
    const database = join(dir, 'old.db');
    // A database as the previous version left it: a key stored in clear.
    const store = await openStore(database);
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const kid = 'old-es256';
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: 'ES256' };
    const now = Date.now();
    await store.keys.add({
      kid,
      alg: 'ES256',
      privateJwk,
      publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
      createdAt: now,
      activatesAt: now,
      retiresAt: null,
      expiresAt: null,
    });
    await store.close();
    assert.deepEqual(clearPrivateKeys(database), [privateJwk.d]);

    const server = await serve(t, config(database));
    assert.deepEqual(clearPrivateKeys(database), []);
    const jwks = (await server.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as { keys: { kid: string }[] };
    assert.ok(
      jwks.keys.some((key) => key.kid === kid),
      'the old key is still published',
    );
  });

  it('refuses to start with a key file others can read, its group included, or with the wrong key', async () => {
    const database = join(dir, 'strict.db');
    const first = await startServer(config(database));
    await first.close();
    const { chmodSync } = await import('node:fs');
    chmodSync(`${database}.key`, 0o644);
    await refusesToStart(config(database), /can be read by other users: run chmod 600/);
    // The group's members are other users of the machine too.
    chmodSync(`${database}.key`, 0o640);
    await refusesToStart(config(database), /can be read by other users: run chmod 600/);
    chmodSync(`${database}.key`, 0o600);
    await refusesToStart(
      config(database, { TESSERA_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64url') }),
      /were encrypted with a key encryption key Tessera was not given \(id [\w-]+\); it was given TESSERA_KEY_ENCRYPTION_KEY: add the key they were encrypted with/,
    );
  });

  it('rotates the key encryption key: new first, old after it, and every key is encrypted again under the new one', async (t) => {
    const database = join(dir, 'rotate.db');
    const old = randomBytes(32).toString('base64url');
    const fresh = randomBytes(32).toString('base64url');
    await (await startServer(config(database, { TESSERA_KEY_ENCRYPTION_KEY: old }))).close();
    await (await startServer(config(database, { TESSERA_KEY_ENCRYPTION_KEY: `${fresh},${old}` }))).close();
    await serve(t, config(database, { TESSERA_KEY_ENCRYPTION_KEY: fresh }));
    assert.equal(existsSync(`${database}.key`), false, 'no key file when the key is given');
  });
});

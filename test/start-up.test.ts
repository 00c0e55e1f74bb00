/**
 * Start-up tells the truth: a misspelt TESSERA_* variable, a database path in a
 * directory that does not exist or a file name misspelt in one that does, a port in use, an address this machine does not have and an
 * unreachable PostgreSQL each stop the start with one line naming the setting to change, and
 * nothing is created; a start that succeeds says what it serves, from which store (and whether
 * it just created it), where it listens, and, for an https issuer with no trusted proxy, that
 * TLS must be terminated in front of it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import { DatabaseSync } from 'node:sqlite';
import { prepareKeys } from '../src/main.ts';
import { describeDatabase, openStore, parseDatabase } from '../src/store/open.ts';
import { openSqliteStore } from '../src/store/sqlite/store.ts';
import { newUserRecord } from '../src/store/types.ts';
import { BEFORE_UNIQUE_EMAILS } from './store/unique-emails.ts';
import { closeServer, listenOnFreePort, TEST_ENV } from './helpers/server.ts';
import { COMPILE_CACHE_ENV, NODE_FLAGS, runTessera } from './helpers/cli.ts';

const MAIN = join(new URL('..', import.meta.url).pathname, 'src/main.ts');

interface Started {
  readonly code: number | null;
  /** The signal that ended it, where one did (a crash, or a signal sent before its handlers were in place). */
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `npm start`'s program with `env` (on top of the test settings, none of the runner's
 * TESSERA_* variables but the ones the check leaves alone). Waits for it to exit, or, once it
 * logs that it serves, for `whenServing` and then stops it.
 */
function start(env: Readonly<Record<string, string>>, whenServing?: (stdout: string) => boolean): Promise<Started> {
  const child = spawn(process.execPath, [...NODE_FLAGS, MAIN], {
    env: { PATH: process.env['PATH'] ?? '', ...COMPILE_CACHE_ENV, ...TEST_ENV, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  // Bounded as a command's exit is (README, Development): a start that hangs is killed.
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  // One SIGINT: the server stops at the first, and a second (sent on a later chunk of the log)
  // would find no handler left and kill it with no exit status.
  let stopping = false;
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (!stopping && stdout.includes('Tessera is serving') && (whenServing === undefined || whenServing(stdout))) {
      stopping = true;
      child.kill('SIGINT');
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Log records (pino JSON lines) as their messages. */
const messages = (stdout: string) =>
  stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { msg: string }).msg);

/** A refusal: exit status 1 and exactly one line on standard error. */
function assertOneLineRefusal(result: Started, pattern: RegExp): void {
  assert.equal(result.code, 1, `exit status (stderr: ${result.stderr})`);
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
  assert.match(lines[0]!, pattern);
}

describe('start-up', { concurrency: true }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-start-up-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * The first start on a new SQLite file, with a wrapper's TESSERA_* variable beside the
   * settings, stopped once it has warned of it (the warning follows the line that it serves):
   * the start of two tests, the log of a fresh start and the warning, made once by whichever
   * asks first (a start costs about 0.45 s of CPU).
   */
  const freshDatabase = join(dir, 'fresh', 'tessera.db');
  const warnedOfIgnored = (stdout: string) => messages(stdout).some((message) => message.startsWith('TESSERA_IMAGE_TAG: not a Tessera setting, so ignored;'));
  let freshStart: Promise<Started> | undefined;
  const firstFreshStart = () =>
    (freshStart ??= Promise.resolve().then(() => {
      mkdirSync(dirname(freshDatabase));
      return start({ TESSERA_DATABASE: freshDatabase, TESSERA_LOG_LEVEL: 'info', TESSERA_IMAGE_TAG: '1.4' }, warnedOfIgnored);
    }));

  it('stops at a misspelt TESSERA_* variable, naming the closest real one, and creates nothing', async () => {
    const home = mkdtempSync(join(dir, 'misspelt-'));
    const result = await start({ TESSERA_DATABASE: join(home, 'tessera.db'), TESSERA_ACESS_TOKEN_TTL: '600' });
    assertOneLineRefusal(
      result,
      /^tessera: invalid setting TESSERA_ACESS_TOKEN_TTL: is not a Tessera setting; did you mean TESSERA_ACCESS_TOKEN_TTL\? \(TESSERA_ALLOW_UNKNOWN_SETTINGS=true/,
    );
    assert.deepEqual(readdirSync(home), [], 'no database or key file');
  });

  it('refuses a TESSERA_* variable close to a setting, naming the setting; lets the test and CLI ones pass', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (error) {
        if (error instanceof ConfigError) return error.message;
        throw error;
      }
      return null;
    };
    for (const [name, near] of [
      ['TESSERA_ISUER', 'TESSERA_ISSUER'],
      ['TESSERA_LOGLEVEL', 'TESSERA_LOG_LEVEL'],
      ['TESSERA_WORKER', 'TESSERA_WORKERS'],
      ['TESSERA_DATABASE_URL', 'TESSERA_DATABASE'],
      ['TESSERA_PORT', 'PORT'],
      ['TESSERA_HOST', 'HOST'],
    ] as const) {
      assert.equal(
        refusal({ [name]: '8080' }),
        `${name}: is not a Tessera setting; did you mean ${near}? (TESSERA_ALLOW_UNKNOWN_SETTINGS=true ignores unknown TESSERA_* variables)`,
      );
    }
    assert.deepEqual(
      loadConfig({ TESSERA_CLIENT_SECRET: 's', TESSERA_TEST_POSTGRES_URL: 'postgres://x', TESSERA_CHROMIUM: '/usr/bin/chromium' }).ignoredVariables,
      [],
    );
  });

  it("starts past a TESSERA_* variable close to no setting (a wrapper's own), to be warned about; TESSERA_ALLOW_UNKNOWN_SETTINGS lets all pass quietly", () => {
    const wrapper = { TESSERA_IMAGE_TAG: '1.4', TESSERA_BACKUP_DIR: '/backups', TESSERA_SERVICE_ACCOUNT: 'tessera' };
    assert.deepEqual(loadConfig(wrapper).ignoredVariables, ['TESSERA_IMAGE_TAG', 'TESSERA_BACKUP_DIR', 'TESSERA_SERVICE_ACCOUNT']);
    const allowed = loadConfig({ ...wrapper, TESSERA_ISUER: 'x', TESSERA_ALLOW_UNKNOWN_SETTINGS: 'true' });
    assert.deepEqual([allowed.issuer, allowed.ignoredVariables], ['http://localhost:8080', []]);
  });

  it("takes the variables Kubernetes gives a pod for a Service named tessera as the platform's, neither refused nor warned about", () => {
    const links = {
      TESSERA_SERVICE_HOST: '10.96.0.12',
      TESSERA_SERVICE_PORT: '80',
      TESSERA_SERVICE_PORT_HTTP: '80',
      TESSERA_PORT: 'tcp://10.96.0.12:80',
      TESSERA_PORT_80_TCP: 'tcp://10.96.0.12:80',
      TESSERA_PORT_80_TCP_PROTO: 'tcp',
      TESSERA_PORT_80_TCP_PORT: '80',
      TESSERA_PORT_80_TCP_ADDR: '10.96.0.12',
      TESSERA_METRICS_SERVICE_HOST: '10.96.0.13',
    };
    assert.deepEqual(loadConfig(links).ignoredVariables, []);
  });

  it('warns in the start log about a TESSERA_* variable it ignores', async () => {
    const result = await firstFreshStart();
    assert.equal(result.stderr, '');
    assert.ok(warnedOfIgnored(result.stdout), result.stdout);
  });

  it('warns at every start about accounts the upgrade to unique e-mail addresses left without theirs, until each is changed', async () => {
    const home = mkdtempSync(join(dir, 'shared-address-'));
    const database = join(home, 'tessera.db');
    const store = openSqliteStore(database);
    for (const [i, username] of ['keeper', 'loser'].entries())
      await store.users.create(newUserRecord({ id: `id-${username}`, username, passwordHash: '!', email: `${username}@example.com`, createdAt: 1000 + i }));
    await store.close();
    const db = new DatabaseSync(database);
    for (const statement of [...BEFORE_UNIQUE_EMAILS, "UPDATE users SET email = 'Shared@example.com'"]) db.exec(statement);
    db.close();
    const warned = (stdout: string) =>
      messages(stdout).some((message) =>
        message.startsWith('1 account(s) lost their e-mail address at the upgrade to unique addresses, as another account had it: loser (kept by keeper).'),
      );
    const first = await start({ TESSERA_DATABASE: database }, warned);
    assert.ok(warned(first.stdout), first.stdout);
    assert.ok(warned((await start({ TESSERA_DATABASE: database }, warned)).stdout), 'again at the next start');
    const changed = await runTessera(['user', 'update', 'loser', '--email', 'loser@example.com'], { ...TEST_ENV, TESSERA_DATABASE: database });
    assert.equal(changed.code, 0, changed.stderr);
    const after = await start({ TESSERA_DATABASE: database });
    assert.ok(!messages(after.stdout).some((message) => message.includes('lost their e-mail address')), after.stdout);
  });

  it('refuses an issuer with a path, whose endpoints would answer 404, naming TESSERA_ISSUER', () => {
    assert.throws(
      () => loadConfig({ TESSERA_ISSUER: 'https://example.com/auth' }),
      (error: unknown) => error instanceof ConfigError && /^TESSERA_ISSUER: must have no path.*use "https:\/\/example\.com"/.test(error.message),
    );
    assert.equal(loadConfig({ TESSERA_ISSUER: 'https://auth.example.com/' }).issuer, 'https://auth.example.com');
  });

  it('refuses an SQLite path whose directory does not exist (a misspelt path) instead of creating an empty database', async () => {
    const home = mkdtempSync(join(dir, 'typo-'));
    const result = await start({ TESSERA_DATABASE: join(home, 'tesera', 'tessera.db'), TESSERA_DATABASE_CREATE: 'false' });
    assertOneLineRefusal(
      result,
      /^tessera: cannot start: TESSERA_DATABASE: .*tesera\/tessera\.db: the directory .*tesera does not exist; correct the path, or set TESSERA_DATABASE_CREATE=true/,
    );
    assert.deepEqual(readdirSync(home), []);
  });

  it('refuses a TESSERA_DATABASE that is a directory with one line naming the setting (not a raw EISDIR), and writes nothing there', async () => {
    const home = mkdtempSync(join(dir, 'directory-'));
    const result = await start({ TESSERA_DATABASE: home });
    assertOneLineRefusal(
      result,
      new RegExp(
        `^tessera: cannot start: TESSERA_DATABASE: ${home}: is a directory, not a database file; name the file in it, e\\.g\\. ${join(home, 'tessera.db')}$`,
      ),
    );
    const listed = await runTessera(['user', 'list'], { TESSERA_DATABASE: home });
    assert.equal(listed.code, 1);
    assert.match(listed.stderr, /^tessera: invalid setting TESSERA_DATABASE: .*: is a directory, not a database file/);
    assert.deepEqual(readdirSync(home), []);
  });

  it('stops cleanly on a SIGINT that arrives the moment it says it serves: its signal handlers are in place before the line', async () => {
    const home = mkdtempSync(join(dir, 'signal-at-line-'));
    // The process signals itself from inside the write of that line (pino writes with
    // fs.writeSync or fs.write), the earliest a supervisor reading it could: a handler
    // installed after the line would come too late, and the signal would kill it.
    const preload = join(home, 'signal-on-serving.mjs');
    writeFileSync(
      preload,
      `import fs from 'node:fs';
for (const name of ['writeSync', 'write']) {
  const original = fs[name];
  fs[name] = function (fd, data, ...rest) {
    const result = original.call(this, fd, data, ...rest);
    if (fd === 1 && String(data).includes('Tessera is serving')) process.kill(process.pid, 'SIGINT');
    return result;
  };
}
`,
    );
    const child = spawn(process.execPath, [...NODE_FLAGS, '--import', preload, MAIN], {
      env: { PATH: process.env['PATH'] ?? '', ...COMPILE_CACHE_ENV, ...TEST_ENV, HOST: '127.0.0.1', PORT: '0', TESSERA_DATABASE: join(home, 'tessera.db') },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('close', (...ended) => resolve(ended)));
    clearTimeout(timer);
    assert.deepEqual([code, signal], [0, null], `exit status 0, not killed by the signal; stderr: ${stderr}`);
  });

  it('refuses a database whose signing keys need a key encryption key it was not given, naming the key file it read, and writes no new key file', async () => {
    const home = mkdtempSync(join(dir, 'lost-key-'));
    const database = join(home, 'tessera.db');
    // Made in this process as a start makes it (prepareKeys, which main.ts runs): its signing
    // keys encrypted under a new key file beside it. A start of its own cost about 0.45 s of CPU.
    const config = loadConfig({ ...TEST_ENV, TESSERA_DATABASE: database, TESSERA_DATABASE_CREATE: 'true' });
    const store = await openStore(config.database);
    await prepareKeys(config, store).finally(() => store.close());
    assert.ok(existsSync(`${database}.key`), 'the key file was made');
    // The key file lost (not restored with the database from a backup, say).
    rmSync(`${database}.key`);
    const result = await start({ TESSERA_DATABASE: database });
    assertOneLineRefusal(
      result,
      new RegExp(
        `^tessera: cannot start: TESSERA_KEY_ENCRYPTION_KEY: the signing keys in the database were encrypted with a key encryption key Tessera was not given \\(id [\\w-]+\\); it looked for the key file ${database}\\.key, which does not exist: restore it from the backup taken with the database, or set TESSERA_KEY_ENCRYPTION_KEY or TESSERA_KEY_FILE$`,
      ),
    );
    assert.equal(existsSync(`${database}.key`), false, 'no new key file left behind, to be taken for the real one');
  });

  it('refuses a misspelt SQLite file name in a directory that exists, naming TESSERA_DATABASE_CREATE, and creates nothing', async () => {
    const home = mkdtempSync(join(dir, 'misnamed-'));
    const made = await runTessera(['client', 'list'], { TESSERA_DATABASE: join(home, 'tessera.db') });
    assert.equal(made.code, 0, made.stderr);
    const before = readdirSync(home).sort();
    const result = await start({ TESSERA_DATABASE: join(home, 'tesera.db'), TESSERA_DATABASE_CREATE: 'false' });
    assertOneLineRefusal(
      result,
      /^tessera: cannot start: TESSERA_DATABASE: .*\/tesera\.db does not exist; correct the path, or set TESSERA_DATABASE_CREATE=true to create a new, empty database there$/,
    );
    // A command is refused the same way: `user list` would otherwise answer "no users" from a new file.
    const listed = await runTessera(['user', 'list'], { TESSERA_DATABASE: join(home, 'tesera.db'), TESSERA_DATABASE_CREATE: 'false' });
    assert.equal(listed.code, 1);
    assert.match(listed.stderr, /^tessera: invalid setting TESSERA_DATABASE: .*\/tesera\.db does not exist; .*TESSERA_DATABASE_CREATE=true/);
    assert.deepEqual(readdirSync(home).sort(), before, 'no new database or key file');
    // With the setting, the new database is made, and the log says so.
    const created = await start({ TESSERA_DATABASE: join(home, 'tesera.db'), TESSERA_DATABASE_CREATE: 'true', TESSERA_LOG_LEVEL: 'info' });
    assert.match(messages(created.stdout).find((message) => message.startsWith('Tessera is serving')) ?? '', /tesera\.db \(created now: it did not exist\)$/);
  });

  it('words each refusal of `tessera serve` as `npm start` does', async () => {
    const home = mkdtempSync(join(dir, 'same-words-'));
    const { server, port } = await listenOnFreePort();
    try {
      const cases: Record<string, string>[] = [
        { TESSERA_DATABASE: join(home, 'tessera.db'), TESSERA_ACESS_TOKEN_TTL: '600' },
        { TESSERA_DATABASE: join(home, 'missing', 'tessera.db'), TESSERA_DATABASE_CREATE: 'false' },
        { TESSERA_DATABASE: join(home, 'tesera.db'), TESSERA_DATABASE_CREATE: 'false' },
        { TESSERA_DATABASE: join(home, 'tessera.db'), PORT: String(port) },
      ];
      for (const env of cases) {
        const started = await start(env);
        const served = await runTessera(['serve'], { HOST: '127.0.0.1', PORT: '0', ...env });
        assert.equal(served.code, 1, served.stderr);
        assert.equal(served.stderr, started.stderr, JSON.stringify(env));
        assert.match(served.stderr, /^tessera: (invalid setting|cannot start:) [A-Z_]+: /);
      }
      assert.deepEqual(readdirSync(home), []);
    } finally {
      await closeServer(server);
    }
  });

  it('logs the issuer, the SQLite file and that it was just created, and where it listens; the next start says it was there', async () => {
    const first = await firstFreshStart();
    assert.equal(first.stderr, '');
    const line = messages(first.stdout).find((message) => message.startsWith('Tessera is serving'));
    assert.match(
      line ?? '',
      new RegExp(
        `^Tessera is serving http://127\\.0\\.0\\.1:\\d+ \\(listening on http://127\\.0\\.0\\.1:\\d+\\) from the SQLite database ${freshDatabase} \\(created now: it did not exist\\)$`,
      ),
    );
    const second = await start({ TESSERA_DATABASE: freshDatabase, TESSERA_LOG_LEVEL: 'info' });
    const again = messages(second.stdout).find((message) => message.startsWith('Tessera is serving'));
    assert.match(again ?? '', new RegExp(`from the SQLite database ${freshDatabase}$`));
    assert.ok(!messages(first.stdout).some((message) => /TLS/.test(message)), 'an http loopback issuer needs no TLS reminder');
  });

  it('names the PostgreSQL host and database in the log, never the password', () => {
    const text = describeDatabase(parseDatabase('postgres://tessera:s3cret@db.internal:6543/auth?schema=prod&sslmode=require'));
    assert.equal(text, 'the PostgreSQL database auth on db.internal:6543, schema prod');
    assert.doesNotMatch(text, /s3cret|tessera:/);
  });

  it('refuses an unreachable PostgreSQL with one line naming TESSERA_DATABASE, host and database, without the password', async () => {
    const { server, port } = await listenOnFreePort();
    await closeServer(server);
    const result = await start({
      TESSERA_DATABASE: `postgres://postgres:s3cret@127.0.0.1:${port}/nowhere`,
      TESSERA_DATABASE_CONNECT_TIMEOUT: '2',
      TESSERA_KEY_FILE: join(dir, 'pg.key'),
    });
    assertOneLineRefusal(
      result,
      new RegExp(`^tessera: cannot start: TESSERA_DATABASE: cannot open the PostgreSQL database nowhere on 127\\.0\\.0\\.1:${port}: `),
    );
    assert.doesNotMatch(result.stderr, /s3cret/);
  });

  it('refuses a port in use naming PORT, before creating the database', async () => {
    const home = mkdtempSync(join(dir, 'port-'));
    const { server, port } = await listenOnFreePort();
    try {
      const result = await start({ PORT: String(port), TESSERA_DATABASE: join(home, 'tessera.db') });
      assertOneLineRefusal(result, new RegExp(`^tessera: cannot start: PORT: port ${port} is already in use on 127\\.0\\.0\\.1: set PORT to a free port`));
      assert.deepEqual(readdirSync(home), []);
    } finally {
      await closeServer(server);
    }
  });

  it('refuses a HOST this machine does not have, naming HOST', async () => {
    const home = mkdtempSync(join(dir, 'host-'));
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
    const result = await start({ HOST: '192.0.2.1', PORT: '18080', TESSERA_DATABASE: join(home, 'tessera.db') });
    assertOneLineRefusal(result, /^tessera: cannot start: HOST: cannot listen on "192\.0\.2\.1": it is not an address of this machine/);
    assert.deepEqual(readdirSync(home), []);
  });

  it('reminds that TLS must be terminated in front of an https issuer, unless a proxy is trusted', async () => {
    const home = mkdtempSync(join(dir, 'tls-'));
    const database = join(home, 'tessera.db');
    const reminded = (stdout: string) =>
      messages(stdout).some((message) =>
        /^the issuer is https but Tessera serves plain HTTP .*terminate TLS in front of it.*TESSERA_TRUST_PROXY/.test(message),
      );
    const bare = await start({ TESSERA_ISSUER: 'https://auth.example.com', TESSERA_DATABASE: database, TESSERA_LOG_LEVEL: 'info' }, reminded);
    assert.ok(reminded(bare.stdout), bare.stdout);
    const proxied = await start({
      TESSERA_ISSUER: 'https://auth.example.com',
      TESSERA_TRUST_PROXY: 'loopback',
      TESSERA_DATABASE: database,
      TESSERA_LOG_LEVEL: 'info',
    });
    assert.equal(proxied.stderr, '');
    assert.ok(!reminded(proxied.stdout), proxied.stdout);
  });
});

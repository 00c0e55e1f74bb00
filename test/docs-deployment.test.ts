/**
 * docs/deployment.md's "Running two instances", run as written (its settings lacked
 * the key encryption key, so the second instance could not read the keys the first encrypted):
 * the settings file is read from the page, only the host-specific values are replaced (the
 * database by a schema of the test PostgreSQL, the key by a fresh one as `openssl rand
 * -base64 32` makes, the address and port by loopback and a free port), the registration
 * commands are the page's, and two instances then serve the same keys under the page's issuer.
 * Then the rest of the page: the by-hand `serve` command is what started them, and the
 * systemd unit runs the same command with the same settings file and directory (checked by
 * systemd-analyze, since systemd cannot run here); the `curl` checks, the key rotation and the
 * `pg_dump`/`pg_restore` backup are run as written against them; and each SQLite backup line
 * makes a copy that opens as the database.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { runTessera, serveTessera, type ServingCommand } from './helpers/cli.ts';
import { which } from './helpers/machine.ts';
import { databaseSetting, describePostgres, dropSchema, newSchema, postgresUrl } from './helpers/postgres.ts';

const DEPLOYMENT = readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8');

/** The fenced blocks of `language`. */
function blocks(language: string): string[] {
  return [...DEPLOYMENT.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1]!);
}

/** The fenced block of `language` whose first line is `firstLine` (and that `includes`, when given). */
function block(language: string, firstLine: string, includes = ''): string {
  const found = blocks(language).find((body) => body.startsWith(firstLine) && body.includes(includes));
  assert.ok(found, `docs/deployment.md has a ${language} block starting ${firstLine}`);
  return found;
}

/** Runs a line of the page in bash (in `cwd`), with `env` and this machine's PATH. */
async function bash(line: string, cwd: string, env: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)('bash', ['-c', line], { cwd, env: { PATH: process.env['PATH'] ?? '', ...env } });
}

/** The checkout, where the page's `node bin/tessera.js` runs. */
const REPO = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

const tool = (name: string) => which(name) !== undefined;

/** A shell line's words, with '…' and "…" quoting (all the page's commands use). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

describePostgres('docs/deployment.md: two instances on PostgreSQL, as written', () => {
  const schema = newSchema();
  const instances: ServingCommand[] = [];
  let env: Record<string, string>;

  before(() => {
    // The settings file, KEY="VALUE" a line, as systemd and the shell read it.
    const file = block('sh', '# /etc/tessera/tessera.env');
    const settings = Object.fromEntries([...file.matchAll(/^([A-Z_]+)="([^"]*)"$/gm)].map((match) => [match[1]!, match[2]!]));
    assert.ok('TESSERA_KEY_ENCRYPTION_KEY' in settings, 'the instances share the key that encrypts the signing keys');
    assert.match(block('sh', 'openssl rand -base64 32'), /^openssl rand -base64 32\n$/);
    const { HOST: _host, PORT: _port, PGPASSWORD: _password, ...shared } = settings;
    env = {
      ...shared,
      TESSERA_DATABASE: databaseSetting(schema),
      TESSERA_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    };
  });
  after(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
    await dropSchema(schema);
  });

  it("registers the app and the user with the page's commands, then serves the same keys from both instances", async () => {
    const commands = block('sh', 'set -a; . /etc/tessera/tessera.env; set +a\nnode')
      .split('\n')
      .filter((line) => line.includes('bin/tessera.js'));
    assert.equal(commands.length, 2);
    for (const line of commands) {
      const [before, after] = line.split('bin/tessera.js ');
      const stdin = /^echo '([^']*)' \|/.exec(before!)?.[1];
      const result = await runTessera(words(after!), env, stdin === undefined ? '' : `${stdin}\n`);
      assert.equal(result.code, 0, `${line}\n${result.stderr}`);
    }

    instances.push(await serveTessera([], env));
    instances.push(await serveTessera([], env));
    const [a, b] = instances;
    const keys = await Promise.all([a!, b!].map(async (instance) => (await fetch(`${instance.url}/.well-known/jwks.json`)).json()));
    assert.deepEqual(keys[1], keys[0], 'same keys');
    const discovery = (await (await fetch(`${b!.url}/.well-known/openid-configuration`)).json()) as { issuer: string };
    assert.equal(discovery.issuer, 'https://auth.example.com');
    for (const instance of instances) assert.equal((await fetch(`${instance.url}/healthz`)).status, 200);
  });

  it("starts each instance with the page's serve command, which the systemd unit runs too", async () => {
    const serve = block('sh', 'set -a; . /etc/tessera/tessera.env; set +a\nnode', ' serve').split('\n')[1]!;
    // What serveTessera started above: this Node (with the test's own flags), the command line and `serve`.
    const command = ['bin/tessera.js', 'serve'];
    assert.deepEqual(words(serve), ['node', ...command]);
    const unit = block('ini', '# /etc/systemd/system/tessera.service');
    const setting = (name: string) => new RegExp(`^${name}=(.*)$`, 'm').exec(unit)?.[1];
    assert.deepEqual(words(setting('ExecStart')!), ['/usr/bin/node', ...command]);
    assert.equal(setting('EnvironmentFile'), /^# (\S+)/.exec(block('sh', '# /etc/tessera/tessera.env'))![1]);
    assert.equal(setting('WorkingDirectory'), /^cd (\S+) && npm ci --omit=dev$/m.exec(block('sh', 'cd '))![1]);
    assert.equal(setting('Restart'), 'on-failure', 'the page says an instance that cannot reach the database is started again');
    assert.match(block('sh', 'systemctl '), /^systemctl daemon-reload && systemctl enable --now tessera\n$/, 'the unit is tessera.service');
    if (tool('systemd-analyze')) {
      // systemd's own check of the unit, with this machine's node, checkout and a settings file.
      const dir = mkdtempSync(join(tmpdir(), 'tessera-unit-'));
      try {
        writeFileSync(join(dir, 'tessera.env'), block('sh', '# /etc/tessera/tessera.env'));
        const local = unit
          .replace('/usr/bin/node', process.execPath)
          .replace(/^WorkingDirectory=.*$/m, `WorkingDirectory=${new URL('..', import.meta.url).pathname}`)
          .replace(/^EnvironmentFile=.*$/m, `EnvironmentFile=${join(dir, 'tessera.env')}`)
          .replace(/^User=.*$/m, 'User=root');
        writeFileSync(join(dir, 'tessera.service'), local);
        const { stderr } = await promisify(execFile)('systemd-analyze', ['verify', join(dir, 'tessera.service')]);
        assert.equal(
          stderr
            .split('\n')
            .filter((line) => line.includes('tessera.service'))
            .join('\n'),
          '',
          'systemd-analyze verify',
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it("answers the page's curl checks: both instances healthy, the same keys, the issuer in discovery", async () => {
    const [a, b] = instances;
    const check = block('sh', 'curl -s http://10.0.1.11:8080/healthz')
      .replaceAll('http://10.0.1.11:8080', a!.url)
      .replaceAll('http://10.0.1.12:8080', b!.url)
      .replaceAll('https://auth.example.com', a!.url);
    const { stdout } = await bash(check, tmpdir());
    assert.equal(stdout.match(/\{"status":"ok"\}/g)?.length, 2, stdout);
    assert.match(stdout, /same keys\n/);
    assert.equal((JSON.parse(stdout.slice(stdout.indexOf('same keys\n') + 'same keys\n'.length)) as { issuer: string }).issuer, 'https://auth.example.com');
  });

  it("rotates the keys with the page's command: both instances publish the new ones at once", async () => {
    const jwks = async (url: string) =>
      ((await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid).sort();
    const before = await jwks(instances[0]!.url);
    const line = block('sh', 'set -a; . /etc/tessera/tessera.env; set +a\nnode', 'keys rotate').split('\n')[1]!;
    const result = await runTessera(words(line.split('bin/tessera.js ')[1]!), env);
    assert.equal(result.code, 0, result.stderr);
    const [a, b] = await Promise.all(instances.map((instance) => jwks(instance.url)));
    assert.ok(a!.length > before.length && before.every((kid) => a!.includes(kid)), 'new keys published beside the old');
    assert.deepEqual(b, a);
  });

  it("backs up with the page's pg_dump and restores with its pg_restore: what was written since is gone, the keys are back", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-pg-backup-'));
    const url = 'postgres://tessera@db.internal:5432/tessera?sslmode=verify-full';
    const local = (line: string) => line.replaceAll(url, postgresUrl).replace('--schema=tessera', `--schema=${schema}`);
    try {
      const keys = await (await fetch(`${instances[0]!.url}/.well-known/jwks.json`)).json();
      const dump = block('sh', 'pg_dump ');
      assert.ok(dump.includes(url) && dump.includes('--schema=tessera'));
      await bash(local(dump), dir);
      const [file] = readdirSync(dir);
      assert.match(file!, /^tessera-\d{4}-\d\d-\d\d\.dump$/);
      const later = await runTessera(['user', 'add', '--username', 'bob', '--password-stdin'], env, 'a long password\n');
      assert.equal(later.code, 0, later.stderr);

      // "To restore, stop the instances, then:"
      await Promise.all(instances.splice(0).map((instance) => instance.stop()));
      const restore = block('sh', 'pg_restore ');
      await bash(local(restore).replace(/tessera-\d{4}-\d\d-\d\d\.dump/, file!), dir);
      const users = JSON.parse((await runTessera(['user', 'list', '--json'], env)).stdout) as { username: string }[];
      assert.deepEqual(
        users.map((user) => user.username),
        ['alice'],
        'bob was added after the backup',
      );
      instances.push(await serveTessera([], env));
      assert.deepEqual(
        await (await fetch(`${instances[0]!.url}/.well-known/jwks.json`)).json(),
        keys,
        "the keys are the backup's, and decrypt with the same key",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the key and the key file in Backups', () => {
    const backups = DEPLOYMENT.slice(DEPLOYMENT.indexOf('## Backups'), DEPLOYMENT.indexOf('## What scales how'));
    assert.match(backups, /TESSERA_KEY_ENCRYPTION_KEY/);
    assert.match(backups, /key file \(`TESSERA_KEY_FILE`: `data\/tessera\.db\.key`/);
  });
});

describe('docs/deployment.md: the SQLite backups, as written', {
  skip: tool('sqlite3') || process.env['CI'] ? false : 'the sqlite3 tool is not installed (.ci/run installs it)',
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-sqlite-backup-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('each line makes a backup that opens as the database, while the server could be running', async () => {
    mkdirSync(join(dir, 'data'));
    const env = { TESSERA_DATABASE: join(dir, 'data', 'tessera.db') };
    const added = await runTessera(['user', 'add', '--username', 'alice', '--password-stdin'], env, 'a long password\n');
    assert.equal(added.code, 0, added.stderr);
    const lines = block('sh', 'sqlite3 data/tessera.db')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'));
    assert.equal(lines.length, 3);
    for (const [index, line] of lines.entries()) {
      // Each line is a way of its own: each writes to a backups directory of its own.
      const backups = join(dir, `backups-${index}`);
      mkdirSync(backups);
      const local = line
        .replaceAll("'/backups/", `'${backups}/`)
        .replace(/^node bin\//, `${process.execPath} ${REPO}/bin/`)
        .replace(/^node /, `${process.execPath} `);
      assert.notEqual(local, line, 'the line writes to /backups');
      await bash(local, dir);
      const [file] = readdirSync(backups);
      assert.ok(file, `${line} wrote a backup`);
      const users = await runTessera(['user', 'list', '--json'], { TESSERA_DATABASE: join(backups, file) });
      assert.equal(users.code, 0, users.stderr);
      assert.deepEqual(
        (JSON.parse(users.stdout) as { username: string }[]).map((user) => user.username),
        ['alice'],
        line,
      );
    }
  });
});

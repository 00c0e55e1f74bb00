/**
 * docs/deployment.md's "Running two instances", run as written (issue 31: its settings lacked
 * the key encryption key, so the second instance could not read the keys the first encrypted):
 * the settings file is read from the page, only the host-specific values are replaced (the
 * database by a schema of the test PostgreSQL, the key by a fresh one as `openssl rand
 * -base64 32` makes, the address and port by loopback and a free port), the registration
 * commands are the page's, and two instances then serve the same keys under the page's issuer.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, it } from 'node:test';
import { runTessera, serveTessera, type ServingCommand } from './helpers/cli.ts';
import { databaseSetting, describePostgres, dropSchema, newSchema } from './helpers/postgres.ts';

const DEPLOYMENT = readFileSync(new URL('../docs/deployment.md', import.meta.url), 'utf8');

/** The fenced block of `language` whose first line is `firstLine`. */
function block(language: string, firstLine: string): string {
  const found = [...DEPLOYMENT.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((match) => match[1]!).find((body) => body.startsWith(firstLine));
  assert.ok(found, `docs/deployment.md has a ${language} block starting ${firstLine}`);
  return found;
}

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

  it('registers the app and the user with the page\'s commands, then serves the same keys from both instances', async () => {
    const commands = block('sh', 'set -a; . /etc/tessera/tessera.env; set +a\nnode').split('\n').filter((line) => line.includes('src/cli/main.ts'));
    assert.equal(commands.length, 2);
    for (const line of commands) {
      const [before, after] = line.split('src/cli/main.ts ');
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

  it('names the key and the key file in Backups', () => {
    const backups = DEPLOYMENT.slice(DEPLOYMENT.indexOf('## Backups'), DEPLOYMENT.indexOf('## What scales how'));
    assert.match(backups, /TESSERA_KEY_ENCRYPTION_KEY/);
    assert.match(backups, /key file \(`TESSERA_KEY_FILE`: `data\/tessera\.db\.key`/);
  });
});

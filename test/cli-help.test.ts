/**
 * A command line that helps: a mistake is one line naming it and the help to read;
 * `tessera help`, `tessera help GROUP` and `tessera GROUP --help` show the commands; a close
 * misspelling is named; `--user` names a user everywhere; `keys list` shows the signing keys;
 * `user unlock` lifts a person's lockouts, as the lockout page tells them to ask for.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { scratchDatabase } from './helpers/scratch.ts';
import { FormBrowser } from './helpers/browser.ts';
import { signInQuery } from './helpers/fixtures.ts';
import { text } from './helpers/device.ts';
import { runTessera, tessera } from './helpers/cli.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

/** A refusal: exit 2, one line on standard error ending with the help to read. */
function assertOneLine(result: { code: number; stderr: string }, pattern: RegExp): void {
  assert.equal(result.code, 2, result.stderr);
  assert.equal(result.stderr.split('\n').length, 2, `one line, got:\n${result.stderr}`);
  assert.match(result.stderr.trimEnd(), pattern);
}

describe('tessera help and one-line mistakes', () => {
  const { env } = scratchDatabase('tessera-cli-help-');

  it("shows every command with `tessera help`, and one group's with `tessera help user` or `tessera user --help`", async () => {
    const all = await runTessera(['help'], env);
    assert.equal(all.code, 0);
    assert.match(all.stdout, /^Usage: tessera <command> \[options\]/);
    assert.match(all.stdout, / {2}client add --name NAME/);
    assert.match(all.stdout, / {2}user unlock USERNAME/);
    const group = await runTessera(['help', 'user'], env);
    assert.equal(group.code, 0);
    assert.match(group.stdout, /^Usage: tessera user <command> \[options\]\n/);
    assert.match(group.stdout, / {2}user add --username NAME --password-stdin/);
    assert.match(group.stdout, / {2}user reset-second-factor USERNAME/);
    assert.doesNotMatch(group.stdout, /client add|keys rotate|events \[/, 'only the user commands');
    assert.equal((await runTessera(['user', '--help'], env)).stdout, group.stdout);
    assert.equal((await runTessera(['user', 'add', '--help'], env)).stdout, group.stdout);
    assert.match((await runTessera(['help', 'keys'], env)).stdout, /keys list \[--json\][\s\S]*keys rotate/);
  });

  it("prints the version with `tessera --version` and `tessera -v`: package.json's", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const result = await tessera([flag]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `tessera ${version}\n`);
    }
    assert.match((await runTessera(['help'], env)).stdout, /`tessera --version` \(or `-v`\) prints Tessera's version/);
  });

  it('answers a group alone with one line listing its commands', async () => {
    assertOneLine(await runTessera(['user'], env), /^tessera: user needs a command: add, list, show, .*unlock; run `tessera help user`$/);
  });

  it('names the closest command or option to a misspelt one, in one line', async () => {
    assertOneLine(await runTessera(['usr', 'list'], env), /^tessera: unknown command "usr" \(did you mean `tessera user`\?\); run `tessera help`$/);
    assertOneLine(await runTessera(['user', 'ad'], env), /^tessera: unknown command "user ad" \(did you mean `tessera user add`\?\); run `tessera help user`$/);
    assertOneLine(
      await runTessera(['user', 'add', '--usrname', 'x', '--password-stdin'], env, 'a long password\n'),
      /^tessera: unknown option --usrname \(did you mean --username\?\); run `tessera help user`$/,
    );
    assertOneLine(await runTessera(['frobnicate'], env), /^tessera: unknown command "frobnicate"; run `tessera help`$/);
    // An option that is a secret read from standard input, or a setting, says which;
    // a missing value is said as the other mistakes are.
    assertOneLine(
      await runTessera(['user', 'add', '--username', 'x', '--password', 'hunter2'], env),
      /^tessera: unknown option --password \(did you mean --password-stdin\? it is read from standard input, never taken as an argument\); run `tessera help user`$/,
    );
    assertOneLine(
      await runTessera(['serve', '--port', '9999'], env),
      /^tessera: unknown option --port \(it is a setting: PORT=\.\.\. in the environment\); run `tessera help serve`$/,
    );
    // The value typed is never repeated: a setting's may be a secret, and standard error is kept in logs.
    for (const [args, setting] of [
      [['serve', '--smtp-url', 'smtps://u:S3cret@h'], 'TESSERA_SMTP_URL'],
      [['serve', '--smtp-url=smtps://u:S3cret@h'], 'TESSERA_SMTP_URL'],
      [['serve', '--key-encryption-key', 'S3cretKeyMaterial'], 'TESSERA_KEY_ENCRYPTION_KEY'],
    ] as const) {
      const refused = await runTessera(args, env);
      assertOneLine(refused, new RegExp(`^tessera: unknown option --[a-z-]+ \\(it is a setting: ${setting}=\\.\\.\\. in the environment\\)`));
      assert.doesNotMatch(refused.stderr + refused.stdout, /S3cret/);
    }
    assertOneLine(await runTessera(['user', 'add', '--username'], env), /^tessera: option --username needs a value; run `tessera help user`$/);
    assertOneLine(await runTessera(['help', 'clients'], env), /^tessera: no command "clients" \(did you mean `tessera client`\?\); run `tessera help`$/);
  });

  it('reports a value an operation refuses in one line, not the whole usage', async () => {
    assertOneLine(
      await runTessera(['client', 'add', '--name', 'X', '--redirect-uri', 'http://app.example/cb'], env),
      /^tessera: --redirect-uri .*; run `tessera help client`$/,
    );
  });

  it('takes --user wherever a user is named: grant list as events (and --username as before)', async () => {
    assert.equal((await runTessera(['user', 'add', '--username', 'ada', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    const byUser = await runTessera(['grant', 'list', '--user', 'ada'], env);
    assert.equal(byUser.code, 0, byUser.stderr);
    assert.match(byUser.stdout, /^ada has approved nothing/);
    assert.equal((await runTessera(['grant', 'list', '--username', 'ada'], env)).stdout, byUser.stdout);
    assert.equal((await runTessera(['events', '--user', 'ada'], env)).code, 0);
    assertOneLine(await runTessera(['grant', 'list'], env), /^tessera: --user is required; run `tessera help grant`$/);
  });

  it('lists the signing keys with `keys list`: which signs, and a rotated one waiting to sign', async () => {
    const server = await startTestServer({ database: env['TESSERA_DATABASE']! });
    await server.close();
    const before = await runTessera(['keys', 'list', '--json'], env);
    assert.equal(before.code, 0, before.stderr);
    const keys = JSON.parse(before.stdout) as { kid: string; alg: string; state: string }[];
    assert.deepEqual(keys.map((key) => [key.alg, key.state]).sort(), [
      ['ES256', 'signing'],
      ['RS256', 'signing'],
    ]);
    assert.equal((await runTessera(['keys', 'rotate'], env)).code, 0);
    const after = await runTessera(['keys', 'list'], env);
    const lines = after.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 4, after.stdout);
    assert.equal(lines.filter((line) => / {2}signing {2}/.test(line)).length, 2);
    assert.equal(lines.filter((line) => / {2}published, signs from \d{4}-/.test(line)).length, 2);
  });
});

describe('tessera user unlock', () => {
  const scratch = scratchDatabase('tessera-unlock-');
  let server: TestServer;
  let query: URLSearchParams;

  before(async () => {
    server = await startTestServer({ database: scratch.database });
    const client = await server.addClient({ scopes: ['openid'] });
    query = await signInQuery(client);
  });
  after(() => server.close());

  it('lifts a sign-in lockout that the lockout page told the person to ask for; an unknown user is one line', async () => {
    const user = await server.addUser({ username: 'locked_out' });
    const browser = new FormBrowser(server.url);
    const page = await browser.request(`/oauth/authorize?${query}`);
    for (let i = 0; i < server.config.signIn.perUserAddress; i++) {
      assert.equal((await browser.submit(page, '/login', { username: user.username, password: 'guess' })).status, 401);
    }
    const refused = await browser.submit(page, '/login', { username: user.username, password: user.password });
    assert.equal(refused.status, 429);
    assert.match(text(refused), /Wait 15 minutes, then try again, or ask your administrator to unlock your account\./);

    const unlocked = await runTessera(['user', 'unlock', 'Locked_Out'], scratch.env);
    assert.equal(unlocked.code, 0, unlocked.stderr);
    assert.match(unlocked.stdout, /^Unlocked locked_out: cleared 2 counters of wrong passwords and codes \(1 refusing sign-in\)\.$/m);
    assert.equal((await browser.submit(page, '/login', { username: user.username, password: user.password })).status, 303);
    const again = await runTessera(['user', 'unlock', 'locked_out'], scratch.env);
    assert.match(again.stdout, /^locked_out was not locked out/);

    const nobody = await runTessera(['user', 'unlock', 'nobody'], scratch.env);
    assert.equal(nobody.code, 1);
    assert.equal(nobody.stderr, 'tessera: no user named nobody\n');
  });
});

/**
 * The shell blocks of docs/operations.md, docs/device-flow.md and docs/apis.md, run as written
 * (docs that work as written), each `tessera` command in-process against a test
 * server's database with the ids the commands before it printed; the introspection `curl` is
 * run by bash with the API's secret and a token the page's openid-client call obtained. What
 * cannot run here is checked for naming real things: the alert rules' metrics and labels, and
 * every `tessera …` command the pages name in passing (README.md and docs/*.md), whose command
 * and options must be in `tessera help`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as client from 'openid-client';
import { run, USAGE } from '../src/cli/main.ts';
import { groupHelp, groups } from '../src/cli/help.ts';
import { EVENT_TYPES } from '../src/core/events.ts';
import { Metrics } from '../src/http/metrics.ts';
import { BrowserAt } from './helpers/device.ts';
import { runTessera } from './helpers/cli.ts';
import { startTestServer, TEST_ENV, type TestServer, type TestUser } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const read = (name: string) => readFileSync(new URL(`../${name}`, import.meta.url), 'utf8');

/** The fenced blocks of `language` in a page. */
function blocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);
}

/** A block's command lines: continuations joined, `# comments` dropped, blank lines skipped. */
function lines(code: string): string[] {
  return code
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#\s.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** A shell line's words, with '…' and "…" quoting (all the pages' commands use). */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

/** The arguments of a `tessera` command line, as written with either prefix. */
function tesseraArgs(line: string): string[] {
  const prefix = /^(?:npm run --silent tessera -- |tessera )/.exec(line);
  assert.ok(prefix, `a tessera command: ${line}`);
  return words(line.slice(prefix[0].length));
}

describe('docs/operations.md, docs/device-flow.md and docs/apis.md: the shell blocks, run as written', () => {
  let server: TestServer;
  let user: TestUser;
  let env: Record<string, string>;

  before(async () => {
    server = await startTestServer();
    user = await server.addUser({ username: 'alice', name: 'Alice Liddell' });
    env = { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url };
  });
  after(() => server?.close());

  /** Runs one documented `tessera` command; it must succeed. */
  async function tessera(args: readonly string[]): Promise<string> {
    const result = await runTessera(args, env);
    assert.equal(result.code, 0, `tessera ${args.join(' ')}\n${result.stderr}`);
    return result.stdout;
  }

  it('operations.md: makes the first administrator, who then holds the console role', async () => {
    const [code] = blocks(read('docs/operations.md'), 'sh').filter((block) => block.includes('--role admin'));
    const [add, role] = lines(code!);
    const piped = /^echo '([^']+)' \| (.*)$/.exec(add!);
    assert.ok(piped, `the password goes in on standard input: ${add}`);
    const added = await runTessera(tesseraArgs(piped[2]!), env, `${piped[1]}\n`);
    assert.equal(added.code, 0, added.stderr);
    await tessera(tesseraArgs(role!));
    const ada = await server.store.users.findByUsername('ada');
    assert.equal(ada?.role, 'admin');
    assert.equal(ada?.name, 'Ada Lovelace');
  });

  it('operations.md: reads the audit trail by user, by type and by application', async () => {
    const [code] = blocks(read('docs/operations.md'), 'sh').filter((block) => block.includes('tessera events'));
    const commands = lines(code!).map(tesseraArgs);
    assert.equal(commands.length, 3);
    // Something for each to find: a sign-in of alice's to an application.
    const app = await server.addClient({ name: 'My App' });
    const browser = new BrowserAt(server.url);
    await browser.signIn(await browser.follow(await browser.request('/login?return_to=%2Faccount')), user);
    for (const args of commands) {
      const stdout = await tessera(args.map((arg) => (arg === 'CLIENT_ID' ? app.clientId : arg)));
      if (args.includes('--json')) assert.ok(Array.isArray(JSON.parse(stdout)));
      if (args.includes('alice')) assert.match(stdout, /signin\.succeeded/);
    }
  });

  it('operations.md: the alert rules name metrics, labels and event types Tessera has', async () => {
    const [rules] = blocks(read('docs/operations.md'), 'yaml');
    const metrics = new Metrics();
    const known = new Map((await metrics.registry.getMetricsAsJSON()).map((metric) => [metric.name, metric]));
    const named = [...rules!.matchAll(/\b(tessera_\w+|http_request_duration_seconds)(?:_count|_bucket|_sum)?\b(?:\{([^}]*)\})?/g)];
    assert.ok(named.length >= 4);
    for (const [, name, labels] of named) {
      assert.ok(known.has(name!), `metric ${name}`);
      const labelNames = (metrics.registry.getSingleMetric(name!) as unknown as { labelNames: readonly string[] }).labelNames;
      for (const [, label] of (labels ?? '').matchAll(/(\w+)=/g)) assert.ok(labelNames.includes(label!), `${name} has the label ${label}`);
    }
    for (const [, type] of rules!.matchAll(/tessera events --type ([\w.]+)/g)) assert.ok((EVENT_TYPES as readonly string[]).includes(type!), type);
  });

  it('device-flow.md: registers the TV and signs it in with device-login, approved in a browser', async () => {
    const [code] = blocks(read('docs/device-flow.md'), 'sh');
    const [start, add, login] = lines(code!);
    assert.equal(start, 'npm start');
    assert.match(JSON.parse(read('package.json')).scripts.start, /src\/main\.ts$/);
    const added = await tessera(tesseraArgs(add!));
    const id = /client_id: +(\S+)/.exec(added)![1]!;
    const secret = /client_secret: +(\S+)/.exec(added)![1]!;

    // device-login waits for a person: this one approves once the code is printed.
    let stdout = '';
    let stderr = '';
    let printed: (code: string) => void = () => {};
    const userCode = new Promise<string>((resolve) => (printed = resolve));
    const args = tesseraArgs(login!).map((arg) => (arg === 'ID' ? id : arg === 'SECRET' ? secret : arg));
    const exited = run(args, {
      stdout: (text) => {
        stdout += text;
        const found = /\b([A-Z]{4}-[A-Z]{4})\b/.exec(stdout);
        if (found) printed(found[1]!);
      },
      stderr: (text) => (stderr += text),
      stdin: async () => '',
      env: { TESSERA_LOG_LEVEL: 'silent', ...TEST_ENV, ...env },
    });
    await new BrowserAt(server.url).decide(await within(userCode, 'device-login to print the code'), user, 'approve');
    assert.equal(await within(exited, 'device-login to finish'), 0, stderr);
    assert.match(stdout, /"sub": "[^"]+"/);
    assert.match(stdout, /Alice Liddell/);
  });

  it('apis.md: registers the API and both clients, and the API introspects a client credentials token with curl', async () => {
    const doc = read('docs/apis.md');
    const [resourceAdd, printer, nightly, introspect] = blocks(doc, 'sh');
    // The synopsis's [optional] parts are all given.
    const resource = JSON.parse(await tessera(tesseraArgs(lines(resourceAdd!)[0]!.replace(/[[\]]/g, '')))) as {
      identifier: string;
      introspection_secret: string;
      access_token_ttl: number | null;
    };
    assert.equal(resource.identifier, 'https://api.example.com');
    assert.equal(resource.access_token_ttl, 600);
    await tessera(tesseraArgs(lines(printer!)[0]!));
    const added = await tessera(tesseraArgs(lines(nightly!)[0]!));
    const clientId = /client_id: +(\S+)/.exec(added)![1]!;
    const clientSecret = /client_secret: +(\S+)/.exec(added)![1]!;

    // The page's openid-client lines, told only that the local issuer may be plain http.
    const grant = blocks(doc, 'js').find((code) => code.includes('clientCredentialsGrant'))!;
    const body = grant
      .replace(
        "new URL('https://auth.example.com'), clientId, clientSecret)",
        'new URL(issuer), clientId, clientSecret, undefined, { execute: [client.allowInsecureRequests] })',
      )
      .concat('\nreturn tokens;');
    assert.notEqual(body, `${grant}\nreturn tokens;`, 'the example discovers https://auth.example.com');
    const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (
      ...args: string[]
    ) => (...values: unknown[]) => Promise<client.TokenEndpointResponse>;
    const tokens = await new AsyncFunction('client', 'issuer', 'clientId', 'clientSecret', body)(client, server.url, clientId, clientSecret);

    const curl = lines(introspect!)[0]!.replace('https://auth.example.com', server.url);
    const { stdout } = await promisify(execFile)('bash', ['-c', curl], {
      env: { PATH: process.env['PATH'] ?? '', SECRET: resource.introspection_secret, ACCESS_TOKEN: tokens.access_token },
    });
    const answer = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(answer['active'], true, stdout);
    assert.equal(answer['client_id'], clientId);
    assert.equal(answer['scope'], 'photos:read');
    const wrong = await promisify(execFile)('bash', ['-c', `${curl} -s -o /dev/null -w '%{http_code}'`], {
      env: { PATH: process.env['PATH'] ?? '', SECRET: 'not-the-secret', ACCESS_TOKEN: tokens.access_token },
    });
    assert.equal(wrong.stdout, '401', 'a wrong secret is invalid_client');
  });
});

describe('every `tessera …` command the README and docs name in passing is a real command with real options', () => {
  it('finds each command and option in `tessera help`', async () => {
    const pages = [
      'README.md',
      ...readdirSync(new URL('../docs/', import.meta.url))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    const problems: string[] = [];
    let seen = 0;
    for (const page of pages) {
      for (const [, command] of read(page).matchAll(/`(?:npm run --silent tessera -- |tessera )([a-z][^`]*)`/g)) {
        const [group, ...rest] = command!.split(/\s+/);
        if (group === 'help' || group === '<command>') continue;
        seen += 1;
        const help = groups(USAGE).includes(group!) ? groupHelp(USAGE, group!) : null;
        if (help === null) {
          problems.push(`${page}: \`tessera ${command}\`: no command ${group}`);
          continue;
        }
        const sub = rest[0];
        // `user list|show|…`: each named subcommand; a placeholder (CAPITALS) or an option is not one.
        for (const name of sub && /^[a-z][a-z|-]*$/.test(sub) ? sub.split('|') : []) {
          if (!new RegExp(`^\\s+${group} ${name}\\b`, 'm').test(help)) problems.push(`${page}: \`tessera ${command}\`: no command ${group} ${name}`);
        }
        for (const [option] of command!.matchAll(/--[a-z][a-z-]*/g)) {
          if (option === '--help') continue;
          if (!help.includes(option) && !help.includes(option.replace(/^--no-/, '--[no-]')) && !help.includes(option.replace(/^--/, '--[no-]')))
            problems.push(`${page}: \`tessera ${command}\`: no option ${option}`);
        }
      }
    }
    assert.ok(seen >= 20, `found ${seen} commands`);
    assert.deepEqual(problems, []);
  });
});

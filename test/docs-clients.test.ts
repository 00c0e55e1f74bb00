/**
 * Runs the examples of docs/clients.md as written: each `sh` block's commands against the
 * test server's database, and each `js test=…` block as an application module, with the
 * server's address for https://auth.example.com and the credentials the command before it
 * printed for CLIENT_ID, CLIENT_SECRET and PRIVATE_KEY. The test plays the browser between
 * the sign-in button and /callback. The one change to the code: openid-client is told that
 * the local issuer may be plain http.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { basic, closeServer, listenOnFreePort, postForm, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

const DOC = new URL('../docs/clients.md', import.meta.url);
/** Where the example modules are written: inside node_modules, so that their imports resolve. */
// A directory of this process's own, removed after: the other docs tests, in other shards,
// write their modules beside it at the same time.
const MODULES = new URL(`../node_modules/.cache/tessera-docs/clients-${process.pid}/`, import.meta.url);

interface Block {
  readonly lang: string;
  readonly test: string | null;
  readonly code: string;
  readonly line: number;
}

function blocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w+)([^\n]*)\n([\s\S]*?)^```$/gm)].map((match) => ({
    lang: match[1]!,
    test: /\btest=([\w-]+)/.exec(match[2]!)?.[1] ?? null,
    code: match[3]!,
    line: markdown.slice(0, match.index).split('\n').length,
  }));
}

/** The commands of a `sh` block: continuation lines joined, words split as a shell would. */
function commands(code: string): string[][] {
  return code
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const prefix = 'npm run --silent tessera -- ';
      assert.ok(line.startsWith(prefix), `a tessera command: ${line}`);
      return [...line.slice(prefix.length).matchAll(/"([^"]*)"|(\S+)/g)].map((word) => word[1] ?? word[2]!);
    });
}

describe('the examples of docs/clients.md, run as written', () => {
  let dir: string;
  let server: TestServer;
  let user: TestUser;
  let env: Record<string, string>;
  let jwksFile: string;
  let shim: string;
  const examples = blocks(readFileSync(DOC, 'utf8'));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-docs-'));
    const database = join(dir, 'tessera.db');
    server = await startTestServer({ database });
    env = { TESSERA_DATABASE: database, TESSERA_ISSUER: server.url };
    user = await server.addUser({ username: 'ada' });
    // The key pair of the private_key_jwt example: the public half in jwks.json, the private
    // one handed to the code as PRIVATE_KEY.
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    jwksFile = join(dir, 'jwks.json');
    writeFileSync(jwksFile, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'ledger-1', alg: 'ES256' }] }));
    (globalThis as Record<string, unknown>)['__tesseraDocsPrivateKey'] = privateKey;
    mkdirSync(MODULES, { recursive: true });
    shim = new URL('openid-client.mjs', MODULES).href;
    writeFileSync(
      new URL(shim),
      `import * as client from 'openid-client';
export * from 'openid-client';
export function discovery(server, clientId, metadata, clientAuthentication, options) {
  return client.discovery(server, clientId, metadata, clientAuthentication, { ...options, execute: [...(options?.execute ?? []), client.allowInsecureRequests] });
}
`,
    );
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(MODULES, { recursive: true, force: true });
  });

  it('has examples for openid-client, passport-openidconnect and simple-oauth2 to run', () => {
    assert.deepEqual([...new Set(examples.flatMap((block) => block.test ?? []))].sort(), ['openid-client', 'passport', 'simple-oauth2']);
  });

  /** The example as a module: its placeholders filled in, and the names the test drives exported. */
  async function load(block: Block, client: { id: string; secret: string | null }, exports: readonly string[]): Promise<Record<string, unknown>> {
    const source = [
      `const CLIENT_ID = ${JSON.stringify(client.id)};`,
      `const CLIENT_SECRET = ${JSON.stringify(client.secret)};`,
      `const PRIVATE_KEY = globalThis.__tesseraDocsPrivateKey;`,
      block.code.replaceAll('https://auth.example.com', server.url).replaceAll("from 'openid-client'", `from '${shim}'`),
      `export { ${exports.join(', ')} };`,
    ].join('\n');
    const file = new URL(`example-${block.line}.mjs`, MODULES);
    writeFileSync(file, source);
    return (await import(file.href)) as Record<string, unknown>;
  }

  /** The browser: from the sign-in URL to the address it is sent back to, signing in and approving. */
  async function browse(url: string, redirectUri: RegExp): Promise<URL> {
    const page = await new FormBrowser(server.url).authorize(url, user);
    assert.match(page.location ?? '', redirectUri, page.html);
    return new URL(page.location!);
  }

  it('runs every command and every example in order', async () => {
    let client: { id: string; secret: string | null } | null = null;
    const ran: string[] = [];
    for (const block of examples) {
      const where = `docs/clients.md line ${block.line}`;
      if (block.lang === 'sh') {
        for (const args of commands(block.code)) {
          const filled = args.map((arg) => (arg === 'CLIENT_ID' ? client!.id : arg === 'jwks.json' ? jwksFile : arg));
          const result = await runTessera(filled, env);
          assert.equal(result.code, 0, `${where}: tessera ${args.join(' ')}\n${result.stderr}`);
          if (args[0] === 'client' && args[1] === 'add') {
            const id = /client_id:\s+(\S+)/.exec(result.stdout)?.[1];
            assert.ok(id, `${where}: prints the client_id`);
            client = { id, secret: /client_secret:\s+(\S+)/.exec(result.stdout)?.[1] ?? null };
          }
        }
        continue;
      }
      if (block.test === null) continue;
      assert.ok(client, `${where}: a client is registered first`);
      ran.push(block.test);

      if (block.test === 'openid-client') {
        const example = await load(block, client, ['url', 'callback']);
        const back = await browse(String(example['url']), /^(https:\/\/\w+\.example|http:\/\/127\.0\.0\.1:51234)\/callback\?code=/);
        const claims = (await (example['callback'] as (url: URL) => Promise<Record<string, unknown>>)(back)) ?? {};
        assert.equal(claims['sub'], user.id, where);
        assert.equal(claims['aud'], client.id, where);
      } else if (block.test === 'simple-oauth2') {
        const example = await load(block, client, ['url', 'callback']);
        const back = await browse(String(example['url']), /^https:\/\/mailer\.example\/callback\?code=/);
        const token = await (example['callback'] as (url: URL) => Promise<Record<string, string>>)(back);
        assert.equal(typeof token['refresh_token'], 'string', where);
        // revokeAll() revoked both tokens: neither refresh nor introspection finds them alive.
        const refresh = await postForm(
          `${server.url}/oauth/token`,
          { grant_type: 'refresh_token', refresh_token: token['refresh_token']! },
          { authorization: basic(client.id, client.secret!) },
        );
        assert.deepEqual([refresh.status, refresh.body['error']], [400, 'invalid_grant'], where);
        const introspection = await postForm(
          `${server.url}/oauth/introspect`,
          { token: token['access_token']! },
          { authorization: basic(client.id, client.secret!) },
        );
        assert.deepEqual(introspection.body, { active: false }, where);
      } else if (block.test === 'passport') {
        const example = await load(block, client, ['login', 'callback']);
        const signedIn = await passportSignIn(example['login'] as Middleware, example['callback'] as Middleware, (url) =>
          browse(url, /^https:\/\/intranet\.example\/callback\?code=/),
        );
        assert.equal(signedIn.status, 200, `${where}: ${signedIn.body}`);
        assert.equal((JSON.parse(signedIn.body) as { id: string }).id, user.id, where);
      } else {
        assert.fail(`${where}: no driver for test=${block.test}`);
      }
    }
    assert.deepEqual(ran, ['openid-client', 'openid-client', 'passport', 'simple-oauth2', 'openid-client']);
  });
});

type Middleware = (request: IncomingMessage, response: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * An application with passport's two routes, as express and express-session would host them:
 * the query parsed, one session. /login sends the browser to Tessera; the address it comes
 * back to is delivered to /callback.
 */
async function passportSignIn(login: Middleware, callback: Middleware, browse: (url: string) => Promise<URL>): Promise<{ status: number; body: string }> {
  const session: Record<string, unknown> = {};
  const app = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://app.invalid');
    Object.assign(request, { query: Object.fromEntries(url.searchParams), session });
    const route = url.pathname === '/login' ? login : callback;
    route(request, response, (error) => {
      if (error) response.writeHead(500).end(JSON.stringify({ error: (error as { code?: string }).code ?? String(error) }));
      else response.writeHead(200).end(JSON.stringify((request as unknown as { user: unknown }).user));
    });
  });
  const { server, port } = await listenOnFreePort(app);
  try {
    const started = await fetch(`http://127.0.0.1:${port}/login`, { redirect: 'manual' });
    assert.equal(started.status, 302, await started.text());
    const back = await browse(started.headers.get('location')!);
    const finished = await fetch(`http://127.0.0.1:${port}${back.pathname}${back.search}`, { redirect: 'manual' });
    return { status: finished.status, body: await finished.text() };
  } finally {
    await closeServer(server);
  }
}

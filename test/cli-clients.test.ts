import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { authorizeUrl } from './helpers/fixtures.ts';
import { databaseSetting, describePostgres, dropSchema, newSchema } from './helpers/postgres.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

interface Registered {
  readonly client_id: string;
  readonly client_secret?: string;
  readonly [field: string]: unknown;
}

/** Whether the token endpoint takes these credentials: an unknown refresh token gets invalid_grant once authenticated. */
async function authenticates(server: TestServer, clientId: string, secret: string): Promise<boolean> {
  const result = await postForm(
    `${server.url}/oauth/token`,
    { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) },
    { authorization: basic(clientId, secret) },
  );
  assert.ok(result.status === 400 || result.status === 401, JSON.stringify(result.body));
  return result.status === 400;
}

describe('managing clients after registration: client show, update and rotate-secret', () => {
  let dir: string;
  let server: TestServer;
  let env: Record<string, string>;
  let user: TestUser;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-clients-'));
    const database = join(dir, 'tessera.db');
    server = await startTestServer({ database });
    env = { TESSERA_DATABASE: database, TESSERA_ISSUER: server.url };
    user = await server.addUser({ username: 'ada' });
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function add(...args: string[]): Promise<Registered> {
    const result = await runTessera(['client', 'add', '--name', 'Printer', '--json', ...args], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Registered;
  }

  async function show(id: string): Promise<Record<string, unknown>> {
    const result = await runTessera(['client', 'show', id, '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Record<string, unknown>;
  }

  /** Opens the authorization endpoint for `redirectUri` and returns where the browser ends up. */
  async function authorizeAt(clientId: string, redirectUri: string): Promise<{ status: number; location: string | null }> {
    const url = authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, state: 's' });
    const browser = new FormBrowser(server.url);
    const first = await browser.follow(await browser.request(url.href));
    if (first.status !== 200 || !first.html.includes('action="/login"')) return { status: first.status, location: first.location };
    const decided = await browser.authorize(url.href, user);
    return { status: decided.status, location: decided.location };
  }

  it('registers a client_secret_post client, which openid-client authenticates with ClientSecretPost', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--auth-method', 'client_secret_post', '--grant', 'authorization_code');
    assert.equal(client['token_endpoint_auth_method'], 'client_secret_post');
    const config = await oidc.discovery(new URL(server.url), client.client_id, undefined, oidc.ClientSecretPost(client.client_secret!), {
      execute: [oidc.allowInsecureRequests],
    });
    await assert.rejects(
      oidc.genericGrantRequest(config, 'authorization_code', { code: 'x', redirect_uri: REDIRECT_URI, code_verifier: 'a'.repeat(43) }),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  it('registers and changes the single sign-on settings: first-party, post-logout redirect URIs, back-channel logout URI', async () => {
    const client = await add(
      '--redirect-uri',
      REDIRECT_URI,
      '--grant',
      'authorization_code',
      '--first-party',
      '--post-logout-redirect-uri',
      'https://printer.example/bye',
      '--backchannel-logout-uri',
      'https://printer.example/bcl',
    );
    assert.deepEqual(
      [client['first_party'], client['post_logout_redirect_uris'], client['backchannel_logout_uri']],
      [true, ['https://printer.example/bye'], 'https://printer.example/bcl'],
    );
    const updated = await runTessera(
      [
        'client',
        'update',
        client.client_id,
        '--no-first-party',
        '--remove-post-logout-redirect-uri',
        'https://printer.example/bye',
        '--add-post-logout-redirect-uri',
        'http://127.0.0.1:9/bye',
        '--no-backchannel-logout-uri',
      ],
      env,
    );
    assert.equal(updated.code, 0, updated.stderr);
    const shown = await show(client.client_id);
    assert.deepEqual(
      [shown['first_party'], shown['post_logout_redirect_uris'], shown['backchannel_logout_uri']],
      [undefined, ['http://127.0.0.1:9/bye'], undefined],
    );
    assert.deepEqual((await server.store.clients.get(client.client_id))?.postLogoutRedirectUris, ['http://127.0.0.1:9/bye']);
    for (const args of [
      ['--backchannel-logout-uri', 'http://printer.example/bcl'],
      ['--post-logout-redirect-uri', 'https://printer.example/bye#x'],
    ]) {
      const refused = await runTessera(['client', 'add', '--name', 'Bad', '--redirect-uri', REDIRECT_URI, ...args], env);
      assert.equal(refused.code, 2, args.join(' '));
    }
  });

  it('refuses a back-channel logout URI or jwks_uri on a private or link-local address unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS is on', async () => {
    for (const args of [
      ['--backchannel-logout-uri', 'https://169.254.169.254/latest/meta-data'],
      ['--backchannel-logout-uri', 'https://10.0.0.7/bcl'],
      ['--backchannel-logout-uri', 'https://[fe80::1]/bcl'],
      ['--auth-method', 'private_key_jwt', '--jwks-uri', 'https://192.168.1.20/jwks.json'],
    ]) {
      const refused = await runTessera(['client', 'add', '--name', 'Inside', '--redirect-uri', REDIRECT_URI, ...args], env);
      assert.equal(refused.code, 2, `${args.join(' ')}: ${refused.stdout}${refused.stderr}`);
      assert.match(refused.stderr, /private or link-local address.*TESSERA_ALLOW_PRIVATE_NETWORK_URLS=on/);
      const allowed = await runTessera(['client', 'add', '--name', 'Inside', '--redirect-uri', REDIRECT_URI, ...args], {
        ...env,
        TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'on',
      });
      assert.equal(allowed.code, 0, `${args.join(' ')} allowed: ${allowed.stderr}`);
    }
  });

  it('shows a client as text and as JSON, without its secret, and fails for an unknown id', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code', '--scope', 'openid profile');
    const shown = await show(client.client_id);
    assert.deepEqual(
      { ...shown, created_at: undefined },
      {
        client_id: client.client_id,
        client_name: 'Printer',
        token_endpoint_auth_method: 'client_secret_basic',
        redirect_uris: [REDIRECT_URI],
        scope: 'openid profile',
        grant_types: ['authorization_code'],
        pkce: 'required',
        created_at: undefined,
      },
    );
    const text = await runTessera(['client', 'show', client.client_id], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /auth: client_secret_basic/);
    assert.match(text.stdout, new RegExp(`redirect: ${REDIRECT_URI}`));
    assert.doesNotMatch(text.stdout + JSON.stringify(shown), new RegExp(client.client_secret!));
    const unknown = await runTessera(['client', 'show', 'no-such-client'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no client with id no-such-client/);
  });

  it('adds a redirect URI that a running server accepts at once, and removes one that it then refuses without redirecting', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code');
    const added = 'https://printer.example/new-callback';
    assert.equal((await authorizeAt(client.client_id, added)).status, 400, 'not registered yet');
    const update = await runTessera(['client', 'update', client.client_id, '--add-redirect-uri', added, '--name', 'Photo Printer'], env);
    assert.equal(update.code, 0, update.stderr);
    assert.match(update.stdout, /in effect now/);
    assert.ok((await authorizeAt(client.client_id, added)).location?.startsWith(`${added}?code=`));
    const removed = await runTessera(['client', 'update', client.client_id, '--remove-redirect-uri', REDIRECT_URI], env);
    assert.equal(removed.code, 0, removed.stderr);
    const refused = await authorizeAt(client.client_id, REDIRECT_URI);
    assert.deepEqual(refused, { status: 400, location: null });
    assert.deepEqual((await show(client.client_id))['redirect_uris'], [added]);
    assert.equal((await show(client.client_id))['client_name'], 'Photo Printer');
  });

  it('changes scopes, grants, web origins and the authentication method, each checked as at registration', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code');
    const changed = await runTessera(
      [
        'client',
        'update',
        client.client_id,
        '--scope',
        'openid email',
        '--grant',
        'authorization_code',
        '--grant',
        'refresh_token',
        '--auth-method',
        'client_secret_post',
        '--json',
      ],
      env,
    );
    assert.equal(changed.code, 0, changed.stderr);
    const shown = JSON.parse(changed.stdout) as Record<string, unknown>;
    assert.deepEqual(
      [shown['scope'], shown['grant_types'], shown['token_endpoint_auth_method']],
      ['openid email', ['authorization_code', 'refresh_token'], 'client_secret_post'],
    );
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), true, 'the secret is kept');

    const native = await add('--public', '--redirect-uri', 'http://127.0.0.1/cb', '--grant', 'authorization_code');
    const withOrigin = await runTessera(
      ['client', 'update', native.client_id, '--add-web-origin', 'https://notes.example/', '--add-redirect-uri', 'http://localhost/cb'],
      env,
    );
    assert.equal(withOrigin.code, 0, withOrigin.stderr);
    assert.deepEqual((await show(native.client_id))['web_origins'], ['https://notes.example']);
    const withoutOrigin = await runTessera(['client', 'update', native.client_id, '--remove-web-origin', 'https://notes.example'], env);
    assert.equal(withoutOrigin.code, 0, withoutOrigin.stderr);
    assert.equal((await show(native.client_id))['web_origins'], undefined);

    for (const [id, args, message] of [
      [client.client_id, [], /nothing to change/],
      [client.client_id, ['--remove-redirect-uri', 'https://never.example/cb'], /not registered for this client/],
      [client.client_id, ['--add-redirect-uri', 'com.example.app:/cb'], /--public/],
      [client.client_id, ['--add-web-origin', 'https://app.example'], /--public/],
      [client.client_id, ['--remove-redirect-uri', REDIRECT_URI], /--redirect-uri is required/],
      [client.client_id, ['--scope', 'openid admin'], /unknown scope admin/],
      [client.client_id, ['--grant', 'password'], /--grant password/],
      [client.client_id, ['--grant', 'refresh_token'], /needs authorization_code or device_code/],
      [client.client_id, ['--auth-method', 'none'], /--auth-method none/],
      [client.client_id, ['--auth-method', 'private_key_jwt'], /needs --jwks-uri/],
      [client.client_id, ['--name', ' '], /--name must not be empty/],
      [client.client_id, ['--pkce', 'sometimes'], /--pkce sometimes/],
      [native.client_id, ['--auth-method', 'client_secret_basic'], /cannot become confidential/],
      [native.client_id, ['--pkce', 'optional'], /confidential clients only/],
    ] as const) {
      const before = await show(id);
      const result = await runTessera(['client', 'update', id, ...args], env);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(' '));
      assert.deepEqual(await show(id), before, `${args.join(' ')} changed nothing`);
    }
    // http://localhost for a confidential client: refused unless the issuer is on loopback too,
    // as this test server's is.
    const elsewhere = await runTessera(['client', 'update', client.client_id, '--add-redirect-uri', 'http://localhost:3000/cb'], {
      ...env,
      TESSERA_ISSUER: 'https://id.example.com',
    });
    assert.equal(elsewhere.code, 2);
    assert.match(elsewhere.stderr, /public native apps/);
    const unknown = await runTessera(['client', 'update', 'no-such-client', '--name', 'x'], env);
    assert.equal(unknown.code, 1);
  });

  it('moves a client to private_key_jwt and back: its secret stops working, and a new one is printed once', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code');
    const { publicKey } = await generateKeyPair('ES256');
    const file = join(dir, 'keys.json');
    writeFileSync(file, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' }] }));
    const toJwt = await runTessera(['client', 'update', client.client_id, '--auth-method', 'private_key_jwt', '--jwks-file', file, '--json'], env);
    assert.equal(toJwt.code, 0, toJwt.stderr);
    assert.equal((JSON.parse(toJwt.stdout) as Record<string, unknown>)['token_endpoint_auth_method'], 'private_key_jwt');
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), false);
    const back = await runTessera(['client', 'update', client.client_id, '--auth-method', 'client_secret_basic', '--json'], env);
    assert.equal(back.code, 0, back.stderr);
    const secret = (JSON.parse(back.stdout) as Registered).client_secret!;
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(await authenticates(server, client.client_id, secret), true);
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), false, 'the first secret is gone for good');
    assert.equal((await show(client.client_id))['jwks'], undefined);
  });

  it('rotates a secret: the new one works at once, the old one until the grace ends, only the latest previous one', async () => {
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code');
    const rotated = await runTessera(['client', 'rotate-secret', client.client_id, '--json'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    const { client_secret: second, previous_secret_expires_at: until } = JSON.parse(rotated.stdout) as {
      client_secret: string;
      previous_secret_expires_at: string;
    };
    assert.notEqual(second, client.client_secret);
    const grace = Date.parse(until) - Date.now();
    assert.ok(grace > 86_000_000 && grace <= 86_400_000, `one day by default, got ${grace} ms`);
    assert.equal(await authenticates(server, client.client_id, second), true);
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), true, 'the old secret during the grace period');
    assert.equal((await show(client.client_id))['previous_secret_expires_at'], until);

    const text = await runTessera(['client', 'rotate-secret', client.client_id, '--grace', '0'], env);
    assert.equal(text.code, 0, text.stderr);
    const third = /client_secret: (\S+)/.exec(text.stdout)![1]!;
    assert.match(text.stdout, /shown only now/);
    assert.equal(await authenticates(server, client.client_id, third), true);
    assert.equal(await authenticates(server, client.client_id, second), false, 'no grace');
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), false, 'only the latest previous secret');
  });

  it('refuses to rotate what has no secret, and a grace that is not a number of seconds', async () => {
    const native = await add('--public', '--redirect-uri', 'http://127.0.0.1/cb', '--grant', 'authorization_code');
    const publicResult = await runTessera(['client', 'rotate-secret', native.client_id], env);
    assert.equal(publicResult.code, 1);
    assert.match(publicResult.stderr, /no secret to rotate/);
    const client = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code');
    for (const grace of ['-1', 'a day', '99999999', '1.5']) {
      const result = await runTessera(['client', 'rotate-secret', client.client_id, '--grace', grace], env);
      assert.equal(result.code, 2, grace);
      assert.match(result.stderr, /--grace/);
    }
    assert.equal(await authenticates(server, client.client_id, client.client_secret!), true, 'still the first secret');
    assert.equal((await runTessera(['client', 'rotate-secret', 'no-such-client'], env)).code, 1);
  });

  it('registers private_key_jwt clients with a jwks_uri or a JWK Set file, and refuses keys it cannot use', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] }));
    const fromFile = await add('--redirect-uri', REDIRECT_URI, '--auth-method', 'private_key_jwt', '--jwks-file', good);
    assert.equal(fromFile.client_secret, undefined, 'no secret');
    assert.equal(fromFile['token_endpoint_auth_method'], 'private_key_jwt');
    assert.deepEqual(
      (fromFile['jwks'] as { keys: { kid: string }[] }).keys.map((k) => k.kid),
      ['k1'],
    );
    const fromUri = await add('--redirect-uri', REDIRECT_URI, '--jwks-uri', 'https://app.example/jwks.json');
    assert.deepEqual([fromUri['token_endpoint_auth_method'], fromUri['jwks_uri']], ['private_key_jwt', 'https://app.example/jwks.json']);
    // Keys without --auth-method mean private_key_jwt, and the help says so beside the default.
    const keysAlone = await add('--redirect-uri', REDIRECT_URI, '--jwks-file', good);
    assert.deepEqual([keysAlone['token_endpoint_auth_method'], keysAlone.client_secret], ['private_key_jwt', undefined]);
    const help = (await runTessera(['help', 'client'], env)).stdout.replace(/\s+/g, ' ');
    assert.match(help, /METHOD: client_secret_basic \(the default without keys; private_key_jwt, with no secret, when --jwks-uri or --jwks-file is given\)/);

    const files: Record<string, string> = {
      'not-json.json': 'keys: none',
      'private.json': JSON.stringify({ keys: [{ ...(await exportJWK(privateKey)), kid: 'k1' }] }),
      'symmetric.json': JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }),
      'no-keys.json': JSON.stringify({ key: [] }),
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
    for (const [args, message] of [
      [['--jwks-file', join(dir, 'not-json.json')], /not JSON/],
      [['--jwks-file', join(dir, 'private.json')], /public keys only/],
      [['--jwks-file', join(dir, 'symmetric.json')], /public keys only/],
      [['--jwks-file', join(dir, 'no-keys.json')], /not a JWK Set/],
      [['--jwks-file', join(dir, 'missing.json')], /cannot be read/],
      [['--jwks-uri', 'http://app.example/jwks.json'], /must use https/],
      [['--jwks-uri', 'not a url'], /not an absolute URL/],
      [['--jwks-uri', 'https://app.example/jwks.json', '--jwks-file', good], /give one/],
      [['--auth-method', 'private_key_jwt'], /needs --jwks-uri/],
      [['--auth-method', 'client_secret_post', '--jwks-file', good], /are for --auth-method private_key_jwt/],
      [['--auth-method', 'client_secret_jwt'], /--auth-method client_secret_jwt/],
      [['--public', '--auth-method', 'client_secret_post'], /--public clients have no secret/],
    ] as const) {
      const result = await runTessera(['client', 'add', '--name', 'X', '--redirect-uri', REDIRECT_URI, ...args], env);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message, args.join(' '));
    }
  });

  it('lists which clients may go without PKCE and how each authenticates', async () => {
    const legacy = await add('--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code', '--pkce', 'optional');
    assert.equal(legacy['pkce'], 'optional');
    const list = await runTessera(['client', 'list'], env);
    assert.match(list.stdout, new RegExp(`${legacy.client_id}  Printer\\n  auth: client_secret_basic\\n[\\s\\S]*?  pkce: optional`));
    const json = JSON.parse((await runTessera(['client', 'list', '--json'], env)).stdout) as Record<string, unknown>[];
    assert.equal(json.find((entry) => entry['client_id'] === legacy.client_id)?.['pkce'], 'optional');
    const refused = await runTessera(['client', 'add', '--name', 'SPA', '--public', '--redirect-uri', 'https://spa.example/cb', '--pkce', 'optional'], env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /confidential clients only/);
  });
});

describePostgres('client changes on several instances sharing PostgreSQL', () => {
  const schema = newSchema();
  let a: TestServer;
  let b: TestServer;
  let env: Record<string, string>;

  before(async () => {
    a = await startTestServer({ database: databaseSetting(schema) });
    b = await startTestServer({ database: databaseSetting(schema) });
    env = { TESSERA_DATABASE: databaseSetting(schema) };
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await dropSchema(schema);
  });

  /** Retries `check` for at most a second: a change notice crosses to another instance in milliseconds. */
  async function soon(check: () => Promise<boolean>): Promise<boolean> {
    const until = Date.now() + 1000;
    for (;;) {
      if (await check()) return true;
      if (Date.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('an instance that has the client cached refuses a secret rotated away without grace, and takes the new one', async () => {
    const added = await runTessera(['client', 'add', '--name', 'Printer', '--redirect-uri', REDIRECT_URI, '--grant', 'authorization_code', '--json'], env);
    assert.equal(added.code, 0, added.stderr);
    const client = JSON.parse(added.stdout) as Registered;
    // Both instances read the client now, and keep it in memory.
    for (const server of [a, b]) assert.equal(await authenticates(server, client.client_id, client.client_secret!), true);
    const rotated = await runTessera(['client', 'rotate-secret', client.client_id, '--grace', '0', '--json'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    const secret = (JSON.parse(rotated.stdout) as Registered).client_secret!;
    for (const server of [a, b]) {
      assert.ok(await soon(async () => !(await authenticates(server, client.client_id, client.client_secret!))), 'the old secret is refused');
      assert.equal(await authenticates(server, client.client_id, secret), true);
    }
  });
});

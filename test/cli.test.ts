import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { decodeProtectedHeader } from 'jose';
import { ManualClock } from '../src/core/clock.ts';
import { openStore } from '../src/store/open.ts';
import { scratchDatabase } from './helpers/scratch.ts';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera, serveTessera, tessera } from './helpers/cli.ts';
import { signInRaw } from './helpers/lifecycle.ts';
import { startTestServer } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';

describe('the tessera command', () => {
  // In a directory that does not exist yet: the command makes it.
  const scratch = scratchDatabase('tessera-cli-', {}, join('data', 'tessera.db'));
  const { env } = scratch;

  it('registers a client and prints its id and secret once as JSON, nothing else on stdout', async () => {
    const result = await runTessera(
      ['client', 'add', '--name', 'My App', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'http://127.0.0.1:8000/cb', '--json'],
      env,
    );
    assert.equal(result.code, 0, result.stderr);
    const client = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(typeof client['client_id'], 'string');
    assert.match(client['client_secret'] as string, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(client['redirect_uris'], ['https://app.example/cb', 'http://127.0.0.1:8000/cb']);
    // The device grant only when asked for (draft-ietf-oauth-cross-device-security).
    assert.deepEqual(client['grant_types'], ['authorization_code']);
    const list = await runTessera(['client', 'list', '--json'], env);
    assert.equal(list.code, 0);
    const listed = JSON.parse(list.stdout) as Record<string, unknown>[];
    assert.ok(listed.some((entry) => entry['client_id'] === client['client_id']));
    assert.doesNotMatch(list.stdout, new RegExp(client['client_secret'] as string), 'the secret is never shown again');
  });

  it('narrows grants with --grant and refuses unknown ones', async () => {
    const deviceOnly = await runTessera(['client', 'add', '--name', 'TV', '--grant', 'device_code', '--json'], env);
    assert.equal(deviceOnly.code, 0, deviceOnly.stderr);
    assert.deepEqual((JSON.parse(deviceOnly.stdout) as { grant_types: string[] }).grant_types, ['urn:ietf:params:oauth:grant-type:device_code']);
    const both = await runTessera(
      ['client', 'add', '--name', 'Both', '--grant', 'authorization_code', '--grant', 'device_code', '--redirect-uri', 'https://x.example/cb', '--json'],
      env,
    );
    assert.deepEqual((JSON.parse(both.stdout) as { grant_types: string[] }).grant_types, [
      'authorization_code',
      'urn:ietf:params:oauth:grant-type:device_code',
    ]);
    const bad = await runTessera(['client', 'add', '--name', 'X', '--grant', 'implicit', '--redirect-uri', 'https://x.example/cb'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
  });

  it('records the networks a device client may start from (--device-network), and refuses a bad one or one without the device grant', async () => {
    const added = await runTessera(
      [
        'client',
        'add',
        '--name',
        'Lobby TV',
        '--grant',
        'device_code',
        '--device-network',
        '192.0.2.0/24',
        '--device-network',
        '2001:db8:1::/48',
        '--device-network',
        '198.51.100.7',
        '--json',
      ],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual((JSON.parse(added.stdout) as { device_networks: string[] }).device_networks, ['192.0.2.0/24', '2001:db8:1::/48', '198.51.100.7/32']);
    for (const args of [
      ['--grant', 'device_code', '--device-network', '192.0.2.0/33'],
      ['--grant', 'device_code', '--device-network', 'office'],
      ['--redirect-uri', 'https://x.example/cb', '--device-network', '192.0.2.0/24'],
    ]) {
      const result = await runTessera(['client', 'add', '--name', 'X', ...args], env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /--device-network/);
    }
  });

  it('refuses a redirect URI that is not https or loopback http, or has a fragment', async () => {
    for (const uri of ['http://app.example/cb', 'http://localhost:3000/cb', 'https://app.example/cb#x', 'not a uri', 'javascript:alert(1)']) {
      // An issuer off loopback: on one on loopback, a web app may register http://localhost.
      const result = await runTessera(['client', 'add', '--name', 'X', '--redirect-uri', uri], { ...env, TESSERA_ISSUER: 'https://id.example.com' });
      assert.equal(result.code, 2, uri);
      assert.match(result.stderr, /--redirect-uri/);
    }
  });

  it('registers a public client without a secret, with a private-use scheme and a web origin', async () => {
    const result = await runTessera(
      [
        'client',
        'add',
        '--name',
        'Notes',
        '--public',
        '--redirect-uri',
        'com.example.notes:/cb',
        '--redirect-uri',
        'https://notes.example/cb',
        '--web-origin',
        'https://notes.example',
        '--json',
      ],
      env,
    );
    assert.equal(result.code, 0, result.stderr);
    const client = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(client['client_secret'], undefined);
    assert.equal(client['token_endpoint_auth_method'], 'none');
    assert.deepEqual(client['web_origins'], ['https://notes.example']);
  });

  it('refuses a private-use scheme or a web origin for a confidential client, and a web origin with a path', async () => {
    for (const args of [
      ['--redirect-uri', 'com.example.notes:/cb'],
      ['--redirect-uri', 'https://notes.example/cb', '--web-origin', 'https://notes.example'],
      ['--redirect-uri', 'https://notes.example/cb', '--public', '--web-origin', 'https://notes.example/app'],
    ]) {
      const result = await runTessera(['client', 'add', '--name', 'X', ...args], env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
    }
  });

  it('removes a client', async () => {
    const added = JSON.parse((await runTessera(['client', 'add', '--name', 'Gone', '--grant', 'device_code', '--json'], env)).stdout) as { client_id: string };
    assert.equal((await runTessera(['client', 'remove', added.client_id], env)).code, 0);
    assert.equal((await runTessera(['client', 'remove', added.client_id], env)).code, 1);
  });

  it('adds a user with the password from standard input, and refuses a duplicate', async () => {
    const first = await runTessera(
      ['user', 'add', '--username', 'Alice', '--password-stdin', '--name', 'Alice Liddell', '--email', 'alice@example.com'],
      env,
      'a long enough password\n',
    );
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /alice/);
    const again = await runTessera(['user', 'add', '--username', 'alice', '--password-stdin'], env, 'another password\n');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);
    // The e-mail address is one account's too, without regard to case, at add and at update.
    const sameAddress = await runTessera(
      ['user', 'add', '--username', 'alice2', '--password-stdin', '--email', 'ALICE@example.com'],
      env,
      'a long enough password\n',
    );
    assert.equal(sameAddress.code, 1);
    assert.match(sameAddress.stderr, /^tessera: --email ALICE@example\.com: another account has this e-mail address\n$/);
    const other = await runTessera(
      ['user', 'add', '--username', 'alice3', '--password-stdin', '--email', 'alice3@example.com'],
      env,
      'a long enough password\n',
    );
    assert.equal(other.code, 0, other.stderr);
    const moved = await runTessera(['user', 'update', 'alice3', '--email', 'Alice@Example.com'], env);
    assert.equal(moved.code, 1);
    assert.match(moved.stderr, /^tessera: --email Alice@Example\.com: another account has this e-mail address\n$/);
    assert.match((await runTessera(['user', 'show', 'alice3'], env)).stdout, /alice3@example\.com/, 'nothing written');
  });

  it('refuses a password given any way but standard input', async () => {
    const result = await runTessera(['user', 'add', '--username', 'bob', '--password', 'secret123'], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
  });

  it('prints usage and exits non-zero for an unknown command or a missing argument', async () => {
    for (const args of [[], ['frobnicate'], ['client', 'add'], ['client', 'remove']]) {
      const result = await runTessera(args, env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
    }
  });

  it('stops with one clear line for a wrong setting', async () => {
    const result = await runTessera(['client', 'list'], { ...env, PORT: 'eighty' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.match(result.stderr, /PORT/);
    const issuer = await runTessera(['client', 'list'], { ...env, TESSERA_ISSUER: 'http://auth.example.com' });
    assert.equal(issuer.code, 1);
    assert.match(issuer.stderr, /TESSERA_ISSUER.*https/);
  });

  it('rotates keys: the server publishes the new keys at once, and signs new tokens with them only after the lead time', async () => {
    const clock = new ManualClock(Date.now());
    const database = join(scratch.dir, 'rotate.db');
    const server = await startTestServer({ clock, database, env: { TESSERA_KEY_LEAD_TIME: '600' } });
    try {
      const client = await server.addClient();
      const user = await server.addUser();
      const kids = async () => ((await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((key) => key.kid);
      const signedWith = async () => {
        const tokens = await signInRaw(server, client, user, 'openid');
        return { idToken: decodeProtectedHeader(tokens['id_token'] as string), accessToken: decodeProtectedHeader(tokens['access_token'] as string) };
      };
      const before = await signedWith();

      // The command reads the wall clock: the server's clock catches up with it first, so the
      // time the server took to start and sign in (key generation, a loaded machine) does
      // not eat into the one second of margin below.
      clock.set(Math.max(clock.now(), Date.now()));
      const result = await runTessera(['keys', 'rotate'], { TESSERA_DATABASE: database, TESSERA_KEY_LEAD_TIME: '600' });
      // The command dates the new keys by the real clock, which has moved on from the test
      // server's by however long the sign-in above took: the server's clock is set from it.
      const rotatedBy = Date.now();
      assert.equal(result.code, 0, result.stderr);
      const printed = Object.fromEntries(
        [...result.stdout.matchAll(/Published (RS256|ES256) key (\S+); it signs from/g)].map((match) => [match[1]!, match[2]!]),
      );
      assert.deepEqual(Object.keys(printed).sort(), ['ES256', 'RS256']);
      const published = await kids();
      assert.ok(published.includes(printed['RS256']!) && published.includes(printed['ES256']!), 'both new keys are in the JWKS at once');
      assert.ok(published.includes(before.idToken.kid!) && published.includes(before.accessToken.kid!), 'the old keys stay published');
      // Past the 30 s a server keeps its signing keys in memory, within the lead time.
      clock.set(rotatedBy + 60_000);
      assert.deepEqual(await signedWith(), before, 'the old keys sign during the lead time');

      clock.set(rotatedBy + 601_000);
      const after = await signedWith();
      assert.equal(after.idToken.kid, printed['RS256'], 'ID tokens are signed with the new RS256 key after the lead time');
      assert.equal(after.accessToken.kid, printed['ES256'], 'access tokens are signed with the new ES256 key after the lead time');
    } finally {
      await server.close();
    }
  });

  it('hashes passwords at the production cost, argon2id m=46 MiB t=1 p=1, without TESSERA_PASSWORD_HASH (the real command)', async () => {
    const database = join(scratch.dir, 'production-cost.db');
    const added = await tessera(
      ['user', 'add', '--username', 'grace', '--password-stdin'],
      { TESSERA_DATABASE: database, TESSERA_PASSWORD_HASH: '' },
      'a long enough password\n',
    );
    assert.equal(added.code, 0, added.stderr);
    const store = await openStore(database);
    try {
      const user = await store.users.findByUsername('grace');
      assert.match(user?.passwordHash ?? '', /^\$argon2id\$v=19\$m=47104,t=1,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    } finally {
      await store.close();
    }
  });

  it('serves what the command registered: a newcomer completes the flow against `serve` (the real commands)', async (t) => {
    const client = JSON.parse(
      (await tessera(['client', 'add', '--name', 'Newcomer App', '--redirect-uri', 'http://127.0.0.1:9/callback', '--json'], env)).stdout,
    ) as { client_id: string; client_secret: string };
    assert.equal((await tessera(['user', 'add', '--username', 'newcomer', '--password-stdin'], env, 'newcomer password\n')).code, 0);
    const server = await serveTessera([], env);
    t.after(() => server.stop());
    const issuer = server.url;
    const config = await oidc.discovery(new URL(issuer), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const attempt = await authorizationAttempt(config, { redirect_uri: 'http://127.0.0.1:9/callback', scope: 'openid profile' });
    const page = await new FormBrowser(issuer).authorize(attempt.url.href, { username: 'newcomer', password: 'newcomer password' });
    const tokens = await redeemAttempt(config, attempt, page.location!);
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub))['preferred_username'], 'newcomer');
    assert.equal(await server.stop(), 0);
  });
});

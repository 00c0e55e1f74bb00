import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { freePort } from './helpers/server.ts';

const ROOT = new URL('..', import.meta.url).pathname;

function tessera(args: string[], env: Record<string, string>, stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'src/cli/main.ts'), ...args], {
      env: { ...process.env, TESSERA_LOG_LEVEL: 'silent', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

describe('the tessera command', () => {
  let dir: string;
  let env: Record<string, string>;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-'));
    env = { TESSERA_DATABASE: join(dir, 'data', 'tessera.db') };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('registers a client and prints its id and secret once as JSON, nothing else on stdout', async () => {
    const result = await tessera(['client', 'add', '--name', 'My App', '--redirect-uri', 'https://app.example/cb', '--redirect-uri', 'http://127.0.0.1:8000/cb', '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    const client = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.equal(typeof client['client_id'], 'string');
    assert.match(client['client_secret'] as string, /^[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(client['redirect_uris'], ['https://app.example/cb', 'http://127.0.0.1:8000/cb']);
    assert.deepEqual(client['grant_types'], ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code']);
    const list = await tessera(['client', 'list', '--json'], env);
    assert.equal(list.code, 0);
    const listed = JSON.parse(list.stdout) as Record<string, unknown>[];
    assert.ok(listed.some((entry) => entry['client_id'] === client['client_id']));
    assert.doesNotMatch(list.stdout, new RegExp(client['client_secret'] as string), 'the secret is never shown again');
  });

  it('narrows grants with --grant and refuses unknown ones', async () => {
    const deviceOnly = await tessera(['client', 'add', '--name', 'TV', '--grant', 'device_code', '--json'], env);
    assert.equal(deviceOnly.code, 0, deviceOnly.stderr);
    assert.deepEqual((JSON.parse(deviceOnly.stdout) as { grant_types: string[] }).grant_types, ['urn:ietf:params:oauth:grant-type:device_code']);
    const bad = await tessera(['client', 'add', '--name', 'X', '--grant', 'implicit', '--redirect-uri', 'https://x.example/cb'], env);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /Usage: tessera/);
  });

  it('refuses a redirect URI that is not https or loopback http, or has a fragment', async () => {
    for (const uri of ['http://app.example/cb', 'http://localhost:3000/cb', 'https://app.example/cb#x', 'not a uri', 'javascript:alert(1)']) {
      const result = await tessera(['client', 'add', '--name', 'X', '--redirect-uri', uri], env);
      assert.equal(result.code, 2, uri);
      assert.match(result.stderr, /--redirect-uri/);
    }
  });

  it('registers a public client without a secret, with a private-use scheme and a web origin', async () => {
    const result = await tessera(['client', 'add', '--name', 'Notes', '--public', '--redirect-uri', 'com.example.notes:/cb', '--redirect-uri', 'https://notes.example/cb', '--web-origin', 'https://notes.example', '--json'], env);
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
      const result = await tessera(['client', 'add', '--name', 'X', ...args], env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /Usage: tessera/);
    }
  });

  it('removes a client', async () => {
    const added = JSON.parse((await tessera(['client', 'add', '--name', 'Gone', '--grant', 'device_code', '--json'], env)).stdout) as { client_id: string };
    assert.equal((await tessera(['client', 'remove', added.client_id], env)).code, 0);
    assert.equal((await tessera(['client', 'remove', added.client_id], env)).code, 1);
  });

  it('adds a user with the password from standard input, and refuses a duplicate', async () => {
    const first = await tessera(['user', 'add', '--username', 'Alice', '--password-stdin', '--name', 'Alice Liddell', '--email', 'alice@example.com'], env, 'a long enough password\n');
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /alice/);
    const again = await tessera(['user', 'add', '--username', 'alice', '--password-stdin'], env, 'another password\n');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);
  });

  it('refuses a password given any way but standard input', async () => {
    const result = await tessera(['user', 'add', '--username', 'bob', '--password', 'secret123'], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /Usage/);
  });

  it('prints usage and exits non-zero for an unknown command or a missing argument', async () => {
    for (const args of [[], ['frobnicate'], ['client', 'add'], ['client', 'remove']]) {
      const result = await tessera(args, env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /Usage: tessera/);
    }
  });

  it('stops with one clear line for a wrong setting', async () => {
    const result = await tessera(['client', 'list'], { ...env, PORT: 'eighty' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr.trim().split('\n').length, 1);
    assert.match(result.stderr, /PORT/);
    const issuer = await tessera(['client', 'list'], { ...env, TESSERA_ISSUER: 'http://auth.example.com' });
    assert.equal(issuer.code, 1);
    assert.match(issuer.stderr, /TESSERA_ISSUER.*https/);
  });

  it('rotates keys: the new ones are published at once and sign only after the lead time', async () => {
    const result = await tessera(['keys', 'rotate'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim().split('\n').length, 2);
    assert.match(result.stdout, /RS256 key .* signs from/);
  });

  it('serves what the command registered: a newcomer completes the flow against `serve`', async () => {
    const port = await freePort();
    const issuer = `http://127.0.0.1:${port}`;
    const serverEnv = { ...env, PORT: String(port), HOST: '127.0.0.1', TESSERA_ISSUER: issuer };
    const client = JSON.parse((await tessera(['client', 'add', '--name', 'Newcomer App', '--redirect-uri', 'http://127.0.0.1:9/callback', '--json'], serverEnv)).stdout) as { client_id: string; client_secret: string };
    await tessera(['user', 'add', '--username', 'newcomer', '--password-stdin'], serverEnv, 'newcomer password\n');
    const server = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'src/cli/main.ts'), 'serve'], {
      env: { ...process.env, ...serverEnv, TESSERA_LOG_LEVEL: 'silent' },
      stdio: 'ignore',
    });
    try {
      let config: oidc.Configuration | undefined;
      for (let i = 0; i < 100 && !config; i++) {
        config = await oidc
          .discovery(new URL(issuer), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), { execute: [oidc.allowInsecureRequests] })
          .catch(async () => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            return undefined;
          });
      }
      assert.ok(config, 'the server came up');
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: 'http://127.0.0.1:9/callback', scope: 'openid profile', state,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      });
      const page = await new FormBrowser(issuer).authorize(url.href, { username: 'newcomer', password: 'newcomer password' });
      const tokens = await oidc.authorizationCodeGrant(config, new URL(page.location!), { pkceCodeVerifier: verifier, expectedState: state });
      assert.equal(tokens.claims()?.['preferred_username'], 'newcomer');
    } finally {
      server.kill('SIGTERM');
    }
  });
});

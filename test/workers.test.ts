import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { hashSecret, randomToken, s256 } from '../src/core/crypto.ts';
import { GRANT_AUTHORIZATION_CODE } from '../src/core/protocol.ts';
import { openStore } from '../src/store/open.ts';
import { type Store } from '../src/store/types.ts';
import { basic, freePort, REDIRECT_URI } from './helpers/server.ts';

const ROOT = new URL('..', import.meta.url).pathname;

function cli(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'src/cli/main.ts'), ...args], {
    env: { ...process.env, TESSERA_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A request on a connection of its own, so that the cluster hands it to whichever worker is next. */
async function request(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), connection: 'close' } });
}

describe('tessera serve --workers 2', () => {
  let dir: string;
  let url: string;
  let server: ChildProcess;
  let store: Store;
  const clientId = `client-${randomUUID()}`;
  const clientSecret = randomToken(32);
  const userId = `sub-${randomUUID()}`;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-workers-'));
    const database = join(dir, 'tessera.db');
    store = await openStore(database);
    await store.clients.create({
      id: clientId,
      name: 'Workers',
      secretHash: hashSecret(clientSecret),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'profile'],
      grantTypes: [GRANT_AUTHORIZATION_CODE],
      webOrigins: [],
      createdAt: Date.now(),
    });
    await store.users.create({
      id: userId,
      username: 'ada',
      passwordHash: 'unused',
      name: 'Ada Lovelace',
      email: null,
      emailVerified: false,
      disabled: false,
      createdAt: Date.now(),
    });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = cli(['serve', '--workers', '2'], { PORT: String(port), HOST: '127.0.0.1', TESSERA_ISSUER: url, TESSERA_DATABASE: database });
    for (let i = 0; ; i += 1) {
      const ready = await fetch(`${url}/healthz`).then((response) => response.ok, () => false);
      if (ready) break;
      if (i > 200 || server.exitCode !== null) throw new Error('the server did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  after(async () => {
    if (server.exitCode === null) {
      server.kill('SIGKILL');
      await new Promise((resolve) => server.once('exit', resolve));
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs two worker processes under the primary', { skip: !existsSync('/proc/self/task') && 'needs Linux /proc' }, () => {
    const children = readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    assert.equal(children.length, 2);
  });

  it('publishes the same signing keys from every worker', async () => {
    const sets = await Promise.all(Array.from({ length: 6 }, () => request(`${url}/.well-known/jwks.json`).then((response) => response.json())));
    const kids = sets.map((set) => (set as JSONWebKeySet).keys.map((key) => key.kid).sort().join(','));
    assert.equal(new Set(kids).size, 1, 'one key set, made once by the primary');
  });

  it('redeems codes from the one shared store exactly once, whichever worker answers', async () => {
    const minted = [];
    for (let i = 0; i < 6; i += 1) {
      const grantId = randomUUID();
      const now = Date.now();
      await store.grants.create({ id: grantId, userId, clientId, scope: ['openid'], kind: GRANT_AUTHORIZATION_CODE, authTime: now, createdAt: now, revokedAt: null, device: null });
      const code = randomToken(32);
      const verifier = randomToken(32);
      await store.codes.create({
        hash: hashSecret(code), clientId, userId, grantId, redirectUri: REDIRECT_URI, scope: ['openid'], nonce: null,
        codeChallenge: s256(verifier), authTime: now, createdAt: now, expiresAt: now + 60_000, consumedAt: null,
      });
      minted.push({ code, verifier });
    }
    const exchange = ({ code, verifier }: { code: string; verifier: string }) =>
      request(`${url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString(),
      });
    const jwks = createLocalJWKSet((await (await request(`${url}/.well-known/jwks.json`)).json()) as JSONWebKeySet);
    for (const response of await Promise.all(minted.map(exchange))) {
      assert.equal(response.status, 200);
      const { id_token } = (await response.json()) as { id_token: string };
      const { payload } = await jwtVerify(id_token, jwks, { issuer: url, audience: clientId });
      assert.equal(payload.sub, userId);
    }
    const replays = await Promise.all(minted.map(exchange));
    for (const replay of replays) {
      assert.equal(replay.status, 400);
      assert.equal(((await replay.json()) as { error: string }).error, 'invalid_grant');
    }
  });

  it('stops the workers and exits cleanly on SIGTERM', async () => {
    const children = existsSync(`/proc/${server.pid}/task`) ? readFileSync(`/proc/${server.pid}/task/${server.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean) : [];
    const exit = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    server.kill('SIGTERM');
    assert.equal(await exit, 0);
    for (const pid of children) assert.equal(existsSync(`/proc/${pid}`), false, `worker ${pid} is gone`);
  });
});

describe('tessera serve --workers with a bad count', () => {
  it('prints the usage and exits with status 2', async () => {
    const child = cli(['serve', '--workers', '0'], { TESSERA_DATABASE: ':memory:' });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 2);
    assert.match(stderr, /--workers 0: must be a whole number from 1 to 64/);
  });
});

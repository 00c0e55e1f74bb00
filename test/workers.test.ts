import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { hashSecret, randomToken, s256 } from '../src/core/crypto.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import { openStore } from '../src/store/open.ts';
import { newUserRecord, type Store } from '../src/store/types.ts';
import { outputMatches, runTessera, serveTessera, type ServingCommand } from './helpers/cli.ts';
import { basic, REDIRECT_URI } from './helpers/server.ts';

/** A request on a connection of its own, so that the cluster hands it to whichever worker is next. */
async function request(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), connection: 'close' } });
}

describe('tessera serve --workers 2', () => {
  let dir: string;
  let url: string;
  let serving: ServingCommand;
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
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: Date.now(),
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    });
    await store.users.create(newUserRecord({ id: userId, username: 'ada', passwordHash: 'unused', name: 'Ada Lovelace', createdAt: Date.now() }));
    serving = await serveTessera(['--workers', '2'], { TESSERA_DATABASE: database }, 2);
    url = serving.url;
  });

  after(async () => {
    if (serving && serving.child.exitCode === null) {
      serving.child.kill('SIGKILL');
      await serving.exited;
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The primary's child processes: its workers. */
  const workers = (): string[] =>
    existsSync(`/proc/${serving.child.pid}/task`)
      ? readFileSync(`/proc/${serving.child.pid}/task/${serving.child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)
      : [];

  it('runs two worker processes under the primary', { skip: !existsSync('/proc/self/task') && 'needs Linux /proc' }, () => {
    assert.equal(workers().length, 2);
  });

  it('publishes the same signing keys from every worker', async () => {
    const sets = await Promise.all(Array.from({ length: 6 }, () => request(`${url}/.well-known/jwks.json`).then((response) => response.json())));
    const kids = sets.map((set) =>
      (set as JSONWebKeySet).keys
        .map((key) => key.kid)
        .sort()
        .join(','),
    );
    assert.equal(new Set(kids).size, 1, 'one key set, made once by the primary');
  });

  it('redeems codes from the one shared store exactly once, whichever worker answers', async () => {
    const minted = [];
    for (let i = 0; i < 6; i += 1) {
      const grantId = randomUUID();
      const now = Date.now();
      await store.grants.create({
        id: grantId,
        userId,
        clientId,
        scope: ['openid'],
        kind: GRANT_AUTHORIZATION_CODE,
        authTime: now,
        createdAt: now,
        revokedAt: null,
        device: null,
      });
      const code = randomToken(32);
      const verifier = randomToken(32);
      await store.codes.create({
        hash: hashSecret(code),
        clientId,
        userId,
        grantId,
        redirectUri: REDIRECT_URI,
        scope: ['openid'],
        nonce: null,
        codeChallenge: s256(verifier),
        authTime: now,
        sid: null,
        createdAt: now,
        expiresAt: now + 60_000,
        consumedAt: null,
        dpopJkt: null,
        idTokenClaims: [],
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

  it('replaces a worker that crashes, and the replacement serves from the same store', {
    skip: !existsSync('/proc/self/task') && 'needs Linux /proc',
  }, async () => {
    const before = workers();
    assert.equal(before.length, 2);
    process.kill(Number(before[0]), 'SIGKILL');
    await outputMatches(serving, new RegExp(`worker ${before[0]} exited \\(SIGKILL\\); starting another`));
    // Two lines from the first workers, a third from the replacement once it serves.
    let replaced = false;
    // Settled either way: a replacement that never serves ends the loop below with its failure.
    const serves = outputMatches(serving, /Tessera is serving/, 3).finally(() => (replaced = true));
    // Awaited below; until then a failure is not an unhandled rejection.
    serves.catch(() => {});
    // Requests all the while the replacement starts, a few milliseconds apart: every one is
    // answered, whichever worker the primary hands it to.
    const meanwhile: Promise<number>[] = [];
    while (!replaced) {
      meanwhile.push(request(`${url}/healthz`).then((response) => response.status));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await serves;
    assert.deepEqual(new Set(await Promise.all(meanwhile)), new Set([200]));
    const after = workers();
    assert.equal(after.length, 2);
    assert.ok(!after.includes(before[0]!), 'the crashed worker is gone');
    assert.ok(after.includes(before[1]!), 'the other worker was left alone');
    // Connections of their own, so that both workers answer some of them.
    const responses = await Promise.all(Array.from({ length: 8 }, () => request(`${url}/.well-known/openid-configuration`)));
    for (const response of responses) {
      assert.equal(response.status, 200);
      assert.equal(((await response.json()) as { issuer: string }).issuer, url);
    }
  });

  it('stops the workers and exits cleanly on SIGTERM', async () => {
    const children = workers();
    assert.equal(await serving.stop(), 0);
    for (const pid of children) assert.equal(existsSync(`/proc/${pid}`), false, `worker ${pid} is gone`);
  });
});

describe('tessera serve --workers 4 on one SQLite file', () => {
  let dir: string;
  let serving: ServingCommand | undefined;
  let store: Store;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-workers-4-'));
  });

  after(async () => {
    if (serving && serving.child.exitCode === null) {
      serving.child.kill('SIGKILL');
      await serving.exited;
    }
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives tokens for each code to exactly one of the concurrent redemptions spread over the four workers', async () => {
    const database = join(dir, 'tessera.db');
    store = await openStore(database);
    const clientId = `client-${randomUUID()}`;
    const clientSecret = randomToken(32);
    const userId = `sub-${randomUUID()}`;
    await store.clients.create({
      id: clientId,
      name: 'Races',
      secretHash: hashSecret(clientSecret),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid'],
      grantTypes: [GRANT_AUTHORIZATION_CODE],
      webOrigins: [],
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: Date.now(),
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    });
    await store.users.create(newUserRecord({ id: userId, username: 'grace', passwordHash: 'unused', createdAt: Date.now() }));
    const minted: { code: string; verifier: string }[] = [];
    await store.transaction(async (tx) => {
      for (let i = 0; i < 12; i += 1) {
        const grantId = randomUUID();
        const now = Date.now();
        await tx.grants.create({
          id: grantId,
          userId,
          clientId,
          scope: ['openid'],
          kind: GRANT_AUTHORIZATION_CODE,
          authTime: now,
          createdAt: now,
          revokedAt: null,
          device: null,
        });
        const code = randomToken(32);
        const verifier = randomToken(32);
        await tx.codes.create({
          hash: hashSecret(code),
          clientId,
          userId,
          grantId,
          redirectUri: REDIRECT_URI,
          scope: ['openid'],
          nonce: null,
          codeChallenge: s256(verifier),
          authTime: now,
          sid: null,
          createdAt: now,
          expiresAt: now + 60_000,
          consumedAt: null,
          dpopJkt: null,
          idTokenClaims: [],
        });
        minted.push({ code, verifier });
      }
    });
    serving = await serveTessera(['--workers', '4'], { TESSERA_DATABASE: database }, 4);
    const url = serving.url;
    const exchange = ({ code, verifier }: { code: string; verifier: string }) =>
      request(`${url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString(),
      }).then(async (response) => ({ status: response.status, body: (await response.json()) as { error?: string; id_token?: string } }));
    // Six redemptions of each code at once, each on a connection of its own, so that the
    // workers race each other for every code.
    const answers = await Promise.all(minted.map((each) => Promise.all(Array.from({ length: 6 }, () => exchange(each)))));
    for (const [index, redemptions] of answers.entries()) {
      const granted = redemptions.filter((answer) => answer.status === 200);
      assert.equal(granted.length, 1, `code ${index + 1}: ${redemptions.map((answer) => answer.status).join(', ')}`);
      assert.equal(typeof granted[0]!.body.id_token, 'string');
      for (const refused of redemptions.filter((answer) => answer.status !== 200)) {
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error, 'invalid_grant');
      }
    }
    assert.equal(await serving.stop(), 0);
  });

  it('loses no answered device authorization when a worker is killed with SIGKILL under load, and the others keep answering', {
    skip: !existsSync('/proc/self/task') && 'needs Linux /proc',
  }, async () => {
    const database = join(dir, 'killed.db');
    const killStore = await openStore(database);
    const clientId = `device-${randomUUID()}`;
    const clientSecret = randomToken(32);
    await killStore.clients.create({
      id: clientId,
      name: 'Killed',
      secretHash: hashSecret(clientSecret),
      redirectUris: [],
      scopes: ['openid'],
      grantTypes: [GRANT_DEVICE_CODE],
      webOrigins: [],
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: Date.now(),
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    });
    await killStore.close();
    const killed = await serveTessera(
      ['--workers', '4'],
      {
        TESSERA_DATABASE: database,
        TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT: '1000000',
        TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '1000000',
      },
      4,
    );
    try {
      const post = (path: string, body: Record<string, string>) =>
        request(`${killed.url}${path}`, {
          method: 'POST',
          headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(body).toString(),
          // A connection the primary had handed to the killed worker can stay open unanswered
          // (node:cluster keeps its copy until the worker acknowledges it): given up on here.
          signal: AbortSignal.timeout(5000),
        });
      const answered: string[] = [];
      let failed = 0;
      let stop = false;
      // Eight clients starting devices one after another, each on connections of its own.
      const loops = Array.from({ length: 8 }, async () => {
        while (!stop) {
          try {
            const response = await post('/oauth/device/authorization', { scope: 'openid' });
            if (response.status === 200) answered.push(((await response.json()) as { device_code: string }).device_code);
            else failed += 1;
          } catch {
            // The killed worker's connections end without an answer: nothing was acknowledged.
            failed += 1;
          }
        }
      });
      // Until the workers answer (on a loaded machine their first answers take seconds), then a moment more.
      const until = async (done: () => boolean, ms: number) => {
        for (const deadline = Date.now() + ms; !done() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
      };
      await until(() => answered.length > 0, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const victims = readFileSync(`/proc/${killed.child.pid}/task/${killed.child.pid}/children`, 'utf8').trim().split(/\s+/);
      const before = answered.length;
      process.kill(Number(victims[0]), 'SIGKILL');
      await new Promise((resolve) => setTimeout(resolve, 600));
      await until(() => answered.length > before, 10_000);
      const during = answered.length - before;
      stop = true;
      await Promise.all(loops);
      assert.ok(before > 0, 'devices were started before the kill');
      assert.ok(during > 0, 'the other workers kept answering after the kill');
      // Every device code answered 200 is in the file (the answer came after its commit)...
      const file = new DatabaseSync(database, { readOnly: true });
      try {
        const stored = file.prepare('SELECT 1 FROM device_authorizations WHERE device_code_hash = ?');
        const missing = answered.filter((deviceCode) => stored.get(hashSecret(deviceCode)) === undefined);
        assert.deepEqual(missing, [], `${missing.length} of ${answered.length} answered device codes are not stored (${failed} requests unanswered)`);
      } finally {
        file.close();
      }
      // ...and the surviving workers answer for them: the last few polled say authorization_pending.
      for (const deviceCode of answered.slice(-5)) {
        const poll = await post('/oauth/token', { grant_type: GRANT_DEVICE_CODE, device_code: deviceCode });
        assert.equal(((await poll.json()) as { error?: string }).error, 'authorization_pending');
      }
    } finally {
      if (killed.child.exitCode === null) {
        killed.child.kill('SIGKILL');
        await killed.exited;
      }
    }
  });
});

describe('tessera serve --workers with a bad count', () => {
  it('prints the usage and exits with status 2', async () => {
    const { code, stderr } = await runTessera(['serve', '--workers', '0'], { TESSERA_DATABASE: ':memory:' });
    assert.equal(code, 2);
    assert.match(stderr, /--workers 0: must be a whole number from 1 to 64/);
  });
});

describe('a worker whose command ends without serving', () => {
  it('exits with its status, so that the primary hears of it instead of waiting', async () => {
    // A primary of its own in a child process (node:cluster's settings are the process's), from
    // a file: a primary run with -e would hand its workers the same -e.
    const dir = mkdtempSync(join(tmpdir(), 'tessera-cluster-'));
    const primary = join(dir, 'primary.mjs');
    writeFileSync(
      primary,
      `
      import cluster from 'node:cluster';
      cluster.setupPrimary({ exec: ${JSON.stringify(new URL('../bin/tessera.js', import.meta.url).pathname)}, args: ['no-such-command'], silent: true });
      const worker = cluster.fork();
      const hung = setTimeout(() => { process.stdout.write('still running'); worker.kill(); }, 10_000);
      worker.on('exit', (code) => { clearTimeout(hung); process.stdout.write('exit ' + code); });
    `,
    );
    try {
      const child = spawn(process.execPath, [primary], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      await new Promise((resolve) => child.on('exit', resolve));
      assert.equal(out, 'exit 2');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

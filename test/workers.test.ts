import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer as createTcpServer, Server as NetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Worker } from 'node:worker_threads';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { hashSecret, randomToken, s256 } from '../src/core/crypto.ts';
import { deviceCodeKey } from '../src/flows/device/device-code.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, type GrantType } from '../src/core/protocol.ts';
import { loadConfig } from '../src/config/index.ts';
import { startThreads, type ThreadedServer } from '../src/main.ts';
import { openStore } from '../src/store/open.ts';
import { newUserRecord, type Store } from '../src/store/types.ts';
import { outputMatches, runTessera, serveOnNewDatabase, serveTessera, type ServingCommand } from './helpers/cli.ts';
import { basic, REDIRECT_URI } from './helpers/server.ts';
import { approvedGrant, pendingCode, clientRecord } from './store/fixtures.ts';
import { until, WAIT_MS, within } from './helpers/wait.ts';

/**
 * A request on a connection of its own, so that the kernel (or the cluster) hands it to
 * whichever worker is next. Given up after WAIT_MS unless `init` has a signal of its own: a
 * worker that never answers (its writes lost on the way to the writer) fails the test in
 * seconds rather than at the runner's two-minute timeout.
 */
async function request(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    signal: AbortSignal.timeout(WAIT_MS),
    ...init,
    headers: { ...(init.headers as Record<string, string>), connection: 'close' },
  });
}

/** A confidential client (HTTP Basic) of `grantTypes`, registered in `store`. */
async function confidentialClient(store: Store, name: string, grantTypes: GrantType[]): Promise<{ clientId: string; clientSecret: string }> {
  const clientId = `client-${randomUUID()}`;
  const clientSecret = randomToken(32);
  await store.clients.create(
    clientRecord({
      id: clientId,
      name,
      secretHash: hashSecret(clientSecret),
      authMethod: 'client_secret_basic',
      redirectUris: grantTypes.includes(GRANT_AUTHORIZATION_CODE) ? [REDIRECT_URI] : [],
      scopes: ['openid', 'profile'],
      grantTypes,
      createdAt: Date.now(),
    }),
  );
  return { clientId, clientSecret };
}

/** A client of the code grant, and a person to sign in, registered in `store`. */
async function codeClient(store: Store, name: string): Promise<{ clientId: string; clientSecret: string; userId: string }> {
  const client = await confidentialClient(store, name, [GRANT_AUTHORIZATION_CODE]);
  const userId = `sub-${randomUUID()}`;
  await store.users.create(newUserRecord({ id: userId, username: `person-${userId}`, passwordHash: 'unused', createdAt: Date.now() }));
  return { ...client, userId };
}

interface Minted {
  readonly code: string;
  readonly verifier: string;
}

/** `count` codes the person approved for the client (each with its grant, PKCE S256), stored in one transaction. */
async function mintCodes(store: Store, { clientId, userId }: { clientId: string; userId: string }, count: number): Promise<Minted[]> {
  const minted: Minted[] = [];
  await store.transaction(async (tx) => {
    for (let i = 0; i < count; i += 1) {
      const grantId = randomUUID();
      const now = Date.now();
      await tx.grants.create(approvedGrant({ id: grantId, userId, clientId }, now));
      const code = randomToken(32);
      const verifier = randomToken(32);
      await tx.codes.create(
        pendingCode(
          hashSecret(code),
          { id: grantId, clientId, userId },
          { redirectUri: REDIRECT_URI, codeChallenge: s256(verifier), authTime: now, createdAt: now, expiresAt: now + 60_000 },
        ),
      );
      minted.push({ code, verifier });
    }
  });
  return minted;
}

/** The client redeems `minted` at the token endpoint of `url` (RFC 6749 §4.1.3), on a connection of its own. */
function exchange(url: string, { clientId, clientSecret }: { clientId: string; clientSecret: string }, { code, verifier }: Minted): Promise<Response> {
  return request(`${url}/oauth/token`, {
    method: 'POST',
    headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier }).toString(),
  });
}

/**
 * Twenty discovery requests at once to a `tessera serve --workers N` on a port it picked, from
 * its first line that says it serves, while its other threads may still be starting. The kernel
 * deals each connection to one of the sockets listening on the port (SO_REUSEPORT): of twenty
 * at once, some would have reached a socket that never answers, had one been left. Such a
 * connection is never answered: each gets 8 s, not the usual 20, so that the break fails the
 * test in seconds (a discovery document takes milliseconds).
 */
async function answersEveryConnection(url: string): Promise<void> {
  const statuses = await Promise.all(
    Array.from({ length: 20 }, () =>
      request(`${url}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(8000) }).then((response) => response.status),
    ),
  );
  assert.deepEqual(statuses, Array(20).fill(200));
}

describe('tessera serve --workers 2', () => {
  let dir: string;
  let url: string;
  let serving: ServingCommand;
  let store: Store;
  let client: { clientId: string; clientSecret: string; userId: string };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-workers-'));
    const database = join(dir, 'tessera.db');
    store = await openStore(database);
    client = await codeClient(store, 'Workers');
    // Resolved at the first line that says it serves, for the first test; the others wait for both (`bothServing`).
    serving = await serveTessera(['--workers', '2'], { TESSERA_DATABASE: database, TESSERA_SHUTDOWN_DELAY: '3' });
    url = serving.url;
  });
  const bothServing = () => outputMatches(serving, /Tessera is serving/, 2);

  after(async () => {
    if (serving && serving.child.exitCode === null) {
      serving.child.kill('SIGKILL');
      await serving.exited;
    }
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Two: the main thread serves too and lets go of the port it held once it listens.
  it('answers every connection from the first line that says it serves: no socket is left on the port that never answers', async () => {
    await answersEveryConnection(url);
  });

  it('serves from the main thread and a worker thread of the one process, with no child process', {
    skip: !existsSync('/proc/self/task') && 'needs Linux /proc',
  }, async () => {
    await bothServing();
    const children = readFileSync(`/proc/${serving.child.pid}/task/${serving.child.pid}/children`, 'utf8').trim();
    assert.equal(children, '');
    const pids = serving
      .output()
      .stdout.split('\n')
      .filter((line) => line.includes('Tessera is serving'))
      .map((line) => (JSON.parse(line) as { pid: number }).pid);
    assert.deepEqual(pids, [serving.child.pid, serving.child.pid]);
  });

  it('publishes the same signing keys from every worker', async () => {
    await bothServing();
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
    await bothServing();
    const minted = await mintCodes(store, client, 6);
    const jwks = createLocalJWKSet((await (await request(`${url}/.well-known/jwks.json`)).json()) as JSONWebKeySet);
    for (const response of await Promise.all(minted.map((each) => exchange(url, client, each)))) {
      assert.equal(response.status, 200);
      const { id_token } = (await response.json()) as { id_token: string };
      const { payload } = await jwtVerify(id_token, jwks, { issuer: url, audience: client.clientId });
      assert.equal(payload.sub, client.userId);
    }
    const replays = await Promise.all(minted.map((each) => exchange(url, client, each)));
    for (const replay of replays) {
      assert.equal(replay.status, 400);
      assert.equal(((await replay.json()) as { error: string }).error, 'invalid_grant');
    }
  });

  it('drains every worker on SIGTERM (/readyz 503 while still serving), then exits cleanly', async () => {
    await bothServing();
    serving.child.kill('SIGTERM');
    // The signal reaches the main thread, and through it each worker thread, a moment after
    // kill() returns (longer on a loaded machine), and a /readyz answered before that says 200:
    // within the shutdown delay (3 s), eight at once on connections of their own, so that both
    // workers answer some of them, are all answered 503, by a server still serving.
    await until(
      'every worker to answer /readyz with 503',
      async () => {
        const ready = await Promise.all(Array.from({ length: 8 }, () => request(`${url}/readyz`).then((response) => response.status)));
        return ready.every((status) => status === 503);
      },
      2500,
    );
    assert.equal(await serving.exited, 0);
  });
});

// Two: the main thread serves too and lets go of the port it held once it listens. Four: the
// main thread only writes (WRITER_ONLY_FROM), and lets go when the first worker thread asks.
// Each on a server of its own: the signal must reach it at its first line.
for (const workers of [2, 4]) {
  describe(`tessera serve --workers ${workers} on a port it picks (PORT=0)`, () => {
    it('stops cleanly on a SIGTERM sent at the first line that says it serves, while other threads may still be starting', async (t) => {
      const serving = await serveOnNewDatabase(t, 'tessera-workers-early-', ['--workers', String(workers)], { TESSERA_SHUTDOWN_DELAY: '0' });
      serving.child.kill('SIGTERM');
      // Killed by the signal itself, the exit code would be null: a rolling deploy's requests cut off.
      assert.equal(await within(serving.exited, 'tessera serve to stop on SIGTERM', WAIT_MS), 0, JSON.stringify(serving.output()));
    });
  });
}

describe('tessera serve --workers 4 on one SQLite file', () => {
  let dir: string;
  let database: string;
  /**
   * One `tessera serve --workers 4` for the connections answered from its first line, the race
   * of the code redemptions and then the SIGKILL under load, which ends it: each start of its
   * four threads and writer costs about 2.5 s of CPU, and none of the three needs a server of
   * its own (the race's codes and the load's devices are of clients of their own). Resolved at
   * its first line that says it serves, for the first test; the others wait for all four
   * (`allServing`).
   */
  let serving: ServingCommand;
  let codes: { clientId: string; clientSecret: string; userId: string };
  let devices: { clientId: string; clientSecret: string };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-workers-4-'));
    database = join(dir, 'tessera.db');
    const store = await openStore(database);
    codes = await codeClient(store, 'Races');
    devices = await confidentialClient(store, 'Killed', [GRANT_DEVICE_CODE]);
    // Closed before the kill as before it: no other connection holds the file then.
    await store.close();
    serving = await serveTessera(['--workers', '4'], { TESSERA_DATABASE: database, ...UNLIMITED });
  });
  const allServing = () => outputMatches(serving, /Tessera is serving/, 4);

  after(async () => {
    if (serving && serving.child.exitCode === null && serving.child.signalCode === null) {
      serving.child.kill('SIGKILL');
      await serving.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  // Four: the main thread only writes (WRITER_ONLY_FROM), and lets go of the port it held when the first worker thread asks.
  it('answers every connection from the first line that says it serves: no socket is left on the port that never answers', async () => {
    await answersEveryConnection(serving.url);
  });

  it('gives tokens for each code to exactly one of the concurrent redemptions spread over the four workers', async () => {
    await allServing();
    const client = codes;
    const store = await openStore(database);
    const minted = await mintCodes(store, client, 12).finally(() => store.close());
    const url = serving.url;
    const redeem = (each: Minted) =>
      exchange(url, client, each).then(async (response) => ({
        status: response.status,
        body: (await response.json()) as { error?: string; id_token?: string },
      }));
    // Six redemptions of each code at once, each on a connection of its own, so that the
    // workers race each other for every code.
    const answers = await Promise.all(minted.map((each) => Promise.all(Array.from({ length: 6 }, () => redeem(each)))));
    for (const [index, redemptions] of answers.entries()) {
      const granted = redemptions.filter((answer) => answer.status === 200);
      assert.equal(granted.length, 1, `code ${index + 1}: ${redemptions.map((answer) => answer.status).join(', ')}`);
      assert.equal(typeof granted[0]!.body.id_token, 'string');
      for (const refused of redemptions.filter((answer) => answer.status !== 200)) {
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error, 'invalid_grant');
      }
    }
  });

  /** A file with a device client of its own, for the load below. */
  const deviceClient = async (database: string) => {
    const created = await openStore(database);
    const client = await confidentialClient(created, 'Killed', [GRANT_DEVICE_CODE]);
    await created.close();
    return client;
  };
  const UNLIMITED = { TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT: '1000000', TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '1000000' };

  /** `clients` clients starting devices one after another, each request on a connection of its own, until `stop`. */
  const load = (url: string, { clientId, clientSecret }: { clientId: string; clientSecret: string }, clients = 8) => {
    const post = (path: string, body: Record<string, string>) =>
      request(`${url}${path}`, {
        method: 'POST',
        headers: { authorization: basic(clientId, clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(body).toString(),
        signal: AbortSignal.timeout(5000),
      });
    const state = { answered: [] as string[], failed: 0, stop: false };
    const loops = Array.from({ length: clients }, async () => {
      while (!state.stop) {
        try {
          const response = await post('/oauth/device/authorization', { scope: 'openid' });
          if (response.status === 200) state.answered.push(((await response.json()) as { device_code: string }).device_code);
          else state.failed += 1;
        } catch {
          // A connection that ends without an answer: nothing was acknowledged.
          state.failed += 1;
        }
      }
    });
    const done = () => {
      state.stop = true;
      return Promise.all(loops);
    };
    return { state, post, done };
  };
  /** Until `done` (on a loaded machine the first answers take seconds), or `ms`. */
  const until = async (done: () => boolean, ms: number) => {
    for (const deadline = Date.now() + ms; !done() && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 50));
  };
  /** The answered device codes that the file lacks. */
  const missingFrom = (database: string, answered: readonly string[]) => {
    const file = new DatabaseSync(database, { readOnly: true });
    try {
      const stored = file.prepare('SELECT 1 FROM device_authorizations WHERE device_code_hash = ?');
      return answered.filter((deviceCode) => stored.get(deviceCodeKey(deviceCode)) === undefined);
    } finally {
      file.close();
    }
  };

  it('loses no answered device authorization when the whole process is killed with SIGKILL under load', async () => {
    await allServing();
    const client = devices;
    const killed = serving;
    let restarted: ServingCommand | undefined;
    try {
      // Many requests in flight, so that the kill finds writes between their answer and their commit if such a moment exists.
      const { state, done } = load(killed.url, client, 48);
      await until(() => state.answered.length > 0, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 400));
      killed.child.kill('SIGKILL');
      await killed.exited;
      await done();
      assert.ok(state.answered.length > 0, 'devices were started before the kill');
      // Every device code answered 200 is in the file (the answer came after its commit)...
      const missing = missingFrom(database, state.answered);
      assert.deepEqual(missing, [], `${missing.length} of ${state.answered.length} answered device codes are not stored (${state.failed} requests unanswered)`);
      // ...and a server started again on it answers for them: authorization_pending. Two
      // threads read the file as four would, at half the starts (about 1.5 s of CPU less).
      restarted = await serveTessera(['--workers', '2'], { TESSERA_DATABASE: database, ...UNLIMITED }, 2);
      // No loops of devices this time (none would ever be stopped): five polls, one after another.
      const { post } = load(restarted.url, client, 0);
      for (const deviceCode of state.answered.slice(-5)) {
        const poll = await post('/oauth/token', { grant_type: GRANT_DEVICE_CODE, device_code: deviceCode });
        assert.equal(((await poll.json()) as { error?: string }).error, 'authorization_pending');
      }
      assert.equal(await restarted.stop(), 0);
    } finally {
      for (const each of [killed, restarted]) {
        if (each && each.child.exitCode === null && each.child.signalCode === null) {
          each.child.kill('SIGKILL');
          await each.exited;
        }
      }
    }
  });

  /**
   * The in-process server of four threads (`startThreads`) of the two tests below: the one that
   * replaces a thread killed under load, then the one that closes it while the replacement of
   * another is still starting. Started by whichever runs first; four threads' starts cost about
   * 2.5 s of CPU, and the close needs only one thread more to be starting.
   */
  let threaded: Promise<{ server: ThreadedServer; client: { clientId: string; clientSecret: string }; database: string }> | undefined;
  const inProcess = () =>
    (threaded ??= (async () => {
      const database = join(dir, 'thread.db');
      const client = await deviceClient(database);
      const server = await startThreads({
        ...loadConfig({ TESSERA_DATABASE: database, HOST: '127.0.0.1', PORT: '0', TESSERA_LOG_LEVEL: 'silent', ...UNLIMITED }),
        workers: 4,
      });
      return { server, client, database };
    })());
  after(async () => {
    if (threaded) await within((await threaded).server.close(), 'the in-process server to close', WAIT_MS);
  });

  it('replaces a worker thread that dies under load; the others keep answering, and no answered write is lost', async () => {
    const { server, client, database } = await inProcess();
    const before = server.threads().map((thread) => thread.threadId);
    // Four servers, all worker threads: from WRITER_ONLY_FROM workers on, the main thread only writes.
    assert.equal(before.length, 4);
    const { state, post, done } = load(server.url, client);
    await until(() => state.answered.length > 0, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const answeredBefore = state.answered.length;
    const replaced = () => {
      const now = server.threads().map((thread) => thread.threadId);
      return now.length === 4 && !now.includes(before[0]!);
    };
    await server.threads()[0]!.terminate();
    await until(() => state.answered.length > answeredBefore + 20 && replaced(), 20_000);
    const during = state.answered.length - answeredBefore;
    await done();
    assert.ok(during > 0, 'the other threads kept answering');
    const after = server.threads().map((thread) => thread.threadId);
    assert.equal(after.length, 4, 'a thread took its place');
    assert.ok(!after.includes(before[0]!), 'the stopped thread is gone');
    for (const other of before.slice(1)) assert.ok(after.includes(other), 'the others were left alone');
    const missing = missingFrom(database, state.answered);
    assert.deepEqual(missing, [], `${missing.length} of ${state.answered.length} answered device codes are not stored`);
    // Every thread, the new one too, answers for them: a request on each of a few connections.
    const polls = await Promise.all(
      state.answered
        .slice(-8)
        .map((deviceCode) => post('/oauth/token', { grant_type: GRANT_DEVICE_CODE, device_code: deviceCode }).then((poll) => poll.json())),
    );
    for (const poll of polls) assert.equal((poll as { error?: string }).error, 'authorization_pending');
  });

  it('closes within seconds when told to while a replacement thread is still starting', async () => {
    const { server } = await inProcess();
    await server.threads()[0]!.terminate();
    // Its replacement is still loading its modules: the close reaches it before it serves, and
    // must be carried out once it does, or closing waits for that thread for ever.
    await within(server.close(), 'the server to close with a thread still starting', 10_000);
  });
});

describe('a worker thread that cannot start', () => {
  it('stops the whole start with its reason and exit status 1, rather than being started again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-refused-'));
    // The admin listener's port is taken: each thread finds it so once the main thread has started it.
    const taken = createTcpServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const { code, stderr } = await runTessera(['serve', '--workers', '2'], {
        TESSERA_DATABASE: join(dir, 'tessera.db'),
        TESSERA_DATABASE_CREATE: 'true',
        HOST: '127.0.0.1',
        PORT: '0',
        TESSERA_ADMIN_LISTEN: `127.0.0.1:${port}`,
      });
      assert.equal(code, 1);
      assert.match(stderr, new RegExp(`tessera: cannot start: TESSERA_ADMIN_LISTEN: port ${port} is already in use`));
    } finally {
      taken.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('worker threads that cannot start, with the main thread only writing (four) on a port it picked', () => {
  it('lets go of the port it held, so that the process can exit, rather than holding it open serving nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-refused-4-'));
    await (await openStore(join(dir, 'tessera.db'))).close();
    // A thread that dies before it asks for the port (`bound`): the start fails. Nothing of the
    // main thread listened on the port, so only the failed start can let go of it.
    const killFirst = (worker: Worker) => void worker.terminate();
    process.once('worker', killFirst);
    // The servers listening in this process: earlier files' may still be closing, so only a new one counts.
    const listening = () =>
      new Set(
        (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().filter((handle) => handle instanceof NetServer && handle.listening),
      );
    const before = listening();
    try {
      await assert.rejects(
        startThreads({ ...loadConfig({ TESSERA_DATABASE: join(dir, 'tessera.db'), HOST: '127.0.0.1', PORT: '0', TESSERA_LOG_LEVEL: 'silent' }), workers: 4 }),
        /a worker thread exited before it could serve/,
      );
      assert.deepEqual(
        [...listening()].filter((server) => !before.has(server)).map((server) => (server as NetServer).address()),
        [],
        'no listening socket is left behind',
      );
    } finally {
      process.off('worker', killFirst);
      rmSync(dir, { recursive: true, force: true });
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

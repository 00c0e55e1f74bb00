/**
 * The database unavailable while the server runs: requests that need it are
 * answered 503 `temporarily_unavailable` with Retry-After, as JSON or as a page, within the
 * configured time limits rather than hanging or failing with a 500, and the same server
 * serves again once the database is back, without a restart.
 *
 * The server talks to PostgreSQL through a TCP proxy written here, which can forward, drop
 * every connection and refuse new ones (a database that went down), or accept and forward
 * nothing (a database or network that went silent). On SQLite, another process holds the
 * write lock for longer than the busy timeout.
 */

import assert from 'node:assert/strict';
import { createServer, Socket, type Server } from 'node:net';
import { DatabaseSync } from 'node:sqlite';
import { after, afterEach, before, describe, it } from 'node:test';
import type pg from 'pg';
import { deviceLogin } from '../src/cli/device-login.ts';
import { deviceCodeKey } from '../src/flows/device/device-code.ts';
import { StoreUnavailableError } from '../src/store/errors.ts';
import { FormBrowser } from './helpers/browser.ts';
import { BrowserAt, DEVICE_GRANT, startDevice } from './helpers/device.ts';
import { deviceSignIn } from './helpers/lifecycle.ts';
import { describePostgres, freshPostgresDatabase, postgresUrl, withAdmin } from './helpers/postgres.ts';
import { basic, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizeUrl, startWithApp } from './helpers/fixtures.ts';
import { until } from './helpers/wait.ts';

type Mode = 'forward' | 'down' | 'silent';

/** A TCP proxy to PostgreSQL whose behaviour the test switches. */
class DatabaseProxy {
  readonly #server: Server = createServer((socket) => this.#accept(socket));
  readonly #upstream: { host: string; port: number };
  readonly #pairs = new Set<{ client: Socket; upstream: Socket; lostData: boolean }>();
  #mode: Mode = 'forward';
  port = 0;
  /** The most connections open through the proxy at any one time. */
  mostConnections = 0;
  /** Connections the client (pg) closed: its FIN or reset seen here. */
  closedByClient = 0;

  constructor(upstream: { host: string; port: number }) {
    this.#upstream = upstream;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.port, '127.0.0.1', () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('the proxy has no address');
    this.port = address.port;
  }

  #accept(client: Socket): void {
    const upstream = new Socket();
    const pair = { client, upstream, lostData: false };
    this.#pairs.add(pair);
    this.mostConnections = Math.max(this.mostConnections, this.#pairs.size);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.#pairs.delete(pair);
    };
    // On the client's FIN already: pg opens a replacement once its side has closed, which
    // can be before this side sees 'close'.
    const closedByClient = () => {
      if (this.#pairs.has(pair)) this.closedByClient += 1;
      drop();
    };
    client.on('error', closedByClient).on('end', closedByClient).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    // Silent: the connection is accepted and nothing goes either way.
    if (this.#mode === 'silent') pair.lostData = true;
    else upstream.connect(this.#upstream.port, this.#upstream.host);
    const relay = (from: Socket, to: Socket) =>
      from.on('data', (chunk: Buffer) => {
        if (this.#mode === 'forward' && !pair.lostData) to.write(chunk);
        else pair.lostData = true;
      });
    relay(client, upstream);
    relay(upstream, client);
  }

  /** The local ports of the proxy's connections to PostgreSQL: the `client_port` of their backends. */
  upstreamPorts(): number[] {
    return [...this.#pairs].flatMap((pair) => (pair.upstream.localPort === undefined ? [] : [pair.upstream.localPort]));
  }

  /** PostgreSQL went down: every open connection is cut and new ones are refused. */
  async down(): Promise<void> {
    this.#mode = 'down';
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const pair of this.#pairs) pair.client.destroy();
    await closed;
  }

  /** PostgreSQL, or the network to it, went silent: connections stay open, nothing arrives. */
  silent(): void {
    this.#mode = 'silent';
  }

  /** PostgreSQL is back. A connection that lost data in between is cut, as TCP would. */
  async restore(): Promise<void> {
    const wasDown = this.#mode === 'down';
    this.#mode = 'forward';
    for (const pair of this.#pairs) if (pair.lostData) pair.client.destroy();
    if (wasDown) await this.start();
  }

  async close(): Promise<void> {
    for (const pair of this.#pairs) pair.client.destroy();
    if (this.#server.listening) await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/**
 * The time limits the server runs with here, and how long any one request may take during
 * an outage: one connection wait plus one unanswered statement, many times over, so a
 * loaded machine does not fail the test, while a request that waits for the database
 * (minutes, or for ever) does.
 */
const LIMIT_SECONDS = 1;
const POOL_SIZE = 3;
const ANSWER_BOUND_MS = 8 * (LIMIT_SECONDS + LIMIT_SECONDS) * 1000;

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/** A request that fails the test if it is not answered within `ANSWER_BOUND_MS`. */
async function request(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, { redirect: 'manual', ...init, signal: AbortSignal.timeout(ANSWER_BOUND_MS) });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** RFC 6749 §5.2 JSON with `temporarily_unavailable`, a 503, Retry-After and nothing else. */
function assertUnavailableJson(answer: Answer, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${answer.text}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, what);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], `${what}: ${answer.text}`);
  assert.equal(body['error'], 'temporarily_unavailable', what);
  assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/, `${what}: Retry-After`);
  assert.equal(answer.headers.get('cache-control'), 'no-store', what);
}

/** The error page with a 503 and Retry-After. */
function assertUnavailablePage(answer: Answer, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${answer.text.slice(0, 500)}`);
  assert.match(answer.headers.get('content-type') ?? '', /^text\/html/, what);
  assert.match(answer.text, /<h1>Temporarily unavailable<\/h1>/, what);
  assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/, `${what}: Retry-After`);
}

/** A form post to `path` as the client (HTTP Basic), answered within `ANSWER_BOUND_MS`. */
function clientPost(server: TestServer, client: TestClient, path: string, form: Record<string, string>): Promise<Answer> {
  return request(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: basic(client.clientId, client.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
  });
}

describePostgres('PostgreSQL outage', () => {
  const upstream = new URL(postgresUrl);
  const proxy = new DatabaseProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
  let database: { url: string; drop(): Promise<void> };
  let server: TestServer;
  let client: TestClient;
  let user: TestUser;
  let accessToken: string;
  let deviceCode: string;
  let cookie: string;

  before(async () => {
    await proxy.start();
    database = await freshPostgresDatabase();
    const proxied = new URL(database.url);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    ({ server, client, user } = await startWithApp({
      server: {
        database: proxied.href,
        env: {
          TESSERA_DATABASE_POOL_SIZE: String(POOL_SIZE),
          TESSERA_DATABASE_STATEMENT_TIMEOUT: String(LIMIT_SECONDS),
          TESSERA_DATABASE_CONNECT_TIMEOUT: String(LIMIT_SECONDS),
        },
      },
      client: { name: 'Living Room TV' },
    }));
    accessToken = (await deviceSignIn(server, client, user)).access_token;
    deviceCode = (await startDevice(server, client)).device_code;
    const browser = new FormBrowser(server.url);
    const login = await browser.follow(await browser.request('/account'));
    const account = await browser.follow(await browser.submit(login, '/login', { username: user.username, password: user.password }));
    assert.equal(account.status, 200);
    cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  });

  // A case that failed half-way leaves the next one a database that is up.
  afterEach(() => proxy.restore());

  after(async () => {
    await proxy.restore();
    await server?.close();
    await proxy.close();
    await database?.drop();
  });

  const devicePost = (path: string, form: Record<string, string>) => clientPost(server, client, path, form);
  const devicePoll = () => devicePost('/oauth/token', { grant_type: DEVICE_GRANT, device_code: deviceCode });

  /** What a device, a relying party and a person ask while PostgreSQL is unavailable, all at once. */
  /**
   * `clientMayBeCached`: while PostgreSQL is silent rather than gone, the client cache may
   * still trust what it heard until its heartbeat misses; an authorization request needs
   * nothing else until the person signs in, so the sign-in page is a right answer then.
   */
  async function assertUnavailable({ clientMayBeCached = false } = {}): Promise<void> {
    const authorize = authorizeUrl(server.url, { client_id: client.clientId, redirect_uri: REDIRECT_URI });
    const [deviceAuthorization, polled, userinfo, jwks, accountPage, authorization, health] = await Promise.all([
      devicePost('/oauth/device/authorization', { scope: 'openid' }),
      devicePoll(),
      // A valid token must not be called invalid because the keys could not be read.
      request(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } }),
      request(`${server.url}/.well-known/jwks.json`),
      request(`${server.url}/account`, { headers: { cookie } }),
      request(authorize.href),
      request(`${server.url}/healthz`),
    ]);
    assertUnavailableJson(deviceAuthorization, 'device authorization');
    assertUnavailableJson(polled, 'device poll');
    assertUnavailableJson(userinfo, 'userinfo');
    assertUnavailableJson(jwks, 'JWKS');
    assertUnavailablePage(accountPage, 'account page');
    // The redirect_uri cannot be checked against the client's without the database: no
    // redirect, the error is shown on the page (RFC 6749 §4.1.2.1).
    if (clientMayBeCached && authorization.status === 200) {
      assert.match(authorization.text, /<h1>Sign in<\/h1>/, 'authorization request from the client cache');
    } else {
      assertUnavailablePage(authorization, 'authorization request');
    }
    assert.equal(authorization.headers.get('location'), null);
    // The health check does not ask the database, so an outage does not empty the load balancer.
    assert.equal(health.status, 200);
  }

  /** Everything asked during the outage works again. */
  async function assertServing(): Promise<void> {
    const started = await devicePost('/oauth/device/authorization', { scope: 'openid' });
    assert.equal(started.status, 200, started.text);
    const polled = await devicePoll();
    assert.equal(polled.status, 400, polled.text);
    assert.match(JSON.parse(polled.text).error, /^(authorization_pending|slow_down)$/);
    assert.equal((await request(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } })).status, 200);
    assert.equal((await request(`${server.url}/.well-known/jwks.json`)).status, 200);
    const account = await request(`${server.url}/account`, { headers: { cookie } });
    assert.equal(account.status, 200);
    assert.match(account.text, /Living Room TV/);
  }

  /** Asks until the server serves again; a few 503s first are allowed, a hang or a restart are not. */
  async function eventuallyServing(): Promise<void> {
    const deadline = Date.now() + 4 * ANSWER_BOUND_MS;
    for (;;) {
      const answer = await request(`${server.url}/.well-known/jwks.json`);
      if (answer.status === 200) break;
      assertUnavailableJson(answer, 'JWKS while reconnecting');
      if (Date.now() > deadline) assert.fail('the server did not serve again after PostgreSQL came back');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await assertServing();
  }

  it('serves through the proxy while PostgreSQL is up', async () => {
    await assertServing();
  });

  it('answers 503 temporarily_unavailable while PostgreSQL is down, and serves again at once when it is back', async () => {
    await assertServing();
    await proxy.down();
    await assertUnavailable();
    // And again: nothing the first failures left behind makes the server hang or crash.
    await assertUnavailable();
    await proxy.restore();
    // The broken connections were discarded: the very next requests get fresh ones.
    await assertServing();
  });

  it('answers 503 within the time limits while PostgreSQL accepts connections but never answers, and serves again when it does', async () => {
    // The pool holds idle connections now, which go silent too: the statement time limit
    // must end the wait on those, and the connect time limit the wait for new ones.
    await assertServing();
    proxy.silent();
    await assertUnavailable({ clientMayBeCached: true });
    await proxy.restore();
    await eventuallyServing();
  });

  /** Runs `work` while another session holds the device request's row, so every poll of it waits for the lock. */
  function holdingDeviceRow(work: (admin: pg.Client) => Promise<void>): Promise<void> {
    const schema = new URL(database.url).searchParams.get('schema');
    assert.ok(schema);
    return withAdmin(async (admin) => {
      await admin.query('BEGIN');
      await admin.query(`SELECT 1 FROM ${admin.escapeIdentifier(schema)}.device_authorizations WHERE device_code_hash = $1 FOR UPDATE`, [
        deviceCodeKey(deviceCode),
      ]);
      try {
        await work(admin);
      } finally {
        await admin.query('ROLLBACK');
      }
    });
  }

  it('lets tessera device-login wait out an outage, backing off, instead of giving up', async () => {
    const output = { stdout: '', stderr: '' };
    const waits: number[] = [];
    const code = await deviceLogin(
      { issuer: server.url, clientId: client.clientId, clientSecret: client.clientSecret, scope: 'openid' },
      {
        stdout: (text) => (output.stdout += text),
        stderr: (text) => (output.stderr += text),
        fetch: globalThis.fetch,
        now: () => Date.now(),
        tty: false,
        // Waits are not slept through: the first poll comes during the outage, the second after it.
        async sleep(ms) {
          waits.push(ms);
          if (waits.length === 1) await proxy.down();
          if (waits.length === 2) {
            await proxy.restore();
            const userCode = /and enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})\n/.exec(output.stdout)?.[1];
            assert.ok(userCode, output.stdout);
            await new BrowserAt(server.url).decide(userCode, user, 'approve');
          }
        },
      },
    );
    assert.equal(code, 0, output.stderr);
    assert.match(output.stderr, /The server is temporarily unavailable; retrying in 10 seconds\./);
    assert.deepEqual(waits, [5000, 10_000]);
    assert.match(output.stdout, /Approved\./);
  });

  it('answers 503 when the connection drops while a statement is under way', async () => {
    await assertServing();
    await holdingDeviceRow(async (admin) => {
      const polled = devicePoll();
      await until(
        'the poll to wait for the lock',
        async () => {
          const waiting = await admin.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND client_port = ANY($1)`, [proxy.upstreamPorts()]);
          return (waiting.rowCount ?? 0) > 0;
        },
        ANSWER_BOUND_MS,
      );
      await proxy.down();
      assertUnavailableJson(await polled, 'poll cut off mid-statement');
    });
    await proxy.restore();
    await assertServing();
  });

  it('answers 503 when statements wait past the statement timeout on a live database, with no more connections than the pool size', async () => {
    await assertServing();
    proxy.mostConnections = 0;
    proxy.closedByClient = 0;
    await holdingDeviceRow(async () => {
      // PostgreSQL itself cancels the statement (57014, what statement_timeout raises).
      await assert.rejects(server.store.devices.poll(deviceCodeKey(deviceCode), client.clientId, Date.now()), (error: unknown) => {
        assert.ok(error instanceof StoreUnavailableError, String(error));
        assert.equal((error.cause as { code?: unknown }).code, '57014', String(error.cause));
        return true;
      });
      // More polls at once than the pool has connections: some wait on the lock, the rest
      // for a connection; all are answered 503.
      const polls = await Promise.all(Array.from({ length: 2 * POOL_SIZE + 1 }, devicePoll));
      for (const [index, answer] of polls.entries()) assertUnavailableJson(answer, `poll ${index + 1} waiting for a locked row`);
    });
    await assertServing();
    // The pool's connections, and the one that listens for client changes. On a loaded
    // machine pg may give up on an answer that came late (query_timeout, half a second after
    // the statement timeout) and close that connection, and the pool opens a replacement
    // that this proxy can see before it sees the old one's end: each such replacement may
    // overlap once. A pool past its size would open more without closing any.
    assert.ok(
      proxy.mostConnections <= POOL_SIZE + 1 + proxy.closedByClient,
      `${proxy.mostConnections} connections were open at once; the pool size is ${POOL_SIZE}, plus the listener, plus ${proxy.closedByClient} replaced`,
    );
  });
});

describe('SQLite write lock held by another process', () => {
  it('answers 503 temporarily_unavailable once the busy timeout has passed, and serves when the lock is free', async () => {
    const server = await startTestServer();
    try {
      const client = await server.addClient();
      // A `tessera` command, say, in the middle of a write transaction on the same file.
      const other = new DatabaseSync(server.config.database);
      other.exec('BEGIN IMMEDIATE');
      try {
        assertUnavailableJson(await clientPost(server, client, '/oauth/device/authorization', { scope: 'openid' }), 'device authorization');
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      const started = await clientPost(server, client, '/oauth/device/authorization', { scope: 'openid' });
      assert.equal(started.status, 200, started.text);
    } finally {
      await server.close();
    }
  });
});

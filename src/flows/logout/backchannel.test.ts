/**
 * OpenID Connect Back-Channel Logout 1.0 without a server of Tessera's own: the logout token
 * (§2.4) each client of an ended session is POSTed (§2.5), verified with jose against the
 * world's JWKS; which clients are told (those recorded for the session that registered a
 * back-channel logout URI, each once); the tries again with the configured delay, doubled,
 * for a client that cannot be reached or answers 5xx, and none for a 4xx or a redirect (§2.8);
 * what is logged when a client is given up; and a client that is slow holding up neither the
 * caller nor the other clients. The clients' endpoints are one HTTP listener on 127.0.0.1.
 * test/single-sign-on.test.ts drives the same from a browser's sign-out, a password change and
 * `tessera user disable`, through openid-client.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { ClientRecord, SessionRecord, UserRecord } from '../../store/types.ts';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../tokens/issue.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { clientRecord } from '../../../test/store/fixtures.ts';
import { within } from '../../../test/helpers/wait.ts';
import { sendLogoutTokens, type LogoutLog } from './backchannel.ts';

/** TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS: a value no other timer of the process waits for. */
const DELAY_MS = 7001;
const ATTEMPTS = 3;

/** A request one of the clients' endpoints got. */
interface Posted {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * The clients' back-channel logout endpoints, one path each, on a loopback port: each request
 * is recorded and answered with the next status scripted for its path (200 when none is left);
 * 'hold' keeps the answer until `release`. A 302 sends to /elsewhere, which a sender following
 * redirects would then ask.
 */
class Endpoints {
  readonly posted: Posted[] = [];
  readonly #scripts = new Map<string, (number | 'hold')[]>();
  readonly #held: (() => void)[] = [];
  readonly #arrivals = new Map<string, () => void>();
  #server: Server | null = null;
  #port = 0;

  async start(): Promise<void> {
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '';
        this.posted.push({ method: request.method ?? '', path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
        const answer = this.#scripts.get(path)?.shift() ?? 200;
        const arrived = this.#arrivals.get(path);
        this.#arrivals.delete(path);
        arrived?.();
        if (answer === 'hold') this.#held.push(() => response.writeHead(200).end());
        else response.writeHead(answer, answer === 302 ? { location: '/elsewhere' } : {}).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.#port = (server.address() as AddressInfo).port;
  }

  uri(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${this.#port}${path}`;
  }

  /** The answers to the next requests to `path`, in order. */
  script(path: string, ...answers: (number | 'hold')[]): void {
    this.#scripts.set(path, answers);
  }

  /** Resolves when the next request to `path` has come. */
  arrival(path: string): Promise<void> {
    return new Promise((resolve) => this.#arrivals.set(path, resolve));
  }

  /** Answers the requests held, 200. */
  release(): void {
    for (const answer of this.#held.splice(0)) answer();
  }

  to(path: string): Posted[] {
    return this.posted.filter((request) => request.path === path);
  }

  /** The logout tokens posted to `path`, in order. */
  tokens(path: string): string[] {
    return this.to(path).map((request) => new URLSearchParams(request.body).get('logout_token') ?? '');
  }

  async close(): Promise<void> {
    this.release();
    const server = this.#server;
    if (server === null) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

/** A loopback port nothing listens on: a connection to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Runs `run` with the waits between tries (multiples of DELAY_MS, the module's only such
 * timers) recorded and cut to nothing: the delays are checked, and nobody waits for them.
 */
async function withWaitsRecorded<T>(run: () => Promise<T>): Promise<{ result: T; waits: number[] }> {
  const real = globalThis.setTimeout;
  const waits: number[] = [];
  const recording = (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (typeof ms === 'number' && ms > 0 && ms % DELAY_MS === 0) {
      waits.push(ms);
      return real(callback, 0, ...args);
    }
    return real(callback, ms, ...args);
  };
  globalThis.setTimeout = recording as unknown as typeof setTimeout;
  try {
    return { result: await run(), waits };
  } finally {
    globalThis.setTimeout = real;
  }
}

describe('Back-Channel Logout 1.0 (sendLogoutTokens)', () => {
  let world: FlowWorld;
  let endpoints: Endpoints;
  let ada: UserRecord;
  let grace: UserRecord;
  let sessions = 0;

  before(async () => {
    world = await flowWorld({
      TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS: String(ATTEMPTS),
      TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS: String(DELAY_MS),
      // Longer than the test holds any answer: no try of a held request times out.
      TESSERA_BACKCHANNEL_LOGOUT_TIMEOUT: '60',
    });
    endpoints = new Endpoints();
    await endpoints.start();
    ada = await world.addUser({ username: 'ada' });
    grace = await world.addUser({ username: 'grace' });
  });
  after(async () => {
    await endpoints.close();
    await world.close();
  });

  /** A client the operator added (`tessera client add`), its back-channel logout URI on `path` of the endpoints, or none. */
  async function app(name: string, path: string | null): Promise<ClientRecord> {
    const uri = path === null ? {} : { backchannel_logout_uri: endpoints.uri(path) };
    return (await world.addClient({ client_name: name, redirect_uris: ['https://app.example/cb'], scope: 'openid', ...uri })).client;
  }

  /** A browser session of `user` in which `clients` were given an ID token (as the token endpoint records them). */
  async function session(user: UserRecord, clients: readonly ClientRecord[]): Promise<SessionRecord> {
    sessions += 1;
    const now = world.clock.now();
    const record: SessionRecord = {
      idHash: `hash-${sessions}`,
      sid: `sid-${sessions}`,
      userId: user.id,
      authTime: now,
      createdAt: now,
      expiresAt: now + 86_400_000,
      ip: null,
      userAgent: null,
    };
    for (const client of clients) await world.store.sessions.addClient(record.sid, client.id, record.expiresAt);
    return record;
  }

  /** A log that keeps what it is told. */
  function logged(): LogoutLog & { readonly lines: Record<string, unknown>[] } {
    const lines: Record<string, unknown>[] = [];
    return { lines, warn: (details, message) => void lines.push({ ...details, message }) };
  }

  /** Ends `ended`, waits for every delivery, and says how many clients there were, what was logged, and the waits between tries. */
  async function end(ended: readonly SessionRecord[]) {
    const log = logged();
    const { result, waits } = await withWaitsRecorded(async () => {
      const sent = await sendLogoutTokens(world.deps, ended, log);
      await sent.delivered;
      return sent.clients;
    });
    return { clients: result, warnings: log.lines, waits };
  }

  it('posts each client a form with one logout_token, which jose verifies against the JWKS with the claims of §2.4 and no nonce', async () => {
    const notes = await app('Notes', '/claims/notes');
    const wiki = await app('Wiki', '/claims/wiki');
    const ended = await session(ada, [notes, wiki]);
    const { clients, warnings } = await end([ended]);
    assert.equal(clients, 2);
    assert.deepEqual(warnings, []);

    const jwks = createLocalJWKSet(await world.keys.jwks());
    const jtis: unknown[] = [];
    for (const [client, path] of [
      [notes, '/claims/notes'],
      [wiki, '/claims/wiki'],
    ] as const) {
      const [request] = endpoints.to(path);
      assert.ok(request, `${client.name} was posted to`);
      // §2.5: "an HTTP POST request ... using the application/x-www-form-urlencoded format, with a logout_token parameter".
      assert.equal(request.method, 'POST');
      assert.equal(request.headers['content-type'], 'application/x-www-form-urlencoded');
      const form = new URLSearchParams(request.body);
      assert.deepEqual([...form.keys()], ['logout_token']);

      const { payload, protectedHeader } = await jwtVerify(form.get('logout_token')!, jwks, {
        issuer: FLOW_ISSUER,
        audience: client.id,
        typ: 'logout+jwt',
        algorithms: ['RS256'],
        currentDate: new Date(world.clock.now()),
        requiredClaims: ['iss', 'aud', 'iat', 'exp', 'jti', 'events', 'sub', 'sid'],
      });
      assert.equal(protectedHeader.typ, 'logout+jwt', '§2.4: typ logout+jwt');
      assert.equal(payload.aud, client.id, 'for this client alone');
      assert.deepEqual([payload.sub, payload['sid']], [ada.id, ended.sid]);
      // §2.4 events: "a JSON object that MUST contain the name http://schemas.openid.net/event/backchannel-logout", its value "{}".
      assert.deepEqual(payload['events'], { [BACKCHANNEL_LOGOUT_EVENT]: {} });
      assert.equal(BACKCHANNEL_LOGOUT_EVENT, 'http://schemas.openid.net/event/backchannel-logout');
      // §2.4: "A nonce Claim MUST NOT be present", so that it cannot pass for an ID token.
      assert.equal('nonce' in payload, false);
      assert.equal(payload.iat, Math.floor(world.clock.now() / 1000));
      assert.ok(payload.exp! > payload.iat! && payload.exp! - payload.iat! <= 120, `short-lived: ${payload.exp! - payload.iat!} s`);
      jtis.push(payload.jti);
    }
    assert.notEqual(jtis[0], jtis[1], 'each token its own jti');
  });

  it('tells only the clients recorded for the ended sessions that registered a URI, each once, whoever ends the session again', async () => {
    const notes = await app('Notes', '/who/notes');
    const quiet = await app('Quiet', null);
    const wiki = await app('Wiki', '/who/wiki');
    const adas = await session(ada, [notes, quiet]);
    const secondOfAdas = await session(ada, [notes]);
    const graces = await session(grace, [wiki, notes]);

    // Ada's two sessions end (one of them named twice); Grace's does not.
    const { clients } = await end([adas, secondOfAdas, adas]);
    assert.equal(clients, 2, "Notes once for each of Ada's sessions; Quiet registered no URI");
    assert.deepEqual(
      endpoints
        .tokens('/who/notes')
        .map((token) => decodeJwt(token))
        .map(({ sub, sid }) => [sub, sid])
        .sort(),
      [
        [ada.id, adas.sid],
        [ada.id, secondOfAdas.sid],
      ],
    );
    assert.deepEqual(endpoints.to('/who/wiki'), [], "Grace's session goes on: Wiki hears nothing");

    // Another road ending the same session (a second request, the command line) tells nobody again.
    assert.equal((await end([adas])).clients, 0);
    assert.equal(endpoints.to('/who/notes').length, 2);

    // Grace's session ends: its clients are told, each with her sub and that session's sid.
    assert.equal((await end([graces])).clients, 2);
    for (const path of ['/who/wiki', '/who/notes']) {
      const { sub, sid } = decodeJwt(endpoints.tokens(path).at(-1)!);
      assert.deepEqual([sub, sid], [grace.id, graces.sid], path);
    }
  });

  it(`tries a client that answers 5xx again after the configured delay, then twice it, with the same token (at most ${ATTEMPTS} tries)`, async () => {
    const flaky = await app('Flaky', '/retry/flaky');
    endpoints.script('/retry/flaky', 503, 502);
    const { warnings, waits } = await end([await session(ada, [flaky])]);
    const tokens = endpoints.tokens('/retry/flaky');
    assert.equal(tokens.length, 3, 'two 5xx answers, then delivered');
    assert.equal(new Set(tokens).size, 1, 'the same logout token on every try');
    assert.deepEqual(waits, [DELAY_MS, 2 * DELAY_MS], 'TESSERA_BACKCHANNEL_LOGOUT_RETRY_DELAY_MS, doubled before each later try');
    assert.deepEqual(warnings, [], 'delivered in the end: nothing to report');
  });

  it('gives up a client after the last try when it answers 5xx or cannot be reached, logging the client, its URI and why', async () => {
    const down = await app('Down', '/give-up/down');
    endpoints.script('/give-up/down', 500, 500, 500, 500);
    const refusedUri = `http://127.0.0.1:${await closedPort()}/logout`;
    const { client: unreachable } = await world.addClient({
      client_name: 'Unreachable',
      redirect_uris: ['https://app.example/cb'],
      scope: 'openid',
      backchannel_logout_uri: refusedUri,
    });
    const { clients, warnings, waits } = await end([await session(ada, [down, unreachable])]);
    assert.equal(clients, 2);
    assert.equal(endpoints.to('/give-up/down').length, ATTEMPTS, 'TESSERA_BACKCHANNEL_LOGOUT_ATTEMPTS tries, no more');
    assert.deepEqual(
      waits.sort((a, b) => a - b),
      [DELAY_MS, DELAY_MS, 2 * DELAY_MS, 2 * DELAY_MS],
      'each client waited for between its tries',
    );
    const byClient = new Map(warnings.map((line) => [line['client'], line]));
    assert.equal(warnings.length, 2, 'one line for each client given up');
    assert.deepEqual(byClient.get(down.id), {
      client: down.id,
      uri: endpoints.uri('/give-up/down'),
      problem: 'answered 500',
      message: 'back-channel logout could not be delivered',
    });
    const unreachableLine = byClient.get(unreachable.id);
    assert.equal(unreachableLine?.['uri'], refusedUri);
    assert.equal(unreachableLine?.['problem'], 'connection refused: nothing listens there (ECONNREFUSED)', 'why it failed, not fetch\'s "fetch failed"');
  });

  it('does not try again a client that answered 4xx (§2.8: the token was refused) or a redirect, which it does not follow', async () => {
    const refusing = await app('Refusing', '/once/refusing');
    const moved = await app('Moved', '/once/moved');
    endpoints.script('/once/refusing', 400);
    endpoints.script('/once/moved', 302);
    const { warnings, waits } = await end([await session(ada, [refusing, moved])]);
    assert.equal(endpoints.to('/once/refusing').length, 1);
    assert.equal(endpoints.to('/once/moved').length, 1);
    assert.deepEqual(endpoints.to('/elsewhere'), [], 'the redirect was not followed');
    assert.deepEqual(waits, []);
    assert.deepEqual(
      warnings.map(({ client, problem }) => [client, problem]).sort(),
      [
        [moved.id, 'answered 302'],
        [refusing.id, 'answered 400'],
      ].sort(),
    );
  });

  it('answers its caller once the tokens are signed, and a client that is slow to answer holds up no other', async () => {
    const slow = await app('Slow', '/slow/slow');
    const prompt = await app('Prompt', '/slow/prompt');
    endpoints.script('/slow/slow', 'hold');
    const slowArrived = endpoints.arrival('/slow/slow');
    const promptArrived = endpoints.arrival('/slow/prompt');
    const log = logged();
    // The slow client's answer is held until the test releases it: a caller that waited for it would wait for ever.
    const sent = await within(
      sendLogoutTokens(world.deps, [await session(ada, [slow, prompt])], log),
      'the caller to be answered while a client is slow',
      2000,
    );
    assert.equal(sent.clients, 2);
    await within(Promise.all([slowArrived, promptArrived]), 'both clients to be posted to', 2000);
    assert.equal(endpoints.tokens('/slow/prompt').length, 1, 'the prompt client has its token while the slow one has not answered');
    endpoints.release();
    await within(sent.delivered, 'delivered to settle once the slow client answered', 2000);
    assert.equal(endpoints.to('/slow/slow').length, 1, 'answered on the first try');
    assert.deepEqual(log.lines, []);
  });

  it('never posts to loopback for an app that registered itself, even by a name that resolves there', async () => {
    // Registration refuses such a URI; a name can come to resolve to loopback later, and the
    // connection is checked again (core/outbound.ts).
    const id = 'self-registered-app';
    await world.store.clients.create(clientRecord({ id, registeredBy: 'dynamic', backchannelLogoutUri: endpoints.uri('/self/app', 'localhost') }));
    const { clients, warnings } = await end([await session(ada, [(await world.store.clients.get(id))!])]);
    assert.equal(clients, 1, 'a token was signed for it');
    assert.deepEqual(endpoints.to('/self/app'), [], 'but never posted');
    assert.deepEqual(
      warnings.map(({ client }) => client),
      [id],
    );
  });
});

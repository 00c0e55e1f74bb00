/**
 * How many round trips to PostgreSQL each hot request makes, counted at the driver (every
 * `query` a pooled connection sends is one request over the network and one answer): a
 * code exchange, a client-credentials grant, a device authorization and a device poll
 * each make at most two, once the client's record is in the instance's memory. Not a
 * timing: a change that adds a statement to one of them fails here, on any machine.
 *
 * Runs against the PostgreSQL of `test/helpers/postgres.ts`, in a schema of its own.
 */

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, it } from 'node:test';
import pg from 'pg';
import { hashSecret, randomToken, s256 } from '../src/core/crypto.ts';
import { DEVICE_AUTHORIZATION_PATH, TOKEN_PATH } from '../src/core/endpoints.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import { describePostgres, freshPostgresDatabase } from './helpers/postgres.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { approvedGrant } from './store/fixtures.ts';

const API = { identifier: 'https://api.round-trips.example', scope: 'rt.read' } as const;

/** Statements sent on a timer, not by any request: the webhook dispatcher's look for due deliveries. */
const BACKGROUND = new Set(['tessera_dueWebhooks']);

/** The statements every pooled connection sends while `work` runs, in order, but those of `BACKGROUND`. */
async function statementsDuring(work: () => Promise<void>): Promise<string[]> {
  const sent: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const [config] = args;
    const name = typeof config === 'string' ? config : ((config as { name?: string; text?: string }).name ?? (config as { text?: string }).text ?? '?');
    if (!BACKGROUND.has(name)) sent.push(name);
    return (query as (...all: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await work();
  } finally {
    pg.Client.prototype.query = query;
  }
  return sent;
}

describePostgres('round trips to PostgreSQL per request', () => {
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let server: TestServer;
  let client: TestClient;
  let user: TestUser;

  before(async () => {
    database = await freshPostgresDatabase();
    server = await startTestServer({ database: database.url });
    client = await server.addClient({
      scopes: ['openid', 'profile', API.scope],
      grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE],
    });
    user = await server.addUser();
    await server.store.transaction((tx) =>
      tx.resources.create({
        identifier: API.identifier,
        name: 'Round trips API',
        scopes: [{ name: API.scope, description: 'Read' }],
        accessTokenTtl: null,
        introspectionSecretHash: null,
        signingAlg: 'RS256',
        createdAt: Date.now() - 60_000,
      }),
    );
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  const authorization = () => basic(client.clientId, client.clientSecret);

  /** A code as the approval page mints one: a grant, then the code by its hash, bound to its verifier's challenge. */
  async function mintCode(): Promise<{ code: string; verifier: string }> {
    const now = Date.now();
    const grantId = randomUUID();
    const code = randomToken(32);
    const verifier = randomToken(32);
    await server.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.clientId, scope: ['openid', 'profile'] }, now));
    // The sign-in session the code came from, live: a code is redeemed only while it is.
    await server.store.sessions.create({
      idHash: hashSecret(randomToken(32)),
      sid: 'sid-round-trips',
      userId: user.id,
      authTime: now,
      createdAt: now,
      expiresAt: now + 3_600_000,
      ip: null,
      userAgent: null,
    });
    await server.store.codes.create({
      hash: hashSecret(code),
      clientId: client.clientId,
      userId: user.id,
      grantId,
      redirectUri: REDIRECT_URI,
      scope: ['openid', 'profile'],
      nonce: null,
      codeChallenge: s256(verifier),
      authTime: now,
      sid: 'sid-round-trips',
      createdAt: now,
      expiresAt: now + 600_000,
      consumedAt: null,
      dpopJkt: null,
      idTokenClaims: [],
    });
    return { code, verifier };
  }

  const exchange = async () => {
    const { code, verifier } = await mintCode();
    return () =>
      postForm(
        `${server.url}${TOKEN_PATH}`,
        { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: REDIRECT_URI },
        { authorization: authorization() },
      );
  };

  for (const [name, prepare, status] of [
    ['a code exchange', exchange, 200],
    [
      'a client-credentials grant',
      async () => () => postForm(`${server.url}${TOKEN_PATH}`, { grant_type: 'client_credentials', scope: API.scope }, { authorization: authorization() }),
      200,
    ],
    [
      'a device authorization',
      async () => () => postForm(`${server.url}${DEVICE_AUTHORIZATION_PATH}`, { scope: 'openid profile' }, { authorization: authorization() }),
      200,
    ],
    [
      'a device poll',
      async () => {
        const started = await postForm(`${server.url}${DEVICE_AUTHORIZATION_PATH}`, { scope: 'openid profile' }, { authorization: authorization() });
        const deviceCode = String(started.body['device_code']);
        return () => postForm(`${server.url}${TOKEN_PATH}`, { grant_type: GRANT_DEVICE_CODE, device_code: deviceCode }, { authorization: authorization() });
      },
      400,
    ],
  ] as const) {
    it(`makes at most two round trips for ${name}`, async () => {
      // The first of each kind fills the instance's memory (the client's record, the statements prepared on a connection).
      const warm = await prepare();
      assert.equal((await warm()).status, status);
      // The fewest of three tries: a read the instance makes now and then, not for a request
      // (its signing keys, again every 30 s), may fall into one; a statement added to the
      // request falls into all three.
      const tries: string[][] = [];
      for (let attempt = 0; attempt < 3; attempt++) {
        const send = await prepare();
        let answer: Awaited<ReturnType<typeof send>> | undefined;
        tries.push(
          await statementsDuring(async () => {
            answer = await send();
          }),
        );
        assert.equal(answer?.status, status, JSON.stringify(answer?.body));
        if (tries.at(-1)!.length <= 2) break;
      }
      const fewest = Math.min(...tries.map((sent) => sent.length));
      assert.ok(fewest <= 2, `round trips: ${tries.map((sent) => `${sent.length} (${sent.join(', ')})`).join('; ')}`);
    });
  }
});

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config/index.ts';
import { systemClock, type Clock } from '../../src/core/clock.ts';
import { hashSecret, randomToken } from '../../src/core/crypto.ts';
import { hashPassword } from '../../src/core/password.ts';
import {
  GRANT_AUTHORIZATION_CODE,
  GRANT_DEVICE_CODE,
  type ClientAuthMethod,
  type GrantType,
  type PkcePolicy,
  type RequestObjectAlgorithm,
} from '../../src/core/protocol.ts';
import { openStore } from '../../src/store/open.ts';
import { newUserRecord, type Store, type UserRecord } from '../../src/store/types.ts';
import { seedRsaKey } from './keys.ts';
import { encryptedKeyStore, encryptStoredKeys, loadKeyEncryption } from '../../src/tokens/key-encryption.ts';
import { KeyManager } from '../../src/tokens/keys.ts';
import { keySettings } from '../../src/main.ts';

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/**
 * Settings every test server and `tessera` command runs with: argon2id at its cheapest, since
 * hashing at the production cost (proved once, in test/cli.test.ts) was most of the time of
 * every sign-in in the suite; and no drain delay on SIGTERM, which would make every stop of a
 * served process wait (the delay itself is tested in test/readiness.test.ts).
 */
export const TEST_ENV: Readonly<Record<string, string>> = {
  TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1',
  // No growing waits after wrong passwords, and room on the password queue for the suite's
  // bursts from one address: test/sign-in-limits.test.ts sets and proves both.
  TESSERA_SIGN_IN_DELAY_MS: '0',
  TESSERA_SIGN_IN_QUEUE: '1000',
  TESSERA_SIGN_IN_QUEUE_PER_ADDRESS: '1000',
  // Device authorizations per minute: the suite starts many from 127.0.0.1;
  // test/device-authorization.test.ts sets and proves the limits.
  TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '100000',
  TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT: '100000',
  // Passkey ceremonies per minute, likewise: test/passkey-ceremony-limit.test.ts proves it.
  TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS: '100000',
  TESSERA_SHUTDOWN_DELAY: '0',
  // Tests keep their databases in fresh directories; test/start-up.test.ts proves the refusal
  // of a missing database file without it.
  TESSERA_DATABASE_CREATE: 'true',
};

/**
 * An HTTP server listening on a port the system picked (port 0) on the loopback interface,
 * and that port: the port is never released between being found and being listened on, so
 * no other process can take it in between.
 */
export async function listenOnFreePort(server: Server = createServer()): Promise<{ server: Server; port: number }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Closes a server started by `listenOnFreePort`, ending its keep-alive connections. */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export interface TestClient {
  readonly clientId: string;
  /** Empty for a public client. */
  readonly clientSecret: string;
}

export interface TestUser {
  readonly id: string;
  readonly username: string;
  readonly password: string;
}

export interface TestServer {
  readonly url: string;
  readonly config: Config;
  readonly store: Store;
  readonly keys: KeyManager;
  readonly app: FastifyInstance;
  /** The server's clock (the system's unless the test gave one): what its records and tokens are dated by. */
  readonly clock: Clock;
  /**
   * Stops the app and closes the store, then opens the database again and serves a new app
   * on the same address: a restart, with nothing kept but what the database holds.
   */
  restart(): Promise<void>;
  addClient(options?: {
    id?: string;
    name?: string;
    secret?: string;
    redirectUris?: string[];
    scopes?: string[];
    grantTypes?: GrantType[];
    public?: boolean;
    webOrigins?: string[];
    /** A confidential client's method: client_secret_basic by default; private_key_jwt has no secret. */
    authMethod?: Exclude<ClientAuthMethod, 'none'>;
    jwks?: Record<string, unknown>;
    jwksUri?: string;
    pkce?: PkcePolicy;
    requestObjectSigningAlg?: RequestObjectAlgorithm;
    requirePhishingResistant?: boolean;
    firstParty?: boolean;
    postLogoutRedirectUris?: string[];
    backchannelLogoutUri?: string;
    requireDpop?: boolean;
    requirePar?: boolean;
    deviceNetworks?: string[];
  }): Promise<TestClient>;
  addUser(options?: {
    username?: string;
    password?: string;
    name?: string | null;
    email?: string | null;
    /** The other standard claims (OIDC Core §5.1) as stored. */
    profile?: Partial<Omit<UserRecord, 'id' | 'username' | 'passwordHash' | 'name' | 'email' | 'createdAt' | 'updatedAt'>>;
  }): Promise<TestUser>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  readonly clock?: Clock;
  /** A database URL or path; defaults to a fresh SQLite file in a temporary directory. */
  readonly database?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Where the server's log lines go (JSON, one a line, warn and above); none by default. */
  readonly log?: (line: Record<string, unknown>) => void;
  /** The issuer's host (default 127.0.0.1); the server listens on 127.0.0.1 either way. */
  readonly issuerHost?: 'localhost' | '127.0.0.1';
}

/**
 * An empty SQLite database with every migration applied, made once per test process: a test
 * server's fresh database is a copy of it, since running the migrations on each new file cost
 * about 40 ms of CPU a server (five times the copy), and the suite starts hundreds. The
 * migrations themselves still run on every fresh database a `tessera` command, a unit test's
 * in-memory store or a PostgreSQL test opens, and src/store/migrations.test.ts tests them.
 */
let migrated: Promise<string> | undefined;

function migratedTemplate(): Promise<string> {
  migrated ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'tessera.db');
    // Closed cleanly, so the file holds everything (no -wal file beside it) and can be copied.
    await (await openStore(file)).close();
    return file;
  })();
  return migrated;
}

/**
 * A real server on a loopback port with a fresh database. The port is bound first (port 0,
 * read back), since the issuer the app is built with names it; the app then answers the
 * requests of that HTTP server.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
  if (options.database === undefined) copyFileSync(await migratedTemplate(), join(dir, 'tessera.db'));
  const { server: http, port } = await listenOnFreePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    // localhost where passkeys are tested: a WebAuthn RP ID must be a domain, not an IP address.
    TESSERA_ISSUER: `http://${options.issuerHost ?? '127.0.0.1'}:${port}`,
    TESSERA_DATABASE: options.database ?? join(dir, 'tessera.db'),
    TESSERA_LOG_LEVEL: 'silent',
    // Instances sharing a PostgreSQL database share the key that encrypts its signing keys,
    // as docs/security.md tells a deployment to: here, one derived from the database's name.
    ...(options.database?.startsWith('postgres') ? { TESSERA_KEY_ENCRYPTION_KEY: createHash('sha256').update(options.database).digest('base64url') } : {}),
    ...TEST_ENV,
    ...options.env,
  });
  const clock = options.clock ?? systemClock;
  let fresh = options.database === undefined;
  const start = async () => {
    const store = await openStore(config.database, config.postgres);
    // As main.ts does: private keys encrypted under the KEK from the settings (the key file
    // beside the SQLite file, or in the test's directory for PostgreSQL).
    const encryption = await Promise.resolve()
      .then(() => loadKeyEncryption(config.keyEncryption))
      .catch(async (error: unknown) => {
        await store.close();
        throw error;
      });
    await encryptStoredKeys(store.keys, encryption);
    const keyStore = encryptedKeyStore(store.keys, encryption);
    // Only at the first start of a fresh database: a restart finds the keys it stored.
    if (fresh && (await keyStore.listPublished(clock.now())).length === 0) await seedRsaKey(keyStore, clock.now());
    fresh = false;
    const keys = new KeyManager(keyStore, clock, keySettings(config));
    await keys.ensureKeys();
    const log = options.log;
    const logger = log ? { level: 'warn', stream: { write: (line: string) => log(JSON.parse(line) as Record<string, unknown>) } } : false;
    const app = await buildApp({ config, store, keys, encryption, clock, logger });
    await app.ready();
    http.on('request', app.routing);
    return { store, keys, app };
  };
  // A server that fails to start must not keep the test process alive on its open port.
  let running = await start().catch(async (error: unknown) => {
    await closeServer(http);
    throw error;
  });
  const stop = async () => {
    http.off('request', running.app.routing);
    await running.app.close();
    await running.store.close();
  };
  let users = 0;
  return {
    url: config.issuer,
    config,
    clock,
    get store() {
      return running.store;
    },
    get keys() {
      return running.keys;
    },
    get app() {
      return running.app;
    },
    async restart() {
      // The listening socket and open connections stay: they are the address, not the app.
      await stop();
      running = await start();
    },
    async addClient(client = {}) {
      const clientId = client.id ?? `client-${randomToken(6)}`;
      const secretless = client.public === true || client.authMethod === 'private_key_jwt';
      const clientSecret = secretless ? '' : (client.secret ?? randomToken(32));
      await running.store.clients.create({
        id: clientId,
        name: client.name ?? 'Test App',
        secretHash: secretless ? null : hashSecret(clientSecret),
        authMethod: client.public ? 'none' : (client.authMethod ?? 'client_secret_basic'),
        jwks: client.jwks ?? null,
        jwksUri: client.jwksUri ?? null,
        pkce: client.pkce ?? 'required',
        redirectUris: client.redirectUris ?? [REDIRECT_URI],
        scopes: client.scopes ?? ['openid', 'profile', 'email'],
        grantTypes: client.grantTypes ?? [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE],
        webOrigins: client.webOrigins ?? [],
        requireDpop: client.requireDpop ?? false,
        requirePar: client.requirePar ?? false,
        deviceNetworks: client.deviceNetworks ?? [],
        createdAt: clock.now(),
        ...(client.requirePhishingResistant ? { requirePhishingResistant: true } : {}),
        ...(client.requestObjectSigningAlg ? { requestObjectSigningAlg: client.requestObjectSigningAlg } : {}),
        firstParty: client.firstParty ?? false,
        postLogoutRedirectUris: client.postLogoutRedirectUris ?? [],
        backchannelLogoutUri: client.backchannelLogoutUri ?? null,
      });
      return { clientId, clientSecret };
    },
    async addUser(user = {}) {
      users += 1;
      const username = user.username ?? `user${users}`;
      const password = user.password ?? 'correct horse battery staple';
      const id = `sub-${randomToken(6)}`;
      await running.store.users.create(
        newUserRecord({
          id,
          username,
          passwordHash: await hashPassword(password, config.passwordHash),
          name: user.name === undefined ? 'Ada Lovelace' : user.name,
          email: user.email === undefined ? `${username}@example.com` : user.email,
          ...user.profile,
          createdAt: clock.now(),
        }),
      );
      return { id, username, password };
    },
    async close() {
      await closeServer(http);
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Closes what a file's `before()` made, in the order given (a browser before the server its
 * pages talk to, a server before the mail server it sends to), passing over what was never
 * made (a `before()` that failed part way); when one fails to close, the rest are still
 * closed, and the first failure is thrown.
 */
export async function closeAll(...things: readonly ({ close(): Promise<unknown> } | undefined)[]): Promise<void> {
  let failure: { error: unknown } | undefined;
  for (const thing of things) {
    try {
      await thing?.close();
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}

/** Basic credentials as RFC 6749 §2.3.1 says: form-encode, then base64. */
export function basic(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

/** POSTs a form to the token endpoint; returns status, headers and parsed JSON body. */
export async function postForm(
  url: string,
  form: Record<string, string> | string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: typeof form === 'string' ? form : new URLSearchParams(form).toString(),
  });
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { raw: text };
  }
  return { status: response.status, headers: response.headers, body };
}

/**
 * Asserts an OAuth error answer as RFC 6749 §5.2 shapes it: `status`, the `error` code and a
 * description, as JSON that no cache keeps, with no stack trace in it; a 401 (a client that
 * failed to authenticate) with the Basic challenge of §5.2 as well.
 */
export function assertOAuthError(result: Awaited<ReturnType<typeof postForm>>, status: number, error: string): void {
  assert.equal(result.status, status, JSON.stringify(result.body));
  assert.equal(result.body['error'], error);
  assert.equal(typeof result.body['error_description'], 'string');
  assert.match(result.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(result.headers.get('cache-control'), 'no-store');
  assert.doesNotMatch(JSON.stringify(result.body), /at .*\.ts:\d+/, 'no stack trace');
  if (status === 401) assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
}

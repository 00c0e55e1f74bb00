import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { loadConfig, type Config } from '../../src/config/index.ts';
import { systemClock, type Clock } from '../../src/core/clock.ts';
import { hashSecret, randomToken } from '../../src/core/crypto.ts';
import { hashPassword } from '../../src/core/password.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, type GrantType } from '../../src/core/protocol.ts';
import { openStore } from '../../src/store/open.ts';
import { type Store } from '../../src/store/types.ts';
import { KeyManager } from '../../src/tokens/keys.ts';

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
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
  addClient(options?: { name?: string; redirectUris?: string[]; scopes?: string[]; grantTypes?: GrantType[]; public?: boolean; webOrigins?: string[] }): Promise<TestClient>;
  addUser(options?: { username?: string; password?: string; name?: string | null; email?: string | null }): Promise<TestUser>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  readonly clock?: Clock;
  /** A database URL or path; defaults to a fresh SQLite file in a temporary directory. */
  readonly database?: string;
  readonly env?: Readonly<Record<string, string>>;
}

/** A real server on a free loopback port with a fresh database. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-test-'));
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    TESSERA_ISSUER: `http://127.0.0.1:${port}`,
    TESSERA_DATABASE: options.database ?? join(dir, 'tessera.db'),
    TESSERA_LOG_LEVEL: 'silent',
    ...options.env,
  });
  const clock = options.clock ?? systemClock;
  const store = await openStore(config.database, config.postgres);
  const keys = new KeyManager(store.keys, clock, { leadTimeSeconds: config.keyLeadTimeSeconds, maxTokenLifetimeSeconds: 3600 });
  await keys.ensureKeys();
  const app = await buildApp({ config, store, keys, clock, logger: false });
  await app.listen({ port, host: '127.0.0.1' });
  let users = 0;
  return {
    url: config.issuer,
    config,
    store,
    keys,
    app,
    async addClient(client = {}) {
      const clientId = `client-${randomToken(6)}`;
      const clientSecret = client.public ? '' : randomToken(32);
      await store.clients.create({
        id: clientId,
        name: client.name ?? 'Test App',
        secretHash: client.public ? null : hashSecret(clientSecret),
        redirectUris: client.redirectUris ?? [REDIRECT_URI],
        scopes: client.scopes ?? ['openid', 'profile', 'email'],
        grantTypes: client.grantTypes ?? [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE],
        webOrigins: client.webOrigins ?? [],
        createdAt: clock.now(),
      });
      return { clientId, clientSecret };
    },
    async addUser(user = {}) {
      users += 1;
      const username = user.username ?? `user${users}`;
      const password = user.password ?? 'correct horse battery staple';
      const id = `sub-${randomToken(6)}`;
      await store.users.create({
        id,
        username,
        passwordHash: await hashPassword(password),
        name: user.name === undefined ? 'Ada Lovelace' : user.name,
        email: user.email === undefined ? `${username}@example.com` : user.email,
        emailVerified: false,
        disabled: false,
        createdAt: clock.now(),
      });
      return { id, username, password };
    },
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
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

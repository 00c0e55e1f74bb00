/**
 * The servers under test, each started fresh in its own process for every scenario: Tessera
 * on a new SQLite file or a new PostgreSQL database, and oidc-provider with its in-memory
 * adapter. The driver mints what a scenario needs beforehand: Tessera's codes through its
 * store, oidc-provider's through its own models (over IPC, since its store is its memory).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import pg from 'pg';
import { hashSecret, randomToken, s256 } from '../src/core/crypto.ts';
import { hashPassword } from '../src/core/password.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { openStore } from '../src/store/open.ts';
import { newUserRecord, type Store, type Stores } from '../src/store/types.ts';

export const ROOT = new URL('..', import.meta.url).pathname;
export const REDIRECT_URI = 'http://127.0.0.1:9/callback';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export interface MintedCode {
  readonly code: string;
  readonly verifier: string;
}

/** The API the client_credentials scenario asks tokens for, and its one scope. */
export const BENCH_API = { identifier: 'https://api.bench.example', scope: 'bench.read' } as const;

/** The signed-in person whose session floods `/account/password` with wrong current passwords. */
export const FLOOD_OWNER = { username: 'flood-owner', password: 'the flood owner knows this one' } as const;

export interface Target {
  /** As printed in the table: `tessera/sqlite`, `tessera/postgres`, `oidc-provider`. */
  readonly label: string;
  readonly origin: string;
  /**
   * Every origin the load is spread over (autocannon deals its connections out in turn):
   * one, or one per instance when several serve one database (scale_out).
   */
  readonly origins: readonly string[];
  /** The server process; its descendants (cluster workers) are measured with it. */
  readonly pid: number;
  /** Every server process measured: `pid`, and the other instances' of a scale-out target. */
  readonly pids: readonly number[];
  /** The PostgreSQL database the server keeps its store in, whose backends are measured apart; null on SQLite. */
  readonly database: string | null;
  readonly tokenPath: string;
  /** Null when the server does not offer the device flow (yet). */
  readonly deviceAuthorizationPath: string | null;
  readonly supportsDevicePolling: boolean;
  readonly authorization: string;
  readonly redirectUri: string;
  mintCodes(count: number): Promise<MintedCode[]>;
  /** Refresh tokens of `count` approvals of openid, profile and offline_access, each to be refreshed once. */
  mintRefreshTokens(count: number): Promise<string[]>;
  close(): Promise<void>;
}

export interface StartOptions {
  readonly workers: number;
  /** Seconds; the device poll interval Tessera is started with (BENCH_DEVICE_INTERVAL). */
  readonly deviceInterval: number;
  /** Directory for `node --cpu-prof` profiles, or null. */
  readonly cpuProfileDir: string | null;
  /** Where the server's output goes. */
  readonly logDir: string;
  /**
   * CPUs the servers are kept to (`taskset -c` list), or null: the machine's. On a machine
   * with cores to spare, keeping the load generator off the servers' cores stops the two
   * from taking each other's time.
   */
  readonly serverCpus: string | null;
  /** Codes or refresh tokens minted a batch (`--batch`): what oidc-provider's in-memory store must hold at once. */
  readonly batch?: number;
}

/** The CPUs each server started so far may run on, as Linux reports them: what the run really had. */
const serversCpus = new Set<string>();

export function serverCpuLists(): string[] {
  return [...serversCpus];
}

/** `Cpus_allowed_list` of /proc/<pid>/status: the CPUs a process may run on; null off Linux. */
export function allowedCpus(pid: number | 'self'): string | null {
  try {
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

/** RFC 6749 §2.3.1: form-encode, then base64. */
export function basic(id: string, secret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`;
}

/**
 * How `npm start` runs Tessera (package.json), so the bench runs it the same way: its Node
 * flags, and the environment it sets before `exec` (`MALLOC_ARENA_MAX`, which glibc reads
 * only at a process's start).
 */
function startCommand(root: string): { flags: string[]; env: Record<string, string> } {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const words = (scripts['start'] ?? '').split(/\s+/);
  const exec = words.indexOf('exec');
  const assignments = words.slice(0, Math.max(exec, 0)).map((word) => /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(word));
  return {
    flags: words.filter((word) => word.startsWith('--')),
    env: Object.fromEntries(assignments.flatMap((match) => (match ? [[match[1]!, match[2]!]] : []))),
  };
}

/**
 * Starts `script` and waits for its `{type: 'ready'}` message; on failure shows its log's end.
 * BENCH_NODE_FLAGS adds Node flags (e.g. --trace-gc) when investigating.
 */
async function spawnServer(
  label: string,
  script: string,
  cwd: string,
  nodeFlags: readonly string[],
  env: Record<string, string>,
  options: StartOptions,
): Promise<ChildProcess> {
  const logPath = join(options.logDir, `${label.replace(/\//g, '-')}.log`);
  const log = createWriteStream(logPath, { flags: 'a' });
  const flags = [...nodeFlags, ...(process.env['BENCH_NODE_FLAGS']?.split(' ').filter(Boolean) ?? [])];
  // A folder a target, with Node's own file names, which carry the thread's id: under
  // TESSERA_WORKERS on SQLite the workers are threads of the one process, and a
  // --cpu-prof-name (only ${pid} is filled in) would give every thread one file, the last to
  // exit writing over the others.
  if (options.cpuProfileDir) flags.push('--cpu-prof', `--cpu-prof-dir=${join(options.cpuProfileDir, label.replace(/[/ ]/g, '-'))}`);
  // taskset sets the affinity and then execs node: the pid is the server's own.
  const [command, args] = options.serverCpus
    ? ['taskset', ['-c', options.serverCpus, process.execPath, ...flags, script]]
    : [process.execPath, [...flags, script]];
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error('did not start within 60 s')), 60_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      const tail = existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(-2000) : '';
      reject(new Error(`${label}: ${error.message}\n${tail}`));
    };
    child.on('message', (message: { type?: string }) => {
      if (message?.type === 'ready') {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code, signal) => fail(new Error(`exited during start (${signal ?? `exit code ${code}`})`)));
  });
  child.removeAllListeners('exit');
  const cpus = child.pid === undefined ? null : allowedCpus(child.pid);
  if (cpus) serversCpus.add(cpus);
  return child;
}

/** SIGTERM (a clean exit writes the CPU profile), then SIGKILL if it lingers. */
async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

async function discover(origin: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${origin}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`discovery at ${origin} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

function endpointPath(metadata: Record<string, unknown>, name: string): string | null {
  const value = metadata[name];
  return typeof value === 'string' ? new URL(value).pathname : null;
}

/** A fresh PostgreSQL database next to the one `adminUrl` names; null when none answers. */
export async function createPostgresDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> } | null> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2000 });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  const name = `tessera_bench_${randomToken(6)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export interface TesseraOptions extends StartOptions {
  /** A postgres:// URL of an empty database, or null for a new SQLite file. */
  readonly postgres: { url: string; drop(): Promise<void> } | null;
  /** Runs against the SQLite file after the schema exists and before the server starts. */
  readonly seedSqlite?: (path: string, clientId: string) => void;
  /** Runs against the store (kept open until the target closes) before the server starts. */
  readonly seedStore?: (store: Store) => Promise<void>;
  /** Serves with bench/baseline.ts instead of Tessera (`--baseline`). */
  readonly baseline?: boolean;
  /**
   * Another checkout of Tessera to serve from (`--against`), labelled `tessera/sqlite@NAME`:
   * two versions measured side by side in one run, where separate runs differ by more than
   * most changes do on a shared machine.
   */
  readonly against?: AgainstCheckout;
  /** More settings for the server (the sign-in flood trusts its loopback proxy). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Server processes started on the one database, each on its own port (default 1): two
   * instances on one PostgreSQL database in the scale_out scenario.
   */
  readonly instances?: number;
  /** Registers the flood owner (FLOOD_OWNER), whose password is hashed at the default cost: sign_in_flood only. */
  readonly floodOwner?: boolean;
  /** Added to the label: what sets this target apart within its scenario. */
  readonly labelSuffix?: string;
}

/**
 * Tessera with one confidential client and one user, registered through the store. Codes
 * are minted as the approval page does (src/flows/authorization-code/approve.ts): a grant,
 * then a code stored only as its hash, bound to the S256 challenge of its own verifier.
 */
/** Another checkout of Tessera for `--against`: where it is, its label, and the server script it runs. */
export interface AgainstCheckout {
  readonly root: string;
  readonly name: string;
  readonly server: string;
}

/** The checkout at `dir` for `--against`, or a clear error when it is not one that can serve. */
export function againstCheckout(dir: string): AgainstCheckout {
  const root = resolve(dir);
  // A checkout from before bench/tessera-server.js has the TypeScript one.
  const server = ['bench/tessera-server.js', 'bench/tessera-server.ts'].find((script) => existsSync(join(root, script)));
  if (server === undefined) throw new Error(`--against ${dir}: not a Tessera checkout (no bench/tessera-server.js or .ts)`);
  if (!existsSync(join(root, 'node_modules'))) throw new Error(`--against ${dir}: no node_modules (run npm install there, or link this checkout's)`);
  return { root, name: basename(root), server };
}

export async function startTessera(options: TesseraOptions): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-bench-'));
  const database = options.postgres?.url ?? join(dir, 'tessera.db');
  const label = options.baseline
    ? 'bare node:http'
    : `${options.postgres ? 'tessera/postgres' : 'tessera/sqlite'}${options.against ? `@${options.against.name}` : ''}${options.labelSuffix ?? ''}`;
  // The store is opened with the served checkout's own code, so that its schema is the one
  // that checkout migrates to (an --against checkout may be older than this one).
  const open: typeof openStore = options.against
    ? ((await import(join(options.against.root, 'src/store/open.ts'))) as { openStore: typeof openStore }).openStore
    : openStore;
  const store: Store = await open(database);
  const clientId = `bench-${randomUUID()}`;
  const clientSecret = randomToken(32);
  const now = Date.now();
  await store.clients.create({
    id: clientId,
    name: 'Bench',
    secretHash: hashSecret(clientSecret),
    redirectUris: [REDIRECT_URI],
    scopes: ['openid', 'profile', 'email', 'offline_access', BENCH_API.scope],
    grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_REFRESH_TOKEN],
    webOrigins: [],
    requireDpop: false,
    requirePar: false,
    deviceNetworks: [],
    createdAt: now,
    firstParty: false,
    postLogoutRedirectUris: [],
    backchannelLogoutUri: null,
  });
  // An API for the client_credentials scenario, registered before anything is signed for it
  // (a token is refused for an API registered after it was issued).
  await store.transaction((tx) =>
    tx.resources.create({
      identifier: BENCH_API.identifier,
      name: 'Bench API',
      scopes: [{ name: BENCH_API.scope, description: 'Read the bench' }],
      accessTokenTtl: null,
      introspectionSecretHash: null,
      signingAlg: 'RS256',
      createdAt: now - 60_000,
    }),
  );
  const userId = randomUUID();
  await store.users.create(
    newUserRecord({
      id: userId,
      username: 'ada',
      // Never used to sign in: the bench mints codes as if the user had approved.
      passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      createdAt: now,
    }),
  );
  // The account the /account/password flood signs in as: a real password, hashed
  // at the default cost, so that each wrong current password costs what a sign-in does.
  if (options.floodOwner) {
    await store.users.create(
      newUserRecord({
        id: randomUUID(),
        username: FLOOD_OWNER.username,
        passwordHash: await hashPassword(FLOOD_OWNER.password, { memory: 47104, passes: 1, parallelism: 1 }),
        createdAt: now,
      }),
    );
  }
  if (options.seedSqlite && !options.postgres) options.seedSqlite(database, clientId);
  await options.seedStore?.(store);

  const ports: number[] = [];
  for (let i = 0; i < (options.instances ?? 1); i += 1) ports.push(await freePort());
  // Instances of one deployment share one issuer: the first origin's.
  const origins = ports.map((port) => `http://127.0.0.1:${port}`);
  const origin = origins[0]!;
  const children: ChildProcess[] = [];
  const spawnOne = (port: number) => {
    const root = options.against?.root ?? ROOT;
    const script = join(root, options.baseline ? 'bench/baseline.ts' : (options.against?.server ?? 'bench/tessera-server.js'));
    const start = options.baseline ? { flags: ['--disable-warning=ExperimentalWarning'], env: {} } : startCommand(root);
    return spawnServer(
      label,
      script,
      root,
      start.flags,
      {
        ...start.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        TESSERA_ISSUER: origin,
        TESSERA_DATABASE: database,
        TESSERA_LOG_LEVEL: 'warn',
        TESSERA_WORKERS: String(options.workers),
        BENCH_DEVICE_INTERVAL: String(options.deviceInterval),
        // The bench is one client at one address asking thousands of times a second: far over
        // the per-minute device authorization limits a real deployment keeps (docs/security.md).
        TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT: '100000000',
        TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '100000000',
        // No load balancer to tell: stop at once on SIGTERM, not after the 5 s a deployment
        // gives one to stop sending requests (it made every scenario 5 s longer per server).
        TESSERA_SHUTDOWN_DELAY: '0',
        ...options.env,
      },
      options,
    );
  };
  try {
    for (const port of ports) children.push(await spawnOne(port));
  } catch (error) {
    for (const child of children) await stopServer(child);
    await store.close();
    throw error;
  }
  const child = children[0]!;
  const metadata = options.baseline ? { token_endpoint: `${origin}/oauth/token`, grant_types_supported: [DEVICE_GRANT] } : await discover(origin);
  const grantTypes = Array.isArray(metadata['grant_types_supported']) ? metadata['grant_types_supported'] : [];

  /** The user's approval of `scope` for the bench client, as its code exchange or device flow leaves it: its grant's id. */
  const approved = async (tx: Stores, scope: string[], authTime: number): Promise<string> => {
    const id = randomUUID();
    await tx.grants.create({ id, userId, clientId, scope, kind: GRANT_AUTHORIZATION_CODE, authTime, createdAt: authTime, revokedAt: null, device: null });
    return id;
  };
  return {
    label,
    origin,
    origins,
    pid: child.pid!,
    pids: children.map((each) => each.pid!),
    database: options.postgres ? new URL(options.postgres.url).pathname.slice(1) : null,
    tokenPath: endpointPath(metadata, 'token_endpoint') ?? '/oauth/token',
    deviceAuthorizationPath: endpointPath(metadata, 'device_authorization_endpoint'),
    supportsDevicePolling: grantTypes.includes(DEVICE_GRANT),
    authorization: basic(clientId, clientSecret),
    redirectUri: REDIRECT_URI,
    async mintCodes(count) {
      const minted: MintedCode[] = [];
      const authTime = Date.now();
      // One transaction a batch: the server under test writes to the same SQLite file, and
      // each of the bench's writes waits for its write lock (SQLite's busy handler sleeps,
      // up to 100 ms a time, while another connection holds it). Minted one write at a time,
      // a batch of 50 took tens of seconds beside a server busy with a sign-in flood.
      await store.transaction(async (tx) => {
        for (let i = 0; i < count; i += 1) {
          const grantId = await approved(tx, ['openid', 'profile'], authTime);
          const code = randomToken(32);
          const verifier = randomToken(32);
          await tx.codes.create({
            hash: hashSecret(code),
            clientId,
            userId,
            grantId,
            redirectUri: REDIRECT_URI,
            scope: ['openid', 'profile'],
            nonce: null,
            codeChallenge: s256(verifier),
            authTime,
            sid: null,
            createdAt: authTime,
            // Batches are exchanged within seconds of minting; ten minutes leaves room for a slow machine.
            expiresAt: authTime + 600_000,
            consumedAt: null,
            dpopJkt: null,
            idTokenClaims: [],
          });
          minted.push({ code, verifier });
        }
      });
      return minted;
    },
    async mintRefreshTokens(count) {
      const minted: string[] = [];
      const authTime = Date.now();
      const scope = ['openid', 'profile', 'offline_access'];
      // One transaction a batch, as codes are minted. Each token is of the earlier form (43
      // characters, stored under its bare hash), which every version finds, so that --against
      // an older checkout refreshes the same tokens; what the refresh writes is the served
      // checkout's own.
      await store.transaction(async (tx) => {
        for (let i = 0; i < count; i += 1) {
          const grantId = await approved(tx, scope, authTime);
          const token = randomToken(32);
          await tx.refreshTokens.create({
            hash: hashSecret(token),
            grantId,
            clientId,
            userId,
            scope,
            authTime,
            sid: null,
            createdAt: authTime,
            expiresAt: authTime + 86_400_000,
            rotatedAt: null,
            dpopJkt: null,
            idTokenClaims: [],
          });
          minted.push(token);
        }
      });
      return minted;
    },
    async close() {
      for (const each of children) await stopServer(each);
      await store.close();
      await options.postgres?.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** oidc-provider 9.x, as bench/peer/oidc-provider.js configures it. */
export async function startPeer(options: StartOptions): Promise<Target> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const clientId = `bench-${randomUUID()}`;
  const clientSecret = randomToken(32);
  const child = await spawnServer(
    'oidc-provider',
    join(ROOT, 'bench/peer/oidc-provider.js'),
    ROOT,
    [],
    {
      PORT: String(port),
      BENCH_CLIENT_ID: clientId,
      BENCH_CLIENT_SECRET: clientSecret,
      BENCH_REDIRECT_URI: REDIRECT_URI,
      BENCH_API: BENCH_API.identifier,
      BENCH_API_SCOPE: BENCH_API.scope,
      BENCH_STORE_SIZE: String(5 * (options.batch ?? 0)),
      NODE_ENV: 'production',
    },
    options,
  );
  const metadata = await discover(origin);
  let next = 0;
  const pending = new Map<number, { resolve: (minted: unknown[]) => void; reject: (error: Error) => void }>();
  child.on('message', (message: { id?: number; minted?: unknown[]; error?: string }) => {
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id!);
    if (message.minted) waiter.resolve(message.minted);
    else waiter.reject(new Error(`oidc-provider could not mint: ${message.error}`));
  });
  /** Asks the peer to mint `count` of a kind with its own models (bench/peer/oidc-provider.js). */
  const mint = <T>(type: 'mint-codes' | 'mint-refresh-tokens', count: number): Promise<T[]> => {
    const id = next++;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve: resolve as (minted: unknown[]) => void, reject });
      child.send({ type, id, count });
    });
  };
  return {
    label: 'oidc-provider',
    origin,
    origins: [origin],
    pid: child.pid!,
    pids: [child.pid!],
    database: null,
    tokenPath: endpointPath(metadata, 'token_endpoint')!,
    deviceAuthorizationPath: endpointPath(metadata, 'device_authorization_endpoint'),
    supportsDevicePolling: true,
    authorization: basic(clientId, clientSecret),
    redirectUri: REDIRECT_URI,
    mintCodes: (count) => mint<MintedCode>('mint-codes', count),
    mintRefreshTokens: (count) => mint<string>('mint-refresh-tokens', count),
    async close() {
      await stopServer(child);
    },
  };
}

/**
 * The composition root: config -> store -> keys -> app -> listen.
 */
import './config/require-node.ts';
import { poolSizeGiven } from './threadpool.ts';
import cluster, { type Worker as ClusterWorker } from 'node:cluster';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { dirname, join, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { availableParallelism } from 'node:os';
import { isSea } from 'node:sea';
import { isMainThread, MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { MetricObjectWithValues, MetricValue, Registry } from 'prom-client';
import type { FastifyInstance } from 'fastify';
import { ConfigError, loadConfig, type Config } from './config/index.ts';
import { systemClock } from './core/clock.ts';
import { http } from './core/node-http.ts';
import { listenerOptions } from './http/listener.ts';
import { unmatchedTranslations } from './flows/resources.ts';
import { describeDatabase, openStore, parseDatabase } from './store/open.ts';
import type { ClearedEmail, Store } from './store/types.ts';
import { encryptedKeyStore, encryptStoredKeys, loadKeyEncryption, UnknownKeyEncryptionKeyError, type KeyEncryption } from './tokens/key-encryption.ts';
import { resealProviderSecrets } from './tokens/secret-box.ts';
import { resealOutboxSecrets } from './flows/webhooks/reseal.ts';
import { KeyManager, type KeySettings } from './tokens/keys.ts';
import { ACCESS_TOKEN_TTL_RANGE } from './flows/manage/resources.ts';

/** How long expired records are kept, so a replayed code is still recognised as one. */
const PURGE_RETENTION_MS = 60 * 60_000;
const PURGE_EVERY_MS = 60_000;

/** How long the purge keeps what it keeps for a while after its use (each a setting). */
export interface PurgeRetention {
  /** Grants that can issue nothing more (TESSERA_GRANT_RETENTION; a week when absent). */
  readonly grantsMs?: number;
  /** Events (TESSERA_EVENT_RETENTION); absent, they are not purged. */
  readonly eventsMs?: number;
  /** Self-registered clients never used (TESSERA_UNUSED_REGISTRATION_RETENTION); absent, they are not purged. */
  readonly unusedClientsMs?: number;
}

/**
 * Purges expired records (and grants spent or revoked `retention.grantsMs` ago)
 * about once every `PURGE_EVERY_MS`, each time after a random 50% to
 * 150% of it, so that instances started together drift apart instead of purging in step;
 * the next purge is scheduled only when the last has finished, so a long backlog never
 * runs twice at once in one instance. Instances purging at the same moment is harmless:
 * the purge is idempotent and each batch skips the rows another one holds. Returns a stop
 * function that resolves once a purge under way has finished, so the store can be closed.
 */
export function schedulePurge(
  store: Store,
  onError: (error: unknown) => void,
  random: () => number = Math.random,
  retention: PurgeRetention = {},
): () => Promise<void> {
  const { grantsMs = 7 * 24 * 60 * 60_000, eventsMs, unusedClientsMs } = retention;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const next = () => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        const now = systemClock.now();
        running = store
          .purgeExpired(now - PURGE_RETENTION_MS, {
            grantsBefore: now - grantsMs,
            ...(eventsMs === undefined ? {} : { eventsBefore: now - eventsMs }),
            ...(unusedClientsMs === undefined ? {} : { unusedClientsBefore: now - unusedClientsMs }),
          })
          .then(() => {}, onError)
          .finally(next);
      },
      PURGE_EVERY_MS * (0.5 + random()),
    );
    timer.unref();
  };
  next();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    await running;
  };
}

/**
 * How long keys publish before they sign and stay published after. A retired key stays until
 * the last token it signed has expired, and an API may give its access tokens up to
 * ACCESS_TOKEN_TTL_RANGE.max (`tessera resource add --access-token-ttl`), longer than the
 * server-wide lifetimes: counted by those alone, a rotation left an API's tokens, signed in
 * the old key's last hour, unverifiable for the rest of their day.
 */
export function keySettings(config: Config): KeySettings {
  return {
    leadTimeSeconds: config.keyLeadTimeSeconds,
    maxTokenLifetimeSeconds: Math.max(config.lifetimes.accessToken, config.lifetimes.idToken, ACCESS_TOKEN_TTL_RANGE.max),
  };
}

/** The signing keys, their private halves encrypted in the store under the configured KEK. */
export function keyManager(config: Config, store: Store, encryption: KeyEncryption = loadKeyEncryption(config.keyEncryption)): KeyManager {
  return new KeyManager(encryptedKeyStore(store.keys, encryption), systemClock, keySettings(config));
}

/**
 * At start: encrypts any private key stored in clear (or under a KEK being rotated out),
 * seals again the providers' and the outbox's secrets sealed under an older KEK, then makes
 * sure a key can sign with each algorithm.
 */
export async function prepareKeys(config: Config, store: Store, encryption: KeyEncryption = loadKeyEncryption(config.keyEncryption)): Promise<KeyManager> {
  await encryptStoredKeys(store.keys, encryption);
  await resealProviderSecrets(store, encryption);
  await resealOutboxSecrets(store, encryption);
  const keys = keyManager(config, store, encryption);
  await keys.ensureKeys();
  return keys;
}

/**
 * The main thread's own part when it only writes (`startThreads` from `WRITER_ONLY_FROM`
 * workers): the purge, which a server of its own ran otherwise. Draining it is stopping it:
 * the writer keeps answering the threads' writes until every thread has drained.
 */
function purgeOnly(store: Store, config: Config): Pick<RunningServer, 'close' | 'drain'> {
  const stopPurge = schedulePurge(
    store,
    (error) => process.stderr.write(`tessera: purge failed: ${error instanceof Error ? error.message : String(error)}\n`),
    Math.random,
    purgeRetention(config),
  );
  let stopped: Promise<void> | null = null;
  const close = () => (stopped ??= stopPurge());
  return { close, drain: close };
}

/** The retention settings of the purge (schedulePurge). */
function purgeRetention(config: Config): PurgeRetention {
  return {
    grantsMs: config.grantRetentionSeconds * 1000,
    eventsMs: config.eventRetentionSeconds * 1000,
    unusedClientsMs: config.registration.unusedRetentionSeconds * 1000,
  };
}

/**
 * How a server of `startThreads` serves: on the port every thread listens on. A worker
 * thread sends its writes to the main thread's one writer over `writes`; the main thread
 * serves from the writer's own store, `store`, which it does not close.
 */
export type ThreadRole = {
  /** Hands the server's metrics over, for the main thread to ask for and sum. */
  readonly metrics: (registry: Registry) => void;
  /** Called once the server listens, before the line that says it serves (the main thread lets go of the port it held). */
  readonly listening?: () => Promise<void>;
} & ({ readonly writes: MessagePort } | { readonly store: Store });

/** A worker thread's store: reads on a connection of its own, writes through the main thread's writer. */
async function openThreadStore(config: Config, writes: MessagePort): Promise<Store> {
  const location = parseDatabase(config.database);
  if (location.kind !== 'sqlite') throw new Error('worker threads serve an SQLite file only');
  const { openSqliteThreadStore } = await import('./store/sqlite/store.ts');
  return openSqliteThreadStore(location.path, writes);
}

export interface RunningServer {
  readonly app: FastifyInstance;
  readonly url: string;
  /** Where `/metrics` is served, when TESSERA_METRICS_PORT is set (and this is not a cluster worker). */
  readonly metricsUrl: string | null;
  /** The admin listener's address (`http://host:port`), when TESSERA_ADMIN_LISTEN is set. */
  readonly adminUrl: string | null;
  /** Stops at once: requests in flight finish (within TESSERA_SHUTDOWN_TIMEOUT), new ones are refused. */
  close(): Promise<void>;
  /**
   * Stops for a rolling deploy (SIGTERM): `/readyz` answers 503 at once while requests are
   * still served for TESSERA_SHUTDOWN_DELAY, so the load balancer takes this instance out
   * first; then `close`.
   */
  drain(): Promise<void>;
}

/** A HOST given as a loopback address is the issuer's host too; otherwise it stays `localhost`. */
const LOOPBACK_LITERALS = new Set(['127.0.0.1', '::1']);

type Routing = FastifyInstance['routing'];

/** `config` on the port the system picked: the issuer's too when it was left at port 0. */
function onPickedPort(config: Config, port: number): Config {
  const issuer = new URL(config.issuer);
  if (issuer.port !== '0') return { ...config, port };
  if (LOOPBACK_LITERALS.has(config.host)) issuer.hostname = config.host.includes(':') ? `[${config.host}]` : config.host;
  issuer.port = String(port);
  return { ...config, port, issuer: issuer.href.replace(/\/+$/, '') };
}

/**
 * PORT=0 without TESSERA_ISSUER (whose default is then `http://localhost:0`): the system picks
 * the port, and the issuer is where the server ended up listening. Tests start servers this
 * way, so no port is looked for beforehand and lost to another process before it is used.
 * The port is bound before the app is built, since the app is built for its issuer; requests
 * that arrive meanwhile (under node:cluster, a new worker is sent connections as soon as it
 * listens) wait for `serve`.
 */
async function listenOnPickedPort(config: Config): Promise<{ server: Server; config: Config; serve(routing: Routing): void }> {
  const server = http.createServer(listenerOptions(config.requestTimeoutSeconds));
  let routing: Routing | null = null;
  const waiting: Parameters<Routing>[] = [];
  server.on('request', (request, response) => (routing ? routing(request, response) : waiting.push([request, response])));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, config.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    config: onPickedPort(config, port),
    serve(app) {
      routing = app;
      for (const [request, response] of waiting.splice(0)) app(request, response);
    },
  };
}

/** Resolves after `ms`, or at once for 0. */
const sleep = (ms: number) => new Promise<void>((resolve) => (ms <= 0 ? resolve() : setTimeout(resolve, ms).unref()));

/** Waits for `closing`, but at most `ms`; then `force` (close every connection) and wait for it. */
async function within(closing: Promise<unknown>, ms: number, force: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), ms);
    timer.unref();
  });
  if ((await Promise.race([closing, late])) === 'late') force();
  clearTimeout(timer);
  await closing;
}

/**
 * A listen error as the setting to change: a port in use or reserved names PORT, an address
 * this machine does not have names HOST (each start-up error names its setting).
 */
export function listenError(error: unknown, port: number, host: string, names: { port: string; host: string } = { port: 'PORT', host: 'HOST' }): unknown {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'EADDRINUSE')
    return new ConfigError(names.port, `port ${port} is already in use on ${host}: set ${names.port} to a free port, or stop the process listening there`);
  if (code === 'EACCES')
    return new ConfigError(names.port, `port ${port} on ${host} needs privileges this process does not have: set ${names.port} to 1024 or above`);
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL') {
    return new ConfigError(
      names.host,
      `cannot listen on ${JSON.stringify(host)}: it is not an address of this machine (${code}); set ${names.host} to one, such as localhost, 127.0.0.1 or 0.0.0.0`,
    );
  }
  return error;
}

/**
 * Binds and releases the port before anything is opened, so a port in use or a wrong HOST
 * stops the start before a database or key file is created.
 */
async function probeListen(port: number, host: string, names?: { port: string; host: string }): Promise<void> {
  if (port === 0) return;
  const server = createTcpServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(listenError(error, port, host, names)));
    server.listen(port, host, () => server.close(() => resolve()));
  });
}

/** How the start log names the store, and whether this start created its SQLite file. */
export interface StoreReport {
  readonly text: string;
  readonly created: boolean;
}

/**
 * Checks the store's location before opening it (a misspelt path quietly became a
 * new, empty database, and the server then answered as if it had no clients or users). A
 * SQLite file that does not exist is created (with its directory) only at the default path
 * or when TESSERA_DATABASE_CREATE says so; otherwise the start, and every
 * `tessera` command, is refused naming both settings, before anything is written.
 */
export function inspectDatabase(config: Pick<Config, 'database' | 'createDatabase'>): StoreReport {
  const location = parseDatabase(config.database);
  if (location.kind === 'postgres' || location.path === ':memory:') return { text: describeDatabase(location), created: false };
  const file = resolvePath(location.path);
  if (existsSync(file)) {
    // SQLite's own word for it is a raw "EISDIR: illegal operation on a directory".
    if (statSync(file).isDirectory())
      throw new ConfigError(
        'TESSERA_DATABASE',
        `${location.path}: is a directory, not a database file; name the file in it, e.g. ${join(location.path, 'tessera.db')}`,
      );
    return { text: describeDatabase({ kind: 'sqlite', path: file }), created: false };
  }
  if (file !== resolvePath('data', 'tessera.db') && !config.createDatabase) {
    const where = existsSync(dirname(file)) ? `${location.path} does not exist` : `${location.path}: the directory ${dirname(file)} does not exist`;
    throw new ConfigError('TESSERA_DATABASE', `${where}; correct the path, or set TESSERA_DATABASE_CREATE=true to create a new, empty database there`);
  }
  return { text: describeDatabase({ kind: 'sqlite', path: file }), created: true };
}

/**
 * Where a server on an SQLite file records the issuer it serves, beside the file
 * (`data/tessera.db.issuer`), for the `tessera` commands run on the same database in another
 * terminal without its PORT or TESSERA_ISSUER (they printed links on port 8080 to a
 * server on 43080). None for PostgreSQL, whose commands read the settings file the servers
 * read, nor for an in-memory database.
 */
export function issuerRecordFile(database: string): string | null {
  const location = parseDatabase(database);
  return location.kind === 'sqlite' && location.path !== ':memory:' ? `${resolvePath(location.path)}.issuer` : null;
}

/** Records the issuer a server serves once it listens (see issuerRecordFile); a failure to write costs only that record. */
function recordIssuer(config: Config, warn: (message: string) => void): void {
  const file = issuerRecordFile(config.database);
  if (file === null) return;
  try {
    // Whole or not at all: workers starting together each write the same line.
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, `${config.issuer}\n`, { mode: 0o644 });
    renameSync(partial, file);
  } catch (error) {
    warn(`could not record the issuer in ${file} for the tessera command: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The issuer the last server started on this SQLite database recorded, or null. */
export function recordedIssuer(database: string): { readonly issuer: string; readonly file: string } | null {
  const file = issuerRecordFile(database);
  if (file === null) return null;
  try {
    const issuer = readFileSync(file, 'utf8').trim();
    return /^https?:\/\/\S+$/.test(issuer) ? { issuer, file } : null;
  } catch {
    return null;
  }
}

/**
 * Opens the store; a database that cannot be opened or reached is reported as TESSERA_DATABASE.
 * One this process may not write (a file or directory owned by another user, a read-only file
 * system: in a container, a volume not given to the image's user) says so, and what to change.
 */
async function openConfiguredStore<S = Store>(
  config: Config,
  report: StoreReport,
  open: () => Promise<S> = () => openStore(config.database, config.postgres) as Promise<S>,
): Promise<S> {
  try {
    return await open();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    const { code, syscall } = (error ?? {}) as NodeJS.ErrnoException;
    const location = parseDatabase(config.database);
    // (A recursive mkdir on a read-only file system fails ENOENT.)
    const unwritable =
      location.kind === 'sqlite' && (code === 'EACCES' || code === 'EPERM' || code === 'EROFS' || (code === 'ENOENT' && syscall === 'mkdir'))
        ? `; ${process.getuid ? `uid ${process.getuid()}` : 'this process'} must be able to write the file and its directory ${dirname(resolvePath(location.path))}: change their owner or mode, or set TESSERA_DATABASE to a path it can write`
        : '';
    throw new ConfigError('TESSERA_DATABASE', `cannot open ${report.text}: ${why}${unwritable}`);
  }
}

/** The start log's line on the store. */
function storeLine(report: StoreReport): string {
  return report.created ? `${report.text} (created now: it did not exist)` : report.text;
}

/**
 * TLS is terminated in front of Tessera, which serves plain HTTP: an https issuer with no
 * trusted proxy is probably a deployment where nothing does.
 */
function tlsReminder(config: Config): string | null {
  if (!config.issuer.startsWith('https:') || config.trustProxy !== false) return null;
  return `the issuer is https but Tessera serves plain HTTP on ${config.host}:${config.port}: terminate TLS in front of it (a reverse proxy or load balancer) and set TESSERA_TRUST_PROXY to that proxy's address`;
}

/**
 * The accounts the upgrade to unique e-mail addresses left without theirs (another account
 * kept it), until an operator changes each: said at every start (docs/operations.md).
 */
export function clearedEmailsWarning(cleared: readonly ClearedEmail[]): string | null {
  if (cleared.length === 0) return null;
  const named = cleared.slice(0, 20).map((row) => `${row.username} (kept by ${row.keptBy ?? 'a removed account'})`);
  const more = cleared.length > named.length ? ` and ${cleared.length - named.length} more` : '';
  return (
    `${cleared.length} account(s) lost their e-mail address at the upgrade to unique addresses, as another account had it: ${named.join(', ')}${more}. ` +
    'Give each an address of its own, or move the address (tessera user update NAME --email ...); a change to an account takes it off this list (docs/operations.md)'
  );
}

/**
 * A `TESSERA_*` variable close to no setting is ignored rather than refused (a wrapper's or an
 * image's own), but said, in case it was meant for Tessera after all.
 */
function ignoredVariablesWarning(config: Config): string | null {
  if (config.ignoredVariables.length === 0) return null;
  const names = config.ignoredVariables.join(', ');
  return `${names}: not a Tessera setting, so ignored; if meant for Tessera, see the settings in README.md (TESSERA_ALLOW_UNKNOWN_SETTINGS=true ignores unknown TESSERA_* variables without this warning)`;
}

/**
 * `whenServing`: called with the running server just before the line that says it serves (a
 * caller's signal handlers go in there).
 */
export async function startServer(settings: Config, whenServing?: (running: RunningServer) => void, thread?: ThreadRole): Promise<RunningServer> {
  // The metrics listener first: one that cannot bind stops the start before anything else.
  // Loaded only when asked for: prom-client is not needed otherwise.
  const storeReport = inspectDatabase(settings);
  if (settings.port !== 0 && !cluster.isWorker && !thread) await probeListen(settings.port, settings.host);
  const metricsModule = settings.metrics.port === null ? null : await import('./http/metrics.ts');
  const metrics = metricsModule ? new metricsModule.Metrics() : undefined;
  let metricsServer: { server: Server; url: string } | null = null;
  if (metricsModule && metrics) {
    // The main thread serves the sum of every worker thread's metrics.
    if (thread) thread.metrics(metrics.registry);
    else if (cluster.isWorker) {
      // The primary serves the sum of every worker's metrics (prom-client's AggregatorRegistry).
      const { AggregatorRegistry } = await import('prom-client');
      AggregatorRegistry.setRegistries([metrics.registry]);
      // Constructing one is what makes a worker answer the primary's requests.
      new AggregatorRegistry();
    } else {
      const { host, port } = { host: settings.metrics.host, port: settings.metrics.port! };
      metricsServer = await metricsModule.serveMetrics(metrics.registry, host, port).catch((error: unknown) => {
        throw listenError(error, port, host, { port: 'TESSERA_METRICS_PORT', host: 'TESSERA_METRICS_HOST' });
      });
    }
  }
  const picked = settings.port === 0 && new URL(settings.issuer).port === '0' ? await listenOnPickedPort(settings) : null;
  const config = picked?.config ?? settings;
  // A server that cannot start (the store, the keys) lets go of the port it picked.
  const release = () => new Promise<void>((resolve) => (picked ? picked.server.close(() => resolve()) : resolve()));
  const writes = thread && 'writes' in thread ? thread.writes : null;
  const shared = thread && 'store' in thread ? thread.store : null;
  const opening = writes ? () => openThreadStore(config, writes) : shared ? async () => shared : undefined;
  const store = await openConfiguredStore(config, storeReport, opening).catch(async (error: unknown) => {
    await release();
    throw error;
  });
  // The key encryption key also seals upstream providers' secrets (tokens/secret-box.ts).
  const encryption = await Promise.resolve()
    .then(() => loadKeyEncryption(config.keyEncryption))
    .catch(async (error: unknown) => {
      await store.close();
      await release();
      throw error;
    });
  const keys = await prepareKeys(config, store, encryption).catch(async (error: unknown) => {
    if (error instanceof UnknownKeyEncryptionKeyError) encryption.discardCreatedKeyFile();
    await store.close();
    await release();
    throw error;
  });
  // Loaded here, not at the top: a node:cluster primary never serves, and without the app
  // (Fastify, the flows, the pages) it holds about a third less memory.
  const { adminListenerHandler, buildApp, Readiness } = await import('./app.ts');
  const readiness = new Readiness();
  const app = await buildApp({ config, store, keys, encryption, clock: systemClock, readiness, ...(metrics ? { metrics } : {}) });
  // Worker threads leave the purge to the main thread, which writes for them all.
  const stopPurge = writes
    ? async () => {}
    : schedulePurge(store, (error) => app.log.warn({ err: error }, 'purge failed'), Math.random, purgeRetention(config));
  let address: string;
  if (picked) {
    await app.ready();
    picked.serve(app.routing);
    address = config.issuer;
  } else {
    // Worker threads each listen on the one port: the kernel deals the connections out (SO_REUSEPORT).
    const listen = { port: config.port, host: config.host, ...(thread ? { reusePort: true } : {}) };
    address = await app.listen(listen).catch(async (error: unknown) => {
      await app.close();
      await store.close();
      throw listenError(error, config.port, config.host);
    });
  }
  // At once, and before the line that says it serves (the main thread lets go of a held port).
  await thread?.listening?.();
  // The admin API's own listener (TESSERA_ADMIN_LISTEN), the app's routing behind it.
  let adminServer: { server: Server; url: string } | null = null;
  if (config.adminListen) {
    const { host, port } = config.adminListen;
    const server = http.createServer(listenerOptions(config.requestTimeoutSeconds), adminListenerHandler(app.routing));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host, reusePort: thread !== undefined }, () => resolve());
      });
    } catch (error) {
      await (picked ? new Promise<void>((resolve) => picked.server.close(() => resolve())) : Promise.resolve());
      await app.close();
      await store.close();
      throw listenError(error, port, host, { port: 'TESSERA_ADMIN_LISTEN', host: 'TESSERA_ADMIN_LISTEN' });
    }
    const bound = server.address() as AddressInfo;
    adminServer = { server, url: `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}` };
  }
  recordIssuer(config, (message) => app.log.warn(message));
  const timeoutMs = config.shutdown.timeoutSeconds * 1000;
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      await stopPurge();
      if (adminServer) {
        const { server } = adminServer;
        await within(new Promise((resolve) => server.close(resolve)), timeoutMs, () => server.closeAllConnections());
      }
      // Stops accepting; requests in flight finish, up to the timeout, then their connections close.
      const listening = picked?.server ?? app.server;
      const stopped = picked
        ? new Promise<void>((resolve) => {
            picked.server.close(() => resolve());
            picked.server.closeIdleConnections();
          }).then(() => app.close())
        : app.close();
      await within(stopped, timeoutMs, () => listening.closeAllConnections());
      if (metricsServer) {
        const { server } = metricsServer;
        await new Promise((resolve) => {
          server.close(resolve);
          server.closeAllConnections();
        });
      }
      // The writer's store, shared with worker threads, is closed by whoever opened it.
      if (!shared) await store.close();
    })());
  const running: RunningServer = {
    app,
    url: address,
    metricsUrl: metricsServer?.url ?? null,
    adminUrl: adminServer?.url ?? null,
    close,
    async drain() {
      readiness.drain();
      app.log.info(`draining: /readyz answers 503; stopping in ${config.shutdown.delaySeconds} s`);
      await sleep(config.shutdown.delaySeconds * 1000);
      await close();
    },
  };
  const cleared = clearedEmailsWarning(await store.users.clearedEmails());
  if (cleared) app.log.warn(cleared);
  const unmatched = unmatchedTranslations(config.site.apiTranslations, config.site.apiTranslations ? await store.resources.list() : []);
  if (unmatched.length > 0) app.log.warn(`TESSERA_API_TRANSLATIONS names what no registered API has, so it is never shown: ${unmatched.join(', ')}`);
  // Before the line that says it serves, which a supervisor (and test/start-up.test.ts) may answer
  // with a signal at once: under load this process can be preempted between writing that line
  // and its next statement, so a signal handler installed after it can come too late.
  whenServing?.(running);
  app.log.info(`Tessera is serving ${config.issuer} (listening on ${address}) from ${storeLine(storeReport)}`);
  if (adminServer) app.log.info(`admin API at ${adminServer.url}/admin/v1 (and not on the public listener)`);
  const reminder = tlsReminder(config);
  if (reminder) app.log.warn(reminder);
  const ignored = ignoredVariablesWarning(config);
  if (ignored) app.log.warn(ignored);
  if (metricsServer) app.log.info(`metrics at ${metricsServer.url}`);
  return running;
}

/**
 * The one line `npm start` and `tessera serve` write when they cannot start (the two
 * worded it differently): a value refused as the settings are read is an invalid setting; a
 * setting the start found wrong (a port in use, a missing database) is why it cannot start.
 * Either names the setting to change; anything else is reported as it is.
 */
export function startRefusal(error: unknown, stage: 'settings' | 'start'): string {
  if (error instanceof ConfigError) return stage === 'settings' ? `invalid setting ${error.message}` : `cannot start: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    process.stderr.write(`tessera: ${startRefusal(error, 'settings')}\n`);
    process.exit(1);
  }
  await serve(config);
}

/**
 * Runs the server until SIGINT or SIGTERM, then closes it cleanly. With `config.workers`
 * above 1, several servers share the port: worker threads of this process (`startThreads`)
 * on an SQLite file, or node:cluster workers whose primary this process becomes.
 */
export async function serve(config: Config): Promise<void> {
  if (config.workers > 1 && cluster.isPrimary && !threadsServe(config)) return servePrimary(config);
  // SIGTERM (a deploy, a load balancer's orchestrator) drains; SIGINT (Ctrl-C) stops at once.
  const stopOnSignals = (server: { close(): Promise<void>; drain(): Promise<void> }) => {
    const stop = (stopping: Promise<void>) =>
      stopping.then(
        () => process.exit(0),
        () => process.exit(1),
      );
    process.once('SIGINT', () => stop(server.close()));
    process.once('SIGTERM', () => stop(server.drain()));
  };
  if (config.workers > 1 && cluster.isPrimary) {
    // The handlers first: the main thread's server, or the first thread, says it serves before
    // the others listen, and a supervisor may answer that line with a signal at once. One
    // that arrives during the start drains or closes once the start is done; a start that
    // fails is reported, and exits, by main().
    const starting = startThreads(config);
    const failed = () => new Promise<never>(() => {});
    stopOnSignals({
      close: () => starting.then((server) => server.close(), failed),
      drain: () => starting.then((server) => server.drain(), failed),
    });
    const server = await starting;
    if (server.metricsUrl) process.stdout.write(`metrics at ${server.metricsUrl}\n`);
    return;
  }
  await startServer(config, stopOnSignals);
}

/**
 * Whether `TESSERA_WORKERS` above 1 runs worker threads in this process (an SQLite file,
 * `startThreads`) rather than node:cluster processes: PostgreSQL, which needs no single
 * writer, an in-memory database, which a second connection would not see, the single
 * executable, which has no script file for a thread to load, and systems other than Linux,
 * where Node.js's `reusePort` is refused or does not deal the connections out.
 */
function threadsServe(config: Config): boolean {
  const location = parseDatabase(config.database);
  return location.kind === 'sqlite' && location.path !== ':memory:' && !isSea() && process.platform === 'linux';
}

/** The worker threads' server, as `startThreads` starts it. */
export interface ThreadedServer {
  /** Where the threads listen. */
  readonly url: string;
  /** Where the sum of the threads' metrics is served, when TESSERA_METRICS_PORT is set. */
  readonly metricsUrl: string | null;
  /** The worker threads serving now beside the main thread (a test stops one to see it replaced). */
  threads(): readonly Worker[];
  /** Stops every thread at once (SIGINT), then the writer. */
  close(): Promise<void>;
  /** Drains every thread (SIGTERM: `/readyz` 503 for TESSERA_SHUTDOWN_DELAY, then close), then the writer. */
  drain(): Promise<void>;
}

/** What a worker thread tells the main thread (src/thread.ts). */
export type ThreadMessage =
  /** It listens, and waits for `released` before it says it serves. */
  | { readonly type: 'bound' }
  | { readonly type: 'listening' }
  | { readonly type: 'refused'; readonly text: string }
  | { readonly type: 'metrics'; readonly id: number; readonly value: MetricObjectWithValues<MetricValue<string>>[] };

/** What the main thread asks of a worker thread. */
export type ThreadCommand =
  | { readonly type: 'metrics'; readonly id: number }
  | { readonly type: 'drain' | 'close' }
  /** No socket that never answers is left on the port (PORT=0): the thread may say it serves. */
  | { readonly type: 'released' };

/**
 * From this many workers on, the main thread only writes: it serves no connection, and
 * `TESSERA_WORKERS` worker threads serve. Every thread's writes wait for the main thread's
 * turn, and while it served a share of the connections too, each of its turns was as long
 * as that share's requests made it. On a 16-core Intel Xeon (docs/benchmarks.md, "The main
 * thread as the writer alone"), the writer alone answered 1.36x the code exchanges with 4
 * serving threads and 1.24x with 8, and 1.28x and 1.18x the device authorizations, at the
 * same CPU per request. With 2 the main thread serves too: on two cores a writer thread of
 * its own cost a quarter more CPU per device authorization.
 */
export const WRITER_ONLY_FROM = 4;

/**
 * `config.workers` servers in this process, on an SQLite file: the main thread prepares the
 * store (migrations, signing keys) and owns the one connection that writes, whose group
 * commit commits the writes of every thread that arrive in one of its turns together; worker
 * threads each build the app, listen on the same port (SO_REUSEPORT: the kernel deals the
 * connections out), read on a connection of their own and send their writes to the writer
 * over a MessagePort. One connection writing keeps its page cache, where each process's
 * connection threw it away at every other process's commit (docs/benchmarks.md). Below
 * `WRITER_ONLY_FROM` workers the main thread serves too, from the writer's own store, beside
 * `config.workers - 1` threads: one JavaScript thread fewer, as processes had. From it on,
 * the main thread only writes and `config.workers` threads serve. A thread that dies is
 * replaced; one that dies before it listened stops the start, as its replacement would fail
 * the same way. The purge runs in the main thread, once.
 */
export async function startThreads(settings: Config): Promise<ThreadedServer> {
  const location = parseDatabase(settings.database);
  if (location.kind !== 'sqlite') throw new Error('worker threads serve an SQLite file only');
  // Every thread's signatures share this process's one pool of libuv threads: as many as
  // the cores, where one process alone had up to four (threadpool.ts). libuv reads the
  // variable when the pool starts, at the first signature.
  if (!poolSizeGiven) process.env['UV_THREADPOOL_SIZE'] = String(Math.max(1, availableParallelism()));
  const live = new Map<Worker, { listening: boolean }>();
  const asked = new Map<number, { worker: Worker; resolve: (value: MetricObjectWithValues<MetricValue<string>>[]) => void }>();
  let asks = 0;
  const ask = (worker: Worker) =>
    new Promise<MetricObjectWithValues<MetricValue<string>>[]>((resolve) => {
      const id = (asks += 1);
      asked.set(id, { worker, resolve });
      worker.postMessage({ type: 'metrics', id } satisfies ThreadCommand);
    });
  let metricsServer: { server: Server; url: string } | null = null;
  if (settings.metrics.port !== null) {
    // The threads' metrics, summed: each thread hands its registry's values over on request.
    const [{ AggregatorRegistry }, { serveMetrics }] = await Promise.all([import('prom-client'), import('./http/metrics.ts')]);
    const { host, port } = { host: settings.metrics.host, port: settings.metrics.port };
    metricsServer = await serveMetrics(
      {
        contentType: new AggregatorRegistry().contentType,
        metrics: async () => {
          const serving = [...live].filter(([, state]) => state.listening).map(([worker]) => worker);
          const own = mainRegistry === null ? [] : [mainRegistry.getMetricsAsJSON()];
          return AggregatorRegistry.aggregate(await Promise.all([...own, ...serving.map(ask)])).metrics();
        },
      },
      host,
      port,
    ).catch((error: unknown) => {
      throw listenError(error, port, host, { port: 'TESSERA_METRICS_PORT', host: 'TESSERA_METRICS_HOST' });
    });
  }
  const closeMetrics = () =>
    new Promise<void>((resolve) => {
      if (!metricsServer) return resolve();
      metricsServer.server.close(() => resolve());
      metricsServer.server.closeAllConnections();
    });
  const storeReport = inspectDatabase(settings);
  await probeListen(settings.port, settings.host).catch(async (error: unknown) => {
    await closeMetrics();
    throw error;
  });
  const { openSqliteWriter } = await import('./store/sqlite/store.ts');
  const writer = await openConfiguredStore(settings, storeReport, async () => openSqliteWriter(location.path)).catch(async (error: unknown) => {
    await closeMetrics();
    throw error;
  });
  process.stdout.write(`store: ${storeLine(storeReport)}\n`);
  const release = async () => {
    await writer.store.close();
    await closeMetrics();
  };
  try {
    await prepareKeys(settings, writer.store);
  } catch (error) {
    await release();
    throw error;
  }
  // PORT=0: the port is picked here and held until the main thread listens on it, which then
  // keeps it for the worker threads, so that all listen on the same one (and the issuer names it).
  let config = settings;
  let held: Server | null = null;
  if (settings.port === 0) {
    const server = http.createServer();
    await new Promise<void>((resolve) => server.listen({ port: 0, host: settings.host, reusePort: true }, () => resolve()));
    held = server;
    config = onPickedPort(settings, (server.address() as AddressInfo).port);
  }
  // Called by the main thread's server once it listens, or by the start that failed before it did.
  const letGo = () =>
    new Promise<void>((resolve) => {
      const server = held;
      held = null;
      if (server) server.close(() => resolve());
      else resolve();
    });
  // Below WRITER_ONLY_FROM, the main thread serves too, from the writer's own store (its
  // writes need no channel), and its server runs the purge; `config.workers - 1` worker
  // threads beside it. From it on, `config.workers` threads serve and the main thread
  // only writes, and runs the purge itself.
  const writerServes = config.workers < WRITER_ONLY_FROM;
  const threadCount = writerServes ? config.workers - 1 : config.workers;
  let mainRegistry: Registry | null = null;
  let own: Pick<RunningServer, 'close' | 'drain'>;
  try {
    // The held port is let go of once a server of this process listens on it too, before any
    // thread says it serves: the kernel deals a connection to any socket on the port
    // (SO_REUSEPORT), and the held one, which never answers, would reset those dealt to it
    // when it closed. A worker thread asks for it (`bound`) and waits (`released`).
    own = writerServes
      ? await startServer(config, undefined, { store: writer.store, metrics: (registry) => (mainRegistry = registry), listening: letGo })
      : purgeOnly(writer.store, config);
  } catch (error) {
    await letGo();
    await release();
    throw error;
  }

  let stopping = false;
  /** Every thread of the start has listened: from then on, one that dies is replaced. */
  let serving = false;
  const exits = new Set<Promise<void>>();
  const entry = new URL(import.meta.url.endsWith('.ts') ? './thread.ts' : './thread.js', import.meta.url);
  let failStart: (error: Error) => void = () => {};
  let started: () => void = () => {};
  const start = () => {
    const channel = new MessageChannel();
    const forget = writer.accept(channel.port1);
    const worker = new Worker(entry, { workerData: { config, writes: channel.port2 }, transferList: [channel.port2] });
    const state = { listening: false };
    // A Worker's threadId reads -1 once it has exited.
    const { threadId } = worker;
    let refusal: string | null = null;
    live.set(worker, state);
    const exited = new Promise<void>((resolve) => {
      worker.once('exit', (code) => {
        exits.delete(exited);
        forget();
        live.delete(worker);
        for (const [id, each] of asked) {
          if (each.worker !== worker) continue;
          asked.delete(id);
          each.resolve([]);
        }
        resolve();
        if (stopping) return;
        if (!state.listening) {
          // Its replacement would fail the same way: the start stops; later, the thread is not started again.
          const why = refusal ?? `a worker thread exited before it could serve (exit code ${code})`;
          if (serving) process.stderr.write(`tessera: ${why}; not starting another\n`);
          else failStart(new Error(why));
          return;
        }
        process.stderr.write(`tessera: worker thread ${threadId} exited (exit code ${code}); starting another\n`);
        start();
      });
    });
    exits.add(exited);
    worker.on('message', (message: ThreadMessage) => {
      if (message.type === 'bound') void letGo().then(() => worker.postMessage({ type: 'released' } satisfies ThreadCommand));
      else if (message.type === 'listening') {
        state.listening = true;
        if (!serving && [...live.values()].filter((each) => each.listening).length >= threadCount) {
          serving = true;
          started();
        }
      } else if (message.type === 'refused') refusal = message.text;
      else if (message.type === 'metrics') {
        asked.get(message.id)?.resolve(message.value);
        asked.delete(message.id);
      }
    });
    // What the thread threw: it exits, and is replaced (or the start stops) above.
    worker.on('error', (error) =>
      process.stderr.write(`tessera: worker thread ${threadId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`),
    );
  };
  const ending = (command: 'drain' | 'close') => async () => {
    stopping = true;
    for (const worker of live.keys()) worker.postMessage({ type: command } satisfies ThreadCommand);
    await Promise.all([own[command](), ...exits]);
    await release();
  };
  const close = ending('close');
  try {
    await new Promise<void>((resolve, reject) => {
      started = resolve;
      failStart = reject;
      for (let i = 0; i < threadCount; i += 1) start();
    });
  } catch (error) {
    stopping = true;
    await Promise.all([...live.keys()].map((worker) => worker.terminate()));
    await Promise.all(exits);
    await own.close();
    // From WRITER_ONLY_FROM on, no server of the main thread listened and let go of the held
    // port (PORT=0): a thread that failed before it asked leaves it held, and with it the
    // process, which would then never exit.
    await letGo();
    await release();
    throw error;
  }
  let closing: Promise<void> | null = null;
  return {
    url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`,
    metricsUrl: metricsServer?.url ?? null,
    threads: () => [...live.keys()],
    close: () => (closing ??= close()),
    drain: () => (closing ??= ending('drain')()),
  };
}

/**
 * The node:cluster primary: prepares the store once (migrations, first signing keys), so the
 * workers never race to create them, then forks `config.workers` workers that share the
 * port and the store: SQLite in WAL mode, where each worker's connection waits for another's
 * write lock (busy_timeout) instead of failing, or PostgreSQL. Resolves once every worker
 * listens. A worker that dies is replaced; one that dies before it ever listened stops the
 * whole server, since its replacement would fail the same way.
 */
async function servePrimary(config: Config): Promise<void> {
  if (config.metrics.port !== null) {
    // The workers' metrics, summed: each worker hands its registry over on request.
    const [{ AggregatorRegistry }, { serveMetrics }] = await Promise.all([import('prom-client'), import('./http/metrics.ts')]);
    const aggregator = new AggregatorRegistry();
    const { url } = await serveMetrics(
      { contentType: aggregator.contentType, metrics: () => aggregator.clusterMetrics() },
      config.metrics.host,
      config.metrics.port,
    );
    process.stdout.write(`metrics at ${url}\n`);
  }
  const storeReport = inspectDatabase(config);
  await probeListen(config.port, config.host);
  const store = await openConfiguredStore(config, storeReport);
  process.stdout.write(`store: ${storeLine(storeReport)}\n`);
  try {
    await prepareKeys(config, store);
  } finally {
    await store.close();
  }
  let stopping = false;
  const listening = new Set<ClusterWorker>();
  const fork = () => cluster.fork();

  const ready = new Promise<void>((resolve, reject) => {
    cluster.on('listening', (worker) => {
      listening.add(worker);
      if (listening.size === config.workers) resolve();
    });
    cluster.on('exit', (worker, code, signal) => {
      if (stopping) return;
      if (!listening.delete(worker)) {
        stopping = true;
        for (const other of Object.values(cluster.workers ?? {})) other?.kill('SIGTERM');
        reject(new Error(`a worker exited before it could serve (${signal ?? `exit code ${code}`})`));
        return;
      }
      process.stderr.write(`tessera: worker ${worker.process.pid} exited (${signal ?? `exit code ${code}`}); starting another\n`);
      fork();
    });
  });
  for (let i = 0; i < config.workers; i += 1) fork();

  const stop = () => {
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
    if (workers.length === 0) process.exit(0);
    let left = workers.length;
    for (const worker of workers) {
      worker.once('exit', () => {
        left -= 1;
        if (left === 0) process.exit(0);
      });
      // Each worker closes its server and store on SIGTERM (serve above).
      worker.kill('SIGTERM');
    }
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await ready;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // A worker thread loads this module too (src/thread.ts), under the same command line.
  if (isMainThread) {
    main().catch((error: unknown) => {
      process.stderr.write(`tessera: ${startRefusal(error, 'start')}\n`);
      process.exit(1);
    });
  }
}

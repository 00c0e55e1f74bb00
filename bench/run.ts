/**
 * `npm run bench [-- options]`: Tessera under load, and with `--compare` oidc-provider 9.x
 * beside it in the same run. Every scenario gets a fresh server; the load comes from this
 * process (autocannon), so the server's CPU and memory are its own. See docs/benchmarks.md.
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { scaleChart, scalePointOf } from './charts.ts';
import { type Custom, combine, fromPlan, load, median, percentile, type Plan, type Sample, takingTurns } from './load.ts';
import { machineBusySeconds, peakRssMb, procAvailable, processTree } from './proc.ts';
import { startAccountFlood, startFlood, type Flood, type FloodCounts } from './flood.ts';
import { seedDeviceCodes } from './seed.ts';
import { seedEventFlood, startEventFlood, startEventReceiver, type EventFloodSeed, type EventReceiver } from './events.ts';
import {
  type AgainstCheckout,
  againstCheckout,
  allowedCpus,
  BENCH_API,
  createPostgresDatabase,
  FLOOD_OWNER,
  ROOT,
  serverCpuLists,
  startPeer,
  startTessera,
  type MintedCode,
  type StartOptions,
  type Target,
} from './targets.ts';

const SCENARIOS = [
  'device_authorization',
  'device_poll',
  'code_exchange',
  'refresh',
  'client_credentials',
  'device_poll_scale',
  'dpop',
  'sign_in_flood',
  'scale_out',
  'events_flood',
] as const;
type ScenarioName = (typeof SCENARIOS)[number];
type TargetKind = 'tessera/sqlite' | 'tessera/sqlite@against' | 'tessera/postgres' | 'tessera/postgres@against' | 'oidc-provider';

const USAGE = `Usage: npm run bench -- [options]

  --compare             also run oidc-provider 9.x (installed under bench/ on first use)
  --quick               a smoke run: 1 s runs, one run, short warm-up, 10,000 codes at scale
  --duration S          seconds per timed run (default 5)
  --warmup S            seconds of warm-up before the runs (default 1)
  --runs N              timed runs per scenario; medians are reported (default 3)
  --connections N       concurrent connections (default 50)
  --workers N[,N...]    Tessera workers (TESSERA_WORKERS, default 1: threads on SQLite); a list (1,2,4)
                        runs one Tessera per count in the same run, taking turns, labelled
                        tessera/sqlite xN: the worker curve, each count beside the others
  --instances N[,N...]  Tessera on PostgreSQL as N instances of one process each on one
                        database, the connections dealt out over them; a list (1,2,4) runs
                        one per count, labelled tessera/postgres xN instances: the instance
                        curve. With a list of workers or instances, the bench draws the
                        curves (req/s and p99 against the count) as <out>/scale-<scenario>.svg
  --scenario NAME       run only this scenario (repeatable): ${SCENARIOS.join(', ')}
                        (dpop: Tessera's device polls with and without a DPoP proof, one server;
                        scale_out: code exchanges and device authorizations on two Tessera
                        instances sharing one PostgreSQL database, and on one SQLite
                        instance of two workers)
  --postgres URL        PostgreSQL to create a scratch database in
                        (default postgres://postgres@127.0.0.1:5432/postgres)
  --no-postgres         skip PostgreSQL even where one answers
  --scale N             the larger outstanding-code count of device_poll_scale (default 1000000)
  --device-interval S   the poll interval Tessera is started with and the bench keeps to (default 0)
  --batch N             authorization codes (refresh: refresh tokens) minted, then used once,
                        per timed batch (default 200)
  --flood-addresses N   sign_in_flood: addresses the wrong-password posts come from (default 6)
  --flood-in-flight N   sign_in_flood: posts each address keeps in flight (default 4);
                        events_flood: admin API changes kept in flight
  --pool N              pending device codes polled in turn (default 400; more than --connections)
  --baseline            device_poll also against a bare node:http server doing only the
                        irreducible work of a persisted poll (bench/baseline.ts)
  --against DIR         also run the Tessera of another checkout (with its own node_modules)
                        on SQLite, as tessera/sqlite@NAME (and on PostgreSQL where it runs, as
                        tessera/postgres@NAME): an A/B of two versions in one run; its store
                        is seeded through that checkout's own code
  --cpu-prof            write node --cpu-prof profiles of the servers to <out>/profiles/<target>,
                        one file a thread
  --server-cpus LIST    keep the servers to these CPUs (taskset -c, e.g. 0-11); run the bench
                        itself under taskset -c on the others, so neither takes the other's time
  --load-threads N      split each load over N load-generator threads, each its own autocannon
                        (default 1; one sends about 7,000 code exchanges a second: use more
                        where several workers answer faster than that)
  --out DIR             where latest.md, latest.json, logs/ and profiles/ go (default bench/results)
`;

interface Settings {
  readonly compare: boolean;
  readonly duration: number;
  readonly warmup: number;
  readonly runs: number;
  readonly connections: number;
  /** Worker counts: one Tessera target per count (one count: unlabelled). */
  readonly workers: readonly number[];
  /** Instance counts on PostgreSQL: one target per count, each instance one process; empty: as the workers. */
  readonly instances: readonly number[];
  readonly scenarios: readonly ScenarioName[];
  readonly postgres: string | null;
  readonly scale: number;
  readonly deviceInterval: number;
  readonly cpuProf: boolean;
  readonly baseline: boolean;
  /** Another checkout to measure beside this one. */
  readonly against: AgainstCheckout | null;
  /** Codes minted then exchanged per timed batch: what oidc-provider's memory adapter can hold. */
  readonly batch: number;
  /** Pending device codes polled round-robin. */
  readonly pool: number;
  readonly flood: { readonly addresses: number; readonly perAddress: number };
  readonly out: string;
  /** `--server-cpus`: a CPU list the servers are kept to, or null. */
  readonly serverCpus: string | null;
  /** `--load-threads`: autocannon threads the load is split over (a DPoP load keeps to one). */
  readonly loadThreads: number;
  /** A smoke run (`--quick`): the machine's idle load and the RS256 floor are sampled briefly. */
  readonly quick: boolean;
}

function settingsFrom(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      compare: { type: 'boolean' },
      quick: { type: 'boolean' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      runs: { type: 'string' },
      connections: { type: 'string' },
      workers: { type: 'string' },
      instances: { type: 'string' },
      scenario: { type: 'string', multiple: true },
      postgres: { type: 'string' },
      'no-postgres': { type: 'boolean' },
      scale: { type: 'string' },
      'device-interval': { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      baseline: { type: 'boolean' },
      against: { type: 'string' },
      batch: { type: 'string' },
      out: { type: 'string' },
      pool: { type: 'string' },
      'flood-addresses': { type: 'string' },
      'flood-in-flight': { type: 'string' },
      'server-cpus': { type: 'string' },
      'load-threads': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const number = (name: string, raw: string | undefined, fallback: number, min: number): number => {
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < min) throw new Error(`--${name} must be a number of at least ${min}, got ${raw}`);
    return value;
  };
  const quick = values.quick === true;
  if (values.pool !== undefined && values.connections !== undefined && Number(values.pool) <= Number(values.connections)) {
    throw new Error('--pool must be larger than --connections: a code is never polled twice at once');
  }
  const scenarios = (values.scenario ?? [...SCENARIOS]).map((name) => {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`--scenario ${name}: must be one of ${SCENARIOS.join(', ')}`);
    return name as ScenarioName;
  });
  return {
    compare: values.compare === true,
    duration: number('duration', values.duration, quick ? 1 : 5, 0.1),
    warmup: number('warmup', values.warmup, quick ? 0.5 : 1, 0),
    runs: Math.floor(number('runs', values.runs, quick ? 1 : 3, 1)),
    connections: Math.floor(number('connections', values.connections, 50, 1)),
    workers: (values.workers ?? '1').split(',').map((count) => Math.floor(number('workers', count, 1, 1))),
    instances: values.instances === undefined ? [] : values.instances.split(',').map((count) => Math.floor(number('instances', count, 1, 1))),
    scenarios,
    postgres: values['no-postgres'] ? null : (values.postgres ?? 'postgres://postgres@127.0.0.1:5432/postgres'),
    scale: Math.floor(number('scale', values.scale, quick ? 10_000 : 1_000_000, 2_000)),
    deviceInterval: Math.floor(number('device-interval', values['device-interval'], 0, 0)),
    cpuProf: values['cpu-prof'] === true,
    baseline: values.baseline === true,
    against: values.against === undefined ? null : againstCheckout(values.against),
    batch: Math.floor(number('batch', values.batch, 200, 1)),
    pool: Math.floor(number('pool', values.pool, 400, 1)),
    flood: {
      addresses: Math.floor(number('flood-addresses', values['flood-addresses'], 6, 1)),
      perAddress: Math.floor(number('flood-in-flight', values['flood-in-flight'], 4, 1)),
    },
    out: values.out ?? join(ROOT, 'bench/results'),
    serverCpus: values['server-cpus'] === undefined ? null : cpuList(values['server-cpus']),
    loadThreads: Math.floor(number('load-threads', values['load-threads'], 1, 1)),
    quick,
  };
}

/** A `taskset -c` list (`0-11`, `0,2,4`), checked here so a typo fails before any server starts. */
function cpuList(raw: string): string {
  if (!/^\d+(-\d+)?(,\d+(-\d+)?)*$/.test(raw)) throw new Error(`--server-cpus ${raw}: must be a CPU list such as 0-11 or 0,2,4`);
  if (spawnSync('taskset', ['--version']).status !== 0) throw new Error('--server-cpus needs taskset (util-linux)');
  return raw;
}

interface Row {
  readonly scenario: string;
  readonly target: string;
  /** Why there is no figure, when there is none. */
  readonly skipped?: string;
  readonly rps?: number;
  readonly p50?: number;
  readonly p99?: number;
  readonly errors?: number;
  readonly unexpected?: number;
  readonly slowDown?: number;
  readonly cpuPercent?: number;
  /** CPU of PostgreSQL's processes for the target's database (% of one core); NaN on SQLite. */
  readonly databaseCpuPercent?: number;
  /** CPU used by neither the server nor the load generator (% of one core): other work on the machine. */
  readonly otherPercent?: number;
  /** CPU of the load generator, all its threads (% of one core). */
  readonly driverPercent?: number;
  /** The load generator's threads. */
  readonly loadThreads?: number;
  readonly peakRssMb?: number;
  readonly examples?: string[];
}

const FORM = 'application/x-www-form-urlencoded';
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

function summarise(scenario: string, target: Target, samples: readonly Sample[]): Row {
  const perRun = samples.map((sample) => {
    const sorted = [...sample.latencies].sort((a, b) => a - b);
    return {
      rps: sample.requests / sample.seconds,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      cpu: (sample.cpuSeconds / sample.seconds) * 100,
      database: (sample.databaseCpuSeconds / sample.seconds) * 100,
      other: (sample.otherCpuSeconds / sample.seconds) * 100,
      driver: (sample.driverCpuSeconds / sample.seconds) * 100,
    };
  });
  return {
    scenario,
    target: target.label,
    rps: median(perRun.map((run) => run.rps)),
    p50: median(perRun.map((run) => run.p50)),
    p99: median(perRun.map((run) => run.p99)),
    errors: samples.reduce((sum, s) => sum + s.errors, 0),
    unexpected: samples.reduce((sum, s) => sum + s.unexpected, 0),
    slowDown: samples.reduce((sum, s) => sum + s.slowDown, 0),
    cpuPercent: median(perRun.map((run) => run.cpu)),
    databaseCpuPercent: median(perRun.map((run) => run.database)),
    otherPercent: median(perRun.map((run) => run.other)),
    driverPercent: median(perRun.map((run) => run.driver)),
    loadThreads: Math.max(1, ...samples.map((sample) => sample.threads)),
    peakRssMb: procAvailable ? peakRssMb(target.pids.flatMap(processTree)) : NaN,
    examples: samples.flatMap((s) => s.examples).slice(0, 3),
  };
}

/** One target made ready for one scenario: `run(seconds)` is one timed run. */
interface Prepared {
  readonly scenario: string;
  readonly target: Target;
  readonly skipped?: string;
  readonly run?: (seconds: number) => Promise<Sample>;
}

/**
 * Warm-up (discarded), then the timed runs, taking turns between the targets (run 1 of
 * each, then run 2 of each, …) so that a machine that slows down or speeds up during the
 * scenario treats every server alike. Between the two, PostgreSQL's statistics of each
 * target's tables are brought up to date (`analyzeDatabases`).
 */
async function measure(settings: Settings, prepared: readonly Prepared[]): Promise<Row[]> {
  const live = prepared.filter((entry) => entry.run !== undefined);
  if (settings.warmup > 0) for (const entry of live) await entry.run!(settings.warmup);
  await analyzeDatabases(
    settings,
    live.map((entry) => entry.target),
  );
  const samples = new Map<Prepared, Sample[]>(live.map((entry) => [entry, []]));
  // The targets take turns at going first, run by run (load.ts).
  for (let i = 0; i < settings.runs; i += 1) {
    for (const entry of takingTurns(live, (row) => row.target, i)) samples.get(entry)!.push(await entry.run!(settings.duration));
  }
  return prepared.map((entry) =>
    entry.run
      ? summarise(entry.scenario, entry.target, samples.get(entry)!)
      : { scenario: entry.scenario, target: entry.target.label, skipped: entry.skipped ?? 'not run' },
  );
}

/**
 * `ANALYZE` in each PostgreSQL database the targets keep their stores in, as autovacuum does
 * in a deployment once a table has changed by a tenth (its default, checked every minute).
 * A target's database is new, and a run ends before autovacuum's first look: without this,
 * a named statement keeps the generic plan it was given on its sixth execution in the
 * warm-up, when the tables held a few hundred rows, and reads the whole table on each
 * execution as the tables grow (a code exchange's lookup, on a table of 30,000 codes: 32 ms
 * instead of 0.14). Which plan a run measured then depended on whether autovacuum happened
 * to look during it; `ANALYZE` makes PostgreSQL plan every statement again, for the tables
 * as they are.
 */
async function analyzeDatabases(settings: Settings, targets: readonly Target[]): Promise<void> {
  for (const database of new Set(targets.map((target) => target.database))) {
    if (database === null || settings.postgres === null) continue;
    const url = new URL(settings.postgres);
    url.pathname = `/${database}`;
    const client = new pg.Client({ connectionString: url.href });
    await client.connect();
    try {
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
  }
}

/** Token-endpoint POSTs as a `Plan`: data a load-generator thread can take. */
function tokenPlan(target: Target, path: string, mode: Plan['mode'], bodies: readonly string[], ok: readonly string[], okStatus = 200): Plan {
  return { mode, path, headers: { authorization: target.authorization, 'content-type': FORM }, bodies, okStatus, ok };
}

function prepareDeviceAuthorization(settings: Settings, target: Target, scenario = 'device_authorization'): Prepared {
  const path = target.deviceAuthorizationPath;
  if (!path) return { scenario, target, skipped: 'no device authorization endpoint' };
  return sameRequest(settings, target, scenario, tokenPlan(target, path, 'same', ['scope=openid%20profile'], ['"device_code"']));
}

/** One request (a `same` plan) sent over and over for the run's time. */
function sameRequest(settings: Settings, target: Target, scenario: string, plan: Plan): Prepared {
  return {
    scenario,
    target,
    run: (seconds) =>
      load({
        url: target.origins,
        connections: settings.connections,
        duration: seconds,
        requests: plan,
        threads: settings.loadThreads,
        serverPid: target.pids,
        database: target.database,
      }),
  };
}

/**
 * RFC 6749 §4.4: a client's own access token for an API (the bench's one, `bench.read`),
 * HTTP Basic, no person and no code: what a machine-to-machine caller asks for.
 */
function prepareClientCredentials(settings: Settings, target: Target): Prepared {
  const plan = tokenPlan(target, target.tokenPath, 'same', [`grant_type=client_credentials&scope=${BENCH_API.scope}`], ['"access_token"']);
  return sameRequest(settings, target, 'client_credentials', plan);
}

/**
 * Scale-out: two Tessera instances, one process each, on one PostgreSQL database
 * (the load dealt out over both), against one SQLite instance of two node:cluster workers:
 * the two ways to put two cores to work. Each takes code exchanges and device authorizations.
 */
async function scaleOutTargets(settings: Settings, options: StartOptions, targets: Target[], postgres: boolean): Promise<Prepared[]> {
  const startPostgres = async () => {
    const database = await createPostgresDatabase(settings.postgres!);
    if (!database) throw new Error('PostgreSQL stopped answering');
    return startTessera({ ...options, workers: 1, postgres: database, instances: 2, labelSuffix: ' x2 instances' });
  };
  const starting = [...(postgres ? [startPostgres()] : []), startTessera({ ...options, workers: 2, postgres: null, labelSuffix: ' x2 workers' })];
  const settled = await Promise.allSettled(starting);
  const started = settled.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
  targets.push(...started);
  const failed = settled.find((outcome) => outcome.status === 'rejected');
  if (failed) throw failed.reason;
  return [
    ...(postgres ? [] : [{ scenario: 'scale_out', target: { label: 'tessera/postgres x2 instances' } as Target, skipped: 'no PostgreSQL' }]),
    ...started.map((target) => prepareCodeExchange(settings, target, 'scale_out: code_exchange')),
    ...started.map((target) => prepareDeviceAuthorization(settings, target, 'scale_out: device_authorization')),
  ];
}

/** Pending device codes made through the server's device authorization endpoint. */
async function devicePool(target: Target, size: number): Promise<string[]> {
  const codes: string[] = [];
  const worker = async () => {
    while (codes.length < size) {
      const response = await fetch(`${target.origin}${target.deviceAuthorizationPath}`, {
        method: 'POST',
        headers: { authorization: target.authorization, 'content-type': FORM },
        body: 'scope=openid%20profile',
      });
      const body = (await response.json()) as { device_code?: string };
      if (!response.ok || typeof body.device_code !== 'string')
        throw new Error(`${target.label}: device authorization answered ${response.status} ${JSON.stringify(body)}`);
      codes.push(body.device_code);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return codes.slice(0, size);
}

/**
 * Polls the pool in turn. RFC 8628 §3.5: a client waits `interval` seconds between polls
 * of one code; with an interval, the overall rate is held to what the pool allows (with 10%
 * to spare), so any slow_down is the server's mistake.
 */
function preparePoll(settings: Settings, target: Target, scenario: string, codes: readonly string[], dpop?: () => string): Prepared {
  // Codes wait in a queue and go back to its end once answered: polled in turn, and never
  // again while a poll of the same code is still in flight, as a device never does.
  const bodies = codes.map((code) => `grant_type=${encodeURIComponent(DEVICE_GRANT)}&device_code=${encodeURIComponent(code)}`);
  const plan: Plan = {
    ...tokenPlan(target, target.tokenPath, 'queue', bodies, ['"authorization_pending"'], 400),
    slowDown: { status: 400, includes: '"slow_down"' },
  };
  const overallRate = settings.deviceInterval > 0 ? Math.max(1, Math.floor(codes.length / (settings.deviceInterval * 1.1))) : undefined;
  return {
    scenario,
    target,
    run: (seconds) =>
      load({
        url: target.origins,
        connections: settings.connections,
        duration: seconds,
        ...(overallRate === undefined ? {} : { overallRate }),
        // A DPoP proof is made afresh for each request, by a closure: that load stays on this thread.
        requests: dpop ? withDpop(fromPlan(plan), dpop) : plan,
        threads: settings.loadThreads,
        serverPid: target.pids,
        database: target.database,
      }),
  };
}

/** The same requests, each carrying a fresh DPoP proof. */
function withDpop(requests: Custom, dpop: () => string): Custom {
  return {
    ...requests,
    next: (context) => {
      const request = requests.next(context);
      return { ...request, headers: { ...request.headers, dpop: dpop() } };
    },
  };
}

async function prepareDevicePoll(settings: Settings, target: Target): Promise<Prepared> {
  if (!target.deviceAuthorizationPath || !target.supportsDevicePolling) return { scenario: 'device_poll', target, skipped: 'no device flow' };
  return preparePoll(settings, target, 'device_poll', await devicePool(target, settings.pool));
}

/**
 * DPoP proofs (RFC 9449 §4.2) for `htu`, each with a fresh jti and the current iat, signed
 * here with node:crypto's ES256 as a client would: the load generator pays for the
 * signature, the server for the check (its CPU is measured apart from this process's).
 */
function dpopProofs(htu: string): () => string {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { kty, crv, x, y } = publicKey.export({ format: 'jwk' });
  const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: { kty, crv, x, y } })).toString('base64url');
  const prefix = randomBytes(9).toString('base64url');
  let counter = 0;
  return () => {
    const payload = Buffer.from(JSON.stringify({ jti: `${prefix}${(counter += 1)}`, htm: 'POST', htu, iat: Math.floor(Date.now() / 1000) })).toString(
      'base64url',
    );
    const signature = sign('sha256', Buffer.from(`${header}.${payload}`), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    return `${header}.${payload}.${signature}`;
  };
}

/**
 * The cost of a DPoP proof check per token request: the same device poll (an unbound code,
 * authorization_pending) on one server, with a proof and without, over two pools of codes.
 * The proof adds its signature check and the jti write (RFC 9449 §11.1) to the poll.
 */
async function prepareDpop(settings: Settings, target: Target): Promise<Prepared[]> {
  if (!target.label.startsWith('tessera') || !target.deviceAuthorizationPath) return [{ scenario: 'dpop', target, skipped: 'Tessera only' }];
  const [bearer, dpop] = [await devicePool(target, settings.pool), await devicePool(target, settings.pool)];
  return [
    preparePoll(settings, target, DPOP_ROWS.bearer, bearer),
    preparePoll(settings, target, DPOP_ROWS.dpop, dpop, dpopProofs(`${target.origin}${target.tokenPath}`)),
  ];
}

const DPOP_ROWS = { bearer: 'dpop: poll without proof', dpop: 'dpop: poll with proof' } as const;

/** What each sign-in flood run got from the server, by target: printed under the table. */
const floodNotes: string[] = [];

/**
 * `sign_in_flood`: code_exchange alone; code_exchange while wrong-password posts
 * arrive at /login from `--flood-addresses` addresses, each keeping `--flood-in-flight` in
 * flight; and while as many signed-in sessions post wrong current passwords to
 * /account/password (bench/flood.ts). Each flood runs for exactly the timed run; what it was
 * answered is noted.
 */
function prepareSignInFlood(settings: Settings, target: Target): Prepared[] {
  // Ten clients exchanging batches of 50: a flooded server that answers an exchange in
  // seconds (as measured once) still finishes a batch in a run's time.
  const exchange = { ...settings, connections: Math.min(settings.connections, 10), batch: Math.min(settings.batch, 50) };
  const alone = prepareCodeExchange(exchange, target, 'sign_in_flood: code_exchange alone');
  // The exchange's rate alone, measured run by run: how many codes a run under a flood needs at most.
  let aloneRate = 0;
  const quiet: Prepared = {
    ...alone,
    run: async (seconds) => {
      const sample = await alone.run!(seconds);
      aloneRate = Math.max(aloneRate, sample.requests / sample.seconds);
      return sample;
    },
  };
  // Codes for the runs under a flood are minted before the flood starts: minted during it,
  // each batch waited for the SQLite write lock the flooded server holds for its events.
  const stock: MintedCode[] = [];
  const flooded = prepareCodeExchange(exchange, target, 'sign_in_flood: code_exchange alone', stock);
  const during = (scenario: string, what: string, begin: () => Promise<Flood>): Prepared => ({
    scenario,
    target,
    run: async (seconds) => {
      const needed = Math.min(100 * exchange.batch, Math.ceil((aloneRate * seconds * 1.2) / exchange.batch + 1) * exchange.batch);
      if (stock.length < needed) stock.push(...(await target.mintCodes(needed - stock.length)));
      const flood = await begin();
      const started = performance.now();
      const sample = await flooded.run!(seconds);
      const elapsed = (performance.now() - started) / 1000;
      note(`  ${target.label}: ${seconds} s of exchanges took ${elapsed.toFixed(1)} s under the ${what}; waiting for the posts in flight`);
      const counts: FloodCounts = await flood.stop();
      // Warm-up runs are not noted.
      if (seconds === settings.duration)
        floodNotes.push(
          `${target.label}, ${what}: ${settings.flood.addresses} addresses x ${settings.flood.perAddress} in flight, ${elapsed.toFixed(1)} s: ` +
            `${(counts.checked / elapsed).toFixed(1)} passwords checked/s, ${(counts.refused / elapsed).toFixed(1)} refused/s (429), ${counts.other} other`,
        );
      return sample;
    },
  });
  return [
    quiet,
    during('sign_in_flood: code_exchange during the flood', '/login flood', () => startFlood(target.origin, settings.flood)),
    // A signed-in session's wrong current passwords at /account/password.
    during('sign_in_flood: code_exchange during the /account/password flood', '/account/password flood', () =>
      startAccountFlood(target.origin, settings.flood, FLOOD_OWNER),
    ),
  ];
}

/** The push streams of events_flood, each sent every change as a SET. */
const EVENT_STREAMS = 5;
const EVENTS_ROWS = {
  alone: 'events_flood: client_credentials alone',
  changes: 'events_flood: client_credentials during the changes, streams off',
  delivered: `events_flood: client_credentials during the changes, ${EVENT_STREAMS} push streams`,
} as const;

/**
 * `events_flood`: client_credentials tokens alone; while an admin client disables
 * and enables people as fast as `--flood-in-flight` requests in flight allow, with the Shared Signals
 * streams disabled (the changes' own cost); and the same with EVENT_STREAMS push streams
 * enabled, each change then signed and pushed once per stream from the outbox
 * (bench/events.ts). The outbox's cost to token responses is the last two rows' difference.
 */
function prepareEventsFlood(settings: Settings, target: Target, seed: EventFloodSeed, receiver: EventReceiver): Prepared[] {
  const plan = tokenPlan(target, target.tokenPath, 'same', [`grant_type=client_credentials&scope=${BENCH_API.scope}`], ['"access_token"']);
  const alone = sameRequest(settings, target, EVENTS_ROWS.alone, plan);
  const during = (scenario: string, streams: boolean): Prepared => ({
    scenario,
    target,
    run: async (seconds) => {
      await seed.setStreams(streams);
      const before = receiver.received;
      const flood = await startEventFlood(target.origin, seed.adminAuthorization, settings.flood.perAddress);
      const started = performance.now();
      const sample = await alone.run!(seconds);
      const counts = await flood.stop();
      const elapsed = (performance.now() - started) / 1000;
      await seed.setStreams(false);
      if (seconds === settings.duration)
        floodNotes.push(
          `${target.label}, ${scenario.replace('events_flood: client_credentials ', '')}: ${settings.flood.perAddress} changes in flight, ` +
            `${(counts.changed / elapsed).toFixed(1)} changes/s, ${((receiver.received - before) / elapsed).toFixed(1)} SETs pushed/s, ${counts.other} other`,
        );
      return sample;
    },
  });
  return [alone, during(EVENTS_ROWS.changes, false), during(EVENTS_ROWS.delivered, true)];
}

/**
 * Requests that can each be made once: a batch of bodies made (untimed) by `bodies`, then
 * sent (timed), batch after batch until the run's time is used.
 */
function onceEach(settings: Settings, target: Target, scenario: string, bodies: () => Promise<string[]>, ok: readonly string[]): Prepared {
  const run = async (seconds: number): Promise<Sample> => {
    const batches: Sample[] = [];
    let elapsed = 0;
    do {
      const batch = await bodies();
      const sample = await load({
        url: target.origins,
        connections: Math.min(settings.connections, batch.length),
        amount: batch.length,
        requests: tokenPlan(target, target.tokenPath, 'once', batch, ok),
        threads: settings.loadThreads,
        serverPid: target.pids,
        database: target.database,
      });
      batches.push(sample);
      elapsed += sample.seconds;
    } while (elapsed < seconds);
    return combine(batches);
  };
  return { scenario, target, run };
}

/**
 * Codes minted in batches (untimed), each exchanged once (timed) until the run's time is
 * used; taken from `stock` first, where codes were minted ahead.
 */
function prepareCodeExchange(settings: Settings, target: Target, scenario = 'code_exchange', stock: MintedCode[] = []): Prepared {
  const bodies = async () =>
    (stock.length >= settings.batch ? stock.splice(0, settings.batch) : await target.mintCodes(settings.batch)).map(
      ({ code, verifier }) =>
        `grant_type=authorization_code&code=${encodeURIComponent(code)}&redirect_uri=${encodeURIComponent(target.redirectUri)}&code_verifier=${verifier}`,
    );
  return onceEach(settings, target, scenario, bodies, ['"id_token"']);
}

/**
 * `refresh`: refresh tokens minted in batches (untimed), each refreshed once (timed) until the
 * run's time is used. A refresh rotates its token (Tessera always, the peer as configured for
 * the bench) and signs an access token and an RS256 ID token (openid is in the scope).
 */
function prepareRefresh(settings: Settings, target: Target): Prepared {
  const bodies = async () =>
    (await target.mintRefreshTokens(settings.batch)).map((token) => `grant_type=refresh_token&refresh_token=${encodeURIComponent(token)}`);
  return onceEach(settings, target, 'refresh', bodies, ['"refresh_token"', '"id_token"']);
}

/** Tessera on SQLite with 1,000 and with `--scale` outstanding device codes, the same pool polled in each. */
async function scaleTargets(settings: Settings, options: StartOptions, targets: Target[]): Promise<Prepared[]> {
  const prepared: Prepared[] = [];
  for (const outstanding of [1000, settings.scale]) {
    const scenario = `device_poll ${outstanding.toLocaleString('en')} codes`;
    let codes: string[] = [];
    const started = Date.now();
    const target = await startTessera({
      ...options,
      postgres: null,
      seedSqlite: (path, clientId) => {
        codes = seedDeviceCodes(path, clientId, outstanding, Math.min(1000, outstanding), settings.deviceInterval);
      },
    });
    targets.push(target);
    note(`  ${scenario}: seeded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    prepared.push(target.supportsDevicePolling ? preparePoll(settings, target, scenario, codes) : { scenario, target, skipped: 'no device flow' });
  }
  return prepared;
}

/** How busy the machine is, in cores, over `seconds` before the bench starts. */
async function otherLoadBefore(seconds: number): Promise<number> {
  const before = machineBusySeconds();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return (machineBusySeconds() - before) / seconds;
}

function note(line: string): void {
  process.stderr.write(`${line}\n`);
}

const format = {
  int: (value: number | undefined) => (value === undefined || Number.isNaN(value) ? 'n/a' : Math.round(value).toLocaleString('en')),
  ms: (value: number | undefined) => (value === undefined || Number.isNaN(value) ? 'n/a' : value < 10 ? value.toFixed(2) : value.toFixed(1)),
  ratio: (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}x` : 'n/a'),
};

// Peak RSS is VmHWM in kB over 1,024: MiB.
/**
 * At this share of one core the load generator (autocannon, one thread, beside its own
 * per-request work) is the bottleneck rather than the server: its event loop has no idle
 * left to send the next request the moment an answer arrives.
 */
const DRIVER_BOUND_PERCENT = 90;

/** A heading and a line a row whose load generator was busy enough to set the pace; none when no row was. */
function generatorBound(rows: readonly Row[]): string[] {
  const bounded = rows.filter((row) => (row.driverPercent ?? 0) >= DRIVER_BOUND_PERCENT * (row.loadThreads ?? 1));
  if (bounded.length === 0) return [];
  return [
    `the load generator's threads were ${DRIVER_BOUND_PERCENT}% busy or more: the server may have had room for more (the rate is a floor, not its ceiling; try --load-threads):`,
    ...bounded.map((row) => `${row.scenario} / ${row.target}: ${Math.round(row.driverPercent!)}% over ${row.loadThreads ?? 1} thread(s)`),
  ];
}

const COLUMNS = [
  'scenario',
  'server',
  'req/s',
  'p50 ms',
  'p99 ms',
  'errors',
  'unexpected',
  'slow_down',
  'server CPU %',
  'CPU ms/req',
  'database CPU ms/req',
  'load gen CPU %',
  'peak RSS MiB',
];

function cells(row: Row): string[] {
  if (row.skipped) return [row.scenario, row.target, `(${row.skipped})`, '', '', '', '', '', '', '', '', '', ''];
  return [
    row.scenario,
    row.target,
    format.int(row.rps),
    format.ms(row.p50),
    format.ms(row.p99),
    String(row.errors),
    String(row.unexpected),
    String(row.slowDown),
    format.int(row.cpuPercent),
    // CPU per request is steadier than req/s when other work shares the machine.
    cpuPerRequest(row),
    // PostgreSQL's backends work for the server on the same machine: their CPU per request
    // is the rest of what a request on PostgreSQL costs.
    row.databaseCpuPercent === undefined || Number.isNaN(row.databaseCpuPercent) ? '' : ((row.databaseCpuPercent * 10) / row.rps!).toFixed(3),
    format.int(row.driverPercent),
    format.int(row.peakRssMb),
  ];
}

function textTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n');
}

function markdownTable(header: string[], rows: string[][]): string {
  const line = (row: string[]) => `| ${row.join(' | ')} |`;
  return [line(header), line(header.map((_, i) => (i < 2 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

/** The goals: Tessera (SQLite) req/s over oidc-provider's. */
const REQUEST_RATE_GOALS: Record<string, number> = { device_poll: 2, code_exchange: 1.3, device_authorization: 1.3 };

/**
 * What an RS256 signature allows on this machine: 2,048-bit signatures a second on one core
 * (node:crypto, synchronous, for a second of CPU; a fifth with --quick), times the cores. Every code exchange signs
 * one RS256 ID token, so no server exchanges codes faster than this; the goal is half.
 * Measured before any server starts, when only other work shares the machine.
 */
function rs256Floor(cpuSeconds: number): { perCore: number; cores: number; floor: number } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const data = Buffer.from('x'.repeat(600));
  const started = process.cpuUsage();
  let signatures = 0;
  let used = 0;
  // CPU time, not wall time: other work on the machine takes the core away, not the signing cost.
  while (used < cpuSeconds) {
    for (let i = 0; i < 20; i += 1) sign('sha256', data, privateKey);
    signatures += 20;
    const now = process.cpuUsage(started);
    used = (now.user + now.system) / 1e6;
  }
  const perCore = signatures / used;
  const cores = cpus().length;
  return { perCore, cores, floor: perCore * cores };
}

/** The commit the figures come from (`-dirty` when the work tree has changes). */
function commitOf(root: string): string {
  const head = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' });
  if (head.status !== 0) return 'unknown';
  const status = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8' });
  return `${head.stdout.trim()}${status.stdout.trim() === '' ? '' : '-dirty'}`;
}

/**
 * The rows of docs/benchmarks.md's "Latest figures" table, as the run measured them: one per
 * scenario and Tessera server, with oidc-provider's rate and the ratio where it ran too, the
 * goal, and the commit and date the figures came from.
 */
function docsTable(rows: readonly Row[], floor: { floor: number } | null, commit: string, date: string): { header: string[]; rows: string[][] } {
  const header = ['scenario', 'server', 'req/s', 'p99 ms', 'CPU ms/req', 'peak RSS MiB', 'oidc-provider req/s', 'ratio', 'goal', 'commit', 'date'];
  const out: string[][] = [];
  for (const row of rows) {
    if (row.skipped || !row.target.startsWith('tessera')) continue;
    const theirs = rows.find((other) => other.scenario === row.scenario && other.target === 'oidc-provider' && !other.skipped);
    const goals: string[] = [];
    if (REQUEST_RATE_GOALS[row.scenario] !== undefined && row.target === 'tessera/sqlite') goals.push(`>= ${REQUEST_RATE_GOALS[row.scenario]}x`);
    if (row.scenario === 'code_exchange' && row.target === 'tessera/sqlite' && floor)
      goals.push(`>= 50% of RS256 floor (${((100 * row.rps!) / floor.floor).toFixed(0)}%)`);
    if (!row.target.includes(' x2')) goals.push('RSS < 150');
    out.push([
      row.scenario,
      row.target,
      format.int(row.rps),
      format.ms(row.p99),
      cpuPerRequest(row),
      format.int(row.peakRssMb),
      theirs ? format.int(theirs.rps) : '',
      theirs ? format.ratio(row.rps! / theirs.rps!) : '',
      goals.join(', '),
      commit,
      date,
    ]);
  }
  return { header, rows: out };
}

function cpuPerRequest(row: Row): string {
  return row.cpuPercent === undefined || Number.isNaN(row.cpuPercent) ? 'n/a' : ((row.cpuPercent * 10) / row.rps!).toFixed(3);
}

/** Tessera (SQLite) over oidc-provider for each scenario both ran, against the issue's goals. */
function comparison(rows: readonly Row[]): { header: string[]; rows: string[][]; verdicts: string[] } {
  const goals: Record<string, number> = REQUEST_RATE_GOALS;
  const header = ['scenario', 'figure', 'tessera/sqlite', 'oidc-provider', 'ratio', 'goal', 'met'];
  const out: string[][] = [];
  const verdicts: string[] = [];
  for (const scenario of ['device_authorization', 'device_poll', 'code_exchange']) {
    const ours = rows.find((row) => row.scenario === scenario && row.target === 'tessera/sqlite' && !row.skipped);
    const theirs = rows.find((row) => row.scenario === scenario && row.target === 'oidc-provider' && !row.skipped);
    if (!ours || !theirs) continue;
    const rps = ours.rps! / theirs.rps!;
    const p99 = ours.p99! / theirs.p99!;
    const rss = ours.peakRssMb!;
    const checks: [string, string, string, string, string, boolean][] = [
      ['req/s', format.int(ours.rps), format.int(theirs.rps), format.ratio(rps), `>= ${goals[scenario]}x`, rps >= goals[scenario]!],
      ['p99 ms', format.ms(ours.p99), format.ms(theirs.p99), format.ratio(p99), '<= 0.5x', p99 <= 0.5],
      ['peak RSS MiB', format.int(rss), format.int(theirs.peakRssMb), format.ratio(rss / theirs.peakRssMb!), '< 150 MiB', rss < 150],
    ];
    for (const [figure, a, b, ratio, goal, met] of checks) {
      out.push([scenario, figure, a, b, ratio, goal, met ? 'yes' : 'NO']);
      if (!met) verdicts.push(`${scenario} ${figure}: ${ratio} (goal ${goal})`);
    }
  }
  return { header, rows: out, verdicts };
}

/** The proof check's cost: each DPoP row over the Bearer row of the same server. */
function dpopCheck(rows: readonly Row[]): string[] {
  const lines: string[] = [];
  for (const dpop of rows.filter((row) => row.scenario === DPOP_ROWS.dpop && !row.skipped)) {
    const bearer = rows.find((row) => row.scenario === DPOP_ROWS.bearer && row.target === dpop.target && !row.skipped);
    if (!bearer) continue;
    const cpuPerRequest = (row: Row) => (row.cpuPercent! * 10) / row.rps!;
    const extra = cpuPerRequest(dpop) - cpuPerRequest(bearer);
    lines.push(
      `DPoP proof check on ${dpop.target}: server CPU per poll ${format.ratio(cpuPerRequest(dpop) / cpuPerRequest(bearer))} (+${extra.toFixed(3)} ms), ` +
        `req/s ${format.ratio(dpop.rps! / bearer.rps!)}, p50 ${format.ratio(dpop.p50! / bearer.p50!)}, p99 ${format.ratio(dpop.p99! / bearer.p99!)} (with over without)`,
    );
  }
  return lines;
}

/** `<out>/scale-<scenario>.svg` for each scenario measured at several worker or instance counts; the files written. */
function writeScaleCharts(out: string, rows: readonly Row[], caption: string): string[] {
  const written: string[] = [];
  for (const scenario of new Set(rows.map((row) => row.scenario))) {
    const points = rows
      .filter((row) => row.scenario === scenario && !row.skipped && row.rps !== undefined && row.p99 !== undefined)
      .map((row) => scalePointOf(row.target, row.rps!, row.p99!));
    const svg = scaleChart(scenario, caption, points);
    if (svg === null) continue;
    const path = join(out, `scale-${scenario.replace(/[^a-z0-9_]+/gi, '-')}.svg`);
    writeFileSync(path, svg);
    written.push(path);
  }
  return written;
}

function scaleCheck(rows: readonly Row[]): string | null {
  const scale = rows.filter((row) => row.scenario.startsWith('device_poll ') && !row.skipped);
  if (scale.length !== 2) return null;
  const [small, large] = scale as [Row, Row];
  const p50 = large.p50! / small.p50!;
  const p99 = large.p99! / small.p99!;
  const met = Math.max(p50, p99) <= 1.5;
  return `${large.scenario} over ${small.scenario}: p50 ${format.ratio(p50)}, p99 ${format.ratio(p99)}, req/s ${format.ratio(large.rps! / small.rps!)} (goal: latency within 1.5x) ${met ? 'met' : 'NOT MET'}`;
}

async function machine(settings: Settings, postgresVersion: string | null): Promise<Record<string, string>> {
  const db = new DatabaseSync(':memory:');
  const sqlite = (db.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v;
  db.close();
  const peerPackage = join(ROOT, 'bench/node_modules/oidc-provider/package.json');
  const autocannonPackage = join(ROOT, 'node_modules/autocannon/package.json');
  const version = (path: string) => (existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version : 'not installed');
  return {
    cpu: `${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown'}`,
    memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
    kernel: `Linux ${release()}`,
    node: process.version,
    sqlite,
    postgres: postgresVersion ?? 'not used',
    'oidc-provider': settings.compare ? version(peerPackage) : 'not run',
    autocannon: version(autocannonPackage),
    // Read back from Linux, not taken from --server-cpus: what the processes really had.
    'cpus allowed': `servers ${serverCpuLists().join(' / ') || 'n/a'}; load generator ${allowedCpus('self') ?? 'n/a'}`,
    settings: `${settings.connections} connections, ${settings.loadThreads} load-generator thread${settings.loadThreads === 1 ? '' : 's'}, ${settings.warmup} s warm-up, ${settings.runs} x ${settings.duration} s runs (medians), Tessera workers: ${settings.workers.join(', ')}${settings.instances.length > 0 ? `, PostgreSQL instances: ${settings.instances.join(', ')}` : ''}, device poll interval: ${settings.deviceInterval} s`,
  };
}

async function postgresVersion(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    const result = await client.query<{ server_version: string }>('SHOW server_version');
    return result.rows[0]?.server_version ?? 'unknown';
  } catch {
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}

function ensurePeerInstalled(): void {
  if (existsSync(join(ROOT, 'bench/node_modules/oidc-provider/package.json'))) return;
  note('--- installing oidc-provider under bench/ (npm install --prefix bench)');
  const result = spawnSync('npm', ['install', '--prefix', 'bench', '--no-audit', '--no-fund'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm install --prefix bench failed');
}

async function main(): Promise<void> {
  const settings = settingsFrom(process.argv.slice(2));
  if (settings.compare) ensurePeerInstalled();
  const results = settings.out;
  const logDir = join(results, 'logs');
  mkdirSync(logDir, { recursive: true });
  const cpuProfileDir = settings.cpuProf ? join(results, 'profiles') : null;
  if (cpuProfileDir) mkdirSync(cpuProfileDir, { recursive: true });
  const options: StartOptions = {
    workers: settings.workers[0]!,
    deviceInterval: settings.deviceInterval,
    cpuProfileDir,
    logDir,
    serverCpus: settings.serverCpus,
    batch: settings.batch,
  };
  const pgVersion = settings.postgres ? await postgresVersion(settings.postgres) : null;
  if (settings.postgres && !pgVersion) note(`PostgreSQL does not answer at ${settings.postgres}: running on SQLite only`);

  const kinds: TargetKind[] = [
    'tessera/sqlite',
    ...(settings.against ? (['tessera/sqlite@against'] as const) : []),
    ...(pgVersion ? (['tessera/postgres'] as const) : []),
    ...(pgVersion && settings.against ? (['tessera/postgres@against'] as const) : []),
    ...(settings.compare ? (['oidc-provider'] as const) : []),
  ];
  let env: Record<string, string> = {};
  let floodOwner = false;
  /** The Tessera targets of one kind: one per worker count, or on PostgreSQL one per instance count when --instances is given. */
  const variants = (kind: TargetKind): { workers: number; instances: number; labelSuffix?: string }[] => {
    if (kind === 'oidc-provider') return [{ workers: 1, instances: 1 }];
    if (kind.startsWith('tessera/postgres') && settings.instances.length > 0) {
      return settings.instances.map((instances) => ({ workers: 1, instances, labelSuffix: ` x${instances} instances` }));
    }
    // With several worker counts (--workers 1,2,4), each is a target of its own, labelled by its count.
    return settings.workers.map((workers) => ({ workers, instances: 1, ...(settings.workers.length > 1 ? { labelSuffix: ` x${workers}` } : {}) }));
  };
  const start = async (kind: TargetKind, variant: ReturnType<typeof variants>[number]): Promise<Target> => {
    if (kind === 'oidc-provider') return startPeer(options);
    const each = { ...options, ...variant };
    if (kind === 'tessera/postgres' || kind === 'tessera/postgres@against') {
      const database = await createPostgresDatabase(settings.postgres!);
      if (!database) throw new Error('PostgreSQL stopped answering');
      return startTessera({ ...each, postgres: database, ...(kind === 'tessera/postgres@against' ? { against: settings.against! } : {}) });
    }
    if (kind === 'tessera/sqlite@against') return startTessera({ ...each, postgres: null, against: settings.against!, env, floodOwner });
    return startTessera({ ...each, postgres: null, env, floodOwner });
  };

  const rows: Row[] = [];
  const began = Date.now();
  const idleBusy = await otherLoadBefore(settings.quick ? 0.2 : 1);
  if (idleBusy > 0.1) note(`the machine was ${Math.round(idleBusy * 100)}% busy (of one core) before the run: other work skews the figures`);
  const floor = settings.scenarios.includes('code_exchange') ? rs256Floor(settings.quick ? 0.2 : 1) : null;
  const commit = commitOf(ROOT);
  for (const scenario of settings.scenarios) {
    const who =
      scenario === 'device_poll_scale'
        ? `tessera/sqlite, 1,000 and ${settings.scale.toLocaleString('en')} outstanding codes`
        : scenario === 'scale_out'
          ? `${pgVersion ? 'tessera/postgres x2 instances, ' : ''}tessera/sqlite x2 workers`
          : kinds.join(', ');
    note(`${scenario}: ${who}`);
    const targets: Target[] = [];
    try {
      let prepared: Prepared[];
      if (scenario === 'device_poll_scale') prepared = await scaleTargets(settings, options, targets);
      else if (scenario === 'scale_out') prepared = await scaleOutTargets(settings, options, targets, pgVersion !== null);
      else {
        prepared = [];
        // The flood's addresses arrive as X-Forwarded-For from the loopback driver.
        env = scenario === 'sign_in_flood' ? { TESSERA_TRUST_PROXY: 'loopback' } : {};
        floodOwner = scenario === 'sign_in_flood';
        for (const kind of kinds) {
          if (scenario === 'events_flood' && kind !== 'tessera/sqlite' && kind !== 'tessera/sqlite@against') {
            prepared.push({ scenario, target: { label: kind } as Target, skipped: 'Tessera on SQLite only' });
            continue;
          }
          if (scenario === 'events_flood') {
            const receiver = await startEventReceiver();
            let seed: EventFloodSeed | undefined;
            const target = await startTessera({
              ...options,
              workers: 1,
              postgres: null,
              ...(kind === 'tessera/sqlite@against' ? { against: settings.against! } : {}),
              env: { TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true' },
              seedStore: async (store) => void (seed = await seedEventFlood(store, receiver.url, EVENT_STREAMS, settings.flood.perAddress)),
            });
            targets.push({
              ...target,
              close: async () => {
                await target.close();
                await receiver.close();
              },
            });
            prepared.push(...prepareEventsFlood(settings, target, seed!, receiver));
            continue;
          }
          if (scenario === 'sign_in_flood' && (kind === 'oidc-provider' || kind.startsWith('tessera/postgres'))) {
            prepared.push({ scenario, target: { label: kind } as Target, skipped: 'Tessera on SQLite only' });
            continue;
          }
          // oidc-provider's DPoP is not enabled in its bench setup: the dpop scenario is Tessera's own.
          if (scenario === 'dpop' && kind === 'oidc-provider') continue;
          for (const variant of variants(kind)) {
            const target = await start(kind, variant);
            targets.push(target);
            if (scenario === 'dpop') {
              prepared.push(...(await prepareDpop(settings, target)));
              continue;
            }
            if (scenario === 'sign_in_flood') {
              prepared.push(...prepareSignInFlood(settings, target));
              continue;
            }
            prepared.push(
              scenario === 'device_authorization'
                ? prepareDeviceAuthorization(settings, target)
                : scenario === 'device_poll'
                  ? await prepareDevicePoll(settings, target)
                  : scenario === 'client_credentials'
                    ? prepareClientCredentials(settings, target)
                    : scenario === 'refresh'
                      ? prepareRefresh(settings, target)
                      : prepareCodeExchange(settings, target),
            );
          }
        }
      }
      if (scenario === 'device_poll' && settings.baseline) {
        let codes: string[] = [];
        const target = await startTessera({
          ...options,
          postgres: null,
          baseline: true,
          seedSqlite: (path, clientId) => {
            codes = seedDeviceCodes(path, clientId, settings.pool, settings.pool, settings.deviceInterval);
          },
        });
        targets.push(target);
        prepared.push(preparePoll(settings, target, 'device_poll', codes));
      }
      rows.push(...(await measure(settings, prepared)));
    } finally {
      for (const target of targets) await target.close();
    }
  }

  const info = await machine(settings, pgVersion);
  info['commit'] = commit;
  if (floor) {
    const exchange = rows.find((row) => row.scenario === 'code_exchange' && row.target === 'tessera/sqlite' && !row.skipped);
    info['rs256 floor'] =
      `${format.int(floor.perCore)} signatures/s a core x ${floor.cores} cores = ${format.int(floor.floor)}/s` +
      (exchange ? `; code_exchange (tessera/sqlite) at ${((100 * exchange.rps!) / floor.floor).toFixed(0)}% of it (goal: 50%)` : '');
  }
  const date = new Date().toISOString().slice(0, 10);
  const docs = docsTable(rows, floor, commit, date);
  const table = rows.map(cells);
  const compared = comparison(rows);
  const scale = scaleCheck(rows);
  const dpop = dpopCheck(rows);
  const lines = [`Tessera benchmark, ${new Date().toISOString()} (${Math.round((Date.now() - began) / 1000)} s)`, ''];
  for (const [name, value] of Object.entries(info)) lines.push(`${name.padEnd(14)} ${value}`);
  lines.push('', textTable(COLUMNS, table));
  if (compared.rows.length > 0) lines.push('', 'Tessera (SQLite) over oidc-provider:', '', textTable(compared.header, compared.rows));
  if (docs.rows.length > 0) lines.push('', 'For docs/benchmarks.md, "Latest figures":', '', markdownTable(docs.header, docs.rows));
  if (scale) lines.push('', scale);
  if (dpop.length > 0) lines.push('', ...dpop);
  if (floodNotes.length > 0) lines.push('', 'floods, per timed run:', ...floodNotes.map((note) => `  ${note}`));
  const disturbed = rows.filter((row) => (row.otherPercent ?? 0) > 15);
  if (disturbed.length > 0) {
    lines.push('', 'other work on the machine during the runs (CPU % of one core, neither server nor load generator):');
    for (const row of disturbed) lines.push(`  ${row.scenario} / ${row.target}: ${Math.round(row.otherPercent!)}%`);
  }
  const bounded = generatorBound(rows);
  if (bounded.length > 0) lines.push('', bounded[0]!, ...bounded.slice(1).map((line) => `  ${line}`));
  for (const row of rows) {
    if (row.examples && row.examples.length > 0)
      lines.push('', `unexpected answers in ${row.scenario} / ${row.target}:`, ...row.examples.map((example) => `  ${example}`));
  }
  process.stdout.write(`${lines.join('\n')}\n`);

  const markdown = [
    `Run on ${new Date().toISOString().slice(0, 10)}:`,
    '',
    ...Object.entries(info).map(([name, value]) => `- ${name}: ${value}`),
    '',
    markdownTable(COLUMNS, table),
    ...(compared.rows.length > 0 ? ['', 'Tessera (SQLite) over oidc-provider:', '', markdownTable(compared.header, compared.rows)] : []),
    ...(docs.rows.length > 0 ? ['', 'For docs/benchmarks.md, "Latest figures":', '', markdownTable(docs.header, docs.rows)] : []),
    ...(scale ? ['', scale] : []),
    ...(dpop.length > 0 ? ['', ...dpop] : []),
    ...(bounded.length > 0 ? ['', bounded[0]!, '', ...bounded.slice(1).map((line) => `- ${line}`)] : []),
    ...(floodNotes.length > 0 ? ['', 'Sign-in flood, per timed run:', '', ...floodNotes.map((note) => `- ${note}`)] : []),
    '',
  ].join('\n');
  writeFileSync(join(results, 'latest.md'), markdown);
  const charts = writeScaleCharts(results, rows, `${info['cpu']}, ${commit}, ${date}; medians of ${settings.runs} x ${settings.duration} s`);
  if (charts.length > 0) note(`charts: ${charts.join(', ')}`);
  writeFileSync(
    join(results, 'latest.json'),
    `${JSON.stringify({ machine: info, rows, comparison: compared.rows, latest: docs.rows, scale, dpop }, null, 2)}\n`,
  );
  note(`\nwritten: ${join(results, 'latest.md')}, latest.json${cpuProfileDir ? ', profiles/' : ''}`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

/**
 * One timed load with autocannon (programmatic API), measured the same way for every server:
 * the latency of every response (autocannon's own histogram keeps 2xx responses only, and a
 * poll's expected answer is a 400), each response classified against what the scenario
 * expects, and the server's CPU over the same window.
 *
 * autocannon runs on one thread, which sends about 7,000 code exchanges a second on a 2-core
 * AMD EPYC: less than several Tessera workers answer on a 16-core machine. With `threads` above
 * one, a load described by a `Plan` (data, not closures, so it can cross to another thread) is
 * split over that many worker threads of this process, each running its own autocannon with
 * its share of the connections and of the requests (bench/load-thread.ts).
 */
import autocannon, { type Request } from 'autocannon';
import { Worker } from 'node:worker_threads';
import { cpuSeconds, cpuTicks, databaseCpuBetween, databaseProcesses, machineBusySeconds, procAvailable, processTree } from './proc.ts';
/** What a response was, for the scenario that sent it. */
export type Verdict = 'ok' | 'slow_down' | 'unexpected';

/**
 * Requests as data: POSTs to one path with fixed headers, and what a right answer holds.
 * `same`: the first body every time. `once`: each body once, in order; the load's `amount` is
 * their count. `queue`: bodies taken in turn and put back at the queue's end once answered, so
 * none is ever in flight twice (a device polls its own code only after the last answer).
 */
export interface Plan {
  readonly mode: 'same' | 'once' | 'queue';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly bodies: readonly string[];
  /** An answer is `ok` with this status and every one of these strings in its body. */
  readonly okStatus: number;
  readonly ok: readonly string[];
  /** An answer with this status and string is `slow_down` (RFC 8628 §3.5); otherwise `unexpected`. */
  readonly slowDown?: { readonly status: number; readonly includes: string };
}

/** Requests built by closures (a fresh DPoP proof each, say): run on this thread only. */
export interface Custom {
  readonly mode: 'custom';
  /**
   * Builds the next request (method, path, headers, body). `context` belongs to the
   * connection, which has one request in flight at a time: what is put there comes back to
   * `answered` with that request's answer.
   */
  readonly next: (context: Record<string, unknown>) => Request;
  readonly answered?: (context: Record<string, unknown>) => void;
  readonly classify: (status: number, body: string) => Verdict;
}

export interface LoadSpec {
  /** The server's origin; several spread the connections over them in turn (scale_out). */
  readonly url: string | readonly string[];
  readonly connections: number;
  /** Seconds; or `amount` requests in all. */
  readonly duration?: number;
  readonly amount?: number;
  /** Requests per second over all connections, to pace polling; none when absent. */
  readonly overallRate?: number;
  readonly requests: Plan | Custom;
  /** Load-generator threads for a `Plan` (`--load-threads`); a `Custom` load always runs on one. */
  readonly threads?: number;
  /** The server processes whose trees are measured. */
  readonly serverPid: number | readonly number[];
  /** The PostgreSQL database the servers use, whose backends' CPU is measured apart. */
  readonly database?: string | null;
}

export interface Sample {
  readonly requests: number;
  readonly seconds: number;
  /** Milliseconds, one per response. */
  readonly latencies: number[];
  readonly ok: number;
  readonly slowDown: number;
  readonly unexpected: number;
  /** Connection errors and timeouts. */
  readonly errors: number;
  /** Server CPU seconds in the window, or NaN where /proc is missing. */
  readonly cpuSeconds: number;
  /**
   * CPU seconds of PostgreSQL's processes for the servers' database in the window, or NaN
   * where there is none or they are not on this machine.
   */
  readonly databaseCpuSeconds: number;
  /**
   * CPU seconds the rest of the machine used in the window: neither the server nor this
   * load generator. Other work on a shared machine shows here, and skews the figures.
   */
  readonly otherCpuSeconds: number;
  /**
   * CPU seconds of this process, the load generator, in the window, all its threads. One
   * autocannon thread near one CPU second a second set the pace, not the server.
   */
  readonly driverCpuSeconds: number;
  /** The generator's threads in this sample. */
  readonly threads: number;
  /** The first few unexpected answers, to say what went wrong. */
  readonly examples: string[];
}

/** What one autocannon run (on this thread or another) hands back. */
export interface PartResult {
  readonly latencies: number[];
  readonly ok: number;
  readonly slowDown: number;
  readonly unexpected: number;
  readonly errors: number;
  readonly examples: string[];
}

/** One autocannon run: a thread's share of a load, or the whole of it. */
export interface Part {
  readonly url: string | readonly string[];
  readonly connections: number;
  readonly duration?: number;
  readonly amount?: number;
  readonly overallRate?: number;
}

/** The closures autocannon calls for a `Plan`: the same on this thread and in bench/load-thread.ts. */
export function fromPlan(plan: Plan): Custom {
  const request = (body: string): Request => ({ method: 'POST', path: plan.path, headers: { ...plan.headers }, body });
  const classify = (status: number, body: string): Verdict =>
    status === plan.okStatus && plan.ok.every((text) => body.includes(text))
      ? 'ok'
      : plan.slowDown && status === plan.slowDown.status && body.includes(plan.slowDown.includes)
        ? 'slow_down'
        : 'unexpected';
  if (plan.mode === 'same') {
    const same = request(plan.bodies[0]!);
    return { mode: 'custom', next: () => same, classify };
  }
  if (plan.mode === 'once') {
    let next = 0;
    return { mode: 'custom', next: () => request(plan.bodies[next++ % plan.bodies.length]!), classify };
  }
  const idle = [...plan.bodies];
  return {
    mode: 'custom',
    next: (context) => {
      const body = idle.shift()!;
      context['body'] = body;
      return request(body);
    },
    answered: (context) => {
      if (typeof context['body'] === 'string') idle.push(context['body']);
      context['body'] = undefined;
    },
    classify,
  };
}

/**
 * Runs autocannon for one part of a load; `onDone` is called the moment an `amount` run has
 * its last answer, before autocannon winds down, so the caller can read the CPU then.
 */
export async function runPart(part: Part, requests: Custom, onDone?: () => void): Promise<PartResult> {
  const latencies: number[] = [];
  let ok = 0;
  let slowDown = 0;
  let unexpected = 0;
  const examples: string[] = [];
  const request: Request = {
    setupRequest: (base, context) => ({ ...base, ...requests.next(context) }),
    onResponse: (status, body, context) => {
      requests.answered?.(context);
      const verdict = requests.classify(status, body);
      if (verdict === 'ok') ok += 1;
      else if (verdict === 'slow_down') slowDown += 1;
      else {
        unexpected += 1;
        if (examples.length < 3) examples.push(`${status} ${body.slice(0, 200)}`);
      }
    },
  };
  const result = await new Promise<import('autocannon').Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: typeof part.url === 'string' ? part.url : [...part.url],
        connections: part.connections,
        timeout: 10,
        requests: [request],
        // autocannon ends a stopped run at its next sampling tick, once a second by default: a
        // batch of exchanges done in 0.1 s then kept the bench idle for 0.9 s (the server was
        // loaded a tenth of the time, and the sign_in_flood smoke test took a second a batch).
        ...(part.amount === undefined ? { duration: part.duration ?? 10 } : { amount: part.amount, sampleInt: 20 }),
        ...(part.overallRate === undefined ? {} : { overallRate: part.overallRate }),
      },
      (error, outcome) => (error ? reject(error) : resolve(outcome)),
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
      // autocannon notices that `amount` is reached only on its once-a-second tick: stop now,
      // and time the batch to its last response, or a 0.3 s batch would count as 1 s.
      if (part.amount !== undefined && latencies.length === part.amount) {
        onDone?.();
        instance.stop();
      }
    });
  });
  return { latencies, ok, slowDown, unexpected, errors: result.errors + result.timeouts, examples };
}

/** Worker threads running bench/load-thread.ts, started once and kept for the bench's life. */
const pool: Worker[] = [];
let nextMessage = 0;

function thread(index: number): Worker {
  while (pool.length <= index) {
    const worker = new Worker(new URL('./load-thread.ts', import.meta.url));
    // The bench ends with process.exit; idle threads must not keep it alive before that.
    worker.unref();
    pool.push(worker);
  }
  return pool[index]!;
}

function onThread(index: number, part: Part, plan: Plan): Promise<PartResult> {
  const worker = thread(index);
  const id = nextMessage++;
  return new Promise((resolve, reject) => {
    const onMessage = (message: { id: number; result?: PartResult; error?: string }) => {
      if (message.id !== id) return;
      worker.off('message', onMessage);
      worker.off('error', reject);
      if (message.result) resolve(message.result);
      else reject(new Error(`load thread ${index}: ${message.error}`));
    };
    worker.on('message', onMessage);
    worker.once('error', reject);
    worker.postMessage({ id, part, plan });
  });
}

/** `count` shares of `total` that differ by at most one. */
function shares(total: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => Math.floor(total / count) + (i < total % count ? 1 : 0));
}

/** A plan's part for each thread: its connections, and its own share of the bodies where each is used once or queued. */
function split(spec: LoadSpec, plan: Plan, threads: number): { part: Part; plan: Plan }[] {
  const connections = shares(spec.connections, threads);
  // `same`: every thread sends the one body. Otherwise each thread takes every threads-th
  // body, so that no body is sent by two threads, nor queued in two.
  const bodies = plan.mode === 'once' ? plan.bodies.slice(0, spec.amount ?? plan.bodies.length) : plan.bodies;
  const slices = connections.map((_, t) => (plan.mode === 'same' ? bodies : bodies.filter((_, i) => i % threads === t)));
  return connections.map((share, t) => ({
    part: {
      url: spec.url,
      connections: plan.mode === 'once' ? Math.min(share, slices[t]!.length) : share,
      ...(plan.mode === 'once'
        ? { amount: slices[t]!.length }
        : spec.amount === undefined
          ? { duration: spec.duration ?? 10 }
          : { amount: Math.ceil(spec.amount / threads) }),
      ...(spec.overallRate === undefined ? {} : { overallRate: Math.max(1, Math.floor(spec.overallRate / threads)) }),
    },
    plan: { ...plan, bodies: slices[t]! },
  }));
}

export async function load(spec: LoadSpec): Promise<Sample> {
  const threads = spec.requests.mode === 'custom' ? 1 : Math.max(1, Math.min(spec.threads ?? 1, spec.connections));
  const pids = procAvailable ? (typeof spec.serverPid === 'number' ? [spec.serverPid] : spec.serverPid).flatMap(processTree) : [];
  const cpuBefore = procAvailable ? cpuSeconds(pids) : NaN;
  const databaseTicks = () => (procAvailable && spec.database ? cpuTicks(databaseProcesses(spec.database)) : new Map<number, number>());
  const databaseBefore = databaseTicks();
  const machineBefore = machineBusySeconds();
  const driverBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  let ended: { at: bigint; server: number; database: Map<number, number>; machine: number; driver: NodeJS.CpuUsage } | undefined;
  const readings = () => ({
    at: process.hrtime.bigint(),
    server: procAvailable ? cpuSeconds(pids) : NaN,
    database: databaseTicks(),
    machine: machineBusySeconds(),
    driver: process.cpuUsage(driverBefore),
  });
  let parts: PartResult[];
  if (threads === 1) {
    const requests = spec.requests.mode === 'custom' ? spec.requests : fromPlan(spec.requests);
    const part: Part = {
      url: spec.url,
      connections: spec.connections,
      ...(spec.amount === undefined ? { duration: spec.duration ?? 10 } : { amount: spec.amount }),
      ...(spec.overallRate === undefined ? {} : { overallRate: spec.overallRate }),
    };
    parts = [await runPart(part, requests, () => (ended = readings()))];
  } else {
    // The window ends when the last thread hands back its answers: a few hundred microseconds
    // after its last response, which a batch of thousands of requests makes negligible.
    const plan = spec.requests as Plan;
    parts = await Promise.all(split(spec, plan, threads).map(({ part, plan: slice }, t) => onThread(t, part, slice)));
  }
  const { at, server: cpuAfter, database: databaseAfter, machine: machineAfter, driver } = ended ?? readings();
  const seconds = Number(at - started) / 1e9;
  const databaseCpu = databaseAfter.size === 0 ? NaN : databaseCpuBetween(databaseBefore, databaseAfter);
  const other = machineAfter - machineBefore - (cpuAfter - cpuBefore) - (Number.isNaN(databaseCpu) ? 0 : databaseCpu) - (driver.user + driver.system) / 1e6;
  return {
    requests: parts.reduce((sum, p) => sum + p.latencies.length, 0),
    seconds,
    latencies: parts.flatMap((p) => p.latencies),
    ok: parts.reduce((sum, p) => sum + p.ok, 0),
    slowDown: parts.reduce((sum, p) => sum + p.slowDown, 0),
    unexpected: parts.reduce((sum, p) => sum + p.unexpected, 0),
    errors: parts.reduce((sum, p) => sum + p.errors, 0),
    cpuSeconds: cpuAfter - cpuBefore,
    databaseCpuSeconds: databaseCpu,
    otherCpuSeconds: Math.max(0, other),
    driverCpuSeconds: (driver.user + driver.system) / 1e6,
    threads,
    examples: parts.flatMap((p) => p.examples).slice(0, 3),
  };
}

/** Several samples as one: a run of code exchanges is several timed batches. */
export function combine(samples: readonly Sample[]): Sample {
  return {
    requests: samples.reduce((sum, s) => sum + s.requests, 0),
    seconds: samples.reduce((sum, s) => sum + s.seconds, 0),
    latencies: samples.flatMap((s) => s.latencies),
    ok: samples.reduce((sum, s) => sum + s.ok, 0),
    slowDown: samples.reduce((sum, s) => sum + s.slowDown, 0),
    unexpected: samples.reduce((sum, s) => sum + s.unexpected, 0),
    errors: samples.reduce((sum, s) => sum + s.errors, 0),
    cpuSeconds: samples.reduce((sum, s) => sum + s.cpuSeconds, 0),
    databaseCpuSeconds: samples.reduce((sum, s) => sum + s.databaseCpuSeconds, 0),
    otherCpuSeconds: samples.reduce((sum, s) => sum + s.otherCpuSeconds, 0),
    driverCpuSeconds: samples.reduce((sum, s) => sum + s.driverCpuSeconds, 0),
    threads: Math.max(1, ...samples.map((s) => s.threads)),
    examples: samples.flatMap((s) => s.examples).slice(0, 3),
  };
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function median(values: readonly number[]): number {
  const finite = values.filter((value) => !Number.isNaN(value)).sort((a, b) => a - b);
  if (finite.length === 0) return NaN;
  const middle = Math.floor(finite.length / 2);
  return finite.length % 2 === 1 ? finite[middle]! : (finite[middle - 1]! + finite[middle]!) / 2;
}

/**
 * The order in which run number `run` (from 0) measures `entries`: grouped by `keyOf` (a
 * target), each group's entries in the order given (a flood's rows build on the one before),
 * the groups in their order on even runs and reversed on odd ones, so that no target is always
 * measured first. With a fixed order the target measured second was favoured: an events_flood
 * run with the same code on both sides of --against put it at 1.12x the first's rate; taking
 * turns, 1.00x, then 0.94x (docs/benchmarks.md, "The events flood's peak RSS").
 */
export function takingTurns<T, K>(entries: readonly T[], keyOf: (entry: T) => K, run: number): T[] {
  const groups = new Map<K, T[]>();
  for (const entry of entries) {
    const key = keyOf(entry);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [entry]);
    else group.push(entry);
  }
  const ordered = [...groups.values()];
  return (run % 2 === 0 ? ordered : ordered.toReversed()).flat();
}

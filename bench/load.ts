/**
 * One timed load with autocannon (programmatic API), measured the same way for every server:
 * the latency of every response (autocannon's own histogram keeps 2xx responses only, and a
 * poll's expected answer is a 400), each response classified against what the scenario
 * expects, and the server's CPU over the same window.
 */
import autocannon, { type Request } from 'autocannon';
import { cpuSeconds, cpuTicks, databaseCpuBetween, databaseProcesses, machineBusySeconds, procAvailable, processTree } from './proc.ts';

/** What a response was, for the scenario that sent it. */
export type Verdict = 'ok' | 'slow_down' | 'unexpected';

export interface LoadSpec {
  /** The server's origin; several spread the connections over them in turn (scale_out). */
  readonly url: string | readonly string[];
  readonly connections: number;
  /** Seconds; or `amount` requests in all. */
  readonly duration?: number;
  readonly amount?: number;
  /** Requests per second over all connections, to pace polling; none when absent. */
  readonly overallRate?: number;
  /**
   * Builds the next request (method, path, headers, body). `context` belongs to the
   * connection, which has one request in flight at a time: what is put there comes back to
   * `answered` with that request's answer.
   */
  readonly next: (context: Record<string, unknown>) => Request;
  readonly answered?: (context: Record<string, unknown>) => void;
  readonly classify: (status: number, body: string) => Verdict;
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
  /** The first few unexpected answers, to say what went wrong. */
  readonly examples: string[];
}

export async function load(spec: LoadSpec): Promise<Sample> {
  const latencies: number[] = [];
  let ok = 0;
  let slowDown = 0;
  let unexpected = 0;
  const examples: string[] = [];
  const request: Request = {
    setupRequest: (base, context) => ({ ...base, ...spec.next(context) }),
    onResponse: (status, body, context) => {
      spec.answered?.(context);
      const verdict = spec.classify(status, body);
      if (verdict === 'ok') ok += 1;
      else if (verdict === 'slow_down') slowDown += 1;
      else {
        unexpected += 1;
        if (examples.length < 3) examples.push(`${status} ${body.slice(0, 200)}`);
      }
    },
  };
  const pids = procAvailable ? (typeof spec.serverPid === 'number' ? [spec.serverPid] : spec.serverPid).flatMap(processTree) : [];
  const cpuBefore = procAvailable ? cpuSeconds(pids) : NaN;
  const databaseTicks = () => (procAvailable && spec.database ? cpuTicks(databaseProcesses(spec.database)) : new Map<number, number>());
  const databaseBefore = databaseTicks();
  const machineBefore = machineBusySeconds();
  const driverBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  let last = started;
  let ended: { server: number; database: Map<number, number>; machine: number; driver: NodeJS.CpuUsage } | undefined;
  const readings = () => ({
    server: procAvailable ? cpuSeconds(pids) : NaN,
    database: databaseTicks(),
    machine: machineBusySeconds(),
    driver: process.cpuUsage(driverBefore),
  });
  const result = await new Promise<import('autocannon').Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: typeof spec.url === 'string' ? spec.url : [...spec.url],
        connections: spec.connections,
        timeout: 10,
        requests: [request],
        // autocannon ends a stopped run at its next sampling tick, once a second by default: a
        // batch of exchanges done in 0.1 s then kept the bench idle for 0.9 s (the server was
        // loaded a tenth of the time, and the sign_in_flood smoke test took a second a batch).
        ...(spec.amount === undefined ? { duration: spec.duration ?? 10 } : { amount: spec.amount, sampleInt: 20 }),
        ...(spec.overallRate === undefined ? {} : { overallRate: spec.overallRate }),
      },
      (error, outcome) => (error ? reject(error) : resolve(outcome)),
    );
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      latencies.push(responseTime);
      last = process.hrtime.bigint();
      // autocannon notices that `amount` is reached only on its once-a-second tick: stop now,
      // and time the batch to its last response, or a 0.3 s batch would count as 1 s.
      if (spec.amount !== undefined && latencies.length === spec.amount) {
        ended = readings();
        instance.stop();
      }
    });
  });
  const seconds = Number((spec.amount === undefined ? process.hrtime.bigint() : last) - started) / 1e9;
  const { server: cpuAfter, database: databaseAfter, machine: machineAfter, driver } = ended ?? readings();
  const databaseCpu = databaseAfter.size === 0 ? NaN : databaseCpuBetween(databaseBefore, databaseAfter);
  const other = machineAfter - machineBefore - (cpuAfter - cpuBefore) - (Number.isNaN(databaseCpu) ? 0 : databaseCpu) - (driver.user + driver.system) / 1e6;
  return {
    requests: latencies.length,
    seconds,
    latencies,
    ok,
    slowDown,
    unexpected,
    errors: result.errors + result.timeouts,
    cpuSeconds: cpuAfter - cpuBefore,
    databaseCpuSeconds: databaseCpu,
    otherCpuSeconds: Math.max(0, other),
    examples,
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

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scaleChart, scalePointOf } from '../bench/charts.ts';
import { takingTurns } from '../bench/load.ts';
import { within } from './helpers/wait.ts';

const ROOT = new URL('..', import.meta.url).pathname;

/**
 * Keeps `npm run bench` working: one tiny scenario against Tessera alone. It checks that the
 * table comes out and every answer was the expected one, never how fast anything was.
 */
interface BenchRow {
  readonly scenario: string;
  readonly target: string;
  readonly errors: number;
  readonly unexpected: number;
  readonly rps: number;
  /** JSON's null where there is no figure: SQLite, or PostgreSQL's processes not on this machine. */
  readonly databaseCpuPercent?: number | null;
}

/** Runs the bench's `script` with `args`; what it printed, once it has exited 0 within `limitMs`. */
async function runScript(script: string, args: readonly string[], what: string, limitMs: number): Promise<string> {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, script), ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const code = await within(exited, `${what} to finish`, limitMs).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  assert.equal(code, 0, stderr);
  return stdout;
}

/**
 * Runs `npm run bench` with `args` into a scratch directory, as a smoke run (`--quick`, no
 * warm-up, timed runs of `duration` seconds): what it printed and the rows of latest.json.
 * `look` is handed the directory before it is removed.
 */
async function runBench(
  args: readonly string[],
  { duration = '0.2', look = () => {} }: { duration?: string; look?: (out: string) => void } = {},
): Promise<{ stdout: string; rows: BenchRow[] }> {
  const out = mkdtempSync(join(tmpdir(), 'tessera-bench-smoke-'));
  try {
    const stdout = await runScript('bench/run.ts', ['--quick', '--warmup', '0', '--duration', duration, ...args, '--out', out], 'npm run bench', 90_000);
    look(out);
    return { stdout, rows: (JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as { rows: BenchRow[] }).rows };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** Asserts the row of `scenario` for `target` is there, with no errors, every answer the expected one (`what`), and some answered; returns it. */
function cleanRow(rows: readonly BenchRow[], scenario: string, target: string, what: string): BenchRow {
  const row = rows.find((entry) => entry.scenario === scenario && entry.target === target);
  assert.ok(row, `a ${scenario} row for ${target}`);
  assert.equal(row.errors, 0, `${scenario} / ${target}: errors`);
  assert.equal(row.unexpected, 0, `${scenario} / ${target}: ${what}`);
  assert.ok(row.rps > 0, `${scenario} / ${target}: requests answered`);
  return row;
}

describe('npm run bench (smoke)', () => {
  it('runs code_exchange, refresh and client_credentials once: rows with no errors and no unexpected answers, the RS256 floor, and the docs table with its commit', async () => {
    const { stdout, rows } = await runBench([
      '--scenario',
      'code_exchange',
      '--scenario',
      'refresh',
      '--scenario',
      'client_credentials',
      '--no-postgres',
      '--batch',
      '50',
      '--connections',
      '10',
    ]);
    assert.match(stdout, /req\/s\s+p50 ms\s+p99 ms\s+errors\s+unexpected/);
    for (const [scenario, what] of [
      ['code_exchange', 'every exchange answered 200 with an ID token'],
      ['refresh', 'every refresh answered 200 with a new refresh token and an ID token'],
      ['client_credentials', 'every request answered 200 with an access token'],
    ] as const) {
      cleanRow(rows, scenario, 'tessera/sqlite', what);
    }
    assert.match(stdout, /rs256 floor\s+[\d,]+ signatures\/s a core x \d+ cores = [\d,]+\/s; code_exchange \(tessera\/sqlite\) at \d+% of it/);
    // What docs/benchmarks.md's table needs, each row with the commit it came from.
    assert.match(stdout, /\| code_exchange \| tessera\/sqlite \| [\d,]+ \| [\d.]+ \| [\d.]+ \| \d+ \|.*\| [0-9a-f]{7,}(-dirty)? \| \d{4}-\d\d-\d\d \|/);
    assert.match(stdout, /\| client_credentials \| tessera\/sqlite \| [\d,]+ \|/);
  });

  it('runs scale_out once: two instances on one PostgreSQL database (where one answers) and one SQLite instance of two workers, each with no errors', async () => {
    const postgres = process.env['TESSERA_TEST_POSTGRES_URL'];
    const { rows } = await runBench([
      '--scenario',
      'scale_out',
      ...(postgres ? ['--postgres', postgres] : ['--no-postgres']),
      '--batch',
      '50',
      '--connections',
      '10',
    ]);
    const targets = ['tessera/sqlite x2 workers', ...(postgres ? ['tessera/postgres x2 instances'] : [])];
    for (const scenario of ['scale_out: code_exchange', 'scale_out: device_authorization']) {
      for (const target of targets) {
        const row = cleanRow(rows, scenario, target, 'every answer the expected one');
        // PostgreSQL's backends for the target's database were found and measured; SQLite has none.
        if (target.startsWith('tessera/postgres')) assert.equal(typeof row.databaseCpuPercent, 'number', `${scenario} / ${target}: database CPU`);
        else assert.equal(row.databaseCpuPercent, null, `${scenario} / ${target}: no database CPU`);
      }
    }
  });

  it('runs sign_in_flood once: the exchange alone, during the /login flood and during the /account/password flood, each with no errors', async () => {
    const { stdout, rows } = await runBench([
      '--scenario',
      'sign_in_flood',
      '--no-postgres',
      '--batch',
      '20',
      '--connections',
      '2',
      '--flood-addresses',
      '1',
      '--flood-in-flight',
      '1',
    ]);
    for (const scenario of [
      'sign_in_flood: code_exchange alone',
      'sign_in_flood: code_exchange during the flood',
      'sign_in_flood: code_exchange during the /account/password flood',
    ]) {
      cleanRow(rows, scenario, 'tessera/sqlite', 'every exchange answered 200');
    }
    // The account flood signed in and its wrong current passwords were answered (400 or 429), nothing else.
    assert.match(
      stdout,
      /tessera\/sqlite, \/account\/password flood: 1 addresses x 1 in flight, [\d.]+ s: [\d.]+ passwords checked\/s, [\d.]+ refused\/s \(429\), 0 other/,
    );
  });

  it('runs events_flood once: tokens alone, during admin changes with the streams off, and with push streams on, each with no errors, and the SETs pushed noted', async () => {
    const { stdout, rows } = await runBench(['--scenario', 'events_flood', '--no-postgres', '--connections', '2', '--flood-in-flight', '1'], {
      duration: '0.3',
    });
    for (const scenario of [
      'events_flood: client_credentials alone',
      'events_flood: client_credentials during the changes, streams off',
      'events_flood: client_credentials during the changes, 5 push streams',
    ]) {
      cleanRow(rows, scenario, 'tessera/sqlite', 'every request answered 200 with an access token');
    }
    // Every change was answered 200, and with the streams on, SETs were pushed.
    assert.match(stdout, /tessera\/sqlite, during the changes, streams off: 1 changes in flight, [\d.]+ changes\/s, 0\.0 SETs pushed\/s, 0 other/);
    assert.match(stdout, /tessera\/sqlite, during the changes, 5 push streams: 1 changes in flight, [\d.]+ changes\/s, [1-9][\d.]* SETs pushed\/s, 0 other/);
  });

  it('runs dpop once: polls with and without a DPoP proof, every answer authorization_pending, and the ratio printed', async () => {
    const { stdout, rows } = await runBench(['--scenario', 'dpop', '--no-postgres', '--pool', '20', '--connections', '5']);
    assert.match(stdout, /DPoP proof check on tessera\/sqlite: server CPU per poll [\d.]+x/);
    for (const scenario of ['dpop: poll without proof', 'dpop: poll with proof']) {
      cleanRow(rows, scenario, 'tessera/sqlite', 'every poll answered authorization_pending');
    }
  });

  it('splits a load over two generator threads (--load-threads 2), each code exchanged once, and keeps the servers to the CPUs asked (--server-cpus)', async () => {
    const { stdout, rows } = await runBench([
      '--scenario',
      'code_exchange',
      '--scenario',
      'device_poll',
      '--no-postgres',
      '--batch',
      '40',
      '--pool',
      '20',
      '--connections',
      '6',
      '--load-threads',
      '2',
      '--server-cpus',
      '0',
    ]);
    // A code sent by both threads would be answered invalid_grant the second time: unexpected.
    const exchanges = cleanRow(rows, 'code_exchange', 'tessera/sqlite', 'every code exchanged once, answered 200 with an ID token');
    const polls = cleanRow(rows, 'device_poll', 'tessera/sqlite', 'every poll answered authorization_pending');
    for (const row of [exchanges, polls]) assert.equal((row as BenchRow & { loadThreads?: number }).loadThreads, 2, `${row.scenario}: two threads`);
    assert.match(stdout, /settings\s+6 connections, 2 load-generator threads/);
    // Read back from /proc: the servers really ran on CPU 0 alone.
    assert.match(stdout, /cpus allowed\s+servers 0; load generator /);
  });

  it('writes a CPU profile for each thread of a server with two worker threads (--cpu-prof), in a folder of its target', async () => {
    let folders: Record<string, string[]> = {};
    await runBench(['--scenario', 'device_poll', '--no-postgres', '--workers', '2', '--cpu-prof', '--pool', '20', '--connections', '2'], {
      look: (out) => {
        const profiles = join(out, 'profiles');
        folders = Object.fromEntries(
          readdirSync(profiles).map((folder) => [folder, readdirSync(join(profiles, folder)).filter((name) => name.endsWith('.cpuprofile'))]),
        );
      },
    });
    assert.deepEqual(Object.keys(folders), ['tessera-sqlite'], "one folder, the target's");
    // Node's own names: CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile, one a thread.
    const threads = new Set(folders['tessera-sqlite']!.map((name) => name.split('.')[4]));
    assert.equal(threads.size, 2, `a profile of each thread: ${folders['tessera-sqlite']!.join(', ')}`);
  });

  it('draws the worker and instance curves as SVG: one line a series, oidc-provider as a level, nothing without a curve', () => {
    assert.deepEqual(scalePointOf('tessera/sqlite x4', 100, 9), { series: 'tessera/sqlite workers', count: 4, rps: 100, p99: 9 });
    assert.deepEqual(scalePointOf('tessera/postgres x2 instances', 80, 12), { series: 'tessera/postgres instances', count: 2, rps: 80, p99: 12 });
    assert.deepEqual(scalePointOf('oidc-provider', 50, 20), { series: 'oidc-provider', count: 1, rps: 50, p99: 20 });
    const points = [
      scalePointOf('tessera/sqlite x1', 100, 10),
      scalePointOf('tessera/sqlite x2', 180, 12),
      scalePointOf('tessera/sqlite x4', 300, 15),
      scalePointOf('tessera/postgres x1 instances', 70, 20),
      scalePointOf('tessera/postgres x2 instances', 130, 22),
      scalePointOf('oidc-provider', 90, 30),
    ];
    const svg = scaleChart('code_exchange', '2 x test CPU', points);
    assert.ok(svg);
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    // Two panels (req/s, p99), each with one line a curve and the level line of oidc-provider.
    assert.equal(svg.match(/<polyline /g)?.length, 4);
    assert.equal(svg.match(/stroke-dasharray/g)?.length, 3);
    for (const name of ['tessera/sqlite workers', 'tessera/postgres instances', 'oidc-provider', 'code_exchange: requests/s', 'code_exchange: p99 latency, ms'])
      assert.ok(svg.includes(name), name);
    assert.equal(scaleChart('code_exchange', '', [scalePointOf('tessera/sqlite', 100, 10), scalePointOf('oidc-provider', 90, 30)]), null);
  });

  it("measures the writer's ceiling (bench/writer-ceiling.ts): every code redeemed once through the one writer, and its CPU a redemption printed", async () => {
    // A code not redeemed (a redemption that answered false) ends the script with an error.
    const stdout = await runScript(
      'bench/writer-ceiling.ts',
      ['--threads', '2', '--in-flight', '5', '--codes', '200', '--runs', '1'],
      'the writer ceiling',
      60_000,
    );
    assert.match(stdout, /run 1: 200 redemptions from 2 threads/);
    assert.match(stdout, /median: [\d.]+ µs a redemption on the writer thread/);
  });

  it('measures it with another connection minting codes beside the load (--mint-batch), and says how many it minted', async () => {
    const stdout = await runScript(
      'bench/writer-ceiling.ts',
      ['--threads', '2', '--in-flight', '1', '--codes', '400', '--runs', '1', '--mint-batch', '20', '--mint-every', '5'],
      'the writer ceiling',
      60_000,
    );
    assert.match(stdout, /run 1: 400 redemptions from 2 threads/);
    assert.match(stdout, /another connection minted [1-9]\d* codes meanwhile/);
  });
});

describe("the bench's order of measurement", () => {
  it('lets the targets take turns at going first, run by run, each keeping its rows in their order', () => {
    // Two targets of three rows each (a flood's), as --against makes them.
    const rows = ['a alone', 'a streams off', 'a pushed', 'b alone', 'b streams off', 'b pushed'];
    const target = (row: string) => row.slice(0, 1);
    assert.deepEqual(takingTurns(rows, target, 0), rows);
    assert.deepEqual(takingTurns(rows, target, 1), ['b alone', 'b streams off', 'b pushed', 'a alone', 'a streams off', 'a pushed']);
    assert.deepEqual(takingTurns(rows, target, 2), rows);
  });
});

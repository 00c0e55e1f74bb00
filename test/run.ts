/**
 * `npm test`: the whole suite, in a few processes side by side (`--shards N`, two more than the
 * machine has cores by default: a shard waiting on a browser, a database, a child process or a
 * timer leaves its core to another; on two cores four shards took 137-138.5 s where three took
 * 145-152 s, docs/testing.md),
 * each running its share of the test files one after another (`node --test
 * --test-isolation=none`). `npm test -- FILE…` runs only those files.
 *
 * A process per test file cost each of the 113 files about 0.6 s of CPU before its first test:
 * starting Node, importing the app's 480 modules, Playwright's for a browser test. That was a
 * fifth of the suite's CPU on a two-core machine where the suite is CPU-bound. Files share a
 * process now, so a file must leave nothing behind that the next one could trip on: servers,
 * browsers and commands are stopped in `after` (as they already were), and what a file reads
 * of the clock it reads in its hooks and tests, not while it is loaded (every file of a shard
 * is loaded before the first test runs).
 *
 * Shards are dealt by how long each file takes (test/durations.json), the longest first to the
 * shard with the least so far, so they end together. The split is the same on every machine:
 * a failure that depends on the files before it in its shard comes back. `npm test --
 * --record` runs the suite as usual and writes that table again from the run: each file's
 * time in its shard, as the files share the cores, from the end of the file before it to the
 * end of its last test, so that its hooks count (a file it does not know yet counts by its
 * size). Its tests' own durations left out the setup in its hooks, and shards dealt by them
 * ended as much as 18 s apart.
 *
 * The counts are the runner's own: a second reporter (helpers/outcomes-reporter.ts) tells it
 * each test's start and end, file by file, on a pipe of its own, and after each shard's report
 * every file of the shard has a line: its tests and how they ended, or that the shard ended
 * while the file ran or before it. A shard is forced to exit once its tests are done
 * (`--test-force-exit`, so that a file that leaves a handle open cannot hold it), which can end
 * the process before its report is out: the reporter writes each line synchronously as it
 * comes, and a shard whose report did not reach its end fails the run, naming the files whose
 * results are missing, rather than count short and pass.
 *
 * Every shard loads helpers/loopback-only.ts first (`--import`): a test process connects to
 * loopback only, so that no test reaches beyond the machine, even one whose rule is broken.
 *
 * Two files are not among those `npm test` runs, each with a script of its own that .ci/run
 * runs after it: the bench's smoke test (`npm run test:bench`, test/bench.test.ts) and the
 * image built again without buildah's cache (`npm run test:image`,
 * test/image-reproducible.test.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { globSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { globalSetup, globalTeardown } from './helpers/global-setup.ts';
import type { Outcome } from './helpers/outcomes-reporter.ts';

const ROOT = join(import.meta.dirname, '..');
const PATTERNS = ['test/**/*.test.ts', 'src/**/*.test.ts'];
/** Not run by `npm test` unless named, each with a script of its own: the bench's smoke test (`npm run test:bench`) and the image's rebuild without the cache (`npm run test:image`). */
const OWN_SCRIPT = ['test/bench.test.ts', 'test/image-reproducible.test.ts'];
const OUTCOMES_REPORTER = join(import.meta.dirname, 'helpers', 'outcomes-reporter.ts');

/** The table the shards are dealt by; TEST_RUN_DURATIONS names another (test/run-record.test.ts). */
const DURATIONS = process.env['TEST_RUN_DURATIONS'] || join(import.meta.dirname, 'durations.json');
/** Per test, as the runner's own --test-timeout: a hung test fails rather than holds its shard. */
const TEST_TIMEOUT_MS = 120_000;
/** Every connection a test process opens goes to loopback: helpers/loopback-only.ts. */
const LOOPBACK_ONLY = join(import.meta.dirname, 'helpers', 'loopback-only.ts');
const NODE = ['--disable-warning=ExperimentalWarning', `--import=${LOOPBACK_ONLY}`, '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-force-exit'];
const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { shards: { type: 'string', default: String(availableParallelism() + 2) }, record: { type: 'boolean', default: false } },
});
const shardCount = Number(values.shards);
if (!Number.isInteger(shardCount) || shardCount < 1) {
  process.stderr.write(`--shards must be a whole number of at least 1, got ${values.shards}\n`);
  process.exit(2);
}

const files = (
  positionals.length > 0
    ? positionals.map((file) => relative(ROOT, resolve(process.cwd(), file)))
    : globSync(PATTERNS, { cwd: ROOT }).filter((file) => !OWN_SCRIPT.includes(file))
).sort();

const children = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

/**
 * Runs node with `args` in the checkout; resolves with what it printed and its exit status once
 * it has ended. `outcomes`: the file the outcomes reporter writes (TEST_RUN_OUTCOMES), each
 * line handed to `onOutcome`, read once the process has ended.
 */
function node(
  args: readonly string[],
  outcomes?: { readonly file: string; readonly onOutcome: (outcome: Outcome) => void },
): Promise<{ output: string; code: number }> {
  const env = outcomes ? { ...process.env, TEST_RUN_OUTCOMES: outcomes.file } : process.env;
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      if (outcomes) {
        let text = '';
        try {
          text = readFileSync(outcomes.file, 'utf8');
        } catch {
          // Nothing written: the process ended before its first test.
        }
        for (const line of text.split('\n')) if (line) outcomes.onOutcome(JSON.parse(line) as Outcome);
      }
      resolve({ output, code: code ?? (signal ? 1 : 0) });
    });
  });
}

/** What a file's tests came to, as the outcomes reporter told them. */
interface FileTally {
  readonly counts: Record<(typeof COUNTS)[number], number>;
  /** Its top-level tests started and not ended: the names of those running. */
  readonly running: Set<string>;
  started: boolean;
  /**
   * Its time in its shard: from the end of the file before it (its hooks before its first test
   * count, which its tests' own durations leave out) to its last test's end. The files of a
   * shard run one after another, so these add up to the shard's time, but for loading them.
   */
  since: number;
  until: number;
}

function newTally(at: number): FileTally {
  return { counts: { tests: 0, suites: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 }, running: new Set(), started: false, since: at, until: at };
}

/** A shard's outcomes so far: when the last test of any file ended. */
interface ShardClock {
  lastEnd: number | null;
}

/** The file node:test names for `outcome`: the one that called its `it` or `describe` (a test of no file, a global hook's, `(no file)`). */
function namedFile(outcome: Outcome): string {
  return outcome.file === null ? '(no file)' : relative(ROOT, outcome.file.startsWith('file:') ? fileURLToPath(outcome.file) : outcome.file);
}

/**
 * The test file of the shard that each outcome counts for. node:test names the file that called
 * `it` or `describe`, and a suite a helper registers names the helper, not the test file that
 * called it: the store contract's (test/store/contract.ts, from test/store/sqlite.test.ts and
 * postgres.test.ts), a PostgreSQL suite's (helpers/postgres.ts). Counted under the helper's
 * name, a failure there left test/store/sqlite.test.ts's line saying "12 tests, 12 pass", and
 * the line to run it again named a file that holds no test. So a top-level test, with all
 * within it, counts for its own file when the shard runs that file; else for the first such
 * file among the tests within it (a PostgreSQL suite's body is its test file's); else (the
 * store contract, every test of which is the helper's) for the file of the next top-level test
 * that has one, the file whose loading registered it (a shard loads its files one after another,
 * each registering its top-level tests in order, the helpers' before its own), or the last's
 * when none comes after.
 */
function owners(outcomes: readonly Outcome[], files: ReadonlySet<string>): string[] {
  const named = outcomes.map(namedFile);
  // The top-level tests, each from its first event to its end.
  const groups: { from: number; to: number; owner: string | null }[] = [];
  let open = false;
  for (const [i, outcome] of outcomes.entries()) {
    if (outcome.nesting === 0 && !open && outcome.event !== 'end') {
      groups.push({ from: i, to: i, owner: null });
      open = true;
    }
    const group = groups.at(-1);
    if (open && group !== undefined) group.to = i;
    if (outcome.nesting === 0 && outcome.event === 'end') open = false;
  }
  for (const group of groups) {
    const own = named[group.from]!;
    group.owner = files.has(own) ? own : (named.slice(group.from, group.to + 1).find((file) => files.has(file)) ?? null);
  }
  for (const [i, group] of groups.entries()) group.owner ??= groups.slice(i + 1).find((later) => later.owner !== null)?.owner ?? groups[i - 1]?.owner ?? null;
  const owner = [...named];
  for (const group of groups) if (group.owner !== null) owner.fill(group.owner, group.from, group.to + 1);
  return owner;
}

/** Adds `outcome` to the tally of `file`, the test file it counts for (`owners`); returns that file. */
function tallyOutcome(tallies: Map<string, FileTally>, outcome: Outcome, file: string, shard: ShardClock): string {
  let tally = tallies.get(file);
  if (tally === undefined) tallies.set(file, (tally = newTally(shard.lastEnd ?? outcome.at)));
  tally.started = true;
  if (outcome.event === 'dequeue') return file;
  if (outcome.event === 'start') {
    if (outcome.nesting === 0) tally.running.add(outcome.name);
    return file;
  }
  tally.until = shard.lastEnd = outcome.at;
  if (outcome.nesting === 0) tally.running.delete(outcome.name);
  if (outcome.suite) {
    tally.counts.suites += 1;
    return file;
  }
  tally.counts.tests += 1;
  tally.counts[outcome.result ?? 'fail'] += 1;
  return file;
}

/**
 * A file's line after its shard's report: its counts, or where the shard ended. `last`: the
 * file the last outcome before an early end was of, which may have had tests still to run.
 */
function fileLine(file: string, tally: FileTally | undefined, shardEnded: string | null, last: boolean): { line: string; whole: boolean } {
  const counts = tally?.counts;
  const said =
    counts === undefined
      ? ''
      : (['pass', 'fail', 'cancelled', 'skipped', 'todo'] as const)
          .filter((name) => counts[name] > 0)
          .map((name) => `${counts[name]} ${name}`)
          .join(', ');
  if (tally === undefined || !tally.started) {
    return shardEnded === null ? { line: `✔ ${file}: no tests`, whole: true } : { line: `✖ ${file}: not run: ${shardEnded} before it`, whole: false };
  }
  if (tally.running.size > 0) {
    return {
      line: `✖ ${file}: did not finish: ${shardEnded ?? 'the shard ended'} in ${[...tally.running].map((name) => JSON.stringify(name)).join(', ')} (${counts!.tests} tests ended: ${said || 'none'})`,
      whole: false,
    };
  }
  if (shardEnded !== null && last) {
    return { line: `✖ ${file}: may not have finished: ${shardEnded} after its ${counts!.tests} tests ended (${said || 'none'})`, whole: false };
  }
  const ok = counts!.fail === 0 && counts!.cancelled === 0;
  return {
    line: `${ok ? '✔' : '✖'} ${file}: ${counts!.tests} tests${said ? `, ${said}` : ''} (${((tally.until - tally.since) / 1000).toFixed(1)} s)`,
    whole: true,
  };
}

/** Seconds a file took in its shard, as recorded; for a file not recorded yet, an estimate from its size. */
function durations(): (file: string) => number {
  let recorded: Record<string, number> = {};
  try {
    recorded = JSON.parse(readFileSync(DURATIONS, 'utf8')) as Record<string, number>;
  } catch {
    // No table: every file by its size.
  }
  return (file) => {
    if (recorded[file] !== undefined) return recorded[file];
    // About 0.2 ms a byte of test, three times that for one that drives Chromium (the recorded files' average).
    const bytes = statSync(join(ROOT, file)).size;
    return (bytes / 5000) * (readFileSync(join(ROOT, file), 'utf8').includes('launchChromium') ? 3 : 1);
  };
}

async function runShards(): Promise<boolean> {
  const seconds = durations();
  const shards = Array.from({ length: Math.min(shardCount, files.length) }, () => ({ files: [] as string[], seconds: 0 }));
  for (const file of files.toSorted((a, b) => seconds(b) - seconds(a) || a.localeCompare(b))) {
    const least = shards.reduce((shortest, shard) => (shard.seconds < shortest.seconds ? shard : shortest));
    least.files.push(file);
    least.seconds += seconds(file);
  }
  const started = Date.now();
  const totals = Object.fromEntries(COUNTS.map((name) => [name, 0])) as Record<(typeof COUNTS)[number], number>;
  const failures: string[] = [];
  const failedFiles = new Set<string>();
  const outcomesDir = mkdtempSync(join(tmpdir(), 'tessera-outcomes-'));
  /** Each file's milliseconds in its shard, for --record. */
  const measured = new Map<string, number>();
  const codes = await Promise.all(
    shards.map(async (shard, index) => {
      const tallies = new Map<string, FileTally>();
      let done = false;
      let lastFile: string | null = null;
      const clock: ShardClock = { lastEnd: null };
      const outcomes: Outcome[] = [];
      const file = join(outcomesDir, `shard-${index + 1}.jsonl`);
      const { output, code } = await node(
        [
          ...NODE,
          '--test-isolation=none',
          '--test-reporter=spec',
          '--test-reporter-destination=stdout',
          `--test-reporter=${OUTCOMES_REPORTER}`,
          '--test-reporter-destination=stderr',
          ...shard.files.toSorted(),
        ],
        {
          file,
          onOutcome: (outcome) => {
            if (outcome.event === 'done') done = true;
            else outcomes.push(outcome);
          },
        },
      );
      const counted = owners(outcomes, new Set(shard.files));
      for (const [i, outcome] of outcomes.entries()) lastFile = tallyOutcome(tallies, outcome, counted[i]!, clock);
      // The shard's report ended (its summary came) unless the process ended first.
      const shardEnded = done ? null : `the shard ended (status ${code})`;
      const lines = shard.files.toSorted().map((file) => ({ file, ...fileLine(file, tallies.get(file), shardEnded, file === lastFile) }));
      // Tests counted for no file of the shard (a global hook's): a line of their own, so that none is left out of the lines.
      for (const [name, tally] of tallies) if (!shard.files.includes(name)) lines.push({ file: name, ...fileLine(name, tally, shardEnded, false) });
      // Each shard's report whole, as it ends (reports interleaved line by line would not read),
      // but for its list of failures, which comes once for all shards at the end; then a line for each of its files.
      const failing = output.indexOf('\n✖ failing tests:');
      process.stdout.write(
        `\n── shard ${index + 1} of ${shards.length}: ${shard.files.length} files ──\n${failing === -1 ? output : output.slice(0, failing + 1)}\n${lines.map(({ line }) => line).join('\n')}\n`,
      );
      for (const tally of tallies.values()) for (const name of COUNTS) totals[name] += tally.counts[name];
      for (const [name, tally] of tallies) measured.set(name, tally.until - tally.since);
      if (failing !== -1) failures.push(output.slice(failing + 1).trimEnd());
      for (const [name, tally] of tallies) if (shard.files.includes(name) && (tally.counts.fail > 0 || tally.counts.cancelled > 0)) failedFiles.add(name);
      const unfinished = lines.filter(({ whole }) => !whole).map(({ line }) => line);
      for (const { file, whole } of lines) if (!whole) failedFiles.add(file);
      if (unfinished.length > 0) failures.push(`✖ shard ${index + 1} ended (status ${code}) before its report did:\n${unfinished.join('\n')}`);
      if (code !== 0 && failing === -1 && unfinished.length === 0)
        failures.push(`✖ shard ${index + 1} ended with status ${code}; its files: ${shard.files.join(' ')}`);
      return unfinished.length > 0 ? 1 : code;
    }),
  );
  rmSync(outcomesDir, { recursive: true, force: true });
  if (values.record) {
    // Files not run this time keep their times (a run of named files updates theirs).
    let table: Record<string, number> = {};
    try {
      table = JSON.parse(readFileSync(DURATIONS, 'utf8')) as Record<string, number>;
    } catch {
      // None yet.
    }
    for (const file of files) table[file] = Math.max(0.1, Math.round((measured.get(file) ?? 0) / 100) / 10);
    table = Object.fromEntries(Object.entries(table).toSorted(([a], [b]) => a.localeCompare(b)));
    writeFileSync(DURATIONS, `${JSON.stringify(table, null, 2)}\n`);
    process.stdout.write(`written: ${relative(process.cwd(), DURATIONS)}\n`);
  }
  // The failures at the end, where a reader of a long log looks, with the command that runs their files alone.
  // The test files whose tests failed, not the files the failing lines are in: a helper's test
  // (the store contract's) runs again only with the test file that called it.
  const failed = [...failedFiles].toSorted();
  if (failures.length > 0)
    process.stdout.write(`\n${failures.join('\n\n')}\n${failed.length > 0 ? `\nagain on their own: npm test -- ${failed.join(' ')}\n` : ''}`);
  process.stdout.write(
    `\n── ${shards.length} shards, ${files.length} files ──\n${COUNTS.map((name) => `ℹ ${name} ${totals[name]}`).join('\n')}\nℹ duration_ms ${Date.now() - started}\n`,
  );
  return codes.every((code) => code === 0);
}

globalSetup();
try {
  process.exitCode = (await runShards()) ? 0 : 1;
} finally {
  globalTeardown();
}

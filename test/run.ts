/**
 * `npm test`: the whole suite, in a few processes side by side (`--shards N`, one more than the
 * machine has cores by default: a shard waiting on a browser or a database leaves a core to another),
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
 * --record` times each file alone and writes that table again (a file it does not know yet
 * counts by its size).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { globSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { globalSetup, globalTeardown } from './helpers/global-setup.ts';

const ROOT = join(import.meta.dirname, '..');
const PATTERNS = ['test/**/*.test.ts', 'src/**/*.test.ts'];
const DURATIONS = join(import.meta.dirname, 'durations.json');
/** Per test, as the runner's own --test-timeout: a hung test fails rather than holds its shard. */
const TEST_TIMEOUT_MS = 120_000;
const NODE = ['--disable-warning=ExperimentalWarning', '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-force-exit'];
const COUNTS = ['tests', 'suites', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;

const { values, positionals } = parseArgs({ allowPositionals: true, options: { shards: { type: 'string', default: String(availableParallelism() + 1) }, record: { type: 'boolean', default: false } } });
const shardCount = Number(values.shards);
if (!Number.isInteger(shardCount) || shardCount < 1) {
  process.stderr.write(`--shards must be a whole number of at least 1, got ${values.shards}\n`);
  process.exit(2);
}

const files = (positionals.length > 0 ? positionals.map((file) => relative(ROOT, join(process.cwd(), file))) : globSync(PATTERNS, { cwd: ROOT })).sort();

const children = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.kill(signal);
  });
}

/** Runs node with `args` in the checkout; resolves with what it printed and its exit status once it has ended. */
function node(args: readonly string[]): Promise<{ output: string; code: number }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ output, code: code ?? (signal ? 1 : 0) });
    });
  });
}

/** Seconds a file took alone, as recorded; for a file not recorded yet, an estimate from its size. */
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

/** Times each file alone, one after another, and writes the table the shards are dealt by. */
async function record(): Promise<boolean> {
  const table: Record<string, number> = {};
  let passed = true;
  for (const file of files) {
    const started = Date.now();
    const { code } = await node([...NODE, file]);
    table[file] = Math.round((Date.now() - started) / 100) / 10;
    process.stdout.write(`${code === 0 ? '✔' : '✖'} ${file} ${table[file]} s\n`);
    if (code !== 0) passed = false;
  }
  writeFileSync(DURATIONS, `${JSON.stringify(table, null, 2)}\n`);
  process.stdout.write(`written: ${relative(process.cwd(), DURATIONS)}\n`);
  return passed;
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
  const codes = await Promise.all(
    shards.map(async (shard, index) => {
      const { output, code } = await node([...NODE, '--test-isolation=none', '--test-reporter=spec', ...shard.files.toSorted()]);
      // Each shard's report whole, as it ends (reports interleaved line by line would not read),
      // but for its list of failures, which comes once for all shards at the end.
      const failing = output.indexOf('\n✖ failing tests:');
      process.stdout.write(`\n── shard ${index + 1} of ${shards.length}: ${shard.files.length} files ──\n${failing === -1 ? output : output.slice(0, failing + 1)}`);
      for (const name of COUNTS) totals[name] += Number(new RegExp(`^ℹ ${name} (\\d+)$`, 'm').exec(output)?.[1] ?? 0);
      if (failing !== -1) failures.push(output.slice(failing + 1).trimEnd());
      else if (code !== 0) failures.push(`✖ shard ${index + 1} ended with status ${code}; its files: ${shard.files.join(' ')}`);
      return code;
    }),
  );
  // The failures at the end, where a reader of a long log looks, with the command that runs their files alone.
  const failed = [...new Set(Array.from(failures.join('\n').matchAll(/^test at (.+?):\d+:\d+$/gm), (match) => match[1]!))];
  if (failures.length > 0) process.stdout.write(`\n${failures.join('\n\n')}\n${failed.length > 0 ? `\nagain on their own: npm test -- ${failed.join(' ')}\n` : ''}`);
  process.stdout.write(`\n── ${shards.length} shards, ${files.length} files ──\n${COUNTS.map((name) => `ℹ ${name} ${totals[name]}`).join('\n')}\nℹ duration_ms ${Date.now() - started}\n`);
  return codes.every((code) => code === 0);
}

globalSetup();
try {
  process.exitCode = (await (values.record ? record() : runShards())) ? 0 : 1;
} finally {
  globalTeardown();
}

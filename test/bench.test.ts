import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
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
}

/** Runs `npm run bench` with `args` into a scratch directory: what it printed and the rows of latest.json. */
async function runBench(args: readonly string[]): Promise<{ stdout: string; rows: BenchRow[] }> {
  const out = mkdtempSync(join(tmpdir(), 'tessera-bench-smoke-'));
  try {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bench/run.ts'), ...args, '--out', out], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const code = await within(exited, 'npm run bench to finish', 90_000).catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    });
    assert.equal(code, 0, stderr);
    return { stdout, rows: (JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as { rows: BenchRow[] }).rows };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

describe('npm run bench (smoke)', () => {
  it('runs code_exchange once and prints a row with no errors and no unexpected answers', async () => {
    const { stdout, rows } = await runBench(['--quick', '--scenario', 'code_exchange', '--no-postgres', '--duration', '0.5', '--warmup', '0', '--batch', '50', '--connections', '10']);
    assert.match(stdout, /req\/s\s+p50 ms\s+p99 ms\s+errors\s+unexpected/);
    const row = rows.find((entry) => entry.scenario === 'code_exchange' && entry.target === 'tessera/sqlite');
    assert.ok(row, 'a code_exchange row for tessera/sqlite');
    assert.equal(row.errors, 0);
    assert.equal(row.unexpected, 0, 'every exchange answered 200 with an ID token');
    assert.ok(row.rps > 0);
  });

  it('runs dpop once: polls with and without a DPoP proof, every answer authorization_pending, and the ratio printed', async () => {
    const { stdout, rows } = await runBench(['--quick', '--scenario', 'dpop', '--no-postgres', '--duration', '0.5', '--warmup', '0', '--pool', '20', '--connections', '5']);
    assert.match(stdout, /DPoP proof check on tessera\/sqlite: server CPU per poll [\d.]+x/);
    for (const scenario of ['dpop: poll without proof', 'dpop: poll with proof']) {
      const row = rows.find((entry) => entry.scenario === scenario);
      assert.ok(row, scenario);
      assert.equal(row.errors, 0);
      assert.equal(row.unexpected, 0, `${scenario}: every poll answered authorization_pending`);
      assert.ok(row.rps > 0);
    }
  });
});

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = new URL('..', import.meta.url).pathname;

/**
 * Keeps `npm run bench` working: one tiny scenario against Tessera alone. It checks that the
 * table comes out and every answer was the expected one, never how fast anything was.
 */
describe('npm run bench (smoke)', () => {
  it('runs code_exchange once and prints a row with no errors and no unexpected answers', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tessera-bench-smoke-'));
    try {
      const args = ['--quick', '--scenario', 'code_exchange', '--no-postgres', '--duration', '0.5', '--warmup', '0', '--batch', '50', '--connections', '10', '--out', out];
      const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bench/run.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0, stderr);
      assert.match(stdout, /req\/s\s+p50 ms\s+p99 ms\s+errors\s+unexpected/);
      const results = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as { rows: { scenario: string; target: string; errors: number; unexpected: number; rps: number }[] };
      const row = results.rows.find((entry) => entry.scenario === 'code_exchange' && entry.target === 'tessera/sqlite');
      assert.ok(row, 'a code_exchange row for tessera/sqlite');
      assert.equal(row.errors, 0);
      assert.equal(row.unexpected, 0, 'every exchange answered 200 with an ID token');
      assert.ok(row.rps > 0);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it('runs dpop once: polls with and without a DPoP proof, every answer authorization_pending, and the ratio printed', async () => {
    const out = mkdtempSync(join(tmpdir(), 'tessera-bench-smoke-'));
    try {
      const args = ['--quick', '--scenario', 'dpop', '--no-postgres', '--duration', '0.5', '--warmup', '0', '--pool', '20', '--connections', '5', '--out', out];
      const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', join(ROOT, 'bench/run.ts'), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0, stderr);
      assert.match(stdout, /DPoP proof check on tessera\/sqlite: server CPU per poll [\d.]+x/);
      const results = JSON.parse(readFileSync(join(out, 'latest.json'), 'utf8')) as { rows: { scenario: string; errors: number; unexpected: number; rps: number }[] };
      for (const scenario of ['dpop: poll without proof', 'dpop: poll with proof']) {
        const row = results.rows.find((entry) => entry.scenario === scenario);
        assert.ok(row, scenario);
        assert.equal(row.errors, 0);
        assert.equal(row.unexpected, 0, `${scenario}: every poll answered authorization_pending`);
        assert.ok(row.rps > 0);
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

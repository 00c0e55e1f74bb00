/**
 * `npm test -- --record` (test/run.ts): the table the shards are dealt by, written again from
 * the run itself: each file run gets its time in its shard, and a file not run this time keeps
 * the time it had.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';

const ROOT = join(import.meta.dirname, '..');

describe('npm test -- --record', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-record-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("writes the time of each file it ran, and keeps the others' times", async () => {
    // A file that takes a third of a second, wherever it runs.
    const slow = join(dir, 'slow.test.mjs');
    writeFileSync(slow, "import { it } from 'node:test';\nit('waits', () => new Promise((resolve) => setTimeout(resolve, 300)));\n");
    const slowKey = relative(ROOT, slow);
    const table = join(dir, 'durations.json');
    writeFileSync(table, JSON.stringify({ 'test/not-run-this-time.test.ts': 42, [slowKey]: 999 }));
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--disable-warning=ExperimentalWarning', 'test/run.ts', '--record', '--shards', '1', slow],
      { cwd: ROOT, env: { ...process.env, TEST_RUN_DURATIONS: table }, timeout: 60_000 },
    );
    assert.match(stdout, /written: /);
    const written = JSON.parse(readFileSync(table, 'utf8')) as Record<string, number>;
    assert.deepEqual(Object.keys(written), [slowKey, 'test/not-run-this-time.test.ts'].toSorted(), 'sorted, none lost');
    assert.equal(written['test/not-run-this-time.test.ts'], 42);
    const measured = written[slowKey]!;
    assert.ok(measured >= 0.3 && measured < 60, `the file's time in its shard, in seconds: ${measured}`);
  });
});

/**
 * `npm test`'s report (test/run.ts): each test counts for the test file that ran it, also a test
 * a helper registered (the store contract is test/store/contract.ts's `describe`, called from
 * test/store/sqlite.test.ts and postgres.test.ts), so that a file's line tells how its tests
 * ended and the line to run the failures again names the test file, not the helper.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';

const ROOT = join(import.meta.dirname, '..');

describe("npm test's report", () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-report-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("counts a helper's tests for the test file that called it, and names that file to run again", async () => {
    // A helper registering a suite of its own, as the store contract does: one test passes, one fails.
    const helper = join(dir, 'contract.mjs');
    writeFileSync(
      helper,
      "import { describe, it } from 'node:test';\nexport function contract(name) {\n  describe(name, () => {\n    it('holds', () => {});\n    it('breaks', () => { throw new Error('the contract is broken'); });\n  });\n}\n",
    );
    // Its suite registered before the file's own test, as test/store/sqlite.test.ts does.
    const caller = join(dir, 'b-store.test.mjs');
    writeFileSync(caller, "import { it } from 'node:test';\nimport { contract } from './contract.mjs';\ncontract('a store');\nit('its own test', () => {});\n");
    // Files before and after it in the shard, whose lines must stay their own.
    const before = join(dir, 'a-first.test.mjs');
    writeFileSync(before, "import { it } from 'node:test';\nit('first', () => {});\n");
    const later = join(dir, 'c-last.test.mjs');
    writeFileSync(later, "import { it } from 'node:test';\nit('last', () => {});\n");
    const run = await promisify(execFile)(process.execPath, ['--disable-warning=ExperimentalWarning', 'test/run.ts', '--shards', '1', before, caller, later], {
      cwd: ROOT,
      timeout: 60_000,
    }).then(
      () => assert.fail('a failing test fails the run'),
      (error: { code: number; stdout: string }) => error,
    );
    assert.equal(run.code, 1);
    const line = (file: string) => run.stdout.split('\n').find((text) => text.includes(` ${relative(ROOT, file)}: `));
    assert.match(line(caller) ?? '', /^✖ .*: 3 tests, 2 pass, 1 fail /, "the helper's two tests are the caller's");
    assert.match(line(before) ?? '', /^✔ .*: 1 tests, 1 pass /);
    assert.match(line(later) ?? '', /^✔ .*: 1 tests, 1 pass /);
    assert.equal(line(helper), undefined, 'no line of its own for the helper');
    assert.match(run.stdout, new RegExp(`again on their own: npm test -- ${relative(ROOT, caller).replaceAll('.', '\\.')}\\n`));
    assert.match(run.stdout, /ℹ tests 5\nℹ suites 1\nℹ pass 4\nℹ fail 1\n/);
  });
});

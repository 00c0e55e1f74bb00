/**
 * Set up once for a whole `npm test` run, by test/run.ts before its shards start (or by
 * `node --test --test-global-setup` for a run of the runner's own): what is set in
 * `process.env` here reaches every test process and the servers and commands those start.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Node's compile cache: every test process, and every server and command the tests start in a
 * process of its own, would otherwise strip the types of the app and compile it again. The
 * cache checks each file's contents, so an edited file is compiled afresh.
 */
const COMPILE_CACHE = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'tessera-tests');

let runDirectory: string | undefined;

export function globalSetup(): void {
  process.env['NODE_COMPILE_CACHE'] ??= COMPILE_CACHE;
  runDirectory = mkdtempSync(join(tmpdir(), 'tessera-test-run-'));
  // Shared by the run's test files: the page states axe-core has checked (./accessibility.ts).
  process.env['AXE_CHECKED_STATES_DIRECTORY'] = runDirectory;
}

export function globalTeardown(): void {
  if (runDirectory) rmSync(runDirectory, { recursive: true, force: true });
}

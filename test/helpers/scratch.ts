import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

/** A directory of one describe block's own, with the database the `tessera` command is pointed at. */
export interface Scratch {
  /** The directory (set once the block's hooks have run). */
  readonly dir: string;
  /** The SQLite file in it the commands share (`file` of `scratchDatabase`). */
  readonly database: string;
  /** TESSERA_DATABASE naming it, and the `extra` settings: the same object throughout, filled in before the tests. */
  readonly env: Record<string, string>;
}

/**
 * A scratch directory for the describe block that calls this: made before its tests, removed
 * after them, with `env` for the `tessera` command on a database in it. Hooks the caller
 * registers after this call see it made.
 */
export function scratchDatabase(prefix: string, extra: Readonly<Record<string, string>> = {}, file = 'tessera.db'): Scratch {
  const scratch = { dir: '', database: '', env: {} as Record<string, string> };
  before(() => {
    scratch.dir = mkdtempSync(join(tmpdir(), prefix));
    scratch.database = join(scratch.dir, file);
    Object.assign(scratch.env, { TESSERA_DATABASE: scratch.database, ...extra });
  });
  after(() => rmSync(scratch.dir, { recursive: true, force: true }));
  return scratch;
}

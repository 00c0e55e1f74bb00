/**
 * `tessera backup FILE` (docs/deployment.md, Backups): SQLite's online backup of the database,
 * into a new file that is the owner's alone, as the database is.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runTessera } from './helpers/cli.ts';
import { scratchDatabase } from './helpers/scratch.ts';

describe('tessera backup', () => {
  const scratch = scratchDatabase('tessera-backup-');
  // The usual umask, under which a file SQLite creates itself is readable by everyone.
  let umask: number;
  before(async () => {
    umask = process.umask(0o022);
    const added = await runTessera(['user', 'add', '--username', 'alice', '--password-stdin'], scratch.env, 'a long password\n');
    assert.equal(added.code, 0, added.stderr);
  });
  after(() => process.umask(umask));

  it('writes a copy that opens as the database, readable and writable by its owner only (mode 0600)', async () => {
    const out = join(scratch.dir, 'copy.db');
    const backedUp = await runTessera(['backup', out], scratch.env);
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.equal((statSync(out).mode & 0o777).toString(8), '600', 'it holds password hashes and the encrypted signing keys');
    const users = await runTessera(['user', 'list', '--json'], { TESSERA_DATABASE: out });
    assert.equal(users.code, 0, users.stderr);
    assert.deepEqual(
      (JSON.parse(users.stdout) as { username: string }[]).map((user) => user.username),
      ['alice'],
    );
  });

  it('refuses a file that exists, and leaves it as it was', async () => {
    const out = join(scratch.dir, 'kept.txt');
    writeFileSync(out, 'not a backup');
    const refused = await runTessera(['backup', out], scratch.env);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /kept\.txt exists already: name a new file/);
    assert.equal(readFileSync(out, 'utf8'), 'not a backup');
  });
});

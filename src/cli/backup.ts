/**
 * `tessera backup FILE`: SQLite's online backup of the configured database, safe while the
 * server runs (docs/deployment.md, Backups). It replaces a `node -e "require('node:sqlite')…"`
 * line that failed with a stack trace on a Node.js without node:sqlite; this runs
 * behind the entry points' version check.
 */
import { closeSync, openSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/index.ts';
import { inspectDatabase } from '../main.ts';
import { parseDatabase } from '../store/open.ts';
import { parse, UsageError, type Io } from './common.ts';

export async function backupCommand(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const target = resolve(positionals[0]!);
  const location = parseDatabase(config.database);
  if (location.kind === 'postgres') throw new UsageError('backup copies an SQLite database; back PostgreSQL up with pg_dump (docs/deployment.md, Backups)');
  if (location.path === ':memory:') throw new UsageError('an in-memory database has nothing to back up');
  if (inspectDatabase(config).created) throw new UsageError(`${location.path} does not exist: there is nothing to back up`);
  const { DatabaseSync, backup } = await import('node:sqlite');
  const source = new DatabaseSync(resolve(location.path), { readOnly: true });
  try {
    // The copy holds what the database does (password and secret hashes, the encrypted keys,
    // second-factor secrets): the owner's alone, as the database is (store/sqlite/store.ts).
    // SQLite would create it as the umask says, readable by all; created here first, 0600, and
    // exclusively, so that an existing file is never overwritten.
    try {
      closeSync(openSync(target, 'wx', 0o600));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new UsageError(`${target} exists already: name a new file`);
      throw error;
    }
    // A backup that failed leaves no file behind that would refuse the next try as existing.
    await backup(source, target).catch((error: unknown) => {
      rmSync(target, { force: true });
      throw error;
    });
  } finally {
    source.close();
  }
  io.stdout(
    `Backed up ${resolve(location.path)} to ${target}. Keep the key its signing keys are encrypted under with it, apart: ${config.keyEncryption.keys.length > 0 ? 'TESSERA_KEY_ENCRYPTION_KEY' : (config.keyEncryption.file ?? 'the key file')}.\n`,
  );
}

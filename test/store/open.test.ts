import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { openStore, parseDatabase } from '../../src/store/open.ts';
import { MissingReferenceError } from '../../src/store/types.ts';
import { codeGrant } from './fixtures.ts';

describe('the database setting', () => {
  it('names PostgreSQL with a postgres:// or postgresql:// URL', () => {
    for (const url of ['postgres://tessera:secret@db.internal:5432/tessera', 'postgresql://db/tessera?sslmode=require']) {
      assert.deepEqual(parseDatabase(url), { kind: 'postgres', url });
    }
  });

  it('takes schema=NAME out of a postgres:// URL for Tessera, leaving the rest for the driver', () => {
    assert.deepEqual(parseDatabase('postgres://tessera@db.internal/tessera?schema=auth'), {
      kind: 'postgres',
      url: 'postgres://tessera@db.internal/tessera',
      schema: 'auth',
    });
    assert.deepEqual(parseDatabase('postgres://tessera@/tessera?host=/run/postgresql&schema=auth&sslmode=verify-full'), {
      kind: 'postgres',
      url: 'postgres://tessera@/tessera?host=%2Frun%2Fpostgresql&sslmode=verify-full',
      schema: 'auth',
    });
  });

  it('refuses a postgres:// URL that names two schemas', () => {
    assert.throws(() => parseDatabase('postgres://db/tessera?schema=a&schema=b'), /more than one schema/);
  });

  it('names an SQLite file with sqlite:PATH, a file: URL or path, or a plain path', () => {
    assert.deepEqual(parseDatabase('sqlite:data/tessera.db'), { kind: 'sqlite', path: 'data/tessera.db' });
    assert.deepEqual(parseDatabase('sqlite:/var/lib/tessera/tessera.db'), { kind: 'sqlite', path: '/var/lib/tessera/tessera.db' });
    assert.deepEqual(parseDatabase('file:data/tessera.db'), { kind: 'sqlite', path: 'data/tessera.db' });
    assert.deepEqual(parseDatabase('file:///var/lib/tessera/my%20db.sqlite'), { kind: 'sqlite', path: '/var/lib/tessera/my db.sqlite' });
    assert.deepEqual(parseDatabase('./data/tessera.db'), { kind: 'sqlite', path: './data/tessera.db' });
  });

  it('names an in-memory SQLite database with :memory: or sqlite::memory:', () => {
    assert.deepEqual(parseDatabase(':memory:'), { kind: 'sqlite', path: ':memory:' });
    assert.deepEqual(parseDatabase('sqlite::memory:'), { kind: 'sqlite', path: ':memory:' });
  });

  it('refuses a setting with no path', () => {
    assert.throws(() => parseDatabase('sqlite:'), /no SQLite path/);
  });

  it('opens a working in-memory store', async () => {
    const store = await openStore(':memory:');
    try {
      assert.deepEqual(await store.rateLimits.hit('key', 1000, 0), { hits: 1, endsAt: 1000 });
    } finally {
      await store.close();
    }
  });

  it('opens each in-memory store empty and migrated, however many came before it in the process', async () => {
    // The second and later start from a copy of the first's migrated schema (sqlite/store.ts).
    const first = await openStore(':memory:');
    const second = await openStore(':memory:');
    const third = await openStore(':memory:');
    try {
      await first.rateLimits.hit('key', 1000, 0);
      await second.rateLimits.hit('key', 1000, 0);
      assert.deepEqual(await second.rateLimits.hit('key', 1000, 0), { hits: 2, endsAt: 1000 });
      assert.deepEqual(await third.rateLimits.hit('key', 1000, 0), { hits: 1, endsAt: 1000 });
      // The foreign keys hold in a copy as in a migrated one: a grant needs its client.
      await assert.rejects(third.grants.create(codeGrant('grant-1', 'no-such-client', 'no-such-user')), MissingReferenceError);
    } finally {
      await Promise.all([first.close(), second.close(), third.close()]);
    }
  });

  it('opens an SQLite file from a file: URL, creating its directory', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-store-'));
    try {
      const path = join(dir, 'nested', 'tessera.db');
      const store = await openStore(pathToFileURL(path).href);
      await store.close();
      assert.ok(statSync(path).isFile());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

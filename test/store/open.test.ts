import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { openStore, parseDatabase } from '../../src/store/open.ts';

describe('the database setting', () => {
  it('names PostgreSQL with a postgres:// or postgresql:// URL', () => {
    for (const url of ['postgres://tessera:secret@db.internal:5432/tessera', 'postgresql://db/tessera?sslmode=require']) {
      assert.deepEqual(parseDatabase(url), { kind: 'postgres', url });
    }
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
      assert.equal(await store.rateLimits.hit('key', 1000, 0), 1);
    } finally {
      await store.close();
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

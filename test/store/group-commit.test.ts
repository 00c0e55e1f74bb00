import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { GroupCommit, RolledBackError } from '../../src/store/sqlite/group-commit.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { DuplicateError } from '../../src/store/types.ts';
import { deviceClient } from './fixtures.ts';

describe('SQLite group commit', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-group-commit-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('answers each write of a round only once another process could read it', async () => {
    const path = join(dir, 'visible.db');
    const store = openSqliteStore(path);
    // Another connection sees only what is committed, as another process would.
    const observer = new DatabaseSync(path);
    const committed = observer.prepare('SELECT count(*) AS n FROM clients WHERE id = ?');
    try {
      const seenWhenAnswered = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.clients.create(deviceClient(`c${i}`)).then(() => (committed.get(`c${i}`) as { n: number }).n)),
      );
      assert.deepEqual(seenWhenAnswered, Array(20).fill(1));
    } finally {
      observer.close();
      await store.close();
    }
  });

  it('leaves the write lock free while a round is open, holding it only to commit', async () => {
    const path = join(dir, 'lock-free.db');
    const store = openSqliteStore(path);
    // Another process's connection, which must not wait: a worker serving the same file.
    const other = new DatabaseSync(path, { timeout: 0 });
    try {
      const written = store.clients.create(deviceClient('queued'));
      // The round is still open (its writes are answered at its end), yet the other
      // connection takes the lock at once and commits.
      other.exec('BEGIN IMMEDIATE');
      other.exec('COMMIT');
      await written;
      assert.ok(await store.clients.get('queued'));
    } finally {
      other.close();
      await store.close();
    }
  });

  it('keeps the event loop serving while another connection holds the write lock, and commits once it is free', async () => {
    const path = join(dir, 'lock-held.db');
    const store = openSqliteStore(path);
    const other = new DatabaseSync(path);
    try {
      other.exec('BEGIN IMMEDIATE');
      const written = store.clients.create(deviceClient('after-the-lock'));
      // A timer of this same event loop fires on time while the write waits: nothing sleeps
      // in SQLite's busy handler (which, here, would wait for a lock only this loop can free).
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.ok(performance.now() - started < 1000, `a 50 ms timer fired after ${Math.round(performance.now() - started)} ms`);
      other.exec('COMMIT');
      await written;
      assert.ok(await store.clients.get('after-the-lock'));
    } finally {
      other.close();
      await store.close();
    }
  });

  it('fails only the call whose statement failed, and commits the rest of its round', async () => {
    const path = join(dir, 'partial.db');
    const store = openSqliteStore(path);
    try {
      await store.clients.create(deviceClient('taken'));
      const results = await Promise.allSettled([
        store.clients.create(deviceClient('first')),
        store.clients.create(deviceClient('taken')),
        store.clients.create(deviceClient('second')),
      ]);
      assert.deepEqual(
        results.map((result) => result.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      assert.ok((results[1] as PromiseRejectedResult).reason instanceof DuplicateError);
    } finally {
      await store.close();
    }
    const reopened = openSqliteStore(path);
    try {
      assert.deepEqual((await reopened.clients.list()).map((record) => record.id).sort(), ['first', 'second', 'taken']);
    } finally {
      await reopened.close();
    }
  });

  it('answers a transaction once both its writes are committed, and commits neither while it is open', async () => {
    const path = join(dir, 'transaction.db');
    const store = openSqliteStore(path);
    const observer = new DatabaseSync(path);
    const committed = (id: string) => (observer.prepare('SELECT count(*) AS n FROM clients WHERE id = ?').get(id) as { n: number }).n;
    try {
      const before = store.clients.create(deviceClient('before'));
      await store.transaction(async (tx) => {
        await tx.clients.create(deviceClient('tx-a'));
        // The round ends here (the work should not wait for anything but its store calls,
        // but if it does the batch must still wait for it).
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(committed('tx-a'), 0, 'nothing of the transaction is committed while it is open');
        await tx.clients.create(deviceClient('tx-b'));
      });
      await before;
      assert.deepEqual([committed('before'), committed('tx-a'), committed('tx-b')], [1, 1, 1]);

      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.clients.create(deviceClient('abandoned'));
          await new Promise((resolve) => setImmediate(resolve));
          throw new Error('abandoned');
        }),
        /abandoned/,
      );
      assert.equal(committed('abandoned'), 0);
      assert.equal(await store.clients.get('abandoned'), null);
    } finally {
      observer.close();
      await store.close();
    }
  });

  it('rolls back a transaction that a failure ended, with the writes queued before it, and then runs those that waited for it', async () => {
    const db = new DatabaseSync(join(dir, 'transaction-rolled-back.db'));
    db.exec('CREATE TABLE t (v INTEGER)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const batch = new GroupCommit(db);
    const write = (v: number) => batch.outside(() => batch.write(() => insert.run(v)));
    try {
      const queued = write(1);
      let waiting: Promise<unknown> | undefined;
      const transaction = batch.transaction(async () => {
        await batch.inside(() => insert.run(2));
        waiting = write(3);
        await batch.inside(() => {
          db.exec('ROLLBACK');
          throw new Error('disk I/O error');
        });
      });
      // As for any call: the one whose statement failed gets its own error, the others the rollback.
      await assert.rejects(transaction, /disk I\/O error/);
      await assert.rejects(queued, RolledBackError);
      // The write that waited for the transaction was never part of it.
      await waiting;
      assert.deepEqual(
        db
          .prepare('SELECT v FROM t')
          .all()
          .map((row) => row['v']),
        [3],
      );
    } finally {
      db.close();
    }
  });

  it('fails every write of a round whose transaction a failure ended, and keeps none of them', async () => {
    const db = new DatabaseSync(join(dir, 'rolled-back.db'));
    db.exec('CREATE TABLE t (v INTEGER)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const batch = new GroupCommit(db);
    try {
      const first = batch.write(() => insert.run(1));
      // As SQLite does on an I/O error or a full disk: the statement fails and the
      // transaction with it.
      const second = batch.write(() => {
        db.exec('ROLLBACK');
        throw new Error('disk I/O error');
      });
      await assert.rejects(first, RolledBackError);
      await assert.rejects(second, /disk I\/O error/);
      assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0);
      // The next round starts afresh.
      await batch.write(() => insert.run(3));
      assert.deepEqual(
        db
          .prepare('SELECT v FROM t')
          .all()
          .map((row) => row['v']),
        [3],
      );
    } finally {
      db.close();
    }
  });
});

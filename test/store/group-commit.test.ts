import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { GroupCommit, RolledBackError } from '../../src/store/sqlite/group-commit.ts';
import { openSqliteStore } from '../../src/store/sqlite/store.ts';
import { DuplicateError, type Store } from '../../src/store/types.ts';
import { deviceClient } from './fixtures.ts';

describe('SQLite group commit', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-group-commit-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * Runs `body` with a store on a new file `name` and a second connection to that file, as
   * another process would open it (`options`: its busy timeout); closes both after it.
   */
  async function withTwoConnections(name: string, options: { timeout?: number }, body: (store: Store, other: DatabaseSync) => Promise<void>): Promise<void> {
    const path = join(dir, name);
    const store = openSqliteStore(path);
    const other = new DatabaseSync(path, options);
    try {
      await body(store, other);
    } finally {
      other.close();
      await store.close();
    }
  }

  /** Runs `body` with a bare database on a new file `name`, its table t (v), an insert into it and a GroupCommit over it; closes it after. */
  async function withBatch(name: string, body: (db: DatabaseSync, insert: StatementSync, batch: GroupCommit) => Promise<void>): Promise<void> {
    const db = new DatabaseSync(join(dir, name));
    try {
      db.exec('CREATE TABLE t (v INTEGER)');
      await body(db, db.prepare('INSERT INTO t (v) VALUES (?)'), new GroupCommit(db));
    } finally {
      db.close();
    }
  }

  /** The values in t, in the order stored. */
  const valuesOf = (db: DatabaseSync) =>
    db
      .prepare('SELECT v FROM t')
      .all()
      .map((row) => row['v']);

  it('answers each write of a round only once another process could read it', async () => {
    // Another connection sees only what is committed, as another process would.
    await withTwoConnections('visible.db', {}, async (store, observer) => {
      const committed = observer.prepare('SELECT count(*) AS n FROM clients WHERE id = ?');
      const seenWhenAnswered = await Promise.all(
        Array.from({ length: 20 }, (_, i) => store.clients.create(deviceClient(`c${i}`)).then(() => (committed.get(`c${i}`) as { n: number }).n)),
      );
      assert.deepEqual(seenWhenAnswered, Array(20).fill(1));
    });
  });

  it('leaves the write lock free while a round is open, holding it only to commit', async () => {
    // Another process's connection, which must not wait: a worker serving the same file.
    await withTwoConnections('lock-free.db', { timeout: 0 }, async (store, other) => {
      const written = store.clients.create(deviceClient('queued'));
      // The round is still open (its writes are answered at its end), yet the other
      // connection takes the lock at once and commits.
      other.exec('BEGIN IMMEDIATE');
      other.exec('COMMIT');
      await written;
      assert.ok(await store.clients.get('queued'));
    });
  });

  it('keeps the event loop serving while another connection holds the write lock, and commits once it is free', async () => {
    await withTwoConnections('lock-held.db', {}, async (store, other) => {
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
    });
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
    await withTwoConnections('transaction.db', {}, async (store, observer) => {
      const committed = (id: string) => (observer.prepare('SELECT count(*) AS n FROM clients WHERE id = ?').get(id) as { n: number }).n;
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
    });
  });

  it('rolls back a transaction that a failure ended, with the writes queued before it, and then runs those that waited for it', async () => {
    await withBatch('transaction-rolled-back.db', async (db, insert, batch) => {
      const write = (v: number) => batch.outside(() => batch.write(() => insert.run(v)));
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
      assert.deepEqual(valuesOf(db), [3]);
    });
  });

  it('fails every write of a round whose transaction a failure ended, and keeps none of them', async () => {
    await withBatch('rolled-back.db', async (db, insert, batch) => {
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
      assert.deepEqual(valuesOf(db), [3]);
    });
  });
});

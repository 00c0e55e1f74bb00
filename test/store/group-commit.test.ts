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
      assert.deepEqual(results.map((result) => result.status), ['fulfilled', 'rejected', 'fulfilled']);
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

  it('runs none of the calls that waited for a transaction whose round a failure ended', async () => {
    const db = new DatabaseSync(join(dir, 'transaction-rolled-back.db'));
    db.exec('CREATE TABLE t (v INTEGER)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const batch = new GroupCommit(db);
    const write = (v: number) => batch.settle(batch.outside(() => batch.run(insert, () => insert.run(v))));
    try {
      let waiting: Promise<unknown> | undefined;
      const transaction = batch.settle(
        batch.outside(() =>
          batch.transaction(async () => {
            batch.run(insert, () => insert.run(1));
            waiting = write(2);
            batch.run(insert, () => {
              db.exec('ROLLBACK');
              throw new Error('disk I/O error');
            });
          }),
        ),
      );
      // As for any call: the one whose statement failed gets its own error, the others the rollback.
      await assert.rejects(transaction, /disk I\/O error/);
      await assert.rejects(waiting!, RolledBackError);
      assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0);
      await write(3);
      assert.deepEqual(db.prepare('SELECT v FROM t').all().map((row) => row['v']), [3]);
    } finally {
      db.close();
    }
  });

  it('fails every call of a round whose transaction a failure ended, and keeps none of its writes', async () => {
    const db = new DatabaseSync(join(dir, 'rolled-back.db'));
    db.exec('CREATE TABLE t (v INTEGER)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const batch = new GroupCommit(db);
    try {
      const first = batch.settle(Promise.resolve(batch.run(insert, () => insert.run(1))));
      // As SQLite does on an I/O error or a full disk: the statement fails and the
      // transaction with it.
      const second = batch.settle(
        (async () =>
          batch.run(insert, () => {
            db.exec('ROLLBACK');
            throw new Error('disk I/O error');
          }))(),
      );
      await assert.rejects(first, RolledBackError);
      await assert.rejects(second, /disk I\/O error/);
      assert.equal((db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n, 0);
      // The next round starts afresh.
      await batch.settle(Promise.resolve(batch.run(insert, () => insert.run(3))));
      assert.deepEqual(db.prepare('SELECT v FROM t').all().map((row) => row['v']), [3]);
    } finally {
      db.close();
    }
  });
});

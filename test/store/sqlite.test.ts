import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { MessageChannel, Worker } from 'node:worker_threads';
import { EVENT_TYPES } from '../../src/core/events.ts';
import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import { SSF_SOURCE_TYPES } from '../../src/core/ssf.ts';
import { webhookTypeOf } from '../../src/core/webhook-events.ts';
import { migrations } from '../../src/store/migrations.ts';
import { listEventsQuery } from '../../src/store/sql/events.ts';
import { composeSearch, groupSearchTable, userSearchTable } from '../../src/store/sql/scim-search.ts';
import { statements } from '../../src/store/sql/statements.ts';
import { migrateSqlite } from '../../src/store/sqlite/migrate.ts';
import { openSqliteStore, openSqliteThreadStore, openSqliteWriter, sqliteDialect } from '../../src/store/sqlite/store.ts';
import { MissingReferenceError, newUserRecord, type Store } from '../../src/store/types.ts';
import { storeContract } from './contract.ts';
import { checkUniqueEmailsUpgrade } from './unique-emails.ts';
import { BEFORE_OUTBOX_CURSORS, checkOutboxCursorsUpgrade } from './outbox-upgrade.ts';
import { checkSelfAssertedEmailsUpgrade } from './self-asserted-emails.ts';
import { deviceClient, pendingCode, pendingDevice } from './fixtures.ts';
import type { WorkerResult, WorkerTask } from './sqlite-worker.ts';
import { within } from '../helpers/wait.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

storeContract('SQLite store', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-store-'));
  // A parent directory that does not exist yet: opening creates it.
  const store = openSqliteStore(join(dir, 'data', 'tessera.db'));
  return {
    store,
    async cleanup() {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

/**
 * The writer of `path` and a worker thread's store writing through it (TESSERA_WORKERS on
 * SQLite): the thread reads on its own connection and sends every write, redemption and
 * transaction over a MessagePort, here both ends in this thread.
 */
function writerAndThread(path: string) {
  const writer = openSqliteWriter(path);
  const { port1, port2 } = new MessageChannel();
  const forget = writer.accept(port1);
  const thread = openSqliteThreadStore(path, port2);
  return {
    writer,
    thread,
    async close() {
      await thread.close();
      forget();
      await writer.store.close();
    },
  };
}

storeContract('SQLite store of a worker thread, writing through the writer', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-store-thread-'));
  const { thread, close } = writerAndThread(join(dir, 'tessera.db'));
  return {
    store: thread,
    async cleanup() {
      await close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

/** What a code and a device record need: a client, a user and a grant. */
async function seed(store: Store, id: string) {
  const client = deviceClient(`client-${id}`, T0);
  const user = newUserRecord({ id: `user-${id}`, username: `${id}@example.com`, passwordHash: '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA', createdAt: T0 });
  const grant = {
    id: `grant-${id}`,
    userId: user.id,
    clientId: client.id,
    scope: ['openid'],
    kind: GRANT_DEVICE_CODE,
    authTime: T0,
    createdAt: T0,
    revokedAt: null,
    device: { ip: '203.0.113.7', userAgent: 'TV/1.0', requestedAt: T0 },
    remembered: false,
    renewedAt: null,
    lastUsedAt: null,
    activeUntil: null,
  } as const;
  const code = pendingCode(`code-${id}`, grant);
  const device = pendingDevice(client.id, {
    deviceCodeHash: `device-${id}`,
    userCode: `WDJB${id.slice(0, 4).toUpperCase().padEnd(4, 'X')}`,
    requestUserAgent: 'TV/1.0',
  });
  await store.clients.create(client);
  await store.users.create(user);
  await store.grants.create(grant);
  await store.codes.create(code);
  assert.equal(await store.devices.create(device), true);
  const approval = { approve: true, userId: user.id, authTime: T0, grantId: grant.id } as const;
  return { client, user, grant, code, device, approval };
}

describe('SQLite file shared by restarts, processes and threads', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-store-'));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the file in WAL mode and records each migration once across reopenings', async () => {
    const path = join(dir, 'migrations.db');
    await openSqliteStore(path).close();
    await openSqliteStore(path).close();
    const db = new DatabaseSync(path);
    try {
      assert.equal(db.prepare('PRAGMA journal_mode').get()?.['journal_mode'], 'wal');
      const versions = db
        .prepare('SELECT version FROM schema_migrations ORDER BY version')
        .all()
        .map((row) => row['version']);
      assert.deepEqual(
        versions,
        migrations.map((migration) => migration.version),
      );
    } finally {
      db.close();
    }
  });

  it('opens a database already up to date while another connection holds the write lock, as a busy server does between commits', async () => {
    const path = join(dir, 'locked.db');
    await openSqliteStore(path).close();
    const server = new DatabaseSync(path);
    server.exec('BEGIN IMMEDIATE');
    try {
      // Taking the lock to read the versions would wait busy_timeout (5 s) and fail: "database is locked".
      await openSqliteStore(path).close();
    } finally {
      server.exec('ROLLBACK');
      server.close();
    }
  });

  it('prepares every statement against the migrated schema (the store prepares each at its first use)', async () => {
    const path = join(dir, 'statements.db');
    await openSqliteStore(path).close();
    const db = new DatabaseSync(path);
    try {
      for (const [name, sql] of Object.entries(statements(sqliteDialect))) assert.doesNotThrow(() => db.prepare(sql), `statement ${name}`);
    } finally {
      db.close();
    }
  });

  /** Runs statements on the database file at `path` as they stand, as an older version left it (the upgrade tests). */
  const execAt = (path: string) => async (statements: readonly string[]) => {
    const db = new DatabaseSync(path);
    try {
      for (const statement of statements) db.exec(statement);
    } finally {
      db.close();
    }
  };

  it('upgrades accounts that share an e-mail address: one keeps it, the others are listed without it', async () => {
    const path = join(dir, 'unique-emails.db');
    await checkUniqueEmailsUpgrade(async () => openSqliteStore(path), execAt(path));
  });

  it('marks as self-asserted, on upgrading, the unverified addresses that sign-up took and nothing verified or replaced since', async () => {
    const path = join(dir, 'self-asserted-emails.db');
    await checkSelfAssertedEmailsUpgrade(async () => openSqliteStore(path), execAt(path));
  });

  it("keeps the deliveries the triggers wrote across the upgrade to the outbox's cursors, and sends the pending ones first, each once", async () => {
    const path = join(dir, 'outbox-cursors.db');
    const exec = async (statements: readonly string[]) => {
      const db = new DatabaseSync(path);
      try {
        for (const statement of statements) db.exec(statement);
      } finally {
        db.close();
      }
    };
    await checkOutboxCursorsUpgrade(
      async () => {
        const db = new DatabaseSync(path);
        try {
          migrateSqlite(db, BEFORE_OUTBOX_CURSORS);
        } finally {
          db.close();
        }
      },
      exec,
      (values) => `'${JSON.stringify(values)}'`,
      async () => openSqliteStore(path),
    );
  });

  it('names the ACS URLs of an SP registered before migration 53 by their position, as they were, until its indexes are written', async () => {
    const path = join(dir, 'saml-acs-indexes.db');
    const db = new DatabaseSync(path);
    try {
      migrateSqlite(
        db,
        migrations.filter((migration) => migration.version < 53),
      );
      db.exec(`INSERT INTO saml_service_providers (id, entity_id, acs_urls, name_id_format, attributes, want_signed_requests, sign_response, name_id_salt, created_at, updated_at)
        VALUES ('sp-before', 'https://before.example/saml', '["https://before.example/acs","https://before.example/acs-2"]', 'persistent', '{}', 0, 0, 'salt', 1, 1)`);
    } finally {
      db.close();
    }
    const store = openSqliteStore(path);
    try {
      const sp = await store.samlServiceProviders.get('sp-before');
      assert.deepEqual(sp?.acsIndexes, { '0': 'https://before.example/acs', '1': 'https://before.example/acs-2' });
      await store.samlServiceProviders.update({ ...sp!, acsIndexes: { '3': 'https://before.example/acs-2' } });
      assert.deepEqual((await store.samlServiceProviders.get('sp-before'))?.acsIndexes, { '3': 'https://before.example/acs-2' });
    } finally {
      await store.close();
    }
  });

  /** Asks SQLite's planner, on a freshly migrated file, whether each read goes through the index named with it. */
  async function assertReadsThroughIndexes(file: string, reads: readonly (readonly [string, string, Record<string, unknown>, string])[]): Promise<void> {
    const path = join(dir, file);
    await openSqliteStore(path).close();
    const db = new DatabaseSync(path);
    try {
      for (const [label, sql, params, index] of reads) {
        const plan = db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(params as Record<string, string | number>)
          .map((row) => String(row['detail']));
        assert.ok(
          plan.some((step) => step.includes(`USING INDEX ${index}`)),
          `${label}: ${plan.join('; ')}`,
        );
      }
    } finally {
      db.close();
    }
  }

  it("reads a person's and an app's audit trail through their indexes, not the whole trail in time order", async () => {
    const listings = [
      [{ userId: 'u', limit: 20 }, 'events_user_id_at'],
      [{ userId: 'u', type: 'signin.succeeded', limit: 1 }, 'events_user_id_at'],
      [{ userId: 'u', limit: 20, before: { at: T0, id: 'e' } }, 'events_user_id_at'],
      [{ clientId: 'c', since: T0, limit: 20 }, 'events_client_id_at'],
      // An operator's listing of a person: their id or the username an event names alone, each through its index.
      [{ userId: 'u', username: 'ada', limit: 20 }, 'events_user_id_at'],
      [{ userId: 'u', username: 'ada', limit: 20 }, 'events_username_at'],
      [{ username: 'ada', limit: 1000 }, 'events_username_at'],
    ] as const;
    await assertReadsThroughIndexes(
      'event-plans.db',
      listings.map(([filter, index]) => {
        const { sql, params } = listEventsQuery(filter);
        return [JSON.stringify(filter), sql, params, index] as const;
      }),
    );
  });

  it('writes an outbox row for each event a webhook or a Shared Signals stream is told of, and none for the others (the trigger of migration 55)', async () => {
    const path = join(dir, 'outbox-trigger.db');
    const store = openSqliteStore(path);
    const db = new DatabaseSync(path);
    try {
      for (const [index, type] of EVENT_TYPES.entries()) {
        const id = `event-${index}`;
        await store.events.add({ id, type, at: T0, userId: null, username: null, clientId: null, grantId: null, ip: null, userAgent: null, detail: {} });
        const row = db.prepare('SELECT webhook_type FROM outbox_events WHERE event_id = ?').get(id);
        const told = webhookTypeOf(type) !== null || SSF_SOURCE_TYPES.includes(type);
        assert.equal(row !== undefined, told, `${type}: ${told ? 'no outbox row' : 'an outbox row'}`);
        if (row !== undefined) assert.equal(row['webhook_type'], webhookTypeOf(type), `${type}: its webhook type`);
      }
    } finally {
      db.close();
      await store.close();
    }
  });

  it("answers a provisioning system's lookups (userName, externalId, a group's displayName) through an index, not a scan", async () => {
    const lookups = [
      [userSearchTable(sqliteDialect), 'userName', 'users_username_lower'],
      [userSearchTable(sqliteDialect), 'externalId', 'scim_users_external_id'],
      [groupSearchTable(), 'displayName', 'user_groups_name'],
    ] as const;
    await assertReadsThroughIndexes(
      'scim-plans.db',
      lookups.map(([table, field, index]) => {
        const { page, params } = composeSearch<string>(sqliteDialect, table as never, {
          where: { kind: 'compare', field, op: 'eq', value: 'x' },
          sortBy: null,
          descending: false,
          offset: 0,
          limit: 10,
        });
        return [field, page, params, index] as const;
      }),
    );
  });

  it('refuses a database that a newer version has migrated', async () => {
    const path = join(dir, 'newer.db');
    await openSqliteStore(path).close();
    const db = new DatabaseSync(path);
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(9999, 'future', T0);
    db.close();
    assert.throws(() => openSqliteStore(path), /does not know \(9999\)/);
  });

  it('enforces foreign keys: a code for an unknown client is refused', async () => {
    const store = openSqliteStore(join(dir, 'foreign-keys.db'));
    try {
      const { code } = await seed(store, 'fk');
      await assert.rejects(store.codes.create({ ...code, hash: 'code-orphan', clientId: 'no-such-client' }), MissingReferenceError);
    } finally {
      await store.close();
    }
  });

  it('keeps an approved device grant approved across a restart', async () => {
    const path = join(dir, 'restart.db');
    const before = openSqliteStore(path);
    const { grant, device, approval } = await seed(before, 'restart');
    const approved = await before.devices.decide(device, approval, T0 + MINUTE);
    await before.close();

    const after = openSqliteStore(path);
    try {
      assert.deepEqual(await after.devices.findByUserCode(device.userCode, T0 + MINUTE), approved);
      assert.deepEqual(await after.grants.get(grant.id), grant);
      assert.equal((await after.devices.poll(device.deviceCodeHash, device.clientId, T0 + 2 * MINUTE))?.outcome, 'issue');
    } finally {
      await after.close();
    }
  });

  it("lets two connections on one file see each other's writes and redeem a code only once between them", async () => {
    const path = join(dir, 'two-connections.db');
    const [a, b] = [openSqliteStore(path), openSqliteStore(path)];
    try {
      const { client, code, device, approval } = await seed(a, 'two');
      assert.deepEqual(await b.clients.get(client.id), { ...client, version: 1, tokensRevokedAt: null });
      assert.ok(await b.devices.decide(device, approval, T0 + MINUTE));
      assert.equal((await a.devices.findByUserCode(device.userCode, T0 + MINUTE))?.status, 'approved');

      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).codes.consume(code.hash, code, T0 + 1)));
      assert.equal(results.filter((result) => result !== null).length, 1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('reads a code and a refresh token with their grant and user in one statement, still right after another connection added a column to the grants', async () => {
    const path = join(dir, 'joined.db');
    const store = openSqliteStore(path);
    try {
      const { code, grant, user } = await seed(store, 'joined');
      const token = {
        hash: 'refresh-joined',
        grantId: grant.id,
        clientId: grant.clientId,
        userId: user.id,
        scope: ['openid', 'offline_access'],
        authTime: T0,
        sid: null,
        createdAt: T0,
        expiresAt: T0 + 60 * MINUTE,
        rotatedAt: null,
        dpopJkt: null,
        idTokenClaims: [],
      };
      await store.refreshTokens.create(token);
      const before = { code: await store.codes.findForExchange(code.hash), token: await store.refreshTokens.findForRefresh(token.hash) };
      assert.deepEqual(before.code, { code, grant: await store.grants.get(grant.id), user: await store.users.get(user.id) });
      assert.deepEqual(before.token?.user, before.code?.user);
      // `SELECT *` of the joined read is expanded again when SQLite re-prepares it: the users'
      // columns now come one place later in the row than when it was first prepared.
      const other = new DatabaseSync(path);
      other.exec("ALTER TABLE grants ADD COLUMN added_by_a_later_version TEXT NOT NULL DEFAULT 'x'");
      other.close();
      assert.deepEqual(await store.codes.findForExchange(code.hash), before.code);
      assert.deepEqual(await store.refreshTokens.findForRefresh(token.hash), before.token);
    } finally {
      await store.close();
    }
  });

  it('reads a client again once it changed, whichever connection changed it, though it keeps the records it read', async () => {
    const path = join(dir, 'client-records.db');
    const [a, b] = [openSqliteStore(path), openSqliteStore(path)];
    try {
      const client = deviceClient('kept-client');
      await a.clients.create(client);
      const { id: _id, createdAt: _createdAt, version: _version, tokensRevokedAt: _revoked, ...fields } = (await a.clients.get(client.id))!;
      assert.equal((await a.clients.get(client.id))?.name, 'TV App');
      // Another connection (a worker, the command line) changes it: the next read sees it.
      await b.clients.update(client.id, { ...fields, name: 'Renamed elsewhere' });
      assert.equal((await a.clients.get(client.id))?.name, 'Renamed elsewhere');
      // This connection changes it, alone and in a transaction.
      await a.clients.update(client.id, { ...fields, name: 'Renamed here' });
      assert.equal((await a.clients.get(client.id))?.name, 'Renamed here');
      await a.transaction((tx) => tx.clients.update(client.id, { ...fields, name: 'Renamed in a transaction' }).then(() => undefined));
      assert.equal((await a.clients.get(client.id))?.name, 'Renamed in a transaction');
      assert.ok(await a.clients.revokeTokens(client.id, T0));
      assert.equal((await a.clients.get(client.id))?.tokensRevokedAt, T0);
      // Removed elsewhere, then here: no longer there for either.
      assert.equal((await b.clients.get(client.id))?.name, 'Renamed in a transaction');
      assert.ok(await a.clients.remove(client.id));
      assert.equal(await a.clients.get(client.id), null);
      assert.equal(await b.clients.get(client.id), null);
      const other = deviceClient('removed-elsewhere');
      await a.clients.create(other);
      assert.ok(await a.clients.get(other.id));
      assert.ok(await b.clients.remove(other.id));
      assert.equal(await a.clients.get(other.id), null);
      // A self-registered client never used, purged.
      const unused = { ...deviceClient('never-used', T0 - 2 * MINUTE), registeredBy: 'dynamic' as const };
      await a.clients.create(unused);
      assert.ok(await a.clients.get(unused.id));
      await a.purgeExpired(T0 - 10 * MINUTE, { unusedClientsBefore: T0 });
      assert.equal(await a.clients.get(unused.id), null);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("reads a client again on the writer's own connection once a worker thread changed or removed it there", async () => {
    // Below four workers the main thread serves from the writer's store: a thread's write
    // commits on that very connection, which PRAGMA data_version never reports to itself.
    const { writer, thread, close } = writerAndThread(join(dir, 'client-records-threads.db'));
    try {
      const client = deviceClient('changed-by-a-thread');
      await writer.store.clients.create(client);
      const { id: _id, createdAt: _createdAt, version: _version, tokensRevokedAt: _revoked, ...fields } = (await writer.store.clients.get(client.id))!;
      assert.equal((await writer.store.clients.get(client.id))?.name, 'TV App', 'kept');
      await thread.clients.update(client.id, { ...fields, name: 'Renamed by a thread' });
      assert.equal((await writer.store.clients.get(client.id))?.name, 'Renamed by a thread');
      assert.ok(await thread.clients.revokeTokens(client.id, T0));
      assert.equal((await writer.store.clients.get(client.id))?.tokensRevokedAt, T0);
      assert.ok(await thread.clients.remove(client.id));
      assert.equal(await writer.store.clients.get(client.id), null, 'a client removed through a thread is gone for the main thread too');
    } finally {
      await close();
    }
  });

  it('rolls back a transaction whose thread went away while it waited to begin: the writes after it still commit', async () => {
    const path = join(dir, 'gone-thread.db');
    const writer = openSqliteWriter(path);
    const first = new MessageChannel();
    const forgetFirst = writer.accept(first.port1);
    const holder = openSqliteThreadStore(path, first.port2);
    const second = new MessageChannel();
    const forgetSecond = writer.accept(second.port1);
    const leaver = openSqliteThreadStore(path, second.port2);
    try {
      // One thread holds a transaction open; another asks for one, which waits its turn behind it.
      let begun = () => {};
      const holding = new Promise<void>((resolve) => (begun = resolve));
      let end = () => {};
      const held = holder.transaction(() => {
        begun();
        return new Promise<void>((resolve) => (end = resolve));
      });
      await holding;
      const waiting = leaver
        .transaction(async () => {})
        .then(
          () => 'began',
          () => 'refused',
        );
      // Its `begin` reaches the writer (sent at the end of this thread's turn), then the thread is gone.
      await new Promise((resolve) => setTimeout(resolve, 50));
      forgetSecond();
      end();
      await held;
      assert.equal(await waiting, 'refused', 'the thread that went away is told nothing more than that its store is gone');
      // Had the second transaction begun for a thread that can no longer end it, this write would wait for ever.
      await within(writer.store.clients.create(deviceClient('client-after-gone', T0)), 'a write after the thread went away to commit', 5000);
    } finally {
      await leaver.close();
      await holder.close();
      forgetFirst();
      // Closing waits for the open transaction too: with it stuck, the failure above is the report.
      await within(writer.store.close(), 'the writer to close', 5000).catch(() => {});
    }
  });

  it('gives a code and a device grant to exactly one of 4 worker threads with connections of their own', async () => {
    const path = join(dir, 'workers.db');
    const store = openSqliteStore(path);
    const { code, device, approval } = await seed(store, 'workers');
    await store.devices.decide(device, approval, T0 + MINUTE);
    await store.close();

    const task: WorkerTask = {
      path,
      start: new Int32Array(new SharedArrayBuffer(4)),
      rounds: 25,
      code,
      device: { hash: device.deviceCodeHash, clientId: device.clientId },
      now: T0 + 2 * MINUTE,
    };
    const workers = Array.from({ length: 4 }, () => new Worker(new URL('./sqlite-worker.ts', import.meta.url), { workerData: task }));
    try {
      await Promise.all(workers.map((worker) => once(worker, 'message')));
      // Listen for the results before the start signal, so that none is missed.
      const results = Promise.all(workers.map(async (worker): Promise<WorkerResult> => (await once(worker, 'message'))[0]));
      Atomics.store(task.start, 0, 1);
      Atomics.notify(task.start, 0);
      const wins = await results;
      assert.equal(
        wins.reduce((sum, win) => sum + win.codes, 0),
        1,
      );
      assert.equal(
        wins.reduce((sum, win) => sum + win.issues, 0),
        1,
      );
    } finally {
      await Promise.all(workers.map((worker) => worker.terminate()));
    }
  });
});

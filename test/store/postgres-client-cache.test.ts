/**
 * Client records kept in memory by each PostgreSQL instance (src/store/postgres/client-cache.ts):
 * a change made through any instance, or by hand in SQL, reaches every other instance at
 * once, and an instance that cannot be sure it hears of changes reads from the database.
 */

import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import { ClientCache, listenForClientChanges } from '../../src/store/postgres/client-cache.ts';
import { openPostgresStore } from '../../src/store/postgres/store.ts';
import type { ClientRecord, Store } from '../../src/store/types.ts';
import { clientRecord } from './fixtures.ts';
import { describePostgres, dropSchema, newSchema, postgresUrl, withAdmin } from '../helpers/postgres.ts';

const client: ClientRecord = clientRecord({ id: 'tv-app', name: 'TV App', grantTypes: [GRANT_DEVICE_CODE] });

/** Polls `check` until it returns true, for at most `ms`. */
async function eventually(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describePostgres('PostgreSQL client records kept in memory', () => {
  const schema = newSchema();
  let a: Store;
  let b: Store;
  const sql = (text: string, values: unknown[] = []) =>
    withAdmin(async (admin) => {
      await admin.query(`SET search_path = ${admin.escapeIdentifier(schema)}`);
      return admin.query(text, values);
    });
  /** Renames the client with the trigger off: no instance hears of it. */
  const renameQuietly = (name: string) =>
    withAdmin(async (admin) => {
      await admin.query(`SET search_path = ${admin.escapeIdentifier(schema)}`);
      await admin.query('BEGIN');
      await admin.query('ALTER TABLE clients DISABLE TRIGGER clients_changed');
      await admin.query('UPDATE clients SET name = $1 WHERE id = $2', [name, client.id]);
      await admin.query('ALTER TABLE clients ENABLE TRIGGER clients_changed');
      await admin.query('COMMIT');
    });
  /** Instance B answers from memory: a quiet rename in the database does not reach it. */
  const servedFromMemory = async (): Promise<boolean> => {
    const before = (await b.clients.get(client.id))?.name;
    await renameQuietly(`${before}+`);
    return (await b.clients.get(client.id))?.name === before;
  };

  before(async () => {
    a = await openPostgresStore(postgresUrl, { schema });
    b = await openPostgresStore(postgresUrl, { schema });
    await a.clients.create(client);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await dropSchema(schema);
  });

  it('answers a known client from memory once it hears of changes', async () => {
    await eventually('instance B keeps the client in memory', servedFromMemory);
  });

  it('hears of a change made by hand in SQL on another connection at once', async () => {
    await eventually('instance B keeps the client in memory', servedFromMemory);
    await sql('UPDATE clients SET name = $1 WHERE id = $2', ['Renamed in SQL', client.id]);
    await eventually('instance B sees the new name', async () => (await b.clients.get(client.id))?.name === 'Renamed in SQL');
  });

  it('reads from the database once its listening connection is gone, until it hears again', async () => {
    await eventually('instance B keeps the client in memory', servedFromMemory);
    const ended = await sql(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
       WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
    );
    assert.ok(ended.rowCount !== null && ended.rowCount >= 1, 'the listening connections were found');
    await eventually('instance B reads the database after losing its listener', async () => {
      await renameQuietly('After the listener went away');
      return (await b.clients.get(client.id))?.name === 'After the listener went away';
    });
    await eventually('instance B listens and keeps the client in memory again', servedFromMemory);
  });

  it('forgets a client removed through another instance', async () => {
    await eventually('instance B keeps the client in memory', servedFromMemory);
    assert.equal(await a.clients.remove(client.id), true);
    await eventually('instance B no longer finds the client', async () => (await b.clients.get(client.id)) === null);
    assert.equal(await a.clients.get(client.id), null, 'the instance that removed it forgets it at once');
  });
});

describePostgres('the connection that listens for client changes, proving it hears', () => {
  const timing = { probeIntervalMs: 20, probeTimeoutMs: 60 };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 6 * timing.probeTimeoutMs));

  it('waits for a probe the busy pool has not sent yet: no new listening connection, no warning', async () => {
    const warnings: string[] = [];
    // Every pooled connection busy: the probe's NOTIFY is never sent.
    const listener = listenForClientChanges(
      { connectionString: postgresUrl },
      null,
      new ClientCache(),
      () => new Promise(() => {}),
      (message) => warnings.push(message),
      timing,
    );
    try {
      await listener.ready;
      await settle();
      assert.deepEqual(warnings, []);
    } finally {
      await listener.close();
    }
  });

  it('takes a probe sent and never heard for a deaf connection, and says so', async () => {
    const warnings: string[] = [];
    // A pooler that takes the NOTIFY and never delivers it.
    const listener = listenForClientChanges(
      { connectionString: postgresUrl },
      null,
      new ClientCache(),
      async () => {},
      (message) => warnings.push(message),
      timing,
    );
    try {
      await listener.ready;
      await settle();
      assert.match(warnings[0] ?? '', /heard no notice for 60 ms/);
    } finally {
      await listener.close();
    }
  });
});

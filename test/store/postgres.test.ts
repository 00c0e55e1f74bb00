/**
 * The store contract and the multi-instance store tests, against a real PostgreSQL (see
 * `test/helpers/postgres.ts` for which one, when these tests are mandatory and when they
 * are skipped). Each store works in a schema of its own, dropped afterwards.
 */

import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import { migrations } from '../../src/store/migrations.ts';
import { openStore } from '../../src/store/open.ts';
import { migratePostgres } from '../../src/store/postgres/migrate.ts';
import { openPostgresStore, postgresDialect } from '../../src/store/postgres/store.ts';
import { statements } from '../../src/store/sql/statements.ts';
import type { AuditEvent } from '../../src/core/events.ts';
import { newUserRecord, type SessionRecord, type Store } from '../../src/store/types.ts';
import { databaseSetting, describePostgres, dropSchema, newSchema, postgresUrl as url, withAdmin } from '../helpers/postgres.ts';
import { storeContract } from './contract.ts';
import { checkUniqueEmailsUpgrade } from './unique-emails.ts';
import { BEFORE_OUTBOX_CURSORS, checkOutboxCursorsUpgrade } from './outbox-upgrade.ts';
import { checkSelfAssertedEmailsUpgrade } from './self-asserted-emails.ts';
import { adaEvent, codeGrant, pendingCode, pendingDevice } from './fixtures.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

/** A client, a user, a grant, a code and an approved device record. */
async function seed(store: Store) {
  const client = {
    id: 'client-1',
    name: 'TV App',
    secretHash: null,
    redirectUris: ['https://tv.example/callback'],
    scopes: ['openid'],
    grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE],
    webOrigins: [],
    requireDpop: false,
    requirePar: false,
    deviceNetworks: [],
    createdAt: T0,
    firstParty: false,
    postLogoutRedirectUris: [],
    backchannelLogoutUri: null,
  } as const;
  const user = newUserRecord({ id: 'user-1', username: 'ada@example.com', passwordHash: '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA', createdAt: T0 });
  const grant = codeGrant('grant-1', client.id, user.id);
  const code = pendingCode('code-1', grant);
  const device = pendingDevice(client.id, { deviceCodeHash: 'device-1', userCode: 'WDJBMJHT' });
  await store.clients.create(client);
  await store.users.create(user);
  await store.grants.create(grant);
  await store.codes.create(code);
  await store.devices.create(device);
  await store.devices.decide(device, { approve: true, userId: user.id, authTime: T0, grantId: grant.id }, T0 + MINUTE);
  return { client, user, grant, code, device };
}

/** A live session of `userId`, stored. */
async function givenSession(store: Store, userId: string): Promise<SessionRecord> {
  const session = { idHash: 'session-1', sid: 'sid-1', userId, authTime: T0, createdAt: T0, expiresAt: T0 + 60 * MINUTE, ip: null, userAgent: null };
  await store.sessions.create(session);
  return session;
}

/** The backends waiting for a lock `pid` holds, as `watcher` sees them: read outside a transaction, which would keep showing its first look. */
async function waitingFor(watcher: pg.Client, pid: number): Promise<number[]> {
  return (await watcher.query('SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid])).rows.map((row: { pid: number }) => row.pid);
}

/** Asks `probe` again until it answers something. */
async function until<T>(probe: () => Promise<T>): Promise<NonNullable<T>> {
  for (;;) {
    const answer = await probe();
    if (answer) return answer;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describePostgres('PostgreSQL', () => {
  storeContract('PostgreSQL store', async () => {
    const schema = newSchema();
    const store = await openPostgresStore(url, { schema });
    return {
      store,
      async cleanup() {
        await store.close();
        await dropSchema(schema);
      },
    };
  });

  // The outbox's cursors move only past transactions older than every one still running
  // (migrations.ts, version 45): the same contract with one held open elsewhere all along.
  storeContract('PostgreSQL store, beside a transaction held open', async () => {
    const schema = newSchema();
    const store = await openPostgresStore(url, { schema });
    const held = new pg.Client({ connectionString: url });
    await held.connect();
    await held.query('BEGIN');
    await held.query('SELECT pg_current_xact_id()');
    return {
      store,
      async cleanup() {
        await held.query('COMMIT');
        await held.end();
        await store.close();
        await dropSchema(schema);
      },
    };
  });

  describe("PostgreSQL's writes in place (HOT updates)", () => {
    const schemas: string[] = [];
    after(async () => {
      for (const schema of schemas) await dropSchema(schema);
    });
    const open = async () => {
      const schema = newSchema();
      schemas.push(schema);
      return { schema, store: await openPostgresStore(url, { schema }) };
    };
    /** The heap page each row of `table` is on, by its key. */
    const pages = (schema: string, table: string, key: string) =>
      withAdmin(async (client) => {
        const { rows } = await client.query(`SELECT ${key} AS key, (ctid::text::point)[0]::int AS page FROM ${client.escapeIdentifier(schema)}.${table}`);
        return new Map(rows.map((row: Record<string, unknown>) => [row['key'] as string, row['page'] as number]));
      });

    it('keeps a redeemed code and a polled device on their pages, even when every row of a page changes in one statement, so that no index entry is written', async () => {
      const { schema, store } = await open();
      try {
        const { client, user, code } = await seed(store);
        const codes = [];
        for (let i = 0; i < 120; i += 1) {
          const grant = codeGrant(`grant-hot-${i}`, client.id, user.id);
          await store.grants.create(grant);
          const each = { ...code, hash: `code-hot-${i}`, grantId: grant.id };
          await store.codes.create(each);
          codes.push(each);
        }
        await Promise.all(
          Array.from({ length: 120 }, (_, i) =>
            store.devices.create(pendingDevice(client.id, { deviceCodeHash: `device-hot-${i}`, userCode: `HOT${String(i).padStart(5, '0')}` })),
          ),
        );
        const [codePages, devicePages] = [await pages(schema, 'authorization_codes', 'hash'), await pages(schema, 'device_authorizations', 'device_code_hash')];
        // One turn: one statement redeems all 120 codes, one polls all 120 devices.
        const [redeemed, polled] = await Promise.all([
          Promise.all(codes.map((each) => store.codes.redeem(each.hash, each, T0 + MINUTE, { activeUntil: T0 + 60 * MINUTE }))),
          Promise.all(Array.from({ length: 120 }, (_, i) => store.devices.poll(`device-hot-${i}`, client.id, T0 + MINUTE))),
        ]);
        assert.equal(redeemed.filter((each) => each).length, 120);
        assert.equal(polled.filter((each) => each?.outcome === 'pending').length, 120);
        assert.deepEqual(await pages(schema, 'authorization_codes', 'hash'), codePages, 'every redeemed code on the page it was inserted on');
        assert.deepEqual(await pages(schema, 'device_authorizations', 'device_code_hash'), devicePages, 'every polled device on the page it was inserted on');
      } finally {
        await store.close();
      }
    });

    it("writes no entry for a live grant into the purge's index of revoked grants, and the purge of grants still finds its rows through indexes", async () => {
      const { schema, store } = await open();
      try {
        const { client, user } = await seed(store);
        for (let i = 0; i < 200; i += 1) {
          await store.grants.create(codeGrant(`grant-live-${i}`, client.id, user.id));
          await store.grants.recordUse(`grant-live-${i}`, T0 + MINUTE, T0 + 60 * MINUTE);
        }
        await withAdmin(async (admin) => {
          const { rows } = await admin.query('SELECT pg_relation_size($1::regclass) AS size', [`${schema}.grants_revoked_at`]);
          // Its metapage alone: no leaf page was ever needed.
          assert.equal(Number(rows[0]['size']), 8192);
          await admin.query('BEGIN');
          try {
            await admin.query(`SET LOCAL search_path = ${admin.escapeIdentifier(schema)}`);
            // Told to avoid sequential scans, the planner still falls back to one where no index serves a term.
            await admin.query('SET LOCAL enable_seqscan = off');
            const purge = statements(postgresDialect).purgeGrants.replaceAll(':before', String(T0)).replaceAll(':limit', '1000');
            const plan = (await admin.query(`EXPLAIN ${purge}`)).rows.map((row: Record<string, unknown>) => String(row['QUERY PLAN'])).join('\n');
            assert.doesNotMatch(plan, /Seq Scan on grants/, plan);
            for (const index of ['grants_revoked_at', 'grants_active_until', 'grants_created_at']) assert.match(plan, new RegExp(`on ${index}\\b`), plan);
          } finally {
            await admin.query('ROLLBACK');
          }
        });
      } finally {
        await store.close();
      }
    });
  });

  describe('PostgreSQL shared by several instances', () => {
    const schemas: string[] = [];
    const fresh = (): string => {
      const schema = newSchema();
      schemas.push(schema);
      return schema;
    };
    after(async () => {
      for (const schema of schemas) await dropSchema(schema);
    });

    it('migrates a fresh schema once when two stores open it at the same time', async () => {
      const schema = fresh();
      const stores = await Promise.all([openPostgresStore(url, { schema }), openPostgresStore(url, { schema })]);
      try {
        const rows = await withAdmin((client) => client.query(`SELECT version FROM ${client.escapeIdentifier(schema)}.schema_migrations ORDER BY version`));
        assert.deepEqual(
          rows.rows.map((row: Record<string, unknown>) => row['version']),
          migrations.map((migration) => migration.version),
        );
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it('gives a code and a device grant to exactly one of 20 concurrent callers split across two pools', async () => {
      const schema = fresh();
      const [a, b] = [await openPostgresStore(url, { schema }), await openPostgresStore(url, { schema })];
      try {
        const { code, device } = await seed(a);
        const [redeemed, polled] = await Promise.all([
          Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? a : b).codes.consume(code.hash, code, T0 + 2 * MINUTE))),
          Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? b : a).devices.poll(device.deviceCodeHash, device.clientId, T0 + 2 * MINUTE))),
        ]);
        assert.equal(redeemed.filter((result) => result !== null).length, 1);
        assert.equal(polled.filter((result) => result?.outcome === 'issue').length, 1);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('tells the client of a code redeemed during a logout, or refuses the code (Back-Channel Logout 1.0 §2.7)', async () => {
      const schema = fresh();
      const store = await openPostgresStore(url, { schema });
      const holder = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
      const watcher = new pg.Client({ connectionString: url });
      await holder.connect();
      await watcher.connect();
      try {
        const { client, user, grant } = await seed(store);
        const session = await givenSession(store, user.id);
        const code = pendingCode('code-in-session', grant, { sid: session.sid });
        await store.codes.create(code);
        // Another transaction on the grant's row (another code of it being issued) holds the
        // redemption back once it has seen the session live.
        await holder.query('BEGIN');
        await holder.query('UPDATE grants SET last_used_at = $1 WHERE id = $2', [T0, grant.id]);
        const holderPid = (await holder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
        const redemption = store.codes.redeem(code.hash, code, T0 + MINUTE, {
          activeUntil: T0 + 60 * MINUTE,
          sessionClient: { sid: session.sid, expiresAt: session.expiresAt },
        });
        const redeemer = await until(async () => (await waitingFor(watcher, holderPid))[0]);
        // The person signs out meanwhile: the session ends, then its clients are taken to be told.
        let loggedOut = false;
        const logout = (async () => {
          await store.sessions.remove(session.idHash);
          const told = await store.sessions.takeClients(session.sid);
          loggedOut = true;
          return told;
        })();
        // Until it has ended, or waits for the redemption.
        await until(async () => loggedOut || (await waitingFor(watcher, redeemer)).length > 0);
        await holder.query('ROLLBACK');
        const [redeemed, told] = await Promise.all([redemption, logout]);
        assert.ok(!redeemed || told.includes(client.id), `the code was redeemed, and the logout told ${JSON.stringify(told)}`);
      } finally {
        await holder.end();
        await watcher.end();
        await store.close();
      }
    });

    it('redeems a code of a session continued under a new cookie meanwhile, and keeps its client for the logout', async () => {
      const schema = fresh();
      const store = await openPostgresStore(url, { schema });
      const continuer = await openPostgresStore(url, { schema });
      const watcher = new pg.Client({ connectionString: url });
      await watcher.connect();
      let release = () => {};
      try {
        const { client, user, grant } = await seed(store);
        const session = await givenSession(store, user.id);
        const code = pendingCode('code-in-session', grant, { sid: session.sid });
        await store.codes.create(code);
        // The person signs in again in this browser (prompt=login): their session goes on under
        // a new cookie, in a transaction held open while the app exchanges a code of it.
        const next: SessionRecord = { ...session, idHash: 'session-2', authTime: T0 + MINUTE, createdAt: T0 + MINUTE, amr: ['pwd'] };
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        const continuing = continuer.transaction(async (tx) => {
          const continued = await tx.sessions.continue(session.idHash, next);
          await released;
          return continued;
        });
        // The one backend that holds a write lock on the sessions table: the continuing transaction.
        const continuerPid = await until(
          async () =>
            (await watcher.query("SELECT pid FROM pg_locks WHERE relation = to_regclass($1) AND mode = 'RowExclusiveLock' AND granted", [`${schema}.sessions`]))
              .rows[0]?.pid as number | undefined,
        );
        const redemption = store.codes.redeem(code.hash, code, T0 + MINUTE, {
          activeUntil: T0 + 60 * MINUTE,
          sessionClient: { sid: session.sid, expiresAt: session.expiresAt },
        });
        await until(async () => (await waitingFor(watcher, continuerPid)).length > 0);
        release();
        assert.deepEqual(await continuing, next);
        assert.equal(await redemption, true, 'the code was refused, its session continuing');
        assert.deepEqual(await store.sessions.takeClients(session.sid), [client.id]);
      } finally {
        release();
        await watcher.end();
        await continuer.close();
        await store.close();
      }
    });

    it('keeps an approved device grant approved after the store is closed and opened again', async () => {
      const schema = fresh();
      const before = await openPostgresStore(url, { schema });
      const { device } = await seed(before);
      const approved = await before.devices.findByUserCode(device.userCode, T0 + MINUTE);
      await before.close();
      const after = await openPostgresStore(url, { schema });
      try {
        assert.equal(approved?.status, 'approved');
        assert.deepEqual(await after.devices.findByUserCode(device.userCode, T0 + MINUTE), approved);
      } finally {
        await after.close();
      }
    });

    it('upgrades accounts that share an e-mail address: one keeps it, the others are listed without it', async () => {
      const schema = fresh();
      await checkUniqueEmailsUpgrade(
        () => openPostgresStore(url, { schema }),
        (statements) =>
          withAdmin(async (client) => {
            await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);
            for (const statement of statements) await client.query(statement);
          }),
      );
    });

    it('marks as self-asserted, on upgrading, the unverified addresses that sign-up took and nothing verified or replaced since', async () => {
      const schema = fresh();
      await checkSelfAssertedEmailsUpgrade(
        () => openPostgresStore(url, { schema }),
        (statements) =>
          withAdmin(async (client) => {
            await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);
            for (const statement of statements) await client.query(statement);
          }),
      );
    });

    it("keeps the deliveries the triggers wrote across the upgrade to the outbox's cursors, and sends the pending ones first, each once", async () => {
      const schema = fresh();
      await checkOutboxCursorsUpgrade(
        async () => {
          const pool = new pg.Pool({ connectionString: url, options: `-c search_path=${schema}` });
          try {
            await migratePostgres(pool, schema, BEFORE_OUTBOX_CURSORS);
          } finally {
            await pool.end();
          }
        },
        (statements) =>
          withAdmin(async (client) => {
            await client.query(`SET search_path TO ${client.escapeIdentifier(schema)}`);
            for (const statement of statements) await client.query(statement);
          }),
        (values) => `ARRAY[${values.map((value) => `'${value}'`).join(', ')}]::text[]`,
        () => openPostgresStore(url, { schema }),
      );
    });

    it('sends a webhook each event once from two stores that race for its queue, an event whose transaction commits late included', async () => {
      const schema = fresh();
      const [holder, a, b] = [await openPostgresStore(url, { schema }), await openPostgresStore(url, { schema }), await openPostgresStore(url, { schema })];
      try {
        await a.webhooks.create({
          id: 'hook-1',
          url: 'https://hooks.example.com/in',
          events: ['grant.revoked'],
          secret: {},
          previousSecret: null,
          previousSecretExpiresAt: null,
          addedByOwner: true,
          createdAt: T0,
          updatedAt: T0,
        });
        const event = (id: string, at: number): AuditEvent => adaEvent(id, 'grant.revoked', at);
        // A transaction that stores an event, then stays open while later ones are stored and sent.
        let commit!: () => void;
        const held = new Promise<void>((resolve) => (commit = resolve));
        let stored!: () => void;
        const inside = new Promise<void>((resolve) => (stored = resolve));
        const late = holder.transaction(async (tx) => {
          await tx.events.add(event('late', T0 + 1));
          stored();
          await held;
        });
        await inside;
        for (let i = 0; i < 20; i += 1) await (i % 2 === 0 ? a : b).events.add(event(`event-${i}`, T0 + 2 + i));
        const claimed: string[] = [];
        const drain = async (store: Store) => {
          for (;;) {
            const batch = await store.outbox.claim('webhook', 'hook-1', T0 + MINUTE, T0 + 2 * MINUTE, 3);
            if (batch.length === 0) return;
            for (const delivery of batch) {
              claimed.push(delivery.eventId);
              await store.outbox.settle('webhook', 'hook-1', delivery.eventId, delivery.attempts, { kind: 'delivered', status: 204 }, T0 + MINUTE);
            }
          }
        };
        await Promise.all([drain(a), drain(b)]);
        assert.deepEqual(
          claimed,
          Array.from({ length: 20 }, (_, i) => `event-${i}`),
          'each once, in order, the uncommitted one not yet',
        );
        commit();
        await late;
        await Promise.all([drain(a), drain(b)]);
        assert.deepEqual(claimed.slice(20), ['late'], 'committed behind the cursor, and still sent, once');
        assert.deepEqual(
          (await a.webhooks.deliveries('hook-1', { limit: 100 })).filter((delivery) => delivery.state !== 'delivered'),
          [],
        );
      } finally {
        for (const store of [holder, a, b]) await store.close();
      }
    });

    it('refuses a database that a newer version has migrated', async () => {
      const schema = fresh();
      await (await openPostgresStore(url, { schema })).close();
      await withAdmin((client) =>
        client.query(`INSERT INTO ${client.escapeIdentifier(schema)}.schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`),
      );
      await assert.rejects(openPostgresStore(url, { schema }), /does not know \(9999\)/);
    });

    it('keeps its tables in the schema named by schema= in the database setting', async () => {
      const schema = fresh();
      const store = await openStore(databaseSetting(schema));
      try {
        const { client } = await seed(store);
        const rows = await withAdmin((admin) => admin.query(`SELECT id FROM ${admin.escapeIdentifier(schema)}.clients`));
        assert.deepEqual(rows.rows, [{ id: client.id }]);
      } finally {
        await store.close();
      }
    });

    it('refuses a schema name it would have to quote', async () => {
      await assert.rejects(openPostgresStore(url, { schema: 'Robert"); DROP TABLE users;--' }), /invalid PostgreSQL schema name/);
    });
  });
});

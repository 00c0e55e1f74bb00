/**
 * The embedded store: one SQLite file through `node:sqlite`, shared by every connection that
 * opens it (worker threads, the `tessera` command, other processes). Each statement of `sql/statements.ts` is prepared once,
 * at its first use; SQLite runs one writer at a time, so a conditional UPDATE has exactly one winner.
 */

import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import type { MessagePort } from 'node:worker_threads';
import { CorruptRowError, integer, jsonObject, stringList, text, type ColumnReader } from '../rows.ts';
import { followUpWrites } from '../sql/tokens.ts';
import type { Dialect, Params, Runner } from '../sql/dialect.ts';
import { statements, type StatementName } from '../sql/statements.ts';
import { purgeExpired, sqlStores } from '../sql/store.ts';
import { DuplicateError, MissingReferenceError, type ClientRecord, type Store, type Stores } from '../types.ts';
import { GroupCommit, isWriteSql } from './group-commit.ts';
import { exchangeReader, FIND_FOR_EXCHANGE, FIND_FOR_REFRESH, refreshReader } from './joined.ts';
import { answerRequests, WriterLink } from './link.ts';
import { migrateSqlite } from './migrate.ts';
import { numbered, valuesOf } from './numbered.ts';
import { storeError } from './unavailable.ts';

/** How long a statement waits for another process's write lock before failing with SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;

/** Lists and JWKs are JSON text, booleans 0 or 1; `MAX` with two arguments is the larger. */
export const sqliteDialect: Dialect = {
  read: {
    strings: (row, column) => stringList(column, JSON.parse(text(row, column))),
    object: (row, column) => jsonObject(column, JSON.parse(text(row, column))),
    boolean: (row, column) => {
      const value = integer(row, column);
      if (value !== 0 && value !== 1) throw new CorruptRowError(column, '0 or 1', value);
      return value === 1;
    },
  },
  list: (values) => JSON.stringify(values),
  flag: (value) => (value ? 1 : 0),
  listUnion: (a, b) => `(SELECT json_group_array(value) FROM (SELECT value FROM json_each(${a}) UNION SELECT value FROM json_each(${b}) ORDER BY 1))`,
  listWithout: (column, names) => `(SELECT json_group_array(value) FROM (SELECT value FROM json_each(${column}) WHERE value NOT IN ${names} ORDER BY key))`,
  greatest: (a, b) => `MAX(${a}, ${b})`,
  bigint: (parameter) => parameter,
  keepsRows: '',
  purge: (table, key, condition) => `DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${condition} LIMIT :limit)`,
  jsonText: (column, key) => `(CASE WHEN json_type(${column}, '$.${key}') = 'text' THEN json_extract(${column}, '$.${key}') END)`,
  jsonMembers: (column, key, member) =>
    `(SELECT json_extract(e.value, '$.${member}') AS v FROM json_each(CASE WHEN json_type(${column}, '$.${key}') = 'array' THEN json_extract(${column}, '$.${key}') ELSE '[]' END) e)`,
  byCodePoint: (expression) => expression,
  inList: (expression, parameter) => `${expression} IN (SELECT value FROM json_each(${parameter}))`,
  listHas: (column, expression) => `EXISTS (SELECT 1 FROM json_each(${column}) WHERE value = ${expression})`,
  outboxHorizon: '9223372036854775807',
  outboxSnapshot: 'NULL',
  outboxSeen: () => '1 = 1',
  outboxRunning: () => 'SELECT NULL WHERE 0 = 1',
  likeExact: (expression, pattern, value, op) =>
    `(${expression} LIKE ${pattern} ESCAPE '\\' AND ${
      op === 'co'
        ? `instr(${expression}, ${value}) > 0`
        : op === 'sw'
          ? `substr(${expression}, 1, length(${value})) = ${value}`
          : `(length(${value}) = 0 OR substr(${expression}, -length(${value})) = ${value})`
    })`,
};

/** A refused write as the same error the PostgreSQL store gives (SQLite's extended result codes). */
function constraintError(error: unknown): unknown {
  const code = error instanceof Error && 'errcode' in error ? error.errcode : null;
  // SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE: "UNIQUE constraint failed: grants.id".
  if (code === 1555 || code === 2067) return new DuplicateError(`a ${/: (\w+)\./.exec(String(error))?.[1]} row with this key`, { cause: error });
  if (code === 787) return new MissingReferenceError({ cause: error }); // SQLITE_CONSTRAINT_FOREIGNKEY
  return error;
}

/**
 * Opens (creating it if needed) the SQLite database at `path`, or an in-memory one for
 * `:memory:`, and brings its schema up to date.
 */
export function openSqliteStore(path: string): Store {
  return openMigrated(path).store;
}

/**
 * The one connection that writes, for the worker threads of this process (`openSqliteThreadStore`):
 * opened and migrated as `openSqliteStore` opens it; `accept` answers a thread's writes,
 * arriving over `port`, in this connection's group commit, each once its commit holds it.
 * The function it returns forgets the thread (it died): a transaction it left open is rolled back.
 */
export interface SqliteWriter {
  readonly store: Store;
  accept(port: MessagePort): () => void;
}

export function openSqliteWriter(path: string): SqliteWriter {
  const { store, outside, inside, redeem, rotateWith, forgetClients } = openMigrated(path);
  // A thread's write to a client row commits on this connection, which `PRAGMA data_version`
  // never reports to the connection itself: the client records it keeps for the main thread's
  // own requests (below four workers it serves too) are forgotten here, or a client removed,
  // its secret rotated or its redirect URIs changed through a thread would live on there.
  // A thread's transaction is forgotten by `store.transaction` itself.
  const clientWrites = new Set(
    Object.entries(statements(sqliteDialect))
      .filter(([, sql]) => CLIENT_WRITE.test(sql))
      .map(([name]) => name),
  );
  let transactions = 0;
  const accept = (port: MessagePort): (() => void) => {
    /** This thread's open transaction: how it ends, and its outcome once it has. */
    const open = new Map<number, { end: (ok: boolean) => void; ended: Promise<unknown> }>();
    let gone = false;
    answerRequests(port, (request) => {
      switch (request.op) {
        case 'one':
        case 'all':
        case 'changed': {
          const done = outside[request.op](request.name, request.params);
          return clientWrites.has(request.name) ? done.finally(forgetClients) : done;
        }
        case 'redeem':
          return redeem(...(request.args as Parameters<typeof redeem>));
        case 'rotateWith':
          return rotateWith(...(request.args as Parameters<typeof rotateWith>));
        case 'tx': {
          if (!open.has(request.tx)) return Promise.reject(new Error('a transaction handle was used after its transaction ended'));
          return request.method === 'select'
            ? inside.select(request.name, request.params)
            : inside[request.method](request.name as StatementName, request.params);
        }
        case 'begin':
          return new Promise((begun, refused) => {
            const tx = (transactions += 1);
            const ended = store.transaction(
              () =>
                new Promise<void>((commit, rollBack) => {
                  // A `begin` waits its turn behind other transactions: a thread gone by then
                  // would never end this one, and every write after it would wait for ever.
                  if (gone) return rollBack(ENDED_BY_THREAD);
                  open.set(tx, { end: (ok) => (ok ? commit() : rollBack(ENDED_BY_THREAD)), ended });
                  begun(tx);
                }),
            );
            // A transaction that could not begin (the lock) fails its `begin`; once begun, its `end` answers.
            ended.catch(refused);
          });
        case 'end': {
          const transaction = open.get(request.tx);
          if (transaction === undefined) return Promise.reject(new Error('no such transaction'));
          open.delete(request.tx);
          transaction.end(request.ok);
          return transaction.ended.then(
            () => null,
            (error: unknown) => {
              if (error === ENDED_BY_THREAD) return null;
              throw error;
            },
          );
        }
      }
    });
    return () => {
      gone = true;
      port.close();
      for (const transaction of open.values()) transaction.end(false);
      open.clear();
    };
  };
  return { store, accept };
}

/** A statement that writes the clients table (sql/clients.ts): what a kept client record is read from. */
const CLIENT_WRITE = /^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+clients\b/i;

/** How a transaction that its thread ended with a failure (its own, kept there) is rolled back. */
const ENDED_BY_THREAD = new Error('rolled back by its thread');

/**
 * A worker thread's store: reads on a connection of its own, outside any transaction, so
 * they see what is committed; every write, code redemption and transaction goes to the
 * writer over `port` (`openSqliteWriter`) and is answered once committed. The schema is the
 * writer's to migrate.
 */
export function openSqliteThreadStore(path: string, port: MessagePort): Store {
  const db = openDatabase(path);
  try {
    return sqliteThreadStore(db, new WriterLink(port));
  } catch (error) {
    db.close();
    throw error;
  }
}

/**
 * An empty in-memory database with every migration applied, as bytes: the first in-memory
 * store a process opens is migrated, and each one after it starts from a copy. Migrating one
 * took about 26 ms of CPU, its copy half a millisecond, and the unit tests open about a hundred
 * (a flow world each). A file is brought up to date each time it is opened: its schema is its own.
 */
let emptyInMemory: Uint8Array | undefined;

function openMigrated(path: string): SqliteParts {
  const db = openDatabase(path);
  try {
    if (path === ':memory:' && emptyInMemory !== undefined) db.deserialize(emptyInMemory);
    else {
      migrateSqlite(db);
      if (path === ':memory:') emptyInMemory = db.serialize();
    }
    return sqliteStore(db);
  } catch (error) {
    db.close();
    throw error;
  }
}

function openDatabase(path: string): DatabaseSync {
  if (path !== ':memory:') {
    // The database holds the signing keys (encrypted), sessions and grants; it is
    // the owner's alone. A directory Tessera creates is 0700; the file is created 0600
    // before SQLite opens it, and SQLite gives its -wal and -shm files the same mode.
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    closeSync(openSync(path, 'a', 0o600));
  }
  const db = new DatabaseSync(path);
  try {
    // busy_timeout first: switching to WAL needs a lock another process may hold.
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec('PRAGMA journal_mode = WAL');
    // In WAL mode NORMAL loses no committed transaction when the process crashes, only
    // (possibly) the last ones on power loss, and saves an fsync per commit: polling
    // writes on every request.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** The statements of one connection, each prepared at its first use. */
function preparedStatements(db: DatabaseSync) {
  // Each statement prepared at its first use, then kept: preparing all of them at open took
  // about 10 ms a store (most of opening one), and a process often uses a few dozen.
  // test/store/sqlite.test.ts prepares every one against the migrated schema.
  const texts = statements(sqliteDialect);
  const prepare = (sql: string): StatementSync => {
    const { text, names } = numbered(sql);
    const statement = db.prepare(text);
    parameterNames.set(statement, names);
    return statement;
  };
  const preparedByName = new Map<StatementName, StatementSync>();
  const prepared = (name: StatementName): StatementSync => {
    let statement = preparedByName.get(name);
    if (statement === undefined) {
      statement = prepare(texts[name]);
      preparedByName.set(name, statement);
    }
    return statement;
  };
  // Composed reads (Runner.select), prepared once per text: their texts come from a few fragments, and are kept up to a bound.
  const composed = new Map<string, StatementSync>();
  const preparedText = (sql: string): StatementSync => {
    let statement = composed.get(sql);
    if (statement === undefined) {
      if (composed.size >= 200) composed.delete(composed.keys().next().value!);
      statement = prepare(sql);
      composed.set(sql, statement);
    }
    return statement;
  };
  return { texts, prepared, preparedText };
}

/** The names of a prepared statement's parameters, by number (numbered.ts). */
const parameterNames = new WeakMap<StatementSync, readonly string[]>();

/**
 * `params` as the values of `statement`'s numbered parameters. As in PostgreSQL, only the
 * parameters the statement names are bound: an insert binds its record. (The SQLite dialect
 * only ever binds strings, numbers and nulls.)
 */
const bind = (statement: StatementSync, params: Params): SQLInputValue[] => valuesOf(parameterNames.get(statement)!, params);

function execute<T>(statement: StatementSync, run: (statement: StatementSync) => T): T {
  return guarded(() => run(statement));
}

/** `run`'s failure as the store's own errors: unavailable, duplicate, a missing reference. */
function guarded<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw constraintError(storeError(error));
  }
}

/** The store, and the runners and redemption that a writer answers threads with. */
interface SqliteParts {
  readonly store: Store;
  readonly outside: Runner<StatementName>;
  readonly inside: Runner<StatementName>;
  readonly redeem: Store['codes']['redeem'];
  readonly rotateWith: Store['refreshTokens']['rotateWith'];
  /** Forgets the client records this connection keeps (`keptClients`). */
  readonly forgetClients: () => void;
}

function sqliteStore(db: DatabaseSync): SqliteParts {
  const { prepared, preparedText } = preparedStatements(db);
  const batch = new GroupCommit(db, BUSY_TIMEOUT_MS);
  // The store's own calls wait while a transaction is open. A read runs at once and sees
  // what is committed; a write is answered once the round's commit holds it (GroupCommit).
  const outside: Runner<StatementName> = (() => {
    const run = <T>(name: StatementName, body: (statement: StatementSync) => T): Promise<T> => {
      const statement = prepared(name);
      return batch.outside(() => (batch.isWrite(statement) ? batch.write(() => execute(statement, body)) : execute(statement, body)));
    };
    return {
      select: (sql, params) => batch.outside(() => execute(preparedText(sql), (statement) => statement.all(...bind(statement, params)))),
      one: (name, params = {}) => run(name, (statement) => statement.get(...bind(statement, params))),
      all: (name, params = {}) => run(name, (statement) => statement.all(...bind(statement, params))),
      changed: (name, params) => run(name, (statement) => Number(statement.run(...bind(statement, params)).changes)),
    };
  })();
  // A transaction's own calls run at once, inside it.
  const inside: Runner<StatementName> = (() => {
    const run = <T>(name: StatementName, body: (statement: StatementSync) => T): Promise<T> => batch.inside(() => execute(prepared(name), body));
    return {
      select: (sql, params) => batch.inside(() => execute(preparedText(sql), (statement) => statement.all(...bind(statement, params)))),
      one: (name, params = {}) => run(name, (statement) => statement.get(...bind(statement, params))),
      all: (name, params = {}) => run(name, (statement) => statement.all(...bind(statement, params))),
      changed: (name, params) => run(name, (statement) => Number(statement.run(...bind(statement, params)).changes)),
    };
  })();
  const tx = sqlStores(sqliteDialect, inside);
  const stores = sqlStores(sqliteDialect, outside);
  // A code's redemption, or a refresh token's rotation, and the writes that follow it are one
  // write of the round's group commit: run one after another in a savepoint, so that they
  // stand or fall together, and answered once the round has committed.
  const savepoint = db.prepare('SAVEPOINT tessera_redeem');
  const release = db.prepare('RELEASE tessera_redeem');
  const rollback = db.prepare('ROLLBACK TO tessera_redeem');
  /**
   * Whether `redeem` (a code's redemption, a refresh token's rotation) changed its row; when it
   * did, the writes that follow it for that grant, in one savepoint of the round's commit.
   */
  const withFollowUps = (redeem: () => string | null, then: (grantId: string) => readonly [StatementName, Params][]): Promise<boolean> =>
    batch.outside(() =>
      batch.write(() => {
        savepoint.run();
        try {
          const grantId = redeem();
          if (grantId !== null) for (const [name, params] of then(grantId)) execute(prepared(name), (statement) => statement.run(...bind(statement, params)));
          release.run();
          return grantId !== null;
        } catch (error) {
          // A failure that ended the whole transaction took the savepoint with it.
          if (db.isTransaction) {
            rollback.run();
            release.run();
          }
          throw error;
        }
      }),
    );
  /** The grant of the row `name` changed (its `RETURNING grant_id`), or null when it changed none. */
  const changedGrant = (name: 'redeemCode' | 'rotateRefreshToken', params: Params): string | null => {
    const row = execute(prepared(name), (statement) => statement.get(...bind(statement, params)));
    return row === undefined ? null : text(row, 'grant_id');
  };
  const redeem: Store['codes']['redeem'] = (hash, { clientId, redirectUri, codeChallenge, dpopJkt = null }, now, writes) =>
    withFollowUps(
      () => changedGrant('redeemCode', { hash, clientId, redirectUri, codeChallenge, dpopJkt, now }),
      (grantId) => followUpWrites(sqliteDialect, { grantId, clientId }, now, writes),
    );
  const rotateWith: Store['refreshTokens']['rotateWith'] = (hash, clientId, now, writes) =>
    withFollowUps(
      () => changedGrant('rotateRefreshToken', { hash, clientId, now }),
      (grantId) => followUpWrites(sqliteDialect, { grantId, clientId }, now, writes),
    );

  const { clients, forgetClients } = keptClients(db, stores.clients);
  const { forExchange, forRefresh } = joinedReads(db);
  const store: Store = {
    ...stores,
    codes: { ...stores.codes, redeem, findForExchange: (hash) => batch.outside(() => forExchange(hash)) },
    refreshTokens: { ...stores.refreshTokens, rotateWith, findForRefresh: (hash) => batch.outside(() => forRefresh(hash)) },
    clients,
    transaction: (work) => batch.transaction(() => work(tx)).finally(forgetClients),
    purgeExpired: (before, cutoffs) => purgeExpired(outside, before, cutoffs).finally(forgetClients),
    close: async () => {
      if (!db.isOpen) return;
      await batch.drain();
      if (db.isOpen) db.close();
    },
  };
  return { store, outside, inside, redeem, rotateWith, forgetClients };
}

/**
 * The client records read, kept between requests as the PostgreSQL store keeps them, so
 * that a request reads no client row. Kept only while no other connection has committed
 * (`PRAGMA data_version` changes exactly then: the writer of worker threads, another process,
 * the command line) and until this store writes a client, runs a transaction or purges: a
 * client changed or removed anywhere is read again at its next use in a later turn of the
 * event loop. A read that a forgetting overtook is answered but not kept.
 *
 * `PRAGMA data_version` is asked once a turn, not once a lookup: each asking is a read
 * transaction of its own (a lock taken and let go on the WAL index, the file's size), which
 * cost as much as the poll's own UPDATE; the lookups of one turn share it, as the PostgreSQL
 * instances learn of a change from a NOTIFY between turns.
 */
function keptClients(db: DatabaseSync, read: Store['clients']): { clients: Store['clients']; forgetClients: () => void } {
  const dataVersion = db.prepare('PRAGMA data_version');
  const clientRecords = new Map<string, ClientRecord>();
  let seenVersion: unknown;
  let versionAsked = false;
  const askAgain = () => {
    versionAsked = false;
  };
  let generation = 0;
  const forgetClients = () => {
    clientRecords.clear();
    generation += 1;
  };
  const getClient = async (id: string): Promise<ClientRecord | null> => {
    if (!versionAsked) {
      versionAsked = true;
      setImmediate(askAgain);
      const version = (dataVersion.get() as { data_version?: unknown } | undefined)?.data_version;
      if (version !== seenVersion) {
        seenVersion = version;
        forgetClients();
      }
    }
    const kept = clientRecords.get(id);
    if (kept !== undefined) return kept;
    const at = generation;
    const record = await read.get(id);
    if (record !== null && at === generation) clientRecords.set(id, record);
    return record;
  };
  const forgetting =
    <A extends unknown[], R>(write: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> =>
      write(...args).finally(forgetClients);
  const clients: Store['clients'] = {
    ...read,
    get: getClient,
    create: forgetting(read.create),
    update: forgetting(read.update),
    revokeTokens: forgetting(read.revokeTokens),
    markUsed: forgetting(read.markUsed),
    rotateSecret: forgetting(read.rotateSecret),
    remove: forgetting(read.remove),
  };
  return { clients, forgetClients };
}

/**
 * A code with its grant and user, a refresh token with its grant and user: each one read
 * (sqlite/joined.ts), prepared at first use as the named statements are.
 */
function joinedReads(db: DatabaseSync) {
  const lazily = <R>(sql: string, reader: (statement: StatementSync, read: ColumnReader) => (hash: string) => R) => {
    let readHash: ((hash: string) => R) | undefined;
    return (hash: string): R =>
      guarded(() => {
        readHash ??= reader(db.prepare(sql), sqliteDialect.read);
        return readHash(hash);
      });
  };
  return { forExchange: lazily(FIND_FOR_EXCHANGE, exchangeReader), forRefresh: lazily(FIND_FOR_REFRESH, refreshReader) };
}

/** See `openSqliteThreadStore`. */
function sqliteThreadStore(db: DatabaseSync, link: WriterLink): Store {
  const { texts, prepared, preparedText } = preparedStatements(db);
  // As GroupCommit.isWrite decides: anything but a SELECT goes to the writer.
  const isWrite = (name: StatementName) => isWriteSql(texts[name]);
  const read = <T>(statement: StatementSync, body: (statement: StatementSync) => T): Promise<T> =>
    new Promise<T>((resolve) => resolve(execute(statement, body)));
  const outside: Runner<StatementName> = {
    select: (sql, params) => read(preparedText(sql), (statement) => statement.all(...bind(statement, params))),
    one: (name, params = {}) =>
      isWrite(name) ? link.call({ op: 'one', name, params }) : read(prepared(name), (statement) => statement.get(...bind(statement, params))),
    all: (name, params = {}) =>
      isWrite(name) ? link.call({ op: 'all', name, params }) : read(prepared(name), (statement) => statement.all(...bind(statement, params))),
    changed: (name, params) => link.call({ op: 'changed', name, params }),
  };
  // A transaction's statements, its reads too, run on the writer's connection inside it.
  const inside = (tx: number): Runner<StatementName> => ({
    select: (sql, params) => link.call({ op: 'tx', tx, method: 'select', name: sql, params }),
    one: (name, params = {}) => link.call({ op: 'tx', tx, method: 'one', name, params }),
    all: (name, params = {}) => link.call({ op: 'tx', tx, method: 'all', name, params }),
    changed: (name, params) => link.call({ op: 'tx', tx, method: 'changed', name, params }),
  });
  const stores = sqlStores(sqliteDialect, outside);
  const { clients, forgetClients } = keptClients(db, stores.clients);
  const transaction = async <T>(work: (tx: Stores) => Promise<T>): Promise<T> => {
    const tx = await link.call<number>({ op: 'begin' });
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await work(sqlStores(sqliteDialect, inside(tx))) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    try {
      await link.call({ op: 'end', tx, ok: outcome.ok });
    } catch (error) {
      if (outcome.ok) outcome = { ok: false, error };
    } finally {
      forgetClients();
    }
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  };
  const { forExchange, forRefresh } = joinedReads(db);
  return {
    ...stores,
    codes: {
      ...stores.codes,
      redeem: (...args) => link.call({ op: 'redeem', args }),
      findForExchange: async (hash) => forExchange(hash),
    },
    refreshTokens: {
      ...stores.refreshTokens,
      rotateWith: (...args) => link.call({ op: 'rotateWith', args }),
      findForRefresh: async (hash) => forRefresh(hash),
    },
    clients,
    transaction,
    purgeExpired: (before, cutoffs) => purgeExpired(outside, before, cutoffs).finally(forgetClients),
    close: async () => {
      link.close();
      if (db.isOpen) db.close();
    },
  };
}

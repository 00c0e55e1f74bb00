/**
 * The outbox's statements (`../outbox.ts`), written once for its three tables: what differs
 * between a webhook's delivery, a Security Event Token for a stream and a mail is the table,
 * which column names the queue and which the delivery, the order of a queue, and what a
 * delivered row drops. The claim, the lease, the fence on `attempts`, the retry window and the
 * replay are the same text for each.
 */
import { DELIVERY_PUSH } from '../../core/ssf.ts';
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { MailDeliveryRecord } from '../mail.ts';
import { OUTBOX_KINDS, type OutboxKind, type OutboxRecords, type OutboxStore } from '../outbox.ts';
import type { SsfDeliveryRecord } from '../ssf.ts';
import type { DeliveryState, WebhookDeliveryRecord } from '../webhooks.ts';
import type { Dialect, Params, Runner } from './dialect.ts';
import { eventFromRow } from './events.ts';

interface OutboxTable {
  readonly table: string;
  /** The column naming the queue its rows go out in. */
  readonly queue: string;
  /** The column naming a row within its queue. */
  readonly item: string;
  /** Whether a queue's rows go out one at a time in event order (a message is its own queue). */
  readonly ordered: boolean;
  /** Oldest first; reversed, newest first. */
  readonly order: readonly string[];
  /** Whether it keeps the last answer's HTTP status. */
  readonly status: boolean;
  /** What a delivered row no longer keeps. */
  readonly dropWhenDelivered: string;
  /** The queues whose head is due and free (`:now`, `:limit`), as `id`. */
  readonly due: string;
}

const FREE = "state = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)";

/** Each queue's head (its oldest pending row), found through (queue, state, event_at, event_id): one probe per queue, however long its backlog. */
const headDue = (table: string, queue: string, owner: string) => `(
  SELECT CASE WHEN d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until <= :now) THEN 1 ELSE 0 END
  FROM ${table} d WHERE d.${queue} = ${owner} AND d.state = 'pending'
  ORDER BY d.event_at, d.event_id LIMIT 1) = 1`;

/** A column of the queue's head. */
const head = (table: string, queue: string, column: string) =>
  `(SELECT h.${column} FROM ${table} h WHERE h.${queue} = :queue AND h.state = 'pending' ORDER BY h.event_at, h.event_id LIMIT 1)`;

const TABLES: Readonly<Record<OutboxKind, OutboxTable>> = {
  webhook: {
    table: 'webhook_deliveries',
    queue: 'webhook_id',
    item: 'event_id',
    ordered: true,
    order: ['event_at', 'event_id'],
    status: true,
    dropWhenDelivered: '',
    due: `SELECT w.id FROM webhooks w WHERE ${headDue('webhook_deliveries', 'webhook_id', 'w.id')} LIMIT :limit`,
  },
  ssf: {
    table: 'ssf_deliveries',
    queue: 'stream_id',
    item: 'event_id',
    ordered: true,
    order: ['event_at', 'event_id'],
    status: true,
    dropWhenDelivered: '',
    // Pushed only: a polling receiver takes its own (flows/ssf/poll.ts); a paused or disabled stream waits.
    due: `SELECT s.id FROM ssf_streams s WHERE s.delivery_method = '${DELIVERY_PUSH}' AND s.status = 'enabled'
      AND ${headDue('ssf_deliveries', 'stream_id', 's.id')} LIMIT :limit`,
  },
  mail: {
    table: 'mail_deliveries',
    queue: 'id',
    item: 'id',
    ordered: false,
    order: ['next_attempt_at', 'id'],
    status: false,
    // A delivered message's text (its link, a bearer secret) is not kept.
    dropWhenDelivered: ', message = NULL',
    due: `SELECT id FROM mail_deliveries WHERE ${FREE} ORDER BY next_attempt_at, id LIMIT :limit`,
  },
};

type Operation = 'due' | 'claim' | 'claimNext' | 'delivered' | 'failed' | 'release' | 'list' | 'replay' | 'count';
export type OutboxStatementName = `outbox.${Operation}.${OutboxKind}` | 'outbox.events';

/** The statements, by name, in `d`'s SQL. */
export function outboxStatements(d: Dialect): Record<OutboxStatementName, string> {
  const statements = { 'outbox.events': `SELECT * FROM events WHERE ${d.inList('id', ':ids')}` } as Record<OutboxStatementName, string>;
  for (const kind of OUTBOX_KINDS) {
    const { table, queue, item, ordered, order, status, dropWhenDelivered, due } = TABLES[kind];
    const oldest = order.join(', ');
    const newest = order.map((column) => `${column} DESC`).join(', ');
    const row = `${queue} = :queue AND ${item} = :item`;
    const lastStatus = status ? ', last_status = :status' : '';
    statements[`outbox.due.${kind}`] = due;
    // The queue's oldest pending rows, taken only when the oldest is due and free: later
    // events wait behind one being tried or waiting for its retry, so that a receiver hears
    // them in order. A head that failed before is tried alone: the receiver may still be
    // down, and the rows behind it are not counted as tried until it answers. Under READ COMMITTED a second instance's UPDATE waits for the first's row
    // locks, then finds the leases taken and claims none of them.
    statements[`outbox.claim.${kind}`] = ordered
      ? `UPDATE ${table} SET attempts = attempts + 1, lease_until = :leaseUntil
         WHERE ${queue} = :queue AND ${FREE} AND ${headDue(table, queue, ':queue')}
           AND ${item} IN (SELECT ${item} FROM ${table} WHERE ${queue} = :queue AND state = 'pending' ORDER BY ${oldest} LIMIT :limit)
           AND (${item} = ${head(table, queue, item)} OR ${head(table, queue, 'attempts')} = 0)
         RETURNING *`
      : `UPDATE ${table} SET attempts = attempts + 1, lease_until = :leaseUntil WHERE ${queue} = :queue AND ${FREE} RETURNING *`;
    // The oldest due row of any queue (a message: in no order but its due time).
    statements[`outbox.claimNext.${kind}`] = `
      UPDATE ${table} SET attempts = attempts + 1, lease_until = :leaseUntil
      WHERE ${FREE} AND ${item} = (SELECT ${item} FROM ${table} WHERE ${FREE} ORDER BY ${oldest} LIMIT 1)
      RETURNING *`;
    // `attempts` fences the answer of a try whose lease ran out and was taken over.
    statements[`outbox.delivered.${kind}`] = `
      UPDATE ${table} SET state = 'delivered', delivered_at = :now, lease_until = NULL${lastStatus}, last_error = NULL${dropWhenDelivered}
      WHERE ${row} AND attempts = :attempts AND state = 'pending'
      RETURNING state`;
    statements[`outbox.failed.${kind}`] = `
      UPDATE ${table} SET state = CASE WHEN queued_at <= :deadBefore THEN 'dead' ELSE 'pending' END,
        next_attempt_at = :nextAttemptAt, lease_until = NULL${lastStatus}, last_error = :error
      WHERE ${row} AND attempts = :attempts AND state = 'pending'
      RETURNING state`;
    statements[`outbox.release.${kind}`] = `
      UPDATE ${table} SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = :now
      WHERE ${row} AND attempts = :attempts AND state = 'pending'`;
    statements[`outbox.list.${kind}`] = `
      SELECT * FROM ${table}
      WHERE (CAST(:queue AS TEXT) IS NULL OR ${queue} = :queue) AND (CAST(:state AS TEXT) IS NULL OR state = :state)
      ORDER BY ${newest} LIMIT :limit`;
    statements[`outbox.replay.${kind}`] = `
      UPDATE ${table} SET state = 'pending', attempts = 0, queued_at = :now, next_attempt_at = :now, lease_until = NULL
      WHERE state = 'dead' AND (CAST(:queue AS TEXT) IS NULL OR ${queue} = :queue) AND (CAST(:item AS TEXT) IS NULL OR ${item} = :item)`;
    statements[`outbox.count.${kind}`] = `SELECT state, COUNT(*) AS count FROM ${table} WHERE state <> 'delivered' GROUP BY state`;
  }
  return statements;
}

const STATES: readonly DeliveryState[] = ['pending', 'delivered', 'dead'];

/** What every kind's row holds. */
function common(row: Row) {
  return {
    eventId: rows.text(row, 'event_id'),
    state: rows.oneOf(STATES, 'state', rows.text(row, 'state')),
    attempts: rows.integer(row, 'attempts'),
    queuedAt: rows.integer(row, 'queued_at'),
    nextAttemptAt: rows.integer(row, 'next_attempt_at'),
    leaseUntil: rows.integerOrNull(row, 'lease_until'),
    deliveredAt: rows.integerOrNull(row, 'delivered_at'),
  };
}

export function webhookDeliveryFromRow(row: Row): WebhookDeliveryRecord {
  return {
    webhookId: rows.text(row, 'webhook_id'),
    eventAt: rows.integer(row, 'event_at'),
    ...common(row),
    lastStatus: rows.integerOrNull(row, 'last_status'),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

export function ssfDeliveryFromRow(row: Row): SsfDeliveryRecord {
  return {
    streamId: rows.text(row, 'stream_id'),
    eventAt: rows.integer(row, 'event_at'),
    ...common(row),
    lastStatus: rows.integerOrNull(row, 'last_status'),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

export function mailDeliveryFromRow(row: Row, read: ColumnReader): MailDeliveryRecord {
  return {
    id: rows.text(row, 'id'),
    kind: rows.text(row, 'kind'),
    message: row['message'] === null || row['message'] === undefined ? null : read.object(row, 'message'),
    ...common(row),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

/** A row of `kind` as its record. */
function recordOf<K extends OutboxKind>(kind: K, row: Row, read: ColumnReader): OutboxRecords[K] {
  const record = kind === 'webhook' ? webhookDeliveryFromRow(row) : kind === 'ssf' ? ssfDeliveryFromRow(row) : mailDeliveryFromRow(row, read);
  return record as OutboxRecords[K];
}

/** Oldest first, as a queue goes out (RETURNING gives rows in no order). */
function oldestFirst(kind: OutboxKind, rowsIn: Row[]): Row[] {
  const [first, second] = TABLES[kind].order as [string, string];
  const key = (row: Row) => [Number(row[first]), String(row[second])] as const;
  return rowsIn.sort((a, b) => {
    const [x1, x2] = key(a);
    const [y1, y2] = key(b);
    return x1 - y1 || (x2 < y2 ? -1 : x2 > y2 ? 1 : 0);
  });
}

export function outboxStore(d: Dialect, q: Runner<OutboxStatementName>): OutboxStore {
  const { read } = d;
  const settled = (row: Row | undefined) => (row === undefined ? null : rows.oneOf(STATES, 'state', rows.text(row, 'state')));
  return {
    due: async (kind, now, limit) => (await q.all(`outbox.due.${kind}`, { now, limit })).map((row) => rows.text(row, 'id')),
    claim: async (kind, queue, now, leaseUntil, limit) =>
      oldestFirst(kind, await q.all(`outbox.claim.${kind}`, { queue, now, leaseUntil, limit })).map((row) => recordOf(kind, row, read)),
    settle: async (kind, queue, item, attempts, outcome, now) => {
      const status: Params = TABLES[kind].status ? { status: outcome.status } : {};
      return outcome.kind === 'delivered'
        ? settled(await q.one(`outbox.delivered.${kind}`, { queue, item, attempts, now, ...status }))
        : settled(
            await q.one(`outbox.failed.${kind}`, {
              queue,
              item,
              attempts,
              ...status,
              error: outcome.error.slice(0, 500),
              nextAttemptAt: outcome.nextAttemptAt,
              deadBefore: outcome.deadBefore,
            }),
          );
    },
    release: async (kind, queue, item, attempts, now) => void (await q.changed(`outbox.release.${kind}`, { queue, item, attempts, now })),
    list: async (kind, filter) =>
      (await q.all(`outbox.list.${kind}`, { queue: filter.queue, state: filter.state ?? null, limit: filter.limit })).map((row) => recordOf(kind, row, read)),
    replay: (kind, queue, item, now) => q.changed(`outbox.replay.${kind}`, { queue, item, now }),
    countByState: async (kind) => {
      const counts = { pending: 0, dead: 0 };
      for (const row of await q.all(`outbox.count.${kind}`)) {
        const state = rows.text(row, 'state');
        if (state === 'pending' || state === 'dead') counts[state] = Number(row['count']);
      }
      return counts;
    },
    events: async (ids) => {
      if (ids.length === 0) return new Map();
      const found = await q.all('outbox.events', { ids: d.list([...new Set(ids)]) });
      return new Map(found.map((row) => [rows.text(row, 'id'), eventFromRow(row, read)]));
    },
  };
}

/** The next due message of any queue (the mail store's `claim`). */
export async function claimNext<K extends OutboxKind>(
  d: Dialect,
  q: Runner<OutboxStatementName>,
  kind: K,
  now: number,
  leaseUntil: number,
): Promise<OutboxRecords[K] | null> {
  const row = await q.one(`outbox.claimNext.${kind}`, { now, leaseUntil });
  return row === undefined ? null : recordOf(kind, row, d.read);
}

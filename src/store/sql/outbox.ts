/**
 * The outbox's statements (`../outbox.ts`), written once for its three tables: what differs
 * between a webhook's delivery, a Security Event Token for a stream and a mail is the table,
 * which column names the queue and which the delivery, the order of a queue, and what a
 * delivered row drops. The claim, the lease, the fence on `attempts`, the retry window and the
 * replay are the same text for each.
 *
 * A webhook's or a stream's delivery rows are written here, not in the event's transaction:
 * the event leaves one row in `outbox_events` (migrations.ts, version 45), and each queue
 * writes the rows of the events past its cursor that it wants, in commit order, then moves its
 * cursor past them (`outboxCursors`): before a claim, a batch at a time; before a list or a count,
 * all of them; before a stream's rules change, under the rules the events came under. Writing
 * a row twice is harmless (its key is the queue and the event, and a row stays until its event
 * is purged), so instances need not agree on who writes: the cursor only moves forward.
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

/** A kind whose queues read `outbox_events` past a cursor: the table of its queues (`q`), and which of the events there (`e`) a queue wants. */
interface CursorQueues {
  readonly table: string;
  wanted(d: Dialect): string;
}

const CURSOR_QUEUES: Readonly<Partial<Record<OutboxKind, CursorQueues>>> = {
  // The webhook types it hears (core/webhook-events.ts; the trigger maps the audit trail's).
  webhook: { table: 'webhooks', wanted: (d) => `e.webhook_type IS NOT NULL AND ${d.listHas('q.events', 'e.webhook_type')}` },
  // Not while disabled (SSF 1.0 §8.1.2: a paused stream keeps what comes, a disabled one
  // nothing); a verification to the stream it names alone; else a type it is sent, about a
  // person it hears of (§8.1.3: added to a NONE stream, not removed from an ALL one).
  ssf: {
    table: 'ssf_streams',
    wanted: (d) => `q.status <> 'disabled' AND CASE WHEN e.ssf_stream IS NOT NULL THEN q.id = e.ssf_stream
      ELSE e.ssf_type IS NOT NULL AND ${d.listHas('q.events_delivered', 'e.ssf_type')} AND CASE WHEN q.default_subjects = 'NONE'
        THEN EXISTS (SELECT 1 FROM ssf_stream_subjects x WHERE x.stream_id = q.id AND x.user_id = e.user_id AND x.state = 'added')
        ELSE NOT EXISTS (SELECT 1 FROM ssf_stream_subjects x WHERE x.stream_id = q.id AND x.user_id = e.user_id AND x.state = 'removed') END END`,
  },
};

/** The newest row of `outbox_events` that every reader sees (0 for none). */
const settledSeq = (d: Dialect) => `COALESCE((SELECT o.seq FROM outbox_events o WHERE o.seq < ${d.outboxHorizon} ORDER BY o.seq DESC LIMIT 1), 0)`;

/** Where a new queue's cursor starts: past every event stored before it. */
export const NEW_QUEUE_SEQ = '(SELECT COALESCE(MAX(seq), 0) FROM outbox_events)';

const FREE = "state = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)";

/**
 * Each queue's head (its oldest pending row), found through (queue, state, event_at, event_id): one
 * probe per queue, however long its backlog: 1 when it is due and free, 0 when it is not, 2 when
 * the queue has none.
 */
const headState = (table: string, queue: string, owner: string) => `COALESCE((
  SELECT CASE WHEN d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until <= :now) THEN 1 ELSE 0 END
  FROM ${table} d WHERE d.${queue} = ${owner} AND d.state = 'pending'
  ORDER BY d.event_at, d.event_id LIMIT 1), 2)`;
const headDue = (table: string, queue: string, owner: string) => `${headState(table, queue, owner)} = 1`;
/** Due: a head due and free, or none and an event past the cursor that has happened (which it may want). */
const queueDue = (table: string, queue: string, owner: string, cursor: string) =>
  `CASE ${headState(table, queue, owner)} WHEN 1 THEN 1 WHEN 2 THEN CASE WHEN EXISTS (SELECT 1 FROM outbox_events o
    WHERE o.seq > ${cursor} AND o.event_at <= :now) THEN 1 ELSE 0 END ELSE 0 END = 1`;

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
    due: `SELECT w.id FROM webhooks w WHERE ${queueDue('webhook_deliveries', 'webhook_id', 'w.id', 'w.outbox_seq')} LIMIT :limit`,
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
      AND ${queueDue('ssf_deliveries', 'stream_id', 's.id', 's.outbox_seq')} LIMIT :limit`,
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
type CursorOperation = 'backlog' | 'nth' | 'write' | 'rewrite' | 'advance' | 'skip' | 'queues';
export type CursorKind = 'webhook' | 'ssf';
export type OutboxStatementName = `outbox.${Operation}.${OutboxKind}` | `outbox.${CursorOperation}.${CursorKind}` | 'outbox.events';

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
    const cursor = CURSOR_QUEUES[kind];
    if (cursor === undefined) continue;
    const ck = kind as CursorKind;
    const wanted = cursor.wanted(d);
    // Where the queue stands: its cursor, how far its rows are written and what the reading
    // that wrote them saw; what this reading sees; its pending rows, up to :cap; the newest
    // event every reader sees (the cursor goes no further), and the newest this one sees.
    statements[`outbox.backlog.${ck}`] = `
      SELECT q.outbox_seq AS cursor, q.outbox_written AS written, q.outbox_snapshot AS before, ${d.outboxSnapshot} AS snapshot,
        (SELECT COUNT(*) FROM (SELECT 1 FROM ${table} p WHERE p.${queue} = q.id AND p.state = 'pending' LIMIT :cap) p) AS pending,
        ${settledSeq(d)} AS settled,
        COALESCE((SELECT o.seq FROM outbox_events o ORDER BY o.seq DESC LIMIT 1), 0) AS seen
      FROM ${cursor.table} q WHERE q.id = :queue`;
    // The :offset-th event past :after that the queue wants, of those :snapshot saw: the end of a batch.
    statements[`outbox.nth.${ck}`] = `
      SELECT e.seq FROM ${cursor.table} q JOIN outbox_events e ON e.seq > :after
      WHERE q.id = :queue AND ${d.outboxSeen('e.seq', ':snapshot')} AND ${wanted} ORDER BY e.seq LIMIT 1 OFFSET :offset`;
    // The rows of the events it wants past :after up to :bound that :snapshot saw committed,
    // as the trigger wrote them before (queued when their event happened); a row written
    // already stays as it is.
    const write = (which: string) => `
      INSERT INTO ${table} (${queue}, event_id, event_at, state, attempts, queued_at, next_attempt_at)
      SELECT q.id, e.event_id, e.event_at, 'pending', 0, e.event_at, e.event_at
      FROM ${cursor.table} q JOIN outbox_events e ON e.seq > :after AND e.seq <= :bound
      WHERE q.id = :queue AND ${which} AND ${d.outboxSeen('e.seq', ':snapshot')} AND ${wanted}
      ON CONFLICT DO NOTHING`;
    statements[`outbox.write.${ck}`] = write('1 = 1');
    // Those of them that the reading before (:before) saw still running: found by their
    // transactions, however far back the oldest one running is.
    statements[`outbox.rewrite.${ck}`] = write(`e.seq IN (${d.outboxRunning(':before')})`);
    statements[`outbox.advance.${ck}`] = `
      UPDATE ${cursor.table} SET outbox_written = :written, outbox_seq = ${d.greatest('outbox_seq', ':cursor')}, outbox_snapshot = :snapshot
      WHERE id = :queue AND outbox_written <= :written`;
    // Past every event stored so far, without writing their rows (a stream disabled).
    statements[`outbox.skip.${ck}`] =
      `UPDATE ${cursor.table} SET outbox_seq = ${d.greatest('outbox_seq', NEW_QUEUE_SEQ)}, outbox_written = ${d.greatest('outbox_written', NEW_QUEUE_SEQ)} WHERE id = :queue`;
    statements[`outbox.queues.${ck}`] = `SELECT id FROM ${cursor.table}`;
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

/** Events past a cursor written into their queue's rows per statement when it catches up in full. */
const CATCH_UP_BATCH = 500;
/**
 * The fewest rows a claim has its queue hold before it: the claim takes the oldest events among
 * those written, and events that commit in another order than they happened are put back in
 * order among these.
 */
const FILL_BATCH = 32;

const hasCursor = (kind: OutboxKind): kind is CursorKind => CURSOR_QUEUES[kind] !== undefined;

/** How a webhook's or a stream's queue writes the rows of the events past its cursor. */
export interface OutboxCursors {
  /**
   * Writes the rows of the queue's next events, when it has fewer than `limit` pending (at
   * least FILL_BATCH): those it wants among the events past its cursor up to the `limit`-th
   * it wants (or every event there is, when fewer), and moves its cursor past them.
   */
  fill(kind: CursorKind, queue: string, limit: number): Promise<void>;
  /** Writes the rows of every event past the cursor of the queue (of every queue of the kind, when null). */
  catchUp(kind: CursorKind, queue: string | null): Promise<void>;
  /** Moves the queue's cursor past every event stored so far, writing no row. */
  skip(kind: CursorKind, queue: string): Promise<void>;
}

export function outboxCursors(q: Runner<OutboxStatementName>): OutboxCursors {
  /**
   * Writes the rows of the events past the cursor that the queue wants, in batches of `batch`
   * (one batch, unless `cap` is null; none when `cap` rows are pending already), and moves the
   * cursor to the last, or to the newest event every reader sees if that is before it
   * (`outbox_written` then says how far the rows are written): in PostgreSQL a transaction
   * still running may commit an event there later, whose row the next call writes, reading
   * again what lies between (the rows written already left as they are).
   */
  const write = async (kind: CursorKind, queue: string, batch: number, cap: number | null): Promise<void> => {
    const row = await q.one(`outbox.backlog.${kind}`, { queue, cap: cap ?? 1 });
    if (row === undefined) return;
    const [cursor, written, settled, seen] = ['cursor', 'written', 'settled', 'seen'].map((column) => Number(row[column])) as [number, number, number, number];
    if (seen <= cursor || (cap !== null && Number(row['pending']) >= cap)) return;
    const snapshot = rows.textOrNull(row, 'snapshot');
    // What the reading before did not see: committed since, or still to come.
    const before = rows.textOrNull(row, 'before');
    if (written > cursor && before !== null) await q.changed(`outbox.rewrite.${kind}`, { queue, after: cursor, bound: written, snapshot, before });
    let after = Math.max(cursor, written);
    while (after < seen) {
      const nth = await q.one(`outbox.nth.${kind}`, { queue, after, offset: batch - 1, snapshot });
      const bound = nth === undefined ? seen : Number(nth['seq']);
      await q.changed(`outbox.write.${kind}`, { queue, after, bound, snapshot });
      after = bound;
      if (cap !== null) break;
    }
    await q.changed(`outbox.advance.${kind}`, { queue, written: after, cursor: Math.min(after, settled), snapshot });
  };
  return {
    fill: (kind, queue, limit) => write(kind, queue, Math.max(limit, FILL_BATCH), Math.max(limit, FILL_BATCH)),
    catchUp: async (kind, queue) => {
      if (queue !== null) return write(kind, queue, CATCH_UP_BATCH, null);
      for (const row of await q.all(`outbox.queues.${kind}`)) await write(kind, rows.text(row, 'id'), CATCH_UP_BATCH, null);
    },
    skip: async (kind, queue) => void (await q.changed(`outbox.skip.${kind}`, { queue })),
  };
}

export function outboxStore(d: Dialect, q: Runner<OutboxStatementName>): OutboxStore {
  const { read } = d;
  const settled = (row: Row | undefined) => (row === undefined ? null : rows.oneOf(STATES, 'state', rows.text(row, 'state')));
  const cursors = outboxCursors(q);
  return {
    due: async (kind, now, limit) => (await q.all(`outbox.due.${kind}`, { now, limit })).map((row) => rows.text(row, 'id')),
    claim: async (kind, queue, now, leaseUntil, limit) => {
      if (hasCursor(kind)) await cursors.fill(kind, queue, limit);
      return oldestFirst(kind, await q.all(`outbox.claim.${kind}`, { queue, now, leaseUntil, limit })).map((row) => recordOf(kind, row, read));
    },
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
    list: async (kind, filter) => {
      if (hasCursor(kind)) await cursors.catchUp(kind, filter.queue);
      return (await q.all(`outbox.list.${kind}`, { queue: filter.queue, state: filter.state ?? null, limit: filter.limit })).map((row) =>
        recordOf(kind, row, read),
      );
    },
    replay: (kind, queue, item, now) => q.changed(`outbox.replay.${kind}`, { queue, item, now }),
    countByState: async (kind) => {
      if (hasCursor(kind)) await cursors.catchUp(kind, null);
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

/**
 * Shared Signals streams and their deliveries (`../ssf.ts`): statements written once, and the
 * store over a driver's `Runner`. The delivery rows are written by the outbox (./outbox.ts)
 * from the events past the stream's cursor, which starts at its creation; they are claimed,
 * settled and released as the webhooks' are (./webhooks.ts), and acknowledged by a polling
 * receiver. A change to what a stream hears (its status, events, subjects) first writes the
 * rows of the events before it, under the rules they came under.
 */
import { DEFAULT_SUBJECTS, DELIVERY_POLL, DELIVERY_PUSH, STREAM_STATUSES, SUBJECT_FORMATS } from '../../core/ssf.ts';
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { Stores } from '../types.ts';
import { DuplicateError } from '../errors.ts';
import type { SsfStreamRecord } from '../ssf.ts';
import type { Dialect, Runner } from './dialect.ts';
import { NEW_QUEUE_SEQ, outboxCursors, outboxStore, ssfDeliveryFromRow, type OutboxStatementName } from './outbox.ts';

/** The statements, by name, in `d`'s SQL. */
export function ssfStatements(_d: Dialect) {
  const delivery = 'stream_id = :streamId AND event_id = :eventId';
  return {
    insertSsfStream: `
      INSERT INTO ssf_streams (id, client_id, audience, events_requested, events_delivered, delivery_method, endpoint_url, authorization_header, format, default_subjects, description, status, reason, created_at, updated_at, outbox_seq, outbox_written)
      VALUES (:id, :clientId, :audience, :eventsRequested, :eventsDelivered, :deliveryMethod, :endpointUrl, :authorizationHeader, :format, :defaultSubjects, :description, :status, :reason, :createdAt, :updatedAt, ${NEW_QUEUE_SEQ}, ${NEW_QUEUE_SEQ})
      ON CONFLICT DO NOTHING`,
    getSsfStream: 'SELECT * FROM ssf_streams WHERE id = :id',
    listSsfStreams: 'SELECT * FROM ssf_streams WHERE client_id = :clientId ORDER BY created_at, id',
    listAllSsfStreams: 'SELECT * FROM ssf_streams ORDER BY created_at, id',
    countSsfStreams: 'SELECT COUNT(*) AS count FROM ssf_streams WHERE client_id = :clientId',
    saveSsfStream: `
      UPDATE ssf_streams SET audience = :audience, events_requested = :eventsRequested, events_delivered = :eventsDelivered,
        delivery_method = :deliveryMethod, endpoint_url = :endpointUrl, authorization_header = :authorizationHeader, format = :format,
        description = :description, status = :status, reason = :reason, updated_at = :updatedAt
      WHERE id = :id`,
    // Its deliveries go with it: ON DELETE CASCADE.
    removeSsfStream: 'DELETE FROM ssf_streams WHERE id = :id',
    // The last word about a person stands.
    setSsfSubject: `
      INSERT INTO ssf_stream_subjects (stream_id, user_id, state, verified, updated_at) VALUES (:streamId, :userId, :state, :verified, :updatedAt)
      ON CONFLICT (stream_id, user_id) DO UPDATE SET state = excluded.state, verified = excluded.verified, updated_at = excluded.updated_at`,
    listSsfSubjects: 'SELECT * FROM ssf_stream_subjects WHERE stream_id = :streamId ORDER BY updated_at, user_id',
    dropPendingSsf: "DELETE FROM ssf_deliveries WHERE stream_id = :streamId AND state = 'pending'",
    pendingSsfDeliveries: `
      SELECT * FROM ssf_deliveries WHERE stream_id = :streamId AND state = 'pending'
      ORDER BY event_at, event_id LIMIT :limit`,
    acknowledgeSsfDelivery: `
      UPDATE ssf_deliveries SET state = 'delivered', delivered_at = :now, attempts = attempts + 1, lease_until = NULL, last_error = NULL
      WHERE ${delivery} AND state = 'pending'`,
    refuseSsfDelivery: `
      UPDATE ssf_deliveries SET state = 'dead', attempts = attempts + 1, lease_until = NULL, last_error = :error
      WHERE ${delivery} AND state = 'pending'`,
  };
}

const METHODS = [DELIVERY_PUSH, DELIVERY_POLL] as const;

function streamFromRow(row: Row, read: ColumnReader): SsfStreamRecord {
  return {
    id: rows.text(row, 'id'),
    clientId: rows.text(row, 'client_id'),
    audience: read.strings(row, 'audience'),
    eventsRequested: read.strings(row, 'events_requested'),
    eventsDelivered: read.strings(row, 'events_delivered'),
    deliveryMethod: rows.oneOf(METHODS, 'delivery_method', rows.text(row, 'delivery_method')),
    endpointUrl: rows.textOrNull(row, 'endpoint_url'),
    authorizationHeader: row['authorization_header'] === null ? null : read.object(row, 'authorization_header'),
    format: rows.oneOf(SUBJECT_FORMATS, 'format', rows.text(row, 'format')),
    defaultSubjects: rows.oneOf(DEFAULT_SUBJECTS, 'default_subjects', rows.text(row, 'default_subjects')),
    description: rows.textOrNull(row, 'description'),
    status: rows.oneOf(STREAM_STATUSES, 'status', rows.text(row, 'status')),
    reason: rows.textOrNull(row, 'reason'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

export function ssfStores(d: Dialect, q: Runner<keyof ReturnType<typeof ssfStatements> | OutboxStatementName>): Pick<Stores, 'ssf'> {
  const { read } = d;
  const outbox = outboxStore(d, q);
  const cursors = outboxCursors(q);
  const streamParams = (stream: SsfStreamRecord) => ({
    id: stream.id,
    audience: d.list(stream.audience),
    eventsRequested: d.list(stream.eventsRequested),
    eventsDelivered: d.list(stream.eventsDelivered),
    deliveryMethod: stream.deliveryMethod,
    endpointUrl: stream.endpointUrl,
    authorizationHeader: stream.authorizationHeader === null ? null : JSON.stringify(stream.authorizationHeader),
    format: stream.format,
    description: stream.description,
    status: stream.status,
    reason: stream.reason,
    updatedAt: stream.updatedAt,
  });
  return {
    ssf: {
      async createStream(stream) {
        const inserted = await q.changed('insertSsfStream', {
          ...streamParams(stream),
          clientId: stream.clientId,
          defaultSubjects: stream.defaultSubjects,
          createdAt: stream.createdAt,
        });
        if (inserted === 0) throw new DuplicateError(`stream ${stream.id}`);
      },
      getStream: async (id) => {
        const row = await q.one('getSsfStream', { id });
        return row === undefined ? null : streamFromRow(row, read);
      },
      listStreams: async (clientId) => (await q.all('listSsfStreams', { clientId })).map((row) => streamFromRow(row, read)),
      listAllStreams: async () => (await q.all('listAllSsfStreams')).map((row) => streamFromRow(row, read)),
      countStreams: async (clientId) => Number((await q.one('countSsfStreams', { clientId }))?.['count'] ?? 0),
      saveStream: async (stream) => {
        await cursors.catchUp('ssf', stream.id);
        return (await q.changed('saveSsfStream', streamParams(stream))) > 0;
      },
      removeStream: async (id) => (await q.changed('removeSsfStream', { id })) > 0,
      setSubject: async (subject) => {
        await cursors.catchUp('ssf', subject.streamId);
        await q.changed('setSsfSubject', {
          streamId: subject.streamId,
          userId: subject.userId,
          state: subject.state,
          verified: d.flag(subject.verified),
          updatedAt: subject.updatedAt,
        });
      },
      subjects: async (streamId) =>
        (await q.all('listSsfSubjects', { streamId })).map((row) => ({
          streamId: rows.text(row, 'stream_id'),
          userId: rows.text(row, 'user_id'),
          state: rows.oneOf(['added', 'removed'] as const, 'state', rows.text(row, 'state')),
          verified: read.boolean(row, 'verified'),
          updatedAt: rows.integer(row, 'updated_at'),
        })),
      dropPending: async (streamId) => {
        await cursors.skip('ssf', streamId);
        return q.changed('dropPendingSsf', { streamId });
      },
      due: (now, limit) => outbox.due('ssf', now, limit),
      claim: async (streamId, now, leaseUntil) => (await outbox.claim('ssf', streamId, now, leaseUntil, 1))[0] ?? null,
      event: async (eventId) => (await outbox.events([eventId])).get(eventId) ?? null,
      settle: (streamId, eventId, attempts, outcome, now) => outbox.settle('ssf', streamId, eventId, attempts, outcome, now),
      release: (streamId, eventId, attempts, now) => outbox.release('ssf', streamId, eventId, attempts, now),
      pending: async (streamId, limit) => {
        await cursors.catchUp('ssf', streamId);
        return (await q.all('pendingSsfDeliveries', { streamId, limit })).map(ssfDeliveryFromRow);
      },
      acknowledge: async (streamId, eventIds, now) => {
        let count = 0;
        for (const eventId of new Set(eventIds)) count += await q.changed('acknowledgeSsfDelivery', { streamId, eventId, now });
        return count;
      },
      refuse: async (streamId, eventId, error) => (await q.changed('refuseSsfDelivery', { streamId, eventId, error: error.slice(0, 500) })) > 0,
      deliveries: (streamId, limit) => outbox.list('ssf', { queue: streamId, limit }),
      countByState: () => outbox.countByState('ssf'),
    },
  };
}

/**
 * Shared Signals streams and their deliveries (`../ssf.ts`): statements written once, and the
 * store over a driver's `Runner`. The delivery rows are inserted by the trigger on `events`
 * (migrations.ts, version 40), never here; they are claimed, settled and released as the
 * webhooks' are (./webhooks.ts), and acknowledged by a polling receiver.
 */
import { DELIVERY_POLL, DELIVERY_PUSH, STREAM_STATUSES, SUBJECT_FORMATS } from '../../core/ssf.ts';
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { Stores } from '../types.ts';
import { DuplicateError } from '../errors.ts';
import type { SsfDeliveryRecord, SsfStreamRecord } from '../ssf.ts';
import type { DeliveryState } from '../webhooks.ts';
import type { Dialect, Runner } from './dialect.ts';
import { eventFromRow } from './events.ts';

/** The statements, by name, in `d`'s SQL. */
export function ssfStatements(_d: Dialect) {
  const delivery = 'stream_id = :streamId AND event_id = :eventId';
  return {
    insertSsfStream: `
      INSERT INTO ssf_streams (id, client_id, audience, events_requested, events_delivered, delivery_method, endpoint_url, authorization_header, format, description, status, reason, created_at, updated_at)
      VALUES (:id, :clientId, :audience, :eventsRequested, :eventsDelivered, :deliveryMethod, :endpointUrl, :authorizationHeader, :format, :description, :status, :reason, :createdAt, :updatedAt)
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
    dropPendingSsf: "DELETE FROM ssf_deliveries WHERE stream_id = :streamId AND state = 'pending'",
    // Each pushing, enabled stream's head, as the webhooks' `dueWebhooks`: one probe a stream.
    dueSsfStreams: `
      SELECT s.id FROM ssf_streams s WHERE s.delivery_method = '${DELIVERY_PUSH}' AND s.status = 'enabled' AND (
        SELECT CASE WHEN d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until <= :now) THEN 1 ELSE 0 END
        FROM ssf_deliveries d WHERE d.stream_id = s.id AND d.state = 'pending'
        ORDER BY d.event_at, d.event_id LIMIT 1) = 1
      LIMIT :limit`,
    // The stream's head, taken only if due and free: later events wait behind it (in order).
    claimSsfDelivery: `
      UPDATE ssf_deliveries SET attempts = attempts + 1, lease_until = :leaseUntil
      WHERE stream_id = :streamId AND state = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)
        AND event_id = (
          SELECT event_id FROM ssf_deliveries
          WHERE stream_id = :streamId AND state = 'pending'
          ORDER BY event_at, event_id LIMIT 1)
      RETURNING *`,
    ssfEvent: 'SELECT * FROM events WHERE id = :eventId',
    deliveredSsf: `
      UPDATE ssf_deliveries SET state = 'delivered', delivered_at = :now, lease_until = NULL, last_status = :status, last_error = NULL
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    failedSsf: `
      UPDATE ssf_deliveries SET state = CASE WHEN queued_at <= :deadBefore THEN 'dead' ELSE 'pending' END,
        next_attempt_at = :nextAttemptAt, lease_until = NULL, last_status = :status, last_error = :error
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    releaseSsfDelivery: `
      UPDATE ssf_deliveries SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = :now
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'`,
    pendingSsfDeliveries: `
      SELECT * FROM ssf_deliveries WHERE stream_id = :streamId AND state = 'pending'
      ORDER BY event_at, event_id LIMIT :limit`,
    acknowledgeSsfDelivery: `
      UPDATE ssf_deliveries SET state = 'delivered', delivered_at = :now, attempts = attempts + 1, lease_until = NULL, last_error = NULL
      WHERE ${delivery} AND state = 'pending'`,
    refuseSsfDelivery: `
      UPDATE ssf_deliveries SET state = 'dead', attempts = attempts + 1, lease_until = NULL, last_error = :error
      WHERE ${delivery} AND state = 'pending'`,
    countSsfDeliveries: "SELECT state, COUNT(*) AS count FROM ssf_deliveries WHERE state <> 'delivered' GROUP BY state",
    listSsfDeliveries: `
      SELECT * FROM ssf_deliveries WHERE stream_id = :streamId
      ORDER BY event_at DESC, event_id DESC LIMIT :limit`,
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
    description: rows.textOrNull(row, 'description'),
    status: rows.oneOf(STREAM_STATUSES, 'status', rows.text(row, 'status')),
    reason: rows.textOrNull(row, 'reason'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

const STATES: readonly DeliveryState[] = ['pending', 'delivered', 'dead'];

function deliveryFromRow(row: Row): SsfDeliveryRecord {
  return {
    streamId: rows.text(row, 'stream_id'),
    eventId: rows.text(row, 'event_id'),
    eventAt: rows.integer(row, 'event_at'),
    state: rows.oneOf(STATES, 'state', rows.text(row, 'state')),
    attempts: rows.integer(row, 'attempts'),
    queuedAt: rows.integer(row, 'queued_at'),
    nextAttemptAt: rows.integer(row, 'next_attempt_at'),
    leaseUntil: rows.integerOrNull(row, 'lease_until'),
    deliveredAt: rows.integerOrNull(row, 'delivered_at'),
    lastStatus: rows.integerOrNull(row, 'last_status'),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

export function ssfStores(d: Dialect, q: Runner<keyof ReturnType<typeof ssfStatements>>): Pick<Stores, 'ssf'> {
  const { read } = d;
  const settled = (row: Row | undefined) => (row === undefined ? null : rows.oneOf(STATES, 'state', rows.text(row, 'state')));
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
        const inserted = await q.changed('insertSsfStream', { ...streamParams(stream), clientId: stream.clientId, createdAt: stream.createdAt });
        if (inserted === 0) throw new DuplicateError(`stream ${stream.id}`);
      },
      getStream: async (id) => {
        const row = await q.one('getSsfStream', { id });
        return row === undefined ? null : streamFromRow(row, read);
      },
      listStreams: async (clientId) => (await q.all('listSsfStreams', { clientId })).map((row) => streamFromRow(row, read)),
      listAllStreams: async () => (await q.all('listAllSsfStreams')).map((row) => streamFromRow(row, read)),
      countStreams: async (clientId) => Number((await q.one('countSsfStreams', { clientId }))?.['count'] ?? 0),
      saveStream: async (stream) => (await q.changed('saveSsfStream', streamParams(stream))) > 0,
      removeStream: async (id) => (await q.changed('removeSsfStream', { id })) > 0,
      dropPending: (streamId) => q.changed('dropPendingSsf', { streamId }),
      due: async (now, limit) => (await q.all('dueSsfStreams', { now, limit })).map((row) => rows.text(row, 'id')),
      claim: async (streamId, now, leaseUntil) => {
        const row = await q.one('claimSsfDelivery', { streamId, now, leaseUntil });
        return row === undefined ? null : deliveryFromRow(row);
      },
      event: async (eventId) => {
        const row = await q.one('ssfEvent', { eventId });
        return row === undefined ? null : eventFromRow(row, read);
      },
      settle: async (streamId, eventId, attempts, outcome, now) =>
        outcome.kind === 'delivered'
          ? settled(await q.one('deliveredSsf', { streamId, eventId, attempts, now, status: outcome.status }))
          : settled(
              await q.one('failedSsf', {
                streamId,
                eventId,
                attempts,
                status: outcome.status,
                error: outcome.error.slice(0, 500),
                nextAttemptAt: outcome.nextAttemptAt,
                deadBefore: outcome.deadBefore,
              }),
            ),
      release: async (streamId, eventId, attempts, now) => void (await q.changed('releaseSsfDelivery', { streamId, eventId, attempts, now })),
      pending: async (streamId, limit) => (await q.all('pendingSsfDeliveries', { streamId, limit })).map(deliveryFromRow),
      acknowledge: async (streamId, eventIds, now) => {
        let count = 0;
        for (const eventId of new Set(eventIds)) count += await q.changed('acknowledgeSsfDelivery', { streamId, eventId, now });
        return count;
      },
      refuse: async (streamId, eventId, error) => (await q.changed('refuseSsfDelivery', { streamId, eventId, error: error.slice(0, 500) })) > 0,
      deliveries: async (streamId, limit) => (await q.all('listSsfDeliveries', { streamId, limit })).map(deliveryFromRow),
      countByState: async () => {
        const counts = { pending: 0, dead: 0 };
        for (const row of await q.all('countSsfDeliveries')) {
          const state = rows.text(row, 'state');
          if (state === 'pending' || state === 'dead') counts[state] = Number(row['count']);
        }
        return counts;
      },
    },
  };
}

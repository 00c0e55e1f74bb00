/**
 * The audit trail: its statements, rows and store.
 */

import { type AuditEvent, type DetailValue, isEventType } from '../../core/events.ts';
import { type ColumnReader, CorruptRowError, integer, type Row, text, textOrNull } from '../rows.ts';
import type { Stores } from '../types.ts';
import { type Dialect, type Params, queries, type Runner } from './dialect.ts';

export function eventFromRow(row: Row, read: ColumnReader): AuditEvent {
  const type = text(row, 'type');
  if (!isEventType(type)) throw new CorruptRowError('type', 'an event type', type);
  const detail = read.object(row, 'detail');
  for (const [key, value] of Object.entries(detail)) {
    if (value !== null && !['string', 'number', 'boolean'].includes(typeof value))
      throw new CorruptRowError(`detail.${key}`, 'a string, number, boolean or null', value);
  }
  return {
    id: text(row, 'id'),
    type,
    at: integer(row, 'at'),
    userId: textOrNull(row, 'user_id'),
    username: textOrNull(row, 'username'),
    clientId: textOrNull(row, 'client_id'),
    grantId: textOrNull(row, 'grant_id'),
    ip: textOrNull(row, 'ip'),
    userAgent: textOrNull(row, 'user_agent'),
    detail: detail as Record<string, DetailValue>,
  };
}

/** An event's columns: its details as JSON text (`jsonb` in PostgreSQL parses it). */
export function eventParams(event: AuditEvent): Params {
  return { ...event, detail: JSON.stringify(event.detail) };
}

/** The statements, by name, in `d`'s SQL. */
export function eventsStatements(d: Dialect) {
  return {
    insertEvent: `
      INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail)
      VALUES (:id, :type, :at, :userId, :username, :clientId, :grantId, :ip, :userAgent, :detail)`,
    // Each filter is off when its parameter is null; the casts tell PostgreSQL the types.
    listEvents: `
      SELECT * FROM events
      WHERE ((CAST(:userId AS TEXT) IS NULL AND CAST(:username AS TEXT) IS NULL) OR user_id = :userId OR username = :username)
        AND (CAST(:clientId AS TEXT) IS NULL OR client_id = :clientId)
        AND (CAST(:type AS TEXT) IS NULL OR type = :type)
        AND (${d.bigint(':since')} IS NULL OR at >= :since)
        AND (CAST(:beforeId AS TEXT) IS NULL OR at < :beforeAt OR (at = :beforeAt AND id < :beforeId))
      ORDER BY at DESC, id DESC
      LIMIT :limit`,
    countEventsByType: 'SELECT type, COUNT(*) AS count FROM events WHERE at >= :since GROUP BY type',
    purgeEvents: d.purge('events', 'id', 'at < :before'),
  };
}

export function eventsStores(d: Dialect, q: Runner<keyof ReturnType<typeof eventsStatements>>): Pick<Stores, 'events'> {
  const { read } = d;
  const { every, write } = queries(q);
  return {
    events: {
      add: (event) => write('insertEvent', eventParams(event)),
      list: (filter) =>
        every(
          'listEvents',
          {
            userId: filter.userId ?? null,
            username: filter.username ?? null,
            clientId: filter.clientId ?? null,
            type: filter.type ?? null,
            since: filter.since ?? null,
            beforeAt: filter.before?.at ?? null,
            beforeId: filter.before?.id ?? null,
            limit: filter.limit,
          },
          (row) => eventFromRow(row, read),
        ),
      // COUNT(*) is a bigint in PostgreSQL, which the driver reads as a number.
      countByType: async (since) =>
        new Map(
          await every('countEventsByType', { since }, (row) => {
            const type = text(row, 'type');
            if (!isEventType(type)) throw new CorruptRowError('type', 'an event type', type);
            return [type, Number(row['count'])] as const;
          }),
        ),
    },
  };
}

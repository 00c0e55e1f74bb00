/**
 * The audit trail: its statements, rows and store.
 */

import { type AuditEvent, type DetailValue, isEventType } from '../../core/events.ts';
import { type ColumnReader, CorruptRowError, integer, type Row, text, textOrNull } from '../rows.ts';
import type { EventFilter } from '../events.ts';
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

/**
 * The audit trail's page for `filter`, newest first, with a term for each filter it has and
 * none for the others, so that the planner reads a person's events through events_user_id_at
 * and an app's through events_client_id_at. One statement whose terms a null parameter switched
 * off (`:userId IS NULL OR user_id = :userId`) was planned once for every filter: it walked
 * the whole trail in time order, 234 ms on SQLite for a person's five events among a million,
 * on the event loop, at every view of their account page.
 */
export function listEventsQuery(filter: EventFilter): { readonly sql: string; readonly params: Params } {
  const terms: string[] = [];
  const params: Record<string, string | number> = { limit: filter.limit };
  const { userId, username, clientId, type, since, before } = filter;
  // A person: by their id, or for events that name only what was typed (a failed sign-in) by the username.
  if (userId !== undefined && username !== undefined) terms.push('(user_id = :userId OR username = :username)');
  else if (userId !== undefined) terms.push('user_id = :userId');
  else if (username !== undefined) terms.push('username = :username');
  if (userId !== undefined) params['userId'] = userId;
  if (username !== undefined) params['username'] = username;
  if (clientId !== undefined) {
    terms.push('client_id = :clientId');
    params['clientId'] = clientId;
  }
  if (type !== undefined) {
    terms.push('type = :type');
    params['type'] = type;
  }
  if (since !== undefined) {
    terms.push('at >= :since');
    params['since'] = since;
  }
  if (before !== undefined) {
    terms.push('(at < :beforeAt OR (at = :beforeAt AND id < :beforeId))');
    params['beforeAt'] = before.at;
    params['beforeId'] = before.id;
  }
  const where = terms.length === 0 ? '' : ` WHERE ${terms.join(' AND ')}`;
  return { sql: `SELECT * FROM events${where} ORDER BY at DESC, id DESC LIMIT :limit`, params };
}

/** The statements, by name, in `d`'s SQL. */
export function eventsStatements(d: Dialect) {
  return {
    insertEvent: `
      INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail)
      VALUES (:id, :type, :at, :userId, :username, :clientId, :grantId, :ip, :userAgent, :detail)`,
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
      list: async (filter) => {
        const { sql, params } = listEventsQuery(filter);
        return (await q.select(sql, params)).map((row) => eventFromRow(row, read));
      },
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

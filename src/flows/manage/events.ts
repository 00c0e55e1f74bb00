/** Reading the audit trail: the one implementation `tessera events` and the admin API call. */
import { EVENT_TYPES, isEventType, type AuditEvent, type EventType } from '../../core/events.ts';
import { normalizeUsername } from '../../core/username.ts';
import type { ManageDeps } from './deps.ts';
import { field, invalid } from './errors.ts';

/** How many events one read returns at most, and by default. */
export const MAX_EVENTS = 10_000;
export const DEFAULT_EVENTS = 100;

export interface EventQuery {
  readonly username?: string;
  readonly clientId?: string;
  readonly type?: string;
  /** Milliseconds since the epoch: events at or after it. */
  readonly since?: number;
  readonly limit?: number;
  /** The page after the event this cursor names (`eventCursor`). */
  readonly after?: string;
}

/** An opaque cursor naming an event's place in the newest-first list: the next page starts after it. */
export function eventCursor(event: AuditEvent): string {
  return Buffer.from(`${event.at}.${event.id}`).toString('base64url');
}

function parseCursor(cursor: string): { at: number; id: string } {
  const text = cursor.length > 200 ? '' : Buffer.from(cursor, 'base64url').toString('utf8');
  const dot = text.indexOf('.');
  const at = text.slice(0, dot);
  const id = text.slice(dot + 1);
  if (dot < 0 || !/^\d{1,15}$/.test(at) || !id || id.length > 100) throw invalid`${field('after')}: not a cursor this server gave`;
  return { at: Number(at), id };
}

/** An age (`30m`, `24h`, `7d`) or an ISO 8601 time, as milliseconds since the epoch. */
export function parseSince(raw: string, now: number): number {
  const age = /^(\d{1,6})([smhd])$/.exec(raw.trim());
  if (age) return now - Number(age[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 's' | 'm' | 'h' | 'd'];
  const time = Date.parse(raw);
  if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}/.test(raw.trim()))
    throw invalid`${field('since')} ${raw}: an ISO time (2026-01-31T12:00:00Z) or an age such as 30m, 24h, 7d`;
  return time;
}

/** An event as `tessera events --json` and the admin API give it. */
export function eventJson(event: AuditEvent): Record<string, unknown> {
  return {
    id: event.id,
    type: event.type,
    at: new Date(event.at).toISOString(),
    user_id: event.userId,
    username: event.username,
    client_id: event.clientId,
    grant_id: event.grantId,
    ip: event.ip,
    user_agent: event.userAgent,
    detail: event.detail,
  };
}

/** The audit trail, newest first, filtered. */
export async function listEvents(deps: Pick<ManageDeps, 'store'>, query: EventQuery): Promise<AuditEvent[]> {
  const { store } = deps;
  if (query.type !== undefined && !isEventType(query.type)) throw invalid`${field('type')} ${query.type}: one of ${EVENT_TYPES.join(', ')}`;
  const limit = query.limit ?? DEFAULT_EVENTS;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_EVENTS) throw invalid`${field('limit')}: a whole number from 1 to ${MAX_EVENTS}`;
  const username = query.username === undefined ? undefined : normalizeUsername(query.username);
  // A user is found by their sub, which the events of a removed user still carry: the
  // user's record, or else the latest event that named both (their removal, a sign-in).
  let userId: string | undefined;
  if (username !== undefined) {
    userId = (await store.users.findByUsername(username))?.id;
    userId ??= (await store.events.list({ username, limit: 1000 })).find((event) => event.username === username && event.userId !== null)?.userId ?? username;
  }
  const listed = await store.events.list({
    ...(username === undefined ? {} : { userId, username }),
    ...(query.clientId === undefined ? {} : { clientId: query.clientId }),
    ...(query.type === undefined || !isEventType(query.type) ? {} : { type: query.type }),
    ...(query.since === undefined ? {} : { since: query.since }),
    ...(query.after === undefined ? {} : { before: parseCursor(query.after) }),
    limit,
  });
  // Events a flow recorded with the user's id alone are shown with their username too.
  const ids = [...new Set(listed.filter((event) => event.username === null && event.userId !== null).map((event) => event.userId!))];
  const names = new Map(await Promise.all(ids.map(async (id) => [id, (await store.users.get(id))?.username ?? null] as const)));
  return listed.map((event) => (event.username === null && event.userId !== null ? { ...event, username: names.get(event.userId) ?? null } : event));
}

/** The windows the console's dashboard counts over, by name: the last hour and the last day. */
export const COUNT_WINDOWS = { hour: 3_600_000, day: 86_400_000 } as const;

/** How many events of each type the audit trail has over each window up to `now`, counted by the store. */
export async function eventCounts(deps: Pick<ManageDeps, 'store'>, now: number): Promise<Record<keyof typeof COUNT_WINDOWS, Map<EventType, number>>> {
  const [hour, day] = await Promise.all([deps.store.events.countByType(now - COUNT_WINDOWS.hour), deps.store.events.countByType(now - COUNT_WINDOWS.day)]);
  return { hour, day };
}

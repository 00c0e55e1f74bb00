/** Reading the audit trail: the one implementation `tessera events` and the admin API call. */
import { EVENT_TYPES, isEventType, type AuditEvent } from '../../core/events.ts';
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
}

/** An age (`30m`, `24h`, `7d`) or an ISO 8601 time, as milliseconds since the epoch. */
export function parseSince(raw: string, now: number): number {
  const age = /^(\d{1,6})([smhd])$/.exec(raw.trim());
  if (age) return now - Number(age[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 's' | 'm' | 'h' | 'd'];
  const time = Date.parse(raw);
  if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}/.test(raw.trim())) throw invalid`${field('since')} ${raw}: an ISO time (2026-01-31T12:00:00Z) or an age such as 30m, 24h, 7d`;
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
    limit,
  });
  // Events a flow recorded with the user's id alone are shown with their username too.
  const ids = [...new Set(listed.filter((event) => event.username === null && event.userId !== null).map((event) => event.userId!))];
  const names = new Map(await Promise.all(ids.map(async (id) => [id, (await store.users.get(id))?.username ?? null] as const)));
  return listed.map((event) => (event.username === null && event.userId !== null ? { ...event, username: names.get(event.userId) ?? null } : event));
}

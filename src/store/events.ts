/**
 * The audit trail's storage (core/events.ts says what an event is).
 */

import type { AuditEvent, EventType, EventWriter } from '../core/events.ts';

/** What `EventStore.list` returns: every filter given must match. */
export interface EventFilter {
  /** The user's id or, for events that name only what was typed (a failed sign-in), the username. */
  readonly userId?: string;
  readonly username?: string;
  readonly clientId?: string;
  readonly type?: EventType;
  /** Events at or after this time. */
  readonly since?: number;
  /** Events listed after this one (newest first: older, or as old with a smaller id): the next page. */
  readonly before?: { readonly at: number; readonly id: string };
  /** At most this many, newest first. */
  readonly limit: number;
}

/** The audit trail (core/events.ts), kept for `TESSERA_EVENT_RETENTION`. */
export interface EventStore extends EventWriter {
  add(event: AuditEvent): Promise<void>;
  /** Newest first. */
  list(filter: EventFilter): Promise<AuditEvent[]>;
  /** How many events of each type there are from `since` on (the console's dashboard); a type with none is absent. */
  countByType(since: number): Promise<Map<EventType, number>>;
}

/**
 * The outbox: every delivery Tessera owes someone, of three kinds, each in its own table of
 * rows, owed from the transaction of the event it announces (for webhooks and Shared Signals
 * streams, a row of `outbox_events` that a trigger on `events` writes, from which each webhook
 * and stream writes its own rows past its cursor, before it claims, lists or counts them:
 * ./sql/outbox.ts; for mail, `MailStore.enqueue`), and handed out by the same
 * statements whatever the kind (./sql/outbox.ts): claimed by one conditional UPDATE, leased,
 * settled only by the try that holds it, retried, given up as a dead letter, replayed.
 *
 * A delivery belongs to a queue: a webhook's or a stream's deliveries go out one queue at a
 * time, in the order of their events (a claim takes the queue's oldest pending deliveries, and
 * only when the oldest is due and free); a message is a queue of its own, in no order.
 */
import type { AuditEvent } from '../core/events.ts';
import type { MailDeliveryRecord } from './mail.ts';
import type { SsfDeliveryRecord } from './ssf.ts';
import type { DeliveryState, WebhookDeliveryRecord } from './webhooks.ts';

export const OUTBOX_KINDS = ['webhook', 'ssf', 'mail'] as const;
/** What a delivery is: a webhook's message, a Security Event Token pushed to a stream, a mail. */
export type OutboxKind = (typeof OUTBOX_KINDS)[number];

/** A delivery of each kind, as its own store has it. */
export interface OutboxRecords {
  readonly webhook: WebhookDeliveryRecord;
  readonly ssf: SsfDeliveryRecord;
  readonly mail: MailDeliveryRecord;
}

/** How a try went: `status` is the HTTP answer's (null for none, and for mail). */
export type OutboxOutcome =
  | { readonly kind: 'delivered'; readonly status: number | null }
  /** Failed: tried again at `nextAttemptAt`, or dead if the window that started at `queuedAt` ended before `deadBefore`. */
  | { readonly kind: 'failed'; readonly status: number | null; readonly error: string; readonly nextAttemptAt: number; readonly deadBefore: number };

export interface OutboxFilter {
  /** Its queue (a webhook, a stream, a message); every queue's when null. */
  readonly queue: string | null;
  readonly state?: DeliveryState;
  /** At most this many, newest first. */
  readonly limit: number;
}

export interface OutboxStore {
  /**
   * Queues whose oldest pending delivery is due at `now` and not leased (at most `limit`):
   * webhooks; push streams that are enabled; messages. A webhook or stream with none pending
   * is due when an event has happened past its cursor (one it may not want: its claim then
   * moves the cursor on).
   */
  due(kind: OutboxKind, now: number, limit: number): Promise<string[]>;
  /**
   * Claims up to `limit` of the queue's oldest pending deliveries, when the oldest is due and
   * nobody holds it: one conditional UPDATE, so that of several instances one wins. Each is
   * counted as tried and leased until `leaseUntil`. Oldest first; empty when nothing is due.
   * A webhook's or stream's next deliveries are written first, when it has fewer than `limit`
   * (at least a batch of 32) pending.
   */
  claim<K extends OutboxKind>(kind: K, queue: string, now: number, leaseUntil: number, limit: number): Promise<OutboxRecords[K][]>;
  /**
   * Records how try number `attempts` of the delivery `item` (the event's id; a message's own
   * id) went: the state it leaves, or null when that try is no longer the delivery's (its lease
   * ran out and another instance took it). A mail keeps no status.
   */
  settle(kind: OutboxKind, queue: string, item: string, attempts: number, outcome: OutboxOutcome, now: number): Promise<DeliveryState | null>;
  /** Gives a claimed delivery back, uncounted, due at `now` (a server stopping, or one behind a failed try). */
  release(kind: OutboxKind, queue: string, item: string, attempts: number, now: number): Promise<void>;
  /** Deliveries, newest first (every delivery owed so far written first). */
  list<K extends OutboxKind>(kind: K, filter: OutboxFilter): Promise<OutboxRecords[K][]>;
  /**
   * Dead letters (of a queue or of every queue; one, or all when `item` is null) made pending
   * again, with a new retry window from `now`; returns how many.
   */
  replay(kind: OutboxKind, queue: string | null, item: string | null, now: number): Promise<number>;
  /** How many are pending and dead (the metrics' gauges; every delivery owed so far written first). */
  countByState(kind: OutboxKind): Promise<{ readonly pending: number; readonly dead: number }>;
  /** The events of the audit trail among `ids` (one read for a claimed batch); those purged are absent. */
  events(ids: readonly string[]): Promise<ReadonlyMap<string, AuditEvent>>;
}

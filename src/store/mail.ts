/**
 * Mail in the outbox: each message is a row written in the transaction of the event it
 * announces (a reset link asked for, a password changed), beside the webhooks' deliveries,
 * and sent by whichever instance claims it first (one conditional UPDATE), retried with
 * backoff until a retry window ends, then a dead letter. The message itself (its address and
 * its link, which is a bearer secret) is sealed under the key encryption key, and dropped
 * once it is delivered.
 */
import type { DeliveryState } from './webhooks.ts';

export interface MailDeliveryRecord {
  readonly id: string;
  /** The event the message announces: it goes with it when the audit trail is purged. */
  readonly eventId: string;
  /** What kind of message (flows/mail/outbox.ts `MailKind`). */
  readonly kind: string;
  /** The message, sealed (tokens/secret-box.ts); null once delivered. */
  readonly message: Readonly<Record<string, unknown>> | null;
  readonly state: DeliveryState;
  /** Tries so far, counting one under way. */
  readonly attempts: number;
  /** When the retry window started. */
  readonly queuedAt: number;
  readonly nextAttemptAt: number;
  readonly leaseUntil: number | null;
  readonly deliveredAt: number | null;
  readonly lastError: string | null;
}

/** How a try went. */
export type MailOutcome =
  | { readonly kind: 'delivered' }
  /** Failed: tried again at `nextAttemptAt`, or dead if its window, from `queuedAt`, ended before `deadBefore`. */
  | { readonly kind: 'failed'; readonly error: string; readonly nextAttemptAt: number; readonly deadBefore: number };

export interface MailStore {
  /** Queues a message: call it inside the transaction of the event it announces. */
  enqueue(delivery: Pick<MailDeliveryRecord, 'id' | 'eventId' | 'kind' | 'message'>, now: number): Promise<void>;
  /**
   * Claims the oldest due message nobody holds: one conditional UPDATE, so that of several
   * instances one wins. Counts the try and leases it until `leaseUntil`; null when nothing is due.
   */
  claim(now: number, leaseUntil: number): Promise<MailDeliveryRecord | null>;
  /** Records how try number `attempts` went; the state it leaves, or null when the try is no longer the message's. */
  settle(id: string, attempts: number, outcome: MailOutcome, now: number): Promise<DeliveryState | null>;
  /** Gives a message back, uncounted, to be tried at `now` (a server stopping mid-try). */
  release(id: string, attempts: number, now: number): Promise<void>;
  /** The messages queued for an event, oldest first. */
  forEvent(eventId: string): Promise<MailDeliveryRecord[]>;
  /** How many messages are pending and dead (the metrics, an operator's check). */
  countByState(): Promise<{ readonly pending: number; readonly dead: number }>;
}

/**
 * Webhooks and their outbox. What an event owes the webhooks is written by a trigger on the
 * events table, in the transaction of the event (migrations.ts, version 45); each webhook's
 * delivery rows are written from there past its cursor (sql/outbox.ts). This store sends nothing: it hands a delivery to whoever claims it (one conditional UPDATE, so each is
 * sent by one instance at a time) and records how the try went.
 */
import type { AuditEvent } from '../core/events.ts';

export interface WebhookRecord {
  readonly id: string;
  readonly url: string;
  /** The public event types it hears (core/webhook-events.ts). */
  readonly events: readonly string[];
  /** The signing secret, sealed under the key encryption key (tokens/secret-box.ts). */
  readonly secret: Readonly<Record<string, unknown>>;
  /** The secret a rotation replaced, which still signs beside the new one until it expires. */
  readonly previousSecret: Readonly<Record<string, unknown>> | null;
  readonly previousSecretExpiresAt: number | null;
  /**
   * Added by the server's owner (the `tessera` command): its URL is requested wherever it
   * points. Else (the admin API, the console) it is held to the public network unless
   * TESSERA_ALLOW_PRIVATE_NETWORK_URLS (core/outbound.ts), on every connection.
   */
  readonly addedByOwner: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type DeliveryState = 'pending' | 'delivered' | 'dead';

export interface WebhookDeliveryRecord {
  readonly webhookId: string;
  /** The event's id: the message's `webhook-id`, the same on every try. */
  readonly eventId: string;
  readonly eventAt: number;
  readonly state: DeliveryState;
  /** Tries so far, counting one under way. */
  readonly attempts: number;
  /** When the retry window started: the event, or the last replay. */
  readonly queuedAt: number;
  readonly nextAttemptAt: number;
  readonly leaseUntil: number | null;
  readonly deliveredAt: number | null;
  /** The HTTP status of the last answer, null when none came (a timeout, a refused connection). */
  readonly lastStatus: number | null;
  readonly lastError: string | null;
}

/** How a try went, as `settle` records it. */
export type DeliveryOutcome =
  | { readonly kind: 'delivered'; readonly status: number }
  /** Failed: tried again at `nextAttemptAt`, or dead if the window that started at `queuedAt` ended before `deadBefore`. */
  | { readonly kind: 'failed'; readonly status: number | null; readonly error: string; readonly nextAttemptAt: number; readonly deadBefore: number };

/** How many of a webhook's deliveries are in each state. */
export type DeliveryCounts = Readonly<Record<DeliveryState, number>>;

export interface DeliveryFilter {
  readonly state?: DeliveryState;
  /** At most this many, newest event first. */
  readonly limit: number;
}

export interface WebhookStore {
  create(webhook: WebhookRecord): Promise<void>;
  get(id: string): Promise<WebhookRecord | null>;
  list(): Promise<WebhookRecord[]>;
  /** Removes it and its deliveries; false when there was none. */
  remove(id: string): Promise<boolean>;
  /**
   * Writes the secrets sealed again (under a new key encryption key): the same secrets, so
   * nothing else of the webhook changes; false when there is no such webhook.
   */
  reseal(id: string, secret: Readonly<Record<string, unknown>>, previousSecret: Readonly<Record<string, unknown>> | null): Promise<boolean>;
  /** Replaces the secret, keeping the old one until `previousExpiresAt` (null: not at all); false when there is no such webhook. */
  rotateSecret(id: string, secret: Readonly<Record<string, unknown>>, previousExpiresAt: number | null, now: number): Promise<boolean>;
  /** Webhooks whose oldest pending delivery is due at `now` and not leased (at most `limit`). */
  due(now: number, limit: number): Promise<string[]>;
  /**
   * Claims the oldest pending delivery of the webhook, if it is due and nobody holds it: one
   * conditional UPDATE, so that of several instances one wins, and a webhook's deliveries go
   * out one at a time, in the order of their events. Counts the try and leases it until
   * `leaseUntil`; null when there is nothing to send now.
   */
  claim(webhookId: string, now: number, leaseUntil: number): Promise<WebhookDeliveryRecord | null>;
  /** The event a delivery announces, or null when the audit trail no longer has it. */
  event(eventId: string): Promise<AuditEvent | null>;
  /**
   * Records how try number `attempts` went; returns the state the delivery is left in, or null
   * when that try is no longer the delivery's (its lease ran out and another instance took it).
   */
  settle(webhookId: string, eventId: string, attempts: number, outcome: DeliveryOutcome, now: number): Promise<DeliveryState | null>;
  /** Gives a delivery back, uncounted, to be tried at `now` (a server stopping mid-try). */
  release(webhookId: string, eventId: string, attempts: number, now: number): Promise<void>;
  /** A webhook's deliveries, newest event first. */
  deliveries(webhookId: string, filter: DeliveryFilter): Promise<WebhookDeliveryRecord[]>;
  /** Dead letters of the webhook (one, or all when `eventId` is null) made pending again, due at `now`; returns how many. */
  replay(webhookId: string, eventId: string | null, now: number): Promise<number>;
  /** How many deliveries each webhook has in each state (the console's list); a webhook without any is absent. */
  countsByWebhook(): Promise<ReadonlyMap<string, DeliveryCounts>>;
  /** How many deliveries are pending and dead, over every webhook (the metrics' gauges). */
  countByState(): Promise<{ readonly pending: number; readonly dead: number }>;
}

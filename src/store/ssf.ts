/**
 * Shared Signals streams (SSF 1.0 §8) and their outbox: the same outbox as the webhooks'
 * (store/webhooks.ts), a second table of delivery rows, written past the stream's cursor from
 * what each event owes, which a trigger on `events` writes in its transaction (migrations.ts,
 * version 45). A stream is a
 * receiver's (a client with the scope `ssf:manage`); each of its deliveries is claimed by one
 * conditional UPDATE (push) or acknowledged by its receiver (poll, RFC 8936).
 */
import type { AuditEvent } from '../core/events.ts';
import type { DefaultSubjects, SsfDeliveryMethod, StreamStatus, SubjectFormat } from '../core/ssf.ts';
import type { DeliveryOutcome, DeliveryState } from './webhooks.ts';

export interface SsfStreamRecord {
  /** SSF 1.0 §8.1.1 `stream_id`. */
  readonly id: string;
  /** The receiver: the client whose token made the stream, and the only one that sees it. */
  readonly clientId: string;
  /** `aud` of its SETs. */
  readonly audience: readonly string[];
  readonly eventsRequested: readonly string[];
  /** What it is sent: what it asked for that Tessera transmits. */
  readonly eventsDelivered: readonly string[];
  readonly deliveryMethod: SsfDeliveryMethod;
  /** Push: the receiver's endpoint (RFC 8935); null for poll, whose endpoint is Tessera's. */
  readonly endpointUrl: string | null;
  /** Push: the Authorization header to send with each SET, sealed under the key encryption key; null for none. */
  readonly authorizationHeader: Readonly<Record<string, unknown>> | null;
  readonly format: SubjectFormat;
  /** SSF 1.0 §7.1: every person's events but those removed (`ALL`), or only those added (`NONE`); fixed when it is made. */
  readonly defaultSubjects: DefaultSubjects;
  readonly description: string | null;
  readonly status: StreamStatus;
  readonly reason: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface SsfDeliveryRecord {
  readonly streamId: string;
  /** The event's id: the SET's `jti`, the same on every try. */
  readonly eventId: string;
  readonly eventAt: number;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly queuedAt: number;
  readonly nextAttemptAt: number;
  readonly leaseUntil: number | null;
  readonly deliveredAt: number | null;
  readonly lastStatus: number | null;
  readonly lastError: string | null;
}

/** SSF 1.0 §8.1.3: a person a receiver added to a stream or removed from it. */
export interface SsfSubjectRecord {
  readonly streamId: string;
  readonly userId: string;
  readonly state: 'added' | 'removed';
  /** §8.1.3.2 `verified`: whether the receiver says it verified the subject. */
  readonly verified: boolean;
  readonly updatedAt: number;
}

export interface SsfStore {
  createStream(stream: SsfStreamRecord): Promise<void>;
  getStream(id: string): Promise<SsfStreamRecord | null>;
  /** A receiver's streams, oldest first. */
  listStreams(clientId: string): Promise<SsfStreamRecord[]>;
  /** Every receiver's streams (resealing their push headers under a new key encryption key). */
  listAllStreams(): Promise<SsfStreamRecord[]>;
  /** How many streams a receiver has. */
  countStreams(clientId: string): Promise<number>;
  /**
   * Writes every field of the stream but its id, receiver and creation; false when it is gone.
   * The deliveries of the events before it are written first, by what the stream heard then.
   */
  saveStream(stream: SsfStreamRecord): Promise<boolean>;
  /** Removes it and its deliveries; false when there was none. */
  removeStream(id: string): Promise<boolean>;
  /**
   * Records a person added to the stream or removed from it (the last word stands), for the
   * events after it: the deliveries of those before are written first.
   */
  setSubject(subject: SsfSubjectRecord): Promise<void>;
  /** The people added to or removed from a stream. */
  subjects(streamId: string): Promise<SsfSubjectRecord[]>;
  /**
   * Forgets the stream's pending deliveries, and the events stored so far whose deliveries it
   * has not written (it was disabled: SSF 1.0 §8.1.2 holds nothing for later); returns how many.
   */
  dropPending(streamId: string): Promise<number>;
  /** Push streams, enabled, whose oldest pending delivery is due at `now` and not leased (at most `limit`). */
  due(now: number, limit: number): Promise<string[]>;
  /** As `WebhookStore.claim`: the stream's oldest pending delivery, if due and free, leased until `leaseUntil`. */
  claim(streamId: string, now: number, leaseUntil: number): Promise<SsfDeliveryRecord | null>;
  event(eventId: string): Promise<AuditEvent | null>;
  /** As `WebhookStore.settle`. */
  settle(streamId: string, eventId: string, attempts: number, outcome: DeliveryOutcome, now: number): Promise<DeliveryState | null>;
  release(streamId: string, eventId: string, attempts: number, now: number): Promise<void>;
  /** RFC 8936: the stream's pending deliveries, oldest event first, at most `limit`. */
  pending(streamId: string, limit: number): Promise<SsfDeliveryRecord[]>;
  /** RFC 8936 §2.4 acknowledgements: those pending among `eventIds` delivered at `now`; returns how many. */
  acknowledge(streamId: string, eventIds: readonly string[], now: number): Promise<number>;
  /** RFC 8936 §2.4 `setErrs`: a pending delivery the receiver refused, made dead with its error; false when not pending. */
  refuse(streamId: string, eventId: string, error: string, now: number): Promise<boolean>;
  /** A stream's deliveries, newest event first. */
  deliveries(streamId: string, limit: number): Promise<SsfDeliveryRecord[]>;
  /** How many deliveries are pending (pushed or waiting for a poll's acknowledgement) and dead, over every stream (the metrics' gauges). */
  countByState(): Promise<{ readonly pending: number; readonly dead: number }>;
}

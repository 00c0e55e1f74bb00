/**
 * The operator's door to the outbox's Shared Signals pushes and mail (webhooks' have theirs in
 * ./webhooks.ts): their deliveries, newest first, the dead letters among them, and the dead
 * letters sent again, with the same id (a SET's `jti`, a message's `Message-ID`) and a new
 * retry window. The `tessera ssf …` and `tessera mail …` commands and the admin API call these.
 * Who may: authority.ts `checkMayHandleDeadLetters`.
 */
import { DEFAULT_DELIVERIES, DELIVERY_STATES, deliveryJson, MAX_DELIVERIES } from './webhooks.ts';
import type { DeliveryState, MailDeliveryRecord, SsfDeliveryRecord } from '../../store/types.ts';
import { checkMayHandleDeadLetters } from './authority.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { field, invalid, notFound } from './errors.ts';

/** The kinds of delivery this door opens. */
export const DEAD_LETTER_KINDS = ['ssf', 'mail'] as const;
export type DeadLetterKind = (typeof DEAD_LETTER_KINDS)[number];

export interface OutboxQuery {
  readonly state?: string;
  readonly limit?: number;
}

function checkedQuery(query: OutboxQuery): { state?: DeliveryState; limit: number } {
  const state = query.state;
  if (state !== undefined && !(DELIVERY_STATES as readonly string[]).includes(state))
    throw invalid`${field('state')} ${state}: one of ${DELIVERY_STATES.join(', ')}`;
  const limit = query.limit ?? DEFAULT_DELIVERIES;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERIES) throw invalid`${field('limit')}: a whole number from 1 to ${MAX_DELIVERIES}`;
  return { ...(state === undefined ? {} : { state: state as DeliveryState }), limit };
}

async function checkStream(deps: Pick<ManageDeps, 'store'>, streamId: string): Promise<void> {
  if ((await deps.store.ssf.getStream(streamId)) === null) throw notFound`no Shared Signals stream with id ${streamId}`;
}

/** A stream's SETs, newest event first (pushed or waiting for a poll's acknowledgement). */
export async function listStreamDeliveries(
  deps: Pick<ManageDeps, 'store' | 'caller'>,
  streamId: string,
  query: OutboxQuery = {},
): Promise<SsfDeliveryRecord[]> {
  checkMayHandleDeadLetters(deps.caller, 'ssf', false);
  const checked = checkedQuery(query);
  await checkStream(deps, streamId);
  return deps.store.outbox.list('ssf', { queue: streamId, ...checked });
}

/** The mail in the outbox, newest first (never the message itself: its address and its link are sealed). */
export async function listMailDeliveries(deps: Pick<ManageDeps, 'store' | 'caller'>, query: OutboxQuery = {}): Promise<MailDeliveryRecord[]> {
  checkMayHandleDeadLetters(deps.caller, 'mail', false);
  return deps.store.outbox.list('mail', { queue: null, ...checkedQuery(query) });
}

/** Every stream's, or every message's, dead letters, newest first (the console's page). */
export async function deadLetters<K extends DeadLetterKind>(
  deps: Pick<ManageDeps, 'store' | 'caller'>,
  kind: K,
  limit: number,
): Promise<(K extends 'ssf' ? SsfDeliveryRecord : MailDeliveryRecord)[]> {
  checkMayHandleDeadLetters(deps.caller, kind, false);
  return (await deps.store.outbox.list(kind, { queue: null, state: 'dead', limit })) as (K extends 'ssf' ? SsfDeliveryRecord : MailDeliveryRecord)[];
}

/**
 * Sends dead letters again: a stream's (one, by its event's id, or all), or mail (one, by its
 * id, or all). Pending at once, with a new retry window; returns how many.
 */
export async function replayDeadLetters(deps: ManageDeps, kind: DeadLetterKind, queue: string | null, item: string | null): Promise<number> {
  checkMayHandleDeadLetters(deps.caller, kind, true);
  if (kind === 'ssf') {
    if (queue === null) throw invalid`${field('stream_id')}: the stream whose dead letters to send again`;
    await checkStream(deps, queue);
  }
  // A message is a queue of its own: one is named by its id.
  const replayed = await deps.store.outbox.replay(kind, kind === 'mail' ? item : queue, item, deps.clock.now());
  if (replayed === 0 && item !== null) throw notFound`no dead letter ${item}`;
  if (replayed > 0) await deps.events.emit({ type: 'outbox.replayed', detail: { kind, stream_id: queue, id: item, deliveries: replayed, by: 'operator' } });
  return replayed;
}

/** A stream's delivery as `tessera ssf deliveries --json` and the admin API give it: as a webhook's. */
export const streamDeliveryJson: (delivery: SsfDeliveryRecord) => Record<string, unknown> = deliveryJson;

/** A message as `tessera mail deliveries --json` and the admin API give it: what kind, how it went, never to whom or what. */
export function mailDeliveryJson(delivery: MailDeliveryRecord): Record<string, unknown> {
  return {
    id: delivery.id,
    event_id: delivery.eventId,
    kind: delivery.kind,
    state: delivery.state,
    attempts: delivery.attempts,
    queued_at: isoTime(delivery.queuedAt),
    next_attempt_at: delivery.state === 'pending' ? isoTime(delivery.nextAttemptAt) : null,
    delivered_at: isoTime(delivery.deliveredAt),
    last_error: delivery.lastError,
  };
}

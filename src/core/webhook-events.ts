/**
 * The event types a webhook subscribes to: names for the world outside, each the
 * public face of one or more of Tessera's own event types (core/events.ts). The audit trail
 * keeps its precise names (`user.removed`, `client.registered`); a receiver is told what
 * happened in the words webhook receivers expect (`user.deleted`, `client.created`).
 *
 * The outbox trigger (store/migrations.ts, versions 24 and 45) matches the same map in SQL,
 * so that what an event owes the webhooks is written in its transaction; the store contract
 * suite checks that the two agree type by type.
 */
import type { EventType } from './events.ts';

export const WEBHOOK_EVENTS = {
  'user.created': ['user.created'],
  'user.updated': ['user.updated', 'user.role_changed'],
  'user.disabled': ['user.disabled'],
  'user.enabled': ['user.enabled'],
  'user.deleted': ['user.removed'],
  /** A password changed or set, or the second factors reset: what CAEP calls a credential change. */
  'user.credential_changed': ['password.changed', 'user.password_set', 'user.password_reset', 'second_factor.reset'],
  'session.ended': ['logout'],
  'grant.revoked': ['grant.revoked'],
  'client.created': ['client.created', 'client.registered'],
  'client.updated': ['client.updated'],
  'client.deleted': ['client.removed'],
  'signin.failed': ['signin.failed'],
} as const satisfies Readonly<Record<string, readonly EventType[]>>;

export type WebhookEventType = keyof typeof WEBHOOK_EVENTS;

export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENTS) as WebhookEventType[];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return Object.hasOwn(WEBHOOK_EVENTS, value);
}

const PUBLIC_OF = new Map<EventType, WebhookEventType>(
  WEBHOOK_EVENT_TYPES.flatMap((name) => (WEBHOOK_EVENTS[name] as readonly EventType[]).map((type) => [type, name] as const)),
);

/** The webhook type an event is announced as, or null when no webhook hears of it. */
export function webhookTypeOf(type: EventType): WebhookEventType | null {
  return PUBLIC_OF.get(type) ?? null;
}

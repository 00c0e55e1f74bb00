/**
 * Sends webhooks' messages: the deliveries each event owes from its transaction (the trigger on
 * `events`, store/migrations.ts, version 45, and each webhook's cursor), through the outbox's worker
 * (flows/outbox/worker.ts), which claims, leases, retries and gives up as for every kind. What
 * is a webhook's own is here: a webhook is a queue (its messages go out one after another in
 * the order of their events, and a receiver that is slow, down or failing holds back only its
 * own), a message is signed with the webhook's secret (and, during a rotation, the one before),
 * a 2xx delivers it, and a dead letter is recorded as `webhook.dead_lettered`.
 */
import type { WebhookSettings } from '../../config/index.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../../core/events.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { clientUrlPost, type Poster, type UrlRule } from '../../core/outbound.ts';
import type { Store } from '../../store/types.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { webhookUrlRule } from '../manage/webhooks.ts';
import { type DeliveryKind, type DeliveryObserver, httpWorkerSettings, OutboxWorker, type TurnBudget, workerDeps } from '../outbox/worker.ts';
import { secretOwner, webhookBody, webhookHeaders } from './message.ts';

export { type DeliveryObserver, POLL_MS, retryDelay } from '../outbox/worker.ts';

export interface DispatcherDeps {
  readonly store: Pick<Store, 'webhooks' | 'outbox' | 'transaction'>;
  readonly clock: Clock;
  readonly secrets: SecretBox;
  readonly settings: WebhookSettings;
  readonly events: Pick<Events, 'record' | 'publish'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  readonly observer?: DeliveryObserver;
  /** TESSERA_ALLOW_PRIVATE_NETWORK_URLS: whether a webhook the owner did not add may reach private networks and loopback. */
  readonly allowPrivateNetworkUrls: boolean;
  /** How a message is sent, by the webhook's URL rule (null: anywhere); core/outbound.ts's guarded POST by default. */
  readonly post?: (rule: UrlRule | null) => Poster;
  /** Deliveries claimed at once (TESSERA_OUTBOX_BATCH). */
  readonly batch?: number;
  readonly budget?: TurnBudget;
}

/** The rule of a webhook that may go anywhere (the owner's, where the settings allow). */
const ANYWHERE: UrlRule = { selfRegistered: false, allowPrivateNetworks: true };

/** A webhook's messages. */
export function webhookKind(deps: DispatcherDeps): DeliveryKind<'webhook'> {
  const { store, clock, secrets, settings } = deps;
  const send = deps.post ?? ((rule) => clientUrlPost(rule ?? ANYWHERE));
  return {
    kind: 'webhook',
    key: (delivery) => ({ queue: delivery.webhookId, item: delivery.eventId }),
    async open(webhookId, batch) {
      const [webhook, events] = await Promise.all([store.webhooks.get(webhookId), store.outbox.events(batch.map((d) => d.eventId))]);
      // Removed meanwhile: its deliveries went with it.
      if (webhook === null) return null;
      // A webhook the owner did not add reaches only what its rule allows, checked on the address connected to.
      const post = send(webhookUrlRule({ allowPrivateNetworkUrls: deps.allowPrivateNetworkUrls }, webhook.addedByOwner));
      return async (delivery, signal) => {
        const event = events.get(delivery.eventId);
        if (event === undefined)
          return { kind: 'failed', status: null, error: 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)', final: true };
        const now = clock.now();
        try {
          const keys = [secrets.open(secretOwner(webhook.id), webhook.secret)];
          if (webhook.previousSecret !== null && (webhook.previousSecretExpiresAt ?? 0) > now)
            keys.push(secrets.open(secretOwner(webhook.id), webhook.previousSecret));
          const body = webhookBody(event);
          // Only the status matters: the body is not read, however large or slow. No redirect is
          // followed (an answer that is not a 2xx): followed, it would carry the signed body elsewhere.
          const { status } = await post(webhook.url, {
            headers: webhookHeaders(keys, event.id, now, body),
            body,
            signal,
            timeoutMs: settings.timeoutSeconds * 1000,
          });
          if (status >= 200 && status < 300) return { kind: 'delivered', status, eventAt: event.at };
          return { kind: 'failed', status, error: `answered ${status}` };
        } catch (caught) {
          return { kind: 'failed', status: null, error: fetchFailure(caught) };
        }
      };
    },
    async deadLetter(delivery, error) {
      const { webhookId, eventId, attempts } = delivery;
      const detail = { webhook: webhookId, event_id: eventId, attempts, last_error: error };
      return { event: { type: 'webhook.dead_lettered', detail }, log: [detail, 'webhook delivery given up: a dead letter'] };
    },
  };
}

/** The outbox's worker over webhooks' messages. */
export class WebhookDispatcher extends OutboxWorker<'webhook'> {
  constructor(deps: DispatcherDeps) {
    super(webhookKind(deps), workerDeps(deps), httpWorkerSettings(deps.settings, deps.batch));
  }
}

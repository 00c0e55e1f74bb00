/**
 * Sends the outbox: the delivery rows the trigger on `events` wrote, in the
 * transaction of each event (store/migrations.ts, version 23). Every instance runs one; a
 * delivery is claimed by one conditional UPDATE (store/webhooks.ts `claim`), so each is sent by
 * one instance at a time, and again only after a failure, or after its lease ran out (an
 * instance killed mid-try): at least once, with the same `webhook-id`.
 *
 * Each webhook is drained on its own: its deliveries go out one after another in the order of
 * their events, and a receiver that is slow, down or failing holds back only its own. A failed
 * try is tried again after TESSERA_WEBHOOK_RETRY_DELAY_MS, doubled each time (at most an hour),
 * until TESSERA_WEBHOOK_RETRY_WINDOW has passed since the event; then the delivery is dead: a
 * dead letter (`webhook.dead_lettered`), which no longer holds the later ones back and which an
 * operator can replay.
 *
 * The dispatcher looks for due deliveries every POLL_MS (what another process, such as the
 * `tessera` command, or another instance stored), and at once when this process stores an
 * event some webhook may hear (`wake`).
 */
import type { WebhookSettings } from '../../config/index.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../../core/events.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { clientUrlFetch } from '../../core/outbound.ts';
import { webhookUrlRule } from '../manage/webhooks.ts';
import type { Store, WebhookDeliveryRecord } from '../../store/types.ts';
import type { UrlRule } from '../../core/outbound.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { secretOwner, webhookBody, webhookHeaders } from './message.ts';

/** How often each instance looks for due deliveries it was not told of. */
export const POLL_MS = 500;
/** The longest wait between two tries of a delivery. */
export const MAX_RETRY_DELAY_MS = 60 * 60_000;
/** A lease outlasts the try's timeout by this much, so that only a dead instance's lease runs out. */
const LEASE_MARGIN_MS = 30_000;
/** Webhooks looked at per round. */
const DUE_BATCH = 100;

/** What the metrics count (http/metrics.ts). */
export interface DeliveryObserver {
  /** Delivered, `latencySeconds` after its event. */
  delivered(latencySeconds: number): void;
  /** A try that failed and will be retried. */
  failed(): void;
  /** Given up: a dead letter. */
  dead(): void;
}

export interface DispatcherDeps {
  readonly store: Pick<Store, 'webhooks'>;
  readonly clock: Clock;
  readonly secrets: SecretBox;
  readonly settings: WebhookSettings;
  readonly events: Pick<Events, 'emit'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  readonly observer?: DeliveryObserver;
  /** TESSERA_ALLOW_PRIVATE_NETWORK_URLS: whether a webhook the owner did not add may reach private networks and loopback. */
  readonly allowPrivateNetworkUrls: boolean;
  /** How a message is sent, by the webhook's URL rule (null: anywhere); core/outbound.ts's guarded fetch by default. */
  readonly fetch?: (rule: UrlRule | null) => typeof fetch;
}

/** The wait after failed try number `attempts` (1 for the first). */
export function retryDelay(attempts: number, firstMs: number): number {
  return Math.min(firstMs * 2 ** Math.min(attempts - 1, 30), MAX_RETRY_DELAY_MS);
}

export class WebhookDispatcher {
  readonly #deps: DispatcherDeps;
  readonly #send: (rule: UrlRule | null) => typeof fetch;
  readonly #stop = new AbortController();
  /** The webhooks being drained, each by one loop. */
  readonly #draining = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<void> | null = null;
  #lookAgain = false;

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#send = deps.fetch ?? ((rule) => (rule === null ? fetch : clientUrlFetch(rule)));
  }

  start(pollMs = POLL_MS): void {
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (once more after the look under way, if one is). */
  wake(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#looking) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = this.#look().finally(() => {
      this.#looking = null;
      if (this.#lookAgain) {
        this.#lookAgain = false;
        this.wake();
      }
    });
  }

  /** Stops looking, ends the tries under way and gives their deliveries back; resolves once they are. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#stop.abort();
    await this.#looking;
    await Promise.all(this.#draining.values());
  }

  async #look(): Promise<void> {
    let due: string[];
    try {
      due = await this.#deps.store.webhooks.due(this.#deps.clock.now(), DUE_BATCH);
    } catch (error) {
      this.#deps.log.warn({ err: error }, 'looking for webhook deliveries failed');
      return;
    }
    for (const id of due) {
      if (this.#draining.has(id) || this.#stop.signal.aborted) continue;
      const drain = this.#drain(id)
        .catch((error: unknown) => this.#deps.log.warn({ err: error, webhook: id }, 'webhook delivery failed'))
        .finally(() => this.#draining.delete(id));
      this.#draining.set(id, drain);
    }
  }

  /** Sends the webhook's due deliveries one after another, until none is due. */
  async #drain(webhookId: string): Promise<void> {
    const leaseMs = this.#deps.settings.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
    while (!this.#stop.signal.aborted) {
      const now = this.#deps.clock.now();
      const delivery = await this.#deps.store.webhooks.claim(webhookId, now, now + leaseMs);
      if (delivery === null) return;
      await this.#try(delivery);
    }
  }

  async #try(delivery: WebhookDeliveryRecord): Promise<void> {
    const { store, clock, secrets, settings, observer } = this.#deps;
    const { webhookId, eventId, attempts } = delivery;
    const [webhook, event] = await Promise.all([store.webhooks.get(webhookId), store.webhooks.event(eventId)]);
    // Removed meanwhile: its deliveries went with it.
    if (webhook === null) return;
    const now = clock.now();
    let status: number | null = null;
    let error: string;
    if (event === null) {
      error = 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)';
    } else {
      try {
        const keys = [secrets.open(secretOwner(webhook.id), webhook.secret)];
        if (webhook.previousSecret !== null && (webhook.previousSecretExpiresAt ?? 0) > now)
          keys.push(secrets.open(secretOwner(webhook.id), webhook.previousSecret));
        const body = webhookBody(event);
        // A webhook the owner did not add reaches only what its rule allows, checked on the address connected to.
        const send = this.#send(webhookUrlRule({ allowPrivateNetworkUrls: this.#deps.allowPrivateNetworkUrls }, webhook.addedByOwner));
        const response = await send(webhook.url, {
          method: 'POST',
          headers: webhookHeaders(keys, event.id, now, body),
          body,
          // A redirect is an answer that is not a 2xx: followed, it would carry the signed body elsewhere.
          redirect: 'manual',
          signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(settings.timeoutSeconds * 1000)]),
        });
        // Only the status matters: the body is not read, however large or slow.
        await response.body?.cancel().catch(() => {});
        status = response.status;
        if (status >= 200 && status < 300) {
          const done = clock.now();
          if ((await store.webhooks.settle(webhookId, eventId, attempts, { kind: 'delivered', status }, done)) === 'delivered')
            observer?.delivered((done - event.at) / 1000);
          return;
        }
        error = `answered ${status}`;
      } catch (caught) {
        if (this.#stop.signal.aborted) {
          // Stopping: the try is not counted, and the next instance (or this one, restarted) sends it.
          await store.webhooks.release(webhookId, eventId, attempts, clock.now());
          return;
        }
        error = fetchFailure(caught);
      }
    }
    const failedAt = clock.now();
    const state = await store.webhooks.settle(
      webhookId,
      eventId,
      attempts,
      {
        kind: 'failed',
        status,
        error,
        nextAttemptAt: failedAt + retryDelay(attempts, settings.retryDelayMs),
        // No event to send: nothing to wait for.
        deadBefore: event === null ? failedAt : failedAt - settings.retryWindowSeconds * 1000,
      },
      failedAt,
    );
    if (state === 'pending') observer?.failed();
    if (state !== 'dead') return;
    observer?.dead();
    this.#deps.log.warn({ webhook: webhookId, event_id: eventId, attempts, last_error: error }, 'webhook delivery given up: a dead letter');
    await this.#deps.events.emit({ type: 'webhook.dead_lettered', detail: { webhook: webhookId, event_id: eventId, attempts, last_error: error } });
  }
}

/**
 * Webhooks (docs/events.md): the one implementation `tessera webhook`, the admin API
 * and the console call. A webhook's signing secret (`whsec_…`) is shown once, when it is made
 * or rotated; it is kept sealed under the key encryption key, since it must be used in clear
 * to sign. Deliveries are made by the dispatcher (flows/webhooks/dispatcher.ts); here they are
 * listed, and dead letters sent again.
 */
import { randomUUID } from 'node:crypto';
import { requestRefusal, type UrlRule } from '../../core/outbound.ts';
import { isWebhookEventType, WEBHOOK_EVENT_TYPES } from '../../core/webhook-events.ts';
import type { DeliveryCounts, DeliveryState, WebhookDeliveryRecord, WebhookRecord } from '../../store/types.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { newWebhookSecret, secretOwner } from '../webhooks/message.ts';
import { checkMayExportEvents, type Caller } from './authority.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';

/** What a webhook operation is given: the management deps and the box its secret is sealed in. */
export interface WebhookDeps extends ManageDeps {
  readonly secrets: SecretBox;
}

/** A server has at most this many webhooks: each is drained by a loop of its own in every instance. */
export const MAX_WEBHOOKS = 100;
/** A rotated secret still signs beside the new one for a day by default; at most 30 days. */
export const DEFAULT_SECRET_GRACE = 86_400;
export const MAX_SECRET_GRACE = 30 * 86_400;
export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'delivered', 'dead'];
export const DEFAULT_DELIVERIES = 50;
export const MAX_DELIVERIES = 1000;

export interface WebhookInput {
  readonly url?: unknown;
  readonly events?: unknown;
}

function checkUrl(raw: unknown): string {
  if (typeof raw !== 'string' || raw === '') throw invalid`${field('url')} is required: where each event is POSTed`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid`${field('url')} ${raw.slice(0, 200)}: not an absolute URL`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid`${field('url')} ${raw.slice(0, 200)}: an http or https URL`;
  if (url.hash !== '') throw invalid`${field('url')} ${raw.slice(0, 200)}: no fragment`;
  if (url.username !== '' || url.password !== '')
    throw invalid`${field('url')}: no user name or password in the URL; the receiver checks the signature instead`;
  if (raw.length > 2048) throw invalid`${field('url')}: at most 2048 characters`;
  return url.href;
}

function checkEvents(raw: unknown): string[] {
  if (!Array.isArray(raw) || raw.length === 0) throw invalid`${field('events')}: name at least one event type: ${WEBHOOK_EVENT_TYPES.join(', ')}`;
  const unknown = raw.filter((type) => typeof type !== 'string' || !isWebhookEventType(type));
  if (unknown.length > 0)
    throw invalid`${field('events')} ${unknown.map(String).join(', ').slice(0, 200)}: not an event type a webhook hears; one of ${WEBHOOK_EVENT_TYPES.join(', ')}`;
  return [...new Set(raw as string[])];
}

/**
 * The rule for the URL of a webhook (core/outbound.ts): the server's owner (the command) may
 * point one anywhere; anyone it delegated to (an admin client, a console operator) only at the
 * public network, unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS, or they could have the server
 * post, signed, into its own network (a metadata service, an internal admin port). Checked
 * here on the URL as typed, and on each connection after its name is resolved.
 */
export function webhookUrlRule(config: { readonly allowPrivateNetworkUrls: boolean }, addedByOwner: boolean): UrlRule | null {
  return addedByOwner ? null : { selfRegistered: false, delegated: true, allowPrivateNetworks: config.allowPrivateNetworkUrls };
}

function checkReachable(deps: Pick<ManageDeps, 'config'>, caller: Caller, url: string): void {
  const rule = webhookUrlRule(deps.config, caller.owner === true);
  const refusal = rule === null ? null : requestRefusal(new URL(url).hostname, rule);
  if (refusal !== null) throw invalid`${field('url')} ${url.slice(0, 200)}: the host ${refusal}`;
}

/** Adds a webhook; returns it with its signing secret, which is shown only now. */
export async function addWebhook(deps: WebhookDeps, input: WebhookInput): Promise<{ webhook: WebhookRecord; secret: string }> {
  checkMayExportEvents(deps.caller);
  const url = checkUrl(input.url);
  checkReachable(deps, deps.caller, url);
  const events = checkEvents(input.events);
  if ((await deps.store.webhooks.list()).length >= MAX_WEBHOOKS) throw conflict`a server has at most ${MAX_WEBHOOKS} webhooks: remove one first`;
  const id = randomUUID();
  const secret = newWebhookSecret();
  const now = deps.clock.now();
  const webhook: WebhookRecord = {
    id,
    url,
    events,
    secret: deps.secrets.seal(secretOwner(id), secret),
    previousSecret: null,
    previousSecretExpiresAt: null,
    addedByOwner: deps.caller.owner === true,
    createdAt: now,
    updatedAt: now,
  };
  await deps.store.webhooks.create(webhook);
  await deps.events.emit({ type: 'webhook.created', detail: { webhook: id, url, events: events.join(' '), by: 'operator' } });
  return { webhook, secret };
}

export async function listWebhooks(deps: Pick<ManageDeps, 'store'>): Promise<WebhookRecord[]> {
  return deps.store.webhooks.list();
}

/** How many deliveries each webhook has pending, delivered and dead, by its id (none: all zero). */
export async function deliveryCounts(deps: Pick<ManageDeps, 'store'>): Promise<ReadonlyMap<string, DeliveryCounts>> {
  return deps.store.webhooks.countsByWebhook();
}

export async function getWebhook(deps: Pick<ManageDeps, 'store'>, id: string): Promise<WebhookRecord> {
  const webhook = await deps.store.webhooks.get(id);
  if (webhook === null) throw notFound`no webhook with id ${id}`;
  return webhook;
}

/** Removes a webhook and its deliveries: nothing more is sent to it, not even what was waiting. */
export async function removeWebhook(deps: ManageDeps, id: string): Promise<void> {
  const webhook = await getWebhook(deps, id);
  if (!(await deps.store.webhooks.remove(id))) throw notFound`no webhook with id ${id}`;
  await deps.events.emit({ type: 'webhook.removed', detail: { webhook: id, url: webhook.url, by: 'operator' } });
}

/**
 * A new signing secret, shown once; the old one still signs beside it (a second signature in
 * `webhook-signature`) for `grace_seconds`, so that the receiver can change its secret meanwhile.
 */
export async function rotateWebhookSecret(
  deps: WebhookDeps,
  id: string,
  input: { readonly grace_seconds?: number } = {},
): Promise<{ webhook: WebhookRecord; secret: string }> {
  const grace = input.grace_seconds ?? DEFAULT_SECRET_GRACE;
  if (!Number.isInteger(grace) || grace < 0 || grace > MAX_SECRET_GRACE)
    throw invalid`${field('grace_seconds')} ${grace}: a number of seconds from 0 to ${MAX_SECRET_GRACE}`;
  await getWebhook(deps, id);
  const secret = newWebhookSecret();
  const now = deps.clock.now();
  const expiresAt = grace === 0 ? null : now + grace * 1000;
  if (!(await deps.store.webhooks.rotateSecret(id, deps.secrets.seal(secretOwner(id), secret), expiresAt, now))) throw notFound`no webhook with id ${id}`;
  await deps.events.emit({ type: 'webhook.secret_rotated', detail: { webhook: id, previous_secret_expires_at: isoTime(expiresAt), by: 'operator' } });
  return { webhook: await getWebhook(deps, id), secret };
}

export interface DeliveryQuery {
  readonly state?: string;
  readonly limit?: number;
}

/** A webhook's deliveries, newest event first. */
export async function listDeliveries(deps: Pick<ManageDeps, 'store'>, id: string, query: DeliveryQuery = {}): Promise<WebhookDeliveryRecord[]> {
  await getWebhook(deps, id);
  const state = query.state;
  if (state !== undefined && !(DELIVERY_STATES as readonly string[]).includes(state))
    throw invalid`${field('state')} ${state}: one of ${DELIVERY_STATES.join(', ')}`;
  const limit = query.limit ?? DEFAULT_DELIVERIES;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_DELIVERIES) throw invalid`${field('limit')}: a whole number from 1 to ${MAX_DELIVERIES}`;
  return deps.store.webhooks.deliveries(id, { ...(state === undefined ? {} : { state: state as DeliveryState }), limit });
}

/**
 * Sends dead letters again, with the same `webhook-id` (one, by its event's id, or all of the
 * webhook's): pending at once, with a new retry window. Returns how many.
 */
export async function replayDeliveries(deps: ManageDeps, id: string, eventId: string | null = null): Promise<number> {
  checkMayExportEvents(deps.caller);
  await getWebhook(deps, id);
  const replayed = await deps.store.webhooks.replay(id, eventId, deps.clock.now());
  if (replayed === 0 && eventId !== null) throw notFound`webhook ${id} has no dead letter for event ${eventId}`;
  if (replayed > 0) await deps.events.emit({ type: 'webhook.replayed', detail: { webhook: id, deliveries: replayed, event_id: eventId, by: 'operator' } });
  return replayed;
}

/** A webhook as `webhook list --json` and the admin API give it: never its secret. */
export function webhookJson(webhook: WebhookRecord): Record<string, unknown> {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    created_at: isoTime(webhook.createdAt),
    updated_at: isoTime(webhook.updatedAt),
    previous_secret_expires_at: isoTime(webhook.previousSecretExpiresAt),
  };
}

/** A delivery (a webhook's, or a Shared Signals stream's) as `webhook deliveries --json`, `ssf deliveries --json` and the admin API give it. */
export function deliveryJson(
  delivery: Pick<WebhookDeliveryRecord, 'eventId' | 'eventAt' | 'state' | 'attempts' | 'nextAttemptAt' | 'deliveredAt' | 'lastStatus' | 'lastError'>,
): Record<string, unknown> {
  return {
    event_id: delivery.eventId,
    event_at: isoTime(delivery.eventAt),
    state: delivery.state,
    attempts: delivery.attempts,
    next_attempt_at: delivery.state === 'pending' ? isoTime(delivery.nextAttemptAt) : null,
    delivered_at: isoTime(delivery.deliveredAt),
    last_status: delivery.lastStatus,
    last_error: delivery.lastError,
  };
}

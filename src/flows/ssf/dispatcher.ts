/**
 * Pushes Security Event Tokens to the streams that asked for push delivery (RFC 8935), from
 * the outbox the trigger on `events` fills (store/migrations.ts, version 40): the webhooks'
 * dispatcher's way (flows/webhooks/dispatcher.ts), over the streams' own delivery rows. Every
 * instance runs one; a delivery is claimed by one conditional UPDATE, so each SET is sent by
 * one instance at a time, again only after a failure or a lease run out: at least once, with
 * the same `jti`. Each stream is drained on its own, in event order; a receiver that is slow,
 * down or failing holds back only its own. Tries are timed, retried and given up by the
 * webhooks' settings (TESSERA_WEBHOOK_TIMEOUT, _RETRY_DELAY_MS, _RETRY_WINDOW).
 *
 * RFC 8935 §2.2: a receiver that accepts a SET answers 202. §2.3: one that refuses it answers
 * 400 with `{"err": …, "description": …}`; that SET is not sent again (it would be refused
 * again): it is a dead letter at once, with the receiver's reason. Any other answer, or none,
 * is tried again.
 */
import type { WebhookSettings } from '../../config/index.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../../core/events.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { clientUrlFetch, type UrlRule } from '../../core/outbound.ts';
import { SSF_SCOPE } from '../../core/scopes.ts';
import type { SsfDeliveryRecord, Store } from '../../store/types.ts';
import type { TokenIssuer } from '../../tokens/issue.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { POLL_MS, retryDelay, type DeliveryObserver } from '../webhooks/dispatcher.ts';
import { setClaims } from './set.ts';
import { streamSecretOwner } from './streams.ts';

const LEASE_MARGIN_MS = 30_000;
const DUE_BATCH = 100;
/** The most of a refusal's answer read for its `err` and `description` (RFC 8935 §2.3). */
const ERROR_ANSWER_LIMIT = 4096;

export interface SsfDispatcherDeps {
  readonly store: Pick<Store, 'ssf' | 'users' | 'clients'>;
  readonly clock: Clock;
  readonly secrets: SecretBox;
  readonly tokens: Pick<TokenIssuer, 'securityEventToken'>;
  readonly issuer: string;
  readonly settings: WebhookSettings;
  readonly events: Pick<Events, 'emit'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  /** TESSERA_ALLOW_PRIVATE_NETWORK_URLS: whether a receiver's push endpoint may be on a private network or loopback. */
  readonly allowPrivateNetworkUrls: boolean;
  /** What the metrics count (http/metrics.ts), as for webhooks. */
  readonly observer?: DeliveryObserver;
  /** How a SET is sent under the receivers' URL rule; core/outbound.ts's guarded fetch by default. */
  readonly fetch?: (rule: UrlRule) => typeof fetch;
}

/** The answer's RFC 8935 §2.3 error, if it is one. */
async function refusal(response: Response): Promise<string | null> {
  if (response.status !== 400) return null;
  try {
    const text = (await response.text()).slice(0, ERROR_ANSWER_LIMIT);
    const body = JSON.parse(text) as { err?: unknown; description?: unknown };
    if (typeof body.err !== 'string') return null;
    return `refused: ${body.err}${typeof body.description === 'string' ? `: ${body.description}` : ''}`.slice(0, 500);
  } catch {
    return null;
  }
}

export class SsfDispatcher {
  readonly #deps: SsfDispatcherDeps;
  readonly #send: typeof fetch;
  readonly #stop = new AbortController();
  readonly #draining = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<void> | null = null;
  #lookAgain = false;

  constructor(deps: SsfDispatcherDeps) {
    this.#deps = deps;
    // A receiver is someone the owner delegated to: public networks only, unless allowed, on every connection.
    const rule: UrlRule = { selfRegistered: false, delegated: true, allowPrivateNetworks: deps.allowPrivateNetworkUrls };
    this.#send = (deps.fetch ?? clientUrlFetch)(rule);
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

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#stop.abort();
    await this.#looking;
    await Promise.all(this.#draining.values());
  }

  async #look(): Promise<void> {
    let due: string[];
    try {
      due = await this.#deps.store.ssf.due(this.#deps.clock.now(), DUE_BATCH);
    } catch (error) {
      this.#deps.log.warn({ err: error }, 'looking for SET deliveries failed');
      return;
    }
    for (const id of due) {
      if (this.#draining.has(id) || this.#stop.signal.aborted) continue;
      const drain = this.#drain(id)
        .catch((error: unknown) => this.#deps.log.warn({ err: error, stream: id }, 'SET delivery failed'))
        .finally(() => this.#draining.delete(id));
      this.#draining.set(id, drain);
    }
  }

  async #drain(streamId: string): Promise<void> {
    const leaseMs = this.#deps.settings.timeoutSeconds * 1000 + LEASE_MARGIN_MS;
    while (!this.#stop.signal.aborted) {
      const now = this.#deps.clock.now();
      const delivery = await this.#deps.store.ssf.claim(streamId, now, now + leaseMs);
      if (delivery === null) return;
      if (!(await this.#try(delivery))) return;
    }
  }

  /** Sends one SET; false when the stream is to wait (paused, disabled, removed, or this instance stopping). */
  async #try(delivery: SsfDeliveryRecord): Promise<boolean> {
    const { store, clock, secrets, settings, tokens, issuer } = this.#deps;
    const { streamId, eventId, attempts } = delivery;
    const [stream, event] = await Promise.all([store.ssf.getStream(streamId), store.ssf.event(eventId)]);
    // Removed meanwhile: its deliveries went with it. Paused or disabled meanwhile: given back, to wait.
    if (stream === null) return false;
    if (stream.status !== 'enabled' || stream.endpointUrl === null) {
      await store.ssf.release(streamId, eventId, attempts, clock.now());
      return false;
    }
    let status: number | null = null;
    let error: string;
    let rejected = false;
    const user = event?.userId ? await store.users.get(event.userId) : null;
    const claims = event === null ? null : setClaims(issuer, stream, event, user, clock.now());
    // A receiver the operator took ssf:manage from hears nothing more, as its token no longer manages the stream.
    const receiver = await store.clients.get(stream.clientId);
    const entitled = receiver?.scopes.includes(SSF_SCOPE) === true;
    if (event === null) {
      error = 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)';
    } else if (!entitled) {
      error = 'the receiver no longer holds the scope ssf:manage';
    } else if (claims === null) {
      error = 'the event names no subject';
    } else {
      try {
        const set = await tokens.securityEventToken(claims);
        // RFC 8935 §2.1: the SET is the body, as application/secevent+jwt.
        const headers: Record<string, string> = { 'content-type': 'application/secevent+jwt', accept: 'application/json', 'user-agent': 'Tessera-SSF/1' };
        if (stream.authorizationHeader !== null) headers['authorization'] = secrets.open(streamSecretOwner(stream.id), stream.authorizationHeader);
        const response = await this.#send(stream.endpointUrl, {
          method: 'POST',
          headers,
          body: set,
          redirect: 'manual',
          signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(settings.timeoutSeconds * 1000)]),
        });
        status = response.status;
        const refused = await refusal(response);
        await response.body?.cancel().catch(() => {});
        // §2.2: "the SET Recipient ... MUST respond with an HTTP Response Status Code of 202 (Accepted)"; any 2xx is taken as one.
        if (status >= 200 && status < 300) {
          const done = clock.now();
          if ((await store.ssf.settle(streamId, eventId, attempts, { kind: 'delivered', status }, done)) === 'delivered')
            this.#deps.observer?.delivered((done - event.at) / 1000);
          return true;
        }
        rejected = refused !== null;
        error = refused ?? `answered ${status}`;
      } catch (caught) {
        if (this.#stop.signal.aborted) {
          await store.ssf.release(streamId, eventId, attempts, clock.now());
          return false;
        }
        error = fetchFailure(caught);
      }
    }
    const failedAt = clock.now();
    const state = await store.ssf.settle(
      streamId,
      eventId,
      attempts,
      {
        kind: 'failed',
        status,
        error,
        nextAttemptAt: failedAt + retryDelay(attempts, settings.retryDelayMs),
        // Refused by the receiver, or nothing to send: given up now.
        deadBefore: rejected || claims === null || !entitled ? failedAt : failedAt - settings.retryWindowSeconds * 1000,
      },
      failedAt,
    );
    if (state === 'pending') this.#deps.observer?.failed();
    if (state !== 'dead') return true;
    this.#deps.observer?.dead();
    this.#deps.log.warn({ stream: streamId, event_id: eventId, attempts, last_error: error }, 'SET delivery given up: a dead letter');
    await this.#deps.events.emit({
      type: 'ssf.dead_lettered',
      clientId: stream.clientId,
      detail: { stream_id: streamId, event_id: eventId, attempts, last_error: error },
    });
    return true;
  }
}

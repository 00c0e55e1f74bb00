/**
 * Prometheus metrics (text format, through prom-client), served on a listener of their own
 * (`TESSERA_METRICS_PORT`, loopback unless `TESSERA_METRICS_HOST` says otherwise) so that
 * they are never public by accident. What each means, and alerts on them:
 * docs/operations.md. The counters of what happened are listeners on the event seam
 * (core/events.ts), so that a metric and the audit trail can never disagree.
 */

import type { Server } from 'node:http';
import { http } from '../core/node-http.ts';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { METRICS_PATH } from '../core/endpoints.ts';
import type { AuditEvent, EventListener } from '../core/events.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_JWT_BEARER, GRANT_REFRESH_TOKEN, GRANT_TOKEN_EXCHANGE } from '../core/protocol.ts';
import type { DeliveryObserver } from '../flows/outbox/worker.ts';
import type { Store } from '../store/types.ts';

/** Request and store durations are milliseconds to a few seconds: buckets from 1 ms to 5 s. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Which grant type an event's tokens were issued through. */
const TOKEN_EVENTS: Partial<Record<AuditEvent['type'], string>> = {
  'code.redeemed': GRANT_AUTHORIZATION_CODE,
  'refresh.rotated': GRANT_REFRESH_TOKEN,
  'device.consumed': GRANT_DEVICE_CODE,
  'token.exchanged': GRANT_TOKEN_EXCHANGE,
};

const DEVICE_OUTCOMES: Partial<Record<AuditEvent['type'], string>> = {
  'device.approved': 'approved',
  'device.denied': 'denied',
  'device.expired': 'expired',
  'device.consumed': 'consumed',
};

type CountDeliveries = () => Promise<{ readonly pending: number; readonly dead: number }>;

/** One kind of the outbox's metrics: what its worker tells, and the gauges that read the store. */
interface OutboxMetrics {
  readonly observer: DeliveryObserver;
  count: CountDeliveries | null;
}

/**
 * `tessera_<kind>_deliveries_total{outcome}`, `tessera_<kind>_delivery_latency_seconds`, and the
 * gauges `tessera_<kind>_deliveries_pending` and `_dead`, read from the store at each scrape.
 */
function outboxMetrics(registers: Registry[], kind: string, help: { tries: string; latency: string; pending: string; dead: string }): OutboxMetrics {
  const tries = new Counter({ name: `tessera_${kind}_deliveries_total`, help: help.tries, labelNames: ['outcome'], registers });
  const latency = new Histogram({
    name: `tessera_${kind}_delivery_latency_seconds`,
    help: help.latency,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers,
  });
  const metrics: OutboxMetrics = {
    observer: {
      delivered: (latencySeconds) => {
        tries.inc({ outcome: 'delivered' });
        latency.observe(Math.max(0, latencySeconds));
      },
      failed: () => tries.inc({ outcome: 'failed' }),
      dead: () => tries.inc({ outcome: 'dead' }),
    },
    count: null,
  };
  for (const state of ['pending', 'dead'] as const) {
    new Gauge({
      name: `tessera_${kind}_deliveries_${state}`,
      help: help[state],
      registers,
      // Every worker reads the same store: summed over workers it would count each one N times.
      aggregator: 'max',
      async collect() {
        const count = metrics.count;
        // An unreachable store leaves NaN; the scrape itself still answers.
        if (count)
          this.set(
            await count().then(
              (counts) => counts[state],
              () => NaN,
            ),
          );
      },
    });
  }
  // Present from the first scrape, at zero, so that rate() and absent() work at once.
  for (const outcome of ['delivered', 'failed', 'dead']) tries.inc({ outcome }, 0);
  return metrics;
}

/** One registry per server, so that several servers in one process (the tests) count apart. */
export class Metrics {
  readonly registry = new Registry();
  readonly #http: Histogram<'method' | 'route' | 'status_class'>;
  readonly #store: Histogram<'operation'>;
  readonly #tokens: Counter<'grant'>;
  readonly #devices: Counter<'outcome'>;
  readonly #signInFailures: Counter;
  readonly #lockouts: Counter<'kind'>;
  readonly #reuse: Counter;
  #countPending: (() => Promise<number>) | null = null;
  readonly #webhooks: OutboxMetrics;
  readonly #ssf: OutboxMetrics;
  readonly #mail: OutboxMetrics;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#http = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route pattern and status class',
      labelNames: ['method', 'route', 'status_class'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#store = new Histogram({
      name: 'tessera_store_operation_duration_seconds',
      help: 'Time one store call took (one statement, or a whole transaction), by operation',
      labelNames: ['operation'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.#tokens = new Counter({ name: 'tessera_tokens_issued_total', help: 'Token responses issued, by grant type', labelNames: ['grant'], registers });
    this.#devices = new Counter({
      name: 'tessera_device_authorizations_total',
      help: 'Device authorizations that ended a step: approved, denied, expired (polled after expiring undecided) or consumed (tokens issued)',
      labelNames: ['outcome'],
      registers,
    });
    this.#signInFailures = new Counter({
      name: 'tessera_signin_failures_total',
      help: 'Sign-ins refused: a wrong username or password, a disabled account, a wrong or replayed one-time code, a refused passkey',
      registers,
    });
    this.#lockouts = new Counter({
      name: 'tessera_lockouts_total',
      help: 'Guessing limits reached, once per limit (address, browser, username, network) and window however many attempts it then refused: sign_in (passwords), one_time_code (codes after the password) or user_code (device codes)',
      labelNames: ['kind'],
      registers,
    });
    this.#reuse = new Counter({
      name: 'tessera_refresh_reuse_detected_total',
      help: 'Rotated refresh tokens presented again; each revoked its grant',
      registers,
    });
    const countPending = () => this.#countPending;
    new Gauge({
      name: 'tessera_device_authorizations_pending',
      help: 'Device authorizations waiting for a person to approve or deny them',
      registers,
      // Every worker reads the same store: summed over workers it would count each one N times.
      aggregator: 'max',
      async collect() {
        const count = countPending();
        // An unreachable store leaves the last value; the scrape itself still answers.
        if (count) this.set(await count().catch(() => NaN));
      },
    });
    // The outbox, per kind of delivery: tries by outcome; the time from an event to its
    // delivery (retries included, so a receiver down for an hour shows as an hour); what waits
    // and what was given up.
    this.#webhooks = outboxMetrics(registers, 'webhook', {
      tries: 'Webhook delivery tries, by outcome: delivered (a 2xx answer), failed (to be tried again) or dead (given up after TESSERA_WEBHOOK_RETRY_WINDOW)',
      latency: 'Time from an event to its webhook delivery (a 2xx answer), retries included',
      pending: 'Webhook deliveries waiting to be sent or tried again',
      dead: 'Webhook deliveries given up (dead letters) not yet replayed',
    });
    this.#ssf = outboxMetrics(registers, 'ssf', {
      tries:
        'Shared Signals push tries (RFC 8935), by outcome: delivered (a 2xx answer), failed (to be tried again) or dead (refused by the receiver, or given up after TESSERA_WEBHOOK_RETRY_WINDOW)',
      latency: "Time from an event to its SET's push delivery (a 2xx answer), retries included",
      pending: 'SETs waiting to be pushed, tried again, or acknowledged by a polling receiver',
      dead: 'SETs given up (dead letters) not yet replayed',
    });
    this.#mail = outboxMetrics(registers, 'mail', {
      tries: 'Mail tries, by outcome: delivered (taken by the mail server), failed (to be tried again) or dead (given up after TESSERA_MAIL_RETRY_WINDOW)',
      latency: 'Time from a message queued to its delivery, retries included',
      pending: 'Messages waiting to be sent or tried again',
      dead: 'Messages given up (dead letters) not yet replayed',
    });
    // Present from the first scrape, at zero, so that rate() and absent() work at once.
    for (const grant of Object.values(TOKEN_EVENTS)) this.#tokens.inc({ grant: grant! }, 0);
    for (const outcome of Object.values(DEVICE_OUTCOMES)) this.#devices.inc({ outcome: outcome! }, 0);
    for (const kind of ['sign_in', 'one_time_code', 'user_code']) this.#lockouts.inc({ kind }, 0);
  }

  /** Counts what an event says happened. */
  readonly listener: EventListener = (event) => {
    // An ID-JAG redeemed is a token.exchanged of the jwt-bearer grant (flows/jwt-bearer/token.ts).
    const grant = event.type === 'token.exchanged' && event.detail['grant'] === 'jwt-bearer' ? GRANT_JWT_BEARER : TOKEN_EVENTS[event.type];
    if (grant) this.#tokens.inc({ grant });
    const outcome = DEVICE_OUTCOMES[event.type];
    if (outcome) this.#devices.inc({ outcome });
    if (event.type === 'signin.failed' || event.type === 'passkey.refused') this.#signInFailures.inc();
    else if (event.type === 'second_factor.failed' && event.detail['during'] === 'sign_in') {
      if (event.detail['reason'] === 'locked') this.#lockouts.inc({ kind: 'one_time_code' });
      else this.#signInFailures.inc();
    } else if (event.type === 'signin.locked') this.#lockouts.inc({ kind: 'sign_in' });
    else if (event.type === 'device.code_entry_locked') this.#lockouts.inc({ kind: 'user_code' });
    else if (event.type === 'refresh.reuse_detected') this.#reuse.inc();
  };

  /** The pending-device gauge reads the store at each scrape. */
  countPendingDevices(count: () => Promise<number>): void {
    this.#countPending = count;
  }

  /** What the webhook dispatcher tells of its tries (flows/webhooks/dispatcher.ts). */
  get webhooks(): DeliveryObserver {
    return this.#webhooks.observer;
  }

  /** What the Shared Signals dispatcher tells of its pushes (flows/ssf/dispatcher.ts). */
  get ssf(): DeliveryObserver {
    return this.#ssf.observer;
  }

  /** What the mail dispatcher tells of its tries (flows/mail/dispatcher.ts). */
  get mail(): DeliveryObserver {
    return this.#mail.observer;
  }

  /** The SSF gauges read the store at each scrape. */
  countSsfDeliveries(count: CountDeliveries): void {
    this.#ssf.count = count;
  }

  /** The webhook gauges read the store at each scrape. */
  countWebhookDeliveries(count: CountDeliveries): void {
    this.#webhooks.count = count;
  }

  /** The mail gauges read the store at each scrape. */
  countMailDeliveries(count: CountDeliveries): void {
    this.#mail.count = count;
  }

  /** Times every request of `app` by its route pattern (never the raw URL, which carries codes). */
  instrument(app: FastifyInstance): void {
    app.addHook('onResponse', async (request, reply) => {
      const route = request.routeOptions.url ?? 'unmatched';
      this.#http.observe({ method: request.method, route, status_class: `${Math.floor(reply.statusCode / 100)}xx` }, reply.elapsedTime / 1000);
    });
  }

  /** The store with every call timed, by `concern.method` (and `transaction` for a whole one). */
  instrumentStore(store: Store): Store {
    const timed = <A extends unknown[], R>(operation: string, call: (...args: A) => Promise<R>) => {
      const histogram = this.#store.labels(operation);
      return (...args: A): Promise<R> => {
        const started = performance.now();
        const done = () => histogram.observe((performance.now() - started) / 1000);
        const result = call(...args);
        result.then(done, done);
        return result;
      };
    };
    const wrapped: Record<string, unknown> = {};
    for (const [concern, methods] of Object.entries(store)) {
      if (typeof methods === 'function') {
        wrapped[concern] = concern === 'close' ? methods : timed(concern, methods as (...args: unknown[]) => Promise<unknown>);
        continue;
      }
      wrapped[concern] = Object.fromEntries(
        Object.entries(methods as Record<string, (...args: unknown[]) => Promise<unknown>>).map(([name, method]) => [
          name,
          timed(`${concern}.${name}`, method),
        ]),
      );
    }
    return wrapped as unknown as Store;
  }
}

/**
 * Serves `GET /metrics` on its own listener. Rejects with one clear line when the address
 * cannot be bound (in use, not this machine's).
 */
export async function serveMetrics(
  registry: { readonly contentType: string; metrics(): Promise<string> },
  host: string,
  port: number,
): Promise<{ server: Server; url: string }> {
  const server = http.createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== METRICS_PATH) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
      return;
    }
    registry.metrics().then(
      (body) => response.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(body),
      (error: unknown) =>
        response
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new Error(`TESSERA_METRICS_PORT: cannot listen on ${host}:${port} (${error.code ?? error.message})`)),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return { server, url: `http://${shown}:${address.port}/metrics` };
}

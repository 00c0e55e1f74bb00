/**
 * The webhook dispatcher over the flow world's store, posting to a receiver the test starts on
 * 127.0.0.1, with the world's clock moved for the retries: the signed POST of Standard Webhooks
 * v1 (webhook-id, webhook-timestamp, webhook-signature) checked as a receiver checks it, with
 * node:crypto and with the `standardwebhooks` library, under the secret `addWebhook` showed,
 * and, during a rotation's grace, under the one it replaced too; a 2xx delivers, anything
 * else (a redirect too, never followed) fails with its status, and a receiver that answers
 * too late with none; a failed try again after TESSERA_WEBHOOK_RETRY_DELAY_MS, doubled each
 * time up to an hour, until TESSERA_WEBHOOK_RETRY_WINDOW has passed since the event: then a
 * dead letter, a warning and a `webhook.dead_lettered` event, once; a claimed delivery whose
 * event was purged meanwhile fails for good; a webhook removed meanwhile is sent nothing; and the
 * outbound guard: a webhook someone the owner delegated to added does not reach loopback
 * (checked on connecting, after its name is resolved) unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS.
 *
 * message.test.ts checks the message alone, outbox/worker.test.ts the worker's claims, order,
 * stopping and pace over a kind the test plays; test/webhooks.test.ts sends from a running
 * server (the command, a receiver down and back, one that never answers, replayed dead letters).
 */
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { WebhookSettings } from '../../config/index.ts';
import type { AuditEvent } from '../../core/events.ts';
import type { UrlRule } from '../../core/outbound.ts';
import type { OutboxStore, WebhookRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addWebhook, rotateWebhookSecret, type WebhookDeps } from '../manage/webhooks.ts';
import { TurnBudget, type TryResult } from '../outbox/worker.ts';
import { type DispatcherDeps, WebhookDispatcher, webhookKind } from './dispatcher.ts';
import { SECRET_PREFIX, webhookBody } from './message.ts';

const MINUTE = 60_000;

/** A request as the receiver got it. */
interface Arrival {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** How the receiver answers: a status, headers, and how long after the request it answers. */
interface Answer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly afterMs?: number;
}

/** A webhook receiver on 127.0.0.1: records every request whole, and answers as `answer` says. */
class TestReceiver {
  readonly arrivals: Arrival[] = [];
  answer: (arrival: Arrival) => Answer = () => ({ status: 204 });
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const arrival = { method: request.method ?? '', path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      this.arrivals.push(arrival);
      const { status, headers = {}, afterMs = 0 } = this.answer(arrival);
      const send = () => void response.writeHead(status, headers).end();
      if (afterMs === 0) return send();
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        send();
      }, afterMs);
      this.#timers.add(timer);
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
  }

  url(path: string, host = '127.0.0.1'): string {
    return `http://${host}:${(this.#server.address() as AddressInfo).port}${path}`;
  }

  arrivalsAt(path: string): Arrival[] {
    return this.arrivals.filter((arrival) => arrival.path === path);
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

/**
 * Standard Webhooks §"Verifying webhooks": the receiver computes the HMAC-SHA256, under the
 * base64 key after `whsec_`, of `{webhook-id}.{webhook-timestamp}.{body}`, and accepts when one
 * of the space-separated `v1,` signatures is it.
 */
function signedWith(secret: string, arrival: Arrival): boolean {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const signed = `${arrival.headers['webhook-id']}.${arrival.headers['webhook-timestamp']}.${arrival.body}`;
  const expected = createHmac('sha256', key).update(signed).digest();
  return String(arrival.headers['webhook-signature'])
    .split(' ')
    .some((entry) => {
      const [version, signature = ''] = entry.split(',');
      const given = Buffer.from(signature, 'base64');
      return version === 'v1' && given.length === expected.length && timingSafeEqual(given, expected);
    });
}

/** What the receiver's library (`standardwebhooks`) makes of a message, at `now` (it refuses a timestamp 5 minutes off). */
function libraryVerifies(secret: string, arrival: Arrival, now: number): unknown {
  const headers = Object.fromEntries(['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => [name, String(arrival.headers[name])]));
  const realNow = Date.now;
  Date.now = () => now;
  try {
    return new Webhook(secret).verify(arrival.body, headers);
  } finally {
    Date.now = realNow;
  }
}

describe('the webhook dispatcher (flows/webhooks/dispatcher.ts)', () => {
  let world: FlowWorld;
  let deps: WebhookDeps;
  let receiver: TestReceiver;
  const SETTINGS: WebhookSettings = { timeoutSeconds: 10, retryDelayMs: 20 * MINUTE, retryWindowSeconds: 86_400 };

  before(async () => {
    world = await flowWorld();
    deps = { ...world.manage, secrets: world.secrets };
    receiver = new TestReceiver();
    await receiver.start();
  });
  after(async () => {
    await receiver.close();
    await world.close();
  });

  /** A webhook hearing `user.disabled` at `path` of the receiver, added by the owner (the command); removed after the test. */
  async function hook(t: TestContext, path: string, options: { host?: string; by?: WebhookDeps } = {}): Promise<{ webhook: WebhookRecord; secret: string }> {
    const added = await addWebhook(options.by ?? deps, { url: receiver.url(path, options.host), events: ['user.disabled'] });
    t.after(() => world.store.webhooks.remove(added.webhook.id));
    return added;
  }

  /** A user disabled now: the event every webhook hearing `user.disabled` owes a delivery. */
  async function disabled(): Promise<AuditEvent> {
    await world.deps.events.emit({ type: 'user.disabled', userId: 'sub-ada', username: 'ada', detail: { by: 'operator' } });
    const [event] = await world.store.events.list({ type: 'user.disabled', limit: 1 });
    return event!;
  }

  const delivery = async (webhook: WebhookRecord, event: AuditEvent) =>
    (await world.store.webhooks.deliveries(webhook.id, { limit: 100 })).find((d) => d.eventId === event.id)!;

  const kindDeps = (overrides: Partial<DispatcherDeps> = {}): DispatcherDeps => ({
    store: world.store,
    clock: world.clock,
    secrets: world.secrets,
    settings: SETTINGS,
    events: world.deps.events,
    log: { warn: () => {} },
    allowPrivateNetworkUrls: false,
    ...overrides,
  });

  /** One try of the webhook's oldest delivery, as the worker makes it (claimed, opened, tried), then given back uncounted. */
  async function tryOnce(
    webhook: WebhookRecord,
    overrides: Partial<DispatcherDeps> = {},
    signal = new AbortController().signal,
    claimed: () => Promise<unknown> = async () => {},
  ): Promise<TryResult> {
    const now = world.clock.now();
    const batch = await world.store.outbox.claim('webhook', webhook.id, now, now + MINUTE, 32);
    assert.ok(batch.length > 0, 'a delivery to try');
    await claimed();
    try {
      const attempt = await webhookKind(kindDeps(overrides)).open(webhook.id, batch);
      assert.ok(attempt, 'the webhook is there');
      return await attempt(batch[0]!, signal);
    } finally {
      for (const claimed of batch) await world.store.outbox.release('webhook', webhook.id, claimed.eventId, claimed.attempts, now);
    }
  }

  /**
   * A dispatcher woken once, as an instance is on an event or its poll: it looks for due
   * webhooks, sends, and is stopped once `expected` tries have been settled (none: once it has
   * looked). Returns how those tries went as its observer counted them, what it found due, what
   * it warned of, and the latencies it measured.
   */
  async function round(expected: number, settings: WebhookSettings = SETTINGS) {
    const outcomes: string[] = [];
    const latencies: number[] = [];
    const warnings: Record<string, unknown>[] = [];
    const looked: string[][] = [];
    let settled!: () => void;
    const enough = new Promise<void>((resolve) => (settled = resolve));
    const note = (outcome: string) => {
      outcomes.push(outcome);
      if (outcomes.length === expected) settled();
    };
    // The store as the dispatcher reads it, telling the test what it found due.
    const outbox: OutboxStore = new Proxy(world.store.outbox, {
      get(target, name) {
        if (name === 'due')
          return async (...args: Parameters<OutboxStore['due']>) => {
            const due = await target.due(...args);
            looked.push(due);
            if (expected === 0) settled();
            return due;
          };
        const value: unknown = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const dispatcher = new WebhookDispatcher({
      ...kindDeps({ settings }),
      store: { webhooks: world.store.webhooks, outbox, transaction: (work) => world.store.transaction(work) },
      log: { warn: (details, message) => void warnings.push({ ...details, message }) },
      observer: {
        delivered: (latency) => {
          latencies.push(latency);
          note('delivered');
        },
        failed: () => note('failed'),
        dead: () => note('dead'),
      },
      budget: new TurnBudget(16),
    });
    dispatcher.wake();
    // A bound for a test that fails, not a measure: a round takes milliseconds.
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`waited 5 s for ${expected} tries (${outcomes.join(', ') || 'none'})`)), 5000);
    });
    try {
      await Promise.race([enough, waited]);
    } finally {
      clearTimeout(timer);
      // Every try settled (a dead letter recorded) before it returns.
      await dispatcher.stop();
    }
    return { outcomes, latencies, warnings, looked };
  }

  it('delivers an event as a POST signed per Standard Webhooks v1, which the receiver verifies with the secret addWebhook showed', async (t) => {
    const { webhook, secret } = await hook(t, '/signed');
    receiver.answer = () => ({ status: 202 });
    const event = await disabled();
    world.clock.advance(1500);
    const sentAt = world.clock.now();
    const { outcomes, latencies } = await round(1);
    assert.deepEqual(outcomes, ['delivered']);
    assert.deepEqual(latencies, [1.5], 'measured from the event to the answer');

    const [arrival, ...more] = receiver.arrivalsAt('/signed');
    assert.ok(arrival);
    assert.equal(more.length, 0, 'sent once');
    assert.equal(arrival.method, 'POST');
    assert.equal(arrival.body, webhookBody(event), 'the event, as the message format writes it');
    assert.equal(arrival.headers['content-type'], 'application/json');
    assert.equal(arrival.headers['user-agent'], 'Tessera-Webhooks/1');
    // Standard Webhooks: webhook-id is the message's id (the event's, the same on every try);
    // webhook-timestamp is the try's time, in whole seconds since the epoch.
    assert.equal(arrival.headers['webhook-id'], event.id);
    assert.equal(arrival.headers['webhook-timestamp'], String(Math.floor(sentAt / 1000)), 'when it was sent, not when the event happened');
    assert.match(String(arrival.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]{43}=$/, 'one signature: no rotation under way');
    assert.equal(signedWith(secret, arrival), true, 'the HMAC a receiver computes');
    assert.deepEqual(libraryVerifies(secret, arrival, sentAt), JSON.parse(arrival.body));
    const other = `${SECRET_PREFIX}${Buffer.alloc(32, 7).toString('base64')}`;
    assert.equal(signedWith(other, arrival), false, 'no other secret verifies it');
    assert.throws(() => libraryVerifies(other, arrival, sentAt), /signature/i);

    const sent = await delivery(webhook, event);
    assert.deepEqual(
      [sent.state, sent.attempts, sent.lastStatus, sent.lastError, sent.deliveredAt, sent.leaseUntil],
      ['delivered', 1, 202, null, sentAt, null],
      'recorded as delivered with the receiver’s status, its lease let go',
    );
  });

  it('signs with the secret a rotation replaced beside the new one until its grace ends, and with the new one alone from then', async (t) => {
    const { webhook, secret: old } = await hook(t, '/rotated');
    const rotated = await rotateWebhookSecret(deps, webhook.id, { grace_seconds: 60 });
    const graceEnds = rotated.webhook.previousSecretExpiresAt!;
    assert.equal(graceEnds, world.clock.now() + 60_000);

    world.clock.set(graceEnds - 1);
    await disabled();
    assert.deepEqual((await round(1)).outcomes, ['delivered']);
    const during = receiver.arrivalsAt('/rotated').at(-1)!;
    // Standard Webhooks: webhook-signature is a space-delimited list, one per secret.
    assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures during the grace');
    for (const secret of [rotated.secret, old]) {
      assert.equal(signedWith(secret, during), true, 'a receiver holding either secret verifies it');
      assert.deepEqual(libraryVerifies(secret, during, world.clock.now()), JSON.parse(during.body));
    }

    world.clock.set(graceEnds);
    await disabled();
    assert.deepEqual((await round(1)).outcomes, ['delivered']);
    const afterwards = receiver.arrivalsAt('/rotated').at(-1)!;
    assert.equal(String(afterwards.headers['webhook-signature']).split(' ').length, 1, 'the grace has ended');
    assert.equal(signedWith(rotated.secret, afterwards), true);
    assert.equal(signedWith(old, afterwards), false, 'the replaced secret no longer signs');
    assert.throws(() => libraryVerifies(old, afterwards, world.clock.now()), /signature/i);
  });

  it('tries a delivery the receiver does not take again after the retry delay, doubled each time up to an hour, with the same webhook-id, until a 2xx', async (t) => {
    const { webhook, secret } = await hook(t, '/flaky');
    const statuses = [500, 503, 429, 400, 200];
    receiver.answer = () => ({ status: statuses[receiver.arrivalsAt('/flaky').length - 1]! });
    const event = await disabled();
    const triedAt: number[] = [];
    const waits: number[] = [];
    for (const status of statuses) {
      triedAt.push(world.clock.now());
      const { outcomes } = await round(1);
      const now = await delivery(webhook, event);
      if (status !== 200) {
        assert.deepEqual(outcomes, ['failed'], `answered ${status}: to be tried again`);
        assert.deepEqual([now.state, now.lastStatus, now.lastError], ['pending', status, `answered ${status}`]);
        waits.push(now.nextAttemptAt - world.clock.now());
        // Not a moment before it is due: a dispatcher woken a millisecond early finds nothing to send.
        world.clock.set(now.nextAttemptAt - 1);
        const early = await round(0);
        assert.deepEqual(early.looked, [[]], 'nothing due yet');
        world.clock.advance(1);
      } else {
        assert.deepEqual(outcomes, ['delivered']);
        assert.deepEqual([now.state, now.attempts, now.lastStatus, now.lastError], ['delivered', 5, 200, null]);
      }
    }
    // TESSERA_WEBHOOK_RETRY_DELAY_MS (20 minutes here), doubled after each failure, at most an hour.
    assert.deepEqual(waits, [20 * MINUTE, 40 * MINUTE, 60 * MINUTE, 60 * MINUTE]);
    const tries = receiver.arrivalsAt('/flaky');
    assert.equal(tries.length, 5, 'one request a try, none while waiting');
    assert.ok(
      tries.every((arrival) => arrival.headers['webhook-id'] === event.id && arrival.body === webhookBody(event)),
      'the same id and body every time, so that the receiver drops what it has handled',
    );
    assert.deepEqual(
      tries.map((arrival) => arrival.headers['webhook-timestamp']),
      triedAt.map((at) => String(Math.floor(at / 1000))),
      'each try signed at its own time',
    );
    assert.ok(tries.every((arrival) => signedWith(secret, arrival)));
  });

  it('gives a delivery up once the retry window since its event has passed: a dead letter, a warning and a webhook.dead_lettered event, once', async (t) => {
    const { webhook } = await hook(t, '/down');
    receiver.answer = () => ({ status: 500 });
    const settings = { ...SETTINGS, retryWindowSeconds: 3600 };
    const event = await disabled();
    // Tries at 0, 20 and 60 minutes: the last when the hour's window has ended.
    const first = await round(1, settings);
    assert.deepEqual(first.outcomes, ['failed']);
    world.clock.advance(20 * MINUTE);
    const second = await round(1, settings);
    assert.deepEqual(second.outcomes, ['failed'], 'within the window: tried again later');
    assert.equal((await delivery(webhook, event)).state, 'pending');
    world.clock.advance(40 * MINUTE);
    const last = await round(1, settings);
    assert.deepEqual(last.outcomes, ['dead']);

    const letter = await delivery(webhook, event);
    assert.deepEqual([letter.state, letter.attempts, letter.lastStatus, letter.lastError, letter.leaseUntil], ['dead', 3, 500, 'answered 500', null]);
    assert.deepEqual(last.warnings, [
      { webhook: webhook.id, event_id: event.id, attempts: 3, last_error: 'answered 500', message: 'webhook delivery given up: a dead letter' },
    ]);
    const given = (await world.store.events.list({ type: 'webhook.dead_lettered', limit: 10 })).filter((e) => e.detail['webhook'] === webhook.id);
    assert.deepEqual(
      given.map((e) => [e.at, e.detail]),
      [[world.clock.now(), { webhook: webhook.id, event_id: event.id, attempts: 3, last_error: 'answered 500' }]],
    );
    assert.equal(JSON.stringify(given).includes(webhookBody(event)), false, 'the event names the delivery, not the message');

    // A dead letter no longer holds anything up, nor is it tried again.
    world.clock.advance(24 * 60 * MINUTE);
    assert.deepEqual((await round(0, settings)).looked, [[]]);
    assert.equal(receiver.arrivalsAt('/down').length, 3);
  });

  it('fails a delivery for good, sending nothing, when its event left the audit trail (TESSERA_EVENT_RETENTION) after it was claimed', async (t) => {
    const { webhook } = await hook(t, '/purged');
    const event = await disabled();
    // The purge deletes an event's deliveries with it: only one claimed just before is left to try.
    const result = await tryOnce(webhook, {}, undefined, () => world.store.purgeExpired(0, { eventsBefore: event.at + 1 }));
    assert.deepEqual(result, {
      kind: 'failed',
      status: null,
      error: 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)',
      final: true,
    });
    assert.equal(receiver.arrivalsAt('/purged').length, 0);
  });

  it('takes any 2xx as delivered, and fails any other answer with its status (to be tried again, not given up), a redirect not followed', async (t) => {
    const { webhook } = await hook(t, '/answers');
    const event = await disabled();
    let status = 0;
    receiver.answer = (arrival) => (arrival.path === '/answers' ? { status, headers: { location: receiver.url('/elsewhere') } } : { status: 204 });
    const cases: [number, TryResult['kind']][] = [
      [200, 'delivered'],
      [201, 'delivered'],
      [204, 'delivered'],
      [299, 'delivered'],
      [300, 'failed'],
      [301, 'failed'],
      [302, 'failed'],
      [303, 'failed'],
      [307, 'failed'],
      [308, 'failed'],
      [400, 'failed'],
      [404, 'failed'],
      [410, 'failed'],
      [500, 'failed'],
      [502, 'failed'],
    ];
    for (const [answered, kind] of cases) {
      status = answered;
      const result = await tryOnce(webhook);
      const expected: TryResult =
        kind === 'delivered' ? { kind, status: answered, eventAt: event.at } : { kind, status: answered, error: `answered ${answered}` };
      assert.deepEqual(result, expected, String(answered));
    }
    assert.equal(receiver.arrivalsAt('/answers').length, cases.length);
    // Followed, a redirect would carry the signed body wherever the receiver (or whoever took its name) points.
    assert.equal(receiver.arrivalsAt('/elsewhere').length, 0, 'no redirect followed');
  });

  it('fails a try the receiver answers later than TESSERA_WEBHOOK_TIMEOUT with no status, and ends one the dispatcher stops', async (t) => {
    const { webhook } = await hook(t, '/slow');
    await disabled();
    // An answer a second late, against a timeout of 50 ms.
    receiver.answer = () => ({ status: 204, afterMs: 1000 });
    assert.deepEqual(await tryOnce(webhook, { settings: { ...SETTINGS, timeoutSeconds: 0.05 } }), {
      kind: 'failed',
      status: null,
      error: 'no answer in time',
    });
    assert.equal(receiver.arrivalsAt('/slow').length, 1);

    // The worker stopping: a try under way ends, and one begun then sends nothing.
    receiver.answer = () => ({ status: 204 });
    const stopped = new AbortController();
    stopped.abort();
    assert.deepEqual(await tryOnce(webhook, {}, stopped.signal), { kind: 'failed', status: null, error: 'no answer in time' });
    assert.equal(receiver.arrivalsAt('/slow').length, 1, 'nothing sent once stopped');
  });

  it('does not reach loopback, on connecting, for a webhook someone the owner delegated to added, unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS', async (t) => {
    // Added while the setting allowed it, by an admin client: the setting is off now.
    const delegate: WebhookDeps = {
      ...deps,
      config: { ...world.config, allowPrivateNetworkUrls: true },
      caller: { scopes: ['admin:webhooks', 'admin:events:read'] },
    };
    const delegated = await hook(t, '/delegated', { host: 'localhost', by: delegate });
    const owners = await hook(t, '/owners', { host: 'localhost' });
    assert.deepEqual([delegated.webhook.addedByOwner, owners.webhook.addedByOwner], [false, true]);
    await disabled();

    // The name is resolved, and the address it resolves to (127.0.0.1, ::1) refused.
    const refused = await tryOnce(delegated.webhook);
    assert.equal(refused.kind, 'failed');
    assert.equal(refused.status, null);
    assert.match(refused.kind === 'failed' ? refused.error : '', /^localhost resolves to a private, link-local or loopback address/);
    assert.equal(receiver.arrivalsAt('/delegated').length, 0, 'nothing sent');

    assert.equal((await tryOnce(delegated.webhook, { allowPrivateNetworkUrls: true })).kind, 'delivered', 'allowed by the setting');
    assert.equal((await tryOnce(owners.webhook)).kind, 'delivered', 'the owner’s reaches wherever it points');
    assert.equal(receiver.arrivalsAt('/owners').length, 1);

    // What each is sent by: the owner's by no rule, a delegate's by the rule of its setting.
    const rules: (UrlRule | null)[] = [];
    const post: DispatcherDeps['post'] = (rule) => {
      rules.push(rule);
      return async () => ({ status: 204, body: '' });
    };
    await tryOnce(owners.webhook, { post });
    await tryOnce(delegated.webhook, { post });
    await tryOnce(delegated.webhook, { post, allowPrivateNetworkUrls: true });
    assert.deepEqual(rules, [
      null,
      { selfRegistered: false, delegated: true, allowPrivateNetworks: false },
      { selfRegistered: false, delegated: true, allowPrivateNetworks: true },
    ]);
  });

  it('sends nothing for a webhook removed after its deliveries were claimed, and keys each delivery by its webhook and event', async (t) => {
    const { webhook } = await hook(t, '/removed');
    const event = await disabled();
    const now = world.clock.now();
    const batch = await world.store.outbox.claim('webhook', webhook.id, now, now + MINUTE, 32);
    assert.deepEqual(
      batch.map((d) => d.eventId),
      [event.id],
    );
    const kind = webhookKind(kindDeps());
    assert.deepEqual(kind.key(batch[0]!), { queue: webhook.id, item: event.id }, 'a webhook is a queue; the event, its item');
    await world.store.webhooks.remove(webhook.id);
    assert.equal(await kind.open(webhook.id, batch), null, 'the batch waits, and goes with its webhook');
    assert.equal(receiver.arrivalsAt('/removed').length, 0);
  });
});

/**
 * The outbox's metrics (docs/operations.md) for Shared Signals pushes and mail: tries by
 * outcome, the latency from an event (a message queued) to its delivery, and the gauges of
 * those pending and dead, read from the store.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { Events } from '../src/core/events.ts';
import { DELIVERY_PUSH, SSF_EVENTS } from '../src/core/ssf.ts';
import { MailDispatcher } from '../src/flows/mail/dispatcher.ts';
import { SsfDispatcher } from '../src/flows/ssf/dispatcher.ts';
import { Metrics } from '../src/http/metrics.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { KeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { Receiver } from './helpers/receiver.ts';
import { TEST_ENV } from './helpers/server.ts';
import { until } from './helpers/wait.ts';
import { auditEvent, ssfReceiverClient, ssfStream } from './store/fixtures.ts';

describe('what the metrics count of the outbox: Shared Signals pushes and mail', () => {
  let dir: string;
  let store: Store;
  const receiver = new Receiver({ status: 202 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-ssf-metrics-'));
    store = await openStore(loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_LOG_LEVEL: 'silent' }).database);
    await receiver.start();
  });
  after(async () => {
    await receiver.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts pushes delivered and dead, observes their latency, and reads pending and dead SETs from the store', async () => {
    const config = loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_WEBHOOK_RETRY_DELAY_MS: '100' });
    const metrics = new Metrics();
    metrics.countSsfDeliveries(() => store.ssf.countByState());
    const events = new Events(systemClock, store.events, []);
    const dispatcher = new SsfDispatcher({
      store,
      clock: systemClock,
      secrets: secretBox(new KeyEncryption([Buffer.alloc(32, 1)])),
      tokens: { securityEventToken: async () => 'a.b.c' },
      issuer: 'https://id.example.com',
      settings: config.webhooks,
      events,
      log: { warn: () => {} },
      allowPrivateNetworkUrls: true,
      observer: metrics.ssf,
    });
    await store.clients.create(ssfReceiverClient('receiver'));
    const requested = [SSF_EVENTS.ACCOUNT_DISABLED];
    await store.ssf.createStream(
      ssfStream({
        id: 'pushed',
        clientId: 'receiver',
        eventsRequested: requested,
        eventsDelivered: requested,
        deliveryMethod: DELIVERY_PUSH,
        endpointUrl: receiver.url,
      }),
    );
    const value = async (name: string, labels: Record<string, string> = {}) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.find((sample) =>
        Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted),
      )?.value;

    await events.emit({ type: 'user.disabled', userId: 'user-1', username: 'ada' });
    assert.equal(await value('tessera_ssf_deliveries_pending'), 1);
    dispatcher.start(50);
    try {
      await until('the SET to be delivered', async () => (await value('tessera_ssf_deliveries_total', { outcome: 'delivered' })) === 1, 5000);
      const latency = (await metrics.registry.getSingleMetric('tessera_ssf_delivery_latency_seconds')!.get()).values.find(
        (sample) => (sample as { metricName?: string }).metricName === 'tessera_ssf_delivery_latency_seconds_count',
      );
      assert.equal(latency?.value, 1);
      assert.equal(await value('tessera_ssf_deliveries_pending'), 0);
      receiver.refuse({ err: 'invalid_key', description: 'no' }, Infinity);
      await events.emit({ type: 'user.disabled', userId: 'user-1', username: 'ada' });
      await until('the refused SET to be dead', async () => (await value('tessera_ssf_deliveries_total', { outcome: 'dead' })) === 1, 5000);
      assert.equal(await value('tessera_ssf_deliveries_dead'), 1);
      assert.equal(await value('tessera_ssf_deliveries_total', { outcome: 'failed' }), 0);
    } finally {
      await dispatcher.stop();
    }
  });

  it("counts mail as the other kinds: delivered with its latency, given up, and the store's pending and dead", async () => {
    const config = loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db') });
    const metrics = new Metrics();
    metrics.countMailDeliveries(() => store.mail.countByState());
    const events = new Events(systemClock, store.events, []);
    let refuse = false;
    const mailer = new MailDispatcher({
      store,
      clock: systemClock,
      outbox: { queue: async () => true, open: () => ({ kind: 'recovery', to: 'ada@example.com' }) as never },
      transport: {
        send: async () => {
          if (refuse) throw new Error('550 mailbox unavailable');
        },
        close: () => {},
      },
      // No retry window: a failed message is given up at once.
      settings: { ...config.mail, retryDelayMs: 10, retryWindowSeconds: 0 },
      render: () => ({ subject: 's', text: 't', html: '<p>h</p>' }),
      host: 'id.example.com',
      events,
      log: { warn: () => {} },
      observer: metrics.mail,
    });
    const value = async (name: string, labels: Record<string, string> = {}) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.find((sample) =>
        Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted),
      )?.value;
    const queue = async (id: string) => {
      const at = Date.now();
      const event = auditEvent({ id: `event-${id}`, type: 'recovery.requested', at });
      await store.transaction(async (tx) => {
        await tx.events.add(event);
        await tx.mail.enqueue({ id, eventId: event.id, kind: 'recovery', message: { sealed: 'x' } }, at);
      });
    };
    await queue('mail-1');
    assert.equal(await value('tessera_mail_deliveries_pending'), 1);
    mailer.start(20);
    try {
      await until('the message to be delivered', async () => (await value('tessera_mail_deliveries_total', { outcome: 'delivered' })) === 1, 5000);
      const latency = (await metrics.registry.getSingleMetric('tessera_mail_delivery_latency_seconds')!.get()).values.find(
        (sample) => (sample as { metricName?: string }).metricName === 'tessera_mail_delivery_latency_seconds_count',
      );
      assert.equal(latency?.value, 1);
      assert.equal(await value('tessera_mail_deliveries_pending'), 0);
      refuse = true;
      await queue('mail-2');
      await until('the refused message to be dead', async () => (await value('tessera_mail_deliveries_total', { outcome: 'dead' })) === 1, 5000);
      assert.equal(await value('tessera_mail_deliveries_dead'), 1);
    } finally {
      await mailer.stop();
    }
  });
});

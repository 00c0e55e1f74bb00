/**
 * The outbox's worker over a kind whose tries the test decides, on a SQLite store's webhook
 * deliveries: a batch goes out in event order; the try that fails is retried before anything
 * behind it, and what was claimed behind it is given back uncounted; a dead letter is
 * recorded once; stopping gives a try under way back; and the turn budget lets no more tries
 * begin in one turn of the event loop than it allows, and, while the loop is busy, no more a
 * second than its floor, speeding up again once the loop has room.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Clock, systemClock } from '../../core/clock.ts';
import { Events } from '../../core/events.ts';
import { openSqliteStore } from '../../store/sqlite/store.ts';
import type { Store, WebhookDeliveryRecord } from '../../store/types.ts';
import { BUSY_UTILIZATION, type DeliveryKind, type LoopGauge, nextPace, OutboxWorker, PACE_WINDOW_MS, type TryResult, TurnBudget } from './worker.ts';

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('waited 5 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the outbox worker', () => {
  let dir: string;
  let store: Store;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-outbox-'));
    store = openSqliteStore(join(dir, 'tessera.db'));
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A webhook hearing `count` events, a millisecond apart; returns its id and the events' ids in order. */
  async function queued(count: number): Promise<{ webhookId: string; events: string[] }> {
    const webhookId = `hook-${Math.random().toString(36).slice(2)}`;
    const now = Date.now();
    await store.webhooks.create({
      id: webhookId,
      url: 'https://hooks.example.com/',
      events: ['user.disabled'],
      secret: { sealed: 'x' },
      previousSecret: null,
      previousSecretExpiresAt: null,
      addedByOwner: true,
      createdAt: now,
      updatedAt: now,
    });
    const events: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const id = `${webhookId}-event-${i}`;
      events.push(id);
      await store.events.add({
        id,
        type: 'user.disabled',
        at: now - 1000 + i,
        userId: 'u',
        username: 'ada',
        clientId: null,
        grantId: null,
        ip: null,
        userAgent: null,
        detail: {},
      });
    }
    return { webhookId, events };
  }

  function worker(
    answer: (delivery: WebhookDeliveryRecord, signal: AbortSignal) => Promise<TryResult> | TryResult,
    options: { retryWindowMs?: number; clock?: Clock; events?: Pick<Events, 'record' | 'publish'>; warn?: (message: string) => void } = {},
  ) {
    const tried: string[] = [];
    const dead: string[] = [];
    const kind: DeliveryKind<'webhook'> = {
      kind: 'webhook',
      key: (d) => ({ queue: d.webhookId, item: d.eventId }),
      open: async () => async (delivery, signal) => {
        tried.push(delivery.eventId);
        return answer(delivery, signal);
      },
      deadLetter: async (delivery, error) => {
        dead.push(delivery.eventId);
        const detail = { webhook: delivery.webhookId, event_id: delivery.eventId, last_error: error };
        return { event: { type: 'webhook.dead_lettered', detail }, log: [detail, 'a dead letter'] };
      },
    };
    const clock = options.clock ?? systemClock;
    const outbox = new OutboxWorker(
      kind,
      {
        store,
        events: options.events ?? new Events(clock, store.events, []),
        clock,
        log: { warn: (_details, message) => options.warn?.(message) },
        budget: new TurnBudget(4),
      },
      { timeoutMs: 1000, retryDelayMs: 50, retryWindowMs: options.retryWindowMs ?? 60_000, batch: 4, concurrency: 10, stopWaitMs: null },
    );
    return { outbox, tried, dead };
  }

  it('sends a batch in order; after a failure, retries it first, and what was behind it is given back uncounted', async () => {
    const { webhookId, events } = await queued(6);
    let failOnce = true;
    const { outbox, tried } = worker((delivery) => {
      if (delivery.eventId === events[1] && failOnce) {
        failOnce = false;
        return { kind: 'failed', status: 503, error: 'answered 503' };
      }
      return { kind: 'delivered', status: 200, eventAt: 0 };
    });
    outbox.start(20);
    try {
      await until(async () => (await store.webhooks.deliveries(webhookId, { state: 'delivered', limit: 10 })).length === 6);
    } finally {
      await outbox.stop();
    }
    assert.deepEqual(tried, [events[0], events[1], events[1], events[2], events[3], events[4], events[5]], 'the failed one again before any behind it');
    const attempts = new Map((await store.webhooks.deliveries(webhookId, { limit: 10 })).map((d) => [d.eventId, d.attempts]));
    assert.deepEqual(
      events.map((id) => attempts.get(id)),
      [1, 2, 1, 1, 1, 1],
      'those given back behind the failure were not counted as tried',
    );
    await store.webhooks.remove(webhookId);
  });

  it('records a delivery refused for good as a dead letter at once, once, and goes on with the next', async () => {
    const { webhookId, events } = await queued(3);
    const { outbox, tried, dead } = worker((delivery) =>
      delivery.eventId === events[0] ? { kind: 'failed', status: 400, error: 'refused', final: true } : { kind: 'delivered', status: 200, eventAt: 0 },
    );
    outbox.start(20);
    try {
      await until(async () => (await store.webhooks.deliveries(webhookId, { state: 'delivered', limit: 10 })).length === 2);
    } finally {
      await outbox.stop();
    }
    assert.deepEqual(dead, [events[0]]);
    assert.deepEqual(tried, events);
    assert.deepEqual(
      (await store.webhooks.deliveries(webhookId, { state: 'dead', limit: 10 })).map((d) => [d.eventId, d.lastError]),
      [[events[0], 'refused']],
    );
    await store.webhooks.remove(webhookId);
  });

  it('settles a dead letter and writes its event in one transaction: neither stands without the other', async () => {
    const { webhookId, events } = await queued(1);
    // The dead letter's event cannot be written the first time (a full disk, a lost connection).
    const audit = new Events(systemClock, store.events, []);
    let refuseEvent = true;
    const failingEvents: Pick<Events, 'record' | 'publish'> = {
      record: async (writer, input) => {
        if (refuseEvent && input.type === 'webhook.dead_lettered') {
          refuseEvent = false;
          throw new Error('the event could not be written');
        }
        return audit.record(writer, input);
      },
      publish: (...published) => audit.publish(...published),
    };
    // The lease of the failed settlement's claim runs out when the clock is moved on.
    let offset = 0;
    const clock: Clock = { now: () => Date.now() + offset };
    const warnings: string[] = [];
    const { outbox, tried, dead } = worker(() => ({ kind: 'failed', status: 400, error: 'refused', final: true }), {
      clock,
      events: failingEvents,
      warn: (message) => warnings.push(message),
    });
    const deadLetters = async () => (await store.webhooks.deliveries(webhookId, { state: 'dead', limit: 10 })).map((d) => d.eventId);
    const recorded = async () =>
      (await store.events.list({ type: 'webhook.dead_lettered', limit: 100 }))
        .filter((e) => e.detail['webhook'] === webhookId)
        .map((e) => e.detail['event_id']);
    outbox.start(20);
    try {
      // The settlement's transaction failed, and the worker said so.
      await until(async () => warnings.includes('delivery failed'));
      assert.deepEqual(await deadLetters(), [], 'not a dead letter while its event is not written');
      assert.deepEqual(await recorded(), []);
      offset = 10 * 60_000;
      await until(async () => (await deadLetters()).length === 1);
    } finally {
      await outbox.stop();
    }
    assert.deepEqual(await recorded(), [events[0]], 'given up with its event, once');
    assert.deepEqual(tried, [events[0], events[0]]);
    assert.deepEqual(dead, [events[0], events[0]]);
    await store.webhooks.remove(webhookId);
  });

  it('gives a try under way back when it stops, uncounted, to be sent again with the same id', async () => {
    const { webhookId, events } = await queued(2);
    let started!: () => void;
    const begun = new Promise<void>((resolve) => (started = resolve));
    const { outbox } = worker(async (_delivery, signal) => {
      started();
      // A receiver that never answers: only stopping ends the try, as it aborts a fetch.
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      return { kind: 'failed', status: null, error: 'aborted' };
    });
    outbox.start(20);
    await begun;
    const [held] = (await store.webhooks.deliveries(webhookId, { limit: 10 })).reverse();
    assert.deepEqual([held?.eventId, held?.attempts, held?.leaseUntil !== null], [events[0], 1, true], 'claimed and counted while tried');
    await outbox.stop();
    const after = (await store.webhooks.deliveries(webhookId, { limit: 10 })).reverse();
    assert.deepEqual(
      after.map((d) => [d.eventId, d.state, d.attempts, d.leaseUntil]),
      events.map((id) => [id, 'pending', 0, null]),
      'given back, uncounted and free, the one tried and the one behind it',
    );
    await store.webhooks.remove(webhookId);
  });

  it('begins at most its budget of tries in one turn of the event loop, the rest in the turns after', async () => {
    const budget = new TurnBudget(3);
    let turn = 0;
    let counting = true;
    const tick = () => {
      turn += 1;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const began: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        await budget.take();
        began.push(turn);
      }),
    );
    counting = false;
    const perTurn = new Map<number, number>();
    for (const at of began) perTurn.set(at, (perTurn.get(at) ?? 0) + 1);
    assert.ok(
      [...perTurn.values()].every((count) => count <= 3),
      `at most 3 a turn: ${JSON.stringify([...perTurn])}`,
    );
    assert.ok(perTurn.size >= 3, 'eight tries over at least three turns');
  });

  it('halves the pace of a busy loop from what was begun, down to the floor, and doubles it with room, then lifts it', () => {
    assert.equal(nextPace(Number.POSITIVE_INFINITY, 1, 800, 20), 400, 'busy: half of what the last window began');
    assert.equal(nextPace(400, BUSY_UTILIZATION, 400, 20), 200);
    assert.equal(nextPace(30, 1, 30, 20), 20, 'never below the floor');
    assert.equal(nextPace(Number.POSITIVE_INFINITY, 0.99, 0, 20), 20, 'busy with requests alone: the floor at once');
    assert.equal(nextPace(20, 0.3, 20, 20), 40, 'with room: doubled');
    assert.equal(nextPace(8000, 0.3, 8000, 20), Number.POSITIVE_INFINITY, 'and past 10,000 a second, no limit');
    assert.equal(nextPace(100, 0.8, 100, 20), 100, 'between the two: kept');
  });

  /** A loop as busy as the test says, on the real clock. */
  const gauge = (load: { utilization: number }): LoopGauge => ({ now: () => performance.now(), utilization: () => load.utilization });
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it('begins tries at its floor a second while the loop is busy, never none, and at full speed again once it has room', async () => {
    const load = { utilization: 1 };
    const budget = new TurnBudget(4, { busyTriesPerSecond: 20, gauge: gauge(load) });
    // A window gone by: the first try reads the loop's load.
    await sleep(PACE_WINDOW_MS + 10);
    let begun = 0;
    const busySince = performance.now();
    const all = Promise.all(
      Array.from({ length: 200 }, async () => {
        await budget.take();
        begun += 1;
      }),
    );
    await sleep(500);
    const busyBegun = begun;
    const busySeconds = (performance.now() - busySince) / 1000;
    // 20 a second, one at once and a window's worth (two) held: about 13 in the half second
    // (the turns alone would have let all 200 begin within a few milliseconds).
    assert.ok(busyBegun <= 3 + 20 * busySeconds, `at most the floor's pace while busy: ${busyBegun} in ${busySeconds.toFixed(2)} s`);
    assert.ok(busyBegun >= 2, `never starved: ${busyBegun} in ${busySeconds.toFixed(2)} s`);
    load.utilization = 0.1;
    const roomAt = performance.now();
    await all;
    // Doubling each window from 20 a second: unlimited within about ten windows.
    assert.ok(performance.now() - roomAt < 5000, `the other ${200 - busyBegun} within 5 s of the loop having room`);
  });
});

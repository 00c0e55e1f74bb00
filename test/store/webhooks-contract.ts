/**
 * The store contract for webhooks and their outbox, run inside `storeContract`
 * against every store: the trigger on `events` writes one delivery per webhook that hears the
 * event's type, in the event's transaction and as core/webhook-events.ts maps the types; a
 * delivery is claimed by one caller at a time, in the order of its webhook's events, and is
 * settled only by the try that holds it; dead letters are replayed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVENT_TYPES, type AuditEvent, type EventType } from '../../src/core/events.ts';
import { WEBHOOK_EVENT_TYPES, webhookTypeOf } from '../../src/core/webhook-events.ts';
import { DuplicateError, type Store, type WebhookRecord } from '../../src/store/types.ts';
import { adaEvent } from './fixtures.ts';

const T0 = Date.UTC(2026, 3, 1);
const SECOND = 1000;

export interface WebhookContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
}

export function webhooksContract({ store: current, unique }: WebhookContractHelpers): void {
  const webhook = (events: readonly string[], overrides: Partial<WebhookRecord> = {}): WebhookRecord => ({
    id: unique('webhook'),
    url: 'https://hooks.example.com/tessera',
    events,
    secret: { enc: 'A256GCM', kek: 'k', iv: 'i', ciphertext: 'c', tag: 't' },
    previousSecret: null,
    previousSecretExpiresAt: null,
    // Not the column's default (the webhooks before it were the owner's): written, then read back.
    addedByOwner: false,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  });
  const event = (type: EventType, at = T0, overrides: Partial<AuditEvent> = {}): AuditEvent => ({
    ...adaEvent(unique('event'), type, at, { by: 'operator' }),
    ...overrides,
  });
  /** The webhook's deliveries' event ids, oldest first. */
  const delivered = async (id: string) => (await current().webhooks.deliveries(id, { limit: 1000 })).map((d) => d.eventId).reverse();

  describe('webhooks and their outbox', () => {
    it('keeps a webhook as given, refuses a taken id, rotates its secret and removes it with its deliveries', async () => {
      const store = current();
      const hook = webhook(['user.disabled']);
      await store.webhooks.create(hook);
      assert.deepEqual(await store.webhooks.get(hook.id), hook);
      await assert.rejects(store.webhooks.create(webhook([], { id: hook.id })), DuplicateError);
      assert.ok((await store.webhooks.list()).some((listed) => listed.id === hook.id));

      const next = { enc: 'A256GCM', kek: 'k', iv: 'j', ciphertext: 'd', tag: 'u' };
      assert.equal(await store.webhooks.rotateSecret(hook.id, next, T0 + 60 * SECOND, T0 + SECOND), true);
      assert.deepEqual(await store.webhooks.get(hook.id), {
        ...hook,
        secret: next,
        previousSecret: hook.secret,
        previousSecretExpiresAt: T0 + 60 * SECOND,
        updatedAt: T0 + SECOND,
      });
      assert.equal(await store.webhooks.rotateSecret(hook.id, hook.secret, null, T0 + 2 * SECOND), true);
      assert.deepEqual(await store.webhooks.get(hook.id), { ...hook, previousSecret: null, previousSecretExpiresAt: null, updatedAt: T0 + 2 * SECOND });
      assert.equal(await store.webhooks.rotateSecret('nobody', next, null, T0), false);
      // Sealed again under a new key encryption key: the secrets alone change.
      const resealed = { enc: 'A256GCM', kek: 'k2', iv: 'x', ciphertext: 'y', tag: 'z' };
      assert.equal(await store.webhooks.reseal(hook.id, resealed, next), true);
      assert.deepEqual(await store.webhooks.get(hook.id), { ...hook, secret: resealed, previousSecret: next, updatedAt: T0 + 2 * SECOND });
      assert.equal(await store.webhooks.reseal(hook.id, hook.secret, null), true);
      assert.equal(await store.webhooks.reseal('nobody', hook.secret, null), false);

      await store.events.add(event('user.disabled'));
      assert.equal((await delivered(hook.id)).length, 1);
      assert.equal(await store.webhooks.remove(hook.id), true);
      assert.equal(await store.webhooks.remove(hook.id), false);
      assert.equal(await store.webhooks.get(hook.id), null);
      assert.deepEqual(await delivered(hook.id), []);
    });

    it('writes one delivery per webhook hearing the event, for every type as core/webhook-events.ts maps it', async () => {
      const store = current();
      const hooks = WEBHOOK_EVENT_TYPES.map((type) => webhook([type]));
      for (const hook of hooks) await store.webhooks.create(hook);
      const every = webhook([...WEBHOOK_EVENT_TYPES]);
      await store.webhooks.create(every);
      const events = EVENT_TYPES.map((type, i) => event(type, T0 + i));
      for (const added of events) await store.events.add(added);
      for (const [i, type] of WEBHOOK_EVENT_TYPES.entries()) {
        const expected = events.filter((added) => webhookTypeOf(added.type) === type).map((added) => added.id);
        assert.ok(expected.length > 0, type);
        assert.deepEqual(await delivered(hooks[i]!.id), expected, `${type} hears ${expected.length} of Tessera's event types`);
      }
      assert.deepEqual(
        await delivered(every.id),
        events.filter((added) => webhookTypeOf(added.type) !== null).map((added) => added.id),
      );
      const [first] = await store.webhooks.deliveries(every.id, { limit: 1 });
      assert.equal(first?.state, 'pending');
      assert.equal(first?.attempts, 0);
      for (const hook of [...hooks, every]) await store.webhooks.remove(hook.id);
    });

    it('writes no delivery for an event whose transaction rolled back', async () => {
      const store = current();
      const hook = webhook(['user.deleted']);
      await store.webhooks.create(hook);
      const kept = event('user.removed');
      await store.transaction(async (tx) => tx.events.add(kept));
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.events.add(event('user.removed'));
          throw new Error('the change failed');
        }),
        /the change failed/,
      );
      assert.deepEqual(await delivered(hook.id), [kept.id]);
      await store.webhooks.remove(hook.id);
    });

    it("sends a webhook's deliveries one at a time in the order of their events, each claimed by one caller", async () => {
      const store = current();
      const hook = webhook(['signin.failed']);
      await store.webhooks.create(hook);
      const [first, second] = [event('signin.failed', T0 + 2), event('signin.failed', T0 + 1)];
      await store.events.add(first);
      await store.events.add(second);
      assert.ok((await store.webhooks.due(T0 + 5, 1000)).includes(hook.id));
      assert.ok(!(await store.webhooks.due(T0, 1000)).includes(hook.id), 'nothing is due before its event');

      const claims = await Promise.all(Array.from({ length: 5 }, () => store.webhooks.claim(hook.id, T0 + 5, T0 + 30 * SECOND)));
      const won = claims.filter((claim) => claim !== null);
      assert.equal(won.length, 1, 'one caller of five wins');
      assert.equal(won[0]!.eventId, second.id, 'the older event first');
      assert.equal(won[0]!.attempts, 1);
      assert.equal(await store.webhooks.claim(hook.id, T0 + 6, T0 + 30 * SECOND), null, 'the next waits behind the one under way');
      assert.ok(!(await store.webhooks.due(T0 + 6, 1000)).includes(hook.id));

      // The try fails: it is due again later, and still ahead of the newer event.
      const failed = { kind: 'failed', status: 500, error: 'answered 500', nextAttemptAt: T0 + 10 * SECOND, deadBefore: T0 - 60 * SECOND } as const;
      assert.equal(await store.webhooks.settle(hook.id, second.id, 1, failed, T0 + 7), 'pending');
      assert.equal(await store.webhooks.claim(hook.id, T0 + 8, T0 + 30 * SECOND), null, 'not before its next attempt');
      const retry = await store.webhooks.claim(hook.id, T0 + 10 * SECOND, T0 + 40 * SECOND);
      assert.equal(retry?.eventId, second.id);
      assert.equal(retry?.attempts, 2);
      assert.equal(
        await store.webhooks.settle(hook.id, second.id, 1, { kind: 'delivered', status: 200 }, T0 + 11 * SECOND),
        null,
        'an earlier try settles nothing',
      );

      // A lease that ran out is taken over, and the late answer of the first holder is ignored.
      const takeover = await store.webhooks.claim(hook.id, T0 + 41 * SECOND, T0 + 70 * SECOND);
      assert.equal(takeover?.attempts, 3);
      assert.equal(await store.webhooks.settle(hook.id, second.id, 2, { kind: 'delivered', status: 200 }, T0 + 42 * SECOND), null);
      // Nor does its late failure: past the retry window, it would make a dead letter of the try under way.
      const late = { kind: 'failed', status: 500, error: 'answered 500', nextAttemptAt: T0 + 50 * SECOND, deadBefore: T0 + 42 * SECOND } as const;
      assert.equal(await store.webhooks.settle(hook.id, second.id, 2, late, T0 + 42 * SECOND), null, 'a late failure settles nothing');
      assert.equal(await store.webhooks.settle(hook.id, second.id, 3, { kind: 'delivered', status: 204 }, T0 + 42 * SECOND), 'delivered');

      const next = await store.webhooks.claim(hook.id, T0 + 43 * SECOND, T0 + 70 * SECOND);
      assert.equal(next?.eventId, first.id);
      // A server stopping gives it back uncounted.
      await store.webhooks.release(hook.id, first.id, 1, T0 + 44 * SECOND);
      assert.equal((await store.webhooks.claim(hook.id, T0 + 44 * SECOND, T0 + 70 * SECOND))?.attempts, 1);

      const [newest, oldest] = await store.webhooks.deliveries(hook.id, { limit: 10 });
      assert.deepEqual([newest?.eventId, oldest?.eventId], [first.id, second.id]);
      assert.deepEqual(
        { state: oldest?.state, deliveredAt: oldest?.deliveredAt, lastStatus: oldest?.lastStatus, lastError: oldest?.lastError },
        { state: 'delivered', deliveredAt: T0 + 42 * SECOND, lastStatus: 204, lastError: null },
      );
      await store.webhooks.remove(hook.id);
    });

    it('sends a replayed dead letter before the events still waiting behind it, in the order of their events', async () => {
      const store = current();
      const hook = webhook(['grant.revoked']);
      await store.webhooks.create(hook);
      const [lost, next, later, last] = [1, 2, 3, 4].map((offset) => event('grant.revoked', T0 + offset));
      for (const added of [lost, next, later, last]) await store.events.add(added!);
      const failed = { kind: 'failed', status: 500, error: 'answered 500', nextAttemptAt: T0 + 2 * SECOND, deadBefore: T0 + SECOND } as const;
      const head = await store.outbox.claim('webhook', hook.id, T0 + SECOND, T0 + 30 * SECOND, 1);
      assert.deepEqual(
        head.map((d) => d.eventId),
        [lost!.id],
      );
      assert.equal(await store.outbox.settle('webhook', hook.id, lost!.id, 1, failed, T0 + SECOND), 'dead');
      const [sent] = await store.outbox.claim('webhook', hook.id, T0 + SECOND, T0 + 30 * SECOND, 1);
      assert.equal(sent?.eventId, next!.id, 'the dead letter holds nothing back');
      assert.equal(await store.outbox.settle('webhook', hook.id, next!.id, 1, { kind: 'delivered', status: 204 }, T0 + SECOND), 'delivered');
      assert.equal(await store.outbox.replay('webhook', hook.id, lost!.id, T0 + 2 * SECOND), 1);
      assert.deepEqual(
        (await store.outbox.claim('webhook', hook.id, T0 + 2 * SECOND, T0 + 30 * SECOND, 10)).map((d) => [d.eventId, d.attempts]),
        [
          [lost!.id, 1],
          [later!.id, 1],
          [last!.id, 1],
        ],
        'the replayed letter first, then the rest, each once',
      );
      await store.webhooks.remove(hook.id);
    });

    it('gives a delivery up once its retry window has passed, and replays dead letters', async () => {
      const store = current();
      const hook = webhook(['grant.revoked']);
      await store.webhooks.create(hook);
      const lost = event('grant.revoked', T0);
      const after = event('grant.revoked', T0 + 1);
      await store.events.add(lost);
      await store.events.add(after);
      const before = await store.webhooks.countByState();
      await store.webhooks.claim(hook.id, T0 + SECOND, T0 + 30 * SECOND);
      const failed = { kind: 'failed', status: null, error: 'connection refused', nextAttemptAt: T0 + 2 * SECOND, deadBefore: T0 } as const;
      assert.equal(await store.webhooks.settle(hook.id, lost.id, 1, failed, T0 + SECOND), 'dead');
      assert.deepEqual(await store.webhooks.countByState(), { pending: before.pending - 1, dead: before.dead + 1 });
      assert.deepEqual((await store.webhooks.countsByWebhook()).get(hook.id), { pending: 1, delivered: 0, dead: 1 }, 'per webhook, each state');
      // The dead letter no longer holds the others back.
      assert.equal((await store.webhooks.claim(hook.id, T0 + 2 * SECOND, T0 + 30 * SECOND))?.eventId, after.id);
      assert.deepEqual(
        (await store.webhooks.deliveries(hook.id, { state: 'dead', limit: 10 })).map((d) => [d.eventId, d.lastError, d.lastStatus]),
        [[lost.id, 'connection refused', null]],
      );

      assert.equal(await store.webhooks.replay(hook.id, 'no-such-event', T0 + 3 * SECOND), 0);
      assert.equal(await store.webhooks.replay(hook.id, null, T0 + 3 * SECOND), 1);
      assert.equal(await store.webhooks.replay(hook.id, null, T0 + 3 * SECOND), 0, 'a replayed letter is no longer dead');
      const [replayed] = (await store.webhooks.deliveries(hook.id, { limit: 10 })).filter((d) => d.eventId === lost.id);
      assert.deepEqual(
        { state: replayed?.state, attempts: replayed?.attempts, queuedAt: replayed?.queuedAt, nextAttemptAt: replayed?.nextAttemptAt },
        { state: 'pending', attempts: 0, queuedAt: T0 + 3 * SECOND, nextAttemptAt: T0 + 3 * SECOND },
      );
      assert.deepEqual(await store.webhooks.event(lost.id), lost);
      assert.equal(await store.webhooks.event('no-such-event'), null);
      await store.webhooks.remove(hook.id);
    });
  });
}

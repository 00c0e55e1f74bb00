/**
 * The store contract for Shared Signals streams and their outbox, run inside `storeContract`
 * against every store: the trigger on `events` writes one delivery per stream that asked for
 * the event's SSF type, as core/ssf.ts maps the audit trail's types (a passkey refused as a
 * copy only), and none for a disabled stream; a verification goes to its stream alone; a
 * delivery is claimed by one caller at a time, in event order; a polling receiver's
 * acknowledgements and refusals are kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVENT_TYPES, type AuditEvent, type DetailValue, type EventType } from '../../src/core/events.ts';
import { DELIVERY_POLL, DELIVERY_PUSH, SSF_EVENTS, SSF_EVENTS_SUPPORTED, ssfTypeOf } from '../../src/core/ssf.ts';
import { DuplicateError, type ClientRecord, type SsfStreamRecord, type Store } from '../../src/store/types.ts';
import { adaEvent } from './fixtures.ts';

const T0 = Date.UTC(2026, 3, 1);

export interface SsfContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
  readonly givenClient: () => Promise<ClientRecord>;
}

export function ssfContract({ store: current, unique, givenClient }: SsfContractHelpers): void {
  const stream = async (events: readonly string[], overrides: Partial<SsfStreamRecord> = {}): Promise<SsfStreamRecord> => {
    const client = await givenClient();
    return {
      id: unique('stream'),
      clientId: client.id,
      audience: [client.id],
      eventsRequested: events,
      eventsDelivered: events,
      deliveryMethod: DELIVERY_PUSH,
      endpointUrl: 'https://receiver.example.com/caep',
      authorizationHeader: { enc: 'A256GCM', kek: 'k', iv: 'i', ciphertext: 'c', tag: 't' },
      format: 'email',
      defaultSubjects: 'ALL',
      description: 'for the app',
      status: 'enabled',
      reason: null,
      createdAt: T0,
      updatedAt: T0,
      ...overrides,
    };
  };
  const event = (type: EventType, at = T0, detail: Record<string, DetailValue> = { by: 'operator' }): AuditEvent => adaEvent(unique('event'), type, at, detail);
  const delivered = async (id: string) => (await current().ssf.deliveries(id, 1000)).map((d) => d.eventId).reverse();

  describe('shared signals streams and their outbox', () => {
    it('keeps a stream as given, refuses a taken id, saves a change and removes it with its deliveries', async () => {
      const store = current();
      const made = await stream([SSF_EVENTS.ACCOUNT_DISABLED]);
      await store.ssf.createStream(made);
      assert.deepEqual(await store.ssf.getStream(made.id), made);
      await assert.rejects(store.ssf.createStream({ ...made }), DuplicateError);
      assert.deepEqual(await store.ssf.listStreams(made.clientId), [made]);
      assert.equal(await store.ssf.countStreams(made.clientId), 1);
      const changed: SsfStreamRecord = {
        ...made,
        deliveryMethod: DELIVERY_POLL,
        endpointUrl: null,
        authorizationHeader: null,
        format: 'iss_sub',
        description: null,
        status: 'paused',
        reason: 'why',
        updatedAt: T0 + 1,
      };
      assert.equal(await store.ssf.saveStream(changed), true);
      assert.deepEqual(await store.ssf.getStream(made.id), changed);
      await store.events.add(event('user.disabled'));
      assert.equal((await delivered(made.id)).length, 1, 'a paused stream keeps what comes');
      assert.equal(await store.ssf.dropPending(made.id), 1);
      assert.deepEqual(await delivered(made.id), []);
      assert.equal(await store.ssf.removeStream(made.id), true);
      assert.equal(await store.ssf.removeStream(made.id), false);
      assert.equal(await store.ssf.saveStream(changed), false);
      assert.deepEqual(await delivered(made.id), []);
    });

    it('writes a delivery for every audit type as core/ssf.ts maps it, none for a disabled stream, and a verification to its stream alone', async () => {
      const store = current();
      const every = await stream(SSF_EVENTS_SUPPORTED);
      const disabled = await stream(SSF_EVENTS_SUPPORTED, { status: 'disabled' });
      const other = await stream([]);
      for (const made of [every, disabled, other]) await store.ssf.createStream(made);
      const expected: string[] = [];
      for (const type of EVENT_TYPES) {
        if (type === 'ssf.verification') continue;
        const added = event(type);
        await store.events.add(added);
        if (ssfTypeOf(added) !== null) expected.push(added.id);
      }
      const cloned = event('passkey.refused', T0, { reason: 'cloned' });
      await store.events.add(cloned);
      expected.push(cloned.id);
      assert.ok(ssfTypeOf(cloned) === SSF_EVENTS.CREDENTIAL_COMPROMISE);
      assert.deepEqual(new Set(await delivered(every.id)), new Set(expected), 'the trigger agrees with core/ssf.ts');
      assert.deepEqual(await delivered(disabled.id), []);
      const verification = event('ssf.verification', T0, { stream_id: other.id, state: 's' });
      await store.events.add(verification);
      assert.deepEqual(await delivered(other.id), [verification.id]);
      assert.ok(!(await delivered(every.id)).includes(verification.id));
      for (const made of [every, disabled, other]) await store.ssf.removeStream(made.id);
    });

    it('queues SETs for a NONE stream only about people added, and for an ALL stream about everyone but people removed (SSF 1.0 §8.1.3)', async () => {
      const store = current();
      const none = await stream([SSF_EVENTS.ACCOUNT_DISABLED], { defaultSubjects: 'NONE' });
      const all = await stream([SSF_EVENTS.ACCOUNT_DISABLED]);
      for (const made of [none, all]) await store.ssf.createStream(made);
      const about = (userId: string) => ({ ...event('user.disabled'), userId });
      const before = about('ada');
      await store.events.add(before);
      await store.ssf.setSubject({ streamId: none.id, userId: 'ada', state: 'added', verified: true, updatedAt: T0 });
      await store.ssf.setSubject({ streamId: all.id, userId: 'bob', state: 'removed', verified: true, updatedAt: T0 });
      const [ada, bob, cyd] = [about('ada'), about('bob'), about('cyd')];
      for (const added of [ada, bob, cyd]) await store.events.add(added);
      assert.deepEqual(await delivered(none.id), [ada.id], 'only the person added, from then on');
      assert.deepEqual(new Set(await delivered(all.id)), new Set([before.id, ada.id, cyd.id]), 'everyone but the person removed');
      // The last word stands: ada removed from NONE, bob added back to ALL.
      await store.ssf.setSubject({ streamId: none.id, userId: 'ada', state: 'removed', verified: false, updatedAt: T0 + 1 });
      await store.ssf.setSubject({ streamId: all.id, userId: 'bob', state: 'added', verified: false, updatedAt: T0 + 1 });
      const [ada2, bob2] = [about('ada'), about('bob')];
      for (const added of [ada2, bob2]) await store.events.add(added);
      assert.ok(!(await delivered(none.id)).includes(ada2.id));
      assert.ok((await delivered(all.id)).includes(bob2.id));
      assert.deepEqual(await store.ssf.subjects(none.id), [{ streamId: none.id, userId: 'ada', state: 'removed', verified: false, updatedAt: T0 + 1 }]);
      // A verification goes to its stream whatever its subjects.
      const verification = event('ssf.verification', T0, { stream_id: none.id });
      await store.events.add(verification);
      assert.ok((await delivered(none.id)).includes(verification.id));
      for (const made of [none, all]) await store.ssf.removeStream(made.id);
      assert.deepEqual(await store.ssf.subjects(none.id), [], 'its subjects go with the stream');
    });

    it('keeps what comes while a stream is paused, drops what comes while it is disabled (SSF 1.0 §8.1.2), and judges each event by the rules it came under', async () => {
      const store = current();
      const made = await stream([SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED], { status: 'paused' });
      await store.ssf.createStream(made);
      const about = (type: EventType, userId: string, at: number) => ({ ...event(type, at), userId });
      const kept = about('user.disabled', 'ada', T0 + 1);
      const bobs = about('user.enabled', 'bob', T0 + 2);
      await store.events.add(kept);
      await store.events.add(bobs);
      // Changed while paused: bob removed, and the stream no longer asks for account-enabled.
      await store.ssf.setSubject({ streamId: made.id, userId: 'bob', state: 'removed', verified: true, updatedAt: T0 + 3 });
      const narrowed = { ...made, eventsRequested: [SSF_EVENTS.ACCOUNT_DISABLED], eventsDelivered: [SSF_EVENTS.ACCOUNT_DISABLED], updatedAt: T0 + 3 };
      assert.equal(await store.ssf.saveStream(narrowed), true);
      assert.equal(await store.ssf.saveStream({ ...narrowed, status: 'enabled', updatedAt: T0 + 4 }), true);
      assert.deepEqual(await delivered(made.id), [kept.id, bobs.id], 'what came while paused, as the stream was then');
      const claimed = await store.outbox.claim('ssf', made.id, T0 + 10, T0 + 100, 10);
      assert.deepEqual(
        claimed.map((d) => d.eventId),
        [kept.id, bobs.id],
      );
      for (const d of claimed) await store.outbox.settle('ssf', made.id, d.eventId, d.attempts, { kind: 'delivered', status: 202 }, T0 + 11);
      // Disabled: what comes is dropped, and stays dropped once enabled again.
      assert.equal(await store.ssf.saveStream({ ...narrowed, status: 'disabled', updatedAt: T0 + 12 }), true);
      await store.ssf.dropPending(made.id);
      const dropped = about('user.disabled', 'cyd', T0 + 13);
      await store.events.add(dropped);
      assert.equal(await store.ssf.saveStream({ ...narrowed, status: 'enabled', updatedAt: T0 + 14 }), true);
      const after = about('user.disabled', 'dee', T0 + 15);
      await store.events.add(after);
      assert.deepEqual(
        (await store.outbox.claim('ssf', made.id, T0 + 20, T0 + 100, 10)).map((d) => d.eventId),
        [after.id],
        'nothing of what came while disabled',
      );
      assert.deepEqual(await delivered(made.id), [kept.id, bobs.id, after.id]);
      await store.ssf.removeStream(made.id);
    });

    it("claims a stream's oldest deliveries in one batch, in order; a head that failed before alone; none while one is held", async () => {
      const store = current();
      const made = await stream([SSF_EVENTS.ACCOUNT_DISABLED]);
      await store.ssf.createStream(made);
      const events = [3, 1, 2, 4].map((offset) => event('user.disabled', T0 + offset));
      for (const added of events) await store.events.add(added);
      const inOrder = [...events].sort((a, b) => a.at - b.at).map((e) => e.id);
      const claims = await Promise.all([1, 2, 3].map(() => store.outbox.claim('ssf', made.id, T0 + 10, T0 + 100, 3)));
      const won = claims.filter((claim) => claim.length > 0);
      assert.equal(won.length, 1, 'one caller of three wins');
      assert.deepEqual(
        won[0]!.map((d) => [d.eventId, d.attempts]),
        inOrder.slice(0, 3).map((id) => [id, 1]),
        'the three oldest, oldest first, each counted',
      );
      assert.deepEqual(await store.outbox.claim('ssf', made.id, T0 + 10, T0 + 100, 3), [], 'nothing while the head is held');
      // The first is delivered; the second fails; the third is given back uncounted.
      assert.equal(await store.outbox.settle('ssf', made.id, inOrder[0]!, 1, { kind: 'delivered', status: 202 }, T0 + 11), 'delivered');
      const failed = { kind: 'failed', status: 500, error: 'answered 500', nextAttemptAt: T0 + 20, deadBefore: T0 - 1000 } as const;
      assert.equal(await store.outbox.settle('ssf', made.id, inOrder[1]!, 1, failed, T0 + 11), 'pending');
      await store.outbox.release('ssf', made.id, inOrder[2]!, 1, T0 + 11);
      assert.deepEqual(await store.outbox.claim('ssf', made.id, T0 + 12, T0 + 100, 3), [], 'behind the failed head, before its retry');
      const retry = await store.outbox.claim('ssf', made.id, T0 + 20, T0 + 100, 3);
      assert.deepEqual(
        retry.map((d) => [d.eventId, d.attempts]),
        [[inOrder[1]!, 2]],
        'a head that failed is tried alone',
      );
      assert.equal(await store.outbox.settle('ssf', made.id, inOrder[1]!, 2, { kind: 'delivered', status: 202 }, T0 + 21), 'delivered');
      assert.deepEqual(
        (await store.outbox.claim('ssf', made.id, T0 + 22, T0 + 100, 3)).map((d) => [d.eventId, d.attempts]),
        [
          [inOrder[2]!, 1],
          [inOrder[3]!, 1],
        ],
        'then the rest, the one given back counted once',
      );
      await store.ssf.removeStream(made.id);
    });

    it("hands a push stream's deliveries out one at a time, in order, and keeps a poller's acknowledgements and refusals", async () => {
      const store = current();
      const made = await stream([SSF_EVENTS.ACCOUNT_DISABLED]);
      await store.ssf.createStream(made);
      const first = event('user.disabled', T0 + 1);
      const second = event('user.disabled', T0 + 2);
      await store.events.add(first);
      await store.events.add(second);
      assert.ok((await store.ssf.due(T0 + 10, 1000)).includes(made.id));
      const claimed = await store.ssf.claim(made.id, T0 + 10, T0 + 100);
      assert.equal(claimed?.eventId, first.id);
      assert.equal(await store.ssf.claim(made.id, T0 + 10, T0 + 100), null, 'held: the next waits behind it');
      assert.ok(!(await store.ssf.due(T0 + 10, 1000)).includes(made.id));
      assert.equal(await store.ssf.settle(made.id, first.id, 1, { kind: 'delivered', status: 202 }, T0 + 20), 'delivered');
      assert.equal(await store.ssf.settle(made.id, first.id, 1, { kind: 'delivered', status: 202 }, T0 + 20), null);
      assert.equal((await store.ssf.claim(made.id, T0 + 30, T0 + 100))?.eventId, second.id);
      assert.equal(
        await store.ssf.settle(made.id, second.id, 1, { kind: 'failed', status: 400, error: 'refused', nextAttemptAt: T0 + 40, deadBefore: T0 + 30 }, T0 + 30),
        'dead',
      );
      assert.equal((await store.ssf.event(first.id))?.id, first.id);

      const polled = await stream([SSF_EVENTS.ACCOUNT_DISABLED], { deliveryMethod: DELIVERY_POLL, endpointUrl: null });
      await store.ssf.createStream(polled);
      assert.ok(!(await store.ssf.due(T0 + 10, 1000)).includes(polled.id), 'a poll stream is never pushed');
      const a = event('user.disabled', T0 + 1);
      const b = event('user.disabled', T0 + 2);
      await store.events.add(a);
      await store.events.add(b);
      assert.deepEqual(
        (await store.ssf.pending(polled.id, 10)).map((d) => d.eventId),
        [a.id, b.id],
      );
      assert.equal(await store.ssf.acknowledge(polled.id, [a.id, a.id, 'unknown'], T0 + 5), 1);
      assert.equal(await store.ssf.refuse(polled.id, b.id, 'refused: invalid_key', T0 + 5), true);
      assert.equal(await store.ssf.refuse(polled.id, b.id, 'again', T0 + 5), false);
      assert.deepEqual(await store.ssf.pending(polled.id, 10), []);
      const states = (await store.ssf.deliveries(polled.id, 10)).map((d) => [d.eventId, d.state, d.lastError]);
      assert.deepEqual(states, [
        [b.id, 'dead', 'refused: invalid_key'],
        [a.id, 'delivered', null],
      ]);
      await store.ssf.removeStream(made.id);
      await store.ssf.removeStream(polled.id);
    });
  });
}

/**
 * Poll-based SET delivery (RFC 8936) without HTTP: what a poll request may hold, SETs returned
 * oldest first and again until acknowledged, `setErrs` ending one, `maxEvents` and
 * `moreAvailable`, a paused stream keeping its SETs, a long poll ended by its signal, and one
 * stream's acknowledgements touching no other's. The SETs are the verification events a
 * receiver asks for (SSF 1.0 §8.1.4.2), each delivered to its own stream alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { DELIVERY_POLL, DELIVERY_PUSH, SSF_EVENTS } from '../../core/ssf.ts';
import type { ClientRecord, SsfStreamRecord } from '../../store/types.ts';
import { flowWorld, ssfReceivers, type FlowWorld } from '../../../test/helpers/flows.ts';
import { within } from '../../../test/helpers/wait.ts';
import { MAX_POLL_EVENTS, poll, PollError } from './poll.ts';
import { createStream, deleteStream, MIN_VERIFICATION_INTERVAL, setStreamStatus, verifyStream, type StreamDeps } from './streams.ts';

describe('poll-based SET delivery (RFC 8936)', () => {
  let world: FlowWorld;
  let deps: StreamDeps;
  let receiver: ClientRecord;
  let other: ClientRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, secrets: world.secrets };
    [receiver, other] = await ssfReceivers(world);
  });
  after(() => world.close());

  /** A poll stream of `owner` with `states` as its verification events, in that order. */
  async function streamWith(owner: ClientRecord, states: readonly string[]): Promise<SsfStreamRecord> {
    const stream = await createStream(deps, owner.id, { delivery: { method: DELIVERY_POLL } });
    for (const state of states) {
      await verifyStream(deps, owner.id, { stream_id: stream.id, state });
      world.clock.advance(MIN_VERIFICATION_INTERVAL * 1000);
    }
    return stream;
  }

  /** The state each SET of an answer carries, by its jti, oldest first. */
  function states(sets: Record<string, string>): string[] {
    return Object.entries(sets).map(([jti, set]) => {
      const claims = decodeJwt(set);
      assert.equal(claims.jti, jti, 'each SET under its own jti');
      return (claims['events'] as Record<string, { state: string }>)[SSF_EVENTS.VERIFICATION]!.state;
    });
  }

  /** The stream as it is now (its status moves). */
  const current = async (stream: SsfStreamRecord) => (await world.store.ssf.getStream(stream.id))!;

  it('refuses a malformed poll with 400 invalid_request (§2.6), and a push stream, which has no poll endpoint', async () => {
    const stream = await streamWith(receiver, []);
    try {
      const cases: [string, unknown, RegExp][] = [
        ['a list for a body', ['ack'], /the body must be a JSON object/],
        ['maxEvents negative', { returnImmediately: true, maxEvents: -1 }, /maxEvents must be a non-negative integer/],
        ['maxEvents a fraction', { returnImmediately: true, maxEvents: 1.5 }, /maxEvents/],
        ['maxEvents a string', { returnImmediately: true, maxEvents: '10' }, /maxEvents/],
        ['returnImmediately a string', { returnImmediately: 'yes' }, /returnImmediately must be true or false/],
        ['ack not a list', { returnImmediately: true, ack: 'jti-1' }, /ack must be an array/],
        ['ack of numbers', { returnImmediately: true, ack: [1, 2] }, /ack must be an array/],
        ['ack of 1,001', { returnImmediately: true, ack: Array.from({ length: 1001 }, (_, i) => `jti-${i}`) }, /ack must be an array/],
        ['setErrs a list', { returnImmediately: true, setErrs: [] }, /setErrs must be an object/],
        ['a setErr without err', { returnImmediately: true, setErrs: { 'jti-1': { description: 'no' } } }, /setErrs\.jti-1 must have err/],
      ];
      for (const [what, body, description] of cases) {
        await assert.rejects(
          poll(deps, stream, body),
          (error: unknown) => error instanceof PollError && error.status === 400 && error.code === 'invalid_request' && description.test(error.message),
          what,
        );
      }
      const pushed = await createStream(deps, receiver.id, { delivery: { method: DELIVERY_PUSH, endpoint_url: 'https://receiver.example/events' } });
      await assert.rejects(poll(deps, pushed, { returnImmediately: true }), /delivered by push/);
      await deleteStream(deps, receiver.id, pushed.id);
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('returns the SETs oldest first, again until acknowledged, at most maxEvents with moreAvailable, and ends one named in setErrs', async () => {
    const stream = await streamWith(receiver, ['one', 'two', 'three']);
    try {
      const first = await poll(deps, stream, { returnImmediately: true, maxEvents: 2 });
      assert.deepEqual(states(first.sets), ['one', 'two']);
      assert.equal(first.moreAvailable, true);
      for (const set of Object.values(first.sets)) assert.equal(decodeJwt(set).aud, receiver.id);

      // A receiver that fell over mid-batch gets the same SETs again (§2.4).
      const again = await poll(deps, stream, { returnImmediately: true, maxEvents: 2 });
      assert.deepEqual(Object.keys(again.sets), Object.keys(first.sets));

      // Acknowledged, they are not sent again; the third comes, and nothing waits beyond it.
      const third = await poll(deps, stream, { returnImmediately: true, maxEvents: 1, ack: Object.keys(first.sets) });
      assert.deepEqual(states(third.sets), ['three']);
      assert.equal(third.moreAvailable, undefined, 'moreAvailable only when more wait than were sent');

      // §2.4 setErrs: a SET the receiver could not take is not sent again, but kept as a dead letter.
      const deadBefore = (await world.store.ssf.countByState()).dead;
      const none = await poll(deps, stream, {
        returnImmediately: true,
        setErrs: { [Object.keys(third.sets)[0]!]: { err: 'invalid_key', description: 'unknown key' } },
      });
      assert.deepEqual(none, { sets: {} });
      assert.equal((await world.store.ssf.countByState()).dead, deadBefore + 1);
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it(`answers at most ${MAX_POLL_EVENTS} SETs whatever maxEvents asks, and none for maxEvents 0, its acknowledgements still taken`, async () => {
    const stream = await streamWith(
      receiver,
      Array.from({ length: MAX_POLL_EVENTS + 1 }, (_, i) => `state-${String(i).padStart(3, '0')}`),
    );
    try {
      const answer = await poll(deps, stream, { returnImmediately: true, maxEvents: 1000 });
      assert.equal(Object.keys(answer.sets).length, MAX_POLL_EVENTS);
      assert.equal(answer.moreAvailable, true);
      assert.deepEqual(await poll(deps, stream, { returnImmediately: true, maxEvents: 0, ack: Object.keys(answer.sets) }), { sets: {} });
      const last = await poll(deps, stream, { returnImmediately: true });
      assert.deepEqual(states(last.sets), [`state-${MAX_POLL_EVENTS}`]);
      // One acknowledgement alone is taken as well.
      assert.deepEqual(await poll(deps, stream, { returnImmediately: true, ack: Object.keys(last.sets) }), { sets: {} });
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('sends nothing while the stream is paused and keeps its SETs for when it is enabled again (SSF 1.0 §8.1.2)', async () => {
    const stream = await streamWith(receiver, ['kept']);
    try {
      await setStreamStatus(deps, receiver.id, { stream_id: stream.id, status: 'paused' });
      assert.deepEqual(await poll(deps, await current(stream), { returnImmediately: true }), { sets: {} });
      await setStreamStatus(deps, receiver.id, { stream_id: stream.id, status: 'enabled' });
      assert.deepEqual(states((await poll(deps, await current(stream), { returnImmediately: true })).sets), ['kept']);
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('ends a long poll that has nothing to send when its signal aborts (the receiver went away), answering none', async () => {
    const stream = await streamWith(receiver, []);
    try {
      const controller = new AbortController();
      // The clock of the flow world stands still, so only the signal can end this wait.
      const waiting = poll(deps, stream, {}, controller.signal);
      setTimeout(() => controller.abort(), 50);
      // Within two seconds: a poll deaf to its signal would wait on a clock that never moves.
      assert.deepEqual(await within(waiting, 'the poll to end once its signal aborted', 2000), { sets: {} });
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it("takes a stream's acknowledgements and errors for its own SETs only: another stream's stay pending", async () => {
    const mine = await streamWith(receiver, []);
    const theirs = await streamWith(other, ['theirs']);
    try {
      const [jti] = Object.keys((await poll(deps, theirs, { returnImmediately: true })).sets);
      await poll(deps, mine, { returnImmediately: true, ack: [jti!] });
      await poll(deps, mine, { returnImmediately: true, setErrs: { [jti!]: { err: 'invalid_request' } } });
      assert.deepEqual(Object.keys((await poll(deps, theirs, { returnImmediately: true })).sets), [jti]);
    } finally {
      await deleteStream(deps, receiver.id, mine.id);
      await deleteStream(deps, other.id, theirs.id);
    }
  });
});

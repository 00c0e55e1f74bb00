/**
 * The operator's door to the outbox's Shared Signals pushes and mail without HTTP:
 * `listStreamDeliveries`, `listMailDeliveries`, `deadLetters` and `replayDeadLetters`, the
 * operations behind `tessera ssf …`, `tessera mail …`, the admin API and the console's dead
 * letters page, with who may (authority.ts `checkMayHandleDeadLetters`). The dead letters are
 * made as the server makes them: a SET a poll receiver refused in `setErrs` (RFC 8936 §2.4),
 * and a message queued in its event's transaction whose try failed past its retry window. A
 * dead letter sent again keeps its id and starts a new retry window. There is no operation
 * that discards a dead letter: the audit trail's retention takes it with its event.
 * test/outbox-dead-letters.test.ts checks the commands, the admin API and the console.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, ssfReceivers, type FlowWorld } from '../../../test/helpers/flows.ts';
import { DELIVERY_POLL } from '../../core/ssf.ts';
import type { ClientRecord, SsfStreamRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { MailMessage } from '../mail/outbox.ts';
import { poll } from '../ssf/poll.ts';
import { createStream, MIN_VERIFICATION_INTERVAL, verifyStream, type StreamDeps } from '../ssf/streams.ts';
import type { ManageDeps } from './deps.ts';
import { deadLetters, listMailDeliveries, listStreamDeliveries, mailDeliveryJson, replayDeadLetters, streamDeliveryJson, type OutboxQuery } from './outbox.ts';
import { DEFAULT_DELIVERIES, MAX_DELIVERIES } from './webhooks.ts';

describe('dead letters of the outbox (flows/manage/outbox.ts)', () => {
  let world: FlowWorld;
  let ssf: StreamDeps;
  let receiver: ClientRecord;
  let other: ClientRecord;
  let sent = 0;

  before(async () => {
    world = await flowWorld();
    ssf = { ...world.deps, secrets: world.secrets };
    [receiver, other] = await ssfReceivers(world);
  });
  after(() => world.close());

  const as = (scopes: string[]): ManageDeps => ({ ...world.manage, caller: { scopes } });
  const lastEvent = async () => (await world.store.events.list({ type: 'outbox.replayed', limit: 1 }))[0];

  /** A poll stream of `owner` with one verification event per state, oldest first; the SETs' ids in that order. */
  async function streamWith(owner: ClientRecord, states: readonly string[]): Promise<{ stream: SsfStreamRecord; jtis: string[] }> {
    const stream = await createStream(ssf, owner.id, { delivery: { method: DELIVERY_POLL } });
    for (const state of states) {
      world.clock.advance(MIN_VERIFICATION_INTERVAL * 1000);
      await verifyStream(ssf, owner.id, { stream_id: stream.id, state });
    }
    const { sets } = await poll(ssf, stream, { returnImmediately: true, maxEvents: states.length });
    return { stream, jtis: Object.keys(sets) };
  }

  /** RFC 8936 §2.4 `setErrs`: the receiver could not take these SETs; they are dead letters now. */
  const refuse = (stream: SsfStreamRecord, jtis: readonly string[]) =>
    poll(ssf, stream, {
      returnImmediately: true,
      maxEvents: 0,
      setErrs: Object.fromEntries(jtis.map((jti) => [jti, { err: 'invalid_key', description: 'unknown key' }])),
    });

  /** Queues a message in the transaction of its event, as a flow does; its delivery's id. */
  async function queueMail(): Promise<string> {
    sent += 1;
    world.clock.advance(1);
    const message: MailMessage = {
      kind: 'recovery',
      to: { address: `person${sent}@example.com`, name: 'Ada' },
      locale: 'en',
      values: { username: `person${sent}`, link: `https://auth.example.com/reset-password?token=secret-${sent}`, expiresAt: 0 },
    };
    const eventId = await transactionWithEvents(world.deps, async (tx, record) => {
      const event = await record({ type: 'recovery.requested', detail: { accounts: 1 } });
      assert.equal(await world.mail.queue(tx, event, message), true);
      return event.id;
    });
    return (await world.store.mail.forEvent(eventId))[0]!.id;
  }

  /** Tries every message due, as the dispatcher does: each delivered, or failed past its retry window (a dead letter). */
  async function tryMail(how: 'delivered' | 'dead'): Promise<void> {
    const now = world.clock.now();
    for (let tried = 0; tried < 200; tried += 1) {
      const claimed = await world.store.mail.claim(now, now + 60_000);
      if (claimed === null) return;
      // Failed with its retry window over (it started before `deadBefore`): not tried again.
      const outcome =
        how === 'delivered'
          ? { kind: 'delivered' as const }
          : { kind: 'failed' as const, error: '550 5.1.1 no such user', nextAttemptAt: now, deadBefore: now };
      assert.equal(await world.store.mail.settle(claimed.id, claimed.attempts, outcome, now), how);
    }
    assert.fail('more messages due than the test queued');
  }

  it("lists a stream's SETs newest first, by state, and refuses a stream unknown or a state or limit out of bounds, naming the field", async () => {
    const { stream, jtis } = await streamWith(receiver, ['one', 'two', 'three']);
    await refuse(stream, [jtis[0]!]);
    const all = await listStreamDeliveries(world.manage, stream.id);
    assert.deepEqual(
      all.map((delivery) => [delivery.eventId, delivery.state]),
      [
        [jtis[2], 'pending'],
        [jtis[1], 'pending'],
        [jtis[0], 'dead'],
      ],
    );
    const [dead] = await listStreamDeliveries(world.manage, stream.id, { state: 'dead' });
    assert.deepEqual(streamDeliveryJson(dead!), {
      event_id: jtis[0],
      event_at: new Date(dead!.eventAt).toISOString(),
      state: 'dead',
      attempts: dead!.attempts,
      next_attempt_at: null,
      delivered_at: null,
      last_status: null,
      last_error: dead!.lastError,
    });
    assert.match(dead!.lastError ?? '', /invalid_key/);
    assert.equal((await listStreamDeliveries(world.manage, stream.id, { state: 'pending', limit: 1 }))[0]?.eventId, jtis[2]);
    const cases: [string, string, OutboxQuery, string][] = [
      ['a stream unknown', 'no-such-stream', {}, 'not_found'],
      ['a state that is none', stream.id, { state: 'lost' }, 'invalid:state'],
      ['a limit of none', stream.id, { limit: 0 }, 'invalid:limit'],
      ['a limit past the bound', stream.id, { limit: MAX_DELIVERIES + 1 }, 'invalid:limit'],
      ['a limit that is not whole', stream.id, { limit: 1.5 }, 'invalid:limit'],
      ['the bound itself', stream.id, { limit: MAX_DELIVERIES }, 'ok'],
    ];
    for (const [what, id, query, expected] of cases) assert.equal(await outcome(() => listStreamDeliveries(world.manage, id, query)), expected, what);
  });

  it('lists mail newest first by state, saying what kind and how it went, never to whom or the link', async () => {
    const dead = await queueMail();
    await tryMail('dead');
    const delivered = await queueMail();
    await tryMail('delivered');
    const pending = await queueMail();
    const listed = await listMailDeliveries(world.manage, { limit: 3 });
    assert.deepEqual(
      listed.map((delivery) => [delivery.id, delivery.state]),
      [
        [pending, 'pending'],
        [delivered, 'delivered'],
        [dead, 'dead'],
      ],
    );
    assert.deepEqual(
      (await listMailDeliveries(world.manage, { state: 'dead' })).map((delivery) => delivery.id),
      [dead],
    );
    const shown = listed.map(mailDeliveryJson);
    assert.deepEqual(shown[2], {
      id: dead,
      event_id: listed[2]!.eventId,
      kind: 'recovery',
      state: 'dead',
      attempts: 1,
      queued_at: new Date(listed[2]!.queuedAt).toISOString(),
      next_attempt_at: null,
      delivered_at: null,
      last_error: '550 5.1.1 no such user',
    });
    assert.equal(shown[0]!['next_attempt_at'], new Date(listed[0]!.nextAttemptAt).toISOString(), 'when a pending message is tried next');
    assert.equal(shown[1]!['next_attempt_at'], null);
    const text = JSON.stringify(shown);
    for (const secret of ['@example.com', 'token=', 'secret-']) assert.equal(text.includes(secret), false, `never ${secret}`);
    await tryMail('delivered');
    const cases: [string, OutboxQuery, string][] = [
      ['a state that is none', { state: 'sent' }, 'invalid:state'],
      ['a limit of none', { limit: 0 }, 'invalid:limit'],
      ['a limit past the bound', { limit: MAX_DELIVERIES + 1 }, 'invalid:limit'],
      ['the bound itself', { limit: MAX_DELIVERIES }, 'ok'],
    ];
    for (const [what, query, expected] of cases) assert.equal(await outcome(() => listMailDeliveries(world.manage, query)), expected, what);
  });

  it(`lists ${DEFAULT_DELIVERIES} messages unless asked for more`, async () => {
    for (let i = 0; i <= DEFAULT_DELIVERIES; i += 1) await queueMail();
    await tryMail('delivered');
    assert.equal((await listMailDeliveries(world.manage)).length, DEFAULT_DELIVERIES);
    assert.ok((await listMailDeliveries(world.manage, { limit: MAX_DELIVERIES })).length > DEFAULT_DELIVERIES);
  });

  it("gathers every stream's dead letters, and every message's, newest first, up to the limit", async () => {
    const mine = await streamWith(receiver, ['a', 'b']);
    const theirs = await streamWith(other, ['c']);
    await refuse(mine.stream, mine.jtis);
    await refuse(theirs.stream, theirs.jtis);
    const letters = await deadLetters(world.manage, 'ssf', 3);
    assert.deepEqual(
      letters.map((delivery) => [delivery.streamId, delivery.eventId, delivery.state]),
      [
        [theirs.stream.id, theirs.jtis[0], 'dead'],
        [mine.stream.id, mine.jtis[1], 'dead'],
        [mine.stream.id, mine.jtis[0], 'dead'],
      ],
    );
    const first = await queueMail();
    await tryMail('dead');
    const second = await queueMail();
    await tryMail('dead');
    assert.deepEqual(
      (await deadLetters(world.manage, 'mail', 2)).map((delivery) => [delivery.id, delivery.state]),
      [
        [second, 'dead'],
        [first, 'dead'],
      ],
    );
  });

  it("sends a stream's dead SET again under the same jti with a new retry window, one or all, and records who did", async () => {
    const { stream, jtis } = await streamWith(receiver, ['x', 'y', 'z']);
    const theirs = await streamWith(other, ['w']);
    await refuse(stream, jtis);
    await refuse(theirs.stream, theirs.jtis);
    world.clock.advance(60_000);
    const now = world.clock.now();

    assert.equal(await replayDeadLetters(world.manage, 'ssf', stream.id, jtis[1]!), 1);
    const again = (await listStreamDeliveries(world.manage, stream.id)).find((delivery) => delivery.eventId === jtis[1]);
    assert.deepEqual(
      [again?.state, again?.attempts, again?.queuedAt, again?.nextAttemptAt],
      ['pending', 0, now, now],
      'pending at once, a new window from now',
    );
    assert.deepEqual((await lastEvent())?.detail, { kind: 'ssf', stream_id: stream.id, id: jtis[1]!, deliveries: 1, by: 'operator' });
    // RFC 8936 §2.4: the receiver is sent the same SET, under the same jti, again.
    assert.deepEqual(Object.keys((await poll(ssf, stream, { returnImmediately: true })).sets), [jtis[1]]);

    assert.equal(await outcome(() => replayDeadLetters(world.manage, 'ssf', stream.id, jtis[1]!)), 'not_found', 'no longer a dead letter');
    assert.equal(await replayDeadLetters(world.manage, 'ssf', stream.id, null), 2, "the stream's other two");
    assert.deepEqual((await lastEvent())?.detail, { kind: 'ssf', stream_id: stream.id, id: null, deliveries: 2, by: 'operator' });
    assert.deepEqual(
      (await listStreamDeliveries(world.manage, theirs.stream.id)).map((delivery) => delivery.state),
      ['dead'],
      "another stream's dead letters stay as they are",
    );
    const recorded = (await world.store.events.list({ type: 'outbox.replayed', limit: 100 })).length;
    assert.equal(await replayDeadLetters(world.manage, 'ssf', stream.id, null), 0, 'none left');
    assert.equal((await world.store.events.list({ type: 'outbox.replayed', limit: 100 })).length, recorded, 'nothing sent again, nothing recorded');
    const cases: [string, string | null, string | null, string][] = [
      ['no stream named', null, null, 'invalid:stream_id'],
      ['a stream unknown', 'no-such-stream', null, 'not_found'],
      ['a SET the stream never had', stream.id, 'no-such-jti', 'not_found'],
    ];
    for (const [what, queue, item, expected] of cases) assert.equal(await outcome(() => replayDeadLetters(world.manage, 'ssf', queue, item)), expected, what);
  });

  it('sends a dead message again under the same id with a new retry window, one or all, and records who did', async () => {
    const [one, two, three] = [await queueMail(), await queueMail(), await queueMail()];
    await tryMail('dead');
    world.clock.advance(60_000);
    const now = world.clock.now();
    const state = async (id: string) => (await listMailDeliveries(world.manage, { limit: MAX_DELIVERIES })).find((delivery) => delivery.id === id);

    assert.equal(await replayDeadLetters(world.manage, 'mail', null, two), 1);
    const again = await state(two);
    assert.deepEqual([again?.state, again?.attempts, again?.queuedAt, again?.nextAttemptAt], ['pending', 0, now, now]);
    assert.deepEqual([(await state(one))?.state, (await state(three))?.state], ['dead', 'dead'], 'one message is one queue');
    assert.deepEqual((await lastEvent())?.detail, { kind: 'mail', stream_id: null, id: two, deliveries: 1, by: 'operator' });
    const claimed = await world.store.mail.claim(now, now + 60_000);
    assert.equal(claimed?.id, two, 'tried again under the same id, its Message-ID');
    assert.equal(world.mail.open(claimed.id, claimed.message!).to.address.endsWith('@example.com'), true, 'its sealed message kept');
    await world.store.mail.settle(claimed.id, claimed.attempts, { kind: 'delivered' }, now);

    assert.equal(await outcome(() => replayDeadLetters(world.manage, 'mail', null, two)), 'not_found', 'delivered, not a dead letter');
    assert.equal(await outcome(() => replayDeadLetters(world.manage, 'mail', null, 'no-such-message')), 'not_found');
    const dead = (await deadLetters(world.manage, 'mail', MAX_DELIVERIES)).length;
    assert.ok(dead >= 2);
    assert.equal(await replayDeadLetters(world.manage, 'mail', null, null), dead, 'every dead message');
    assert.deepEqual((await lastEvent())?.detail, { kind: 'mail', stream_id: null, id: null, deliveries: dead, by: 'operator' });
    assert.deepEqual(await deadLetters(world.manage, 'mail', MAX_DELIVERIES), []);
    await tryMail('delivered');
  });

  it('lets a caller read them with admin:events:read, send SETs again with admin:events, and mail again with admin:users too', async () => {
    const { stream } = await streamWith(receiver, []);
    const read = 'admin:events:read';
    const events = 'admin:events';
    const users = 'admin:users';
    // Each operation names what does not exist, so that a caller allowed is answered not_found, and changes nothing.
    const operations: [string, (deps: ManageDeps) => Promise<unknown>][] = [
      ["a stream's SETs", (deps) => listStreamDeliveries(deps, stream.id)],
      ['mail', (deps) => listMailDeliveries(deps)],
      ["streams' dead letters", (deps) => deadLetters(deps, 'ssf', 1)],
      ["mail's dead letters", (deps) => deadLetters(deps, 'mail', 1)],
      ['a SET sent again', (deps) => replayDeadLetters(deps, 'ssf', stream.id, 'no-such-jti')],
      ['a message sent again', (deps) => replayDeadLetters(deps, 'mail', null, 'no-such-message')],
    ];
    const cases: [string, string[], string[]][] = [
      ['no admin scope', [], ['forbidden', 'forbidden', 'forbidden', 'forbidden', 'forbidden', 'forbidden']],
      ['people alone', [users, 'admin:clients'], ['forbidden', 'forbidden', 'forbidden', 'forbidden', 'forbidden', 'forbidden']],
      ['reading the trail', [read], ['ok', 'ok', 'ok', 'ok', 'forbidden', 'forbidden']],
      ['reading the trail and changing people', [read, users], ['ok', 'ok', 'ok', 'ok', 'forbidden', 'forbidden']],
      ['changing the trail', [events], ['ok', 'ok', 'ok', 'ok', 'not_found', 'forbidden']],
      ['changing the trail and people', [events, users], ['ok', 'ok', 'ok', 'ok', 'not_found', 'not_found']],
    ];
    for (const [who, scopes, expected] of cases) {
      const seen = [];
      for (const [, run] of operations) seen.push(await outcome(() => run(as(scopes))));
      assert.deepEqual(seen, expected, who);
    }
    assert.equal(await outcome(() => replayDeadLetters(as([read]), 'ssf', null, null)), 'forbidden', 'refused before anything it names is looked at');
  });
});

/**
 * Push delivery of Security Event Tokens (RFC 8935) without a network: the dispatcher is given
 * a poster that records each POST and answers what the test says. Covered: the POST (the SET
 * as the body, application/secevent+jwt, the Authorization header the stream was given, opened
 * from its sealed copy, the receivers' URL rule, the time limit, only a 400's answer read),
 * which answers deliver, which are tried again and which are a receiver's refusal with its
 * `err` (RFC 8935 §2.3), a stream paused, disabled or gone giving its batch back, what is given
 * up without a POST, and, through the outbox's worker, a failed SET tried again after the
 * retry delay, doubled, with the later SETs waiting behind it, until it is a dead letter,
 * logged and in the audit trail. test/ssf.test.ts pushes to a receiver on loopback through
 * the server; test/ssf-signing.test.ts checks that a SET is signed once for several streams.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import type { OutboundAnswer, OutboundPost, UrlRule } from '../../core/outbound.ts';
import { DELIVERY_PUSH, SSF_EVENTS } from '../../core/ssf.ts';
import type { ClientRecord, SsfDeliveryRecord, SsfStreamRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, ssfReceivers, type FlowWorld } from '../../../test/helpers/flows.ts';
import { within } from '../../../test/helpers/wait.ts';
import { TurnBudget, type TryResult } from '../outbox/worker.ts';
import { SsfDispatcher, type SsfDispatcherDeps, ssfKind } from './dispatcher.ts';
import { createStream, deleteStream, setStreamStatus, type StreamDeps } from './streams.ts';

const ENDPOINT = 'https://receiver.example/events';
const RETRY_DELAY_MS = 5000;
const RETRY_WINDOW_SECONDS = 60;

/** A POST the dispatcher made, and the rule its poster was made under. */
interface Post extends OutboundPost {
  readonly url: string;
}

describe('Shared Signals push delivery (RFC 8935)', () => {
  let world: FlowWorld;
  let streams: StreamDeps;
  let receiver: ClientRecord;
  let ada: UserRecord;
  /** The POSTs made, in order. */
  let posts: Post[];
  /** The rules posters were asked for. */
  let rules: UrlRule[];
  /** What the receiver answers next (202 when nothing is left); an Error is thrown as the POST's failure. */
  let answers: (OutboundAnswer | Error)[];
  let warnings: Record<string, unknown>[];
  /** What the worker reported, in order: delivered, failed (to be tried again), dead (its audit event recorded). */
  let outcomes: string[];
  let waiting: (() => void) | null;
  let deps: SsfDispatcherDeps;

  const reported = (outcome: string) => {
    outcomes.push(outcome);
    const wake = waiting;
    waiting = null;
    wake?.();
  };

  before(async () => {
    world = await flowWorld({ TESSERA_WEBHOOK_RETRY_DELAY_MS: String(RETRY_DELAY_MS), TESSERA_WEBHOOK_RETRY_WINDOW: String(RETRY_WINDOW_SECONDS) });
    streams = { ...world.deps, secrets: world.secrets };
    [receiver] = await ssfReceivers(world);
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com' });
  });
  after(() => world.close());

  beforeEach(() => {
    posts = [];
    rules = [];
    answers = [];
    warnings = [];
    outcomes = [];
    waiting = null;
    deps = {
      store: world.store,
      clock: world.clock,
      secrets: world.secrets,
      tokens: world.tokens,
      issuer: FLOW_ISSUER,
      settings: world.config.webhooks,
      events: {
        record: (writer, input) => world.deps.events.record(writer, input),
        publish: (...events) => {
          world.deps.events.publish(...events);
          if (events.some((event) => event.type === 'ssf.dead_lettered')) reported('dead');
        },
      },
      log: { warn: (details, message) => void warnings.push({ ...details, message }) },
      allowPrivateNetworkUrls: false,
      observer: { delivered: () => reported('delivered'), failed: () => reported('failed'), dead: () => {} },
      post: (rule) => {
        rules.push(rule);
        return async (url, post) => {
          posts.push({ url, ...post });
          const answer = answers.shift() ?? { status: 202, body: '' };
          if (answer instanceof Error) throw answer;
          return answer;
        };
      },
      budget: new TurnBudget(100),
    };
  });

  /** A push stream of the receiver for accounts disabled and enabled, with `delivery`'s other members and `others`. */
  async function pushStream(delivery: Record<string, unknown> = {}, others: Record<string, unknown> = {}): Promise<SsfStreamRecord> {
    return createStream(streams, receiver.id, {
      delivery: { method: DELIVERY_PUSH, endpoint_url: ENDPOINT, ...delivery },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED],
      ...others,
    });
  }

  /** `count` events about Ada (her account disabled, enabled, disabled…): the stream's deliveries, oldest first. */
  async function happenings(stream: SsfStreamRecord, count: number): Promise<SsfDeliveryRecord[]> {
    for (let i = 0; i < count; i += 1) {
      await world.deps.events.emit({ type: i % 2 === 0 ? 'user.disabled' : 'user.enabled', userId: ada.id, username: ada.username });
      world.clock.advance(1);
    }
    return world.store.ssf.pending(stream.id, 100);
  }

  /** The stream's deliveries claimed as the worker claims them, and one try of the first. */
  async function claimAndTry(stream: SsfStreamRecord): Promise<{ batch: SsfDeliveryRecord[]; attempt: (delivery?: SsfDeliveryRecord) => Promise<TryResult> }> {
    const now = world.clock.now();
    const batch = await world.store.outbox.claim('ssf', stream.id, now, now + 60_000, 10);
    assert.ok(batch.length > 0, 'a delivery was claimed');
    const attempt = await ssfKind(deps).open(stream.id, batch);
    assert.ok(attempt !== null, 'the stream is open');
    return { batch, attempt: (delivery = batch[0]!) => attempt(delivery, new AbortController().signal) };
  }

  /** One look of a fresh dispatcher, until the worker reports what became of one try; then stopped. */
  async function turn(): Promise<string> {
    const dispatcher = new SsfDispatcher(deps);
    const reportedNow = new Promise<void>((resolve) => (waiting = resolve));
    const before = outcomes.length;
    dispatcher.wake();
    try {
      await within(reportedNow, 'the worker to report a try');
    } finally {
      await dispatcher.stop();
    }
    return outcomes.slice(before).join(' ');
  }

  it('posts the SET as the body, as application/secevent+jwt, with the Authorization header the stream was given (RFC 8935 §2.1)', async () => {
    const stream = await pushStream({ authorization_header: 'Bearer push-secret' });
    try {
      const [delivery] = await happenings(stream, 1);
      const { attempt } = await claimAndTry(stream);
      assert.deepEqual(await attempt(), { kind: 'delivered', status: 202, eventAt: delivery!.eventAt });

      const [post] = posts;
      assert.equal(posts.length, 1);
      assert.equal(post!.url, ENDPOINT);
      assert.deepEqual(post!.headers, {
        'content-type': 'application/secevent+jwt',
        accept: 'application/json',
        'user-agent': 'Tessera-SSF/1',
        // SSF 1.0: the transmitter sets the stream's authorization_header on each delivery.
        authorization: 'Bearer push-secret',
      });
      const { payload, protectedHeader } = await jwtVerify(post!.body, createLocalJWKSet(await world.keys.jwks()), {
        issuer: FLOW_ISSUER,
        audience: receiver.id,
        typ: 'secevent+jwt',
        currentDate: new Date(world.clock.now()),
      });
      assert.equal(protectedHeader.typ, 'secevent+jwt');
      assert.equal(payload.jti, delivery!.eventId, 'the jti is the event, the same on every try');
      assert.deepEqual(payload['events'], { [SSF_EVENTS.ACCOUNT_DISABLED]: {} });
      assert.deepEqual(payload['sub_id'], { format: 'iss_sub', iss: FLOW_ISSUER, sub: ada.id });

      // Bounded by TESSERA_WEBHOOK_TIMEOUT; only a refusal's answer is read, and only its start.
      assert.equal(post!.timeoutMs, world.config.webhooks.timeoutSeconds * 1000);
      assert.deepEqual(
        [200, 202, 302, 400, 401, 500].map((status) => post!.readAnswer?.(status) === true),
        [false, false, false, true, false, false],
      );
      assert.equal(post!.answerLimitBytes, 4096);
      // A receiver is someone the server's owner delegated to: the public network only, loopback included, unless allowed.
      assert.deepEqual(rules, [{ selfRegistered: false, delegated: true, allowPrivateNetworks: false }]);
    } finally {
      await deleteStream(streams, receiver.id, stream.id);
    }
  });

  it('sends no Authorization header for a stream given none, and names the person by address for a stream in the email format', async () => {
    const stream = await pushStream({}, { format: 'email' });
    try {
      await happenings(stream, 1);
      const { attempt } = await claimAndTry(stream);
      assert.equal((await attempt()).kind, 'delivered');
      assert.equal('authorization' in posts[0]!.headers, false);
      // The person's record is read for their address (RFC 9493's email format).
      assert.deepEqual(decodeJwt(posts[0]!.body)['sub_id'], { format: 'email', email: 'ada@example.com' });
    } finally {
      await deleteStream(streams, receiver.id, stream.id);
    }
  });

  it("takes a 2xx as delivered, gives up at once on a 400 carrying the receiver's err (RFC 8935 §2.3), and tries any other answer again", async () => {
    const stream = await pushStream();
    try {
      await happenings(stream, 1);
      const { attempt } = await claimAndTry(stream);
      const json = (body: unknown) => ({ status: 400, body: JSON.stringify(body) });
      const refused = (error: string) => ({ kind: 'failed', status: 400, error, final: true });
      const again = (status: number | null, error: string) => ({ kind: 'failed', status, error });
      const cases: [string, OutboundAnswer | Error, unknown][] = [
        // §2.2: "the SET Recipient ... MUST respond with ... 202 (Accepted)"; any 2xx is taken as one.
        ['202 Accepted', { status: 202, body: '' }, 'delivered 202'],
        ['200 OK', { status: 200, body: '' }, 'delivered 200'],
        ['204 No Content', { status: 204, body: '' }, 'delivered 204'],
        // §2.3: a SET Recipient that finds a SET invalid answers 400 with a JSON object of err and description.
        ['a refusal with its description', json({ err: 'invalid_audience', description: 'not for us' }), refused('refused: invalid_audience: not for us')],
        ['a refusal with err alone', json({ err: 'authentication_failed' }), refused('refused: authentication_failed')],
        ['a refusal whose description is not text', json({ err: 'invalid_key', description: 7 }), refused('refused: invalid_key')],
        [
          'a refusal with a long description, cut to 500 characters',
          json({ err: 'invalid_request', description: 'x'.repeat(2000) }),
          refused(`refused: invalid_request: ${'x'.repeat(474)}`),
        ],
        ['a 400 whose body is not JSON', { status: 400, body: '<h1>Bad Request</h1>' }, again(400, 'answered 400')],
        ['a 400 without err', json({ description: 'no reason given' }), again(400, 'answered 400')],
        ['a 400 whose err is not text', json({ err: 42 }), again(400, 'answered 400')],
        ['a 400 with nothing', { status: 400, body: '' }, again(400, 'answered 400')],
        ['a 500 with an err body: only a 400 is a refusal', { status: 500, body: JSON.stringify({ err: 'invalid_request' }) }, again(500, 'answered 500')],
        ['a 401', { status: 401, body: '' }, again(401, 'answered 401')],
        ['a redirect, which is not an acceptance', { status: 302, body: '' }, again(302, 'answered 302')],
        ['a 503', { status: 503, body: '' }, again(503, 'answered 503')],
        [
          'no answer: the connection refused',
          Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
          again(null, 'connection refused: nothing listens there (ECONNREFUSED)'),
        ],
        ['no answer in time', new DOMException('no answer in 10000 ms', 'TimeoutError'), again(null, 'no answer in time')],
      ];
      for (const [what, answer, expected] of cases) {
        answers = [answer];
        const result = await attempt();
        const shown = result.kind === 'delivered' ? `delivered ${result.status}` : result;
        assert.deepEqual(shown, expected, what);
      }
      const jtis = new Set(posts.map((post) => decodeJwt(post.body).jti));
      assert.equal(jtis.size, 1, 'every try is the same SET');
    } finally {
      await deleteStream(streams, receiver.id, stream.id);
    }
  });

  it('gives a batch back, posting nothing, when its stream was paused, disabled or removed since it was claimed (SSF 1.0 §8.1.2)', async () => {
    const stream = await pushStream();
    try {
      await happenings(stream, 1);
      const now = world.clock.now();
      const batch = await world.store.outbox.claim('ssf', stream.id, now, now + 60_000, 10);
      assert.equal(batch.length, 1);
      const kind = ssfKind(deps);
      for (const status of ['paused', 'disabled'] as const) {
        await setStreamStatus(streams, receiver.id, { stream_id: stream.id, status });
        assert.equal(await kind.open(stream.id, batch), null, status);
      }
      await setStreamStatus(streams, receiver.id, { stream_id: stream.id, status: 'enabled' });
      await deleteStream(streams, receiver.id, stream.id);
      assert.equal(await kind.open(stream.id, batch), null, 'removed');
      assert.deepEqual(posts, []);
    } finally {
      await deleteStream(streams, receiver.id, stream.id).catch(() => {});
    }
  });

  it('gives up at once, posting nothing, a SET for a receiver that lost ssf:manage, of an event purged, or about nobody', async () => {
    const stream = await pushStream();
    try {
      // The event names nobody (a stream hears of every disabled account, `ALL`): no subject to name.
      await world.deps.events.emit({ type: 'user.disabled', userId: null, username: null });
      const [nobody] = await world.store.ssf.pending(stream.id, 10);
      assert.ok(nobody, 'owed to the stream all the same');
      const { attempt, batch } = await claimAndTry(stream);
      assert.deepEqual(await attempt(), { kind: 'failed', status: null, error: 'the event names no subject', final: true });

      const purged = { ...batch[0]!, eventId: 'an-event-purged-since' };
      const reopened = await ssfKind(deps).open(stream.id, [purged]);
      assert.deepEqual(await reopened!(purged, new AbortController().signal), {
        kind: 'failed',
        status: null,
        error: 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)',
        final: true,
      });

      // Given back (a server stopping), then claimed again once the operator took the scope away.
      await world.store.outbox.release('ssf', stream.id, nobody.eventId, batch[0]!.attempts, world.clock.now());
      await world.store.clients.update(receiver.id, { ...(await world.store.clients.get(receiver.id))!, scopes: ['admin:events:read'] });
      try {
        const { attempt: unentitled } = await claimAndTry(stream);
        assert.deepEqual(await unentitled(), { kind: 'failed', status: null, error: 'the receiver no longer holds the scope ssf:manage', final: true });
      } finally {
        await world.store.clients.update(receiver.id, { ...(await world.store.clients.get(receiver.id))!, scopes: ['ssf:manage'] });
      }
      assert.deepEqual(posts, []);
    } finally {
      await deleteStream(streams, receiver.id, stream.id);
    }
  });

  it('retries a SET after the retry delay, doubled, the later ones waiting behind it, until its window ends: then a dead letter, logged and audited', async () => {
    const stream = await pushStream();
    try {
      const [first, second, third] = await happenings(stream, 3);
      const delivery = async (eventId: string) => (await world.store.ssf.deliveries(stream.id, 10)).find((d) => d.eventId === eventId)!;
      const jtis = () => posts.map((post) => decodeJwt(post.body).jti);

      // The first is refused (§2.3): a dead letter at once, after one try.
      answers = [{ status: 400, body: JSON.stringify({ err: 'invalid_subject', description: 'who?' }) }];
      assert.equal(await turn(), 'dead');
      assert.deepEqual(
        [(await delivery(first!.eventId)).state, (await delivery(first!.eventId)).attempts, (await delivery(first!.eventId)).lastError],
        ['dead', 1, 'refused: invalid_subject: who?'],
      );

      // The second fails: tried again after the delay, then twice it; the third waits behind it, never posted.
      answers = [{ status: 503, body: '' }];
      const failedAt = world.clock.now();
      assert.equal(await turn(), 'failed');
      let held = await delivery(second!.eventId);
      assert.deepEqual([held.state, held.attempts, held.lastStatus, held.lastError], ['pending', 1, 503, 'answered 503']);
      assert.equal(held.nextAttemptAt, failedAt + RETRY_DELAY_MS, 'TESSERA_WEBHOOK_RETRY_DELAY_MS after the failure');

      world.clock.advance(RETRY_DELAY_MS);
      answers = [Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })];
      assert.equal(await turn(), 'failed');
      held = await delivery(second!.eventId);
      assert.deepEqual([held.attempts, held.lastStatus], [2, null]);
      assert.equal(held.nextAttemptAt, world.clock.now() + 2 * RETRY_DELAY_MS, 'doubled');
      assert.deepEqual(jtis(), [first!.eventId, second!.eventId, second!.eventId], 'the third waits behind the second');

      // Past TESSERA_WEBHOOK_RETRY_WINDOW since it was queued, the next failure is the last.
      world.clock.advance(RETRY_WINDOW_SECONDS * 1000);
      answers = [{ status: 503, body: '' }];
      assert.equal(await turn(), 'dead');
      held = await delivery(second!.eventId);
      assert.deepEqual([held.state, held.attempts, held.lastError], ['dead', 3, 'answered 503']);

      // A dead letter no longer holds the stream back: the third goes out.
      assert.equal(await turn(), 'delivered');
      assert.equal((await delivery(third!.eventId)).state, 'delivered');
      assert.deepEqual(jtis(), [first!.eventId, second!.eventId, second!.eventId, second!.eventId, third!.eventId]);

      // Each dead letter: a log line and an ssf.dead_lettered event of the receiver, with why.
      assert.deepEqual(
        warnings.map(({ stream: streamId, event_id, attempts, last_error, message }) => [streamId, event_id, attempts, last_error, message]),
        [
          [stream.id, first!.eventId, 1, 'refused: invalid_subject: who?', 'SET delivery given up: a dead letter'],
          [stream.id, second!.eventId, 3, 'answered 503', 'SET delivery given up: a dead letter'],
        ],
      );
      const audited = await world.store.events.list({ type: 'ssf.dead_lettered', clientId: receiver.id, limit: 10 });
      assert.deepEqual(audited.map((event) => event.detail).reverse(), [
        { stream_id: stream.id, event_id: first!.eventId, attempts: 1, last_error: 'refused: invalid_subject: who?' },
        { stream_id: stream.id, event_id: second!.eventId, attempts: 3, last_error: 'answered 503' },
      ]);
    } finally {
      await deleteStream(streams, receiver.id, stream.id);
    }
  });
});

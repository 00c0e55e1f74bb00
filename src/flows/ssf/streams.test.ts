/**
 * Shared Signals stream management (OpenID SSF 1.0 §8.1) without HTTP: what a receiver may set
 * and what is refused with which status, the limit of streams, another receiver's stream told
 * apart from none by nobody, PATCH against PUT, status, the verification event's interval, and
 * the subjects a receiver adds. test/ssf.test.ts drives the same through the API with a real
 * receiver.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { OAuthError } from '../../core/errors.ts';
import { DELIVERY_POLL, DELIVERY_PUSH, SSF_EVENTS, SSF_EVENTS_SUPPORTED } from '../../core/ssf.ts';
import type { ClientRecord, SsfStreamRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, ssfReceivers, type FlowWorld } from '../../../test/helpers/flows.ts';
import { clientCredentialsGrant } from '../client-credentials/token.ts';
import { updateClient } from '../manage/clients.ts';
import {
  changeStream,
  changeSubject,
  createStream,
  deleteStream,
  MAX_STREAMS_PER_RECEIVER,
  MIN_VERIFICATION_INTERVAL,
  readStreams,
  setStreamStatus,
  SsfError,
  ssfReceiver,
  streamSecretOwner,
  streamStatus,
  verifyStream,
  type StreamDeps,
} from './streams.ts';

const PUSH = { method: DELIVERY_PUSH, endpoint_url: 'https://receiver.example/events' };
const POLL = { method: DELIVERY_POLL };

/** The SsfError `run` fails with: its status, code and description. */
async function refusal(run: Promise<unknown>): Promise<{ status: number; code: string; description: string }> {
  try {
    await run;
  } catch (error) {
    if (error instanceof SsfError) return { status: error.status, code: error.code, description: error.message };
    throw error;
  }
  assert.fail('expected a refusal');
}

describe('Shared Signals streams (SSF 1.0 §8.1)', () => {
  let world: FlowWorld;
  let deps: StreamDeps;
  let receiver: ClientRecord;
  let other: ClientRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, secrets: world.secrets };
    [receiver, other] = await ssfReceivers(world);
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com', emailVerified: true });
  });
  after(() => world.close());

  it('lets a receiver in while its client holds ssf:manage, and refuses its token with insufficient_scope once the operator takes the scope away', async () => {
    const { client: narrowed } = await world.addClient({ client_name: 'Narrowed receiver', grant_types: ['client_credentials'], scope: 'ssf:manage' });
    const token = (await clientCredentialsGrant.handle(world.deps, narrowed, { scope: 'ssf:manage' }, null)).access_token;
    const presented = { scheme: 'Bearer' as const, token, proof: null };
    assert.equal(await ssfReceiver(world.deps, presented), narrowed.id);
    await updateClient(world.manage, narrowed.id, { scope: 'admin:users' });
    // The token still names ssf:manage: the client's registration says it no longer holds it.
    await assert.rejects(ssfReceiver(world.deps, presented), (error: OAuthError) => error.code === 'insufficient_scope');
  });

  it('refuses a configuration it cannot keep with 400 invalid_request, naming what is wrong', async () => {
    const cases: [string, unknown, RegExp][] = [
      ['a body that is not an object', ['delivery'], /the body must be a JSON object/],
      ['no delivery', { events_requested: [] }, /delivery is required/],
      ['an unknown delivery method', { delivery: { method: 'urn:example:carrier-pigeon' } }, /delivery\.method must be one of/],
      ['push without an endpoint', { delivery: { method: DELIVERY_PUSH } }, /endpoint_url is required for push/],
      ['an endpoint that is not a URL', { delivery: { ...PUSH, endpoint_url: 'not a url' } }, /endpoint_url is not a URL/],
      ['an endpoint of another scheme', { delivery: { ...PUSH, endpoint_url: 'ftp://receiver.example/events' } }, /http or https URL/],
      ['credentials in the endpoint', { delivery: { ...PUSH, endpoint_url: 'https://me:secret@receiver.example/' } }, /user name or password/],
      ['an endpoint on a private network', { delivery: { ...PUSH, endpoint_url: 'http://10.0.0.7/events' } }, /endpoint_url: the host/],
      ['an endpoint on loopback', { delivery: { ...PUSH, endpoint_url: 'http://127.0.0.1:8080/events' } }, /endpoint_url: the host/],
      ['an Authorization header of two lines', { delivery: { ...PUSH, authorization_header: 'Bearer a\nX-Evil: 1' } }, /one line of text/],
      ['events_requested not a list', { delivery: POLL, events_requested: SSF_EVENTS.SESSION_REVOKED }, /events_requested must be an array/],
      ['events_requested of 51', { delivery: POLL, events_requested: Array.from({ length: 51 }, (_, i) => `urn:e:${i}`) }, /events_requested/],
      ['an unknown subject format', { delivery: POLL, format: 'phone_number' }, /format must be one of/],
      ['a description too long', { delivery: POLL, description: 'x'.repeat(1001) }, /description must be text/],
    ];
    for (const [what, body, description] of cases) {
      const refused = await refusal(createStream(deps, receiver.id, body));
      assert.deepEqual([refused.status, refused.code], [400, 'invalid_request'], what);
      assert.match(refused.description, description, what);
    }
    assert.deepEqual(await readStreams(deps, receiver.id, undefined), [], 'nothing was kept');
  });

  it('creates a stream for the receiver alone: events delivered of those asked that it sends, the Authorization header sealed', async () => {
    const asked = [SSF_EVENTS.SESSION_REVOKED, SSF_EVENTS.SESSION_REVOKED, 'https://schemas.example/unknown-event'];
    const stream = await createStream(deps, receiver.id, {
      delivery: { ...PUSH, authorization_header: 'Bearer push-secret' },
      events_requested: asked,
      description: 'the help desk',
    });
    try {
      assert.deepEqual(stream.eventsRequested, [SSF_EVENTS.SESSION_REVOKED, 'https://schemas.example/unknown-event'], 'each once');
      assert.deepEqual(stream.eventsDelivered, [SSF_EVENTS.SESSION_REVOKED], 'only what Tessera sends');
      assert.ok(SSF_EVENTS_SUPPORTED.includes(SSF_EVENTS.SESSION_REVOKED));
      assert.deepEqual([stream.clientId, stream.audience, stream.status, stream.format], [receiver.id, [receiver.id], 'enabled', 'iss_sub']);
      const stored = (await world.store.ssf.getStream(stream.id))!;
      assert.doesNotMatch(JSON.stringify(stored), /push-secret/, 'the header is not kept in clear');
      assert.equal(deps.secrets.open(streamSecretOwner(stream.id), stored.authorizationHeader!), 'Bearer push-secret');
      const events = await world.store.events.list({ clientId: receiver.id, limit: 10 });
      assert.ok(events.some((event) => event.type === 'ssf.stream_created' && event.detail?.['stream_id'] === stream.id));

      // RFC 8936: a poll stream's endpoint is the transmitter's; the receiver's is ignored.
      const polled = await createStream(deps, receiver.id, { delivery: { ...POLL, endpoint_url: 'https://receiver.example/ignored' } });
      assert.deepEqual([polled.deliveryMethod, polled.endpointUrl, polled.authorizationHeader], [DELIVERY_POLL, null, null]);
      await deleteStream(deps, receiver.id, polled.id);
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it(`keeps at most ${MAX_STREAMS_PER_RECEIVER} streams a receiver: the next is 409 conflict, another receiver's are its own`, async () => {
    const made: SsfStreamRecord[] = [];
    try {
      for (let i = 0; i < MAX_STREAMS_PER_RECEIVER; i++) made.push(await createStream(deps, receiver.id, { delivery: POLL }));
      const refused = await refusal(createStream(deps, receiver.id, { delivery: POLL }));
      assert.deepEqual([refused.status, refused.code], [409, 'conflict']);
      const others = await createStream(deps, other.id, { delivery: POLL });
      await deleteStream(deps, other.id, others.id);
      // One deleted, one may be made again.
      await deleteStream(deps, receiver.id, made.pop()!.id);
      made.push(await createStream(deps, receiver.id, { delivery: POLL }));
    } finally {
      for (const stream of made) await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it("answers another receiver's stream as one that does not exist (§8.1.1.2: 404), for every operation, and changes nothing", async () => {
    const stream = await createStream(deps, receiver.id, { delivery: POLL, description: 'mine' });
    try {
      const attempts: [string, Promise<unknown>][] = [
        ['read', readStreams(deps, other.id, stream.id)],
        ['update', changeStream(deps, other.id, { stream_id: stream.id, description: 'theirs' }, false)],
        ['replace', changeStream(deps, other.id, { stream_id: stream.id, delivery: POLL }, true)],
        ['status', streamStatus(deps, other.id, stream.id)],
        ['set status', setStreamStatus(deps, other.id, { stream_id: stream.id, status: 'disabled' })],
        ['verify', verifyStream(deps, other.id, { stream_id: stream.id })],
        ['add a subject', changeSubject(deps, other.id, { stream_id: stream.id, subject: { format: 'email', email: 'ada@example.com' } }, 'added')],
        ['delete', deleteStream(deps, other.id, stream.id)],
        ['an id of no stream', streamStatus(deps, receiver.id, 'no-such-stream')],
      ];
      for (const [what, attempt] of attempts) {
        const refused = await refusal(attempt);
        assert.deepEqual([refused.status, refused.code], [404, 'not_found'], what);
      }
      const kept = (await world.store.ssf.getStream(stream.id))!;
      assert.deepEqual([kept.description, kept.status, kept.clientId], ['mine', 'enabled', receiver.id]);
      assert.deepEqual((await refusal(streamStatus(deps, receiver.id, ''))).status, 400, 'no stream_id at all is a bad request');
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('updates the properties a PATCH gives and keeps the rest (§8.1.1.3); a PUT replaces the whole and needs delivery (§8.1.1.4)', async () => {
    const stream = await createStream(deps, receiver.id, {
      delivery: { ...PUSH, authorization_header: 'Bearer kept' },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED],
      description: 'first',
    });
    try {
      const narrowed = await changeStream(deps, receiver.id, { stream_id: stream.id, events_requested: [SSF_EVENTS.SESSION_REVOKED] }, false);
      assert.deepEqual([narrowed.eventsRequested, narrowed.description], [[SSF_EVENTS.SESSION_REVOKED], 'first'], 'the description is kept');
      const patched = await changeStream(deps, receiver.id, { stream_id: stream.id, description: 'second' }, false);
      assert.deepEqual([patched.description, patched.endpointUrl, patched.eventsRequested], ['second', PUSH.endpoint_url, [SSF_EVENTS.SESSION_REVOKED]]);
      assert.equal(deps.secrets.open(streamSecretOwner(stream.id), patched.authorizationHeader!), 'Bearer kept', 'the header is kept, sealed again');
      const refused = await refusal(changeStream(deps, receiver.id, { stream_id: stream.id, description: 'third' }, true));
      assert.deepEqual([refused.status, refused.description], [400, 'delivery is required']);
      const replaced = await changeStream(deps, receiver.id, { stream_id: stream.id, delivery: POLL }, true);
      assert.deepEqual(
        [replaced.deliveryMethod, replaced.endpointUrl, replaced.authorizationHeader, replaced.eventsRequested, replaced.description],
        [DELIVERY_POLL, null, null, [], null],
        'what the PUT leaves out is gone',
      );
      const badPatch = await refusal(changeStream(deps, receiver.id, { stream_id: stream.id, format: 'phone_number' }, false));
      assert.equal(badPatch.status, 400);
      assert.equal((await world.store.ssf.getStream(stream.id))?.format, 'iss_sub', 'a refused PATCH changes nothing');
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('sets a status of the three (§8.1.2.2), with its reason, and refuses another', async () => {
    const stream = await createStream(deps, receiver.id, { delivery: POLL });
    try {
      assert.deepEqual(await setStreamStatus(deps, receiver.id, { stream_id: stream.id, status: 'paused', reason: 'maintenance' }), {
        stream_id: stream.id,
        status: 'paused',
        reason: 'maintenance',
      });
      assert.deepEqual(await streamStatus(deps, receiver.id, stream.id), { stream_id: stream.id, status: 'paused', reason: 'maintenance' });
      const refused = await refusal(setStreamStatus(deps, receiver.id, { stream_id: stream.id, status: 'asleep' }));
      assert.deepEqual([refused.status, refused.code], [400, 'invalid_request']);
      assert.deepEqual(await setStreamStatus(deps, receiver.id, { stream_id: stream.id, status: 'enabled' }), { stream_id: stream.id, status: 'enabled' });
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it(`gives a stream one verification event in ${MIN_VERIFICATION_INTERVAL} seconds (§8.1.4.2: 429 sooner), its state echoed`, async () => {
    const stream = await createStream(deps, receiver.id, { delivery: POLL });
    try {
      await verifyStream(deps, receiver.id, { stream_id: stream.id, state: 'first' });
      const sooner = await refusal(verifyStream(deps, receiver.id, { stream_id: stream.id, state: 'second' }));
      assert.deepEqual([sooner.status, sooner.code], [429, 'too_many_requests']);
      world.clock.advance(MIN_VERIFICATION_INTERVAL * 1000);
      await verifyStream(deps, receiver.id, { stream_id: stream.id, state: 'third' });
      const states = (await world.store.events.list({ clientId: receiver.id, limit: 50 }))
        .filter((event) => event.type === 'ssf.verification' && event.detail?.['stream_id'] === stream.id)
        .map((event) => event.detail?.['state'])
        .sort();
      assert.deepEqual(states, ['first', 'third']);
      assert.equal((await refusal(verifyStream(deps, receiver.id, { stream_id: stream.id, state: 7 }))).status, 400);
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });

  it('adds and removes the people a subject names (RFC 9493), says nothing of a subject naming nobody, and refuses a malformed one', async () => {
    const stream = await createStream(deps, receiver.id, { delivery: POLL });
    try {
      const subjects = async () =>
        (await world.store.ssf.subjects(stream.id))
          .map(({ userId, state, verified }) => ({ userId, state, verified }))
          .sort((a, b) => a.state.localeCompare(b.state));
      await changeSubject(deps, receiver.id, { stream_id: stream.id, subject: { format: 'iss_sub', iss: FLOW_ISSUER, sub: ada.id } }, 'added');
      assert.deepEqual(await subjects(), [{ userId: ada.id, state: 'added', verified: true }], '§8.1.3.2: verified unless it says not');
      await changeSubject(
        deps,
        receiver.id,
        { stream_id: stream.id, subject: { format: 'complex', user: { format: 'email', email: 'ada@example.com' } } },
        'removed',
      );
      assert.deepEqual(await subjects(), [{ userId: ada.id, state: 'removed', verified: true }], 'the last word stands');

      // Another issuer's sub, an unknown address: no one, and no difference in the answer (§9.1).
      const before = (await world.store.events.list({ clientId: receiver.id, limit: 100 })).length;
      await changeSubject(deps, receiver.id, { stream_id: stream.id, subject: { format: 'iss_sub', iss: 'https://elsewhere.example', sub: ada.id } }, 'added');
      await changeSubject(deps, receiver.id, { stream_id: stream.id, subject: { format: 'email', email: 'nobody@example.com' } }, 'added');
      assert.equal((await world.store.events.list({ clientId: receiver.id, limit: 100 })).length, before, 'no event for no one');
      assert.deepEqual(await subjects(), [{ userId: ada.id, state: 'removed', verified: true }]);

      const malformed: [string, unknown, RegExp][] = [
        ['no subject', { stream_id: stream.id }, /subject is required/],
        ['an unknown format', { stream_id: stream.id, subject: { format: 'phone_number', phone_number: '+1 555' } }, /subject\.format must be one of/],
        ['iss_sub without sub', { stream_id: stream.id, subject: { format: 'iss_sub', iss: FLOW_ISSUER } }, /subject\.sub is required/],
        [
          'a complex subject within a complex one',
          { stream_id: stream.id, subject: { format: 'complex', user: { format: 'complex', user: {} } } },
          /names its person in `user`/,
        ],
        [
          'verified not a boolean',
          { stream_id: stream.id, verified: 'yes', subject: { format: 'email', email: 'ada@example.com' } },
          /verified must be true or false/,
        ],
      ];
      for (const [what, body, description] of malformed) {
        const refused = await refusal(changeSubject(deps, receiver.id, body, 'added'));
        assert.equal(refused.status, 400, what);
        assert.match(refused.description, description, what);
      }
    } finally {
      await deleteStream(deps, receiver.id, stream.id);
    }
  });
});

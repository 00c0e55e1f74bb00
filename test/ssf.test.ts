/**
 * Shared Signals (OpenID SSF 1.0, CAEP, RISC) from the events outbox, to receivers on
 * loopback: a receiver with a client_credentials token holding `ssf:manage` manages its
 * streams; a user disabled with `tessera user disable` reaches a push receiver (RFC 8935)
 * within a second as a SET that verifies against the published JWKS; a receiver down and back
 * gets every SET in order; a SET the receiver refuses is not sent again; a polling receiver
 * (RFC 8936) acknowledges what it handled and is sent the rest again.
 *
 * Commands that write while the server runs run as processes of their own (see
 * test/webhooks.test.ts for why).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { SSF_EVENTS } from '../src/core/ssf.ts';
import { updateClient } from '../src/flows/manage/clients.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { createStream, SsfError } from '../src/flows/ssf/streams.ts';
import { loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { tessera } from './helpers/cli.ts';
import { disableAndEnable, manageDeps } from './helpers/manage.ts';
import { Receiver, type Received } from './helpers/receiver.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** An RFC 8935 push receiver on loopback: records each SET, answers `status` (202), or refuses with the error given `refuse`. */
class PushReceiver extends Receiver {
  constructor() {
    super({ status: 202, path: '/caep' });
  }

  /** The events and subjects of what came, decoded (not verified). */
  events(): { type: string; sub: unknown; jti: string }[] {
    return this.received.map((message) => {
      const claims = decodeJwt(message.body) as JWTPayload & { events: Record<string, unknown>; sub_id: unknown };
      return { type: Object.keys(claims.events)[0]!, sub: claims.sub_id, jti: claims.jti! };
    });
  }
}

describe('Shared Signals: SETs pushed and polled from the outbox', () => {
  let server: TestServer;
  let receiver: PushReceiver;
  let token: string;
  let clientId: string;
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });

  async function ssf(method: string, path: string, body?: unknown, bearer: string | null = token): Promise<{ status: number; body: any; headers: Headers }> {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text), headers: response.headers };
  }

  /** A receiver's token, asked for as a client library asks (openid-client): client_credentials, scope ssf:manage. */
  async function receiverToken(id: string, secret: string, scope = 'ssf:manage'): Promise<string> {
    const discovered = await oidc.discovery(new URL(server.url), id, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    return (await oidc.clientCredentialsGrant(discovered, { scope })).access_token;
  }

  async function verified(message: Received): Promise<JWTPayload & { events: Record<string, Record<string, unknown>>; sub_id: Record<string, unknown> }> {
    const metadata = (await (await fetch(`${server.url}/.well-known/ssf-configuration`)).json()) as { jwks_uri: string; issuer: string };
    const { payload, protectedHeader } = await jwtVerify(message.body, createRemoteJWKSet(new URL(metadata.jwks_uri)), {
      issuer: metadata.issuer,
      audience: clientId,
      typ: 'secevent+jwt',
    });
    assert.equal(protectedHeader.typ, 'secevent+jwt');
    return payload as JWTPayload & { events: Record<string, Record<string, unknown>>; sub_id: Record<string, unknown> };
  }

  before(async () => {
    server = await startTestServer({ env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100', TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true' } });
    receiver = await new PushReceiver().start();
    const client = await server.addClient({ name: 'CAEP receiver', grantTypes: ['client_credentials'], scopes: ['ssf:manage'], redirectUris: [] });
    clientId = client.clientId;
    token = await receiverToken(client.clientId, client.clientSecret);
  });
  after(async () => {
    await server.close();
    await receiver.down();
  });

  it('publishes its transmitter metadata at /.well-known/ssf-configuration', async () => {
    const response = await fetch(`${server.url}/.well-known/ssf-configuration`);
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.deepEqual(metadata, {
      spec_version: '1_0',
      issuer: server.url,
      jwks_uri: `${server.url}/.well-known/jwks.json`,
      delivery_methods_supported: ['urn:ietf:rfc:8935', 'urn:ietf:rfc:8936'],
      configuration_endpoint: `${server.url}/ssf/streams`,
      status_endpoint: `${server.url}/ssf/status`,
      verification_endpoint: `${server.url}/ssf/verify`,
      add_subject_endpoint: `${server.url}/ssf/subjects:add`,
      remove_subject_endpoint: `${server.url}/ssf/subjects:remove`,
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
      default_subjects: 'ALL',
    });
  });

  it('lets in only a client_credentials token for <issuer>/ssf holding ssf:manage', async () => {
    const none = await ssf('GET', '/ssf/streams', undefined, null);
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera"$/);
    assert.equal((await ssf('GET', '/ssf/streams', undefined, 'not.a.token')).status, 401);
    // A token for another API (the admin API) is not one for the streams.
    const admin = await server.addClient({ name: 'Admin', grantTypes: ['client_credentials'], scopes: ['admin:users'], redirectUris: [] });
    const adminToken = await receiverToken(admin.clientId, admin.clientSecret, 'admin:users');
    const refused = await ssf('GET', '/ssf/streams', undefined, adminToken);
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_token');
    assert.deepEqual((await ssf('GET', '/ssf/streams')).body, []);
  });

  it('brings a user disabled with `tessera user disable` to a push receiver within a second, as a SET that verifies against the JWKS', async () => {
    const created = await ssf('POST', '/ssf/streams', {
      delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url, authorization_header: 'Bearer receiver-secret' },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED, SSF_EVENTS.SESSION_REVOKED, 'urn:example:unknown'],
      description: 'CAEP for the app',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const stream = created.body as Record<string, any>;
    assert.equal(stream['iss'], server.url);
    assert.equal(stream['aud'], clientId);
    assert.equal(stream['min_verification_interval'], 5);
    assert.deepEqual(
      stream['events_delivered'],
      [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED, SSF_EVENTS.SESSION_REVOKED],
      'what it asked for that Tessera sends',
    );
    assert.deepEqual(stream['delivery'], { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url });
    assert.doesNotMatch(JSON.stringify(stream), /receiver-secret/, 'the push authorization header is never shown back');
    assert.deepEqual((await ssf('GET', `/ssf/streams?stream_id=${stream['stream_id']}`)).body, stream);

    const ada = await server.addUser({ username: 'ada' });
    const disabled = await tessera(['user', 'disable', 'ada'], env());
    assert.equal(disabled.code, 0, disabled.stderr);
    const done = Date.now();
    await until('the SET to be pushed', () => receiver.received.length >= 1, 5000, 10);
    const [message] = receiver.received;
    assert.ok(message!.at - done < 1000, `pushed ${message!.at - done} ms after the command`);
    assert.equal(message!.headers['content-type'], 'application/secevent+jwt');
    assert.equal(message!.headers['authorization'], 'Bearer receiver-secret');
    const set = await verified(message!);
    assert.deepEqual(set.events, { [SSF_EVENTS.ACCOUNT_DISABLED]: {} });
    assert.deepEqual(set.sub_id, { format: 'iss_sub', iss: server.url, sub: ada.id });
    assert.equal(typeof set.jti, 'string');
    assert.equal(set.exp, undefined, 'a SET states what happened: no exp');
    await assert.rejects(jwtVerify(message!.body, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), { audience: 'someone-else' }), /aud/);
    receiver.received.length = 0;

    // The verification event (SSF 1.0 §8.1.4) comes on the stream, with the state given.
    assert.equal((await ssf('POST', '/ssf/verify', { stream_id: stream['stream_id'], state: 'hello' })).status, 204);
    const tooSoon = await ssf('POST', '/ssf/verify', { stream_id: stream['stream_id'], state: 'again' });
    assert.deepEqual([tooSoon.status, tooSoon.body.error], [429, 'too_many_requests'], 'one verification event every min_verification_interval');
    await until('the verification SET', () => receiver.received.length >= 1, 5000, 10);
    const verification = await verified(receiver.received[0]!);
    assert.deepEqual(verification.events, { [SSF_EVENTS.VERIFICATION]: { state: 'hello' } });
    assert.deepEqual(verification.sub_id, { format: 'opaque', id: stream['stream_id'] });
    receiver.received.length = 0;

    // Paused: held, then sent once enabled again (§8.1.2).
    assert.deepEqual((await ssf('POST', '/ssf/status', { stream_id: stream['stream_id'], status: 'paused', reason: 'maintenance' })).body, {
      stream_id: stream['stream_id'],
      status: 'paused',
      reason: 'maintenance',
    });
    assert.equal((await ssf('GET', `/ssf/status?stream_id=${stream['stream_id']}`)).body.status, 'paused');
    await setDisabled(manageDeps(server), 'ada', false);
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(receiver.received.length, 0, 'nothing sent while paused');
    assert.equal((await ssf('POST', '/ssf/status', { stream_id: stream['stream_id'], status: 'enabled' })).status, 200);
    await until('the held SET', () => receiver.received.length >= 1, 5000, 10);
    assert.deepEqual(
      receiver.events().map((event) => event.type),
      [SSF_EVENTS.ACCOUNT_ENABLED],
    );
    receiver.received.length = 0;

    // Disabled: nothing is kept, not even what waited when it was disabled.
    assert.equal((await ssf('POST', '/ssf/status', { stream_id: stream['stream_id'], status: 'paused' })).status, 200);
    await setDisabled(manageDeps(server), 'ada', true);
    assert.equal((await ssf('POST', '/ssf/status', { stream_id: stream['stream_id'], status: 'disabled' })).status, 200);
    await setDisabled(manageDeps(server), 'ada', false);
    assert.equal((await ssf('POST', '/ssf/status', { stream_id: stream['stream_id'], status: 'enabled' })).status, 200);
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(receiver.received.length, 0, 'nothing held while disabled');
    assert.deepEqual((await server.store.ssf.pending(stream['stream_id'], 10)).length, 0);
    assert.equal((await ssf('DELETE', `/ssf/streams?stream_id=${stream['stream_id']}`)).status, 204);
    assert.equal((await ssf('GET', `/ssf/streams?stream_id=${stream['stream_id']}`)).status, 404);
  });

  it('sends every SET to a receiver that was down once it is back, in order, and drops one it refuses (RFC 8935 §2.3)', async () => {
    const created = await ssf('POST', '/ssf/streams', {
      delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED],
      format: 'email',
    });
    assert.equal(created.status, 201);
    const streamId = created.body.stream_id as string;
    const grace = await server.addUser({ username: 'grace', email: 'grace@example.com' });
    await receiver.down();
    const sent = await disableAndEnable(server, grace, 3);
    assert.equal(sent.length, 6);
    const oldest = async () => (await server.store.ssf.deliveries(streamId, 10)).at(-1)!;
    await until('failed tries', async () => (await oldest()).attempts >= 2, 5000);
    assert.match((await oldest()).lastError ?? '', /connection refused/);
    await receiver.up();
    await until('all six', () => receiver.received.length >= 6, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      receiver.events().map((event) => event.jti),
      sent.map((event) => event.id),
      'every event, in order, once, its jti the event id',
    );
    for (const event of receiver.events()) assert.deepEqual(event.sub, { format: 'email', email: 'grace@example.com' });
    receiver.received.length = 0;

    // A SET the receiver refuses with RFC 8935 §2.3's error is a dead letter at once; the next goes on.
    receiver.refuse({ err: 'invalid_audience', description: 'not for us' });
    await setDisabled(manageDeps(server), 'grace', true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await setDisabled(manageDeps(server), 'grace', false);
    await until('the second to arrive', () => receiver.received.length >= 1, 5000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      receiver.events().map((event) => event.type),
      [SSF_EVENTS.ACCOUNT_ENABLED],
    );
    // Recorded once the receiver's answer is in.
    await until('the second to be recorded', async () => (await server.store.ssf.deliveries(streamId, 1))[0]?.state === 'delivered', 5000);
    const [latest, refused] = await server.store.ssf.deliveries(streamId, 2);
    assert.deepEqual([latest!.state, refused!.state, refused!.attempts, refused!.lastError], ['delivered', 'dead', 1, 'refused: invalid_audience: not for us']);
    await until('the dead letter to be recorded', async () => (await server.store.events.list({ type: 'ssf.dead_lettered', limit: 1 })).length === 1, 5000);
    assert.equal((await server.store.events.list({ type: 'ssf.dead_lettered', limit: 1 }))[0]?.detail['last_error'], 'refused: invalid_audience: not for us');
    receiver.received.length = 0;

    // The operator takes ssf:manage from the receiver: its stream is sent nothing more.
    await updateClient(manageDeps(server), clientId, { scope: 'admin:events:read' });
    await setDisabled(manageDeps(server), 'grace', true);
    await until('the SET to be given up', async () => (await server.store.ssf.deliveries(streamId, 1))[0]?.state === 'dead', 5000);
    assert.equal((await server.store.ssf.deliveries(streamId, 1))[0]?.lastError, 'the receiver no longer holds the scope ssf:manage');
    assert.equal(receiver.received.length, 0);
    await updateClient(manageDeps(server), clientId, { scope: 'ssf:manage' });
    assert.equal((await ssf('DELETE', `/ssf/streams?stream_id=${streamId}`)).status, 204);
  });

  it('answers a polling receiver (RFC 8936) its SETs until it acknowledges them', async () => {
    const created = await ssf('POST', '/ssf/streams', {
      delivery: { method: 'urn:ietf:rfc:8936' },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED, SSF_EVENTS.ACCOUNT_ENABLED, SSF_EVENTS.CREDENTIAL_CHANGE],
      format: 'complex',
    });
    assert.equal(created.status, 201);
    const streamId = created.body.stream_id as string;
    const endpoint = created.body.delivery.endpoint_url as string;
    assert.equal(endpoint, `${server.url}/ssf/poll/${streamId}`);
    const path = new URL(endpoint).pathname;
    const lin = await server.addUser({ username: 'lin' });
    await setDisabled(manageDeps(server), 'lin', true);
    // Events of one millisecond have no order between them: these two are a millisecond apart at least.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await setDisabled(manageDeps(server), 'lin', false);

    const first = await ssf('POST', path, { maxEvents: 1, returnImmediately: true });
    assert.equal(first.status, 200);
    assert.equal(first.body.moreAvailable, true);
    const [[jti, set]] = Object.entries(first.body.sets as Record<string, string>) as [[string, string]];
    const claims = await verified({ body: set, headers: {}, at: 0 });
    assert.equal(claims.jti, jti);
    assert.deepEqual(claims.events, { [SSF_EVENTS.ACCOUNT_DISABLED]: {} });
    assert.deepEqual(claims.sub_id, { format: 'complex', user: { format: 'iss_sub', iss: server.url, sub: lin.id } });

    // Not acknowledged: sent again, same jti. Acknowledged: gone, and the next comes.
    const again = await ssf('POST', path, { returnImmediately: true });
    assert.deepEqual(Object.keys(again.body.sets).length, 2);
    assert.ok(jti in again.body.sets);
    const second = Object.keys(again.body.sets).find((key) => key !== jti)!;
    const acked = await ssf('POST', path, { ack: [jti], setErrs: { [second]: { err: 'invalid_key', description: 'cannot verify' } }, returnImmediately: true });
    assert.deepEqual(acked.body, { sets: {} });
    const states = (await server.store.ssf.deliveries(streamId, 5)).map((delivery) => [delivery.eventId, delivery.state]);
    assert.deepEqual(
      new Map(states as [string, string][]),
      new Map([
        [jti, 'delivered'],
        [second, 'dead'],
      ]),
    );

    // Without returnImmediately, the poll waits for the next SET.
    const waiting = ssf('POST', path, {});
    await new Promise((resolve) => setTimeout(resolve, 300));
    await setDisabled(manageDeps(server), 'lin', true);
    const woken = await waiting;
    assert.equal(Object.keys(woken.body.sets).length >= 1, true);

    // A long poll ends, answered no SETs, when the server stops, rather than hold the stop up for its 15 s.
    await ssf('POST', path, { ack: Object.keys(woken.body.sets), returnImmediately: true });
    const stopping = ssf('POST', path, {});
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    await server.restart();
    assert.ok(Date.now() - started < 10_000, `restarted in ${Date.now() - started} ms`);
    assert.deepEqual((await stopping).body, { sets: {} });

    const bad = await ssf('POST', path, { maxEvents: -1 });
    assert.deepEqual([bad.status, bad.body.err], [400, 'invalid_request']);
    // Another receiver's stream is none of its business: 404.
    const other = await server.addClient({ name: 'Other receiver', grantTypes: ['client_credentials'], scopes: ['ssf:manage'], redirectUris: [] });
    const otherToken = await receiverToken(other.clientId, other.clientSecret);
    assert.equal((await ssf('POST', path, { returnImmediately: true }, otherToken)).status, 404);
    assert.equal((await ssf('GET', `/ssf/streams?stream_id=${streamId}`, undefined, otherToken)).status, 404);
  });

  it('updates (PATCH) the properties given, and replaces (PUT) the whole configuration', async () => {
    const created = await ssf('POST', '/ssf/streams', {
      delivery: { method: 'urn:ietf:rfc:8936' },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED],
      description: 'first',
    });
    const id = created.body.stream_id as string;
    const patched = await ssf('PATCH', '/ssf/streams', { stream_id: id, description: 'second', format: 'email' });
    assert.equal(patched.status, 200);
    assert.deepEqual(
      [patched.body.description, patched.body.format, patched.body.events_requested],
      ['second', 'email', [SSF_EVENTS.ACCOUNT_DISABLED]],
      'what was not given is kept',
    );
    const replaced = await ssf('PUT', '/ssf/streams', {
      stream_id: id,
      iss: 'ignored',
      delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url },
      events_requested: [SSF_EVENTS.SESSION_REVOKED],
    });
    assert.equal(replaced.status, 200);
    assert.deepEqual(
      [replaced.body.description, replaced.body.format, replaced.body.events_delivered, replaced.body.delivery, replaced.body.iss],
      [undefined, 'iss_sub', [SSF_EVENTS.SESSION_REVOKED], { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url }, server.url],
      "what was not given is the default; the transmitter's own properties are its own",
    );
    assert.deepEqual((await ssf('GET', `/ssf/streams?stream_id=${id}`)).body, replaced.body);
    assert.equal((await ssf('PATCH', '/ssf/streams', { stream_id: 'nope', description: 'x' })).status, 404);
    assert.equal((await ssf('DELETE', `/ssf/streams?stream_id=${id}`)).status, 204);
    assert.equal((await ssf('DELETE', `/ssf/streams?stream_id=${id}`)).status, 404);
  });

  it("refuses bad stream configurations with 400, and a push URL into the server's network unless allowed", async () => {
    for (const body of [
      {},
      { delivery: { method: 'urn:example:carrier-pigeon' } },
      { delivery: { method: 'urn:ietf:rfc:8935' } },
      { delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: 'ftp://x' } },
      { delivery: { method: 'urn:ietf:rfc:8936' }, events_requested: 'all' },
      { delivery: { method: 'urn:ietf:rfc:8936' }, format: 'phone' },
    ]) {
      const refused = await ssf('POST', '/ssf/streams', body);
      assert.equal(refused.status, 400, JSON.stringify(body));
      assert.equal(refused.body.error, 'invalid_request');
    }
    const notJson = await fetch(`${server.url}/ssf/streams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{',
    });
    assert.equal(notJson.status, 400);
    const deps = { ...manageDeps(server), tokens: undefined as never, secrets: secretBox(loadKeyEncryption(server.config.keyEncryption)) };
    const guarded = { ...deps, config: { ...server.config, allowPrivateNetworkUrls: false } };
    for (const url of ['http://127.0.0.1:9/caep', 'http://169.254.169.254/latest', 'http://10.0.0.1/']) {
      await assert.rejects(
        createStream(guarded, clientId, { delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: url } }),
        (error: unknown) => error instanceof SsfError && error.status === 400 && /endpoint_url/.test(error.message),
        url,
      );
    }
  });
});

/**
 * The operator's door to the Shared Signals pushes' and mail's dead letters (docs/events.md):
 * listed and sent again through `tessera ssf …` and `tessera mail …` and through the admin API,
 * and the console, with the same id and a new retry window; and who may: reading them needs
 * admin:events:read, sending them again admin:events, and for mail admin:users as well.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { DELIVERY_POLL, SSF_EVENTS } from '../src/core/ssf.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { runTessera as tessera } from './helpers/cli.ts';
import { operatorBrowser } from './helpers/console.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { ssfStream } from './store/fixtures.ts';

async function adminToken(server: TestServer, scope: string): Promise<string> {
  const { client, secret } = await createClient(manageDeps(server), { client_name: `CI ${scope}`, grant_types: ['client_credentials'], scope });
  const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(secret!), { execute: [oidc.allowInsecureRequests] });
  return (await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin` })).access_token;
}

describe('dead letters of Shared Signals and mail', () => {
  let server: TestServer;
  const streamId = 'stream-with-dead-letters';
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
  let setId: string;
  let mailId: string;

  async function call(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text) };
  }

  /** Makes the SET and the message dead letters again, as a refusing receiver and a failing mail server would. */
  async function kill(): Promise<void> {
    const store = server.store;
    const now = Date.now();
    if ((await store.outbox.list('ssf', { queue: streamId, state: 'pending', limit: 10 })).length > 0)
      await store.ssf.refuse(streamId, setId, 'refused: invalid_key', now);
    const [mail] = await store.outbox.list('mail', { queue: null, state: 'pending', limit: 10 });
    if (mail !== undefined) {
      const [claimed] = await store.outbox.claim('mail', mail.id, now + 1, now + 60_000, 1);
      await store.outbox.settle(
        'mail',
        mail.id,
        mail.id,
        claimed!.attempts,
        { kind: 'failed', status: null, error: '550 mailbox unavailable', nextAttemptAt: now + 2, deadBefore: now + 1 },
        now + 1,
      );
    }
  }

  before(async () => {
    server = await startTestServer();
    const receiver = await server.addClient({ name: 'Poller', grantTypes: ['client_credentials'], scopes: ['ssf:manage'], redirectUris: [] });
    const now = Date.now();
    await server.store.ssf.createStream(
      ssfStream({
        id: streamId,
        clientId: receiver.clientId,
        eventsRequested: [SSF_EVENTS.ACCOUNT_DISABLED],
        eventsDelivered: [SSF_EVENTS.ACCOUNT_DISABLED],
        deliveryMethod: DELIVERY_POLL,
        createdAt: now,
        updatedAt: now,
      }),
    );
    const ada = await server.addUser({ username: 'ada' });
    setId = 'event-ada-disabled';
    mailId = 'mail-to-ada';
    await server.store.transaction(async (tx) => {
      await tx.events.add({
        id: setId,
        type: 'user.disabled',
        at: now,
        userId: ada.id,
        username: 'ada',
        clientId: null,
        grantId: null,
        ip: null,
        userAgent: null,
        detail: { by: 'operator' },
      });
      await tx.mail.enqueue({ id: mailId, eventId: setId, kind: 'reset-link', message: { sealed: 'never shown' } }, now);
    });
    await kill();
  });
  after(async () => {
    await server.close();
  });

  it('lists and replays them through the command, with the same id, never showing a message', async () => {
    const sets = await tessera(['ssf', 'deliveries', streamId, '--state', 'dead', '--json'], env());
    assert.equal(sets.code, 0, sets.stderr);
    assert.deepEqual(
      JSON.parse(sets.stdout).map((d: Record<string, unknown>) => [d['event_id'], d['state'], d['last_error']]),
      [[setId, 'dead', 'refused: invalid_key']],
    );
    // As text, a line a delivery (the lines `tessera webhook deliveries` writes too).
    const lines = await tessera(['ssf', 'deliveries', streamId, '--state', 'dead'], env());
    assert.match(lines.stdout, new RegExp(`^\\S+  ${setId}  dead  tries \\d+  refused: invalid_key\\n$`));
    const mail = await tessera(['mail', 'deliveries', '--state', 'dead', '--json'], env());
    assert.equal(mail.code, 0, mail.stderr);
    const [listed] = JSON.parse(mail.stdout) as Record<string, unknown>[];
    assert.deepEqual([listed?.['id'], listed?.['kind'], listed?.['state'], listed?.['last_error']], [mailId, 'reset-link', 'dead', '550 mailbox unavailable']);
    assert.ok(!mail.stdout.includes('never shown'), 'the message stays sealed and unseen');

    const replayedSet = await tessera(['ssf', 'replay', streamId, '--event', setId], env());
    assert.match(replayedSet.stdout, /Sending 1 dead letter again, with the same jti/);
    const replayedMail = await tessera(['mail', 'replay'], env());
    assert.match(replayedMail.stdout, /Sending 1 dead letter again, with the same Message-ID/);
    assert.deepEqual(
      (await server.store.outbox.list('ssf', { queue: streamId, limit: 10 })).map((d) => [d.eventId, d.state, d.attempts]),
      [[setId, 'pending', 0]],
    );
    assert.deepEqual(
      (await server.store.outbox.list('mail', { queue: null, limit: 10 })).map((d) => [d.id, d.state, d.attempts]),
      [[mailId, 'pending', 0]],
    );
    assert.match((await tessera(['mail', 'replay'], env())).stdout, /No dead letters/);
    const unknown = await tessera(['ssf', 'replay', 'no-such-stream'], env());
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no Shared Signals stream with id no-such-stream/);
    const [event] = await server.store.events.list({ type: 'outbox.replayed', limit: 5 });
    assert.equal(event?.detail['kind'], 'mail');
    await kill();
  });

  it('lists and replays them through the admin API, to a caller holding the audit trail (and people, for mail) only', async () => {
    const reader = await adminToken(server, 'admin:events:read');
    const events = await adminToken(server, 'admin:events');
    const both = await adminToken(server, 'admin:events admin:users');
    const users = await adminToken(server, 'admin:users');

    const listed = await call('GET', `/ssf/streams/${streamId}/deliveries?state=dead`, reader);
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.deliveries.map((d: Record<string, unknown>) => d['event_id']),
      [setId],
    );
    assert.equal((await call('GET', '/mail/deliveries?state=dead', reader)).body.deliveries[0].id, mailId);
    assert.equal((await call('GET', '/mail/deliveries', users)).status, 403, 'people alone do not read the trail');
    assert.equal((await call('GET', '/mail/deliveries?state=sent', reader)).status, 400);
    assert.equal((await call('GET', '/ssf/streams/no-such-stream/deliveries', reader)).status, 404);

    assert.equal((await call('POST', `/ssf/streams/${streamId}/replay`, reader, {})).status, 403, 'reading is not replaying');
    const replayed = await call('POST', `/ssf/streams/${streamId}/replay`, events, { event_id: setId });
    assert.deepEqual([replayed.status, replayed.body], [200, { replayed: 1 }]);
    assert.equal((await call('POST', `/ssf/streams/${streamId}/replay`, events, { event_id: setId })).status, 404, 'no longer a dead letter');

    const refused = await call('POST', '/mail/replay', events, {});
    assert.equal(refused.status, 403, 'mail goes to people: admin:users too');
    assert.match(JSON.stringify(refused.body), /admin:users/);
    assert.deepEqual((await call('POST', '/mail/replay', both, { id: mailId })).body, { replayed: 1 });
    assert.deepEqual(
      (await server.store.outbox.list('mail', { queue: null, limit: 10 })).map((d) => [d.id, d.state]),
      [[mailId, 'pending']],
    );
  });

  it('shows them in the console, from the audit trail, and sends them again for an admin only', async () => {
    await kill();
    const viewer = (await operatorBrowser(server, 'viewer')).browser;
    const activity = await viewer.request('/console/events');
    assert.match(activity.html, /href="\/console\/events\/dead-letters">Dead letters of Shared Signals and mail</);
    const seen = await viewer.request('/console/events/dead-letters');
    assert.equal(seen.status, 200, seen.html.slice(0, 500));
    assert.ok(seen.html.includes(setId) && seen.html.includes(streamId) && seen.html.includes(mailId), 'both dead letters listed');
    assert.ok(seen.html.includes('550 mailbox unavailable') && seen.html.includes('refused: invalid_key'));
    assert.ok(!seen.html.includes('Send again'), 'a viewer is offered no button');
    const { browser, csrf } = await operatorBrowser(server, 'viewer');
    assert.equal((await browser.request('/console/events/dead-letters/replay', { form: { csrf_token: csrf, kind: 'mail', id: mailId } })).status, 403);

    const admin = await operatorBrowser(server, 'admin');
    const page = await admin.browser.request('/console/events/dead-letters');
    assert.ok(page.html.includes('Send again'));
    const sent = await admin.browser.request('/console/events/dead-letters/replay', {
      form: { csrf_token: admin.csrf, kind: 'ssf', stream_id: streamId, id: setId },
    });
    assert.equal(sent.status, 303, sent.html.slice(0, 500));
    assert.match(sent.location ?? '', /done=replayed/);
    const all = await admin.browser.request('/console/events/dead-letters/replay', { form: { csrf_token: admin.csrf, kind: 'mail' } });
    assert.match(all.location ?? '', /done=replayed/);
    assert.deepEqual(
      [
        (await server.store.outbox.list('ssf', { queue: streamId, limit: 10 }))[0]?.state,
        (await server.store.outbox.list('mail', { queue: null, limit: 10 }))[0]?.state,
      ],
      ['pending', 'pending'],
    );
    const after = await admin.browser.request('/console/events/dead-letters?done=replayed');
    assert.match(after.html, /The dead letters are being sent again, with the same id\./);
    assert.ok(!after.html.includes(mailId), 'no longer dead');
  });
});

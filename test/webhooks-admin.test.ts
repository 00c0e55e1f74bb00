/**
 * Webhooks through the admin API: webhooks added, read, rotated, their dead letters listed and
 * replayed, and removed, as an operator's program calls it (tokens from openid-client); the
 * secret in the answers that make it only; and the command's authority rule: adding one or
 * replaying needs a scope that reads the audit trail too, since a webhook sends it out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { setDisabled } from '../src/flows/manage/users.ts';
import { newWebhookSecret, secretOwner } from '../src/flows/webhooks/message.ts';
import { loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { tessera } from './helpers/cli.ts';
import { manageDeps } from './helpers/manage.ts';
import { adminToken } from './helpers/fixtures.ts';
import { Receiver } from './helpers/receiver.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const ALL = 'admin:clients admin:users admin:resources admin:events admin:keys admin:providers admin:webhooks admin:saml admin:orgs';

describe('webhooks through the admin API', () => {
  let server: TestServer;
  let receiver: Receiver;
  let receiverUrl: string;
  const tokenOf = async (scope: string) => (await adminToken(server, scope)).token;

  async function call(method: string, path: string, token: string, body?: unknown) {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  }

  before(async () => {
    // The receiver is on loopback: the operator allows that for this test's server.
    server = await startTestServer({
      env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100', TESSERA_WEBHOOK_RETRY_WINDOW: '1', TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true' },
    });
    // It fails until told otherwise.
    receiver = await new Receiver({ status: 500, path: '/hooks' }).start();
    receiverUrl = receiver.url;
  });
  after(() => closeAll(server, receiver));

  it('adds a webhook with its secret in the 201 answer only, lists its dead letters and replays them with the same webhook-id, then removes it', async () => {
    const token = await tokenOf(ALL);
    const added = await call('POST', '/webhooks', token, { url: receiverUrl, events: ['user.disabled'] });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const id = String(added.body['id']);
    assert.equal(added.headers.get('location'), `/admin/v1/webhooks/${id}`);
    assert.match(String(added.body['secret']), /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual([added.body['url'], added.body['events'], added.body['previous_secret_expires_at']], [receiverUrl, ['user.disabled'], null]);
    const read = await call('GET', `/webhooks/${id}`, token);
    assert.equal(read.status, 200);
    assert.ok(!('secret' in read.body), 'never the secret again');
    assert.deepEqual((await call('GET', '/webhooks', token)).body['webhooks'], [read.body]);

    await server.addUser({ username: 'wren' });
    await setDisabled(manageDeps(server), 'wren', true);
    const dead = async () =>
      (await call('GET', `/webhooks/${id}/deliveries?state=dead`, token)).body['deliveries'] as { event_id: string; state: string; last_status: number }[];
    await until('the delivery to be given up', async () => (await dead()).length === 1, 10_000, 100);
    const [letter] = await dead();
    assert.deepEqual([letter!.state, letter!.last_status], ['dead', 500]);
    assert.deepEqual((await call('GET', `/webhooks/${id}/deliveries?state=pending`, token)).body['deliveries'], []);
    assert.equal((await call('GET', `/webhooks/${id}/deliveries?state=gone`, token)).status, 400);

    receiver.status = 204;
    const tries = receiver.received.length;
    const replayed = await call('POST', `/webhooks/${id}/replay`, token, { event_id: letter!.event_id });
    assert.deepEqual([replayed.status, replayed.body], [200, { replayed: 1 }]);
    await until('the replay to arrive', () => receiver.received.length === tries + 1, 5000, 10);
    const last = receiver.received.at(-1)!;
    assert.equal(last.headers['webhook-id'], letter!.event_id);
    new Webhook(String(added.body['secret'])).verify(last.body, last.headers as Record<string, string>);
    assert.equal((await call('POST', `/webhooks/${id}/replay`, token, { event_id: letter!.event_id })).status, 404, 'no dead letter left for it');

    const rotated = await call('POST', `/webhooks/${id}/secret`, token, { grace_seconds: 0 });
    assert.equal(rotated.status, 200);
    assert.match(String(rotated.body['secret']), /^whsec_/);
    assert.notEqual(rotated.body['secret'], added.body['secret']);

    assert.equal((await call('DELETE', `/webhooks/${id}`, token)).status, 204);
    assert.equal((await call('GET', `/webhooks/${id}`, token)).status, 404);
  });

  it('refuses adding or replaying without a scope that reads the audit trail (403), and anything but reading with admin:webhooks:read', async () => {
    const owner = await tokenOf(ALL);
    const webhooksOnly = await tokenOf('admin:webhooks');
    const refused = await call('POST', '/webhooks', webhooksOnly, { url: receiverUrl, events: ['user.created'] });
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.match(String(refused.body['detail']), /only a caller that may read the audit trail/);
    const existing = await call('POST', '/webhooks', owner, { url: receiverUrl, events: ['user.created'] });
    const path = `/webhooks/${String(existing.body['id'])}`;
    assert.equal((await call('POST', `${path}/replay`, webhooksOnly, {})).status, 403);
    assert.equal((await call('GET', `${path}/deliveries`, webhooksOnly)).status, 200, 'it reads deliveries');

    const withEvents = await tokenOf('admin:webhooks admin:events:read');
    const allowed = await call('POST', '/webhooks', withEvents, { url: receiverUrl, events: ['user.created'] });
    assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
    assert.deepEqual((await call('POST', `${path}/replay`, withEvents, {})).body, { replayed: 0 });

    const reader = await tokenOf('admin:webhooks:read admin:events');
    assert.equal((await call('GET', path, reader)).status, 200);
    const readOnly = await call('POST', '/webhooks', reader, { url: receiverUrl, events: ['user.created'] });
    assert.equal(readOnly.status, 403);
    assert.match(String(readOnly.headers.get('www-authenticate')), /insufficient_scope/);
    assert.equal((await call('DELETE', path, reader)).status, 403);

    const unknown = await call('POST', '/webhooks', owner, { url: receiverUrl, events: ['user.created'], secret: 'mine' });
    assert.deepEqual([unknown.status, unknown.body['field']], [400, 'secret'], 'a secret is never chosen by the caller');
    const typo = await call('POST', '/webhooks', owner, { url: receiverUrl, events: ['user.removed'] });
    assert.deepEqual([typo.status, typo.body['field']], [400, 'events']);
    for (const id of [existing.body['id'], allowed.body['id']]) assert.equal((await call('DELETE', `/webhooks/${String(id)}`, owner)).status, 204);
  });
});

describe("webhook URLs from the admin API, inside the server's network", () => {
  let server: TestServer;
  let receiver: Receiver;
  let token: string;
  const post = async (url: string) => {
    const response = await fetch(`${server.url}/admin/v1/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: ['user.disabled'] }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  before(async () => {
    // TESSERA_ALLOW_PRIVATE_NETWORK_URLS is off, as by default.
    server = await startTestServer({ env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100' } });
    receiver = await new Receiver({ path: '/hooks' }).start();
    token = (await adminToken(server, ALL)).token;
  });
  after(() => closeAll(server, receiver));

  it('refuses a URL on a loopback, link-local or private address with 400 naming url, and the command adds it', async () => {
    for (const url of [
      `http://127.0.0.1:${receiver.port}/hooks`,
      'http://localhost/hooks',
      'http://[::1]/hooks',
      'http://169.254.169.254/latest/meta-data',
      'https://10.1.2.3/hooks',
      'http://[::ffff:192.168.1.1]/hooks',
    ]) {
      const refused = await post(url);
      assert.equal(refused.status, 400, `${url}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body['field'], 'url');
      assert.match(String(refused.body['detail']), /TESSERA_ALLOW_PRIVATE_NETWORK_URLS/);
    }
    assert.deepEqual((await server.store.webhooks.list()).length, 0, 'nothing was added');
    assert.equal((await post('https://hooks.example.com/tessera')).status, 201, "a public host is the caller's choice");

    const owner = await tessera(['webhook', 'add', '--url', `http://127.0.0.1:${receiver.port}/hooks`, '--event', 'user.disabled', '--json'], {
      TESSERA_DATABASE: server.config.database,
    });
    assert.equal(owner.code, 0, owner.stderr);
  });

  it("sends nothing to a name that resolves into the server's network for a webhook the owner did not add, and sends to the owner's", async () => {
    for (const webhook of await server.store.webhooks.list()) await server.store.webhooks.remove(webhook.id);
    // A name the API let through (it is not an address) that now resolves to loopback: the
    // guard is on the connection, after the name is resolved.
    const url = `http://localhost:${receiver.port}/hooks`;
    const box = secretBox(loadKeyEncryption(server.config.keyEncryption));
    const now = Date.now();
    const add = async (id: string, addedByOwner: boolean) =>
      server.store.webhooks.create({
        id,
        url,
        events: ['user.disabled'],
        secret: box.seal(secretOwner(id), newWebhookSecret()),
        previousSecret: null,
        previousSecretExpiresAt: null,
        addedByOwner,
        createdAt: now,
        updatedAt: now,
      });
    await add('delegated', false);
    await add('owned', true);
    await server.addUser({ username: 'ivo' });
    await setDisabled(manageDeps(server), 'ivo', true);
    const [delivery] = await server.store.webhooks.deliveries('owned', { limit: 1 });
    await until(
      "the owner's webhook to be sent the event",
      () => receiver.received.some((message) => message.headers['webhook-id'] === delivery!.eventId),
      5000,
      20,
    );
    await until(
      "the other webhook's try to fail",
      async () => ((await server.store.webhooks.deliveries('delegated', { limit: 1 }))[0]?.lastError ?? null) !== null,
      5000,
      20,
    );
    const [refused] = await server.store.webhooks.deliveries('delegated', { limit: 1 });
    assert.equal(refused!.state, 'pending', 'tried again later, as any failure');
    assert.match(refused!.lastError!, /localhost resolves to a private, link-local or loopback address/);
    assert.equal(
      receiver.received.filter((message) => message.headers['webhook-id'] === delivery!.eventId).length,
      1,
      "only the owner's webhook reached the receiver",
    );
  });
});

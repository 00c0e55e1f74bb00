/**
 * Events out as signed webhooks, to a receiver on loopback. A user disabled with
 * `tessera user disable` reaches the webhook within a second, and the signature verifies with
 * the Standard Webhooks library and the secret `tessera webhook add` printed; a receiver down
 * and back gets every event, in order, once; a receiver that never answers holds back only its
 * own deliveries; a delivery given up is a dead letter, listed and replayed with the same
 * webhook-id.
 *
 * Every command that opens the database while the server's dispatcher writes runs as its own
 * process, as an operator runs it: the in-process `runTessera` shares this thread's event loop
 * with the server, and a write of its own, or a read in a transaction, would wait
 * (busy_timeout) on the server's open batch, which only this same loop can commit ('database
 * is locked' after 5 s). Opening the database no longer waits for it: an up-to-date schema is
 * only read (src/store/sqlite/migrate.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { addWebhook as addWebhookFlow, listDeliveries, removeWebhook, type WebhookDeps } from '../src/flows/manage/webhooks.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { runTessera, tessera } from './helpers/cli.ts';
import { disableAndEnable, manageDeps } from './helpers/manage.ts';
import { Receiver, type Received } from './helpers/receiver.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

/** A webhook receiver on loopback: records what it is sent and answers `status` (`hang`: never). */
class WebhookReceiver extends Receiver {
  constructor() {
    super({ path: '/hooks/tessera' });
  }

  bodies(): { type: string; timestamp: string; data: Record<string, unknown> }[] {
    return this.received.map((message) => JSON.parse(message.body) as { type: string; timestamp: string; data: Record<string, unknown> });
  }
}

/** Verifies a message as a receiver would, with the Standard Webhooks library. */
function verify(secret: string, message: Received): unknown {
  return new Webhook(secret).verify(message.body, {
    'webhook-id': String(message.headers['webhook-id']),
    'webhook-timestamp': String(message.headers['webhook-timestamp']),
    'webhook-signature': String(message.headers['webhook-signature']),
  });
}

describe('webhooks: events out, signed, from the outbox', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
  const command = (args: string[]) => tessera(args, env());
  const deps = (): WebhookDeps => ({ ...manageDeps(server), secrets: secretBox(loadKeyEncryption(server.config.keyEncryption)) });

  async function addWebhook(url: string, events: string[]): Promise<{ id: string; secret: string }> {
    const { webhook, secret } = await addWebhookFlow(deps(), { url, events });
    return { id: webhook.id, secret };
  }

  before(async () => {
    server = await startTestServer({ env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100' } });
    receiver = await new WebhookReceiver().start();
  });
  after(() => closeAll(server, receiver));

  it('brings a user disabled with `tessera user disable` to the webhook within a second, signed with the secret it printed once', async () => {
    const added = await command(['webhook', 'add', '--url', receiver.url, '--event', 'user.disabled', '--event', 'user.deleted', '--json']);
    assert.equal(added.code, 0, added.stderr);
    const { id, secret } = JSON.parse(added.stdout) as { id: string; secret: string };
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const listed = await command(['webhook', 'list', '--json']);
    assert.doesNotMatch(listed.stdout, /whsec_|ciphertext/, 'the secret is shown once, and never listed');
    const ada = await server.addUser({ username: 'ada' });

    const disabled = await command(['user', 'disable', 'ada']);
    assert.equal(disabled.code, 0, disabled.stderr);
    const done = Date.now();
    await until('the webhook to be called', () => receiver.received.length === 1, 5000, 10);
    const [message] = receiver.received;
    assert.ok(message!.at - done < 1000, `delivered ${message!.at - done} ms after the command`);

    assert.deepEqual(verify(secret, message!), JSON.parse(message!.body));
    assert.throws(() => verify(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, message!), /signature/i, 'another secret does not verify');
    const body = receiver.bodies()[0]!;
    assert.equal(body.type, 'user.disabled');
    assert.deepEqual(
      { user_id: body.data['user_id'], username: body.data['username'], event: body.data['event'] },
      { user_id: ada.id, username: 'ada', event: 'user.disabled' },
    );
    assert.equal(message!.headers['webhook-id'], body.data['id']);
    assert.equal(message!.headers['content-type'], 'application/json');
    assert.doesNotMatch(message!.body, /password|secret|token|hash/i, 'no secret, and not its name either');

    // Recorded once the receiver's answer is in (read through the operation, in process: a
    // command in process would open the database beside the server's open batch).
    await until('the delivery to be recorded', async () => (await listDeliveries(manageDeps(server), id))[0]?.state === 'delivered', 5000);
    const recorded = await command(['webhook', 'deliveries', id, '--json']);
    assert.equal(recorded.code, 0, recorded.stderr);
    assert.deepEqual(
      (JSON.parse(recorded.stdout) as { state: string; attempts: number; last_status: number }[]).map((d) => [d.state, d.attempts, d.last_status]),
      [['delivered', 1, 204]],
    );

    // Removing the user is `user.deleted` to the webhook; the events it does not hear are not sent.
    await setDisabled(manageDeps(server), 'ada', false);
    assert.equal((await command(['user', 'remove', 'ada'])).code, 0);
    await until('the removal to be sent', () => receiver.received.length === 2, 5000, 10);
    assert.deepEqual(
      receiver.bodies().map((b) => [b.type, b.data['event']]),
      [
        ['user.disabled', 'user.disabled'],
        ['user.deleted', 'user.removed'],
      ],
    );
    assert.equal((await command(['webhook', 'remove', id])).code, 0);
    receiver.received.length = 0;
  });

  it('sends every event to a receiver that was down once it is back, in order and once each', async () => {
    const { id, secret } = await addWebhook(receiver.url, ['user.disabled', 'user.enabled']);
    const grace = await server.addUser({ username: 'grace' });
    await receiver.down();
    const sent = await disableAndEnable(server, grace, 3);
    assert.equal(sent.length, 6);
    // Tried, and failed, while down.
    // The oldest is tried, and fails, while the receiver is down; the others wait behind it.
    const oldest = async () => (await server.store.webhooks.deliveries(id, { limit: 10 })).at(-1)!;
    await until('failed tries', async () => (await oldest()).attempts >= 2, 5000);
    assert.match((await oldest()).lastError ?? '', /connection refused/);
    assert.equal((await server.store.webhooks.deliveries(id, { limit: 10 })).filter((d) => d.attempts > 0).length, 1);
    await receiver.up();
    await until('all six to arrive', () => receiver.received.length >= 6, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      receiver.received.map((message) => message.headers['webhook-id']),
      sent.map((event) => event.id),
      'every event, in order, once',
    );
    for (const message of receiver.received) verify(secret, message);
    await removeWebhook(manageDeps(server), id);
    receiver.received.length = 0;
  });

  it('holds back only the deliveries of a receiver that never answers', async () => {
    const stuck = new WebhookReceiver();
    stuck.status = 'hang';
    await stuck.start();
    try {
      const slow = await addWebhook(stuck.url, ['client.created']);
      const fast = await addWebhook(receiver.url, ['client.created']);
      const started = Date.now();
      for (const name of ['One', 'Two', 'Three']) await createClient(manageDeps(server), { client_name: name, redirect_uris: ['https://app.example/cb'] });
      await until('three to reach the receiver that answers', () => receiver.received.length === 3, 5000, 10);
      assert.ok(Date.now() - started < 3000, 'not held behind the one that hangs');
      assert.deepEqual(
        receiver.bodies().map((b) => b.type),
        ['client.created', 'client.created', 'client.created'],
      );
      await removeWebhook(manageDeps(server), slow.id);
      await removeWebhook(manageDeps(server), fast.id);
    } finally {
      await stuck.close();
      receiver.received.length = 0;
    }
  });
});

describe('webhooks: dead letters', () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
  const command = (args: string[]) => tessera(args, env());
  /**
   * A command in this process: for one refused before anything but the schema is read (a read
   * beside the server's open batch, which does not wait on it), which needs no process of its own.
   */
  const commandInProcess = (args: string[]) => runTessera(args, env());

  before(async () => {
    server = await startTestServer({ env: { TESSERA_WEBHOOK_RETRY_DELAY_MS: '100', TESSERA_WEBHOOK_RETRY_WINDOW: '1' } });
    receiver = await new WebhookReceiver().start();
  });
  after(() => closeAll(server, receiver));

  it('gives a delivery up after the retry window, lists it as dead, and replays it with the same webhook-id', async () => {
    receiver.status = 500;
    const { webhook, secret } = await addWebhookFlow(
      { ...manageDeps(server), secrets: secretBox(loadKeyEncryption(server.config.keyEncryption)) },
      { url: receiver.url, events: ['user.disabled'] },
    );
    const id = webhook.id;
    await server.addUser({ username: 'lin' });
    await setDisabled(manageDeps(server), 'lin', true);
    const dead = async () =>
      JSON.parse((await command(['webhook', 'deliveries', id, '--state', 'dead', '--json'])).stdout) as {
        event_id: string;
        attempts: number;
        last_status: number;
        last_error: string;
      }[];
    // Waited for in process (a command a poll would be about 0.3 s of CPU each), then listed by the command.
    await until('the delivery to be given up', async () => (await listDeliveries(manageDeps(server), id, { state: 'dead' })).length === 1, 10_000, 100);
    const letters = await dead();
    assert.equal(letters.length, 1, JSON.stringify(letters));
    const [letter] = letters;
    assert.equal(letter!.last_status, 500);
    assert.equal(letter!.last_error, 'answered 500');
    assert.ok(receiver.received.length >= 2, 'tried more than once');
    assert.ok(receiver.received.every((message) => message.headers['webhook-id'] === letter!.event_id));
    const [given] = await server.store.events.list({ type: 'webhook.dead_lettered', limit: 1 });
    assert.equal(given?.detail['event_id'], letter!.event_id);

    receiver.status = 200;
    const tries = receiver.received.length;
    const replayed = await command(['webhook', 'replay', id]);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.match(replayed.stdout, /Sending 1 dead letter again/);
    await until('the replay to arrive', () => receiver.received.length === tries + 1, 5000, 10);
    const last = receiver.received.at(-1)!;
    assert.equal(last.headers['webhook-id'], letter!.event_id);
    assert.equal(JSON.parse(last.body).type, 'user.disabled');
    verify(secret, last);
    assert.deepEqual(await dead(), []);
    const none = await command(['webhook', 'replay', id]);
    assert.match(none.stdout, /No dead letters/);
    const unknown = await command(['webhook', 'replay', id, '--event', 'nothing']);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no dead letter for event nothing/);
  });

  it('refuses a webhook that is not an http(s) URL or hears no known event, naming the option', async () => {
    const ftp = await commandInProcess(['webhook', 'add', '--url', 'ftp://example.com/x', '--event', 'user.created']);
    assert.equal(ftp.code, 2);
    assert.match(ftp.stderr, /--url ftp:\/\/example.com\/x: an http or https URL/);
    const typo = await commandInProcess(['webhook', 'add', '--url', 'https://example.com/x', '--event', 'user.removed']);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /--event user.removed: not an event type a webhook hears/);
    const none = await commandInProcess(['webhook', 'add', '--url', 'https://example.com/x']);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /--event: name at least one event type/);
  });
});

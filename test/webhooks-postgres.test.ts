/**
 * Two Tessera processes on one PostgreSQL database send each event to a webhook
 * once. Both run the dispatcher and race for every delivery; the claim (one conditional
 * UPDATE) gives each to one of them. Events are stored by the `tessera` command, a third
 * process, so that neither server hears of them first.
 *
 * Runs against the PostgreSQL of `test/helpers/postgres.ts`, in a schema of its own.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { runTessera as tessera } from './helpers/cli.ts';
import { instancesOnPostgres } from './helpers/instances.ts';
import { describePostgres } from './helpers/postgres.ts';
import { Receiver } from './helpers/receiver.ts';
import { closeAll } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

describePostgres('webhooks from two Tessera processes on one PostgreSQL database', () => {
  const instances = instancesOnPostgres({ TESSERA_WEBHOOK_RETRY_DELAY_MS: '100' });
  const env = instances.env;
  // Slow enough that both instances are often busy at once.
  const receiver = new Receiver({ delayMs: 5 });
  const received = receiver.received;

  before(() => receiver.start());
  after(() => closeAll(instances, receiver));

  it('delivers each event once, whichever instance sends it', async () => {
    await instances.serve();
    const added = await tessera(['webhook', 'add', '--url', receiver.url, '--event', 'user.created', '--event', 'user.disabled', '--json'], env);
    assert.equal(added.code, 0, added.stderr);
    const { secret } = JSON.parse(added.stdout) as { secret: string };

    const names = Array.from({ length: 8 }, (_, i) => `person${i}`);
    for (const name of names) {
      const created = await tessera(['user', 'add', '--username', name, '--password-stdin'], env, 'correct horse battery staple\n');
      assert.equal(created.code, 0, created.stderr);
    }
    await until('every event to arrive', () => received.length >= names.length, 20_000);
    // Time for a second sending of any of them to arrive too.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const ids = received.map((message) => message.headers['webhook-id']);
    assert.equal(new Set(ids).size, names.length, 'one message an event');
    assert.equal(ids.length, names.length, 'and each once');
    const usernames = received.map(
      (message) =>
        (
          new Webhook(secret).verify(message.body, {
            'webhook-id': String(message.headers['webhook-id']),
            'webhook-timestamp': String(message.headers['webhook-timestamp']),
            'webhook-signature': String(message.headers['webhook-signature']),
          }) as { data: { username: string } }
        ).data.username,
    );
    assert.deepEqual(usernames, names, 'in the order they were made');
  });
});

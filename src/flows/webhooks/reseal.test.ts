/**
 * Resealing the outbox's secrets at start, over the flow world's store: rotating the key
 * encryption key (`NEW,OLD`, a restart, then `NEW` alone) carries every webhook signing secret
 * (and the one a rotation replaced, still signing during its grace) and every Shared Signals
 * push Authorization header over to the new key, the same secrets for the same owners and
 * nothing else of them changed; what is under the new key already is left as it is, and a
 * second run changes nothing. After it, a dispatcher on the new key alone signs as before.
 * test/outbox-key-encryption.test.ts does the same through `prepareKeys` on a database file.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DELIVERY_POLL, DELIVERY_PUSH } from '../../core/ssf.ts';
import type { SsfStreamRecord, WebhookRecord } from '../../store/types.ts';
import { KeyEncryption, UnknownKeyEncryptionKeyError } from '../../tokens/key-encryption.ts';
import { type SecretBox, secretBox } from '../../tokens/secret-box.ts';
import { flowWorld, ssfReceivers, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addWebhook, rotateWebhookSecret } from '../manage/webhooks.ts';
import { createStream, streamSecretOwner } from '../ssf/streams.ts';
import { webhookKind } from './dispatcher.ts';
import { secretOwner, webhookSignature } from './message.ts';
import { resealOutboxSecrets } from './reseal.ts';

const [OLD, NEW] = [randomBytes(32), randomBytes(32)];
/** The server before the rotation, on the old key alone. */
const oldKey = new KeyEncryption([OLD]);
/** The restart between: the new key first (it seals), the old one still opening. */
const bothKeys = new KeyEncryption([NEW, OLD]);
/** The restart after: the new key alone. */
const newKey = new KeyEncryption([NEW]);

describe('resealing the outbox’s secrets under a new key encryption key (flows/webhooks/reseal.ts)', () => {
  let world: FlowWorld;
  /** Webhooks by what their secrets were sealed under, and the clear secrets each was shown. */
  const hooks = new Map<string, { id: string; secret: string; previous: string | null }>();
  const streams = new Map<string, string>();
  let webhooksBefore: Map<string, WebhookRecord>;
  let streamsBefore: Map<string, SsfStreamRecord>;
  let changed: number;

  before(async () => {
    world = await flowWorld();
    const deps = (encryption: KeyEncryption) => ({ ...world.manage, secrets: secretBox(encryption) });
    const add = async (name: string, encryption: KeyEncryption) => {
      const { webhook, secret } = await addWebhook(deps(encryption), { url: `https://hooks.example.com/${name}`, events: ['user.disabled'] });
      hooks.set(name, { id: webhook.id, secret, previous: null });
      return webhook.id;
    };
    const rotate = async (name: string, encryption: KeyEncryption) => {
      const hook = hooks.get(name)!;
      const { secret } = await rotateWebhookSecret(deps(encryption), hook.id, { grace_seconds: 3600 });
      hooks.set(name, { ...hook, secret, previous: hook.secret });
    };
    await add('old', oldKey);
    // Rotated before the KEK: both secrets under the old key.
    await add('old-rotated', oldKey);
    await rotate('old-rotated', oldKey);
    // Rotated between the restarts: the new secret under the new key, the one it replaced under the old.
    await add('rotated-between', oldKey);
    await rotate('rotated-between', bothKeys);
    // Added between the restarts: under the new key already.
    await add('new', bothKeys);

    const [receiver] = await ssfReceivers(world);
    const stream = async (name: string, encryption: KeyEncryption, delivery: Record<string, unknown>) => {
      const made = await createStream({ ...world.deps, secrets: secretBox(encryption) }, receiver.id, { delivery });
      streams.set(name, made.id);
    };
    const push = (header: string) => ({ method: DELIVERY_PUSH, endpoint_url: 'https://receiver.example/events', authorization_header: header });
    await stream('old', oldKey, push('Bearer under-the-old-key'));
    await stream('new', bothKeys, push('Bearer under-the-new-key'));
    await stream('poll', oldKey, { method: DELIVERY_POLL });
    await stream('push-without-header', oldKey, { method: DELIVERY_PUSH, endpoint_url: 'https://receiver.example/events' });

    webhooksBefore = new Map((await world.store.webhooks.list()).map((w) => [w.id, w]));
    streamsBefore = new Map((await world.store.ssf.listAllStreams()).map((s) => [s.id, s]));
    changed = await resealOutboxSecrets(world.store, bothKeys);
  });
  after(() => world.close());

  const webhook = async (name: string) => (await world.store.webhooks.get(hooks.get(name)!.id))!;
  const stream = async (name: string) => (await world.store.ssf.getStream(streams.get(name)!))!;
  /** Sealed under the first key of `encryption`. */
  const sealedUnder = (encryption: KeyEncryption, sealed: Readonly<Record<string, unknown>> | null) =>
    sealed !== null && sealed['enc'] === 'A256GCM' && !encryption.needsEncrypting(sealed);

  it('could not open, on the new key alone, what the old key sealed: the reason to reseal before', () => {
    const record = webhooksBefore.get(hooks.get('old')!.id)!;
    assert.equal(sealedUnder(oldKey, record.secret), true);
    assert.throws(() => secretBox(newKey).open(secretOwner(record.id), record.secret), UnknownKeyEncryptionKeyError);
  });

  it('seals again under the new key every webhook secret, and the one a rotation replaced, that an older key sealed: the same secrets for the same webhooks', async () => {
    const box: SecretBox = secretBox(newKey);
    for (const name of ['old', 'old-rotated', 'rotated-between', 'new']) {
      const { id, secret, previous } = hooks.get(name)!;
      const now = await webhook(name);
      assert.equal(sealedUnder(newKey, now.secret), true, `${name}: the secret under the new key`);
      assert.equal(box.open(secretOwner(id), now.secret), secret, `${name}: the same secret`);
      assert.throws(() => box.open(secretOwner('another'), now.secret), `${name}: sealed for its own webhook alone`);
      if (previous === null) {
        assert.equal(now.previousSecret, null, `${name}: no secret replaced`);
        continue;
      }
      assert.equal(sealedUnder(newKey, now.previousSecret), true, `${name}: the replaced secret under the new key`);
      assert.equal(box.open(secretOwner(id), now.previousSecret!), previous, `${name}: the same replaced secret`);
      assert.throws(() => box.open(secretOwner('another'), now.previousSecret!), `${name}: sealed for its own webhook alone`);
    }
  });

  it('changes nothing else of a webhook, and leaves one under the new key already as it was', async () => {
    for (const name of ['old', 'old-rotated', 'rotated-between']) {
      const { secret: _secret, previousSecret: _previous, ...rest } = await webhook(name);
      const { secret: _was, previousSecret: _wasPrevious, ...was } = webhooksBefore.get(hooks.get(name)!.id)!;
      assert.deepEqual(rest, was, `${name}: its URL, events, grace and times as they were`);
    }
    assert.deepEqual(await webhook('new'), webhooksBefore.get(hooks.get('new')!.id), 'untouched, its sealed secret byte for byte');
  });

  it('seals again under the new key a push stream’s Authorization header that an older key sealed, and leaves the others as they were', async () => {
    const resealed = await stream('old');
    assert.equal(sealedUnder(newKey, resealed.authorizationHeader), true);
    assert.equal(secretBox(newKey).open(streamSecretOwner(resealed.id), resealed.authorizationHeader!), 'Bearer under-the-old-key');
    assert.throws(() => secretBox(newKey).open(streamSecretOwner('another'), resealed.authorizationHeader!), 'sealed for its own stream alone');
    const { authorizationHeader: _header, ...rest } = resealed;
    const { authorizationHeader: _was, ...was } = streamsBefore.get(resealed.id)!;
    assert.deepEqual(rest, was, 'nothing else of it changed');
    for (const name of ['new', 'poll', 'push-without-header'])
      assert.deepEqual(await stream(name), streamsBefore.get(streams.get(name)!), `${name}: as it was`);
  });

  it('counts what it sealed again (three webhooks, one stream), and changes nothing when run again', async () => {
    assert.equal(changed, 4);
    const now = await world.store.webhooks.list();
    assert.equal(await resealOutboxSecrets(world.store, bothKeys), 0, 'nothing under an older key is left');
    assert.equal(await resealOutboxSecrets(world.store, newKey), 0);
    assert.deepEqual(await world.store.webhooks.list(), now);
  });

  it('lets a dispatcher on the new key alone sign with the secrets the webhook’s receiver holds', async () => {
    const { id, secret, previous } = hooks.get('old-rotated')!;
    await world.deps.events.emit({ type: 'user.disabled', userId: 'sub-ada', username: 'ada' });
    const now = world.clock.now();
    const batch = await world.store.outbox.claim('webhook', id, now, now + 60_000, 32);
    const event = batch[0]!.eventId;
    const sent: Record<string, string>[] = [];
    const kind = webhookKind({
      store: world.store,
      clock: world.clock,
      secrets: secretBox(newKey),
      settings: world.config.webhooks,
      events: world.deps.events,
      log: { warn: () => {} },
      allowPrivateNetworkUrls: false,
      post: () => async (_url, post) => {
        sent.push({ ...post.headers, body: post.body });
        return { status: 204, body: '' };
      },
    });
    const attempt = await kind.open(id, batch);
    assert.equal((await attempt!(batch[0]!, new AbortController().signal)).kind, 'delivered');
    const [message] = sent;
    const timestamp = Number(message!['webhook-timestamp']);
    assert.deepEqual(message!['webhook-signature']!.split(' '), [
      webhookSignature(secret, event, timestamp, message!['body']!),
      webhookSignature(previous!, event, timestamp, message!['body']!),
    ]);
  });
});

/**
 * The outbox's secrets follow a rotation of the key encryption key (docs/security.md): a
 * webhook's signing secret (and the one a rotation replaced, still signing in its grace
 * period) and a Shared Signals stream's push Authorization header are sealed again under the
 * new KEK at start (`prepareKeys`, as `NEW,OLD`), and open with the new KEK alone afterwards,
 * the same secrets, so that the receivers notice nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig, type Config } from '../src/config/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { Events } from '../src/core/events.ts';
import { DELIVERY_PUSH } from '../src/core/ssf.ts';
import { OWNER } from '../src/flows/manage/authority.ts';
import { addWebhook, rotateWebhookSecret } from '../src/flows/manage/webhooks.ts';
import { streamSecretOwner } from '../src/flows/ssf/streams.ts';
import { secretOwner } from '../src/flows/webhooks/message.ts';
import { prepareKeys } from '../src/main.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { KeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { TEST_ENV } from './helpers/server.ts';
import { ssfReceiverClient, ssfStream } from './store/fixtures.ts';

describe("the outbox's secrets across a rotation of the key encryption key", () => {
  const old = randomBytes(32);
  const next = randomBytes(32);
  let dir: string;
  let config: Config;
  let store: Store;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-outbox-kek-'));
    config = loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_LOG_LEVEL: 'silent' });
    store = await openStore(config.database, config.postgres);
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('seals webhook secrets and push headers again under the new key, which alone opens them afterwards', async () => {
    const before = new KeyEncryption([old]);
    const deps = {
      store,
      clock: systemClock,
      config,
      caller: OWNER,
      events: new Events(systemClock, store.events, []),
      tellApps: async () => 0,
      secrets: secretBox(before),
    };
    const { webhook, secret: first } = await addWebhook(deps, { url: 'https://hooks.example.com/', events: ['user.disabled'] });
    const { secret: second } = await rotateWebhookSecret(deps, webhook.id, { grace_seconds: 3600 });
    await store.clients.create(ssfReceiverClient('receiver'));
    await store.ssf.createStream(
      ssfStream({
        id: 'stream-1',
        clientId: 'receiver',
        deliveryMethod: DELIVERY_PUSH,
        endpointUrl: 'https://receiver.example.com/',
        authorizationHeader: secretBox(before).seal(streamSecretOwner('stream-1'), 'Bearer xyz'),
      }),
    );

    // The restart with NEW,OLD: sealed again under NEW.
    await prepareKeys(config, store, new KeyEncryption([next, old]));
    const after = secretBox(new KeyEncryption([next]));
    const stored = (await store.webhooks.get(webhook.id))!;
    assert.equal(after.open(secretOwner(webhook.id), stored.secret), second);
    assert.equal(after.open(secretOwner(webhook.id), stored.previousSecret!), first, 'the secret still signing in its grace period too');
    assert.equal(stored.updatedAt, (await store.webhooks.get(webhook.id))!.updatedAt);
    const stream = (await store.ssf.getStream('stream-1'))!;
    assert.equal(after.open(streamSecretOwner('stream-1'), stream.authorizationHeader!), 'Bearer xyz');
    assert.throws(() => secretBox(new KeyEncryption([old])).open(secretOwner(webhook.id), stored.secret), 'the old key no longer opens it');
    // The restart with NEW alone finds nothing left to do, and starts.
    await prepareKeys(config, store, new KeyEncryption([next]));
    assert.equal(after.open(secretOwner(webhook.id), (await store.webhooks.get(webhook.id))!.secret), second);
  });
});

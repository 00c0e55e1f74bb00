/**
 * A SET pushed to several streams of one receiver is signed once (RS256 signatures are the
 * costliest part of a push, docs/benchmarks.md "The events flood"), whenever each stream's
 * turn comes within a minute: the same SET, `iat` and all, goes to each.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config/index.ts';
import { ManualClock } from '../src/core/clock.ts';
import { Events } from '../src/core/events.ts';
import { DELIVERY_PUSH, SSF_EVENTS } from '../src/core/ssf.ts';
import { SIGNED_SET_REUSE_MS, ssfKind } from '../src/flows/ssf/dispatcher.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { KeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { closeServer, listenOnFreePort, TEST_ENV } from './helpers/server.ts';
import { ssfStream } from './store/fixtures.ts';

describe('SETs signed for the streams of one receiver', () => {
  let dir: string;
  let store: Store;
  const received: string[] = [];
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push(Buffer.concat(chunks).toString());
      response.writeHead(202).end();
    });
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-ssf-signing-'));
    store = await openStore(loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_LOG_LEVEL: 'silent' }).database);
    await listenOnFreePort(receiver);
  });
  after(async () => {
    await closeServer(receiver);
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('signs a SET once for every stream sent the same claims within a minute, its iat that of the first', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 0, 0, 0, 900));
    const config = loadConfig({ ...TEST_ENV, TESSERA_DATABASE: join(dir, 'tessera.db') });
    const signed: Record<string, unknown>[] = [];
    const kind = ssfKind({
      store,
      clock,
      secrets: secretBox(new KeyEncryption([Buffer.alloc(32, 1)])),
      tokens: {
        securityEventToken: async (claims) => {
          signed.push({ ...claims });
          return `set-${signed.length}.${claims['iat']}`;
        },
      },
      issuer: 'https://id.example.com',
      settings: config.webhooks,
      events: new Events(clock, store.events, []),
      log: { warn: () => {} },
      allowPrivateNetworkUrls: true,
    });
    await store.clients.create({
      id: 'receiver',
      name: 'Receiver',
      secretHash: null,
      redirectUris: [],
      scopes: ['ssf:manage'],
      grantTypes: ['client_credentials'],
      webOrigins: [],
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: 0,
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    } as never);
    const port = (receiver.address() as { port: number }).port;
    const requested = [SSF_EVENTS.ACCOUNT_DISABLED];
    for (const id of ['first', 'second', 'third'])
      await store.ssf.createStream(
        ssfStream({
          id,
          clientId: 'receiver',
          eventsRequested: requested,
          eventsDelivered: requested,
          deliveryMethod: DELIVERY_PUSH,
          endpointUrl: `http://127.0.0.1:${port}/`,
        }),
      );
    await new Events(clock, store.events, []).emit({ type: 'user.disabled', userId: 'user-1', username: 'ada' });

    const push = async (streamId: string) => {
      const now = clock.now();
      const batch = await store.outbox.claim('ssf', streamId, now, now + 60_000, 10);
      assert.equal(batch.length, 1);
      const attempt = await kind.open(streamId, batch);
      assert.equal((await attempt!(batch[0]!, new AbortController().signal)).kind, 'delivered');
    };
    await push('first');
    // The second stream's turn comes in the next second: the SET signed for the first is sent.
    clock.advance(1_500);
    await push('second');
    assert.equal(signed.length, 1);
    assert.deepEqual(received, ['set-1.1767225600', 'set-1.1767225600']);
    // Past the minute, a SET is signed anew, with its own iat.
    clock.advance(SIGNED_SET_REUSE_MS);
    await push('third');
    assert.equal(signed.length, 2);
    assert.equal(received[2], `set-2.${Math.floor(clock.now() / 1000)}`);
  });
});

/**
 * Runs the receiver of docs/events.md as written: the `js test=receiver` block as a module, on
 * a port of its own, with the secret `webhook add` gave in WEBHOOK_SECRET. A user disabled on
 * the server reaches it and is handled once; a message with another signature, or signed long
 * ago, is refused.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { addWebhook } from '../src/flows/manage/webhooks.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { webhookHeaders } from '../src/flows/webhooks/message.ts';
import { loadKeyEncryption } from '../src/tokens/key-encryption.ts';
import { secretBox } from '../src/tokens/secret-box.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeServer, startTestServer, type TestServer } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

const DOC = readFileSync(new URL('../docs/events.md', import.meta.url), 'utf8');
const MODULES = new URL('../node_modules/.cache/tessera-docs/', import.meta.url);

interface ReceiverModule {
  readonly server: Server;
  readonly handled: { type: string; data: Record<string, unknown> }[];
  verifyWebhook(secret: string, headers: Record<string, string>, body: string, now?: number): unknown;
}

describe('docs/events.md: the receiver in Node', () => {
  let server: TestServer;
  let receiver: ReceiverModule;
  let url: string;

  before(async () => {
    const code = /^```js test=receiver\n([\s\S]*?)^```$/m.exec(DOC)?.[1];
    assert.ok(code, 'docs/events.md has the receiver');
    mkdirSync(MODULES, { recursive: true });
    const file = new URL(`events-receiver-${process.pid}.mjs`, MODULES);
    writeFileSync(file, code);
    process.env['PORT'] = '0';
    receiver = (await import(file.href)) as ReceiverModule;
    if (!receiver.server.listening) await new Promise((resolve) => receiver.server.once('listening', resolve));
    url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/`;
    server = await startTestServer();
  });
  after(async () => {
    await server.close();
    await closeServer(receiver.server);
    delete process.env['WEBHOOK_SECRET'];
  });

  it('handles a user disabled on the server, once, with the secret webhook add gave', async () => {
    const deps = { ...manageDeps(server), secrets: secretBox(loadKeyEncryption(server.config.keyEncryption)) };
    const { secret } = await addWebhook(deps, { url, events: ['user.disabled'] });
    process.env['WEBHOOK_SECRET'] = secret;
    await server.addUser({ username: 'ada' });
    await setDisabled(manageDeps(server), 'ada', true);
    await until('the receiver to handle it', () => receiver.handled.length === 1, 5000);
    assert.equal(receiver.handled[0]!.type, 'user.disabled');
    assert.equal(receiver.handled[0]!.data['username'], 'ada');

    const body = JSON.stringify({ type: 'user.deleted', timestamp: new Date().toISOString(), data: { username: 'ada' } });
    const post = (headers: Record<string, string>) => fetch(url, { method: 'POST', headers, body });
    const forged = await post(webhookHeaders([`whsec_${Buffer.alloc(32, 7).toString('base64')}`], 'msg-1', Date.now(), body));
    assert.equal(forged.status, 400, 'another secret is refused');
    const stale = await post(webhookHeaders([secret], 'msg-2', Date.now() - 10 * 60_000, body));
    assert.equal(stale.status, 400, 'a message signed ten minutes ago is refused');
    const fresh = webhookHeaders([secret], 'msg-3', Date.now(), body);
    assert.equal((await post(fresh)).status, 204);
    assert.equal((await post(fresh)).status, 204, 'the same id again is answered');
    assert.deepEqual(receiver.handled.map((message) => message.type), ['user.disabled', 'user.deleted'], 'and handled once');
    // The signature of a rotation's two secrets: either matches.
    assert.ok(receiver.verifyWebhook(secret, webhookHeaders([`whsec_${Buffer.alloc(32, 9).toString('base64')}`, secret], 'msg-4', Date.now(), body), body));
  });
});

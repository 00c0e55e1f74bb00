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
    assert.deepEqual(
      receiver.handled.map((message) => message.type),
      ['user.disabled', 'user.deleted'],
      'and handled once',
    );
    // The signature of a rotation's two secrets: either matches.
    assert.ok(receiver.verifyWebhook(secret, webhookHeaders([`whsec_${Buffer.alloc(32, 9).toString('base64')}`, secret], 'msg-4', Date.now(), body), body));
  });
});

interface SsfReceiverModule {
  readonly server: Server;
  readonly handled: { type: string; event: Record<string, unknown>; subject: Record<string, unknown> }[];
}

describe('docs/events.md: the Shared Signals push receiver in Node', () => {
  let server: TestServer;
  let receiver: SsfReceiverModule;

  before(async () => {
    const code = /^```js test=ssf-receiver\n([\s\S]*?)^```$/m.exec(DOC)?.[1];
    assert.ok(code, 'docs/events.md has the SSF receiver');
    server = await startTestServer({ env: { TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true', TESSERA_WEBHOOK_RETRY_DELAY_MS: '100' } });
    mkdirSync(MODULES, { recursive: true });
    const file = new URL(`events-ssf-receiver-${process.pid}.mjs`, MODULES);
    writeFileSync(file, code);
    process.env['PORT'] = '0';
    process.env['TESSERA_ISSUER'] = server.url;
    process.env['RECEIVER_CLIENT_ID'] = 'caep-receiver';
    receiver = (await import(file.href)) as SsfReceiverModule;
    if (!receiver.server.listening) await new Promise((resolve) => receiver.server.once('listening', resolve));
  });
  after(async () => {
    await server.close();
    await closeServer(receiver.server);
    for (const name of ['TESSERA_ISSUER', 'RECEIVER_CLIENT_ID']) delete process.env[name];
  });

  it('handles a user disabled on the server once, verified against the JWKS, and refuses a SET it cannot verify', async () => {
    const client = await server.addClient({
      id: 'caep-receiver',
      name: 'CAEP receiver',
      grantTypes: ['client_credentials'],
      scopes: ['ssf:manage'],
      redirectUris: [],
    });
    const token = (await (
      await fetch(`${server.url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${btoa(`${client.clientId}:${client.clientSecret}`)}` },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'ssf:manage' }),
      })
    ).json()) as { access_token: string };
    const url = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/caep`;
    const made = await fetch(`${server.url}/ssf/streams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: url },
        events_requested: ['https://schemas.openid.net/secevent/risc/event-type/account-disabled'],
      }),
    });
    assert.equal(made.status, 201);
    const ada = await server.addUser({ username: 'ada' });
    await setDisabled(manageDeps(server), 'ada', true);
    await until('the receiver to handle it', () => receiver.handled.length === 1, 5000);
    assert.deepEqual(receiver.handled[0], {
      type: 'https://schemas.openid.net/secevent/risc/event-type/account-disabled',
      event: {},
      subject: { format: 'iss_sub', iss: server.url, sub: ada.id },
    });

    // Signed by someone else: refused with RFC 8935's error.
    const { SignJWT, generateKeyPair } = await import('jose');
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await new SignJWT({ events: {} })
      .setProtectedHeader({ alg: 'RS256', typ: 'secevent+jwt', kid: 'not-ours' })
      .setIssuer(server.url)
      .setAudience('caep-receiver')
      .setJti('x')
      .sign(privateKey);
    const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/secevent+jwt' }, body: forged });
    assert.equal(refused.status, 400);
    assert.equal(((await refused.json()) as { err: string }).err, 'invalid_request');
    assert.equal(receiver.handled.length, 1);
  });
});

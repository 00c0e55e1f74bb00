/**
 * Shared Signals subjects (OpenID SSF 1.0 §8.1.3): on a transmitter whose streams hear of no
 * one until added (TESSERA_SSF_DEFAULT_SUBJECTS=NONE), a receiver adds a person by `iss_sub`
 * and removes them by `email`, with the stream endpoints' token; a polling stream is then sent
 * SETs about that person alone, and none after they are removed. Another receiver's stream is
 * 404, an unsupported subject format 400, a subject naming nobody the same 200 as one naming
 * someone (§9.1 Subject Probing).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { SSF_EVENTS } from '../src/core/ssf.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

describe('Shared Signals subjects: added and removed people', () => {
  let server: TestServer;
  let token: string;
  let otherToken: string;
  let streamId: string;

  async function ssf(method: string, path: string, body?: unknown, bearer: string | null = token): Promise<{ status: number; body: any; text: string }> {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? null : JSON.parse(text), text };
  }

  async function receiverToken(name: string): Promise<string> {
    const client = await server.addClient({ name, grantTypes: ['client_credentials'], scopes: ['ssf:manage'], redirectUris: [] });
    const discovered = await oidc.discovery(new URL(server.url), client.clientId, undefined, oidc.ClientSecretBasic(client.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    return (await oidc.clientCredentialsGrant(discovered, { scope: 'ssf:manage' })).access_token;
  }

  /** Who the SETs waiting on the stream are about (the OIDC `sub` of each), acknowledging them. */
  async function polledSubjects(): Promise<string[]> {
    const answer = await ssf('POST', `/ssf/poll/${streamId}`, { returnImmediately: true, maxEvents: 100 });
    assert.equal(answer.status, 200);
    const sets = answer.body.sets as Record<string, string>;
    if (Object.keys(sets).length > 0)
      assert.equal((await ssf('POST', `/ssf/poll/${streamId}`, { ack: Object.keys(sets), returnImmediately: true })).status, 200);
    return Object.values(sets).map((set) => (decodeJwt(set) as { sub_id: { sub: string } }).sub_id.sub);
  }

  before(async () => {
    server = await startTestServer({ env: { TESSERA_SSF_DEFAULT_SUBJECTS: 'NONE' } });
    token = await receiverToken('Subjects receiver');
    otherToken = await receiverToken('Another receiver');
    const created = await ssf('POST', '/ssf/streams', {
      delivery: { method: 'urn:ietf:rfc:8936' },
      events_requested: [SSF_EVENTS.ACCOUNT_DISABLED],
    });
    assert.equal(created.status, 201);
    streamId = created.body.stream_id;
  });
  after(async () => {
    await server.close();
  });

  it('publishes default_subjects NONE and the add and remove subject endpoints', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/ssf-configuration`)).json()) as Record<string, unknown>;
    assert.equal(metadata['default_subjects'], 'NONE');
    assert.equal(metadata['add_subject_endpoint'], `${server.url}/ssf/subjects:add`);
    assert.equal(metadata['remove_subject_endpoint'], `${server.url}/ssf/subjects:remove`);
  });

  it('sends SETs about the people added only, and none about one removed since', async () => {
    const ada = await server.addUser({ username: 'ada', email: 'ada@example.com' });
    await server.addUser({ username: 'bob' });
    await setDisabled(manageDeps(server), 'ada', true);
    assert.deepEqual(await polledSubjects(), [], 'no one added yet');

    const added = await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject: { format: 'iss_sub', iss: server.url, sub: ada.id }, verified: true });
    assert.equal(added.status, 200);
    assert.equal(added.text, '', '§8.1.3.2: an empty 200 OK');
    await setDisabled(manageDeps(server), 'ada', false);
    await setDisabled(manageDeps(server), 'ada', true);
    await setDisabled(manageDeps(server), 'bob', true);
    assert.deepEqual(await polledSubjects(), [ada.id], 'ada, added; bob, not');

    const removed = await ssf('POST', '/ssf/subjects:remove', { stream_id: streamId, subject: { format: 'email', email: 'ADA@example.com' } });
    assert.equal(removed.status, 204);
    await setDisabled(manageDeps(server), 'ada', false);
    await setDisabled(manageDeps(server), 'ada', true);
    assert.deepEqual(await polledSubjects(), [], 'ada, removed (her address compared without case)');
  });

  it("answers another receiver's stream 404, a format it does not read 400, no token 401, and a subject naming nobody as one naming someone", async () => {
    const subject = { format: 'iss_sub', iss: server.url, sub: 'nobody-here' };
    assert.equal((await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject }, otherToken)).status, 404);
    assert.equal((await ssf('POST', '/ssf/subjects:remove', { stream_id: streamId, subject }, otherToken)).status, 404);
    assert.equal((await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject }, null)).status, 401);
    const phone = await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject: { format: 'phone_number', phone_number: '+12065550100' } });
    assert.equal(phone.status, 400);
    assert.equal(phone.body.error, 'invalid_request');
    assert.match(phone.body.error_description, /subject\.format/);
    assert.equal((await ssf('POST', '/ssf/subjects:add', { stream_id: streamId })).status, 400, 'no subject');
    assert.equal((await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject, verified: 'yes' })).status, 400, 'verified not a boolean');
    assert.equal((await ssf('POST', '/ssf/subjects:add', { stream_id: streamId, subject })).status, 200, 'nobody: the same answer');
    assert.equal((await ssf('POST', '/ssf/subjects:remove', { stream_id: streamId, subject: { format: 'email', email: 'none@example.com' } })).status, 204);
    assert.ok(!(await server.store.ssf.subjects(streamId)).some((kept) => kept.userId === 'nobody-here'), 'nothing kept about nobody');
  });
});

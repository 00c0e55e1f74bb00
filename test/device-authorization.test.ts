import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../src/core/crypto.ts';
import { normalizeUserCode } from '../src/flows/device/user-code.ts';
import { DEVICE_GRANT, startDevice } from './helpers/device.ts';
import { basic, postForm, startTestServer, type TestClient, type TestServer } from './helpers/server.ts';

describe('the device authorization endpoint (RFC 8628 §3.1-3.2)', () => {
  let server: TestServer;
  let client: TestClient;
  let endpoint: string;
  let auth: Record<string, string>;

  before(async () => {
    server = await startTestServer();
    client = await server.addClient({ name: 'Living Room TV', scopes: ['openid', 'profile'] });
    endpoint = `${server.url}/oauth/device/authorization`;
    auth = { authorization: basic(client.clientId, client.clientSecret) };
  });
  after(() => server.close());

  function assertError(result: { status: number; headers: Headers; body: Record<string, unknown> }, status: number, error: string) {
    assert.equal(result.status, status, JSON.stringify(result.body));
    assert.equal(result.body['error'], error);
    assert.equal(typeof result.body['error_description'], 'string');
    assert.match(result.headers.get('content-type') ?? '', /application\/json/);
    assert.equal(result.headers.get('cache-control'), 'no-store');
  }

  it('answers with a device code, a user code, both verification URIs, a ten-minute lifetime and a 5 s interval, not cached', async () => {
    const result = await postForm(endpoint, { scope: 'openid profile' }, auth);
    assert.equal(result.status, 200);
    assert.equal(result.headers.get('cache-control'), 'no-store');
    assert.match(result.headers.get('content-type') ?? '', /application\/json/);
    const body = result.body;
    // 43 base64url characters: 256 bits.
    assert.match(body['device_code'] as string, /^[A-Za-z0-9_-]{43}$/);
    assert.match(body['user_code'] as string, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.equal(body['verification_uri'], `${server.url}/device`);
    assert.equal(body['verification_uri_complete'], `${server.url}/device?user_code=${body['user_code'] as string}`);
    assert.equal(body['expires_in'], 600);
    assert.equal(body['interval'], 5);
  });

  it('stores only a hash of the device code, with the scope, the client and where the request came from', async () => {
    const started = await startDevice(server, client, 'openid', { 'user-agent': 'TestTV/2.0' });
    const record = await server.store.devices.findByUserCode(normalizeUserCode(started.user_code)!, Date.now());
    assert.ok(record);
    assert.equal(record.deviceCodeHash, hashSecret(started.device_code));
    assert.notEqual(record.deviceCodeHash, started.device_code);
    assert.equal(record.clientId, client.clientId);
    assert.deepEqual(record.scope, ['openid']);
    assert.equal(record.status, 'pending');
    assert.equal(record.requestIp, '127.0.0.1');
    assert.equal(record.requestUserAgent, 'TestTV/2.0');
  });

  it('gives every request its own device code and user code', async () => {
    const started = await Promise.all(Array.from({ length: 20 }, () => startDevice(server, client)));
    assert.equal(new Set(started.map((one) => one.device_code)).size, 20);
    assert.equal(new Set(started.map((one) => one.user_code)).size, 20);
  });

  it('answers a request without client authentication with invalid_client, 401 and WWW-Authenticate', async () => {
    const result = await postForm(endpoint, { scope: 'openid' });
    assertError(result, 401, 'invalid_client');
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  it('answers a wrong client secret or an unknown client with invalid_client and 401', async () => {
    assertError(await postForm(endpoint, { scope: 'openid' }, { authorization: basic(client.clientId, 'wrong') }), 401, 'invalid_client');
    assertError(await postForm(endpoint, { scope: 'openid' }, { authorization: basic('nobody', 'x') }), 401, 'invalid_client');
  });

  it('answers a scope the client may not have, an unknown scope or no scope with invalid_scope', async () => {
    assertError(await postForm(endpoint, { scope: 'openid email' }, auth), 400, 'invalid_scope');
    assertError(await postForm(endpoint, { scope: 'openid admin' }, auth), 400, 'invalid_scope');
    assertError(await postForm(endpoint, {}, auth), 400, 'invalid_scope');
    assertError(await postForm(endpoint, { scope: 'openid\\' }, auth), 400, 'invalid_scope');
  });

  it('answers unauthorized_client when the client is not allowed the device grant', async () => {
    const browserOnly = await server.addClient({ grantTypes: ['authorization_code'] });
    assertError(await postForm(endpoint, { scope: 'openid' }, { authorization: basic(browserOnly.clientId, browserOnly.clientSecret) }), 400, 'unauthorized_client');
  });

  it('answers a repeated parameter, a missing body or a JSON body with invalid_request', async () => {
    assertError(await postForm(endpoint, 'scope=openid&scope=profile', auth), 400, 'invalid_request');
    const empty = await fetch(endpoint, { method: 'POST', headers: auth });
    assert.equal(empty.status, 400);
    assert.equal(((await empty.json()) as { error: string }).error, 'invalid_request');
    const asJson = await fetch(endpoint, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"scope":"openid"}' });
    assert.equal(asJson.status, 400);
    assert.equal(((await asJson.json()) as { error: string }).error, 'invalid_request');
  });

  it('is advertised in discovery with the device grant type', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.equal(metadata['device_authorization_endpoint'], endpoint);
    assert.ok((metadata['grant_types_supported'] as string[]).includes(DEVICE_GRANT));
    const rfc8414 = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(rfc8414['device_authorization_endpoint'], endpoint);
  });
});

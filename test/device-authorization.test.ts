import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../src/core/crypto.ts';
import { timedSecretKey } from '../src/core/timed-secret.ts';
import { normalizeUserCode } from '../src/flows/device/user-code.ts';
import { assertPollError, DEVICE_GRANT, poll, startDevice } from './helpers/device.ts';
import { deviceSignIn, OFFLINE_SCOPES, signInRaw, withRefresh, type DeviceTokens } from './helpers/lifecycle.ts';
import { basic, postForm, startTestServer, type TestClient, type TestServer, assertOAuthError } from './helpers/server.ts';

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

  it('answers with a device code, a user code, both verification URIs, a ten-minute lifetime and a 5 s interval, not cached', async () => {
    const result = await postForm(endpoint, { scope: 'openid profile' }, auth);
    assert.equal(result.status, 200);
    assert.equal(result.headers.get('cache-control'), 'no-store');
    assert.match(result.headers.get('content-type') ?? '', /application\/json/);
    const body = result.body;
    // The time it was made (base 36 milliseconds, nine characters), then 43 base64url characters: 256 bits.
    const [, made] = /^([0-9a-z]{9})[A-Za-z0-9_-]{43}$/.exec(body['device_code'] as string) ?? [];
    assert.ok(made, `device_code ${body['device_code'] as string}`);
    assert.ok(Math.abs(Date.now() - Number.parseInt(made, 36)) < 60_000, 'the prefix is the time the code was made');
    assert.match(body['user_code'] as string, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    assert.equal(body['verification_uri'], `${server.url}/device`);
    assert.equal(body['verification_uri_complete'], `${server.url}/device?user_code=${body['user_code'] as string}`);
    assert.equal(body['expires_in'], 600);
    assert.equal(body['interval'], 5);
  });

  it('stores only a hash of the device code after its time, with the scope, the client and where the request came from', async () => {
    const started = await startDevice(server, client, 'openid', { 'user-agent': 'TestTV/2.0' });
    const record = await server.store.devices.findByUserCode(normalizeUserCode(started.user_code)!, Date.now());
    assert.ok(record);
    assert.equal(record.deviceCodeHash, `${started.device_code.slice(0, 9)}${hashSecret(started.device_code)}`);
    assert.equal(record.deviceCodeHash.includes(started.device_code.slice(9)), false, 'the secret part is not stored');
    assert.equal(record.clientId, client.clientId);
    assert.deepEqual(record.scope, ['openid']);
    assert.equal(record.status, 'pending');
    assert.equal(record.requestIp, '127.0.0.1');
    assert.equal(record.requestUserAgent, 'TestTV/2.0');
  });

  it('stores each new device code under a key after those made before it, so that inserts go to the end of the index', async () => {
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) {
      const started = await startDevice(server, client);
      keys.push((await server.store.devices.findByUserCode(normalizeUserCode(started.user_code)!, Date.now()))!.deviceCodeHash);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    assert.deepEqual(keys.toSorted(), keys);
  });

  it('still answers the polls of a device code of the old form, stored under its bare hash', async () => {
    const started = await startDevice(server, client);
    const record = (await server.store.devices.findByUserCode(normalizeUserCode(started.user_code)!, Date.now()))!;
    // As a code made before the time prefix: 43 base64url characters, its key their SHA-256.
    const old = 'O'.repeat(43);
    assert.equal(await server.store.devices.create({ ...record, deviceCodeHash: hashSecret(old), userCode: 'BCDFBCDF' }), true);
    assertPollError(await poll(server, client, old), 'authorization_pending');
  });

  it('gives every request its own device code and user code', async () => {
    const started = await Promise.all(Array.from({ length: 20 }, () => startDevice(server, client)));
    assert.equal(new Set(started.map((one) => one.device_code)).size, 20);
    assert.equal(new Set(started.map((one) => one.user_code)).size, 20);
  });

  it('answers a request without client authentication with invalid_client, 401 and WWW-Authenticate', async () => {
    const result = await postForm(endpoint, { scope: 'openid' });
    assertOAuthError(result, 401, 'invalid_client');
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  it('answers a wrong client secret or an unknown client with invalid_client and 401', async () => {
    assertOAuthError(await postForm(endpoint, { scope: 'openid' }, { authorization: basic(client.clientId, 'wrong') }), 401, 'invalid_client');
    assertOAuthError(await postForm(endpoint, { scope: 'openid' }, { authorization: basic('nobody', 'x') }), 401, 'invalid_client');
  });

  it('answers a scope the client may not have, an unknown scope or no scope with invalid_scope', async () => {
    assertOAuthError(await postForm(endpoint, { scope: 'openid email' }, auth), 400, 'invalid_scope');
    assertOAuthError(await postForm(endpoint, { scope: 'openid admin' }, auth), 400, 'invalid_scope');
    assertOAuthError(await postForm(endpoint, {}, auth), 400, 'invalid_scope');
    assertOAuthError(await postForm(endpoint, { scope: 'openid\\' }, auth), 400, 'invalid_scope');
  });

  it('answers unauthorized_client when the client is not allowed the device grant', async () => {
    const browserOnly = await server.addClient({ grantTypes: ['authorization_code'] });
    assertOAuthError(
      await postForm(endpoint, { scope: 'openid' }, { authorization: basic(browserOnly.clientId, browserOnly.clientSecret) }),
      400,
      'unauthorized_client',
    );
  });

  it('answers a repeated parameter, a missing body or a JSON body with invalid_request', async () => {
    assertOAuthError(await postForm(endpoint, 'scope=openid&scope=profile', auth), 400, 'invalid_request');
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

describe('device authorization limits and policy (draft-ietf-oauth-cross-device-security)', () => {
  let server: TestServer;
  let client: TestClient;
  const log: Record<string, unknown>[] = [];

  before(async () => {
    server = await startTestServer({
      env: { TESSERA_TRUST_PROXY: 'true', TESSERA_DEVICE_AUTHORIZATIONS_PER_ADDRESS: '3', TESSERA_DEVICE_AUTHORIZATIONS_PER_CLIENT: '5' },
      log: (line) => log.push(line),
    });
    client = await server.addClient({ name: 'Lobby TV', public: true, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
  });
  after(() => server.close());

  const rows = () => {
    const db = new DatabaseSync(server.config.database, { readOnly: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM device_authorizations').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  const start = (ip: string) =>
    postForm(`${server.url}/oauth/device/authorization`, { client_id: client.clientId, scope: 'openid' }, { 'x-forwarded-for': ip });

  it('limits device authorizations per address: 429 with Retry-After, no record stored, one log line', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await start('192.0.2.1')).status, 200);
    const stored = rows();
    for (let i = 0; i < 4; i++) {
      const refused = await start('192.0.2.1');
      assert.equal(refused.status, 429);
      assert.equal(refused.body['error'], 'temporarily_unavailable');
      const wait = Number(refused.headers.get('retry-after'));
      assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
    }
    assert.equal(rows(), stored, 'refused requests wrote nothing');
    assert.equal(log.filter((line) => line['limit'] === 'address').length, 1, 'and were logged once');
    assert.equal((await start('192.0.2.2')).status, 200, 'another address is not refused');
  });

  it('limits device authorizations per client, whatever the address', async () => {
    // Four used above (refusals are not counted); one more from a fresh address reaches five.
    assert.equal((await start('198.51.100.1')).status, 200);
    const refused = await start('198.51.100.99');
    assert.equal(refused.status, 429);
    assert.match(refused.body['error_description'] as string, /from this client/);
  });
});

describe('the networks a client may start device authorizations from (--device-network)', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_TRUST_PROXY: 'true' } });
  });
  after(() => server.close());

  it('gives codes to a request from a registered network and unauthorized_client to one from elsewhere', async () => {
    const client = await server.addClient({ name: 'Lobby TV', grantTypes: [DEVICE_GRANT as never], deviceNetworks: ['192.0.2.0/24', '2001:db8:1::/48'] });
    const auth = { authorization: basic(client.clientId, client.clientSecret) };
    const from = (ip: string) => postForm(`${server.url}/oauth/device/authorization`, { scope: 'openid' }, { ...auth, 'x-forwarded-for': ip });
    assert.equal((await from('192.0.2.77')).status, 200);
    assert.equal((await from('2001:db8:1:2::3')).status, 200);
    for (const ip of ['198.51.100.77', '2001:db8:2::1']) {
      const refused = await from(ip);
      assert.equal(refused.status, 400, ip);
      assert.equal(refused.body['error'], 'unauthorized_client');
    }
  });
});

describe('shorter token lifetimes for device grants (TESSERA_DEVICE_ACCESS_TOKEN_TTL, TESSERA_DEVICE_REFRESH_TOKEN_TTL)', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_DEVICE_ACCESS_TOKEN_TTL: '600', TESSERA_DEVICE_REFRESH_TOKEN_TTL: '3600' } });
  });
  after(() => server.close());

  it('gives a device grant the device lifetimes, and a browser sign-in of the same client its own', async () => {
    const client = await server.addClient({ name: 'TV and web', grantTypes: withRefresh(), scopes: OFFLINE_SCOPES });
    const user = await server.addUser();
    const device = (await deviceSignIn(server, client, user, { scope: 'openid offline_access' })) as DeviceTokens & { expires_in: number };
    assert.equal(device.expires_in, 600);
    const refresh = await server.store.refreshTokens.find(timedSecretKey(device.refresh_token!));
    // An hour from the approval (a moment before the token was issued).
    const lifetime = refresh!.expiresAt - refresh!.createdAt;
    assert.ok(lifetime <= 3600 * 1000 && lifetime > 3590 * 1000, `${lifetime} ms`);
    const browser = await signInRaw(server, client, user, 'openid offline_access');
    assert.equal(browser['expires_in'], 3600);
    const browserRefresh = await server.store.refreshTokens.find(timedSecretKey(browser['refresh_token'] as string));
    assert.equal(browserRefresh!.expiresAt - browserRefresh!.createdAt, 30 * 86400 * 1000, 'the idle time, as before');
  });
});

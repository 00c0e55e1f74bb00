/**
 * The admin API (docs/admin-api.md) as an operator's program uses it: a client_credentials
 * token from openid-client for the resource <issuer>/admin, a client and a user created
 * through the API and signed in with in Chromium, the user disabled through the API and
 * their tokens refused at once, the events read a page at a time; scopes, RFC 9457 problems,
 * ETags, unknown fields, and the OpenAPI 3.1 document validated and complete.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { createClient } from '../src/flows/manage/clients.ts';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const ALL = 'admin:clients admin:users admin:resources admin:events admin:keys';

describe('the admin API', () => {
  let server: TestServer;
  let admin: string;
  let adminClientId: string;

  /** An admin token for a new admin client with `scope`, as an operator's program gets one. */
  async function adminToken(scope: string): Promise<{ token: string; clientId: string }> {
    const { client, secret } = await createClient(manageDeps(server), { client_name: `CI ${scope}`, grant_types: ['client_credentials'], scope });
    const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(secret!), { execute: [oidc.allowInsecureRequests] });
    const tokens = await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin` });
    return { token: tokens.access_token, clientId: client.id };
  }

  async function call(method: string, path: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: {
        ...(options.token === null ? {} : { authorization: `Bearer ${options.token ?? admin}` }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...options.headers,
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  }

  before(async () => {
    server = await startTestServer();
    ({ token: admin, clientId: adminClientId } = await adminToken(ALL));
  });
  after(() => server.close());

  it('answers no token with 401 and a Bearer challenge, another API\'s or a user\'s token with 401, too little scope with 403 insufficient_scope', async () => {
    const none = await call('GET', '/clients', { token: null });
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="tessera"$/);
    assert.match(none.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(none.body['status'], 401);

    const garbage = await call('GET', '/clients', { token: 'not.a.token' });
    assert.equal(garbage.status, 401);
    assert.match(garbage.headers.get('www-authenticate') ?? '', /error="invalid_token"/);

    const { token: reader } = await adminToken('admin:events:read');
    const refused = await call('POST', '/clients', { token: reader, body: { client_name: 'Nope', redirect_uris: [REDIRECT_URI] } });
    assert.equal(refused.status, 403);
    assert.match(refused.headers.get('www-authenticate') ?? '', /error="insufficient_scope".*scope="admin:clients"/);
    assert.equal((await call('GET', '/events?limit=1', { token: reader })).status, 200, 'it may read events');
    assert.equal((await call('GET', '/clients', { token: reader })).status, 403);
    assert.equal((await call('GET', '/clients', { token: admin })).status, 200);

    // An admin token is for the admin API only: UserInfo refuses it.
    const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${admin}` } });
    assert.equal(userinfo.status, 401);
  });

  it('gives a user a console role with PATCH: only a token holding everything the role allows may give or take it away', async () => {
    await server.addUser({ username: 'barbara' });
    const given = await call('PATCH', '/users/barbara', { body: { role: 'support' } });
    assert.equal(given.status, 200, JSON.stringify(given.body));
    assert.equal(given.body['role'], 'support');
    assert.equal((await call('GET', '/users/barbara')).body['role'], 'support');
    const { token: usersOnly } = await adminToken('admin:users');
    const refused = await call('PATCH', '/users/barbara', { token: usersOnly, body: { role: 'admin' } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body['field'], 'role');
    assert.equal((await call('PATCH', '/users/barbara', { token: usersOnly, body: { role: null } })).status, 403, 'nor take away a role it does not hold');
    assert.equal((await call('PATCH', '/users/barbara', { token: usersOnly, body: { name: 'Barbara Liskov' } })).status, 200, 'its other changes are made');
    assert.equal((await call('PATCH', '/users/barbara', { body: { role: 'root' } })).status, 400);
    const taken = await call('PATCH', '/users/barbara', { body: { role: null } });
    assert.equal(taken.body['role'], null);
  });

  it('creates a client and a user, who signs in with them in Chromium; disabling the user ends their tokens at once; the events name the admin client', { skip: chromiumUnavailable() }, async () => {
    const created = await call('POST', '/clients', { body: { client_name: 'Garden Planner', redirect_uris: [REDIRECT_URI], scope: 'openid profile' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const clientId = created.body['client_id'] as string;
    const clientSecret = created.body['client_secret'] as string;
    const user = await call('POST', '/users', { body: { username: 'ada', password: 'ada has a long password', name: 'Ada Lovelace' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));

    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.ClientSecretBasic(clientSecret), { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT_URI, scope: 'openid profile', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const page = await browser.newPage();
      const callback = new Promise<URL>((resolve) => {
        void page.route(`${REDIRECT_URI}**`, async (route) => {
          resolve(new URL(route.request().url()));
          await route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' });
        });
      });
      await page.goto(url.href);
      await page.getByLabel('Username').fill('ada');
      await page.getByLabel('Password').fill('ada has a long password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Approve' }).click();
      const tokens = await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the client'), { pkceCodeVerifier: verifier, expectedState: state });
      assert.equal(tokens.claims()?.sub, user.body['sub']);
      assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.body['sub'] as string))['name'], 'Ada Lovelace');

      const disabled = await call('POST', '/users/ada/disable');
      assert.deepEqual([disabled.status, disabled.body['changed']], [200, true]);
      await assert.rejects(oidc.fetchUserInfo(config, tokens.access_token, user.body['sub'] as string), 'the access token is refused at once');
    } finally {
      await browser?.close();
    }

    const first = await call('GET', `/events?client=${clientId}&limit=1`);
    assert.equal(first.status, 200);
    const page2 = await call('GET', `/events?client=${clientId}&limit=1&after=${first.body['next'] as string}`);
    assert.notDeepEqual(page2.body['events'], first.body['events'], 'the next page');
    const ours = await call('GET', `/events?type=user.disabled&limit=5`);
    const [event] = ours.body['events'] as { username: string; detail: Record<string, unknown> }[];
    assert.deepEqual([event?.username, event?.detail['admin_client'], event?.detail['by']], ['ada', adminClientId, 'operator']);
    const made = (await call('GET', `/events?type=client.created&client=${clientId}`)).body['events'] as { detail: Record<string, unknown> }[];
    assert.equal(made[0]?.detail['admin_client'], adminClientId);
  });

  it('refuses unknown fields, bounds paging, checks identifiers, and refuses a stale client update with 412', async () => {
    const unknown = await call('POST', '/clients', { body: { client_name: 'X', redirect_uris: [REDIRECT_URI], colour: 'blue' } });
    assert.deepEqual([unknown.status, unknown.body['field']], [400, 'colour']);
    assert.match(unknown.body['detail'] as string, /unknown field colour/);
    assert.match(unknown.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal((await call('GET', '/clients?limit=100000')).status, 400);
    assert.equal((await call('GET', '/clients?offset=-1')).status, 400);
    assert.equal((await call('GET', '/users/a%20b')).status, 400);
    assert.equal((await call('GET', '/clients/no-such-client')).status, 404);
    const rule = await call('POST', '/clients', { body: { client_name: 'X', redirect_uris: ['http://example.com/cb'] } });
    assert.deepEqual([rule.status, rule.body['field']], [400, 'redirect_uris']);

    const created = await call('POST', '/clients', { body: { client_name: 'Shared', redirect_uris: [REDIRECT_URI] } });
    const id = created.body['client_id'] as string;
    const read = await call('GET', `/clients/${id}`);
    const etag = read.headers.get('etag')!;
    assert.equal((await call('PATCH', `/clients/${id}`, { body: { client_name: 'No precondition' } })).status, 428);
    const one = await call('PATCH', `/clients/${id}`, { body: { client_name: 'Renamed by one' }, headers: { 'if-match': etag } });
    assert.deepEqual([one.status, one.body['client_name']], [200, 'Renamed by one']);
    const other = await call('PATCH', `/clients/${id}`, { body: { first_party: true }, headers: { 'if-match': etag } });
    assert.equal(other.status, 412, 'the second admin read the old version');
    assert.equal((await call('GET', `/clients/${id}`)).body['first_party'], undefined, 'nothing of the stale change was made');
  });

  it('serves an OpenAPI 3.1 document that validates and describes every admin route', async () => {
    const response = await fetch(`${server.url}/admin/v1/openapi.json`);
    assert.equal(response.status, 200);
    const document = (await response.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.equal(document.openapi, '3.1.0');
    const result = await new Validator().validate(document as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    const expected = [
      'GET /clients', 'POST /clients', 'GET /clients/{client_id}', 'PATCH /clients/{client_id}', 'DELETE /clients/{client_id}', 'POST /clients/{client_id}/secret', 'POST /clients/{client_id}/revoke-tokens',
      'GET /users', 'POST /users', 'GET /users/{username}', 'PATCH /users/{username}', 'DELETE /users/{username}', 'POST /users/{username}/disable', 'POST /users/{username}/enable',
      'PUT /users/{username}/password', 'POST /users/{username}/reset-link', 'POST /users/{username}/reset-second-factor', 'GET /users/{username}/sessions', 'DELETE /users/{username}/sessions',
      'GET /users/{username}/grants', 'DELETE /grants/{grant_id}', 'GET /lockouts', 'DELETE /lockouts',
      'GET /resources', 'POST /resources', 'GET /resources/{identifier}', 'DELETE /resources/{identifier}', 'GET /events', 'GET /keys', 'POST /keys/rotate',
    ];
    assert.deepEqual(documented.sort(), expected.sort());
    for (const entry of documented) {
      const [method, path] = entry.split(' ') as [string, string];
      assert.ok(server.app.hasRoute({ method: method as 'GET', url: `/admin/v1${path.replace(/\{([a-z_]+)\}/g, ':$1')}` }), `${entry} is a route the server has`);
    }
  });

  it('manages resources, keys, lockouts and secrets through the same operations as the command', async () => {
    const made = await call('POST', '/resources', { body: { identifier: 'https://api.example.com', name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal((await call('GET', `/resources/${encodeURIComponent('https://api.example.com')}`)).body['name'], 'Photos');
    const taken = await call('POST', '/resources', { body: { identifier: 'https://api.example.com', name: 'Again', scopes: [{ name: 'x:read', description: 'X' }] } });
    assert.equal(taken.status, 409);
    const keys = await call('GET', '/keys');
    assert.ok((keys.body['keys'] as { kid: string; d?: string }[]).every((key) => key.kid && key.d === undefined));
    assert.equal((await call('POST', '/keys/rotate')).status, 200);
    assert.equal((await call('GET', '/lockouts')).status, 200);
    assert.equal((await call('DELETE', '/lockouts')).status, 400);
    const client = await call('POST', '/clients', { body: { client_name: 'Rotating', redirect_uris: [REDIRECT_URI] } });
    const rotated = await call('POST', `/clients/${client.body['client_id'] as string}/secret`, { body: { grace_seconds: 0 } });
    assert.match(rotated.body['client_secret'] as string, /^[A-Za-z0-9_-]{43}$/);
    assert.equal((await call('DELETE', `/clients/${client.body['client_id'] as string}`)).status, 204);
    assert.equal((await call('DELETE', `/clients/${client.body['client_id'] as string}`)).status, 404);
  });

  it("ends an admin client's own tokens when they are revoked", async () => {
    const { token, clientId } = await adminToken('admin:keys:read');
    assert.equal((await call('GET', '/keys', { token })).status, 200);
    assert.equal((await call('POST', `/clients/${clientId}/revoke-tokens`)).status, 204);
    assert.equal((await call('GET', '/keys', { token })).status, 401);
  });
});

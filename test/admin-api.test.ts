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
import { GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { updateUser as updateAccount } from '../src/flows/users.ts';
import { chromiumUnavailable, launchChromium, signInAt } from './helpers/chromium.ts';
import { runTessera } from './helpers/cli.ts';
import { assertPollError, BrowserAt, poll, startDevice, text } from './helpers/device.ts';
import { discover, OFFLINE_SCOPES, refreshRaw, signIn, withRefresh } from './helpers/lifecycle.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';
import { adminToken as adminTokenFor, appConfig, pkceRequest } from './helpers/fixtures.ts';
import { within } from './helpers/wait.ts';

const ALL = 'admin:clients admin:users admin:resources admin:events admin:keys admin:providers admin:webhooks admin:saml admin:orgs';

describe('the admin API', () => {
  let server: TestServer;
  let admin: string;
  let adminClientId: string;

  /** An admin token for a new admin client with `scope`, as an operator's program gets one. */
  const adminToken = (scope: string) => adminTokenFor(server, scope);

  async function call(method: string, path: string, options: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) {
    // A change to a user names the version it was made against, as the API asks (unless the test sends its own).
    const versioned = method === 'PATCH' && path.startsWith('/users/') && options.headers?.['if-match'] === undefined;
    const etag = versioned ? (await fetch(`${server.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${admin}` } })).headers.get('etag') : null;
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: {
        ...(etag ? { 'if-match': etag } : {}),
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

  it("answers no token with 401 and a Bearer challenge, another API's or a user's token with 401, too little scope with 403 insufficient_scope", async () => {
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

    // And the admin API takes no other token (RFC 8707 §2): an API's, a person's.
    await addResource(manageDeps(server), {
      identifier: 'https://reports.example',
      name: 'Reports',
      scopes: [{ name: 'reports:read', description: 'Read reports' }],
    });
    const { client: worker, secret } = await createClient(manageDeps(server), {
      client_name: 'Reports worker',
      grant_types: ['client_credentials'],
      scope: 'reports:read',
    });
    const workerConfig = await oidc.discovery(new URL(server.url), worker.id, undefined, oidc.ClientSecretBasic(secret!), {
      execute: [oidc.allowInsecureRequests],
    });
    const apiToken = (await oidc.clientCredentialsGrant(workerConfig, { resource: 'https://reports.example' })).access_token;
    const person = await server.addUser();
    const app = await server.addClient({ scopes: ['openid'] });
    const userToken = (await signIn(server, await discover(server, app), person, 'openid')).access_token;
    for (const [whose, token] of [
      ["an API's", apiToken],
      ["a person's", userToken],
    ]) {
      const other = await call('GET', '/clients', { token });
      assert.equal(other.status, 401, whose);
      assert.match(other.headers.get('www-authenticate') ?? '', /error="invalid_token"/, whose);
    }
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
    // Nor change a person whose role allows more than it holds; it changes those without one.
    assert.equal(
      (await call('PATCH', '/users/barbara', { token: usersOnly, body: { name: 'Barbara Liskov' } })).status,
      403,
      'an operator is changed only by a token holding her role',
    );
    await server.addUser({ username: 'barney' });
    assert.equal((await call('PATCH', '/users/barney', { token: usersOnly, body: { name: 'Barney Rubble' } })).status, 200, 'a person without a role');
    assert.equal((await call('PATCH', '/users/barbara', { body: { role: 'root' } })).status, 400);
    const taken = await call('PATCH', '/users/barbara', { body: { role: null } });
    assert.equal(taken.body['role'], null);
  });

  it('creates a client and a user, who signs in with them in Chromium; disabling the user ends their tokens at once; the events name the admin client', {
    skip: chromiumUnavailable(),
  }, async () => {
    const created = await call('POST', '/clients', { body: { client_name: 'Garden Planner', redirect_uris: [REDIRECT_URI], scope: 'openid profile' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const clientId = created.body['client_id'] as string;
    const clientSecret = created.body['client_secret'] as string;
    const user = await call('POST', '/users', { body: { username: 'ada', password: 'ada has a long password', name: 'Ada Lovelace' } });
    assert.equal(user.status, 201, JSON.stringify(user.body));

    const config = await appConfig(server, { clientId, clientSecret });
    const state = oidc.randomState();
    const { url, verifier } = await pkceRequest(config, { scope: 'openid profile', state });
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const { page, callback } = await signInAt(browser, url, { username: 'ada', password: 'ada has a long password' });
      await page.getByRole('button', { name: 'Approve' }).click();
      const tokens = await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the client'), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
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
    // An admin client is delegated to: the URLs the server will request go nowhere on its own
    // machine (only the tessera command, the owner, may name loopback), as a webhook's.
    for (const [name, url] of [
      ['backchannel_logout_uri', 'http://127.0.0.1:8080/logout'],
      ['jwks_uri', 'http://localhost:8080/jwks'],
    ] as const) {
      const inward = await call('POST', '/clients', { body: { client_name: 'Inward', redirect_uris: [REDIRECT_URI], [name]: url } });
      assert.equal(inward.status, 400, `${name}: ${JSON.stringify(inward.body)}`);
      assert.match(String(inward.body['detail']), /loopback address/);
    }

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
    // RFC 9110 §13.1.1: If-Match compares strongly; a weak tag never matches, even the current version's.
    const current = (await call('GET', `/clients/${id}`)).headers.get('etag')!;
    assert.equal((await call('PATCH', `/clients/${id}`, { body: { client_name: 'Weak' }, headers: { 'if-match': `W/${current}` } })).status, 412);
  });

  it('refuses a user change without If-Match (428), against a version changed since (412), or with a weak tag (412)', async () => {
    await server.addUser({ username: 'grace' });
    const read = await call('GET', '/users/grace');
    const etag = read.headers.get('etag')!;
    assert.match(etag, /^"\d+"$/);
    const none = await fetch(`${server.url}/admin/v1/users/grace`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'No precondition' }),
    });
    assert.equal(none.status, 428);
    assert.equal((await call('PATCH', '/users/grace', { body: { name: 'Weak' }, headers: { 'if-match': `W/${etag}` } })).status, 412);
    const one = await call('PATCH', '/users/grace', { body: { name: 'Grace Hopper' }, headers: { 'if-match': etag } });
    assert.deepEqual([one.status, one.body['name']], [200, 'Grace Hopper']);
    assert.notEqual(one.headers.get('etag'), etag, 'a new version');
    const two = await call('PATCH', '/users/grace', { body: { email: 'stale@example.com' }, headers: { 'if-match': etag } });
    assert.equal(two.status, 412, 'made against the version before the first change');
    assert.equal((await call('GET', '/users/grace')).body['email'], 'grace@example.com', 'nothing of the stale change was made');
    const [first, second] = await Promise.all([
      call('PATCH', '/users/grace', { body: { given_name: 'One' }, headers: { 'if-match': one.headers.get('etag')! } }),
      call('PATCH', '/users/grace', { body: { given_name: 'Two' }, headers: { 'if-match': one.headers.get('etag')! } }),
    ]);
    assert.deepEqual([first.status, second.status].sort(), [200, 412], 'of two changes made against one version, one is made');
    // Two changes that both read one version before either wrote: the second write is refused by the store's conditional statement.
    const read1 = (await server.store.users.findByUsername('grace'))!;
    assert.equal(await updateAccount(manageDeps(server), read1, { givenName: 'Three' }, undefined, read1.updatedAt), true);
    assert.equal(await updateAccount(manageDeps(server), read1, { givenName: 'Four' }, undefined, read1.updatedAt), false);
    assert.equal((await server.store.users.findByUsername('grace'))?.givenName, 'Three');
  });

  it('serves an OpenAPI 3.1 document that validates and describes every admin route, to admin clients only on the public listener', async () => {
    const anonymous = await fetch(`${server.url}/admin/v1/openapi.json`);
    assert.equal(anonymous.status, 401, 'not mapped out for whoever probes');
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);
    const { token: reader } = await adminToken('admin:events:read');
    const response = await fetch(`${server.url}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${reader}` } });
    assert.equal(response.status, 200, 'any admin scope reads it');
    const document = (await response.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    assert.equal(document.openapi, '3.1.0');
    const result = await new Validator().validate(document as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors));
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const expected = [
      'GET /clients',
      'POST /clients',
      'GET /clients/{client_id}',
      'PATCH /clients/{client_id}',
      'DELETE /clients/{client_id}',
      'POST /clients/{client_id}/secret',
      'POST /clients/{client_id}/revoke-tokens',
      'GET /users',
      'POST /users',
      'GET /users/{username}',
      'PATCH /users/{username}',
      'DELETE /users/{username}',
      'POST /users/{username}/disable',
      'POST /users/{username}/enable',
      'PUT /users/{username}/password',
      'POST /users/{username}/reset-link',
      'POST /users/{username}/reset-second-factor',
      'GET /users/{username}/sessions',
      'DELETE /users/{username}/sessions',
      'GET /users/{username}/grants',
      'DELETE /grants/{grant_id}',
      'GET /lockouts',
      'DELETE /lockouts',
      'POST /invitations',
      'GET /resources',
      'POST /resources',
      'GET /resources/{identifier}',
      'PATCH /resources/{identifier}',
      'DELETE /resources/{identifier}',
      'GET /events',
      'GET /keys',
      'POST /keys/rotate',
      'GET /devices',
      'POST /devices/{user_code}/deny',
      'POST /registration-tokens',
      'GET /registration-tokens',
      'DELETE /registration-tokens/{id}',
      'GET /providers',
      'POST /providers',
      'GET /providers/{id}',
      'PATCH /providers/{id}',
      'DELETE /providers/{id}',
      'GET /webhooks',
      'POST /webhooks',
      'GET /webhooks/{id}',
      'DELETE /webhooks/{id}',
      'POST /webhooks/{id}/secret',
      'GET /webhooks/{id}/deliveries',
      'POST /webhooks/{id}/replay',
      'GET /ssf/streams/{id}/deliveries',
      'POST /ssf/streams/{id}/replay',
      'GET /mail/deliveries',
      'POST /mail/replay',
      'GET /scim-tokens',
      'POST /scim-tokens',
      'GET /scim-tokens/{id}',
      'DELETE /scim-tokens/{id}',
      'GET /trusted-issuers',
      'POST /trusted-issuers',
      'GET /trusted-issuers/{issuer}',
      'DELETE /trusted-issuers/{issuer}',
      'GET /saml/service-providers',
      'POST /saml/service-providers',
      'GET /saml/service-providers/{id}',
      'PATCH /saml/service-providers/{id}',
      'DELETE /saml/service-providers/{id}',
      'GET /organizations',
      'POST /organizations',
      'GET /organizations/{id}',
      'PATCH /organizations/{id}',
      'DELETE /organizations/{id}',
      'GET /organizations/{id}/members',
      'PUT /organizations/{id}/members/{username}',
      'DELETE /organizations/{id}/members/{username}',
    ];
    assert.deepEqual(documented.sort(), expected.sort());
    for (const entry of documented) {
      const [method, path] = entry.split(' ') as [string, string];
      assert.ok(
        server.app.hasRoute({ method: method as 'GET', url: `/admin/v1${path.replace(/\{([a-z_]+)\}/g, ':$1')}` }),
        `${entry} is a route the server has`,
      );
    }
  });

  it('manages resources, keys, lockouts and secrets through the same operations as the command', async () => {
    const made = await call('POST', '/resources', {
      body: { identifier: 'https://api.example.com', name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal((await call('GET', `/resources/${encodeURIComponent('https://api.example.com')}`)).body['name'], 'Photos');
    const taken = await call('POST', '/resources', {
      body: { identifier: 'https://api.example.com', name: 'Again', scopes: [{ name: 'x:read', description: 'X' }] },
    });
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

  it('refuses an e-mail address another account has, in any case, with 409 naming the field, at POST and PATCH', async () => {
    const first = await call('POST', '/users', { body: { username: 'mail-holder', password: 'holder has a long password', email: 'held@example.com' } });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const second = await call('POST', '/users', { body: { username: 'mail-taker', password: 'taker has a long password', email: 'Held@Example.com' } });
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.match(second.body['detail'] as string, /^email Held@Example\.com: another account has this e-mail address$/);
    assert.equal((await call('GET', '/users/mail-taker')).status, 404, 'nothing was made');
    assert.equal((await call('POST', '/users', { body: { username: 'mail-mover', password: 'mover has a long password' } })).status, 201);
    const moved = await call('PATCH', '/users/mail-mover', { body: { email: 'HELD@example.com' } });
    assert.equal(moved.status, 409, JSON.stringify(moved.body));
    assert.match(moved.body['detail'] as string, /^email HELD@example\.com: another account has this e-mail address$/);
    assert.equal((await call('GET', '/users/mail-mover')).body['email'], null, 'nothing was written');
  });

  it('refuses a name or description holding a line break, ESC or a bidirectional override with 400, naming the field', async () => {
    assert.equal((await call('POST', '/users', { body: { username: 'named', password: 'named has a long password' } })).status, 201);
    const forged = ['Ada\nsignin.succeeded user=admin', 'Ada\u001b[2K', 'Ada\u202Egnp.exe', 'Ada\u2028Lovelace'];
    for (const name of forged) {
      const cases: [string, string, unknown, RegExp][] = [
        [
          'POST',
          '/users',
          { username: 'forger', password: 'forger has a long password', name },
          /^name must not contain control or bidirectional formatting characters/,
        ],
        ['PATCH', '/users/named', { family_name: name }, /^family_name must not contain control/],
        ['PATCH', '/users/named', { localized_names: { 'ja-Kana-JP': { name } } }, /^name#ja-Kana-JP must not contain control/],
        ['POST', '/clients', { client_name: name, redirect_uris: [REDIRECT_URI] }, /^client_name must not contain control/],
        ['POST', '/providers', { kind: 'oidc', name, issuer: 'https://sso.example.com', client_id: 'tessera' }, /^name must not contain control/],
        [
          'POST',
          '/resources',
          { identifier: 'https://forged.example.com', name, scopes: [{ name: 'forged:read', description: 'See it' }] },
          /^name must not contain control/,
        ],
        [
          'POST',
          '/resources',
          { identifier: 'https://forged.example.com', name: 'Forged', scopes: [{ name: 'forged:read', description: name }] },
          /^scopes forged:read: the description must not contain control/,
        ],
      ];
      for (const [method, path, body, detail] of cases) {
        const refused = await call(method, path, { body });
        assert.equal(refused.status, 400, `${method} ${path} ${JSON.stringify(body)}`);
        assert.match(refused.body['detail'] as string, detail);
      }
    }
    assert.equal((await call('GET', '/users/forger')).status, 404, 'nothing was made');
    // The joiners Persian and emoji need are not among them.
    const persian = await call('PATCH', '/users/named', { body: { localized_names: { fa: { name: 'آدا\u200Cلاولیس' } } } });
    assert.equal(persian.status, 200, JSON.stringify(persian.body));
  });

  it('manages upstream identity providers through the operations the command calls, never answering a secret', async () => {
    const made = await call('POST', '/providers', {
      body: {
        kind: 'oidc',
        name: 'Corp SSO',
        issuer: 'https://sso.example.com',
        client_id: 'tessera',
        client_secret: 'the upstream secret',
        allowed_domains: ['example.com'],
      },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.headers.get('location'), '/admin/v1/providers/corp-sso');
    assert.equal(made.body['redirect_uri'], `${server.url}/login/upstream/corp-sso/callback`);
    assert.equal(made.body['client_secret_set'], true);
    assert.doesNotMatch(JSON.stringify(made.body), /the upstream secret/);
    const stored = await server.store.identityProviders.get('corp-sso');
    assert.doesNotMatch(JSON.stringify(stored), /the upstream secret/, 'sealed at rest');
    const changed = await call('PATCH', '/providers/corp-sso', { body: { name: 'Corp', only: true } });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(changed.body['only'], true);
    // An upstream's own "mfa" counts here only when the operator says so, per provider.
    assert.equal(made.body['trust_upstream_mfa'], false);
    const trusted = await call('PATCH', '/providers/corp-sso', { body: { trust_upstream_mfa: true } });
    assert.equal(trusted.body['trust_upstream_mfa'], true);
    assert.equal((await server.store.identityProviders.get('corp-sso'))?.settings['trustUpstreamMfa'], true);
    const github = await call('POST', '/providers', { body: { kind: 'github', name: 'Hub', client_id: 'x', client_secret: 'y', trust_upstream_mfa: true } });
    assert.equal(github.status, 400, 'GitHub says nothing of how the person signed in');
    assert.equal(github.body['field'], 'trust_upstream_mfa');
    assert.equal(Array.isArray((await call('GET', '/providers')).body['providers']), true);
    // The same rules as the command: a kind's fields only, a filter that parses.
    const wrong = await call('POST', '/providers', {
      body: { kind: 'ldap', name: 'Dir', url: 'ldap://127.0.0.1:1', user_search_base: 'dc=x', user_filter: '(uid={username}' },
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body['field'], 'user_filter');
    const { token: reader } = await adminToken('admin:providers:read');
    assert.equal((await call('GET', '/providers/corp-sso', { token: reader })).status, 200);
    assert.equal((await call('DELETE', '/providers/corp-sso', { token: reader })).status, 403);
    assert.equal((await call('DELETE', '/providers/corp-sso')).status, 204);
    assert.equal((await call('GET', '/providers/corp-sso')).status, 404);
  });

  it('lists the device requests waiting for a person and denies one suspected of phishing, in the API and the command', async () => {
    const tv = await server.addClient({ name: 'Living Room TV', grantTypes: [GRANT_DEVICE_CODE] });
    const suspect = await startDevice(server, tv, 'openid profile', { 'user-agent': 'PhishKit/1.0' });
    const other = await startDevice(server, tv, 'openid', { 'user-agent': 'LivingRoomTV/2.1' });
    const listed = await call('GET', '/devices');
    assert.equal(listed.status, 200);
    const devices = listed.body['devices'] as Record<string, unknown>[];
    const entry = devices.find((device) => device['user_code'] === suspect.user_code);
    assert.deepEqual(
      [entry?.['client_id'], entry?.['client_name'], entry?.['scope'], entry?.['user_agent']],
      [tv.clientId, 'Living Room TV', 'openid profile', 'PhishKit/1.0'],
    );
    assert.ok(!JSON.stringify(listed.body).includes(suspect.device_code), 'never the device code');
    const { token: reader } = await adminToken('admin:users:read');
    assert.equal((await call('GET', '/devices', { token: reader })).status, 200);
    assert.equal((await call('POST', `/devices/${suspect.user_code}/deny`, { token: reader })).status, 403);

    // As the person reported it: lower case, without the dash.
    const typed = suspect.user_code.replace('-', '').toLowerCase();
    const denied = await call('POST', `/devices/${typed}/deny`, { body: { reason: 'code sent in a phishing e-mail' } });
    assert.deepEqual([denied.status, denied.body['user_code'], denied.body['status']], [200, suspect.user_code, 'denied'], JSON.stringify(denied.body));
    assertPollError(await poll(server, tv, suspect.device_code), 'access_denied');
    const entered = await new BrowserAt(server.url).enterCode(suspect.user_code);
    assert.equal(entered.status, 400, 'nobody can approve it any more');
    assert.match(text(entered), /This code has already been used/);
    const twice = await call('POST', `/devices/${suspect.user_code}/deny`);
    assert.equal(twice.status, 409, JSON.stringify(twice.body));
    assert.equal((await call('POST', '/devices/BCDF-GHJK/deny')).status, 404);
    const malformed = await call('POST', '/devices/not-a-code/deny');
    assert.deepEqual([malformed.status, malformed.body['field']], [400, 'user_code']);
    assert.equal((await call('POST', `/devices/${other.user_code}/deny`, { body: { reason: 'line\nbreak' } })).status, 400);
    const [event] = (await call('GET', `/events?type=device.denied&client=${tv.clientId}&limit=1`)).body['events'] as { detail: Record<string, unknown> }[];
    assert.deepEqual(
      [event?.detail['by'], event?.detail['reason'], event?.detail['admin_client']],
      ['operator', 'code sent in a phishing e-mail', adminClientId],
    );
    assert.ok(
      !((await call('GET', '/devices')).body['devices'] as Record<string, unknown>[]).some((device) => device['user_code'] === suspect.user_code),
      'no longer waiting',
    );

    // The command: the same operations.
    const env = { TESSERA_DATABASE: server.config.database };
    const list = await runTessera(['device', 'list', '--json'], env);
    assert.equal(list.code, 0, list.stderr);
    assert.ok((JSON.parse(list.stdout) as { user_code: string }[]).some((device) => device.user_code === other.user_code));
    const deny = await runTessera(['device', 'deny', other.user_code], env);
    assert.equal(deny.code, 0, deny.stderr);
    assertPollError(await poll(server, tv, other.device_code), 'access_denied');
    const again = await runTessera(['device', 'deny', other.user_code], env);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already denied/);
    assert.equal((await runTessera(['device', 'deny', 'nonsense'], env)).code, 2);
  });

  it("revokes every token people got through a client, and the client's own, and keeps the client", async () => {
    const app = await server.addClient({ name: 'Leaky App', grantTypes: withRefresh(), scopes: OFFLINE_SCOPES });
    const [alice, bob] = [await server.addUser(), await server.addUser()];
    const config = await discover(server, app);
    const aliceTokens = await signIn(server, config, alice, 'openid offline_access');
    const bobTokens = await signIn(server, config, bob, 'openid offline_access');
    const bystander = await server.addClient({ name: 'Other App', grantTypes: withRefresh(), scopes: OFFLINE_SCOPES });
    const otherTokens = await signIn(server, await discover(server, bystander), alice, 'openid offline_access');

    const revoked = await call('POST', `/clients/${app.clientId}/revoke-tokens`);
    assert.deepEqual([revoked.status, revoked.body['grants_revoked']], [200, 2], JSON.stringify(revoked.body));
    for (const tokens of [aliceTokens, bobTokens]) {
      await assert.rejects(oidc.fetchUserInfo(config, tokens.access_token, oidc.skipSubjectCheck), 'the access token is refused at once');
      assert.equal((await refreshRaw(server, app, tokens.refresh_token!)).body['error'], 'invalid_grant');
    }
    assert.equal((await refreshRaw(server, bystander, otherTokens.refresh_token!)).status, 200, "another client's tokens are untouched");
    assert.equal((await call('GET', `/clients/${app.clientId}`)).status, 200, 'the client stays registered');
    await signIn(server, config, alice, 'openid');
    const events = (await call('GET', `/events?type=grant.revoked&client=${app.clientId}`)).body['events'] as { detail: Record<string, unknown> }[];
    assert.equal(events.length, 2);
    assert.ok(events.every((event) => event.detail['by'] === 'operator' && event.detail['admin_client'] === adminClientId));
    assert.equal((await call('POST', '/clients/no-such-client/revoke-tokens')).status, 404);

    // The command, the same operation: Alice's new sign-in (one remembered grant) ends too.
    const again = await signIn(server, config, alice, 'openid offline_access');
    const cli = await runTessera(['client', 'revoke-tokens', app.clientId], { TESSERA_DATABASE: server.config.database });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /those of 1 grant /);
    assert.equal((await refreshRaw(server, app, again.refresh_token!)).body['error'], 'invalid_grant');
  });

  it("changes an API's name, scopes and token lifetime; refuses removing a scope a client is registered with", async () => {
    const identifier = 'https://calendar.example.com';
    const path = `/resources/${encodeURIComponent(identifier)}`;
    assert.equal(
      (await call('POST', '/resources', { body: { identifier, name: 'Calendar', scopes: [{ name: 'calendar:read', description: 'See your calendar' }] } }))
        .status,
      201,
    );
    const grown = await call('PATCH', path, {
      body: {
        name: 'Team Calendar',
        scopes: [
          { name: 'calendar:read', description: 'See your team calendar' },
          { name: 'calendar:write', description: 'Change your calendar' },
        ],
        access_token_ttl: 600,
      },
    });
    assert.equal(grown.status, 200, JSON.stringify(grown.body));
    assert.deepEqual(
      [grown.body['name'], grown.body['access_token_ttl'], grown.body['scopes']],
      [
        'Team Calendar',
        600,
        [
          { name: 'calendar:read', description: 'See your team calendar' },
          { name: 'calendar:write', description: 'Change your calendar' },
        ],
      ],
    );
    assert.deepEqual((await call('GET', path)).body['scopes'], grown.body['scopes'], 'as stored');
    // The new scope is one a client can now be registered with.
    const client = await call('POST', '/clients', { body: { client_name: 'Scheduler', redirect_uris: [REDIRECT_URI], scope: 'openid calendar:write' } });
    assert.equal(client.status, 201, JSON.stringify(client.body));

    const removing = await call('PATCH', path, { body: { scopes: [{ name: 'calendar:read', description: 'See your calendar' }] } });
    assert.equal(removing.status, 409);
    assert.match(removing.body['detail'] as string, new RegExp(`calendar:write is in the registration of client ${client.body['client_id'] as string}`));
    assert.equal(((await call('GET', path)).body['scopes'] as unknown[]).length, 2, 'nothing changed');
    const taken = await call('PATCH', path, {
      body: {
        scopes: [
          { name: 'calendar:read', description: 'x' },
          { name: 'calendar:write', description: 'y' },
          { name: 'openid', description: 'z' },
        ],
      },
    });
    assert.deepEqual([taken.status, taken.body['field']], [400, 'scopes']);
    assert.equal((await call('PATCH', path, { body: { colour: 'red' } })).status, 400);
    assert.equal((await call('PATCH', path, { body: {} })).status, 400);
    assert.equal((await call('PATCH', path, { body: { access_token_ttl: 5 } })).status, 400);
    assert.equal((await call('PATCH', `/resources/${encodeURIComponent('https://nowhere.example')}`, { body: { name: 'X' } })).status, 404);
    const cli = await runTessera(['resource', 'update', identifier, '--name', 'Calendar', '--default-access-token-ttl', '--json'], {
      TESSERA_DATABASE: server.config.database,
    });
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual([JSON.parse(cli.stdout).name, JSON.parse(cli.stdout).access_token_ttl], ['Calendar', null]);
  });

  it("ends an admin client's own tokens when they are revoked", async () => {
    const { token, clientId } = await adminToken('admin:keys:read');
    assert.equal((await call('GET', '/keys', { token })).status, 200);
    assert.equal((await call('POST', `/clients/${clientId}/revoke-tokens`)).status, 200);
    assert.equal((await call('GET', '/keys', { token })).status, 401);
  });
});

describe('the admin API and the password queue', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      env: {
        // A hash that takes a while, so that calls really wait for the one thread.
        TESSERA_PASSWORD_HASH: 'm=65536,t=2,p=1',
        TESSERA_PASSWORD_HASH_THREADS: '1',
        TESSERA_SIGN_IN_QUEUE: '3',
        TESSERA_SIGN_IN_QUEUE_PER_ADDRESS: '2',
      },
    });
  });
  after(() => server.close());

  it('hashes the passwords it sets on the password queue, not on the threads that sign tokens: beyond the share of the address, 503 with Retry-After', async () => {
    const { client, secret } = await createClient(manageDeps(server), { client_name: 'CI', grant_types: ['client_credentials'], scope: 'admin:users' });
    const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(secret!), { execute: [oidc.allowInsecureRequests] });
    const { access_token: token } = await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin` });
    const user = await server.addUser();
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        fetch(`${server.url}/admin/v1/users/${user.username}/password`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ password: `a new long password ${i}` }),
        }),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [204, 204, 503, 503, 503]);
    for (const refused of answers.filter((answer) => answer.status === 503)) {
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
    }
  });
});

/**
 * A narrow admin credential never grows into a wider one
 * (flows/manage/authority.ts). Each case is what the attack run did, through the admin API as
 * an operator's program calls it, with tokens from openid-client; and the console's roles
 * through the same operations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { ROLE_SCOPES } from '../src/core/scopes.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { ManageError } from '../src/flows/manage/errors.ts';
import { resetLink, resetUserSecondFactor, setDisabled, updateUser } from '../src/flows/manage/users.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';

const ALL = 'admin:clients admin:users admin:resources admin:events admin:keys admin:providers admin:webhooks admin:saml admin:orgs';

describe('admin credentials that cannot grow themselves', () => {
  let server: TestServer;
  let owner: string;

  async function adminClient(scope: string): Promise<{ token: string; clientId: string; secret: string }> {
    const { client, secret } = await createClient(manageDeps(server), { client_name: `CI ${scope}`, grant_types: ['client_credentials'], scope });
    return { token: await tokenFor(client.id, secret!), clientId: client.id, secret: secret! };
  }

  async function tokenFor(clientId: string, secret: string, scope?: string): Promise<string> {
    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    return (await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin`, ...(scope === undefined ? {} : { scope }) })).access_token;
  }

  async function call(method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
  }

  /** A PATCH with the ETag just read, as a careful program sends it. */
  async function patch(path: string, token: string, body: unknown) {
    const etag = (await call('GET', path, owner)).headers.get('etag') ?? '"0"';
    return call('PATCH', path, token, body, { 'if-match': etag });
  }

  before(async () => {
    server = await startTestServer();
    ({ token: owner } = await adminClient(ALL));
  });
  after(() => server.close());

  describe('admin:clients', () => {
    it('cannot add admin scopes to its own client: 403, and its next token has none of them', async () => {
      const clients = await adminClient('admin:clients');
      const grown = await patch(`/clients/${clients.clientId}`, clients.token, { scope: 'admin:clients admin:users admin:keys admin:providers' });
      assert.equal(grown.status, 403, JSON.stringify(grown.body));
      assert.equal(grown.body['field'], 'scope');
      assert.equal((await call('GET', `/clients/${clients.clientId}`, owner)).body['scope'], 'admin:clients');
      await assert.rejects(
        tokenFor(clients.clientId, clients.secret, 'admin:clients admin:users'),
        (error: Error & { error?: string }) => error.error === 'invalid_scope',
      );
      const token = await tokenFor(clients.clientId, clients.secret);
      assert.equal((await call('GET', '/users', token)).status, 403, 'its token reads no users');
    });

    it('cannot widen its own scope even with a scope it covers, and may narrow it', async () => {
      const clients = await adminClient('admin:clients admin:events:read');
      const read = await patch(`/clients/${clients.clientId}`, clients.token, { scope: 'admin:clients admin:events:read admin:clients:read' });
      assert.equal(read.status, 403, 'admin:clients:read is covered by admin:clients, but it is a wider scope than its own');
      assert.match(String(read.body['detail']), /cannot widen its own scope/);
      const other = await adminClient('admin:clients');
      assert.equal(
        (await patch(`/clients/${other.clientId}`, clients.token, { scope: 'admin:clients admin:clients:read' })).status,
        200,
        'another client may be given what the caller holds',
      );
      const narrowed = await patch(`/clients/${clients.clientId}`, clients.token, { scope: 'admin:clients' });
      assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
      assert.equal(narrowed.body['scope'], 'admin:clients');
    });

    it('cannot register a client with admin scopes it does not hold, and may with those it holds', async () => {
      const clients = await adminClient('admin:clients');
      const every = await call('POST', '/clients', clients.token, { client_name: 'Escalator', grant_types: ['client_credentials'], scope: ALL });
      assert.equal(every.status, 403, JSON.stringify(every.body));
      assert.match(String(every.body['detail']), /admin:users/);
      assert.equal(
        (await server.store.clients.list()).some((client) => client.name === 'Escalator'),
        false,
        'nothing was registered',
      );
      const same = await call('POST', '/clients', clients.token, { client_name: 'Twin', grant_types: ['client_credentials'], scope: 'admin:clients:read' });
      assert.equal(same.status, 201, JSON.stringify(same.body));
    });

    it("cannot make itself a Shared Signals receiver, which is sent every person's events, unless it may read the audit trail", async () => {
      const clients = await adminClient('admin:clients');
      const receiver = await call('POST', '/clients', clients.token, { client_name: 'Listener', grant_types: ['client_credentials'], scope: 'ssf:manage' });
      assert.equal(receiver.status, 403, JSON.stringify(receiver.body));
      assert.equal(receiver.body['field'], 'scope');
      assert.equal(
        (await server.store.clients.list()).some((client) => client.name === 'Listener'),
        false,
        'nothing was registered',
      );
      const readers = await adminClient('admin:clients admin:events:read');
      assert.equal(
        (await call('POST', '/clients', readers.token, { client_name: 'Reader', grant_types: ['client_credentials'], scope: 'ssf:manage' })).status,
        201,
      );
    });

    it("cannot trust another server to sign people in by their e-mail address: only a caller holding every role's scopes may", async () => {
      const trust = { issuer: 'https://idp.example', jwks: { keys: [] } };
      const clients = await adminClient('admin:clients');
      const refused = await call('POST', '/trusted-issuers', clients.token, trust);
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.deepEqual(await server.store.trustedIssuers.list(), [], 'nothing trusted');
      assert.equal((await call('POST', '/trusted-issuers', owner, trust)).status, 201, JSON.stringify(trust));
    });

    it("cannot rotate, change, revoke or remove a client that holds admin scopes it lacks; an app's client it may", async () => {
      const clients = await adminClient('admin:clients');
      const wide = await adminClient(ALL);
      const rotated = await call('POST', `/clients/${wide.clientId}/secret`, clients.token, {});
      assert.equal(rotated.status, 403, JSON.stringify(rotated.body));
      assert.equal(rotated.body['client_secret'], undefined, 'no secret answered');
      assert.ok(await tokenFor(wide.clientId, wide.secret), 'its secret still works');
      assert.equal((await patch(`/clients/${wide.clientId}`, clients.token, { client_name: 'Renamed' })).status, 403);
      assert.equal(
        (await patch(`/clients/${wide.clientId}`, clients.token, { token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } })).status,
        403,
        'nor its keys',
      );
      assert.equal((await call('POST', `/clients/${wide.clientId}/revoke-tokens`, clients.token)).status, 403);
      assert.equal((await call('DELETE', `/clients/${wide.clientId}`, clients.token)).status, 403);
      assert.equal((await call('GET', `/clients/${wide.clientId}`, owner)).body['client_name'], `CI ${ALL}`);

      const app = await call('POST', '/clients', clients.token, { client_name: 'Garden Planner', redirect_uris: [REDIRECT_URI] });
      assert.equal(app.status, 201);
      const appRotated = await call('POST', `/clients/${app.body['client_id'] as string}/secret`, clients.token, {});
      assert.equal(appRotated.status, 200);
      assert.equal(typeof appRotated.body['client_secret'], 'string');
      assert.equal((await call('POST', `/clients/${wide.clientId}/secret`, owner, {})).status, 200, 'a caller holding every scope may');
    });
  });

  describe('admin:users and the console roles', () => {
    it("cannot change an operator's password, reset link, second factors, e-mail, state or existence; may a person's without a role", async () => {
      const users = await adminClient('admin:users');
      await server.addUser({ username: 'root-operator' });
      assert.equal((await patch('/users/root-operator', owner, { role: 'admin' })).status, 200);
      await server.addUser({ username: 'plain-person' });

      const refused = [
        await call('PUT', '/users/root-operator/password', users.token, { password: 'a new long password for me' }),
        await call('POST', '/users/root-operator/reset-link', users.token, {}),
        await call('POST', '/users/root-operator/reset-second-factor', users.token),
        await call('POST', '/users/root-operator/disable', users.token),
        await patch('/users/root-operator', users.token, { email: 'mallory@example.net' }),
        await call('DELETE', '/users/root-operator/sessions', users.token),
        await call('DELETE', '/lockouts?username=root-operator', users.token),
        await call('DELETE', '/users/root-operator', users.token),
      ];
      assert.deepEqual(
        refused.map((answer) => answer.status),
        refused.map(() => 403),
        JSON.stringify(refused.map((answer) => answer.body)),
      );
      const after = await call('GET', '/users/root-operator', owner);
      assert.equal(after.body['email'], 'root-operator@example.com');
      assert.equal(after.body['disabled'], false);

      assert.equal((await call('POST', '/users/plain-person/reset-link', users.token, {})).status, 200);
      assert.equal((await patch('/users/plain-person', users.token, { email: 'plain@example.org' })).status, 200);
      assert.equal((await call('POST', '/users/root-operator/reset-link', owner, {})).status, 200, 'a caller holding everything the role allows may');
    });

    it("lets the console's support role manage people, but not a console admin", async () => {
      await server.addUser({ username: 'console-admin' });
      await server.addUser({ username: 'console-support' });
      await server.addUser({ username: 'customer' });
      await updateUser(manageDeps(server), 'console-admin', { role: 'admin' });
      await updateUser(manageDeps(server), 'console-support', { role: 'support' });
      const support = { ...manageDeps(server), caller: { scopes: ROLE_SCOPES.support } };
      const forbidden = (error: unknown) => error instanceof ManageError && error.kind === 'forbidden';
      await assert.rejects(resetLink(support, 'console-admin'), forbidden);
      await assert.rejects(resetUserSecondFactor(support, 'console-admin'), forbidden);
      await assert.rejects(setDisabled(support, 'console-admin', true), forbidden);
      assert.ok((await resetLink(support, 'customer')).url, 'a person without a role');
      assert.ok((await resetLink(support, 'console-support')).url, 'another support operator: support holds everything support allows');
    });
  });

  describe('admin:orgs', () => {
    it("cannot make a console operator a member of an organization, or end their membership; may a person's without a role", async () => {
      const orgs = await adminClient('admin:orgs');
      await server.addUser({ username: 'org-operator' });
      await server.addUser({ username: 'org-person' });
      assert.equal((await patch('/users/org-operator', owner, { role: 'admin' })).status, 200);
      const made = await call('POST', '/organizations', orgs.token, { name: 'Strict Org', require_passkey: true });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const id = String(made.body['id']);

      // A membership in an organization that requires a passkey would hold the operator's approvals to it.
      const refused = await call('PUT', `/organizations/${id}/members/org-operator`, orgs.token, { role: 'member' });
      assert.equal(refused.status, 403, JSON.stringify(refused.body));
      assert.deepEqual(((await call('GET', `/organizations/${id}/members`, owner)).body['members'] as unknown[]).length, 0, 'no membership was made');
      assert.equal((await call('PUT', `/organizations/${id}/members/org-person`, orgs.token, { role: 'member' })).status, 200);

      assert.equal(
        (await call('PUT', `/organizations/${id}/members/org-operator`, owner, { role: 'member' })).status,
        200,
        'a caller holding everything the role allows may',
      );
      // Nor loosen or tighten the sign-in policy the operator's approvals are held to there.
      const loosened = await call('PATCH', `/organizations/${id}`, orgs.token, { require_passkey: false });
      assert.equal(loosened.status, 403, JSON.stringify(loosened.body));
      assert.equal((await call('GET', `/organizations/${id}`, owner)).body['require_passkey'], true, 'unchanged');
      assert.equal((await call('PATCH', `/organizations/${id}`, orgs.token, { name: 'Strict Org, renamed' })).status, 200, 'its name is no policy');
      assert.equal((await call('DELETE', `/organizations/${id}/members/org-operator`, orgs.token)).status, 403);
      assert.equal((await call('DELETE', `/organizations/${id}/members/org-person`, orgs.token)).status, 204);
    });
  });

  describe('admin:resources', () => {
    it("cannot register an API at the server's own URLs, nor a scope named admin:", async () => {
      const resources = await adminClient('admin:resources');
      const scopes = [{ name: 'calendar:read', description: 'See your calendar' }];
      for (const identifier of [
        server.config.issuer,
        `${server.config.issuer}/admin`,
        `${server.config.issuer}/oauth/userinfo`,
        `${server.config.issuer.toUpperCase().replace('HTTP://', 'http://')}/admin`,
      ]) {
        const own = await call('POST', '/resources', resources.token, { identifier, name: 'Shadow', scopes });
        assert.deepEqual([own.status, own.body['field']], [400, 'identifier'], identifier);
      }
      const admin = await call('POST', '/resources', resources.token, {
        identifier: 'https://calendar.example',
        name: 'Calendar',
        scopes: [{ name: 'admin:keys', description: 'Keys' }],
      });
      assert.deepEqual([admin.status, admin.body['field']], [400, 'scopes']);
      assert.deepEqual(await server.store.resources.list(), [], 'nothing was registered');
      assert.equal((await call('POST', '/resources', resources.token, { identifier: 'https://calendar.example', name: 'Calendar', scopes })).status, 201);
      const renamed = await call('PATCH', `/resources/${encodeURIComponent('https://calendar.example')}`, resources.token, {
        scopes: [...scopes, { name: 'admin:users', description: 'Users' }],
      });
      assert.deepEqual([renamed.status, renamed.body['field']], [400, 'scopes'], 'nor by a change');
    });
  });

  describe('admin:providers', () => {
    const upstream = { kind: 'oidc', issuer: 'https://sso.example.com', client_id: 'tessera', client_secret: 'the upstream secret' };

    it('cannot add a provider that links accounts or whose mfa is trusted, nor turn either on, nor repoint one that has them', async () => {
      const providers = await adminClient('admin:providers');
      const linking = await call('POST', '/providers', providers.token, { ...upstream, name: 'Linker', allow_linking: true });
      assert.equal(linking.status, 403, JSON.stringify(linking.body));
      assert.equal(linking.body['field'], 'allow_linking');
      assert.equal((await call('POST', '/providers', providers.token, { ...upstream, name: 'Vouch', trust_upstream_mfa: true })).status, 403);
      assert.equal(await server.store.identityProviders.get('linker'), null, 'nothing was added');

      const plain = await call('POST', '/providers', providers.token, { ...upstream, name: 'Plain SSO' });
      assert.equal(plain.status, 201, 'a provider that only makes new accounts');
      assert.equal((await call('PATCH', '/providers/plain-sso', providers.token, { allow_linking: true })).status, 403);
      assert.equal((await call('PATCH', '/providers/plain-sso', providers.token, { trust_upstream_mfa: true })).status, 403);

      const trusted = await call('POST', '/providers', owner, { ...upstream, name: 'Trusted SSO', allow_linking: true, trust_upstream_mfa: true });
      assert.equal(trusted.status, 201, 'an owner holding every scope may');
      for (const change of [
        { issuer: 'https://evil.example' },
        { client_id: 'other' },
        { client_secret: 'another secret' },
        { claim_mapping: { email: 'name' } },
      ]) {
        assert.equal((await call('PATCH', '/providers/trusted-sso', providers.token, change)).status, 403, JSON.stringify(change));
      }
      assert.equal((await server.store.identityProviders.get('trusted-sso'))?.settings['issuer'], 'https://sso.example.com');
      assert.equal(
        (await call('PATCH', '/providers/trusted-sso', providers.token, { name: 'Trusted', position: 3 })).status,
        200,
        "its name and place are anyone's",
      );
    });

    it('cannot repoint a provider people already sign in through; may rotate its secret, and repoint one nobody uses', async () => {
      const providers = await adminClient('admin:providers');
      assert.equal((await call('POST', '/providers', providers.token, { ...upstream, name: 'Used SSO' })).status, 201);
      assert.equal((await call('POST', '/providers', providers.token, { ...upstream, name: 'Unused SSO' })).status, 201);
      const person = await server.addUser({ username: 'linked-person' });
      await server.store.linkedIdentities.create({
        providerId: 'used-sso',
        subject: 'upstream-1',
        userId: person.id,
        label: null,
        groups: [],
        createdAt: Date.now(),
        lastUsedAt: null,
      });
      for (const change of [{ issuer: 'https://evil.example' }, { client_id: 'attacker-app' }, { claim_mapping: { username: 'name' } }]) {
        assert.equal((await call('PATCH', '/providers/used-sso', providers.token, change)).status, 403, JSON.stringify(change));
      }
      assert.equal(
        (await call('PATCH', '/providers/used-sso', providers.token, { client_secret: 'rotated upstream secret' })).status,
        200,
        'a new secret for the same client',
      );
      assert.equal(
        (await call('PATCH', '/providers/unused-sso', providers.token, { issuer: 'https://other.example' })).status,
        200,
        'nobody signs in through it yet',
      );
      assert.equal((await call('PATCH', '/providers/used-sso', owner, { issuer: 'https://new.example' })).status, 200, 'an owner may');
    });
  });
});

/**
 * The requests Microsoft Entra ID and Okta send when they provision, update and deprovision a
 * person and a group, replayed as their documentation records them (Microsoft Learn, "Develop
 * and plan provisioning for a SCIM endpoint", its request examples; Okta Developer, "SCIM 2.0
 * protocol reference"): each is answered as the provisioning system expects (docs/scim.md).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { addScimToken } from '../src/flows/manage/scim-tokens.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

let server: TestServer;
let token: string;

before(async () => {
  server = await startTestServer();
  token = (await addScimToken(manageDeps(server), { name: 'Recorded provisioning' })).token;
});
after(() => server.close());

type Json = Record<string, unknown>;

async function send(method: string, path: string, body?: Json): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${server.url}/scim/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Json) };
}

const q = (filter: string) => encodeURIComponent(filter);
const resources = (body: Json) => body['Resources'] as Json[];

describe("Microsoft Entra ID's requests", () => {
  it('tests the connection, creates a user, finds them by userName, updates, disables and deletes them', async () => {
    // Test Connection: a filter that matches nobody answers an empty list, not 404.
    const none = await send('GET', `/Users?filter=${q('userName eq "non-existent user"')}`);
    assert.equal(none.status, 200);
    assert.deepEqual([none.body['totalResults'], resources(none.body)], [0, []]);

    const created = await send('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      externalId: '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef',
      userName: 'Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1',
      active: true,
      emails: [{ primary: true, type: 'work', value: 'Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com' }],
      meta: { resourceType: 'User' },
      name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
      roles: [],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = String(created.body['id']);
    assert.equal(created.body['externalId'], '0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef');

    const found = await send('GET', `/Users?filter=${q('userName eq "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"')}`);
    assert.deepEqual(
      resources(found.body).map((user) => user['id']),
      [id],
    );
    const byExternalId = await send('GET', `/Users?filter=${q('externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"')}`);
    assert.equal(byExternalId.body['totalResults'], 1);

    // Update user [Multi-valued properties].
    const multi = await send('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [
        { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
        { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
      ],
    });
    assert.equal(multi.status, 200, JSON.stringify(multi.body));
    assert.equal((await server.store.users.get(id))?.email, 'updatedEmail@microsoft.com');
    assert.equal((await server.store.users.get(id))?.familyName, 'updatedFamilyName');

    // Update user [Single-valued properties]: a new userPrincipalName.
    const single = await send('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'userName', value: '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com' }],
    });
    assert.equal(single.status, 200, JSON.stringify(single.body));
    assert.equal((await server.store.users.get(id))?.username, '5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com');

    // Disable user, as the documentation shows it and as the service sends it ("False").
    for (const value of [false, 'False']) {
      const disabled = await send('PATCH', `/Users/${id}`, {
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'Replace', path: 'active', value }],
      });
      assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
      assert.equal(disabled.body['active'], false);
    }
    assert.equal((await server.store.users.get(id))?.disabled, true);

    assert.equal((await send('DELETE', `/Users/${id}`)).status, 204);
    assert.equal((await send('GET', `/Users/${id}`)).status, 404);
  });

  it('creates a group, adds and removes members, renames and deletes it', async () => {
    const member = await send('POST', '/Users', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'entra-member@testuser.com',
      active: true,
    });
    const memberId = String(member.body['id']);
    const created = await send('POST', '/Groups', {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group', 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
      externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
      displayName: 'displayName',
      meta: { resourceType: 'Group' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = String(created.body['id']);
    const found = await send('GET', `/Groups?excludedAttributes=members&filter=${q('displayName eq "displayName"')}`);
    assert.deepEqual(
      resources(found.body).map((group) => group['id']),
      [id],
    );

    const added = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Add', path: 'members', value: [{ $ref: null, value: memberId }] }],
    });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual(await server.store.groups.namesOf(memberId), ['displayName']);
    const removed = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Remove', path: 'members', value: [{ $ref: null, value: memberId }] }],
    });
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.deepEqual(await server.store.groups.namesOf(memberId), []);
    const renamed = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'Replace', path: 'displayName', value: '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName' }],
    });
    assert.equal(renamed.body['displayName'], '1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName');
    assert.equal((await send('DELETE', `/Groups/${id}`)).status, 204);
  });
});

describe("Okta's requests", () => {
  it('looks a user up, creates, reads, replaces by PUT and deactivates them', async () => {
    const lookup = await send('GET', `/Users?filter=${q('userName eq "test.user@okta.local"')}&startIndex=1&count=100`);
    assert.equal(lookup.status, 200);
    assert.equal(lookup.body['totalResults'], 0);
    const user = {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
      userName: 'test.user@okta.local',
      name: { givenName: 'Test', familyName: 'User' },
      emails: [{ primary: true, value: 'test.user@okta.local', type: 'work' }],
      displayName: 'Test User',
      locale: 'en-US',
      externalId: '00ujl29u0le5T6Aj10h7',
      groups: [],
      password: '1mz050nq',
      active: true,
    };
    const created = await send('POST', '/Users', user);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = String(created.body['id']);
    assert.equal((await send('GET', `/Users/${id}`)).body['userName'], 'test.user@okta.local');

    const { password: _password, ...withoutPassword } = user;
    const replaced = await send('PUT', `/Users/${id}`, {
      ...withoutPassword,
      id,
      name: { givenName: 'Another', familyName: 'User' },
      meta: { resourceType: 'User' },
    });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    assert.equal((await server.store.users.get(id))?.givenName, 'Another');

    const deactivated = await send('PATCH', `/Users/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    });
    assert.equal(deactivated.status, 200, JSON.stringify(deactivated.body));
    assert.equal(deactivated.body['active'], false);
    assert.equal((await server.store.users.get(id))?.disabled, true);
  });

  it('pushes a group: creates it, renames it by replace without a path, adds and removes a member, deletes it', async () => {
    const member = await send('POST', '/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'okta-member@okta.local', active: true });
    const memberId = String(member.body['id']);
    const created = await send('POST', '/Groups', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'], displayName: 'Test SCIMv2', members: [] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const id = String(created.body['id']);
    const renamed = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { id, displayName: 'Test SCIMv2 renamed' } }],
    });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    const added = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'add', path: 'members', value: [{ value: memberId, display: 'okta-member@okta.local' }] }],
    });
    assert.equal(added.status, 200, JSON.stringify(added.body));
    assert.deepEqual(await server.store.groups.namesOf(memberId), ['Test SCIMv2 renamed']);
    const removed = await send('PATCH', `/Groups/${id}`, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'remove', path: `members[value eq "${memberId}"]` }],
    });
    assert.equal(removed.status, 200, JSON.stringify(removed.body));
    assert.deepEqual(await server.store.groups.namesOf(memberId), []);
    assert.equal((await send('DELETE', `/Groups/${id}`)).status, 204);
  });
});

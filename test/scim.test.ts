/**
 * SCIM 2.0 at <issuer>/scim/v2 (RFC 7643, RFC 7644; docs/scim.md), end to end over HTTP: who
 * may call, a user and a group through their whole life (made, found by filter, changed by
 * PUT and PATCH, deactivated, deleted), the person cut off at UserInfo at once, groups in the
 * ID token and UserInfo, and every bad input its SCIM error, never a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { addScimToken, removeScimToken } from '../src/flows/manage/scim-tokens.ts';
import { createResetLink, findResetLink } from '../src/flows/users.ts';
import { adminToken } from './helpers/fixtures.ts';
import { discover, signIn } from './helpers/lifecycle.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestClient, type TestServer } from './helpers/server.ts';

const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

let server: TestServer;
let token: string;
let app: TestClient;

before(async () => {
  // A small limit of wrong tokens per address, so that the test reaches it.
  server = await startTestServer({ env: { TESSERA_SIGN_IN_FAILURES_PER_ADDRESS: '40' } });
  token = (await addScimToken(manageDeps(server), { name: 'Entra ID' })).token;
  app = await server.addClient({ scopes: ['openid', 'profile', 'email', 'groups'] });
});
after(() => server.close());

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Record<string, unknown>;
}

async function scim(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, bearer: string | null = token): Promise<Answer> {
  const response = await fetch(`${server.url}/scim/v2${path}`, {
    method,
    headers: {
      ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

/** A SCIM error of `status` and `scimType`, in the error schema. */
function assertError(answer: Answer, status: number, scimType?: string): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.deepEqual(answer.body['schemas'], [ERROR]);
  assert.equal(answer.body['status'], String(status));
  if (scimType !== undefined) assert.equal(answer.body['scimType'], scimType, JSON.stringify(answer.body));
  assert.match(String(answer.headers.get('content-type')), /^application\/scim\+json/);
}

const filter = (text: string) => `/Users?filter=${encodeURIComponent(text)}`;

describe('who may call /scim/v2', () => {
  it('refuses a request without a token, with a wrong one, with a withdrawn one, or with an admin token without the scope scim', async () => {
    assertError(await scim('GET', '/Users', undefined, {}, null), 401);
    assertError(await scim('GET', '/Users', undefined, {}, 'scim_not-a-token'), 401);
    const made = await addScimToken(manageDeps(server), { name: 'Withdrawn' });
    assert.equal((await scim('GET', '/Users', undefined, {}, made.token)).status, 200);
    await removeScimToken(manageDeps(server), made.record.id);
    assertError(await scim('GET', '/Users', undefined, {}, made.token), 401);
    const admin = await adminToken(server, 'admin:users');
    assertError(await scim('GET', '/Users', undefined, {}, admin.token), 401);
  });

  it('takes a client_credentials token for <issuer>/admin with the scope scim', async () => {
    const provisioning = await adminToken(server, 'scim', 'Provisioning client');
    const answer = await scim('GET', '/ServiceProviderConfig', undefined, {}, provisioning.token);
    assert.equal(answer.status, 200);
    assert.deepEqual((answer.body['patch'] as Record<string, unknown>)['supported'], true);
  });
});

describe('a user through their whole life over SCIM', () => {
  let id = '';
  let etag = '';

  it('makes a user, with the claims, the enterprise extension and a Location and ETag', async () => {
    const made = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      externalId: 'e-1001',
      userName: 'Grace.Hopper@Example.com',
      name: { givenName: 'Grace', familyName: 'Hopper' },
      displayName: 'Grace Hopper',
      title: 'Rear Admiral',
      locale: 'en-US',
      timezone: 'America/New_York',
      emails: [{ value: 'grace@example.com', type: 'work', primary: true }],
      phoneNumbers: [{ value: '+1 (425) 555-1212', type: 'work' }],
      password: 'a long provisioned password',
      active: true,
      [ENTERPRISE]: { department: 'Navy', employeeNumber: '1906' },
    });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    id = String(made.body['id']);
    etag = made.headers.get('etag')!;
    assert.match(etag, /^W\/"\d+"$/);
    assert.equal(made.headers.get('location'), `${server.config.issuer}/scim/v2/Users/${id}`);
    assert.equal(made.body['userName'], 'grace.hopper@example.com', 'usernames are kept as Tessera keeps them');
    assert.equal(made.body['externalId'], 'e-1001');
    assert.deepEqual((made.body[ENTERPRISE] as Record<string, unknown>)['department'], 'Navy');
    assert.equal(made.body['password'], undefined, 'never returned');
    const account = await server.store.users.get(id);
    assert.equal(account?.username, 'grace.hopper@example.com');
    assert.equal(account?.name, 'Grace Hopper');
    assert.equal(account?.givenName, 'Grace');
    assert.equal(account?.email, 'grace@example.com');
    assert.equal(account?.zoneinfo, 'America/New_York');
    assert.equal(account?.phoneNumber, '+1 (425) 555-1212');
  });

  it('refuses a taken userName or e-mail address with 409 uniqueness, whichever door made the other account', async () => {
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: 'grace.hopper@example.com' }), 409, 'uniqueness');
    const other = await server.addUser({ username: 'made-by-the-command', email: 'taken@example.com' });
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: other.username }), 409, 'uniqueness');
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: 'someone-new', emails: [{ value: 'TAKEN@example.com' }] }), 409, 'uniqueness');
    assert.equal(await server.store.users.findByUsername('someone-new'), null, 'nothing half made');
    // A change to another account's address too, by PATCH and PUT: refused whole.
    const before = await scim('GET', `/Users/${id}`);
    const patched = await scim('PATCH', `/Users/${id}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'replace', path: 'title', value: 'Rear Admiral' },
        { op: 'replace', path: 'emails[type eq "work"].value', value: 'taken@EXAMPLE.com' },
      ],
    });
    assertError(patched, 409, 'uniqueness');
    assert.match(String(patched.body['detail']), /e-mail address/);
    assertError(await scim('PUT', `/Users/${id}`, { ...before.body, emails: [{ value: 'Taken@example.com', primary: true }] }), 409, 'uniqueness');
    assert.deepEqual(await scim('GET', `/Users/${id}`).then((answer) => answer.body), before.body, 'nothing half written');
  });

  it('finds the user by filter, sorts and pages, and gives only the attributes asked for', async () => {
    const found = await scim('GET', filter('userName eq "Grace.Hopper@example.com"'));
    assert.equal(found.status, 200);
    assert.equal(found.body['totalResults'], 1);
    assert.equal((found.body['Resources'] as Record<string, unknown>[])[0]!['id'], id);
    const complex = await scim(
      'GET',
      filter(`emails[type eq "work" and value co "@example.com"] and ${ENTERPRISE}:department eq "navy" and not (active eq false)`),
    );
    assert.equal(complex.body['totalResults'], 1);
    const none = await scim('GET', filter('externalId eq "E-1001"'));
    assert.equal(none.body['totalResults'], 0, 'externalId keeps its case');
    const page = await scim('GET', '/Users?sortBy=userName&sortOrder=descending&startIndex=1&count=1&attributes=userName,emails.value');
    assert.equal(page.body['itemsPerPage'], 1);
    const [first] = page.body['Resources'] as Record<string, unknown>[];
    assert.deepEqual(Object.keys(first!).sort(), ['emails', 'id', 'meta', 'schemas', 'userName']);
    const bounded = await scim('GET', '/Users?count=100000');
    assert.ok((bounded.body['itemsPerPage'] as number) <= 200);
    const excluded = await scim('GET', `/Users/${id}?excludedAttributes=emails,${ENTERPRISE}:department`);
    assert.equal(excluded.body['emails'], undefined);
    assert.equal((excluded.body[ENTERPRISE] as Record<string, unknown>)['department'], undefined);
    assert.equal((excluded.body[ENTERPRISE] as Record<string, unknown>)['employeeNumber'], '1906');
  });

  it('finds the same by POST /Users/.search, /Groups/.search and /.search (a SearchRequest body), and refuses a body that is not one', async () => {
    const search = (path: string, body: Record<string, unknown>) => scim('POST', path, { schemas: [SEARCH], ...body });
    const users = await search('/Users/.search', {
      filter: 'userName eq "Grace.Hopper@example.com"',
      attributes: ['userName', 'emails.value'],
      startIndex: 1,
      count: 10,
    });
    assert.equal(users.status, 200, JSON.stringify(users.body));
    assert.equal(users.body['totalResults'], 1);
    const [grace] = users.body['Resources'] as Record<string, unknown>[];
    assert.deepEqual(Object.keys(grace!).sort(), ['emails', 'id', 'meta', 'schemas', 'userName']);
    const made = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Search Party' });
    const groups = await search('/Groups/.search', { filter: 'displayName eq "search party"', excludedAttributes: ['members'] });
    assert.deepEqual(
      (groups.body['Resources'] as Record<string, unknown>[]).map((group) => group['id']),
      [made.body['id']],
    );
    // The root looks through both types: a filter on userName finds no group, one on displayName both kinds.
    const root = await search('/.search', { filter: 'userName eq "grace.hopper@example.com"' });
    assert.deepEqual([root.status, root.body['totalResults']], [200, 1]);
    const both = await search('/.search', { filter: 'displayName eq "Search Party" or displayName eq "Grace Hopper"', count: 1 });
    assert.equal(both.status, 200, JSON.stringify(both.body));
    assert.equal(both.body['itemsPerPage'], 1);
    assert.ok((both.body['totalResults'] as number) >= 1);
    // Sub-attributes sent in another case are kept in the schema's, and found by the database's search.
    const cased = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'cased',
      emails: [
        { Value: 'main@cased.example', Primary: true },
        { VALUE: 'second@cased.example', TYPE: 'home' },
      ],
    });
    assert.equal(cased.status, 201, JSON.stringify(cased.body));
    assert.deepEqual(cased.body['emails'], [
      { value: 'main@cased.example', primary: true },
      { value: 'second@cased.example', type: 'home' },
    ]);
    for (const text of ['emails eq "SECOND@cased.example"', 'emails[type eq "home" and value ew "cased.example"]'])
      assert.deepEqual((await search('/Users/.search', { filter: text })).body['totalResults'], 1, text);
    assert.equal((await scim('DELETE', `/Users/${String(cased.body['id'])}`)).status, 204);
    assertError(await search('/.search', { filter: 'shoeSize eq "9"' }), 400, 'invalidFilter');
    assertError(await scim('POST', '/Users/.search', { filter: 'userName pr' }), 400, 'invalidSyntax');
    assertError(await search('/Users/.search', { filter: 'userName pr', count: '10' }), 400, 'invalidValue');
    assertError(await search('/Users/.search', { attributes: [1] }), 400, 'invalidValue');
    assertError(await search('/Users/.search', { sortby: 'userName' }), 400, 'invalidSyntax');
    assertError(await scim('POST', '/Users/.search', '[1]'), 400, 'invalidSyntax');
  });

  it("changes the user by PATCH in Entra ID's forms, at the version read", async () => {
    const patched = await scim(
      'PATCH',
      `/Users/${id}`,
      {
        schemas: [PATCH],
        Operations: [
          { op: 'Replace', path: 'name.familyName', value: 'Murray Hopper' },
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'grace.hopper@example.com' },
          { op: 'Add', path: `${ENTERPRISE}:manager`, value: { value: 'm-42' } },
          { op: 'replace', value: { displayName: 'Amazing Grace', [`${ENTERPRISE}:costCenter`]: 'CC-7' } },
        ],
      },
      { 'if-match': etag },
    );
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const account = await server.store.users.get(id);
    assert.equal(account?.familyName, 'Murray Hopper');
    assert.equal(account?.email, 'grace.hopper@example.com');
    assert.equal(account?.name, 'Amazing Grace', 'the name claim follows displayName when name.formatted was not given');
    assert.deepEqual(patched.body[ENTERPRISE], { department: 'Navy', employeeNumber: '1906', manager: { value: 'm-42' }, costCenter: 'CC-7' });
    assertError(
      await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', path: 'title', value: 'x' }] }, { 'if-match': etag }),
      412,
    );
    etag = patched.headers.get('etag')!;
  });

  it('replaces the user by PUT, and refuses a stale one with 412 writing nothing', async () => {
    const current = (await scim('GET', `/Users/${id}`)).body;
    const put = await scim('PUT', `/Users/${id}`, { ...current, nickName: 'Amazing', title: 'Commodore' }, { 'if-match': etag });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body['title'], 'Commodore');
    assertError(await scim('PUT', `/Users/${id}`, { ...current, title: 'Stale' }, { 'if-match': etag }), 412);
    assert.equal((await scim('GET', `/Users/${id}`)).body['title'], 'Commodore');
    etag = put.headers.get('etag')!;
  });

  it('ends the reset links mailed to the old address when a PUT changes it, not when it keeps it', async () => {
    const deps = manageDeps(server);
    const person = (await server.store.users.get(id))!;
    const mailed = new URL((await createResetLink(deps, person, 3600)).url).searchParams.get('token')!;
    const current = (await scim('GET', `/Users/${id}`)).body;
    const kept = await scim('PUT', `/Users/${id}`, { ...current, nickName: 'Still the same address' });
    assert.equal(kept.status, 200, JSON.stringify(kept.body));
    assert.ok(await findResetLink(deps, mailed), 'the address stays: the link stays');
    const moved = await scim('PUT', `/Users/${id}`, { ...kept.body, emails: [{ value: 'moved.by.scim@example.com', primary: true }] });
    try {
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal(await findResetLink(deps, mailed), null, 'a link mailed to the old address would reach whoever reads it still');
    } finally {
      // The address as it was, for the tests after this one.
      const back = await scim('PUT', `/Users/${id}`, { ...moved.body, emails: current['emails'] });
      assert.equal(back.status, 200, JSON.stringify(back.body));
      etag = back.headers.get('etag')!;
    }
  });

  it('marks an address given over SCIM not verified when it is another, by PATCH or PUT, and keeps the mark when only its case changes', async () => {
    const vera = await server.addUser({ username: 'vera', email: 'vera@example.com', profile: { emailVerified: true } });
    const verified = async () => (await server.store.users.get(vera.id))!.emailVerified;
    const read = (await scim('GET', `/Users/${vera.id}`)).body;
    const cased = await scim('PUT', `/Users/${vera.id}`, { ...read, emails: [{ value: 'Vera@Example.com', primary: true }] });
    assert.equal(cased.status, 200, JSON.stringify(cased.body));
    assert.equal(await verified(), true, 'the same address');
    // An app that matches accounts by a verified address would take this one for its owner's.
    const patched = await scim('PATCH', `/Users/${vera.id}`, {
      schemas: [PATCH],
      Operations: [{ op: 'replace', path: 'emails', value: [{ value: 'ceo@corp.example', primary: true }] }],
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(await verified(), false, 'PATCH: the old verification says nothing of the new address');
    await server.store.users.update(vera.id, { emailVerified: true }, Date.now());
    const put = await scim('PUT', `/Users/${vera.id}`, { ...patched.body, emails: [{ value: 'someone@else.example', primary: true }] });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(await verified(), false, 'PUT');
  });

  it('cuts the person off within a second of active false (Entra ID\'s "False"): UserInfo refuses their token', async () => {
    const config = await discover(server, app);
    const tokens = await signIn(server, config, { id, username: 'grace.hopper@example.com', password: 'a long provisioned password' }, 'openid profile email');
    const claims = await oidc.fetchUserInfo(config, tokens.access_token, id);
    assert.equal(claims.email, 'grace.hopper@example.com');
    const started = Date.now();
    const off = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    assert.equal(off.body['active'], false);
    const answer = await fetch(config.serverMetadata().userinfo_endpoint!, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(answer.status, 401);
    assert.ok(Date.now() - started < 1000, `refused ${Date.now() - started} ms after the change was sent`);
    assert.equal((await server.store.users.get(id))?.disabled, true);
    const events = await server.store.events.list({ userId: id, type: 'user.disabled', limit: 1 });
    assert.equal(events[0]?.detail['scim_token'], 'Entra ID', 'the event names the provisioning system');
    const on = await scim('PATCH', `/Users/${id}`, { schemas: [PATCH], Operations: [{ op: 'replace', value: { active: true } }] });
    assert.equal(on.body['active'], true);
  });

  it('deletes the user: gone, and their userName free again', async () => {
    assert.equal((await scim('DELETE', `/Users/${id}`)).status, 204);
    assertError(await scim('GET', `/Users/${id}`), 404);
    assertError(await scim('DELETE', `/Users/${id}`), 404);
    assert.equal(await server.store.users.get(id), null);
  });
});

describe('groups over SCIM', () => {
  it("makes a group with members, whose name is in their groups claim at UserInfo (scope groups), and changes its members in Entra ID's and Okta's forms", async () => {
    const ada = await server.addUser({ username: 'ada' });
    const alan = await server.addUser({ username: 'alan' });
    const made = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Engineers', members: [{ value: ada.id }] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const groupId = String(made.body['id']);
    assertError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'ENGINEERS' }), 409, 'uniqueness');
    assertError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Ghosts', members: [{ value: 'no-such-user' }] }), 400, 'invalidValue');

    const config = await discover(server, app);
    const tokens = await signIn(server, config, ada, 'openid groups');
    assert.deepEqual((await oidc.fetchUserInfo(config, tokens.access_token, ada.id))['groups'], ['Engineers'], 'in UserInfo');
    assert.deepEqual((await scim('GET', `/Users/${ada.id}`)).body['groups'], [
      { value: groupId, $ref: `${server.config.issuer}/scim/v2/Groups/${groupId}`, display: 'Engineers', type: 'direct' },
    ]);

    // Okta: add members by path, rename by replace without a path.
    const okta = await scim('PATCH', `/Groups/${groupId}`, {
      schemas: [PATCH],
      Operations: [
        { op: 'add', path: 'members', value: [{ value: alan.id, display: 'alan' }] },
        { op: 'replace', value: { id: groupId, displayName: 'Engineering' } },
      ],
    });
    assert.equal(okta.status, 200, JSON.stringify(okta.body));
    assert.deepEqual((okta.body['members'] as Record<string, unknown>[]).map((m) => m['value']).sort(), [ada.id, alan.id].sort());
    assert.equal(okta.body['displayName'], 'Engineering');
    // Entra ID: remove a member by value; Okta: by a path filter.
    const entra = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: ada.id }] }] });
    assert.deepEqual(
      (entra.body['members'] as Record<string, unknown>[]).map((m) => m['value']),
      [alan.id],
    );
    const filtered = await scim('PATCH', `/Groups/${groupId}`, { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${alan.id}"]` }] });
    assert.equal(filtered.body['members'], undefined);
    assert.deepEqual(await server.store.groups.namesOf(ada.id), []);

    const listed = await scim('GET', `/Groups?filter=${encodeURIComponent('displayName eq "engineering"')}&excludedAttributes=members`);
    assert.equal(listed.body['totalResults'], 1);
    assert.equal((await scim('DELETE', `/Groups/${groupId}`)).status, 204);
    assertError(await scim('GET', `/Groups/${groupId}`), 404);
  });
});

describe('groups and operators', () => {
  it('adds no one holding a console role to a group and takes no one out of one: an operator changes their groups', async () => {
    const operator = await server.addUser({ username: 'grace-operator', profile: { role: 'admin' } });
    const person = await server.addUser({ username: 'linus' });
    // A group apps grant rights by: provisioning (a SCIM token, which admin:users may make) must not put an operator in it.
    assertError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'idp-admins', members: [{ value: operator.id }] }), 403);
    const made = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'idp-admins', members: [{ value: person.id }] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const id = String(made.body['id']);
    const add = { schemas: [PATCH], Operations: [{ op: 'add', path: 'members', value: [{ value: operator.id }] }] };
    assertError(await scim('PATCH', `/Groups/${id}`, add), 403);
    assertError(
      await scim('PUT', `/Groups/${id}`, { schemas: [GROUP], displayName: 'idp-admins', members: [{ value: person.id }, { value: operator.id }] }),
      403,
    );
    assert.deepEqual(await server.store.groups.namesOf(operator.id), [], 'nothing written');
    // An operator put in the group by an operator stays there whatever provisioning sends for the others.
    await server.store.groups.addMember(id, operator.id);
    assertError(await scim('PUT', `/Groups/${id}`, { schemas: [GROUP], displayName: 'idp-admins', members: [{ value: person.id }] }), 403);
    const others = await scim('PATCH', `/Groups/${id}`, { schemas: [PATCH], Operations: [{ op: 'Remove', path: 'members', value: [{ value: person.id }] }] });
    assert.equal(others.status, 200, JSON.stringify(others.body));
    assert.deepEqual(await server.store.groups.namesOf(operator.id), ['idp-admins']);
    // Renaming the group or deleting it changes the operator's groups claim as much as their membership.
    const rename = { schemas: [PATCH], Operations: [{ op: 'replace', path: 'displayName', value: 'app-admins' }] };
    assertError(await scim('PATCH', `/Groups/${id}`, rename), 403);
    assertError(await scim('PUT', `/Groups/${id}`, { schemas: [GROUP], displayName: 'app-admins', members: [{ value: operator.id }] }), 403);
    assertError(await scim('DELETE', `/Groups/${id}`), 403);
    assert.deepEqual(await server.store.groups.namesOf(operator.id), ['idp-admins'], 'nothing written');
  });
});

describe("the service provider's configuration and bulk requests", () => {
  it('serves /ServiceProviderConfig, /ResourceTypes and /Schemas', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    assert.deepEqual(config.body['bulk'], { supported: true, maxOperations: 100, maxPayloadSize: 1_048_576 });
    assert.deepEqual(config.body['filter'], { supported: true, maxResults: 200 });
    const types = await scim('GET', '/ResourceTypes');
    assert.deepEqual(
      (types.body['Resources'] as Record<string, unknown>[]).map((type) => type['endpoint']),
      ['/Users', '/Groups'],
    );
    assert.equal((await scim('GET', '/ResourceTypes/User')).body['schema'], USER);
    const schemas = await scim('GET', '/Schemas');
    assert.deepEqual(
      (schemas.body['Resources'] as Record<string, unknown>[]).map((schema) => schema['id']),
      [USER, ENTERPRISE, GROUP],
    );
    assert.equal((await scim('GET', `/Schemas/${ENTERPRISE}`)).body['name'], 'EnterpriseUser');
  });

  it("runs bulk operations in order, resolving bulkIds, and reports each one's status", async () => {
    const answer = await scim('POST', '/Bulk', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
      Operations: [
        { method: 'POST', path: '/Users', bulkId: 'u1', data: { schemas: [USER], userName: 'bulk-one' } },
        { method: 'POST', path: '/Groups', bulkId: 'g1', data: { schemas: [GROUP], displayName: 'Bulk', members: [{ value: 'bulkId:u1' }] } },
        { method: 'POST', path: '/Users', bulkId: 'u2', data: { schemas: [USER], userName: 'bulk-one' } },
        { method: 'DELETE', path: '/Groups/bulkId:g1' },
      ],
    });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(
      (answer.body['Operations'] as Record<string, unknown>[]).map((op) => op['status']),
      ['201', '201', '409', '204'],
    );
    const tooMany = await scim('POST', '/Bulk', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:BulkRequest'],
      Operations: Array.from({ length: 101 }, () => ({ method: 'DELETE', path: '/Users/x' })),
    });
    assertError(tooMany, 413);
  });
});

describe('bad input: the SCIM error it defines, never a 500, nothing half written', () => {
  it('answers malformed filters and unknown attributes with invalidFilter', async () => {
    for (const text of [
      'userName eq',
      'userName eq "a" and',
      '(userName eq "a"',
      'shoeSize eq "9"',
      'active gt true',
      'emails[type eq "work"',
      'userName eq "\\x"',
    ]) {
      assertError(await scim('GET', filter(text)), 400, 'invalidFilter');
    }
  });

  it('answers random filters (a fuzzer) through the database with 200 or a 400 it defines, never a 500, by GET and by .search', async () => {
    const pieces = ['userName', 'emails', 'emails.value', 'externalId', 'displayName', 'active', 'id', 'meta.lastModified', 'title', 'members'];
    const ops = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr', 'and', 'or', 'not', '(', ')', '[', ']'];
    const values = ['"%"', '"_"', '"\\\\"', '"a"', 'true', 'false', 'null', '1', '"2026-01-01T00:00:00Z"', '"x\\""', "'", '"'];
    let seed = 11;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n);
    };
    const all = [...pieces, ...ops, ...values];
    for (let run = 0; run < 200; run += 1) {
      const length = 1 + random(9);
      const text = Array.from({ length }, (_, i) =>
        i % 3 === 0 ? pieces[random(pieces.length)] : i % 3 === 1 ? ops[random(ops.length)] : all[random(all.length)],
      ).join(' ');
      const answer =
        run % 2 === 0
          ? await scim('GET', filter(text))
          : await scim('POST', '/Users/.search', { schemas: [SEARCH], filter: text, sortBy: pieces[random(pieces.length)] });
      assert.ok(
        answer.status === 200 || (answer.status === 400 && ['invalidFilter', 'invalidValue'].includes(answer.body['scimType'] as string)),
        `${text}: ${JSON.stringify(answer.body)}`,
      );
    }
  });

  it('answers a NUL character in a resource, an id or a filter value as bad input (PostgreSQL keeps none), never a 500', async () => {
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: 'nul-title', title: 'a\u0000b' }), 400, 'invalidValue');
    assertError(
      await scim('POST', '/Users', { schemas: [USER], userName: 'nul-key', emails: [{ value: 'nul@example.com', 'ty\u0000pe': 'work' }] }),
      400,
      'invalidValue',
    );
    assertError(await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Nul', externalId: '\u0000' }), 400, 'invalidValue');
    assertError(await scim('GET', '/Users/%00'), 404);
    assertError(await scim('GET', '/Groups/a%00b'), 404);
    const found = await scim('GET', filter('userName eq "nul\\u0000" or externalId sw "\\u0000"'));
    assert.deepEqual([found.status, found.body['totalResults']], [200, 0]);
    assert.equal(await server.store.users.findByUsername('nul-title'), null, 'nothing made');
  });

  it('answers JSON nested deeper than any resource is with invalidValue, in a bulk operation, the manager and a PATCH, never a 500', async () => {
    const nested = (depth: number, inner: string) => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`;
    const operation = `{"method":"POST","path":"/Users","bulkId":"deep","data":${nested(200_000, '"bulkId:deep"')}}`;
    const bulk = await scim('POST', '/Bulk', `{"schemas":["urn:ietf:params:scim:api:messages:2.0:BulkRequest"],"Operations":[${operation}]}`);
    assertError(bulk, 400, 'invalidValue');
    const manager = `${'{"value":'.repeat(10_000)}"boss"${'}'.repeat(10_000)}`;
    const deep = await scim('POST', '/Users', `{"schemas":["${USER}","${ENTERPRISE}"],"userName":"deep-manager","${ENTERPRISE}":{"manager":${manager}}}`);
    assertError(deep, 400, 'invalidValue');
    assert.equal(await server.store.users.findByUsername('deep-manager'), null, 'nothing made');
    const user = await server.addUser({ username: 'deep-patch' });
    const patch = `{"schemas":["${PATCH}"],"Operations":[{"op":"add","path":"emails","value":${nested(100_000, '"x"')}}]}`;
    assertError(await scim('PATCH', `/Users/${user.id}`, patch), 400, 'invalidValue');
  });

  it('takes a manager of value, $ref and displayName, each text, and refuses anything else in it with invalidValue', async () => {
    const withManager = (username: string, manager: unknown) =>
      scim('POST', '/Users', { schemas: [USER, ENTERPRISE], userName: username, [ENTERPRISE]: { manager } });
    for (const manager of ['m-1', { value: { id: 'm-1' } }, { value: 'm-1', reports: { to: 'm-2' } }]) {
      assertError(await withManager('wrongly-managed', manager), 400, 'invalidValue');
    }
    assert.equal(await server.store.users.findByUsername('wrongly-managed'), null, 'nothing made');
    const manager = { value: 'm-1', $ref: `${server.config.issuer}/scim/v2/Users/m-1`, displayName: 'Ada' };
    const managed = await withManager('managed', manager);
    assert.equal(managed.status, 201, JSON.stringify(managed.body));
    assert.deepEqual((managed.body[ENTERPRISE] as Record<string, unknown>)['manager'], manager);
  });

  it('answers PATCH paths that do not exist with invalidPath, read-only ones with mutability, and wrong types with invalidValue', async () => {
    const user = await server.addUser({ username: 'patient', profile: { phoneNumber: '+44 20 7946 0958' } });
    const patch = (operations: unknown[]) => scim('PATCH', `/Users/${user.id}`, { schemas: [PATCH], Operations: operations });
    assertError(await patch([{ op: 'replace', path: 'shoeSize', value: '9' }]), 400, 'invalidPath');
    assertError(await patch([{ op: 'replace', path: 'emails[type eq "work"', value: 'x' }]), 400, 'invalidPath');
    assertError(await patch([{ op: 'replace', path: 'id', value: 'x' }]), 400, 'mutability');
    assertError(await patch([{ op: 'remove' }]), 400, 'noTarget');
    assertError(await patch([{ op: 'jump', path: 'title', value: 'x' }]), 400, 'invalidSyntax');
    assertError(await patch([{ op: 'replace', path: 'active', value: 'perhaps' }]), 400, 'invalidValue');
    assertError(
      await patch([
        { op: 'replace', path: 'title', value: 'ok' },
        { op: 'replace', path: 'locale', value: 42 },
      ]),
      400,
      'invalidValue',
    );
    assert.equal((await scim('GET', `/Users/${user.id}`)).body['title'], undefined, 'the first operation was not written either');
    const titled = await patch([{ op: 'replace', path: 'title', value: 'Patient' }]);
    assert.equal(titled.status, 200, JSON.stringify(titled.body));
    assert.equal((await server.store.users.get(user.id))?.phoneNumber, '+44 20 7946 0958', 'a claim PATCH did not name stays as the command set it');
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: 'bad name with spaces' }), 400, 'invalidValue');
    assertError(await scim('POST', '/Users', { schemas: [USER], userName: 'bad-email', emails: [{ value: 'not an address' }] }), 400, 'invalidValue');
    assertError(await scim('POST', '/Users', { schemas: [USER] }), 400, 'invalidValue');
  });

  it('answers an oversized body with 413, a body that is not JSON with invalidSyntax, and unknown endpoints with 404', async () => {
    assertError(await scim('POST', '/Users', JSON.stringify({ schemas: [USER], userName: 'big', title: 'x'.repeat(1_100_000) })), 413);
    assertError(await scim('POST', '/Users', '{not json'), 400, 'invalidSyntax');
    assertError(await scim('GET', '/Nothing'), 404);
    assertError(await scim('GET', '/Users/no-such-id'), 404);
  });

  it('counts wrong tokens from an address under the sign-in limit, then answers 429', async () => {
    let last: Answer | undefined;
    for (let i = 0; i < 45; i += 1) {
      last = await scim('GET', '/Users', undefined, {}, `scim_wrong-${i}`);
      if (last.status === 429) break;
    }
    assertError(last!, 429);
    assert.ok(Number(last!.headers.get('retry-after')) >= 1);
  });
});

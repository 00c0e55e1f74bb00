/**
 * Organizations without HTTP (docs/organizations.md): the operations behind `tessera org …`,
 * /admin/organizations and the console's organization pages, a table a rule. Covered: an
 * organization added with its defaults; the refusals, each naming its field (name, domain,
 * the flags, the provider, the bounds, a taken name or verified domain); updates that keep
 * what they do not name, and a changed domain verified again; removal and its members;
 * memberships and their roles; the authority a caller needs (a console operator's membership,
 * the policy on it, the organization holding it removed, a verified domain routed to a
 * provider: flows/manage/authority.ts); the audit events.
 * The scope `admin:orgs` itself is checked by the admin API's router (`area: 'orgs'`), not by
 * these operations: test/organizations.test.ts and test/admin-authority.test.ts check it, and
 * what the command and the API show; flows/organizations/routing.test.ts checks the routing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ROLE_SCOPES } from '../../core/scopes.ts';
import type { IdentityProviderRecord, Store } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import {
  addOrganization,
  getOrganization,
  listOrganizationMembers,
  MAX_ORGANIZATIONS,
  organizationJson,
  removeOrganization,
  removeOrganizationMember,
  setOrganizationMember,
  updateOrganization,
  type MemberInput,
  type OrganizationInput,
} from './organizations.ts';

const SSO: IdentityProviderRecord = {
  id: 'acme-sso',
  kind: 'oidc',
  name: 'Acme SSO',
  position: 0,
  secret: null,
  createdAt: 0,
  updatedAt: 0,
  settings: { issuer: 'https://sso.acme.example', clientId: 'tessera', scopes: ['openid', 'email'] },
};
const OTHER_SSO: IdentityProviderRecord = { ...SSO, id: 'other-sso', name: 'Other SSO', settings: { ...SSO.settings, issuer: 'https://sso.other.example' } };

/** A domain of exactly `length` characters, of labels of at most 63 (RFC 1035 §2.3.4). */
function domainOf(length: number): string {
  const labels: string[] = [];
  let left = length - '.example'.length;
  while (left > 0) {
    const size = Math.min(63, left);
    labels.push('a'.repeat(size));
    left -= size + 1;
  }
  const domain = `${labels.join('.')}.example`;
  assert.equal(domain.length, length);
  return domain;
}

describe('organizations (flows/manage/organizations.ts)', () => {
  let world: FlowWorld;
  let made = 0;

  before(async () => {
    world = await flowWorld();
    for (const provider of [SSO, OTHER_SSO]) await world.store.identityProviders.create(provider);
  });
  after(() => world.close());

  /** A name no organization has yet. */
  const fresh = (what = 'Org') => {
    made += 1;
    return `${what} ${made}`;
  };
  const events = async (
    type: 'organization.created' | 'organization.updated' | 'organization.removed' | 'organization.member_set' | 'organization.member_removed',
  ) => world.store.events.list({ type, limit: 1000 });
  /** A caller holding only `scopes`, as the admin API or the console gives a narrower one. */
  const caller = (...scopes: string[]) => ({ ...world.manage, caller: { scopes } });

  it('adds an organization with its defaults: an id of the server, its name trimmed, no domain, unverified, no provider, no policy', async () => {
    const organization = await addOrganization(world.manage, { name: '  Acme Corp  ', id: 'chosen-by-caller' } as OrganizationInput);
    assert.match(organization.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'the server gives the id (the org_id claim)');
    assert.deepEqual(organizationJson(organization), {
      id: organization.id,
      name: 'Acme Corp',
      domain: null,
      domain_verified: false,
      provider: null,
      require_passkey: false,
      require_second_factor: false,
      created_at: new Date(world.clock.now()).toISOString(),
      updated_at: new Date(world.clock.now()).toISOString(),
    });
    assert.deepEqual(await world.store.organizations.get(organization.id), organization, 'the store holds what was answered');
    assert.deepEqual(await getOrganization(world.manage, 'ACME corp'), organization, 'found by its name without regard to case');
    const [created] = (await events('organization.created')).filter((event) => event.detail['organization'] === organization.id);
    assert.deepEqual(created?.detail, { organization: organization.id, name: 'Acme Corp', domain: null, by: 'operator' });
  });

  it('adds one with every field given, the domain lower-cased, and empty values meaning none', async () => {
    const name = fresh('Full');
    const full = await addOrganization(world.manage, {
      name,
      domain: ' Full.EXAMPLE ',
      domain_verified: true,
      provider: SSO.id,
      require_passkey: true,
      require_second_factor: true,
    });
    assert.deepEqual(
      [full.domain, full.domainVerified, full.providerId, full.requirePasskey, full.requireSecondFactor],
      ['full.example', true, SSO.id, true, true],
    );
    const empty = await addOrganization(world.manage, { name: fresh(), domain: '', provider: '' });
    assert.deepEqual([empty.domain, empty.providerId], [null, null]);
    const none = await addOrganization(world.manage, { name: fresh(), domain: null, provider: null });
    assert.deepEqual([none.domain, none.providerId], [null, null]);
  });

  it('refuses an organization a rule forbids, naming the field, and stores nothing', async () => {
    const taken = await addOrganization(world.manage, { name: fresh('Taken'), domain: 'taken.example', domain_verified: true });
    const cases: [string, OrganizationInput, string][] = [
      ['no name', {}, 'invalid:name'],
      ['a blank name', { name: '   ' }, 'invalid:name'],
      ['a name that is no string', { name: 42 }, 'invalid:name'],
      ['a name of 201 characters', { name: 'n'.repeat(201) }, 'invalid:name'],
      ['a name on two lines', { name: 'Acme\nCorp' }, 'invalid:name'],
      ['a name with a control character', { name: 'Acme\x7f' }, 'invalid:name'],
      ['a name with a right-to-left override', { name: 'Acme\u202e' }, 'invalid:name'],
      ['a name with a line separator', { name: 'Acme\u2028Corp' }, 'invalid:name'],
      ['a domain of one label', { name: fresh(), domain: 'localhost' }, 'invalid:domain'],
      ['an e-mail address for a domain', { name: fresh(), domain: 'pat@acme.example' }, 'invalid:domain'],
      ['a URL for a domain', { name: fresh(), domain: 'https://acme.example' }, 'invalid:domain'],
      ['an empty label', { name: fresh(), domain: 'acme..example' }, 'invalid:domain'],
      ['a label starting with a hyphen (RFC 1035 §2.3.1)', { name: fresh(), domain: '-acme.example' }, 'invalid:domain'],
      ['a label ending with a hyphen', { name: fresh(), domain: 'acme-.example' }, 'invalid:domain'],
      ['an underscore', { name: fresh(), domain: 'ac_me.example' }, 'invalid:domain'],
      ['a trailing dot', { name: fresh(), domain: 'acme.example.' }, 'invalid:domain'],
      ['a numeric top-level label', { name: fresh(), domain: 'acme.123' }, 'invalid:domain'],
      ['a top-level label of one letter', { name: fresh(), domain: 'acme.x' }, 'invalid:domain'],
      ['a label of 64 characters (RFC 1035 §2.3.4: 63 at most)', { name: fresh(), domain: `${'a'.repeat(64)}.example` }, 'invalid:domain'],
      ['a domain of 254 characters (253 at most)', { name: fresh(), domain: domainOf(254) }, 'invalid:domain'],
      ['a domain that is no string', { name: fresh(), domain: 7 }, 'invalid:domain'],
      ['domain_verified that is no boolean', { name: fresh(), domain: 'x.example', domain_verified: 'yes' }, 'invalid:domain_verified'],
      ['a verified domain without a domain', { name: fresh(), domain_verified: true }, 'invalid:domain_verified'],
      ['a provider that does not exist', { name: fresh(), provider: 'nowhere' }, 'invalid:provider'],
      ['a provider that is no string', { name: fresh(), provider: 7 }, 'invalid:provider'],
      ['require_passkey that is no boolean', { name: fresh(), require_passkey: 'true' }, 'invalid:require_passkey'],
      ['require_second_factor that is no boolean', { name: fresh(), require_second_factor: 1 }, 'invalid:require_second_factor'],
      ['a name taken, written otherwise', { name: taken.name.toUpperCase() }, 'conflict:name'],
      ["another organization's verified domain, verified", { name: fresh(), domain: 'TAKEN.example', domain_verified: true }, 'conflict'],
    ];
    const before = (await world.store.organizations.list()).length;
    const createdBefore = (await events('organization.created')).length;
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addOrganization(world.manage, input)), expected, what);
    assert.equal((await world.store.organizations.list()).length, before, 'a refused organization is not stored');
    assert.equal((await events('organization.created')).length, createdBefore, 'nor said to be added');
  });

  it('takes the longest name and domain the bounds allow', async () => {
    const cases: [string, OrganizationInput][] = [
      ['a name of 200 characters', { name: 'n'.repeat(200) }],
      ['a label of 63 characters', { name: fresh(), domain: `${'a'.repeat(63)}.example` }],
      ['a domain of 253 characters', { name: fresh(), domain: domainOf(253) }],
    ];
    for (const [what, input] of cases) assert.equal(await outcome(() => addOrganization(world.manage, input)), 'ok', what);
  });

  it('lets two organizations give the same domain, but only one have it verified', async () => {
    const first = await addOrganization(world.manage, { name: fresh(), domain: 'shared.example' });
    const second = await addOrganization(world.manage, { name: fresh(), domain: 'shared.example' });
    assert.deepEqual([first.domain, second.domain], ['shared.example', 'shared.example'], 'unverified, a domain is only a claim');
    await updateOrganization(world.manage, first.id, { domain_verified: true });
    assert.equal(await outcome(() => updateOrganization(world.manage, second.id, { domain_verified: true })), 'conflict');
    assert.equal((await world.store.organizations.byVerifiedDomain('shared.example'))?.id, first.id, 'the domain stays the first one’s');
    assert.equal((await world.store.organizations.get(second.id))?.domainVerified, false);
  });

  it('refuses a new organization past the most a server keeps', async () => {
    const store: Store = {
      ...world.store,
      organizations: { ...world.store.organizations, list: async () => new Array(MAX_ORGANIZATIONS).fill(null) },
    };
    assert.equal(await outcome(() => addOrganization({ ...world.manage, store }, { name: fresh() })), 'conflict');
    const below: Store = { ...store, organizations: { ...world.store.organizations, list: async () => new Array(MAX_ORGANIZATIONS - 1).fill(null) } };
    assert.equal(await outcome(() => addOrganization({ ...world.manage, store: below }, { name: fresh() })), 'ok');
  });

  it('changes only the fields an update names, keeping the rest and the creation time, and says which were named', async () => {
    const name = fresh('Kept');
    const current = await addOrganization(world.manage, {
      name,
      domain: 'kept.example',
      domain_verified: true,
      provider: SSO.id,
      require_passkey: true,
      require_second_factor: true,
    });
    world.clock.advance(60_000);
    const renamed = await updateOrganization(world.manage, name.toLowerCase(), { name: `${name} Renamed` });
    assert.deepEqual(renamed, { ...current, name: `${name} Renamed`, updatedAt: world.clock.now() });
    assert.deepEqual(await world.store.organizations.get(current.id), renamed);
    const [updated] = (await events('organization.updated')).filter((event) => event.detail['organization'] === current.id);
    assert.deepEqual(updated?.detail, { organization: current.id, name: `${name} Renamed`, fields: 'name', by: 'operator' });

    world.clock.advance(1000);
    const flags = await updateOrganization(world.manage, current.id, { require_passkey: false, require_second_factor: false });
    assert.deepEqual([flags.name, flags.domain, flags.domainVerified, flags.providerId], [`${name} Renamed`, 'kept.example', true, SSO.id]);
    assert.deepEqual([flags.requirePasskey, flags.requireSecondFactor], [false, false]);
    const [latest] = (await events('organization.updated')).filter((event) => event.detail['organization'] === current.id);
    assert.equal(latest?.detail['fields'], 'require_passkey require_second_factor');

    const cleared = await updateOrganization(world.manage, current.id, { provider: null });
    assert.deepEqual([cleared.providerId, cleared.domain, cleared.domainVerified], [null, 'kept.example', true]);
  });

  it('verifies a changed domain again, only when told so', async () => {
    const org = await addOrganization(world.manage, { name: fresh(), domain: 'before.example', domain_verified: true, provider: SSO.id });
    const moved = await updateOrganization(world.manage, org.id, { domain: 'after.example' });
    assert.deepEqual([moved.domain, moved.domainVerified, moved.providerId], ['after.example', false, SSO.id], 'a new domain is not the one vouched for');
    assert.equal(await world.store.organizations.byVerifiedDomain('before.example'), null);
    assert.equal(await world.store.organizations.byVerifiedDomain('after.example'), null);
    const vouched = await updateOrganization(world.manage, org.id, { domain: 'again.example', domain_verified: true });
    assert.deepEqual([vouched.domain, vouched.domainVerified], ['again.example', true]);
    const same = await updateOrganization(world.manage, org.id, { domain: 'AGAIN.example' });
    assert.equal(same.domainVerified, true, 'the same domain, written otherwise, stays verified');
    const cleared = await updateOrganization(world.manage, org.id, { domain: null });
    assert.deepEqual([cleared.domain, cleared.domainVerified], [null, false], 'a verified domain cleared takes its verification with it');
    assert.equal(await world.store.organizations.byVerifiedDomain('again.example'), null);
  });

  it('refuses an update a rule forbids, naming the field, and changes nothing', async () => {
    const other = await addOrganization(world.manage, { name: fresh('Other'), domain: 'other.example', domain_verified: true });
    const name = fresh('Target');
    const target = await addOrganization(world.manage, { name, domain: 'target.example' });
    const cases: [string, OrganizationInput, string][] = [
      ['a blank name', { name: '' }, 'invalid:name'],
      ['no name at all', { name: null }, 'invalid:name'],
      ['a bad domain', { domain: 'target' }, 'invalid:domain'],
      ['a flag that is no boolean', { require_passkey: null }, 'invalid:require_passkey'],
      ['verified without a domain', { domain: null, domain_verified: true }, 'invalid:domain_verified'],
      ['a provider that does not exist', { provider: 'nowhere' }, 'invalid:provider'],
      ["another organization's name", { name: other.name.toLowerCase() }, 'conflict:name'],
      ["another organization's verified domain, verified", { domain: 'other.example', domain_verified: true }, 'conflict'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => updateOrganization(world.manage, target.id, input)), expected, what);
    assert.deepEqual(await world.store.organizations.get(target.id), target, 'a refused update changes nothing');
    assert.equal(await outcome(() => updateOrganization(world.manage, 'no such organization', { name: 'X' })), 'not_found');
  });

  it('makes a person a member, as member unless a role is given, and changes a role in place', async () => {
    const org = await addOrganization(world.manage, { name: fresh() });
    const pat = await world.addUser();
    const lee = await world.addUser();
    const joined = await setOrganizationMember(world.manage, org.name, { username: pat.username });
    assert.deepEqual(joined, { username: pat.username, role: 'member', user_id: pat.id, created_at: new Date(world.clock.now()).toISOString() });
    const since = joined.created_at;
    world.clock.advance(60_000);
    assert.equal((await setOrganizationMember(world.manage, org.id, { username: lee.username, role: 'owner' })).role, 'owner');
    const promoted = await setOrganizationMember(world.manage, org.id, { username: pat.username.toUpperCase(), role: 'admin' });
    assert.deepEqual([promoted.role, promoted.created_at], ['admin', since], 'a new role keeps when they joined');
    for (const role of [null, '']) {
      assert.equal((await setOrganizationMember(world.manage, org.id, { username: lee.username, role })).role, 'member', `role ${JSON.stringify(role)}`);
    }
    assert.deepEqual(
      (await listOrganizationMembers(world.manage, org.id)).map((member) => [member.username, member.role]),
      [
        [pat.username, 'admin'],
        [lee.username, 'member'],
      ],
      'each person once, oldest first',
    );
    const set = (await events('organization.member_set')).filter((event) => event.detail['organization'] === org.id);
    assert.deepEqual(
      set.map((event) => `${event.userId} ${event.username} ${event.detail['role']} ${event.detail['by']}`).sort(),
      [
        `${pat.id} ${pat.username} member operator`,
        `${lee.id} ${lee.username} owner operator`,
        `${pat.id} ${pat.username} admin operator`,
        `${lee.id} ${lee.username} member operator`,
        `${lee.id} ${lee.username} member operator`,
      ].sort(),
      'one event a change, with the person and the role given',
    );
  });

  it('refuses a membership a rule forbids, naming the field, and adds no one', async () => {
    const org = await addOrganization(world.manage, { name: fresh() });
    const pat = await world.addUser();
    const cases: [string, MemberInput, string][] = [
      ['no username', {}, 'invalid:username'],
      ['an empty username', { username: '' }, 'invalid:username'],
      ['a username that is no string', { username: 42 }, 'invalid:username'],
      ['no such person', { username: 'nobody-here' }, 'not_found'],
      ['a role there is not', { username: pat.username, role: 'boss' }, 'invalid:role'],
      ['a role written otherwise', { username: pat.username, role: 'Owner' }, 'invalid:role'],
      ['a role that is no string', { username: pat.username, role: 1 }, 'invalid:role'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => setOrganizationMember(world.manage, org.id, input)), expected, what);
    assert.deepEqual(await listOrganizationMembers(world.manage, org.id), []);
    assert.equal(await outcome(() => setOrganizationMember(world.manage, 'no such organization', { username: pat.username })), 'not_found');
  });

  it('keeps a person in several organizations apart: removed from one, still in the other', async () => {
    const a = await addOrganization(world.manage, { name: fresh('A') });
    const b = await addOrganization(world.manage, { name: fresh('B') });
    const pat = await world.addUser();
    const lee = await world.addUser();
    await setOrganizationMember(world.manage, a.id, { username: pat.username, role: 'owner' });
    await setOrganizationMember(world.manage, b.id, { username: pat.username });
    await setOrganizationMember(world.manage, b.id, { username: lee.username });
    assert.deepEqual(
      (await world.store.organizations.membershipsOf(pat.id)).map((membership) => [membership.organization.id, membership.role]).sort(),
      [
        [a.id, 'owner'],
        [b.id, 'member'],
      ].sort(),
      'a role in each',
    );
    assert.equal(
      await outcome(() => removeOrganizationMember(world.manage, a.id, lee.username)),
      'not_found',
      'a member of another organization is no member of this one',
    );
    await removeOrganizationMember(world.manage, a.id, pat.username);
    assert.deepEqual(
      (await world.store.organizations.membershipsOf(pat.id)).map((membership) => membership.organization.id),
      [b.id],
    );
    assert.deepEqual((await listOrganizationMembers(world.manage, b.id)).map((member) => member.username).sort(), [pat.username, lee.username].sort());
    const [removed] = (await events('organization.member_removed')).filter((event) => event.detail['organization'] === a.id);
    assert.deepEqual([removed?.userId, removed?.username, removed?.detail], [pat.id, pat.username, { organization: a.id, by: 'operator' }]);
    assert.equal(await outcome(() => removeOrganizationMember(world.manage, a.id, pat.username)), 'not_found', 'removed once');
    assert.equal(await outcome(() => removeOrganizationMember(world.manage, a.id, 'nobody-here')), 'not_found');
    assert.ok(await world.store.users.get(pat.id), 'the person stays');
  });

  it('removes an organization with its memberships, leaving its people, their other organizations and their approvals', async () => {
    const org = await addOrganization(world.manage, { name: fresh('Gone') });
    const stays = await addOrganization(world.manage, { name: fresh('Stays') });
    const pat = await world.addUser();
    await setOrganizationMember(world.manage, org.id, { username: pat.username, role: 'owner' });
    await setOrganizationMember(world.manage, stays.id, { username: pat.username });
    const { client } = await world.addClient({ client_name: 'Notes', redirect_uris: ['https://notes.example/cb'] });
    const grant = {
      id: `grant-${org.id}`,
      userId: pat.id,
      clientId: client.id,
      scope: ['openid', 'organization'],
      kind: 'authorization_code' as const,
      authTime: world.clock.now(),
      createdAt: world.clock.now(),
      revokedAt: null,
      device: null,
      organizationId: org.id,
    };
    await world.store.grants.create(grant);

    await removeOrganization(world.manage, org.name.toUpperCase());
    assert.equal(await outcome(() => getOrganization(world.manage, org.id)), 'not_found');
    assert.deepEqual(
      (await world.store.organizations.membershipsOf(pat.id)).map((membership) => membership.organization.id),
      [stays.id],
      'its memberships go with it',
    );
    assert.deepEqual(await world.store.organizations.members(org.id), []);
    assert.ok(await world.store.users.get(pat.id), 'its people stay');
    const kept = await world.store.grants.get(grant.id);
    assert.deepEqual([kept?.revokedAt, kept?.organizationId], [null, undefined], 'an approval given for it stays, for no organization');
    const [removed] = (await events('organization.removed')).filter((event) => event.detail['organization'] === org.id);
    assert.deepEqual(removed?.detail, { organization: org.id, name: org.name, by: 'operator' });
    assert.equal(await outcome(() => removeOrganization(world.manage, org.id)), 'not_found', 'removed once');
  });

  describe('authority (flows/manage/authority.ts)', () => {
    it('lets a caller without admin:providers manage an organization, but not route its verified domain to a provider', async () => {
      const orgs = caller('admin:orgs');
      const plain = await addOrganization(orgs, { name: fresh(), domain: 'plain.example', domain_verified: true, require_passkey: true });
      assert.deepEqual([plain.domainVerified, plain.providerId], [true, null], 'a verified domain without a provider routes nothing');
      const routed = await addOrganization(world.manage, { name: fresh(), domain: 'routed.example', domain_verified: true, provider: SSO.id });
      const unverified = await addOrganization(world.manage, { name: fresh(), domain: 'unverified.example', provider: SSO.id });
      const cases: [string, () => Promise<unknown>, string][] = [
        [
          'an organization added routed',
          () => addOrganization(orgs, { name: fresh(), domain: 'new.example', domain_verified: true, provider: SSO.id }),
          'forbidden:provider',
        ],
        ['a provider given to a verified domain', () => updateOrganization(orgs, plain.id, { provider: SSO.id }), 'forbidden:provider'],
        ['a routed domain sent to another provider', () => updateOrganization(orgs, routed.id, { provider: OTHER_SSO.id }), 'forbidden:provider'],
        ['a domain verified that has a provider', () => updateOrganization(orgs, unverified.id, { domain_verified: true }), 'forbidden:domain_verified'],
        [
          'a routed domain changed and verified again',
          () => updateOrganization(orgs, routed.id, { domain: 'elsewhere.example', domain_verified: true }),
          'forbidden:domain_verified',
        ],
        ['a routed organization renamed, its route as it is', () => updateOrganization(orgs, routed.id, { name: `${routed.name} Renamed` }), 'ok'],
        ['its route given again as it is', () => updateOrganization(orgs, routed.id, { provider: SSO.id, domain_verified: true }), 'ok'],
        ['a verified domain without a provider unverified', () => updateOrganization(orgs, plain.id, { domain_verified: false }), 'ok'],
      ];
      const updatedBefore = (await events('organization.updated')).length;
      for (const [what, run, expected] of cases) assert.equal(await outcome(run), expected, what);
      assert.equal((await events('organization.updated')).length, updatedBefore + 3, 'a refused change is not said to be made');
      assert.deepEqual(
        [(await world.store.organizations.get(routed.id))?.providerId, (await world.store.organizations.get(unverified.id))?.domainVerified],
        [SSO.id, false],
        'a refused change changes nothing',
      );
      const both = caller('admin:orgs', 'admin:providers');
      assert.equal(await outcome(() => updateOrganization(both, unverified.id, { domain_verified: true })), 'ok', 'admin:providers too: it may');
      assert.equal(await outcome(() => updateOrganization(both, routed.id, { provider: OTHER_SSO.id })), 'ok');
    });

    it("changes a console operator's memberships only for a caller holding every scope of their role", async () => {
      const org = await addOrganization(world.manage, { name: fresh() });
      const operator = await world.addUser({ role: 'admin' });
      const person = await world.addUser();
      const orgs = caller('admin:orgs', 'admin:users');
      assert.equal(await outcome(() => setOrganizationMember(orgs, org.id, { username: person.username })), 'ok', 'a person without a console role');
      assert.equal(await outcome(() => setOrganizationMember(orgs, org.id, { username: operator.username })), 'forbidden');
      assert.equal(await outcome(() => removeOrganizationMember(orgs, org.id, person.username)), 'ok');
      assert.deepEqual(await listOrganizationMembers(world.manage, org.id), [], 'the refused membership was not made');
      const admin = caller(...ROLE_SCOPES.admin);
      await setOrganizationMember(admin, org.id, { username: operator.username, role: 'owner' });
      assert.equal(await outcome(() => removeOrganizationMember(orgs, org.id, operator.username)), 'forbidden');
      assert.equal(await outcome(() => setOrganizationMember(orgs, org.id, { username: operator.username, role: 'member' })), 'forbidden');
      assert.deepEqual(
        (await listOrganizationMembers(world.manage, org.id)).map((member) => member.role),
        ['owner'],
        'still there, as owner',
      );
      assert.equal(await outcome(() => removeOrganizationMember(admin, org.id, operator.username)), 'ok');
    });

    it('removes an organization with a console operator among its members only for a caller holding every scope of their role, as for its policy', async () => {
      const org = await addOrganization(world.manage, { name: fresh('Strict'), require_passkey: true });
      const operator = await world.addUser({ role: 'admin' });
      await setOrganizationMember(world.manage, org.id, { username: operator.username, role: 'admin' });
      const orgs = caller('admin:orgs');
      const removedBefore = (await events('organization.removed')).length;
      assert.equal(await outcome(() => updateOrganization(orgs, org.id, { require_passkey: false })), 'forbidden', "the policy on the operator's approvals");
      assert.equal(
        await outcome(() => removeOrganization(orgs, org.id)),
        'forbidden',
        'removed, the organization takes that policy and their membership with it',
      );
      assert.deepEqual(await world.store.organizations.get(org.id), org, 'a refused removal removes nothing');
      assert.deepEqual(
        (await listOrganizationMembers(world.manage, org.id)).map((member) => [member.username, member.role]),
        [[operator.username, 'admin']],
        'the membership stays',
      );
      assert.equal((await events('organization.removed')).length, removedBefore, 'nor is it said to be removed');
      assert.equal(
        await outcome(() => removeOrganization(caller(...ROLE_SCOPES.admin), org.id)),
        'ok',
        "a caller holding every scope of the operator's role may",
      );
      assert.equal(await outcome(() => getOrganization(world.manage, org.id)), 'not_found');
    });
  });
});

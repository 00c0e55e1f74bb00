import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { OperatorRole } from '../../core/scopes.ts';
import type { IdentityProviderRecord } from '../../store/types.ts';
import { flowWorld, oidcProviderRecord, type FlowWorld } from '../../../test/helpers/flows.ts';
import { accountFor, joinOrganizationOfProvider, type UpstreamIdentity } from './accounts.ts';
import { providerSettings } from './settings.ts';

const LINKING = oidcProviderRecord('linking', { allowLinking: true });
const NOT_LINKING = oidcProviderRecord('separate', {});
const DOMAIN = oidcProviderRecord('corp', { allowLinking: true, allowedDomains: ['corp.example'] });

let subjects = 0;
function identity(email: string | null, emailVerified: boolean): UpstreamIdentity {
  subjects += 1;
  return {
    subject: `upstream-${subjects}`,
    label: email,
    username: null,
    email,
    emailVerified,
    name: 'Someone',
    givenName: null,
    familyName: null,
    picture: null,
    locale: null,
    zoneinfo: null,
    groups: [],
    amr: ['pwd'],
    authTime: null,
  };
}

describe('the account an upstream sign-in signs in as (accountFor)', () => {
  let world: FlowWorld;

  before(async () => {
    world = await flowWorld();
    for (const record of [LINKING, NOT_LINKING, DOMAIN]) await world.store.identityProviders.create(record);
  });
  after(() => world.close());

  /** What a first sign-in through `through` with `who` comes to: `linked`, `created`, or the refusal. */
  async function firstSignIn(through: IdentityProviderRecord, who: UpstreamIdentity, existing?: { id: string }): Promise<string> {
    const result = await accountFor(world.deps, through, providerSettings(through), who);
    const link = await world.store.linkedIdentities.get(through.id, who.subject);
    if (result.kind === 'refused') {
      assert.equal(link, null, `refused (${result.reason}), yet linked`);
      return result.reason;
    }
    assert.equal(link?.userId, result.user.id);
    return existing !== undefined && result.user.id === existing.id ? 'linked' : 'created';
  }

  it('links to the account with the same address only when both sides verified it, linking is allowed, and the account holds no role', async () => {
    const cases: [string, IdentityProviderRecord, { upstream: boolean; here: boolean; role?: OperatorRole; disabled?: boolean }, string][] = [
      ['both verified', LINKING, { upstream: true, here: true }, 'linked'],
      ['the provider did not verify it', LINKING, { upstream: false, here: true }, 'email_taken'],
      ['the account here did not verify it', LINKING, { upstream: true, here: false }, 'email_taken'],
      ['neither verified it', LINKING, { upstream: false, here: false }, 'email_taken'],
      ['linking not allowed for the provider', NOT_LINKING, { upstream: true, here: true }, 'email_taken'],
      ['the account holds a console role', LINKING, { upstream: true, here: true, role: 'support' }, 'console_role'],
      ['the account is disabled', LINKING, { upstream: true, here: true, disabled: true }, 'disabled'],
    ];
    let n = 0;
    for (const [what, through, sides, expected] of cases) {
      n += 1;
      const email = `person${n}@mail.example`;
      const account = await world.addUser({
        username: `person${n}`,
        email,
        emailVerified: sides.here,
        role: sides.role ?? null,
        disabled: sides.disabled ?? false,
      });
      assert.equal(await firstSignIn(through, identity(email, sides.upstream), account), expected, what);
    }
  });

  it('makes a new account for an address nobody here has, with the address only where the provider verified it, and signs the same person in through their link after', async () => {
    for (const verified of [true, false]) {
      const who = identity(`new-${String(verified)}@mail.example`, verified);
      const result = await accountFor(world.deps, LINKING, providerSettings(LINKING), who);
      assert.equal(result.kind, 'user');
      const user = result.kind === 'user' ? result.user : null;
      // An unverified address would be anyone's: kept, it would hold the address against its owner.
      assert.equal(user?.email, verified ? who.email : null);
      assert.equal(user?.emailVerified, verified);
      assert.equal(user?.username.includes('@'), verified, 'nor is it the username');
      const again = await accountFor(world.deps, LINKING, providerSettings(LINKING), who);
      assert.equal(again.kind === 'user' ? again.user.id : again.reason, user?.id);
    }
  });

  it("holds no one's address for an unverified claim: its owner's verified sign-in after it makes their own account, not the first one's", async () => {
    const victim = 'victim@mail.example';
    const first = await accountFor(world.deps, LINKING, providerSettings(LINKING), identity(victim, false));
    assert.equal(first.kind, 'user');
    const owner = await accountFor(world.deps, LINKING, providerSettings(LINKING), identity(victim, true));
    assert.equal(owner.kind, 'user', 'not refused as email_taken: the address was not taken');
    assert.notEqual(owner.kind === 'user' && owner.user.id, first.kind === 'user' && first.user.id);
    assert.deepEqual(
      (await world.store.users.findByEmail(victim)).map((user) => [user.id, user.emailVerified]),
      [[owner.kind === 'user' ? owner.user.id : '', true]],
    );
  });

  it('makes no second account with an address another door gave away meanwhile: refused as email_taken, not a 500', async () => {
    const email = 'raced@mail.example';
    await world.addUser({ username: 'raced-here', email: email.toUpperCase(), emailVerified: false });
    // The look for an account with the address ran before the other door's write.
    const deps = { ...world.deps, store: { ...world.store, linkedIdentities: { ...world.store.linkedIdentities, usersWithEmail: async () => [] } } };
    const who = identity(email, true);
    const result = await accountFor(deps, LINKING, providerSettings(LINKING), who);
    assert.deepEqual(result.kind === 'refused' ? result.reason : result.kind, 'email_taken');
    assert.equal(await world.store.linkedIdentities.get(LINKING.id, who.subject), null, 'nothing linked');
    assert.equal((await world.store.users.findByEmail(email)).length, 1, 'nothing made');
  });

  it('lets in only a verified address in an allowed domain', async () => {
    const cases: [string, boolean, string][] = [
      ['a@corp.example', true, 'created'],
      ['b@corp.example', false, 'domain_not_allowed'],
      ['c@elsewhere.example', true, 'domain_not_allowed'],
      ['c@CORP.example', true, 'created'],
    ];
    for (const [email, verified, expected] of cases)
      assert.equal(await firstSignIn(DOMAIN, identity(email, verified)), expected, `${email} ${verified ? 'verified' : 'unverified'}`);
    assert.equal(await firstSignIn(DOMAIN, identity(null, true)), 'domain_not_allowed', 'no address');
  });
});

describe("an organization's own provider makes the people it signs in members (joinOrganizationOfProvider)", () => {
  let world: FlowWorld;
  const SSO = oidcProviderRecord('acme-sso', {});
  const org = {
    id: 'org-acme',
    name: 'Acme',
    domain: 'acme.example',
    domainVerified: true,
    providerId: SSO.id,
    requirePasskey: false,
    requireSecondFactor: false,
    createdAt: 0,
    updatedAt: 0,
  };

  before(async () => {
    world = await flowWorld();
    for (const record of [SSO, LINKING]) await world.store.identityProviders.create(record);
    await world.store.organizations.create(org);
    await world.store.organizations.create({ ...org, id: 'org-unverified', name: 'Unverified', domain: 'unverified.example', domainVerified: false });
  });
  after(() => world.close());

  const roleIn = async (organizationId: string, userId: string) =>
    (await world.store.organizations.membershipsOf(userId)).find((membership) => membership.organization.id === organizationId)?.role ?? 'none';

  it('joins a verified address of the verified domain signed in by that provider, as a member, once; and no one else', async () => {
    const cases: [string, IdentityProviderRecord, string, boolean, { role?: OperatorRole }, string, string][] = [
      ['its provider, a verified address of its domain', SSO, 'ann@acme.example', true, {}, org.id, 'member'],
      ['the domain written otherwise', SSO, 'bob@ACME.example', true, {}, org.id, 'member'],
      ['an address the provider did not verify', SSO, 'cy@acme.example', false, {}, org.id, 'none'],
      ['another domain', SSO, 'dee@elsewhere.example', true, {}, org.id, 'none'],
      ['another provider, the same domain', LINKING, 'eve@acme.example', true, {}, org.id, 'none'],
      ['a console role holder', SSO, 'fay@acme.example', true, { role: 'support' }, org.id, 'none'],
      ['a domain not verified', SSO, 'gus@unverified.example', true, {}, 'org-unverified', 'none'],
    ];
    for (const [what, through, email, verified, fields, organizationId, expected] of cases) {
      const user = await world.addUser({ username: email.split('@')[0]!, email: email.toLowerCase(), emailVerified: true, role: fields.role ?? null });
      // Signed in twice: joined at the first.
      for (let time = 0; time < 2; time++) await joinOrganizationOfProvider(world.deps, through, identity(email, verified), user);
      assert.equal(await roleIn(organizationId, user.id), expected, what);
    }
    const joined = await world.store.events.list({ type: 'organization.member_set', limit: 10 });
    assert.deepEqual(joined.map((event) => [event.username, event.detail['by'], event.detail['provider']]).toSorted(), [
      ['ann', 'sign-in', SSO.id],
      ['bob', 'sign-in', SSO.id],
    ]);
  });

  it("keeps an owner's role, and records nothing, when the owner signs in through the provider", async () => {
    const owner = await world.addUser({ username: 'olga', email: 'olga@acme.example', emailVerified: true });
    await world.store.organizations.setMember({ organizationId: org.id, userId: owner.id, role: 'owner', createdAt: 0 });
    const before = (await world.store.events.list({ type: 'organization.member_set', limit: 100 })).length;
    await joinOrganizationOfProvider(world.deps, SSO, identity('olga@acme.example', true), owner);
    assert.equal(await roleIn(org.id, owner.id), 'owner');
    assert.equal((await world.store.events.list({ type: 'organization.member_set', limit: 100 })).length, before);
  });
});

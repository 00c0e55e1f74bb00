/**
 * The store contract for organizations and their members, run inside `storeContract` against
 * every store: an organization reads back as written, its name is taken once whatever its
 * case and a verified domain once, a membership is set in one statement (added, or its role
 * changed), a person's memberships come with their organizations, and an approval keeps the
 * organization it was given for (and a later one without a choice keeps it still), a device's
 * grant too.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import { DuplicateError, type ClientRecord, type OrganizationRecord, type Store, type UserRecord } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 3, 1);

export function organizationsContract({
  store: current,
  unique,
  givenUser,
  givenClient,
}: {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
  readonly givenUser: () => Promise<UserRecord>;
  readonly givenClient: () => Promise<ClientRecord>;
}): void {
  const organization = (overrides: Partial<OrganizationRecord> = {}): OrganizationRecord => ({
    id: unique('org'),
    name: unique('Org'),
    domain: `${unique('d')}.example`,
    domainVerified: true,
    providerId: null,
    requirePasskey: true,
    requireSecondFactor: false,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  });

  describe('organizations', () => {
    it('reads an organization back as written, by id, by name without case and by its verified domain', async () => {
      const store = current();
      const written = organization();
      await store.organizations.create(written);
      assert.deepEqual(await store.organizations.get(written.id), written);
      assert.deepEqual(await store.organizations.byName(written.name.toUpperCase()), written);
      assert.deepEqual(await store.organizations.byVerifiedDomain(written.domain!), written);
      assert.ok((await store.organizations.list()).some((listed) => listed.id === written.id));
      const unverified = organization({ domainVerified: false });
      await store.organizations.create(unverified);
      assert.equal(await store.organizations.byVerifiedDomain(unverified.domain!), null, 'an unverified domain routes nothing');
    });

    it('takes a name once whatever its case, and a verified domain once', async () => {
      const store = current();
      const first = organization();
      await store.organizations.create(first);
      await assert.rejects(store.organizations.create(organization({ name: first.name.toLowerCase() })), DuplicateError);
      await assert.rejects(store.organizations.create(organization({ domain: first.domain })), DuplicateError);
      // Unverified, the same domain is another organization's claim, not a route.
      await store.organizations.create(organization({ domain: first.domain, domainVerified: false }));
      const other = organization();
      await store.organizations.create(other);
      await assert.rejects(store.organizations.update({ ...other, name: first.name }), DuplicateError);
      assert.equal(await store.organizations.update({ ...other, name: `${other.name} Renamed`, requireSecondFactor: true, updatedAt: T0 + 1 }), true);
      assert.deepEqual(await store.organizations.get(other.id), { ...other, name: `${other.name} Renamed`, requireSecondFactor: true, updatedAt: T0 + 1 });
      assert.equal(await store.organizations.update(organization()), false, 'none with the id');
    });

    it('sets a membership in one statement, lists members and memberships, and removes them with the organization', async () => {
      const store = current();
      const org = organization();
      await store.organizations.create(org);
      const user = await givenUser();
      await store.organizations.setMember({ organizationId: org.id, userId: user.id, role: 'member', createdAt: T0 });
      await store.organizations.setMember({ organizationId: org.id, userId: user.id, role: 'owner', createdAt: T0 + 5 });
      assert.deepEqual(await store.organizations.members(org.id), [
        { organizationId: org.id, userId: user.id, role: 'owner', createdAt: T0, username: user.username, consoleRole: null },
      ]);
      // With the console role the person holds, read in the same statement (manage/organizations.ts checkMayChangeMembers).
      assert.equal(await store.users.setRole(user.id, 'admin'), true);
      assert.deepEqual(
        (await store.organizations.members(org.id)).map((member) => member.consoleRole),
        ['admin'],
      );
      assert.deepEqual(await store.organizations.membershipsOf(user.id), [{ organization: org, role: 'owner' }]);
      assert.equal(await store.organizations.removeMember(org.id, user.id), true);
      assert.equal(await store.organizations.removeMember(org.id, user.id), false);
      await store.organizations.setMember({ organizationId: org.id, userId: user.id, role: 'admin', createdAt: T0 });
      assert.equal(await store.organizations.remove(org.id), true);
      assert.deepEqual(await store.organizations.membershipsOf(user.id), []);
      assert.equal(await store.organizations.remove(org.id), false);
    });

    it('joins a person once, in one statement, leaving the role of one who is a member already', async () => {
      const store = current();
      const org = organization();
      await store.organizations.create(org);
      const [owner, newcomer] = [await givenUser(), await givenUser()];
      await store.organizations.setMember({ organizationId: org.id, userId: owner.id, role: 'owner', createdAt: T0 });
      assert.equal(await store.organizations.join({ organizationId: org.id, userId: owner.id, role: 'member', createdAt: T0 + 5 }), false);
      assert.equal(await store.organizations.join({ organizationId: org.id, userId: newcomer.id, role: 'member', createdAt: T0 + 5 }), true);
      assert.equal(await store.organizations.join({ organizationId: org.id, userId: newcomer.id, role: 'admin', createdAt: T0 + 9 }), false);
      assert.deepEqual(
        (await store.organizations.members(org.id)).map((member) => [member.username, member.role, member.createdAt]),
        [
          [owner.username, 'owner', T0],
          [newcomer.username, 'member', T0 + 5],
        ],
      );
    });

    it('keeps the organization an approval was given for, through a later approval that chose none', async () => {
      const store = current();
      const org = organization();
      await store.organizations.create(org);
      const [user, client] = [await givenUser(), await givenClient()];
      const approval = { id: unique('grant'), userId: user.id, clientId: client.id, scope: ['openid', 'organization'], authTime: T0 };
      const first = await store.grants.remember({ ...approval, organizationId: org.id }, T0);
      assert.equal(first.organizationId, org.id);
      const again = await store.grants.remember({ ...approval, id: unique('grant') }, T0 + 1000);
      assert.equal(again.id, first.id);
      assert.equal(again.organizationId, org.id, 'kept');
      assert.equal((await store.grants.get(first.id))?.organizationId, org.id);
      await store.organizations.remove(org.id);
      assert.equal((await store.grants.get(first.id))?.organizationId, undefined, 'a removed organization leaves the grant without one');
    });

    it("keeps the organization a device's grant was approved for", async () => {
      const store = current();
      const org = organization();
      await store.organizations.create(org);
      const [user, client] = [await givenUser(), await givenClient()];
      const grant = {
        id: unique('grant'),
        userId: user.id,
        clientId: client.id,
        scope: ['openid', 'organization'],
        kind: GRANT_DEVICE_CODE,
        authTime: T0,
        createdAt: T0,
        revokedAt: null,
        device: { ip: '192.0.2.1', userAgent: null, requestedAt: T0 },
      } as const;
      await store.grants.create({ ...grant, organizationId: org.id });
      assert.equal((await store.grants.get(grant.id))?.organizationId, org.id);
      const without = unique('grant');
      await store.grants.create({ ...grant, id: without });
      assert.equal((await store.grants.get(without))?.organizationId, undefined);
    });
  });
}

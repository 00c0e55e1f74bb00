/**
 * The store contract for SCIM provisioning (docs/scim.md), run inside `storeContract` against
 * every store: tokens found by their hash, names unique; SCIM's attributes of a person kept
 * and replaced whole, and gone with the account; groups unique by name without regard to
 * case, changed only at the version read, their memberships gone with the group and the person.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError, type GroupRecord, type Store, type UserRecord } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 5, 1);

export interface ScimContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
  readonly givenUser: (overrides?: Partial<UserRecord>) => Promise<UserRecord>;
}

export function scimContract({ store: current, unique, givenUser }: ScimContractHelpers): void {
  const group = (overrides: Partial<GroupRecord> = {}): GroupRecord => ({
    id: unique('group'),
    displayName: unique('Group'),
    externalId: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  });

  describe('SCIM tokens, attributes and groups', () => {
    it('finds a token by its hash, refuses a taken name, records its use at most once a minute, and removes it', async () => {
      const store = current();
      const token = { id: unique('scim'), name: unique('Entra ID'), tokenHash: unique('hash'), createdAt: T0, lastUsedAt: null };
      await store.scimTokens.create(token);
      assert.deepEqual(await store.scimTokens.findByHash(token.tokenHash), token);
      assert.equal(await store.scimTokens.findByHash('no such hash'), null);
      await assert.rejects(store.scimTokens.create({ ...token, id: unique('scim'), tokenHash: unique('hash') }), DuplicateError);
      await store.scimTokens.markUsed(token.id, T0 + 1000);
      await store.scimTokens.markUsed(token.id, T0 + 2000);
      assert.equal((await store.scimTokens.findByHash(token.tokenHash))?.lastUsedAt, T0 + 1000, 'not again within the minute');
      assert.ok((await store.scimTokens.list()).some((listed) => listed.id === token.id));
      assert.equal(await store.scimTokens.remove(token.id), true);
      assert.equal(await store.scimTokens.remove(token.id), false);
      assert.equal(await store.scimTokens.findByHash(token.tokenHash), null);
    });

    it("keeps SCIM's attributes of a person, replaces them whole, and drops them with the account", async () => {
      const store = current();
      const user = await givenUser();
      await store.scimUsers.put({ userId: user.id, externalId: 'ext-1', attributes: { title: 'Engineer', enterprise: { department: 'R&D' } } });
      await store.scimUsers.put({ userId: user.id, externalId: 'ext-2', attributes: { title: 'Lead' } });
      assert.deepEqual(await store.scimUsers.get(user.id), { userId: user.id, externalId: 'ext-2', attributes: { title: 'Lead' } });
      assert.ok((await store.scimUsers.list()).some((record) => record.userId === user.id));
      assert.deepEqual(await store.scimUsers.existing([user.id, 'no-such-user', `${user.id}'`]), [user.id], 'which of the ids are accounts');
      assert.deepEqual(await store.scimUsers.existing([]), []);
      await store.users.remove(user.id);
      assert.equal(await store.scimUsers.get(user.id), null);
    });

    it('keeps e-mail addresses unique without regard to case, saying which value a refused account takes', async () => {
      const store = current();
      const ada = await givenUser({ email: `${unique('ada')}@Example.com` });
      const grace = await givenUser();
      const taken = (field: string) => (error: unknown) => error instanceof DuplicateError && error.field === field;
      await assert.rejects(givenUser({ email: ada.email!.toUpperCase() }), taken('email'));
      await assert.rejects(givenUser({ username: ada.username, email: `${unique('other')}@example.com` }), taken('username'));
      await assert.rejects(store.users.update(grace.id, { email: ada.email!.toLowerCase() }, T0 + 1), taken('email'));
      assert.equal((await store.users.get(grace.id))?.email, grace.email, 'nothing written');
      assert.equal(await store.users.update(grace.id, { email: grace.email!.toUpperCase() }, T0 + 2), true, 'its own address, in other case');
      assert.equal(await store.users.update(grace.id, { email: null }, T0 + 3), true);
      assert.equal(await store.users.update(ada.id, { email: null }, T0 + 4), true, 'accounts without an address do not clash');
      assert.deepEqual(
        (await store.users.findByEmail(grace.email!)).map((user) => user.id),
        [],
      );
    });

    it('renames a user only to a username nobody else has', async () => {
      const store = current();
      const [ada, grace] = [await givenUser(), await givenUser()];
      assert.equal(await store.users.rename(ada.id, grace.username), false);
      assert.equal(await store.users.rename(ada.id, `${ada.username}.renamed`), true);
      assert.equal((await store.users.get(ada.id))?.username, `${ada.username}.renamed`);
      assert.equal((await store.users.findByUsername(`${ada.username}.renamed`))?.id, ada.id);
      assert.equal(await store.users.rename('nobody', 'x'), false);
    });

    it('keeps groups unique by name without regard to case, changes one only at the version read, and keeps its members', async () => {
      const store = current();
      const [ada, grace] = [await givenUser(), await givenUser()];
      const first = group();
      await store.groups.create(first);
      assert.deepEqual(await store.groups.get(first.id), first);
      await assert.rejects(store.groups.create(group({ displayName: first.displayName.toUpperCase() })), DuplicateError);
      const second = group();
      await store.groups.create(second);
      await assert.rejects(store.groups.update(second.id, { displayName: first.displayName.toLowerCase(), externalId: null }, T0, T0 + 1), DuplicateError);
      assert.equal(await store.groups.update(first.id, { displayName: `${first.displayName} renamed`, externalId: 'x' }, T0, T0 + 5), true);
      assert.equal(await store.groups.update(first.id, { displayName: 'stale', externalId: null }, T0, T0 + 6), false, 'not at a version it no longer has');
      assert.deepEqual(await store.groups.get(first.id), { ...first, displayName: `${first.displayName} renamed`, externalId: 'x', updatedAt: T0 + 5 });

      await store.groups.addMember(first.id, ada.id);
      await store.groups.addMember(first.id, ada.id);
      await store.groups.addMember(first.id, grace.id);
      await store.groups.addMember(second.id, ada.id);
      assert.deepEqual(await store.groups.members(first.id), [ada.id, grace.id].sort());
      assert.deepEqual(await store.groups.namesOf(ada.id), [`${first.displayName} renamed`, second.displayName].sort());
      assert.deepEqual((await store.groups.groupsOf(ada.id)).map((g) => g.id).sort(), [first.id, second.id].sort());
      assert.deepEqual(
        [...(await store.groups.membersNamed(first.id))].sort((a, b) => (a.id < b.id ? -1 : 1)),
        [ada, grace].map((user) => ({ id: user.id, username: user.username })).sort((a, b) => (a.id < b.id ? -1 : 1)),
      );
      assert.deepEqual(
        (await store.groups.everyMemberNamed())
          .filter((m) => m.groupId === first.id)
          .map((m) => m.id)
          .sort(),
        [ada.id, grace.id].sort(),
      );
      await store.groups.removeMember(first.id, grace.id);
      assert.deepEqual(await store.groups.members(first.id), [ada.id]);
      await store.users.remove(ada.id);
      assert.deepEqual(await store.groups.members(first.id), [], 'gone with the person');
      await store.groups.addMember(second.id, grace.id);
      assert.equal(await store.groups.remove(second.id), true);
      assert.deepEqual(await store.groups.namesOf(grace.id), [], 'gone with the group');
      assert.ok(!(await store.groups.memberships()).some((membership) => membership.groupId === second.id));
    });
  });
}

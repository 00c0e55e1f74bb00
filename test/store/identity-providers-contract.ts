/**
 * The store contract for upstream identity providers, run inside `storeContract`
 * against every store: providers keep what they were given (a sealed secret as an opaque
 * object), links follow their provider and their user, and a sign-in under way upstream is
 * used once.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError, type IdentityProviderRecord, type Store, type UserRecord } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

export interface IdentityContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
  readonly givenUser: (overrides?: Partial<UserRecord>) => Promise<UserRecord>;
}

export function identityProvidersContract({ store: current, unique, givenUser }: IdentityContractHelpers): void {
  const provider = (overrides: Partial<IdentityProviderRecord> = {}): IdentityProviderRecord => ({
    id: unique('idp'),
    kind: 'oidc',
    name: 'Upstream',
    position: 0,
    settings: { issuer: 'https://id.example.com', clientId: 'abc', scopes: ['openid', 'email'], only: false },
    secret: { enc: 'A256GCM', kek: 'k', iv: 'i', ciphertext: 'c', tag: 't' },
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  });

  describe('identity providers, linked identities and sign-ins under way upstream', () => {
    it('keeps a provider as given, refuses a taken id, lists by position, updates and removes', async () => {
      const store = current();
      const first = provider({ position: 5 });
      const second = provider({ position: 1, kind: 'ldap', secret: null, settings: { url: 'ldaps://ldap.example.com', userFilter: '(uid={username})' } });
      await store.identityProviders.create(first);
      await store.identityProviders.create(second);
      assert.deepEqual(await store.identityProviders.get(first.id), first);
      await assert.rejects(store.identityProviders.create(provider({ id: first.id })), DuplicateError);
      const listed = (await store.identityProviders.list()).filter((record) => record.id === first.id || record.id === second.id);
      assert.deepEqual(
        listed.map((record) => record.id),
        [second.id, first.id],
      );
      const changed = { ...first, name: 'Renamed', position: 0, secret: null, settings: { ...first.settings, only: true }, updatedAt: T0 + MINUTE };
      assert.equal(await store.identityProviders.update(changed), true);
      assert.deepEqual(await store.identityProviders.get(first.id), changed);
      assert.equal(await store.identityProviders.update({ ...changed, id: 'nobody' }), false);
      assert.equal(await store.identityProviders.remove(second.id), true);
      assert.equal(await store.identityProviders.remove(second.id), false);
      assert.equal(await store.identityProviders.get(second.id), null);
    });

    it('links an upstream identity to one user, records its use, and drops links with their provider or user', async () => {
      const store = current();
      const idp = provider();
      await store.identityProviders.create(idp);
      const user = await givenUser();
      const link = {
        providerId: idp.id,
        subject: 'upstream-sub-1',
        userId: user.id,
        label: 'a@example.com',
        groups: ['staff'],
        createdAt: T0,
        lastUsedAt: null,
      };
      assert.equal(await store.linkedIdentities.anyForProvider(idp.id), false);
      await store.linkedIdentities.create(link);
      assert.equal(await store.linkedIdentities.anyForProvider(idp.id), true);
      assert.equal(await store.linkedIdentities.anyForProvider('another-provider'), false);
      await assert.rejects(store.linkedIdentities.create({ ...link, userId: (await givenUser()).id }), DuplicateError);
      assert.deepEqual(await store.linkedIdentities.get(idp.id, 'upstream-sub-1'), link);
      assert.equal(
        await store.linkedIdentities.recordUse(idp.id, 'upstream-sub-1', { label: 'b@example.com', groups: ['staff', 'admins'] }, T0 + MINUTE),
        true,
      );
      assert.deepEqual(await store.linkedIdentities.listForUser(user.id), [
        { ...link, label: 'b@example.com', groups: ['staff', 'admins'], lastUsedAt: T0 + MINUTE },
      ]);
      assert.equal(await store.linkedIdentities.remove(idp.id, 'upstream-sub-1', 'someone else'), false);
      // Removing the provider unlinks its identities; the user stays.
      await store.identityProviders.remove(idp.id);
      assert.deepEqual(await store.linkedIdentities.listForUser(user.id), []);
      assert.ok(await store.users.get(user.id));
      // Removing the user unlinks theirs.
      const other = provider();
      await store.identityProviders.create(other);
      await store.linkedIdentities.create({ ...link, providerId: other.id });
      assert.equal(await store.users.remove(user.id), true);
      assert.equal(await store.linkedIdentities.get(other.id, link.subject), null);
    });

    it("unlinks every upstream identity of one user at once, and no one else's", async () => {
      const store = current();
      const [first, second] = [provider(), provider()];
      for (const idp of [first, second]) await store.identityProviders.create(idp);
      const [user, other] = [await givenUser(), await givenUser()];
      const link = (providerId: string, subject: string, userId: string) => ({
        providerId,
        subject,
        userId,
        label: null,
        groups: [],
        createdAt: T0,
        lastUsedAt: null,
      });
      const kept = link(first.id, unique('sub'), other.id);
      for (const record of [link(first.id, unique('sub'), user.id), link(second.id, unique('sub'), user.id), kept]) await store.linkedIdentities.create(record);
      assert.equal(await store.linkedIdentities.removeAllForUser(user.id), 2);
      assert.deepEqual(await store.linkedIdentities.listForUser(user.id), []);
      assert.deepEqual(await store.linkedIdentities.listForUser(other.id), [kept]);
      assert.equal(await store.linkedIdentities.removeAllForUser(user.id), 0);
    });

    it('finds the user who has an e-mail address, without regard to case (no second account may have it)', async () => {
      const store = current();
      const email = `${unique('person')}@Example.com`;
      const verified = await givenUser({ createdAt: T0 });
      await store.users.update(verified.id, { email, emailVerified: true }, T0);
      const other = await givenUser({ createdAt: T0 + 1 });
      await assert.rejects(store.users.update(other.id, { email: email.toLowerCase(), emailVerified: false }, T0), DuplicateError);
      assert.deepEqual(
        (await store.linkedIdentities.usersWithEmail(email.toUpperCase())).map((user) => [user.id, user.emailVerified]),
        [[verified.id, true]],
      );
    });

    it('uses a sign-in under way once, only while it lives, and purges it once expired', async () => {
      const store = current();
      const idp = provider();
      await store.identityProviders.create(idp);
      const login = {
        stateHash: unique('state'),
        providerId: idp.id,
        nonce: 'n',
        codeVerifier: 'v',
        returnTo: '/account',
        clientId: null,
        maxAge: 0,
        createdAt: T0,
        expiresAt: T0 + 10 * MINUTE,
      };
      await store.upstreamLogins.create(login);
      const [a, b] = await Promise.all([
        store.upstreamLogins.consume(login.stateHash, T0 + MINUTE),
        store.upstreamLogins.consume(login.stateHash, T0 + MINUTE),
      ]);
      assert.deepEqual(
        [a, b].filter((found) => found !== null),
        [login],
        'exactly one caller receives it',
      );
      const late = { ...login, stateHash: unique('state'), maxAge: null };
      await store.upstreamLogins.create(late);
      assert.equal(await store.upstreamLogins.consume(late.stateHash, T0 + 10 * MINUTE), null, 'expired');
      assert.ok((await store.purgeExpired(T0 + 11 * MINUTE)) >= 1);
      await store.upstreamLogins.create({ ...late, expiresAt: T0 + 20 * MINUTE });
      const again = await store.upstreamLogins.consume(late.stateHash, T0 + 12 * MINUTE);
      assert.ok(again, 'the purged one was gone: its state could be stored again');
      assert.equal(again.maxAge, null, 'a sign-in not asked to be a new one');
    });
  });
}

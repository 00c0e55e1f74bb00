/**
 * The store contract for SAML service providers and the AuthnRequest ids seen, run inside
 * `storeContract` against every store: a registration reads back as written, an entity ID is
 * registered once, and a request id is accepted once until it expires.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError, type SamlServiceProviderRecord, type Store } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 3, 1);

export function samlContract({ store: current, unique }: { readonly store: () => Store; readonly unique: (prefix: string) => string }): void {
  const sp = (overrides: Partial<SamlServiceProviderRecord> = {}): SamlServiceProviderRecord => ({
    id: unique('sp'),
    entityId: `https://${unique('sp')}.example/saml`,
    name: 'Wiki',
    acsUrls: ['https://wiki.example/acs', 'https://wiki.example/acs2'],
    // As its metadata numbered them (SAML Metadata §2.2.3), not by position.
    acsIndexes: { '1': 'https://wiki.example/acs', '7': 'https://wiki.example/acs2' },
    sloUrl: 'https://wiki.example/slo',
    sloBinding: 'post',
    nameIdFormat: 'transient',
    attributes: { mail: 'email', uid: 'preferred_username' },
    wantSignedRequests: true,
    signResponse: true,
    idpInitiated: true,
    certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
    encryptionCertificate: '-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----',
    nameIdSalt: 'salt',
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  });

  describe('SAML service providers', () => {
    it('reads a registration back as written, by id and by entity ID, and lists it', async () => {
      const store = current();
      const written = sp();
      await store.samlServiceProviders.create(written);
      assert.deepEqual(await store.samlServiceProviders.get(written.id), written);
      assert.deepEqual(await store.samlServiceProviders.byEntityId(written.entityId), written);
      assert.ok((await store.samlServiceProviders.list()).some((listed) => listed.id === written.id));
      const bare = sp({
        name: null,
        sloUrl: null,
        sloBinding: 'redirect',
        certificate: null,
        encryptionCertificate: null,
        attributes: {},
        wantSignedRequests: false,
        signResponse: false,
        idpInitiated: false,
        nameIdFormat: 'email',
      });
      await store.samlServiceProviders.create(bare);
      assert.deepEqual(await store.samlServiceProviders.get(bare.id), bare);
    });

    it('registers an entity ID once', async () => {
      const store = current();
      const first = sp();
      await store.samlServiceProviders.create(first);
      await assert.rejects(store.samlServiceProviders.create(sp({ entityId: first.entityId })), DuplicateError);
    });

    it('updates every field but the entity ID, the id and when it was made; removes it', async () => {
      const store = current();
      const written = sp();
      await store.samlServiceProviders.create(written);
      const changed = {
        ...written,
        entityId: 'https://other.example',
        name: null,
        acsUrls: ['https://x.example/acs'],
        acsIndexes: { '0': 'https://x.example/acs' },
        sloUrl: null,
        sloBinding: 'redirect' as const,
        nameIdFormat: 'persistent' as const,
        attributes: {},
        wantSignedRequests: false,
        signResponse: false,
        idpInitiated: false,
        certificate: null,
        encryptionCertificate: null,
        updatedAt: T0 + 1,
      };
      assert.equal(await store.samlServiceProviders.update(changed), true);
      assert.deepEqual(await store.samlServiceProviders.get(written.id), { ...changed, entityId: written.entityId });
      assert.equal(await store.samlServiceProviders.update({ ...changed, id: unique('none') }), false);
      assert.equal(await store.samlServiceProviders.remove(written.id), true);
      assert.equal(await store.samlServiceProviders.get(written.id), null);
      assert.equal(await store.samlServiceProviders.remove(written.id), false);
    });

    it('accepts an AuthnRequest id once until it expires, then again', async () => {
      const store = current();
      const key = unique('request');
      assert.equal(await store.samlRequests.use(key, T0 + 1000, T0), true);
      assert.equal(await store.samlRequests.use(key, T0 + 1000, T0 + 500), false, 'a replay');
      const together = await Promise.all([1, 2, 3].map(() => store.samlRequests.use(`${key}-race`, T0 + 1000, T0)));
      assert.equal(together.filter(Boolean).length, 1, 'one of several callers at once');
      assert.equal(await store.samlRequests.use(key, T0 + 3000, T0 + 1000), true, 'expired records give way');
    });

    it('records the SPs of a session, the later assertion replacing the earlier, and gives each to one taker only', async () => {
      const store = current();
      const [a, b] = [sp(), sp()];
      await store.samlServiceProviders.create(a);
      await store.samlServiceProviders.create(b);
      const sid = unique('sid');
      const joined = { sid, spId: a.id, nameId: 'first', nameIdFormat: 'urn:x', sessionIndex: sid, expiresAt: T0 + 1000 };
      await store.samlSessionSps.join(joined);
      await store.samlSessionSps.join({ ...joined, nameId: 'second', expiresAt: T0 + 2000 });
      await store.samlSessionSps.join({ ...joined, spId: b.id });
      await store.samlSessionSps.join({ ...joined, sid: unique('other') });
      const taken = await Promise.all([1, 2, 3].map(() => store.samlSessionSps.take(sid)));
      const all = taken.flat().sort((x, y) => x.spId.localeCompare(y.spId));
      assert.deepEqual(
        all,
        [
          { ...joined, nameId: 'second', expiresAt: T0 + 2000 },
          { ...joined, spId: b.id },
        ].sort((x, y) => x.spId.localeCompare(y.spId)),
        'each SP once, as last recorded',
      );
      assert.deepEqual(await store.samlSessionSps.take(sid), []);
      const gone = unique('gone');
      await store.samlSessionSps.join({ ...joined, sid: gone });
      assert.equal(await store.samlServiceProviders.remove(a.id), true);
      assert.deepEqual(await store.samlSessionSps.take(gone), [], 'an SP removed takes its sessions with it');
    });

    it("purges a session's SPs once the last of them has expired, not before", async () => {
      const store = current();
      // Long before any other case's records, and the one kept far after: the purge counts of the other cases stay exact.
      const early = Date.UTC(1972, 0, 1);
      const [a, b] = [sp(), sp()];
      await store.samlServiceProviders.create(a);
      await store.samlServiceProviders.create(b);
      const record = { nameId: 'n', nameIdFormat: 'urn:x', sessionIndex: 'i' };
      const [sid, gone] = [unique('sid'), unique('sid')];
      await store.samlSessionSps.join({ ...record, sid, spId: a.id, expiresAt: early });
      await store.samlSessionSps.join({ ...record, sid, spId: b.id, expiresAt: Date.UTC(2100, 0, 1) });
      await store.samlSessionSps.join({ ...record, sid: gone, spId: a.id, expiresAt: early });
      await store.purgeExpired(early + 1);
      assert.deepEqual(await store.samlSessionSps.take(gone), []);
      assert.deepEqual((await store.samlSessionSps.take(sid)).map((each) => each.spId).sort(), [a.id, b.id].sort());
    });

    it('keeps a single logout under way for the one who takes it, before it expires', async () => {
      const store = current();
      const hash = unique('logout');
      const chain = { remaining: [{ sp: 'x', nameId: 'n' }], after: { kind: 'page' } };
      await store.samlLogouts.save(hash, chain, T0 + 1000);
      const taken = await Promise.all([1, 2].map(() => store.samlLogouts.take(hash, T0)));
      assert.deepEqual(
        taken.filter((value) => value !== null),
        [chain],
      );
      const late = unique('late');
      await store.samlLogouts.save(late, chain, T0 + 1000);
      assert.equal(await store.samlLogouts.take(late, T0 + 1000), null, 'expired');
    });
  });
}

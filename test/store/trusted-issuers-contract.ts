/**
 * The store contract for trusted issuers (the identity providers whose ID-JAGs are redeemed),
 * run inside `storeContract` against every store: each read back as written, its keys given
 * or its keys' URL (one of the two, as the table's CHECK says), one per issuer.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuplicateError, type Store, type TrustedIssuerRecord } from '../../src/store/types.ts';

export function trustedIssuersContract({ store: current, unique }: { readonly store: () => Store; readonly unique: (prefix: string) => string }): void {
  describe('trustedIssuers', () => {
    const issuer = (overrides: Partial<TrustedIssuerRecord> = {}): TrustedIssuerRecord => ({
      issuer: `https://${unique('idp')}.example.com`,
      jwksUri: 'https://idp.example.com/.well-known/jwks.json',
      jwks: null,
      addedByOwner: false,
      createdAt: Date.UTC(2026, 10, 1),
      ...overrides,
    });

    it('reads each back as written, by issuer and in the list, and removes it once', async () => {
      const store = current();
      const byUri = issuer();
      const byKeys = issuer({
        jwksUri: null,
        jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y', kid: 'k1' }] },
        addedByOwner: true,
        createdAt: Date.UTC(2026, 10, 2),
      });
      await store.trustedIssuers.create(byUri);
      await store.trustedIssuers.create(byKeys);
      assert.deepEqual(await store.trustedIssuers.get(byUri.issuer), byUri);
      assert.deepEqual(await store.trustedIssuers.get(byKeys.issuer), byKeys);
      const listed = (await store.trustedIssuers.list()).filter((record) => record.issuer === byUri.issuer || record.issuer === byKeys.issuer);
      assert.deepEqual(listed, [byUri, byKeys], 'oldest first');
      assert.equal(await store.trustedIssuers.remove(byUri.issuer), true);
      assert.equal(await store.trustedIssuers.remove(byUri.issuer), false);
      assert.equal(await store.trustedIssuers.get(byUri.issuer), null);
    });

    it('refuses a second with the same issuer with DuplicateError, and one with both or neither of keys and their URL', async () => {
      const store = current();
      const first = issuer();
      await store.trustedIssuers.create(first);
      await assert.rejects(store.trustedIssuers.create({ ...first, jwksUri: 'https://elsewhere.example/jwks.json' }), DuplicateError);
      await assert.rejects(store.trustedIssuers.create(issuer({ jwks: { keys: [] } })));
      await assert.rejects(store.trustedIssuers.create(issuer({ jwksUri: null })));
    });
  });
}

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { IdentityProviderRecord } from '../store/identity-providers.ts';
import { KeyEncryption } from './key-encryption.ts';
import { resealProviderSecrets, secretBox } from './secret-box.ts';

describe('provider secrets sealed under the key encryption key', () => {
  const old = randomBytes(32);
  const next = randomBytes(32);

  it('opens only for the provider it was sealed for, and never keeps the secret in clear', () => {
    const box = secretBox(new KeyEncryption([old]));
    const sealed = box.seal('google', 'client secret');
    assert.doesNotMatch(JSON.stringify(sealed), /client secret/);
    assert.equal(box.open('google', sealed), 'client secret');
    assert.throws(() => box.open('github', sealed), 'bound to its provider');
    assert.throws(() => box.open('google', { secret: 'client secret' }), /not sealed/);
  });

  it('is sealed again under the new key when the key is rotated, and opens with the new key alone', async () => {
    const sealed = secretBox(new KeyEncryption([old])).seal('google', 'client secret');
    let stored: IdentityProviderRecord = { id: 'google', kind: 'oidc', name: 'Google', position: 0, settings: {}, secret: sealed, createdAt: 0, updatedAt: 0 };
    const store = {
      identityProviders: {
        list: async () => [stored],
        update: async (record: IdentityProviderRecord) => {
          stored = record;
          return true;
        },
      },
    } as never;
    assert.equal(await resealProviderSecrets(store, new KeyEncryption([next, old])), 1);
    assert.equal(secretBox(new KeyEncryption([next])).open('google', stored.secret!), 'client secret');
    assert.equal(await resealProviderSecrets(store, new KeyEncryption([next])), 0, 'nothing left to do');
  });
});

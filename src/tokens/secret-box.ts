/**
 * Secrets Tessera must use in clear but must not keep in clear: an upstream
 * provider's client secret, a directory's bind password. Sealed with AES-256-GCM under the
 * key encryption key that seals the signing keys (`key-encryption.ts`), bound to what they
 * belong to, so that a copy of the database holds nothing that signs in upstream, and a
 * sealed secret moved to another provider's row does not open.
 */
import type { Store } from '../store/types.ts';
import type { KeyEncryption } from './key-encryption.ts';

export interface SecretBox {
  /** `secret` sealed for `owner` (a provider's id), as the store keeps it. */
  seal(owner: string, secret: string): Record<string, unknown>;
  /** The secret `seal` sealed for `owner`; throws when it was sealed for another, or under a key not given. */
  open(owner: string, sealed: Readonly<Record<string, unknown>>): string;
}

export function secretBox(encryption: KeyEncryption): SecretBox {
  const aad = (owner: string) => `secret:${owner}`;
  return {
    seal: (owner, secret) => encryption.encrypt(aad(owner), { secret }) as unknown as Record<string, unknown>,
    open(owner, sealed) {
      // A clear object is never sealed: `decrypt` would hand it back as it is.
      if (sealed['enc'] !== 'A256GCM') throw new Error(`the secret of ${owner} is not sealed`);
      const opened = encryption.decrypt(aad(owner), sealed)['secret'];
      if (typeof opened !== 'string') throw new Error(`the secret of ${owner} does not open`);
      return opened;
    },
  };
}

/**
 * Seals again, under the first KEK, every provider secret sealed under an older one: run at
 * start beside `encryptStoredKeys`, so that rotating the KEK (`NEW,OLD`, then `NEW` alone)
 * carries the providers' secrets over as it does the signing keys. Returns how many changed.
 */
export async function resealProviderSecrets(store: Pick<Store, 'identityProviders'>, encryption: KeyEncryption): Promise<number> {
  const box = secretBox(encryption);
  let changed = 0;
  for (const provider of await store.identityProviders.list()) {
    if (provider.secret === null || !encryption.needsEncrypting(provider.secret)) continue;
    await store.identityProviders.update({ ...provider, secret: box.seal(provider.id, box.open(provider.id, provider.secret)) });
    changed += 1;
  }
  return changed;
}

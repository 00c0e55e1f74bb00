/** Signing keys: the one implementation `tessera keys` and the admin API call. */
import type { SigningKeyRecord } from '../../store/types.ts';
import type { KeyManager } from '../../tokens/keys.ts';
import { isoTime, type ManageDeps } from './deps.ts';

/** The signing keys, published or not, oldest first: never their private parts. */
export async function listKeys(deps: Pick<ManageDeps, 'store'>): Promise<Record<string, unknown>[]> {
  return (await deps.store.keys.list()).map((key) => ({
    kid: key.kid,
    alg: key.alg,
    created_at: isoTime(key.createdAt),
    activates_at: isoTime(key.activatesAt),
    retires_at: isoTime(key.retiresAt),
    expires_at: isoTime(key.expiresAt),
  }));
}

/** Publishes new signing keys (one per algorithm); they sign after the lead time. */
export async function rotateKeys(deps: Pick<ManageDeps, 'events'> & { readonly keys: KeyManager }): Promise<SigningKeyRecord[]> {
  await deps.keys.ensureKeys();
  const rotated = await deps.keys.rotate();
  await deps.events.emit({ type: 'keys.rotated', detail: { kids: rotated.map((key) => key.kid).join(' '), by: 'operator' } });
  return rotated;
}

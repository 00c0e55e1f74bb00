/** Signing keys: the one implementation `tessera keys` and the admin API call. */
import type { SigningKeyRecord } from '../../store/types.ts';
import type { KeyManager } from '../../tokens/keys.ts';
import type { ManageDeps } from './deps.ts';

/** Publishes new signing keys (one per algorithm); they sign after the lead time. */
export async function rotateKeys(deps: Pick<ManageDeps, 'events'> & { readonly keys: KeyManager }): Promise<SigningKeyRecord[]> {
  await deps.keys.ensureKeys();
  const rotated = await deps.keys.rotate();
  await deps.events.emit({ type: 'keys.rotated', detail: { kids: rotated.map((key) => key.kid).join(' '), by: 'operator' } });
  return rotated;
}

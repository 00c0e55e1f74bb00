/** Signing keys: the one implementation `tessera keys` and the admin API call. */
import type { SigningKeyRecord } from '../../store/types.ts';
import type { KeyManager } from '../../tokens/keys.ts';
import { isoTime, type ManageDeps } from './deps.ts';

/** A key's state at `now`: what an operator checks after a rotation. */
export function keyState(key: SigningKeyRecord, now: number): string {
  if (key.expiresAt !== null && key.expiresAt <= now) return 'withdrawn';
  if (key.activatesAt > now) return `published, signs from ${new Date(key.activatesAt).toISOString()}`;
  if (key.retiresAt !== null && key.retiresAt <= now) return `retired, published until ${isoTime(key.expiresAt) ?? 'never'}`;
  return 'signing';
}

/** The published signing keys at `now`, oldest first. */
export async function listKeys(deps: Pick<ManageDeps, 'store'>, now: number): Promise<SigningKeyRecord[]> {
  return deps.store.keys.listPublished(now);
}

/** A key as `keys list --json` and the admin API give it: never its private part. */
export function keyJson(key: SigningKeyRecord, now: number): Record<string, unknown> {
  return {
    kid: key.kid,
    alg: key.alg,
    created_at: isoTime(key.createdAt),
    activates_at: isoTime(key.activatesAt),
    retires_at: isoTime(key.retiresAt),
    expires_at: isoTime(key.expiresAt),
    state: keyState(key, now),
  };
}

/** Publishes new signing keys (one per algorithm); they sign after the lead time. */
export async function rotateKeys(deps: Pick<ManageDeps, 'events'> & { readonly keys: KeyManager }): Promise<SigningKeyRecord[]> {
  await deps.keys.ensureKeys();
  const rotated = await deps.keys.rotate();
  await deps.events.emit({ type: 'keys.rotated', detail: { kids: rotated.map((key) => key.kid).join(' '), by: 'operator' } });
  return rotated;
}

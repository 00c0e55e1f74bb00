/**
 * Initial access tokens (RFC 7591 §3): what the operator hands to whoever may register
 * clients when `TESSERA_REGISTRATION=token`. The one implementation `tessera
 * registration-token` and the admin API call. A token is shown once; only its hash is kept.
 */
import { randomUUID } from 'node:crypto';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import type { InitialAccessTokenRecord } from '../../store/types.ts';
import type { ManageDeps } from './deps.ts';
import { field, invalid, notFound } from './errors.ts';

/** A day by default; at most a year. */
export const DEFAULT_INITIAL_TOKEN_TTL = 86_400;
export const MAX_INITIAL_TOKEN_TTL = 365 * 86_400;
export const MAX_INITIAL_TOKEN_USES = 1_000_000;

export interface InitialTokenInput {
  readonly ttl_seconds?: number;
  /** Absent: any number of registrations until it expires. */
  readonly max_uses?: number;
}

/** Makes a token; returns it (shown once) with its record. */
export async function createInitialAccessToken(deps: ManageDeps, input: InitialTokenInput = {}): Promise<{ token: string; record: InitialAccessTokenRecord }> {
  const ttl = input.ttl_seconds ?? DEFAULT_INITIAL_TOKEN_TTL;
  if (!Number.isInteger(ttl) || ttl < 60 || ttl > MAX_INITIAL_TOKEN_TTL)
    throw invalid`${field('ttl_seconds')} ${ttl}: a number of seconds from 60 to ${MAX_INITIAL_TOKEN_TTL}`;
  const maxUses = input.max_uses ?? null;
  if (maxUses !== null && !(Number.isInteger(maxUses) && maxUses >= 1 && maxUses <= MAX_INITIAL_TOKEN_USES)) {
    throw invalid`${field('max_uses')} ${maxUses}: a whole number from 1 to ${MAX_INITIAL_TOKEN_USES}`;
  }
  const token = randomToken(32);
  const now = deps.clock.now();
  const record: InitialAccessTokenRecord = { id: randomUUID(), tokenHash: hashSecret(token), createdAt: now, expiresAt: now + ttl * 1000, maxUses, uses: 0 };
  await deps.store.initialAccessTokens.create(record);
  await deps.events.emit({
    type: 'registration_token.created',
    detail: { id: record.id, expires_at: new Date(record.expiresAt).toISOString(), max_uses: maxUses, by: 'operator' },
  });
  return { token, record };
}

export async function listInitialAccessTokens(deps: Pick<ManageDeps, 'store' | 'clock'>): Promise<InitialAccessTokenRecord[]> {
  return deps.store.initialAccessTokens.list(deps.clock.now());
}

export async function removeInitialAccessToken(deps: ManageDeps, id: string): Promise<void> {
  if (!(await deps.store.initialAccessTokens.remove(id))) throw notFound`no registration token with id ${id}`;
  await deps.events.emit({ type: 'registration_token.removed', detail: { id, by: 'operator' } });
}

/** A token as `registration-token list --json` and the admin API give it: never the token. */
export function initialAccessTokenJson(record: InitialAccessTokenRecord): Record<string, unknown> {
  return {
    id: record.id,
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
    max_uses: record.maxUses,
    uses: record.uses,
  };
}

/**
 * SCIM tokens (docs/scim.md): the long-lived bearer tokens a provisioning system (Entra ID,
 * Okta) calls `/scim/v2` with. The one implementation `tessera scim token`, the admin API and
 * the console call. A token is shown once, when made; only its hash is kept (core/crypto.ts),
 * and it is found by that hash (flows/scim/auth.ts). Making or removing one is managing
 * people's accounts: the `admin:users` scope's.
 */
import { randomUUID } from 'node:crypto';
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { DuplicateError, type ScimTokenRecord } from '../../store/types.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';

/** A server has at most this many SCIM tokens: one or two per provisioning system. */
export const MAX_SCIM_TOKENS = 100;
/** What a SCIM token starts with, so that a leaked one is recognised (secret scanners). */
export const SCIM_TOKEN_PREFIX = 'scim_';

export interface ScimTokenInput {
  readonly name?: unknown;
}

/** Makes a token; returns it (shown only now) with its record. */
export async function addScimToken(deps: ManageDeps, input: ScimTokenInput): Promise<{ record: ScimTokenRecord; token: string }> {
  const name = typeof input.name === 'string' ? input.name.trim() : '';
  if (name === '') throw invalid`${field('name')} is required: who calls with the token (the provisioning system, e.g. Entra ID)`;
  if (name.length > 100) throw invalid`${field('name')}: at most 100 characters`;
  if (hasUnsafeCharacters(name)) throw invalid`${field('name')} ${UNSAFE_CHARACTERS_RULE}`;
  if ((await deps.store.scimTokens.list()).length >= MAX_SCIM_TOKENS) throw conflict`a server has at most ${MAX_SCIM_TOKENS} SCIM tokens: remove one first`;
  const token = `${SCIM_TOKEN_PREFIX}${randomToken(32)}`;
  const record: ScimTokenRecord = { id: randomUUID(), name, tokenHash: hashSecret(token), createdAt: deps.clock.now(), lastUsedAt: null };
  try {
    await deps.store.scimTokens.create(record);
  } catch (error) {
    if (error instanceof DuplicateError) throw conflict`${field('name')} ${name}: a SCIM token of that name exists; remove it first, or give another name`;
    throw error;
  }
  await deps.events.emit({ type: 'scim_token.created', detail: { id: record.id, name, by: 'operator' } });
  return { record, token };
}

export async function listScimTokens(deps: Pick<ManageDeps, 'store'>): Promise<ScimTokenRecord[]> {
  return deps.store.scimTokens.list();
}

export async function getScimToken(deps: Pick<ManageDeps, 'store'>, id: string): Promise<ScimTokenRecord> {
  const token = (await deps.store.scimTokens.list()).find((candidate) => candidate.id === id);
  if (token === undefined) throw notFound`no SCIM token with id ${id}`;
  return token;
}

/** Withdraws a token: the next request made with it is refused. */
export async function removeScimToken(deps: ManageDeps, id: string): Promise<void> {
  const token = await getScimToken(deps, id);
  if (!(await deps.store.scimTokens.remove(id))) throw notFound`no SCIM token with id ${id}`;
  await deps.events.emit({ type: 'scim_token.removed', detail: { id, name: token.name, by: 'operator' } });
}

/** A token as `scim token list --json` and the admin API give it: never the token. */
export function scimTokenJson(token: ScimTokenRecord): Record<string, unknown> {
  return { id: token.id, name: token.name, created_at: isoTime(token.createdAt), last_used_at: isoTime(token.lastUsedAt) };
}

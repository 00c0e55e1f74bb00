/**
 * Registering APIs (RFC 8707 resources) and their scopes: the one implementation the
 * `tessera resource` commands and the admin API call.
 */
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { SUPPORTED_SCOPES } from '../../core/scopes.ts';
import { DuplicateError, type ResourceChanges, type ResourceRecord, type ResourceScope } from '../../store/types.ts';
import { resourceIndicatorProblem } from '../resources.ts';
import type { SigningAlgorithm } from '../../config/index.ts';
import type { ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;
/** Bounds on what the operator registers for an API. */
export const MAX_RESOURCE_NAME = 100;
export const MAX_SCOPE_DESCRIPTION = 200;
export const MAX_RESOURCE_IDENTIFIER = 1024;
export const MAX_RESOURCE_SCOPES = 100;
/** An API's own access token lifetime: from one minute to one day. */
export const ACCESS_TOKEN_TTL_RANGE = { min: 60, max: 86_400 } as const;

export interface ResourceInput {
  readonly identifier?: string;
  readonly name?: string;
  readonly scopes?: readonly ResourceScope[];
  /** Seconds; null or absent: the server's default. */
  readonly access_token_ttl?: number | null;
  /** Give the API a secret to introspect tokens with, returned once. */
  readonly introspection_secret?: boolean;
  /** What its access tokens are signed with; RS256 when absent (RFC 9068 §2.1). */
  readonly signing_alg?: string;
}

/** RFC 9068 §2.1: resource servers must accept RS256; ES256 is cheaper to sign, for APIs that take it. */
export const API_SIGNING_ALGORITHMS = ['RS256', 'ES256'] as const satisfies readonly SigningAlgorithm[];

function checkSigningAlg(value: string | undefined): SigningAlgorithm | undefined {
  if (value === undefined) return undefined;
  const alg = API_SIGNING_ALGORITHMS.find((candidate) => candidate === value.trim().toUpperCase());
  if (alg === undefined) throw invalid`${field('signing_alg')} ${value}: ${API_SIGNING_ALGORITHMS.join(' or ')}`;
  return alg;
}

/** An API as `resource list --json` and the admin API give it. */
export function resourceJson(resource: ResourceRecord): Record<string, unknown> {
  return {
    identifier: resource.identifier,
    name: resource.name,
    scopes: resource.scopes.map((scope) => ({ name: scope.name, description: scope.description })),
    access_token_ttl: resource.accessTokenTtl,
    signing_alg: resource.signingAlg,
    introspection: resource.introspectionSecretHash !== null,
  };
}

/** Whether `identifier` is the issuer or a URL under it, however its scheme and host are cased. */
function ownUrl(identifier: string, issuer: string): boolean {
  let url: URL;
  try {
    url = new URL(identifier);
  } catch {
    return false;
  }
  const own = new URL(issuer);
  if (url.origin !== own.origin) return false;
  const base = own.pathname.replace(/\/$/, '');
  return url.pathname === base || url.pathname === `${base}/` || url.pathname.startsWith(`${base}/`) || base === '';
}

/** A scope of an API, checked: `label` is how the message shows it (`NAME=DESCRIPTION` on the command line). */
function checkScope(scope: ResourceScope, label: string): ResourceScope {
  const description = scope.description.trim();
  if (!SCOPE_TOKEN.test(scope.name))
    throw invalid`${field('scopes')} ${label}: the name must be 1-128 printable characters without spaces, quotes or backslashes (RFC 6749 §3.3)`;
  if (SUPPORTED_SCOPES.includes(scope.name)) throw invalid`${field('scopes')} ${scope.name}: an OpenID Connect scope cannot belong to an API`;
  // An admin scope named by an API would read, in a client's registration, as the admin API's own.
  if (scope.name.startsWith('admin:')) throw invalid`${field('scopes')} ${scope.name}: names beginning admin: are the admin API's (docs/admin-api.md)`;
  if (!description) throw invalid`${field('scopes')} ${label}: give what it lets an application do, as NAME=DESCRIPTION ("photos:read=See your photos")`;
  if (description.length > MAX_SCOPE_DESCRIPTION)
    throw invalid`${field('scopes')} ${scope.name}: the description must be at most ${MAX_SCOPE_DESCRIPTION} characters`;
  // Shown on the consent page and printed by the command (core/display-text.ts).
  if (hasUnsafeCharacters(description)) throw invalid`${field('scopes')} ${scope.name}: the description ${UNSAFE_CHARACTERS_RULE}`;
  return { name: scope.name, description };
}

function checkName(raw: string | undefined): string {
  const name = raw?.trim();
  if (!name) throw invalid`${field('name')} is required: what people see on the consent page`;
  if (name.length > MAX_RESOURCE_NAME) throw invalid`${field('name')} must be at most ${MAX_RESOURCE_NAME} characters`;
  if (hasUnsafeCharacters(name)) throw invalid`${field('name')} ${UNSAFE_CHARACTERS_RULE}`;
  return name;
}

/** An API's scopes, each checked: at least one, at most MAX_RESOURCE_SCOPES, none twice. */
function checkScopes(given: readonly ResourceScope[], scopeLabel: (scope: ResourceScope) => string): ResourceScope[] {
  const scopes = given.map((scope) => checkScope(scope, scopeLabel(scope)));
  if (scopes.length === 0) throw invalid`${field('scopes')} NAME=DESCRIPTION is required, at least once`;
  if (scopes.length > MAX_RESOURCE_SCOPES) throw invalid`${field('scopes')}: at most ${MAX_RESOURCE_SCOPES}`;
  const repeated = scopes.find((scope, index) => scopes.findIndex((other) => other.name === scope.name) !== index);
  if (repeated) throw invalid`${field('scopes')} ${repeated.name} is given twice`;
  return scopes;
}

function checkTtl(ttl: number | null): number | null {
  if (ttl !== null && !(Number.isInteger(ttl) && ttl >= ACCESS_TOKEN_TTL_RANGE.min && ttl <= ACCESS_TOKEN_TTL_RANGE.max)) {
    throw invalid`${field('access_token_ttl')} ${ttl}: a number of seconds from ${ACCESS_TOKEN_TTL_RANGE.min} to ${ACCESS_TOKEN_TTL_RANGE.max}`;
  }
  return ttl;
}

/** Scope names are unique across the server: none of `scopes` may belong to another API. */
function checkScopesFree(other: ResourceRecord, scopes: readonly ResourceScope[]): void {
  const taken = scopes.find((scope) => other.scopes.some((held) => held.name === scope.name));
  if (taken) throw conflict`scope ${taken.name} already belongs to ${other.name} (${other.identifier}); scope names are unique across the server`;
}

/**
 * Registers an API. Returns it and, when asked for, the secret its resource server
 * introspects tokens with, shown once.
 */
export async function addResource(
  deps: ManageDeps,
  input: ResourceInput,
  scopeLabel: (scope: ResourceScope) => string = (scope) => scope.name,
): Promise<{ resource: ResourceRecord; introspectionSecret: string | null }> {
  const identifier = input.identifier ?? '';
  if (!identifier) throw invalid`${field('identifier')} is required: the API's URI, such as https://api.example.com`;
  const problem = identifier.length > MAX_RESOURCE_IDENTIFIER ? 'is too long' : resourceIndicatorProblem(identifier);
  if (problem) throw invalid`${field('identifier')} ${identifier}: ${problem} (RFC 8707 §2)`;
  // The server's own URLs are its own audiences (the admin API's <issuer>/admin, UserInfo):
  // an API registered there would be handed tokens the server takes for its own.
  if (ownUrl(identifier, deps.config.issuer))
    throw invalid`${field('identifier')} ${identifier}: is this server's own URL (${deps.config.issuer}); an API has an identifier of its own`;
  const name = checkName(input.name);
  const scopes = checkScopes(input.scopes ?? [], scopeLabel);
  const ttl = checkTtl(input.access_token_ttl ?? null);
  const signingAlg = checkSigningAlg(input.signing_alg) ?? 'RS256';
  const secret = input.introspection_secret ? randomToken(32) : null;
  // Named before writing, so the one line says which API holds a taken scope.
  for (const resource of await deps.store.resources.list()) {
    if (resource.identifier === identifier) throw conflict`an API with identifier ${identifier} is already registered`;
    checkScopesFree(resource, scopes);
  }
  const resource: ResourceRecord = {
    identifier,
    name,
    scopes,
    accessTokenTtl: ttl,
    introspectionSecretHash: secret === null ? null : hashSecret(secret),
    signingAlg,
    createdAt: deps.clock.now(),
  };
  try {
    await deps.store.transaction((tx) => tx.resources.create(resource));
  } catch (error) {
    // Another registration got there between the check and the write.
    if (error instanceof DuplicateError)
      throw conflict`${error.message.replace(/^resource /, 'an API with identifier ').replace(/ already exists$/, ' is already registered')}`;
    throw error;
  }
  await deps.events.emit({ type: 'resource.created', detail: { resource: identifier, scope: scopes.map((scope) => scope.name).join(' '), by: 'operator' } });
  return { resource, introspectionSecret: secret };
}

export async function listResources(deps: Pick<ManageDeps, 'store'>): Promise<ResourceRecord[]> {
  return deps.store.resources.list();
}

export async function getResource(deps: Pick<ManageDeps, 'store'>, identifier: string): Promise<ResourceRecord> {
  const resource = await deps.store.resources.get(identifier);
  if (!resource) throw notFound`no API with identifier ${identifier}`;
  return resource;
}

/** What `resource update` and the admin API may change; absent fields stay as they are. */
export type ResourceUpdate = Pick<ResourceInput, 'name' | 'scopes' | 'access_token_ttl' | 'signing_alg'>;

/**
 * Changes an API: its name, its scopes (the list given replaces the old one; a new
 * description shows on the next consent page), its access tokens' lifetime and algorithm,
 * each from the next token issued. A scope still in a client's registration cannot be
 * removed: the client would ask for a scope nothing defines. A scope removed leaves every
 * grant in the same transaction, as `removeResource`'s do: defined again later, with
 * another meaning perhaps, it is not approved by a consent given before, and refresh tokens
 * issued before do not get it (flows/resources.ts tokenTarget keeps to what the grant holds).
 */
export async function updateResource(
  deps: ManageDeps,
  identifier: string,
  input: ResourceUpdate,
  scopeLabel: (scope: ResourceScope) => string = (scope) => scope.name,
): Promise<ResourceRecord> {
  const current = await getResource(deps, identifier);
  const changes: ResourceChanges = {
    ...(input.name === undefined ? {} : { name: checkName(input.name) }),
    ...(input.scopes === undefined ? {} : { scopes: checkScopes(input.scopes, scopeLabel) }),
    ...(input.access_token_ttl === undefined ? {} : { accessTokenTtl: checkTtl(input.access_token_ttl) }),
    ...(input.signing_alg === undefined ? {} : { signingAlg: checkSigningAlg(input.signing_alg)! }),
  };
  if (Object.keys(changes).length === 0)
    throw invalid`give what to change: ${field('name')}, ${field('scopes')}, ${field('access_token_ttl')} or ${field('signing_alg')}`;
  if (changes.scopes !== undefined) {
    for (const resource of await deps.store.resources.list()) if (resource.identifier !== identifier) checkScopesFree(resource, changes.scopes);
    const removed = current.scopes.filter((scope) => !changes.scopes!.some((kept) => kept.name === scope.name)).map((scope) => scope.name);
    const user = (await deps.store.clients.list()).find((client) => client.scopes.some((scope) => removed.includes(scope)));
    if (user)
      throw conflict`scope ${user.scopes.find((scope) => removed.includes(scope))!} is in the registration of client ${user.id} (${user.name}): remove it from the client first`;
  }
  try {
    if (!(await deps.store.transaction((tx) => tx.resources.update(identifier, changes)))) throw notFound`no API with identifier ${identifier}`;
  } catch (error) {
    // Another API took a scope name between the check and the write.
    if (error instanceof DuplicateError)
      throw conflict`${error.message.replace(/ already exists$/, '')} already belongs to another API; scope names are unique across the server`;
    throw error;
  }
  await deps.events.emit({ type: 'resource.updated', detail: { resource: identifier, fields: Object.keys(input).join(' '), by: 'operator' } });
  return getResource(deps, identifier);
}

/**
 * Removes an API: tokens and grants for it stop working at once. Its scope names leave every
 * grant and every client's registration in the same transaction, since both name scopes by
 * name alone: an API registered later under one of them (or the same identifier again) is a
 * new API, which a consent given before does not approve (the person is asked again) and a
 * client registered before is not allowed until the operator says so. The grants stay, for
 * what else they approved.
 */
export async function removeResource(deps: ManageDeps, identifier: string): Promise<void> {
  if (!(await deps.store.transaction((tx) => tx.resources.remove(identifier)))) throw notFound`no API with identifier ${identifier}`;
  await deps.events.emit({ type: 'resource.removed', detail: { resource: identifier, by: 'operator' } });
}

/**
 * RFC 8707 (Resource Indicators for OAuth 2.0): which API a request is for, and which of
 * its scopes. Every API scope's name is unique across the server, so a grant needs to keep
 * only its scope: the scopes name the APIs it covers.
 */
import type { ApiTranslations } from '../config/index.ts';
import { OAuthError } from '../core/errors.ts';
import { ADMIN_SCOPE_DESCRIPTIONS, adminAudience, SCOPE_DESCRIPTIONS, SSF_SCOPE_DESCRIPTIONS, ssfAudience, SUPPORTED_SCOPES } from '../core/scopes.ts';
import type { ClientRecord, GrantRecord, ResourceRecord, Store } from '../store/types.ts';

/** The OpenID Connect scopes (OIDC Core §5.4, §11): for this server's own API (userinfo). */
export function isOpenIdScope(scope: string): boolean {
  return SUPPORTED_SCOPES.includes(scope);
}

/**
 * The admin API (docs/admin-api.md) as an API the client_credentials grant issues tokens
 * for: not in the store, so that no operator can remove or re-register it.
 */
export function adminResource(issuer: string): ResourceRecord {
  return {
    identifier: adminAudience(issuer),
    name: 'Tessera admin API',
    scopes: Object.entries(ADMIN_SCOPE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
    accessTokenTtl: null,
    introspectionSecretHash: null,
    // Tessera verifies these itself: the server's access token algorithm.
    signingAlg: 'ES256',
    createdAt: 0,
  };
}

/**
 * The Shared Signals stream management API (docs/events.md) as an API the client_credentials
 * grant issues tokens for, as the admin API is: built in, never in the store.
 */
export function ssfResource(issuer: string): ResourceRecord {
  return {
    identifier: ssfAudience(issuer),
    name: 'Tessera Shared Signals streams',
    scopes: Object.entries(SSF_SCOPE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
    accessTokenTtl: null,
    introspectionSecretHash: null,
    signingAlg: 'ES256',
    createdAt: 0,
  };
}

/** The registered APIs, by identifier and by scope name. */
export class ResourceCatalog {
  readonly resources: readonly ResourceRecord[];
  readonly #byIdentifier: ReadonlyMap<string, ResourceRecord>;
  readonly #byScope: ReadonlyMap<string, ResourceRecord>;

  constructor(resources: readonly ResourceRecord[]) {
    this.resources = resources;
    this.#byIdentifier = new Map(resources.map((resource) => [resource.identifier, resource]));
    this.#byScope = new Map(resources.flatMap((resource) => resource.scopes.map((scope) => [scope.name, resource] as const)));
  }

  /** Nothing to look up when every scope is an OpenID one and no resource is named. */
  static async load(store: Pick<Store, 'resources'>, scope: readonly string[], resources: readonly string[] = []): Promise<ResourceCatalog> {
    if (resources.length === 0 && scope.every(isOpenIdScope)) return new ResourceCatalog([]);
    return new ResourceCatalog(await store.resources.list());
  }

  get(identifier: string): ResourceRecord | undefined {
    return this.#byIdentifier.get(identifier);
  }

  /** The API that defines `scope`; undefined for an OpenID scope or one nobody defines. */
  ownerOf(scope: string): ResourceRecord | undefined {
    return this.#byScope.get(scope);
  }

  knows(scope: string): boolean {
    return isOpenIdScope(scope) || this.#byScope.has(scope);
  }
}

/**
 * RFC 8707 §2: "The value of the resource parameter MUST be an absolute URI, as specified by
 * Section 4.3 of [RFC3986], which MAY include a query component, but MUST NOT include a
 * fragment component." Null when `value` is one; otherwise why not.
 */
export function resourceIndicatorProblem(value: string): string | null {
  if (value.includes('#')) return 'must not include a fragment';
  try {
    new URL(value);
  } catch {
    return 'must be an absolute URI';
  }
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(value) || /\s/.test(value)) return 'must be an absolute URI';
  return null;
}

/** The `resource` values of a request: absent, one, or repeated (RFC 8707 §2). */
export function resourceParams(raw: string | readonly string[] | undefined): string[] {
  if (raw === undefined) return [];
  return [...new Set((typeof raw === 'string' ? [raw] : raw).filter((value) => value !== ''))];
}

/** RFC 8707 §2: `resource` may be repeated; this many APIs at most in one request. */
export const MAX_RESOURCES = 10;

/**
 * The registered APIs `values` name. RFC 8707 §2: invalid_target when "the requested
 * resource is invalid, missing, unknown, or malformed".
 */
export function requestedResources(catalog: ResourceCatalog, values: readonly string[]): ResourceRecord[] {
  if (values.length > MAX_RESOURCES) throw new OAuthError('invalid_target', `at most ${MAX_RESOURCES} resources in one request`);
  return values.map((value) => {
    const problem = resourceIndicatorProblem(value);
    if (problem) throw new OAuthError('invalid_target', `resource ${problem}`);
    const resource = catalog.get(value);
    if (!resource) throw new OAuthError('invalid_target', `resource is not a registered API: ${value}`);
    return resource;
  });
}

/**
 * Whether `client` may be given `scope` now: every scope, OpenID ones included, must be in
 * its registration (`client.scopes`). An authorization request asking for another is refused
 * (checkRequestedAccess); tokens issued later from an approval given before (a refresh, a
 * device poll) leave it out, so a scope the operator takes from the client is no longer
 * honoured, as client_credentials and admin tokens check it each time.
 */
export function clientMayHave(client: Pick<ClientRecord, 'scopes'>, scope: string): boolean {
  return client.scopes.includes(scope);
}

/**
 * Checks the scope and resources of an authorization or device authorization request
 * (RFC 6749 §3.3, RFC 8707 §2). Every scope must be known and allowed to the client; with
 * `resource`, every API scope must belong to one of the resources named, and each resource
 * named must be asked at least one of its scopes. Without it, the API scopes name their APIs.
 */
export function checkRequestedAccess(catalog: ResourceCatalog, client: ClientRecord, scope: readonly string[], resources: readonly string[]): void {
  const named = requestedResources(catalog, resources);
  const refused = scope.filter((value) => !catalog.knows(value) || !clientMayHave(client, value));
  if (refused.length > 0) throw new OAuthError('invalid_scope', `scope not allowed for this client: ${refused.join(' ')}`);
  if (named.length === 0) return;
  const elsewhere = scope.filter((value) => {
    const owner = catalog.ownerOf(value);
    return owner !== undefined && !named.includes(owner);
  });
  if (elsewhere.length > 0) throw new OAuthError('invalid_scope', `scope belongs to another API than the resource requested: ${elsewhere.join(' ')}`);
  const unasked = named.filter((resource) => !scope.some((value) => catalog.ownerOf(value) === resource));
  if (unasked.length > 0)
    throw new OAuthError('invalid_scope', `no scope was asked of the resource: ${unasked.map((resource) => resource.identifier).join(' ')}`);
}

/** What one access token is for: its audience (null: this server's own API) and its scope. */
export interface TokenTarget {
  readonly resource: ResourceRecord | null;
  readonly scope: readonly string[];
}

/**
 * What tokens are issued from: a scope approved at `createdAt` (a grant, a code, a refresh
 * token's), and `held`, the scope its grant holds now where that may be less (a refresh
 * token's: its API scopes leave the grant when their API is removed or drops them, and a
 * grant approved again after that holds only what the person approved then). The token gets
 * no API scope outside `held`. With `client`, the client the tokens are issued to, whose
 * registration may have narrowed since: a scope it may no longer have (`clientMayHave`)
 * counts as no longer held, OpenID ones included.
 */
export type ApprovedScope = Pick<GrantRecord, 'scope' | 'createdAt'> & {
  readonly held?: readonly string[];
  readonly client?: Pick<ClientRecord, 'scopes'>;
};

/** Whether `value`, in the scope `grant` was approved for, is no longer given: see ApprovedScope. */
function withdrawn(grant: ApprovedScope, value: string): boolean {
  if (grant.client !== undefined && !clientMayHave(grant.client, value)) return true;
  return !isOpenIdScope(value) && grant.held !== undefined && !grant.held.includes(value);
}

/**
 * The APIs a grant covers: those whose scopes it holds, registered before it was approved
 * (an API removed and registered again is not covered by grants made before). `removed` is
 * true when some of its API scopes no longer name a live API, or are no longer held.
 */
export function grantedResources(catalog: ResourceCatalog, grant: ApprovedScope): { resources: ResourceRecord[]; removed: boolean } {
  const resources: ResourceRecord[] = [];
  let removed = false;
  for (const value of grant.scope) {
    if (isOpenIdScope(value)) continue;
    const owner = catalog.ownerOf(value);
    if (!owner || owner.createdAt > grant.createdAt || withdrawn(grant, value)) removed = true;
    else if (!resources.includes(owner)) resources.push(owner);
  }
  return { resources, removed };
}

/**
 * The audience and scope of an access token issued under `grant` (RFC 8707 §2.2; RFC 9068
 * §3: one audience a token). `requested` is the token request's scope, already checked to
 * be within the grant's (RFC 6749 §6 for a refresh); `resource` its resource parameter.
 * The token holds the OpenID scopes granted (so userinfo also answers it) and the scopes
 * of its one API that the grant still holds.
 */
export async function tokenTarget(
  store: Pick<Store, 'resources' | 'grants'>,
  grant: ApprovedScope,
  resourceParam: string | undefined,
  requestedScope?: readonly string[],
): Promise<TokenTarget> {
  const requested = requestedScope ?? grant.scope;
  const catalog = await ResourceCatalog.load(store, grant.scope, resourceParam === undefined ? [] : [resourceParam]);
  const { resources: granted, removed } = grantedResources(catalog, grant);
  const owners = [...new Set(requested.filter((value) => !isOpenIdScope(value)).map((value) => catalog.ownerOf(value)))];
  let resource: ResourceRecord | null;
  if (resourceParam !== undefined) {
    const [named] = requestedResources(catalog, [resourceParam]);
    // RFC 8707 §2.2: the resource must be one the grant covers.
    if (!granted.includes(named!)) throw new OAuthError('invalid_target', `the authorization does not cover the resource ${resourceParam}`);
    resource = named!;
    const elsewhere = requested.filter((value) => !isOpenIdScope(value) && catalog.ownerOf(value) !== resource);
    // Only a scope asked for explicitly can be in the wrong place; the grant's others are left out.
    if (requestedScope !== undefined && elsewhere.length > 0) {
      throw new OAuthError('invalid_scope', `scope belongs to another API than the resource requested: ${elsewhere.join(' ')}`);
    }
  } else if (requestedScope !== undefined) {
    // Without resource, a request for one API's scopes means that API, and one for OpenID
    // scopes alone means this server's own.
    if (owners.length > 1) throw new OAuthError('invalid_scope', 'scope names several APIs: ask for one with resource');
    resource = owners[0] !== undefined && granted.includes(owners[0]) ? owners[0] : null;
    if (resource === null && owners.length > 0) throw new OAuthError('invalid_target', 'the API this scope belongs to has been removed');
  } else if (granted.length > 1) {
    throw new OAuthError('invalid_target', 'the authorization covers several APIs: name one with resource');
  } else if (granted.length === 1) {
    resource = granted[0]!;
  } else {
    if (removed) throw new OAuthError('invalid_target', 'the API this authorization was for has been removed, or taken from the client');
    resource = null;
  }
  // RFC 6749 §6: a refreshed token's scope "MUST NOT include any scope not originally
  // granted by the resource owner": what the grant holds now, which the person may have
  // approved again for less (an API removed and registered again). An API scope the grant
  // no longer holds is left out; asked for by name, it is refused.
  // Nor, RFC 6749 §5.2 invalid_scope, one the client is no longer registered for.
  const ungranted = requestedScope === undefined ? [] : requested.filter((value) => withdrawn(grant, value));
  if (ungranted.length > 0) throw new OAuthError('invalid_scope', `scope is no longer granted to this client: ${ungranted.join(' ')}`);
  const scope = requested.filter((value) => !withdrawn(grant, value) && (isOpenIdScope(value) || (resource !== null && catalog.ownerOf(value) === resource)));
  if (scope.length === 0) throw new OAuthError('invalid_scope', 'no scope of this authorization is still allowed to the client');
  return { resource, scope };
}

/** A scope as a person reads it. */
export interface DescribedScope {
  readonly name: string;
  readonly description: string;
}

/** What a scope list means to a person: the OpenID scopes, then each API by its name. */
export interface DescribedAccess {
  readonly openid: readonly DescribedScope[];
  readonly apis: readonly { readonly name: string; readonly identifier: string; readonly scopes: readonly DescribedScope[] }[];
}

/** With `grantedAt`, an API registered after it (removed and registered again) is not shown. */
export function describeAccess(catalog: ResourceCatalog, scope: readonly string[], grantedAt?: number): DescribedAccess {
  const openid: DescribedScope[] = [];
  const apis = new Map<ResourceRecord, DescribedScope[]>();
  for (const value of scope) {
    const owner = catalog.ownerOf(value);
    if (owner && (grantedAt === undefined || owner.createdAt <= grantedAt)) {
      const described = owner.scopes.find((item) => item.name === value)!;
      apis.set(owner, [...(apis.get(owner) ?? []), described]);
    } else if (isOpenIdScope(value)) {
      openid.push({ name: value, description: SCOPE_DESCRIPTIONS[value]! });
    }
    // A scope whose API was removed grants nothing any more: it is not shown.
  }
  return { openid, apis: [...apis].map(([resource, scopes]) => ({ name: resource.name, identifier: resource.identifier, scopes })) };
}

/** `describeAccess` with the catalog loaded only when `scope` holds an API scope. */
export async function describeScope(store: Pick<Store, 'resources'>, scope: readonly string[], grantedAt?: number): Promise<DescribedAccess> {
  return describeAccess(await ResourceCatalog.load(store, scope), scope, grantedAt);
}

/**
 * What TESSERA_API_TRANSLATIONS names that no registered API has (an identifier or a scope
 * name misspelt, or since removed), as `de: scopes.photos:raed`: its words would never be
 * shown, which the start log says rather than leave the operator wondering.
 */
export function unmatchedTranslations(translations: ApiTranslations | undefined, resources: readonly ResourceRecord[]): string[] {
  const identifiers = new Set(resources.map((resource) => resource.identifier));
  const scopes = new Set(resources.flatMap((resource) => resource.scopes.map((scope) => scope.name)));
  return Object.entries(translations ?? {}).flatMap(([locale, translation]) => [
    ...Object.keys(translation?.apis ?? {})
      .filter((identifier) => !identifiers.has(identifier))
      .map((identifier) => `${locale}: apis.${identifier}`),
    ...Object.keys(translation?.scopes ?? {})
      .filter((scope) => !scopes.has(scope))
      .map((scope) => `${locale}: scopes.${scope}`),
  ]);
}

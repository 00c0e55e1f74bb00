/**
 * Upstream identity providers: adding, listing, showing, changing and removing
 * them, the one implementation the `tessera provider` commands and the admin API call. A
 * client secret or bind password is sealed under the key encryption key before it is
 * stored (tokens/secret-box.ts), never returned, and never in an event.
 */
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { isLoopback } from '../../core/redirect-uri.ts';
import { DuplicateError } from '../../store/types.ts';
import { PROVIDER_KINDS, type IdentityProviderRecord, type ProviderKind } from '../../store/identity-providers.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { ldapts } from '../upstream/ldap.ts';
import { MAPPED_CLAIMS, providerSettings, upstreamRedirectUri, type MappedClaim } from '../upstream/settings.ts';
import { checkMayTrustProvider } from './authority.ts';
import type { ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';
import { MAX_PROVIDER_NAME, MAX_PROVIDER_TEXT, PROVIDER_FIELDS } from './fields/providers.ts';
import { checkBounds } from './fields/field.ts';

/** What a provider operation is given: the management deps and the box its secrets are sealed in. */
export interface ProviderDeps extends ManageDeps {
  readonly secrets: SecretBox;
}

/** A provider as given by the operator, in the admin API's words; absent: unchanged (update) or the default (add). */
export interface ProviderInput {
  readonly kind?: string;
  readonly id?: string;
  readonly name?: string;
  readonly position?: number;
  readonly only?: boolean;
  readonly allow_linking?: boolean;
  readonly allowed_domains?: readonly string[];
  readonly domains?: readonly string[];
  /** `{ "username": "preferred_username" }`: the Tessera claim and where it comes from upstream. */
  readonly claim_mapping?: Readonly<Record<string, string>>;
  // OpenID Connect and GitHub
  readonly issuer?: string;
  readonly client_id?: string;
  readonly client_secret?: string;
  readonly scopes?: readonly string[];
  /** OpenID providers: count the provider's `mfa` as a second factor here. */
  readonly trust_upstream_mfa?: boolean;
  readonly allowed_organizations?: readonly string[];
  readonly web_url?: string;
  readonly api_url?: string;
  // LDAP
  readonly url?: string;
  readonly start_tls?: boolean;
  readonly bind_dn?: string | null;
  readonly bind_password?: string;
  readonly user_search_base?: string;
  readonly user_filter?: string;
  readonly group_search_base?: string | null;
  readonly group_filter?: string;
}

export { MAX_PROVIDER_NAME };
const PROVIDER_ID = /^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/;
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;
/** Longer than any real secret or password; bounds what is sealed and stored. */
const MAX_SECRET = MAX_PROVIDER_TEXT;
const MAX_TEXT = MAX_PROVIDER_TEXT;

/** A provider as `provider list|show --json` and the admin API give it: never its secret. */
export function providerJson(provider: IdentityProviderRecord, issuer: string): Record<string, unknown> {
  const s = providerSettings(provider);
  const common = {
    id: provider.id,
    kind: provider.kind,
    name: provider.name,
    position: provider.position,
    only: s.only,
    allow_linking: s.allowLinking,
    allowed_domains: s.allowedDomains,
    domains: s.domains,
    claim_mapping: s.claimMapping,
    created_at: new Date(provider.createdAt).toISOString(),
    updated_at: new Date(provider.updatedAt).toISOString(),
  };
  switch (s.kind) {
    case 'oidc':
      return {
        ...common,
        issuer: s.issuer,
        client_id: s.clientId,
        client_secret_set: provider.secret !== null,
        scopes: s.scopes,
        trust_upstream_mfa: s.trustUpstreamMfa,
        redirect_uri: upstreamRedirectUri(issuer, provider.id),
      };
    case 'github':
      return {
        ...common,
        client_id: s.clientId,
        client_secret_set: provider.secret !== null,
        allowed_organizations: s.allowedOrganizations,
        web_url: s.webUrl,
        api_url: s.apiUrl,
        redirect_uri: upstreamRedirectUri(issuer, provider.id),
      };
    case 'ldap':
      return {
        ...common,
        url: s.url,
        start_tls: s.startTls,
        bind_dn: s.bindDn,
        bind_password_set: provider.secret !== null,
        user_search_base: s.userSearchBase,
        user_filter: s.userFilter,
        group_search_base: s.groupSearchBase,
        group_filter: s.groupFilter,
      };
  }
}

/**
 * A text field, trimmed. `required`: what the field is, for a field that may not be blank;
 * `mayBeLeftOut`: an update, where a required field not given keeps its value (but given
 * blank is refused, as on add).
 */
function checkText(value: string | undefined, name: string, required: string | null, mayBeLeftOut = false): string | undefined {
  if (value === undefined) {
    if (required !== null && !mayBeLeftOut) throw invalid`${field(name)} is required: ${required}`;
    return undefined;
  }
  const trimmed = value.trim();
  if (!trimmed && required !== null) throw invalid`${field(name)} is required: ${required}`;
  if (trimmed.length > MAX_TEXT) throw invalid`${field(name)} must be at most ${MAX_TEXT} characters`;
  // Shown on the sign-in page's button and printed by the command (core/display-text.ts).
  if (hasUnsafeCharacters(trimmed)) throw invalid`${field(name)} ${UNSAFE_CHARACTERS_RULE}`;
  return trimmed;
}

/** An https URL (http on a loopback host, for a provider on the same machine), without query or fragment. */
function checkWebUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid`${field(name)} ${value}: not an absolute URL`;
  }
  if (url.protocol !== 'https:' && !isLoopback(url)) {
    throw invalid`${field(name)} ${value}: must be https (http only on a loopback address)`;
  }
  if (url.search || url.hash || url.username || url.password) throw invalid`${field(name)} ${value}: no query, fragment or credentials`;
  return value.replace(/\/$/, '');
}

function checkDomains(values: readonly string[] | undefined, name: string): string[] | undefined {
  if (values === undefined) return undefined;
  const domains = values.map((value) => value.trim().toLowerCase().replace(/^@/, ''));
  const bad = domains.find((domain) => !DOMAIN.test(domain));
  if (bad !== undefined) throw invalid`${field(name)} ${bad}: not a domain name (example.com)`;
  return [...new Set(domains)];
}

function checkMapping(values: Readonly<Record<string, string>> | undefined): Partial<Record<MappedClaim, string>> | undefined {
  if (values === undefined) return undefined;
  const mapping: Partial<Record<MappedClaim, string>> = {};
  for (const [claim, from] of Object.entries(values)) {
    const known = MAPPED_CLAIMS.find((candidate) => candidate === claim);
    if (known === undefined) throw invalid`${field('claim_mapping')} ${claim}: one of ${MAPPED_CLAIMS.join(', ')}`;
    if (typeof from !== 'string' || !/^[A-Za-z0-9_.:-]{1,100}$/.test(from))
      throw invalid`${field('claim_mapping')} ${claim}: name the upstream claim or attribute it comes from`;
    mapping[known] = from;
  }
  return mapping;
}

/** An RFC 4515 filter with `{username}` (or `{dn}`) in it, which must still parse with a value put in. */
function checkFilter(value: string | undefined, name: string, placeholders: readonly string[]): string | undefined {
  const filter = checkText(value, name, null);
  if (filter === undefined) return undefined;
  if (!placeholders.some((placeholder) => filter.includes(placeholder)))
    throw invalid`${field(name)} ${filter}: put ${placeholders.join(' or ')} where the person's value goes`;
  try {
    ldapts().FilterParser.parseString(placeholders.reduce((text, placeholder) => text.replaceAll(placeholder, 'x'), filter));
  } catch {
    throw invalid`${field(name)} ${filter}: not an LDAP search filter (RFC 4515), such as (uid={username})`;
  }
  return filter;
}

function checkLdapUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid`${field('url')} ${value}: not a URL (ldaps://ldap.example.com)`;
  }
  if (url.protocol !== 'ldap:' && url.protocol !== 'ldaps:') throw invalid`${field('url')} ${value}: must be ldap:// or ldaps://`;
  return value;
}

function checkSecret(value: string | undefined, name: string): string | undefined {
  if (value === undefined) return undefined;
  if (!value || value.length > MAX_SECRET) throw invalid`${field(name)} must be 1 to ${MAX_SECRET} characters`;
  return value;
}

/** The stored settings and secret of a provider, from what exists (`current`) and what the operator gave. */
function build(
  kind: ProviderKind,
  current: IdentityProviderRecord | null,
  input: ProviderInput,
): { settings: Record<string, unknown>; secret: string | null | undefined } {
  const was = current ? { ...current.settings } : {};
  const pick = <T>(given: T | undefined, key: string, fallback: T): T => (given !== undefined ? given : key in was ? (was[key] as T) : fallback);
  const settings: Record<string, unknown> = {
    only: pick(input.only, 'only', false),
    allowLinking: pick(input.allow_linking, 'allowLinking', false),
    allowedDomains: pick(checkDomains(input.allowed_domains, 'allowed_domains'), 'allowedDomains', []),
    domains: pick(checkDomains(input.domains, 'domains'), 'domains', []),
    claimMapping: pick(checkMapping(input.claim_mapping), 'claimMapping', {}),
  };
  // The fields of another kind (fields/providers.ts says which kinds each applies to).
  const foreign = PROVIDER_FIELDS.find(
    (row) => 'kinds' in row && !(row.kinds as readonly string[]).includes(kind) && input[row.name as keyof ProviderInput] !== undefined,
  );
  if (foreign !== undefined) throw invalid`${field(foreign.name)} does not apply to a provider of kind ${kind}`;
  switch (kind) {
    case 'oidc': {
      const issuer = checkText(input.issuer, 'issuer', "the provider's issuer URL, such as https://accounts.google.com", current !== null);
      const clientId = checkText(input.client_id, 'client_id', 'the client id the provider gave Tessera', current !== null);
      // "openid email" given as one is two scopes, as `--scope "openid email"` is.
      const scopes = input.scopes?.flatMap((scope) => scope.split(/\s+/)).filter((scope) => scope !== '');
      if (scopes?.some((scope) => !/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/.test(scope)))
        throw invalid`${field('scopes')}: scope values have no spaces, quotes or backslashes (RFC 6749 §3.3)`;
      settings['issuer'] = issuer !== undefined ? checkWebUrl(issuer, 'issuer') : was['issuer'];
      settings['clientId'] = clientId ?? was['clientId'];
      settings['trustUpstreamMfa'] = pick(input.trust_upstream_mfa, 'trustUpstreamMfa', false);
      settings['scopes'] = pick(scopes === undefined ? undefined : [...new Set(['openid', ...scopes])], 'scopes', ['openid', 'profile', 'email']);
      return { settings, secret: checkSecret(input.client_secret, 'client_secret') };
    }
    case 'github': {
      const clientId = checkText(input.client_id, 'client_id', "the OAuth app's client id", current !== null);
      const secret = checkSecret(input.client_secret, 'client_secret');
      if (!current && secret === undefined) throw invalid`${field('client_secret')} is required: the OAuth app's client secret`;
      const organizations = input.allowed_organizations?.map((org) => org.trim()).filter((org) => org !== '');
      if (organizations?.some((org) => !/^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/.test(org)))
        throw invalid`${field('allowed_organizations')}: a GitHub organisation's login, such as octo-org`;
      settings['clientId'] = clientId ?? was['clientId'];
      settings['allowedOrganizations'] = pick(organizations, 'allowedOrganizations', []);
      settings['webUrl'] = input.web_url !== undefined ? checkWebUrl(input.web_url, 'web_url') : (was['webUrl'] ?? 'https://github.com');
      settings['apiUrl'] = input.api_url !== undefined ? checkWebUrl(input.api_url, 'api_url') : (was['apiUrl'] ?? 'https://api.github.com');
      return { settings, secret };
    }
    case 'ldap': {
      const url = checkText(input.url, 'url', "the directory's address, such as ldaps://ldap.example.com", current !== null);
      const base = checkText(input.user_search_base, 'user_search_base', 'where people are searched, such as ou=people,dc=example,dc=com', current !== null);
      settings['url'] = url !== undefined ? checkLdapUrl(url) : was['url'];
      settings['startTls'] = pick(input.start_tls, 'startTls', false);
      if (settings['startTls'] === true && String(settings['url']).startsWith('ldaps:'))
        throw invalid`${field('start_tls')}: an ldaps:// connection is encrypted from the start; StartTLS is for ldap://`;
      settings['bindDn'] = input.bind_dn !== undefined ? checkText(input.bind_dn ?? undefined, 'bind_dn', null) || null : (was['bindDn'] ?? null);
      settings['userSearchBase'] = base ?? was['userSearchBase'];
      settings['userFilter'] = pick(checkFilter(input.user_filter, 'user_filter', ['{username}']), 'userFilter', '(uid={username})');
      settings['groupSearchBase'] =
        input.group_search_base !== undefined
          ? checkText(input.group_search_base ?? undefined, 'group_search_base', null) || null
          : (was['groupSearchBase'] ?? null);
      settings['groupFilter'] = pick(checkFilter(input.group_filter, 'group_filter', ['{dn}', '{username}']), 'groupFilter', '(member={dn})');
      const secret = checkSecret(input.bind_password, 'bind_password');
      if (settings['bindDn'] !== null && secret === undefined && (current?.secret ?? null) === null)
        throw invalid`${field('bind_password')} is required with ${field('bind_dn')}`;
      // Searching anonymously: a stored bind password would be used by no one.
      return { settings, secret: settings['bindDn'] === null ? null : secret };
    }
  }
}

/** Whether a provider's settings let it sign in to existing accounts or vouch for a second factor. */
function vouches(settings: Readonly<Record<string, unknown>>): boolean {
  return settings['allowLinking'] === true || settings['trustUpstreamMfa'] === true;
}

/** What an operator may change on any provider: what its button says and where it stands. */
const COSMETIC: readonly (keyof ProviderInput)[] = ['name', 'position', 'kind', 'id'];

/**
 * Where a provider's word comes from: who asserts the identities it signs in, and how they
 * become a person here. Pointed elsewhere, it signs in as whoever the new source names.
 */
const SOURCE: readonly (keyof ProviderInput)[] = [
  'issuer',
  'client_id',
  'web_url',
  'api_url',
  'url',
  'start_tls',
  'bind_dn',
  'bind_password',
  'user_search_base',
  'user_filter',
  'claim_mapping',
];

/**
 * The changes to a provider only a caller holding every admin scope makes
 * (flows/manage/authority.ts): any but its name and position, on a provider that links
 * accounts or whose mfa is trusted (before or after the change); and repointing one that people
 * already sign in through, whose new source would sign in as them.
 */
async function checkTrust(
  deps: ProviderDeps,
  current: IdentityProviderRecord | null,
  after: Readonly<Record<string, unknown>>,
  input: ProviderInput,
): Promise<void> {
  const given = (Object.keys(input) as (keyof ProviderInput)[]).filter((name) => input[name] !== undefined && !COSMETIC.includes(name));
  if (vouches(after) || (current !== null && vouches(current.settings))) {
    if (current !== null && given.length === 0) return;
    const named =
      given.find((name) => name === 'allow_linking' || name === 'trust_upstream_mfa') ??
      given[0] ??
      (after['allowLinking'] === true ? 'allow_linking' : 'trust_upstream_mfa');
    checkMayTrustProvider(deps.caller, named);
    return;
  }
  const repointed = given.find((name) => SOURCE.includes(name));
  if (current !== null && repointed !== undefined && (await deps.store.linkedIdentities.anyForProvider(current.id)))
    checkMayTrustProvider(deps.caller, repointed);
}

/** One provider may be the only way in. */
async function checkOnly(deps: Pick<ProviderDeps, 'store'>, id: string, only: unknown): Promise<void> {
  if (only !== true) return;
  const other = (await deps.store.identityProviders.list()).find((provider) => provider.id !== id && provider.settings['only'] === true);
  if (other) throw conflict`${other.name} (${other.id}) is the only way in already: update it with only off first`;
}

function checkName(value: string | undefined, mayBeLeftOut: boolean): string | undefined {
  const name = checkText(value, 'name', 'what the sign-in page calls it ("Continue with NAME")', mayBeLeftOut);
  if (name !== undefined && name.length > MAX_PROVIDER_NAME) throw invalid`${field('name')} must be at most ${MAX_PROVIDER_NAME} characters`;
  return name;
}

function checkPosition(value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0 || value > 1_000_000) throw invalid`${field('position')} ${value}: a whole number from 0 to 1000000`;
  return value;
}

/**
 * The id a provider added with this name (or id) gets: part of the redirect URI the provider
 * must know before its client for Tessera exists, so it is worked out alone.
 */
export function providerIdFor(input: Pick<ProviderInput, 'id' | 'name'>): string {
  const name = checkName(input.name, false)!;
  const id =
    input.id?.trim() ||
    name
      .toLowerCase()
      .normalize('NFKD')
      // NFKD parts a letter from its accent ("ü" is "u" and U+0308): the accent goes.
      .replace(/\p{M}+/gu, '')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40)
      .replace(/-+$/, '');
  if (!PROVIDER_ID.test(id)) throw invalid`${field('id')} ${id || name}: 1-40 lower-case letters, digits and dashes (it is part of the redirect URI)`;
  return id;
}

/** Adds a provider; its id is made from its name unless given. */
export async function addProvider(deps: ProviderDeps, input: ProviderInput): Promise<IdentityProviderRecord> {
  checkBounds(PROVIDER_FIELDS, input);
  const kind = PROVIDER_KINDS.find((candidate) => candidate === input.kind);
  if (kind === undefined) throw invalid`${field('kind')} ${input.kind ?? ''}: one of ${PROVIDER_KINDS.join(', ')}`;
  const name = checkName(input.name, false)!;
  const id = providerIdFor({ ...input, name });
  const { settings, secret } = build(kind, null, input);
  await checkTrust(deps, null, settings, input);
  await checkOnly(deps, id, settings['only']);
  const providers = await deps.store.identityProviders.list();
  const now = deps.clock.now();
  const record: IdentityProviderRecord = {
    id,
    kind,
    name,
    position: checkPosition(input.position) ?? providers.reduce((last, provider) => Math.max(last, provider.position + 1), 0),
    settings,
    secret: secret ? deps.secrets.seal(id, secret) : null,
    createdAt: now,
    updatedAt: now,
  };
  try {
    await deps.store.identityProviders.create(record);
  } catch (error) {
    if (error instanceof DuplicateError) throw conflict`a provider with id ${id} exists already: give another with ${field('id')}`;
    throw error;
  }
  await deps.events.emit({ type: 'provider.created', detail: { provider: id, kind, by: 'operator' } });
  return record;
}

export async function listProviders(deps: Pick<ProviderDeps, 'store'>): Promise<IdentityProviderRecord[]> {
  return deps.store.identityProviders.list();
}

export async function getProvider(deps: Pick<ProviderDeps, 'store'>, id: string): Promise<IdentityProviderRecord> {
  const provider = await deps.store.identityProviders.get(id);
  if (!provider) throw notFound`no identity provider ${id}`;
  return provider;
}

/** Changes what is given; the rest stays. A new secret replaces the old one. */
export async function updateProvider(deps: ProviderDeps, id: string, input: ProviderInput): Promise<IdentityProviderRecord> {
  checkBounds(PROVIDER_FIELDS, input);
  const current = await getProvider(deps, id);
  if (input.kind !== undefined && input.kind !== current.kind) throw invalid`${field('kind')}: a provider's kind cannot change; remove it and add another`;
  if (input.id !== undefined && input.id !== id) throw invalid`${field('id')}: a provider's id cannot change (it is in the redirect URI registered upstream)`;
  const name = checkName(input.name, true);
  const { settings, secret } = build(current.kind, current, input);
  await checkTrust(deps, current, settings, input);
  await checkOnly(deps, id, settings['only']);
  const updated: IdentityProviderRecord = {
    ...current,
    name: name ?? current.name,
    position: checkPosition(input.position) ?? current.position,
    settings,
    secret: secret === null ? null : secret === undefined ? current.secret : deps.secrets.seal(id, secret),
    updatedAt: deps.clock.now(),
  };
  if (!(await deps.store.identityProviders.update(updated))) throw notFound`no identity provider ${id}`;
  await deps.events.emit({
    type: 'provider.updated',
    detail: { provider: id, kind: current.kind, secret_changed: typeof secret === 'string', by: 'operator' },
  });
  return updated;
}

/** Removes a provider: the identities linked through it are unlinked (their users stay). */
export async function removeProvider(deps: ProviderDeps, id: string): Promise<void> {
  const current = await getProvider(deps, id);
  if (!(await deps.store.identityProviders.remove(id))) throw notFound`no identity provider ${id}`;
  await deps.events.emit({ type: 'provider.removed', detail: { provider: id, kind: current.kind, by: 'operator' } });
}

/** `tessera provider …`: arguments in, the operations of src/flows/manage/providers.ts, text out. */
import type { Config } from '../config/index.ts';
import { addProvider, getProvider, listProviders, providerIdFor, providerJson, removeProvider, updateProvider, type ProviderDeps, type ProviderInput } from '../flows/manage/providers.ts';
import { upstreamRedirectUri } from '../flows/upstream/settings.ts';
import type { Store } from '../store/types.ts';
import { loadKeyEncryption } from '../tokens/key-encryption.ts';
import { secretBox } from '../tokens/secret-box.ts';
import { operatorDeps, parse, UsageError, wholeNumber, withStore, type Io } from './common.ts';

const PROVIDER_OPTIONS = {
  id: { type: 'string' },
  name: { type: 'string' },
  position: { type: 'string' },
  only: { type: 'boolean' },
  'allow-linking': { type: 'boolean' },
  'allowed-domain': { type: 'string', multiple: true },
  domain: { type: 'string', multiple: true },
  'claim-mapping': { type: 'string', multiple: true },
  issuer: { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret-stdin': { type: 'boolean' },
  scope: { type: 'string', multiple: true },
  'trust-upstream-mfa': { type: 'boolean' },
  'allowed-organization': { type: 'string', multiple: true },
  'web-url': { type: 'string' },
  'api-url': { type: 'string' },
  url: { type: 'string' },
  'start-tls': { type: 'boolean' },
  'bind-dn': { type: 'string' },
  'bind-password-stdin': { type: 'boolean' },
  'user-search-base': { type: 'string' },
  'user-filter': { type: 'string' },
  'group-search-base': { type: 'string' },
  'group-filter': { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** What an update may also turn off. */
const UPDATE_OPTIONS = {
  ...PROVIDER_OPTIONS,
  'no-only': { type: 'boolean' },
  'no-allow-linking': { type: 'boolean' },
  'no-trust-upstream-mfa': { type: 'boolean' },
  'no-start-tls': { type: 'boolean' },
  'no-group-search': { type: 'boolean' },
} as const;

type Values = { [K in keyof typeof UPDATE_OPTIONS]?: (typeof UPDATE_OPTIONS)[K] extends { multiple: true } ? string[] : (typeof UPDATE_OPTIONS)[K] extends { type: 'boolean' } ? boolean : string };

/** The provider operations' deps: the key encryption key seals secrets as the server's does. */
function providerDeps(config: Config, store: Store, io: Io): ProviderDeps {
  return { ...operatorDeps(config, store, io), secrets: secretBox(loadKeyEncryption(config.keyEncryption)) };
}

/** `--claim-mapping CLAIM=UPSTREAM`. */
function mapping(values: readonly string[] | undefined): Record<string, string> | undefined {
  if (values === undefined) return undefined;
  const mapped: Record<string, string> = {};
  for (const value of values) {
    const equals = value.indexOf('=');
    if (equals <= 0) throw new UsageError(`--claim-mapping ${value}: give CLAIM=UPSTREAM, such as username=preferred_username`);
    mapped[value.slice(0, equals)] = value.slice(equals + 1);
  }
  return mapped;
}

/** A flag and its --no- form: true, false, or absent (unchanged). */
function toggle(on: boolean | undefined, off: boolean | undefined, name: string): boolean | undefined {
  if (on && off) throw new UsageError(`--${name} and --no-${name} contradict each other`);
  return on ? true : off ? false : undefined;
}

async function input(values: Values, io: Io, kind?: string): Promise<ProviderInput> {
  if (values['client-secret-stdin'] && values['bind-password-stdin']) throw new UsageError('only one secret can come from standard input at a time');
  const secret = values['client-secret-stdin'] || values['bind-password-stdin'] ? (await io.stdin()).replace(/\r?\n$/, '') : undefined;
  const given = <T>(key: string, value: T | undefined): Record<string, T> => (value === undefined ? {} : { [key]: value });
  const position = wholeNumber(values.position, 7);
  return {
    ...given('kind', kind),
    ...given('id', values.id),
    ...given('name', values.name),
    ...given('position', position),
    ...given('only', toggle(values.only, values['no-only'], 'only')),
    ...given('allow_linking', toggle(values['allow-linking'], values['no-allow-linking'], 'allow-linking')),
    ...given('allowed_domains', values['allowed-domain']),
    ...given('domains', values.domain),
    ...given('claim_mapping', mapping(values['claim-mapping'])),
    ...given('issuer', values.issuer),
    ...given('client_id', values['client-id']),
    ...given('client_secret', values['client-secret-stdin'] ? secret : undefined),
    ...given('scopes', values.scope?.flatMap((scope) => scope.split(/\s+/))),
    ...given('trust_upstream_mfa', toggle(values['trust-upstream-mfa'], values['no-trust-upstream-mfa'], 'trust-upstream-mfa')),
    ...given('allowed_organizations', values['allowed-organization']),
    ...given('web_url', values['web-url']),
    ...given('api_url', values['api-url']),
    ...given('url', values.url),
    ...given('start_tls', toggle(values['start-tls'], values['no-start-tls'], 'start-tls')),
    ...given('bind_dn', values['bind-dn']),
    ...given('bind_password', values['bind-password-stdin'] ? secret : undefined),
    ...given('user_search_base', values['user-search-base']),
    ...given('user_filter', values['user-filter']),
    ...(values['no-group-search'] ? { group_search_base: null } : given('group_search_base', values['group-search-base'])),
    ...given('group_filter', values['group-filter']),
  };
}

/** The provider as an operator reads it: one `key: value` line each, lists joined. */
function describe(json: Record<string, unknown>): string {
  const lines = Object.entries(json)
    .filter(([key]) => key !== 'id' && key !== 'name')
    .map(([key, value]) => {
      const shown = Array.isArray(value) ? (value.length ? value.join(' ') : '(none)') : value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value ?? '(none)');
      return `  ${key.replaceAll('_', ' ')}: ${shown}\n`;
    });
  return `${String(json['id'])}  ${String(json['name'])}\n${lines.join('')}`;
}

async function providerAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, PROVIDER_OPTIONS, 1);
  const given = await input(values, io, positionals[0]);
  const provider = await withStore(config, (store) => addProvider(providerDeps(config, store, io), given));
  const json = providerJson(provider, config.issuer);
  if (values.json) {
    io.stdout(`${JSON.stringify(json)}\n`);
    return;
  }
  io.stdout(`Added ${provider.kind === 'ldap' ? 'directory' : 'identity provider'} "${provider.name}" (${provider.id}).\n`);
  if (typeof json['redirect_uri'] === 'string') io.stdout(`Register this redirect URI with the provider: ${json['redirect_uri']}\n`);
}

/**
 * The redirect URI of a provider before it is added (issue 49): the upstream client, whose
 * id and secret `provider add` needs, must be registered with it first. NAME is the name
 * `provider add --name` will be given (or `--id ID`, as add takes it); an existing
 * provider's id gives its own.
 */
async function providerRedirectUri(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { id: { type: 'string' } }, 1);
  io.stdout(`${upstreamRedirectUri(config.issuer, providerIdFor({ name: positionals[0]!, ...(values.id === undefined ? {} : { id: values.id }) }))}\n`);
}

async function providerList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const providers = await withStore(config, (store) => listProviders({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(providers.map((provider) => providerJson(provider, config.issuer)))}\n`);
    return;
  }
  if (providers.length === 0) io.stdout('No identity providers.\n');
  for (const provider of providers) io.stdout(`${provider.id}  ${provider.kind}  ${provider.name}${provider.settings['only'] === true ? '  (the only way in)' : ''}\n`);
}

async function providerShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const provider = await withStore(config, (store) => getProvider({ store }, positionals[0]!));
  const json = providerJson(provider, config.issuer);
  io.stdout(values.json ? `${JSON.stringify(json)}\n` : describe(json));
}

async function providerUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, UPDATE_OPTIONS, 1);
  const given = await input(values, io);
  const provider = await withStore(config, (store) => updateProvider(providerDeps(config, store, io), positionals[0]!, given));
  const json = providerJson(provider, config.issuer);
  io.stdout(values.json ? `${JSON.stringify(json)}\n` : `Updated identity provider ${provider.id}.\n`);
}

async function providerRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  await withStore(config, (store) => removeProvider(providerDeps(config, store, io), id));
  io.stdout(`Removed identity provider ${id}: nobody signs in through it any more; the users it created stay.\n`);
}

export const PROVIDER_COMMANDS = {
  'provider add': providerAdd,
  'provider redirect-uri': providerRedirectUri,
  'provider list': providerList,
  'provider show': providerShow,
  'provider update': providerUpdate,
  'provider remove': providerRemove,
};

/** `tessera provider …`: arguments in, the operations of src/flows/manage/providers.ts, text out. */
import type { Config } from '../config/index.ts';
import {
  addProvider,
  getProvider,
  listProviders,
  providerIdFor,
  providerJson,
  removeProvider,
  updateProvider,
  type ProviderDeps,
  type ProviderInput,
} from '../flows/manage/providers.ts';
import { upstreamRedirectUri } from '../flows/upstream/settings.ts';
import type { Store } from '../store/types.ts';
import { loadKeyEncryption } from '../tokens/key-encryption.ts';
import { secretBox } from '../tokens/secret-box.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { PROVIDER_FIELDS } from '../flows/manage/fields/providers.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';
import { operatorDeps, parse, withStore, type Io } from './common.ts';

const ADD_OPTIONS = { ...cliOptions(PROVIDER_FIELDS, 'create').options, json: { type: 'boolean' } } as const;
const UPDATE_OPTIONS = { ...cliOptions(PROVIDER_FIELDS, 'update').options, json: { type: 'boolean' } } as const;

/** The provider operations' deps: the key encryption key seals secrets as the server's does. */
function providerDeps(config: Config, store: Store, io: Io): ProviderDeps {
  return { ...operatorDeps(config, store, io), secrets: secretBox(loadKeyEncryption(config.keyEncryption)) };
}

/**
 * The operation's input of the options given (every kind's: the operation refuses those of
 * another kind by their option); a secret from standard input.
 */
async function input(values: OptionValues, io: Io, operation: 'create' | 'update', kind?: string): Promise<ProviderInput> {
  const given = await inputFromOptions(PROVIDER_FIELDS, operation, values, {}, {}, { stdin: io.stdin });
  return (kind === undefined ? given : { kind, ...given }) as ProviderInput;
}

/** The provider as an operator reads it: one `key: value` line each, lists joined. */
function describe(json: Record<string, unknown>): string {
  const lines = Object.entries(json)
    .filter(([key]) => key !== 'id' && key !== 'name')
    .map(([key, value]) => {
      const shown = Array.isArray(value)
        ? value.length
          ? value.join(' ')
          : '(none)'
        : value !== null && typeof value === 'object'
          ? JSON.stringify(value)
          : String(value ?? '(none)');
      return `  ${key.replaceAll('_', ' ')}: ${shown}\n`;
    });
  return `${String(json['id'])}  ${String(json['name'])}\n${lines.join('')}`;
}

async function providerAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, ADD_OPTIONS, 1);
  const given = await input(values as OptionValues, io, 'create', positionals[0]);
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
 * The redirect URI of a provider before it is added: the upstream client, whose
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
  for (const provider of providers)
    io.stdout(`${provider.id}  ${provider.kind}  ${provider.name}${provider.settings['only'] === true ? '  (the only way in)' : ''}\n`);
}

async function providerShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const provider = await withStore(config, (store) => getProvider({ store }, positionals[0]!));
  const json = providerJson(provider, config.issuer);
  io.stdout(values.json ? `${JSON.stringify(json)}\n` : describe(json));
}

async function providerUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, UPDATE_OPTIONS, 1);
  const given = await input(values as OptionValues, io, 'update');
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

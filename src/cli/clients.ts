/** `tessera client …`: arguments in, the operations of src/flows/manage/clients.ts, text out. */
import type { Config } from '../config/index.ts';
import {
  clientJson,
  createClient,
  getClient,
  listClients,
  removeClient,
  revokeClientTokens,
  rotateClientSecret,
  updateClient,
  type ClientMetadata,
} from '../flows/manage/clients.ts';
import { CLIENT_FIELDS } from '../flows/manage/fields/clients.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import type { ClientRecord } from '../store/types.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';
import { operatorDeps, parse, UsageError, wholeNumber, withStore, type Io } from './common.ts';

function clientText(client: ClientRecord, now: number): string {
  const lines = [
    `${client.id}  ${client.name}`,
    `  auth: ${client.authMethod === 'none' ? 'none (public client)' : client.authMethod}`,
    `  scopes: ${client.scopes.join(' ')}`,
    `  grants: ${client.grantTypes.join(', ')}`,
    ...client.redirectUris.map((uri) => `  redirect: ${uri}`),
    ...client.webOrigins.map((origin) => `  web origin: ${origin}`),
    ...(client.deviceNetworks ?? []).map((network) => `  device network: ${network}`),
    ...(client.exchangeAudiences ?? []).map((audience) => `  token exchange for: ${audience}`),
    ...(client.jwksUri !== null ? [`  jwks_uri: ${client.jwksUri}`] : []),
    ...(client.jwks !== null ? [`  jwks: ${((client.jwks['keys'] as unknown[] | undefined) ?? []).length} registered key(s)`] : []),
    ...(client.pkce === 'optional' ? ['  pkce: optional (nonce instead, for OpenID sign-ins)'] : []),
    ...(client.pkce === 'optional-without-nonce' ? ['  pkce: optional, and nonce too (neither is required)'] : []),
    ...(client.requestObjectSigningAlg === 'none' ? ['  request objects: unsigned (alg none) only'] : []),
    ...(client.requestObjectSigningAlg !== undefined && client.requestObjectSigningAlg !== 'none'
      ? [`  request objects: signed with ${client.requestObjectSigningAlg} only`]
      : []),
    ...(client.requirePhishingResistant ? ['  approvals: passkey sign-ins only'] : []),
    ...(client.firstParty ? ['  first-party: signs in without a consent page'] : []),
    ...(client.registeredBy === undefined
      ? []
      : [
          `  registered by: ${client.registeredBy === 'dynamic' ? 'the app itself (RFC 7591)' : 'its metadata document (its client_id URL)'}, ${client.verified ? 'verified' : 'not verified: its consent page says so'}`,
        ]),
    ...client.postLogoutRedirectUris.map((uri) => `  after logout: ${uri}`),
    ...(client.backchannelLogoutUri !== null ? [`  back-channel logout: ${client.backchannelLogoutUri}`] : []),
    ...(client.requireDpop ? ['  requires DPoP proofs'] : []),
    ...(client.requirePar ? ['  requires pushed authorization requests'] : []),
    ...(client.previousSecretHash !== null && (client.previousSecretExpiresAt ?? 0) > now
      ? [`  previous secret accepted until ${new Date(client.previousSecretExpiresAt!).toISOString()}`]
      : []),
  ];
  return `${lines.join('\n')}\n`;
}

const ADD_OPTIONS = cliOptions(CLIENT_FIELDS, 'create').options;
const UPDATE_OPTIONS = cliOptions(CLIENT_FIELDS, 'update').options;

async function clientAdd(config: Config, args: string[], io: Io): Promise<void> {
  // The table's options, and `--public`: the command's word for token_endpoint_auth_method none.
  const values = parse(args, { ...ADD_OPTIONS, public: { type: 'boolean' }, json: { type: 'boolean' } }).values as OptionValues;
  if (typeof values['name'] !== 'string' || !values['name'].trim()) throw new UsageError('--name is required');
  if (values['public'] && (values['auth-method'] !== undefined || values['jwks-uri'] !== undefined || values['jwks-file'] !== undefined)) {
    throw new UsageError('--public clients have no secret and no keys: leave out --auth-method, --jwks-uri and --jwks-file');
  }
  if (values['auth-method'] === 'none') throw new UsageError('--auth-method none: a client without a secret is registered with --public');
  const metadata = {
    ...(await inputFromOptions(CLIENT_FIELDS, 'create', values)),
    ...(values['public'] ? { token_endpoint_auth_method: 'none' } : {}),
  } as ClientMetadata;
  const { client, secret } = await withStore(config, (store) => createClient(operatorDeps(config, store, io), metadata));
  if (values.json) {
    const { created_at: _, ...described } = clientJson(client, client.createdAt);
    io.stdout(`${JSON.stringify({ ...described, ...(secret === null ? {} : { client_secret: secret }) })}\n`);
  } else if (client.authMethod === 'none') {
    io.stdout(
      `Registered public client "${client.name}".\n  client_id: ${client.id}\nIt has no secret: it sends its client_id in the form body and proves itself with PKCE.\n`,
    );
  } else if (secret === null) {
    io.stdout(`Registered client "${client.name}".\n  client_id: ${client.id}\nIt authenticates with private_key_jwt: assertions signed with its keys.\n`);
  } else {
    io.stdout(
      `Registered client "${client.name}".\n  client_id:     ${client.id}\n  client_secret: ${secret}\nThe secret is shown only now; Tessera keeps only its hash.\n`,
    );
  }
}

async function clientList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const clients = await withStore(config, (store) => listClients({ store }));
  const now = Date.now();
  if (values.json) {
    io.stdout(`${JSON.stringify(clients.map((client) => clientJson(client, now)))}\n`);
    return;
  }
  if (clients.length === 0) io.stdout('No clients registered.\n');
  for (const client of clients) io.stdout(clientText(client, now));
}

async function clientShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const client = await withStore(config, (store) => getClient({ store }, positionals[0]!));
  io.stdout(values.json ? `${JSON.stringify(clientJson(client, Date.now()))}\n` : clientText(client, Date.now()));
}

async function clientUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const parsed = parse(args, { ...UPDATE_OPTIONS, json: { type: 'boolean' } }, 1);
  const values = parsed.values as OptionValues;
  const positionals = parsed.positionals;
  const id = positionals[0]!;
  if (Object.keys(values).filter((option) => option !== 'json').length === 0) throw new UsageError('nothing to change: give at least one option');
  const { client, secret } = await withStore(config, async (store) => {
    const deps = operatorDeps(config, store, io);
    const current = clientJson(await getClient(deps, id), Date.now());
    // A web origin is stored without a trailing slash: removing one typed with it removes it.
    const changes = await inputFromOptions(CLIENT_FIELDS, 'update', values, current, { web_origins: (origin) => origin.replace(/\/$/, '') });
    return updateClient(deps, id, changes as ClientMetadata);
  });
  const now = Date.now();
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...clientJson(client, now), ...(secret === null ? {} : { client_secret: secret }) })}\n`);
    return;
  }
  io.stdout(`Updated client ${id}; the change is in effect now.\n${clientText(client, now)}`);
  if (secret !== null) io.stdout(`  client_secret: ${secret}\nThe secret is shown only now; Tessera keeps only its hash.\n`);
}

async function clientRotateSecret(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { grace: { type: 'string' }, json: { type: 'boolean' } }, 1);
  const id = positionals[0]!;
  const { client, secret } = await withStore(config, (store) => rotateClientSecret(operatorDeps(config, store, io), id, wholeNumber(values.grace)));
  const until = new Date(client.previousSecretExpiresAt!).toISOString();
  if (values.json) {
    io.stdout(`${JSON.stringify({ client_id: id, client_secret: secret, previous_secret_expires_at: until })}\n`);
    return;
  }
  io.stdout(`New secret for client ${id}:\n  client_secret: ${secret}\nThe secret is shown only now. The previous one is accepted until ${until}.\n`);
}

async function clientRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  await withStore(config, (store) => removeClient(operatorDeps(config, store, io), id));
  io.stdout(`Removed client ${id}.\n`);
}

async function clientRevokeTokens(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  const { grantsRevoked } = await withStore(config, (store) => revokeClientTokens(operatorDeps(config, store, io), id));
  io.stdout(
    `Revoked every token of client ${id}: its own, and those of ${grantsRevoked} grant${grantsRevoked === 1 ? '' : 's'} people approved; they stop working now. People can sign in to it again.\n`,
  );
}

export const CLIENT_COMMANDS = {
  'client add': clientAdd,
  'client list': clientList,
  'client show': clientShow,
  'client update': clientUpdate,
  'client rotate-secret': clientRotateSecret,
  'client revoke-tokens': clientRevokeTokens,
  'client remove': clientRemove,
};

/** `tessera client …`: arguments in, the operations of src/flows/manage/clients.ts, text out. */
import { readFile } from 'node:fs/promises';
import type { Config } from '../config/index.ts';
import { clientJson, createClient, getClient, listClients, removeClient, revokeClientTokens, rotateClientSecret, updateClient, type ClientMetadata } from '../flows/manage/clients.ts';
import type { ClientRecord } from '../store/types.ts';
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
    ...(client.jwksUri !== null ? [`  jwks_uri: ${client.jwksUri}`] : []),
    ...(client.jwks !== null ? [`  jwks: ${((client.jwks['keys'] as unknown[] | undefined) ?? []).length} registered key(s)`] : []),
    ...(client.pkce === 'optional' ? ['  pkce: optional (nonce instead, for OpenID sign-ins)'] : []),
    ...(client.pkce === 'optional-without-nonce' ? ['  pkce: optional, and nonce too (neither is required)'] : []),
    ...(client.requestObjectSigningAlg === 'none' ? ['  request objects: unsigned (alg none) only'] : []),
    ...(client.requestObjectSigningAlg !== undefined && client.requestObjectSigningAlg !== 'none' ? [`  request objects: signed with ${client.requestObjectSigningAlg} only`] : []),
    ...(client.requirePhishingResistant ? ['  approvals: passkey sign-ins only'] : []),
    ...(client.firstParty ? ['  first-party: signs in without a consent page'] : []),
    ...(client.registeredBy === undefined ? [] : [`  registered by: ${client.registeredBy === 'dynamic' ? 'the app itself (RFC 7591)' : 'its metadata document (its client_id URL)'}, ${client.verified ? 'verified' : 'not verified: its consent page says so'}`]),
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

/** `--jwks-file FILE`: the JWK Set it holds, which the operation checks. */
async function jwksFile(file: string | undefined): Promise<{ jwks?: unknown }> {
  if (file === undefined) return {};
  try {
    return { jwks: JSON.parse(await readFile(file, 'utf8')) as unknown };
  } catch (error) {
    throw new UsageError(`--jwks-file ${file}: ${error instanceof SyntaxError ? 'not JSON' : 'cannot be read'}`);
  }
}

/** `--flag` true, `--no-flag` false, neither undefined. */
function toggle(on: boolean | undefined, off: boolean | undefined, name: string): { value?: boolean } {
  if (on && off) throw new UsageError(`--${name} and --no-${name}: give one`);
  return on ? { value: true } : off ? { value: false } : {};
}

async function clientAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    name: { type: 'string' },
    'redirect-uri': { type: 'string', multiple: true },
    scope: { type: 'string' },
    grant: { type: 'string', multiple: true },
    public: { type: 'boolean' },
    'web-origin': { type: 'string', multiple: true },
    'device-network': { type: 'string', multiple: true },
    'auth-method': { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    pkce: { type: 'string' },
    'request-object-signing-alg': { type: 'string' },
    'require-phishing-resistant': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
    'require-dpop': { type: 'boolean' },
    'require-par': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  if (!values.name?.trim()) throw new UsageError('--name is required');
  if (values.public && (values['auth-method'] !== undefined || values['jwks-uri'] !== undefined || values['jwks-file'] !== undefined)) {
    throw new UsageError('--public clients have no secret and no keys: leave out --auth-method, --jwks-uri and --jwks-file');
  }
  if (values['auth-method'] === 'none') throw new UsageError('--auth-method none: a client without a secret is registered with --public');
  const metadata: ClientMetadata = {
    client_name: values.name,
    redirect_uris: values['redirect-uri'] ?? [],
    ...(values.scope === undefined ? {} : { scope: values.scope }),
    ...(values.grant === undefined ? {} : { grant_types: values.grant }),
    ...(values.public ? { token_endpoint_auth_method: 'none' } : values['auth-method'] === undefined ? {} : { token_endpoint_auth_method: values['auth-method'] }),
    web_origins: values['web-origin'] ?? [],
    device_networks: values['device-network'] ?? [],
    ...(values['jwks-uri'] === undefined ? {} : { jwks_uri: values['jwks-uri'] }),
    ...(await jwksFile(values['jwks-file'])),
    ...(values.pkce === undefined ? {} : { pkce: values.pkce }),
    require_phishing_resistant: values['require-phishing-resistant'] === true,
    first_party: values['first-party'] === true,
    post_logout_redirect_uris: values['post-logout-redirect-uri'] ?? [],
    backchannel_logout_uri: values['backchannel-logout-uri'] ?? null,
    dpop_bound_access_tokens: values['require-dpop'] === true,
    require_pushed_authorization_requests: values['require-par'] === true,
    ...(values['request-object-signing-alg'] === undefined ? {} : { request_object_signing_alg: values['request-object-signing-alg'] }),
  };
  const { client, secret } = await withStore(config, (store) => createClient(operatorDeps(config, store, io), metadata));
  if (values.json) {
    const { created_at: _, ...described } = clientJson(client, client.createdAt);
    io.stdout(`${JSON.stringify({ ...described, ...(secret === null ? {} : { client_secret: secret }) })}\n`);
  } else if (client.authMethod === 'none') {
    io.stdout(`Registered public client "${client.name}".\n  client_id: ${client.id}\nIt has no secret: it sends its client_id in the form body and proves itself with PKCE.\n`);
  } else if (secret === null) {
    io.stdout(`Registered client "${client.name}".\n  client_id: ${client.id}\nIt authenticates with private_key_jwt: assertions signed with its keys.\n`);
  } else {
    io.stdout(`Registered client "${client.name}".\n  client_id:     ${client.id}\n  client_secret: ${secret}\nThe secret is shown only now; Tessera keeps only its hash.\n`);
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

/** Those of `registered` that `remove` does not name, then `add`; a removal of what is not there is refused. */
function edit(registered: readonly string[], add: readonly string[] | undefined, remove: readonly string[] | undefined, option: string): string[] | undefined {
  if (add === undefined && remove === undefined) return undefined;
  const missing = (remove ?? []).filter((item) => !registered.includes(item));
  if (missing.length > 0) throw new UsageError(`--remove-${option} ${missing.join(', ')}: not registered for this client`);
  return [...registered.filter((item) => !(remove ?? []).includes(item)), ...(add ?? [])];
}

async function clientUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, {
    name: { type: 'string' },
    'add-redirect-uri': { type: 'string', multiple: true },
    'remove-redirect-uri': { type: 'string', multiple: true },
    scope: { type: 'string' },
    grant: { type: 'string', multiple: true },
    'add-web-origin': { type: 'string', multiple: true },
    'remove-web-origin': { type: 'string', multiple: true },
    'auth-method': { type: 'string' },
    'jwks-uri': { type: 'string' },
    'jwks-file': { type: 'string' },
    pkce: { type: 'string' },
    'request-object-signing-alg': { type: 'string' },
    'no-request-object-signing-alg': { type: 'boolean' },
    'require-phishing-resistant': { type: 'boolean' },
    'no-require-phishing-resistant': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'no-first-party': { type: 'boolean' },
    verified: { type: 'boolean' },
    'no-verified': { type: 'boolean' },
    'add-post-logout-redirect-uri': { type: 'string', multiple: true },
    'remove-post-logout-redirect-uri': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
    'no-backchannel-logout-uri': { type: 'boolean' },
    'require-dpop': { type: 'boolean' },
    'no-require-dpop': { type: 'boolean' },
    'require-par': { type: 'boolean' },
    'no-require-par': { type: 'boolean' },
    json: { type: 'boolean' },
  }, 1);
  const id = positionals[0]!;
  if (Object.keys(values).filter((option) => option !== 'json').length === 0) throw new UsageError('nothing to change: give at least one option');
  const phishingResistant = toggle(values['require-phishing-resistant'], values['no-require-phishing-resistant'], 'require-phishing-resistant');
  const firstParty = toggle(values['first-party'], values['no-first-party'], 'first-party');
  const verified = toggle(values.verified, values['no-verified'], 'verified');
  const dpop = toggle(values['require-dpop'], values['no-require-dpop'], 'require-dpop');
  const par = toggle(values['require-par'], values['no-require-par'], 'require-par');
  if (values['backchannel-logout-uri'] !== undefined && values['no-backchannel-logout-uri']) {
    throw new UsageError('--backchannel-logout-uri and --no-backchannel-logout-uri: give one');
  }
  if (values['request-object-signing-alg'] !== undefined && values['no-request-object-signing-alg']) {
    throw new UsageError('--request-object-signing-alg and --no-request-object-signing-alg: give one');
  }
  const jwks = await jwksFile(values['jwks-file']);
  const { client, secret } = await withStore(config, async (store) => {
    const deps = operatorDeps(config, store, io);
    const current = await getClient(deps, id);
    const redirectUris = edit(current.redirectUris, values['add-redirect-uri'], values['remove-redirect-uri'], 'redirect-uri');
    const webOrigins = edit(current.webOrigins, values['add-web-origin'], values['remove-web-origin']?.map((origin) => origin.replace(/\/$/, '')), 'web-origin');
    const logoutUris = edit(current.postLogoutRedirectUris, values['add-post-logout-redirect-uri'], values['remove-post-logout-redirect-uri'], 'post-logout-redirect-uri');
    const changes: ClientMetadata = {
      ...(values.name === undefined ? {} : { client_name: values.name }),
      ...(redirectUris === undefined ? {} : { redirect_uris: redirectUris }),
      ...(values.scope === undefined ? {} : { scope: values.scope }),
      ...(values.grant === undefined ? {} : { grant_types: values.grant }),
      ...(webOrigins === undefined ? {} : { web_origins: webOrigins }),
      ...(values['auth-method'] === undefined ? {} : { token_endpoint_auth_method: values['auth-method'] }),
      ...(values['jwks-uri'] === undefined ? {} : { jwks_uri: values['jwks-uri'] }),
      ...jwks,
      ...(values.pkce === undefined ? {} : { pkce: values.pkce }),
      ...(phishingResistant.value === undefined ? {} : { require_phishing_resistant: phishingResistant.value }),
      ...(firstParty.value === undefined ? {} : { first_party: firstParty.value }),
      ...(verified.value === undefined ? {} : { verified: verified.value }),
      ...(logoutUris === undefined ? {} : { post_logout_redirect_uris: logoutUris }),
      ...(values['no-backchannel-logout-uri'] ? { backchannel_logout_uri: null } : values['backchannel-logout-uri'] === undefined ? {} : { backchannel_logout_uri: values['backchannel-logout-uri'] }),
      ...(dpop.value === undefined ? {} : { dpop_bound_access_tokens: dpop.value }),
      ...(par.value === undefined ? {} : { require_pushed_authorization_requests: par.value }),
      ...(values['no-request-object-signing-alg'] ? { request_object_signing_alg: null } : values['request-object-signing-alg'] === undefined ? {} : { request_object_signing_alg: values['request-object-signing-alg'] }),
    };
    return updateClient(deps, id, changes);
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
  io.stdout(`Revoked every token of client ${id}: its own, and those of ${grantsRevoked} grant${grantsRevoked === 1 ? '' : 's'} people approved; they stop working now. People can sign in to it again.\n`);
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

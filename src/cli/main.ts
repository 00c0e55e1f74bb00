#!/usr/bin/env node
/**
 * The `tessera` command: the second composition root. Run in a checkout as
 * `npm run --silent tessera -- <command>`.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, loadConfig, type Config } from '../config/index.ts';
import { systemClock } from '../core/clock.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { EVENT_TYPES, eventLogFields, Events, isEventType, type AuditEvent, type EventInput } from '../core/events.ts';
import { hashPassword } from '../core/password.ts';
import {
  GRANT_AUTHORIZATION_CODE,
  GRANT_DEVICE_CODE,
  GRANT_REFRESH_TOKEN,
  SECRET_AUTH_METHODS,
  type ClientAuthMethod,
  type GrantType,
  type PkcePolicy,
} from '../core/protocol.ts';
import { normalizeCidr } from '../core/networks.ts';
import { redirectUriProblem } from '../core/redirect-uri.ts';
import { SUPPORTED_SCOPES } from '../core/scopes.ts';
import { normalizeUsername } from '../core/username.ts';
import { revokeGrant } from '../flows/lifecycle/grants.ts';
import {
  createResetLink,
  DEFAULT_RESET_TTL_SECONDS,
  passwordProblem,
  removeUser,
  setUserDisabled,
  setUserPassword,
  updateUser,
  type AccountDeps,
} from '../flows/users.ts';
import { listPasskeys } from '../flows/passkeys/authentication.ts';
import { RECOVERY_CODE_COUNT, totpStatus } from '../flows/second-factor/codes.ts';
import { resetSecondFactor } from '../flows/second-factor/reset.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { keyManager, serve } from '../main.ts';
import { openStore } from '../store/open.ts';
import { DuplicateError, type ClientChanges, type ClientRecord, type ResourceScope, type SessionRecord, type Store, type UserRecord } from '../store/types.ts';
import { TokenIssuer } from '../tokens/issue.ts';
import { parseJwks } from '../tokens/client-jwks.ts';
import { describeAccess, ResourceCatalog, resourceIndicatorProblem } from '../flows/resources.ts';
import { deviceLogin, systemDeviceLoginDeps } from './device-login.ts';
import { messages } from '../ui/i18n.ts';
import { negotiateLocale, posixLocale } from '../ui/negotiate.ts';

export const USAGE = `Usage: tessera <command> [options]

Commands:
  serve [--workers N]                     Run the server (settings from the environment; see README);
                                          --workers: processes sharing the port (TESSERA_WORKERS)
  client add --name NAME --redirect-uri URI [--redirect-uri URI ...]
             [--scope "openid profile email"] [--grant TYPE ...] [--public]
             [--web-origin ORIGIN ...] [--auth-method METHOD] [--jwks-uri URL | --jwks-file FILE]
             [--pkce required|optional] [--require-phishing-resistant] [--require-dpop] [--require-par]
             [--first-party] [--post-logout-redirect-uri URI ...] [--backchannel-logout-uri URI]
             [--device-network CIDR ...] [--json]
                                          Register a client; prints its client_id and client_secret once
                                          (--grant: authorization_code by default, device_code and
                                          refresh_token only when asked for; --device-network: the only
                                          networks its devices may start from;
                                          --public: no secret, for browser, native and CLI apps;
                                          METHOD: client_secret_basic (default), client_secret_post,
                                          private_key_jwt with --jwks-uri or --jwks-file;
                                          --pkce optional: a confidential OpenID client may use nonce instead;
                                          --require-phishing-resistant: only a passkey sign-in may approve;
                                          --first-party: your own app, signed in without a consent page;
                                          --post-logout-redirect-uri: where it may send people after logout;
                                          --backchannel-logout-uri: where logout tokens are posted;
                                          --require-dpop: token requests need a DPoP proof (RFC 9449);
                                          --require-par: authorization requests must be pushed (RFC 9126))
  client list [--json]                    List registered clients
  client show CLIENT_ID [--json]          Show a client's registration
  client update CLIENT_ID [--name NAME] [--add-redirect-uri URI ...] [--remove-redirect-uri URI ...]
             [--scope "..."] [--grant TYPE ...] [--add-web-origin ORIGIN ...] [--remove-web-origin ORIGIN ...]
             [--auth-method METHOD] [--jwks-uri URL | --jwks-file FILE] [--pkce required|optional]
             [--[no-]require-phishing-resistant] [--[no-]require-dpop] [--[no-]require-par]
             [--first-party | --no-first-party]
             [--add-post-logout-redirect-uri URI ...] [--remove-post-logout-redirect-uri URI ...]
             [--backchannel-logout-uri URI | --no-backchannel-logout-uri] [--json]
                                          Change a client; in effect at once on every instance
  client rotate-secret CLIENT_ID [--grace SECONDS] [--json]
                                          Print a new secret once; the old one is accepted for the
                                          grace period (default 86400, one day)
  client remove CLIENT_ID                 Remove a client and everything issued to it
  resource add --identifier URI --name NAME --scope NAME=DESCRIPTION [--scope ...]
               [--access-token-ttl SECONDS] [--introspection-secret] [--json]
                                          Register an API (RFC 8707); its scope names are unique across
                                          the server; --introspection-secret prints, once, the secret its
                                          resource server introspects tokens with
  resource list [--json]                  List registered APIs and their scopes
  resource remove URI                     Remove an API: tokens and grants for it stop working at once
  user add --username NAME --password-stdin [--name "Full Name"] [--email ADDRESS]
                                          Create a user; the password is read from standard input
  user list [--json]                      List users
  user show USERNAME [--json]             Show a user, their approvals, last sign-in, passkeys and one-time codes
  user disable USERNAME                   Disable a user: sessions end and tokens stop working at once
  user enable USERNAME                    Enable a disabled user again
  user remove USERNAME                    Remove a user and everything issued to them
  user update USERNAME [--name "Full Name"] [--email ADDRESS]
                                          Change a user's name or e-mail address ("" clears it)
  user set-password USERNAME --password-stdin
                                          Set a user's password (from standard input); their sessions end
  user reset-link USERNAME [--ttl SECONDS]
                                          Print a single-use link where the user sets a new password
                                          (default: valid for ${DEFAULT_RESET_TTL_SECONDS} seconds)
  events [--user USERNAME] [--client CLIENT_ID] [--type TYPE] [--since TIME] [--limit N] [--json]
                                          The audit trail, newest first (--since: an ISO time, or
                                          an age such as 30m, 24h, 7d; --limit default 100)
  user reset-second-factor USERNAME       Remove a user's passkeys, one-time codes and recovery codes
  keys rotate                             Publish new signing keys; they sign after the lead time
  device-login --client-id ID [--client-secret SECRET] [--scope "openid profile"] [--issuer URL]
                                          Act as a device (RFC 8628): show a code and a QR code, wait
                                          for approval, print the granted scopes and ID token claims
                                          (no secret: a public client; TESSERA_CLIENT_SECRET also works)
  grant list --username NAME [--json]     List the applications and devices a user approved
  grant revoke GRANT_ID                   Revoke a grant: its access and refresh tokens stop working
`;

/** A mistake in how the command was called: usage line, exit 2. */
export class UsageError extends Error {}

export interface Io {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly stdin: () => Promise<string>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Standard output is a terminal (device-login redraws a countdown). */
  readonly tty?: boolean;
}

const GRANT_NAMES: Readonly<Record<string, GrantType>> = {
  authorization_code: GRANT_AUTHORIZATION_CODE,
  device_code: GRANT_DEVICE_CODE,
  [GRANT_DEVICE_CODE]: GRANT_DEVICE_CODE,
  refresh_token: GRANT_REFRESH_TOKEN,
};

/**
 * getopt's rule for an option that takes a value: `--name VALUE` takes the next argument
 * whatever it starts with. node:util's parseArgs refuses a value starting with `-` as
 * ambiguous, and a generated client secret starts with `-` about once in 64. `--name=VALUE`
 * is left as it is; nothing after `--` is an option.
 */
function attachValues(args: readonly string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  const attached: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg === '--') {
      attached.push(...args.slice(i));
      break;
    }
    const takesValue = arg.startsWith('--') && options[arg.slice(2)]?.type === 'string';
    if (takesValue && i + 1 < args.length) {
      attached.push(`${arg}=${args[i + 1]}`);
      i += 1;
    } else {
      attached.push(arg);
    }
  }
  return attached;
}

function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals = 0) {
  try {
    const parsed = parseArgs({ args: attachValues(args, options), options, allowPositionals: positionals > 0, strict: true });
    if (parsed.positionals.length !== positionals) throw new UsageError(`expected ${positionals} argument(s), got ${parsed.positionals.length}`);
    return parsed;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

async function withStore<T>(config: Config, run: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(config.database, config.postgres);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

const LOG_LEVELS_SHOWING_INFO = new Set(['info', 'debug', 'trace']);

/**
 * What an operator's command needs to change accounts and record it: events are stored
 * with no address (the command line), and logged as one JSON line on standard error, as
 * the server logs them, unless TESSERA_LOG_LEVEL is above info.
 */
function operatorDeps(config: Config, store: Store, io: Io): AccountDeps {
  const log = (event: AuditEvent) => {
    if (LOG_LEVELS_SHOWING_INFO.has(config.logLevel)) io.stderr(`${JSON.stringify({ level: 'info', ...eventLogFields(event), msg: 'audit event' })}\n`);
  };
  return { store, clock: systemClock, config, events: new Events(systemClock, store.events, [log]) };
}

/**
 * Back-Channel Logout 1.0 for the sessions a command ended: each app that received an ID
 * token in one is sent a logout token, delivered (or given up on, and said so on standard
 * error) before the command exits. Returns how many apps were sent one.
 */
async function tellApplications(config: Config, store: Store, io: Io, sessions: readonly SessionRecord[]): Promise<number> {
  if (sessions.length === 0) return 0;
  // The keys are read only when an app is to be told.
  let issuer: TokenIssuer | null = null;
  const tokens = {
    logoutToken: (...args: Parameters<TokenIssuer['logoutToken']>) =>
      (issuer ??= new TokenIssuer(keyManager(config, store), systemClock, config.issuer, config.lifetimes, store, config.accessTokenAlg)).logoutToken(...args),
  };
  const log = { warn: (details: Record<string, unknown>, message: string) => io.stderr(`${JSON.stringify({ level: 'warn', ...details, msg: message })}\n`) };
  const { clients, delivered } = await sendLogoutTokens({ store, config, tokens }, sessions, log);
  // The retries wait on timers that do not keep a process alive; the command must.
  const alive = setInterval(() => {}, 1000);
  try {
    await delivered;
  } finally {
    clearInterval(alive);
  }
  return clients;
}

function toldLine(clients: number): string {
  return clients === 0 ? '' : `Sent a logout token to ${clients === 1 ? 'the app' : `${clients} apps`} they were signed in to.\n`;
}

/** Records an operator's change that is one store call, already made. */
async function recordOperatorEvent(config: Config, store: Store, io: Io, input: EventInput): Promise<void> {
  await operatorDeps(config, store, io).events.emit({ ...input, detail: { ...input.detail, by: 'operator' } });
}

/** What registering or updating a client checks, whichever command set it. */
function checkRegistration(client: ClientChanges): void {
  const publicClient = client.authMethod === 'none';
  for (const uri of client.redirectUris) {
    const problem = redirectUriProblem(uri, { publicClient });
    if (problem) throw new UsageError(`--redirect-uri ${uri}: ${problem}`);
  }
  if (client.grantTypes.length === 1 && client.grantTypes[0] === GRANT_REFRESH_TOKEN) {
    throw new UsageError('--grant refresh_token needs authorization_code or device_code too: refresh tokens come from a sign-in');
  }
  if (client.grantTypes.includes(GRANT_AUTHORIZATION_CODE) && client.redirectUris.length === 0) {
    throw new UsageError('--redirect-uri is required for the authorization_code grant (or use --grant device_code)');
  }
  if (client.webOrigins.length > 0 && !publicClient) {
    throw new UsageError('--web-origin is for browser apps, which cannot keep a secret: register them with --public');
  }
  if (client.requirePar && !client.grantTypes.includes(GRANT_AUTHORIZATION_CODE)) {
    throw new UsageError('--require-par is for the authorization_code grant: pushed requests are authorization requests');
  }
  // RFC 9700 §2.1.1: only a confidential OpenID client may rely on nonce instead of PKCE.
  if (client.pkce === 'optional' && publicClient) throw new UsageError('--pkce optional is for confidential clients only: a public client always uses PKCE');
  // RP-Initiated Logout 1.0 §3: registered as redirect URIs are, and matched exactly.
  for (const uri of client.postLogoutRedirectUris) {
    const problem = redirectUriProblem(uri, { publicClient });
    if (problem) throw new UsageError(`--post-logout-redirect-uri ${uri}: ${problem}`);
  }
  // Back-Channel Logout 1.0 §2.2: an absolute URI without a fragment; here also https (http
  // only on loopback), since the logout token travels to it.
  if (client.backchannelLogoutUri !== null) {
    const problem = redirectUriProblem(client.backchannelLogoutUri, { publicClient: false });
    if (problem) throw new UsageError(`--backchannel-logout-uri ${client.backchannelLogoutUri}: ${problem}`);
  }
}

function parseScopes(raw: string): string[] {
  return [...new Set(raw.split(' ').filter(Boolean))];
}

/** A client's scope is an OpenID one or one a registered API defines. */
async function checkScopes(store: Store, scopes: readonly string[]): Promise<void> {
  const known = [...SUPPORTED_SCOPES, ...(await store.resources.list()).flatMap((resource) => resource.scopes.map((scope) => scope.name))];
  const unknown = scopes.filter((scope) => !known.includes(scope));
  if (unknown.length > 0) {
    throw new UsageError(`--scope: unknown scope ${unknown.join(', ')} (known: ${known.join(' ')}; an API's scopes come from \`tessera resource add\`)`);
  }
}

function parseGrants(grants: readonly string[]): GrantType[] {
  return [...new Set(grants.map((grant) => {
    const type = GRANT_NAMES[grant];
    if (!type) throw new UsageError(`--grant ${grant}: must be one of authorization_code, device_code, refresh_token`);
    return type;
  }))];
}

function parseWebOrigin(origin: string): string {
  const problem = webOriginProblem(origin);
  if (problem) throw new UsageError(`--web-origin ${origin}: ${problem}`);
  return new URL(origin).origin;
}

function parsePkce(value: string): PkcePolicy {
  if (value !== 'required' && value !== 'optional') throw new UsageError(`--pkce ${value}: must be required or optional`);
  return value;
}

function parseAuthMethod(value: string): Exclude<ClientAuthMethod, 'none'> {
  if (value === 'client_secret_basic' || value === 'client_secret_post' || value === 'private_key_jwt') return value;
  throw new UsageError(`--auth-method ${value}: must be client_secret_basic, client_secret_post or private_key_jwt`);
}

/**
 * The keys of a private_key_jwt client: a jwks_uri (https, or http on a loopback address) or
 * a JWK Set file of public keys.
 */
async function clientKeys(values: { 'jwks-uri'?: string | undefined; 'jwks-file'?: string | undefined }): Promise<{ jwksUri: string | null; jwks: Record<string, unknown> | null } | null> {
  const uri = values['jwks-uri'];
  const file = values['jwks-file'];
  if (uri !== undefined && file !== undefined) throw new UsageError('--jwks-uri and --jwks-file: give one');
  if (uri !== undefined) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw new UsageError(`--jwks-uri ${uri}: not an absolute URL`);
    }
    const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw new UsageError(`--jwks-uri ${uri}: must use https (http only on a loopback address)`);
    return { jwksUri: url.href, jwks: null };
  }
  if (file !== undefined) {
    let jwks: unknown;
    try {
      jwks = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new UsageError(`--jwks-file ${file}: ${error instanceof SyntaxError ? 'not JSON' : 'cannot be read'}`);
    }
    try {
      parseJwks(jwks);
    } catch (error) {
      throw new UsageError(`--jwks-file ${file}: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { jwksUri: null, jwks: jwks as Record<string, unknown> };
  }
  return null;
}

/** A client as `client show` and `client list --json` print it (RFC 7591 §2 names). */
function clientJson(client: ClientRecord, now: number): Record<string, unknown> {
  const graceOpen = client.previousSecretHash !== null && (client.previousSecretExpiresAt ?? 0) > now;
  return {
    client_id: client.id,
    client_name: client.name,
    token_endpoint_auth_method: client.authMethod,
    redirect_uris: client.redirectUris,
    scope: client.scopes.join(' '),
    grant_types: client.grantTypes,
    ...(client.webOrigins.length > 0 ? { web_origins: client.webOrigins } : {}),
    ...((client.deviceNetworks ?? []).length > 0 ? { device_networks: client.deviceNetworks } : {}),
    ...(client.jwksUri !== null ? { jwks_uri: client.jwksUri } : {}),
    ...(client.jwks !== null ? { jwks: client.jwks } : {}),
    pkce: client.pkce,
    ...(client.requirePhishingResistant ? { require_phishing_resistant: true } : {}),
    ...(client.firstParty ? { first_party: true } : {}),
    ...(client.postLogoutRedirectUris.length > 0 ? { post_logout_redirect_uris: client.postLogoutRedirectUris } : {}),
    ...(client.backchannelLogoutUri !== null ? { backchannel_logout_uri: client.backchannelLogoutUri } : {}),
    // RFC 9449 §5.2 and RFC 9126 §6 client metadata, both false when omitted.
    ...(client.requireDpop ? { dpop_bound_access_tokens: true } : {}),
    ...(client.requirePar ? { require_pushed_authorization_requests: true } : {}),
    ...(graceOpen ? { previous_secret_expires_at: new Date(client.previousSecretExpiresAt!).toISOString() } : {}),
    created_at: new Date(client.createdAt).toISOString(),
  };
}

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
    ...(client.requirePhishingResistant ? ['  approvals: passkey sign-ins only'] : []),
    ...(client.firstParty ? ['  first-party: signs in without a consent page'] : []),
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
    'require-phishing-resistant': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'post-logout-redirect-uri': { type: 'string', multiple: true },
    'backchannel-logout-uri': { type: 'string' },
    'require-dpop': { type: 'boolean' },
    'require-par': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const name = values.name?.trim();
  if (!name) throw new UsageError('--name is required');
  const keys = await clientKeys(values);
  if (values.public && (values['auth-method'] !== undefined || keys !== null)) {
    throw new UsageError('--public clients have no secret and no keys: leave out --auth-method, --jwks-uri and --jwks-file');
  }
  const authMethod: ClientAuthMethod = values.public ? 'none' : parseAuthMethod(values['auth-method'] ?? (keys ? 'private_key_jwt' : 'client_secret_basic'));
  if (authMethod === 'private_key_jwt' && keys === null) throw new UsageError('--auth-method private_key_jwt needs --jwks-uri URL or --jwks-file FILE');
  if (authMethod !== 'private_key_jwt' && keys !== null) throw new UsageError('--jwks-uri and --jwks-file are for --auth-method private_key_jwt');
  const redirectUris = values['redirect-uri'] ?? [];
  const scopes = parseScopes(values.scope ?? 'openid profile email');
  // draft-ietf-oauth-cross-device-security: the device grant, the one a remote phishing
  // attack abuses, only for a client registered for it.
  const grantTypes = parseGrants(values.grant ?? ['authorization_code']);
  const deviceNetworks = (values['device-network'] ?? []).map((network) => {
    const parsed = normalizeCidr(network);
    if (parsed === null) throw new UsageError(`--device-network ${network}: must be an IPv4 or IPv6 address or CIDR range, like 192.0.2.0/24`);
    return parsed;
  });
  if (deviceNetworks.length > 0 && !grantTypes.includes(GRANT_DEVICE_CODE)) {
    throw new UsageError('--device-network limits the device grant: add --grant device_code');
  }
  const webOrigins = (values['web-origin'] ?? []).map(parseWebOrigin);
  const pkce = parsePkce(values.pkce ?? 'required');
  const clientId = randomUUID();
  // A public client (RFC 6749 §2.1) has no secret: it proves nothing but its PKCE verifier; a
  // private_key_jwt client proves itself with its keys.
  const clientSecret = authMethod === 'none' || authMethod === 'private_key_jwt' ? null : randomToken(32);
  const client: ClientRecord = {
    id: clientId,
    name,
    secretHash: clientSecret === null ? null : hashSecret(clientSecret),
    redirectUris,
    scopes,
    grantTypes,
    webOrigins,
    deviceNetworks,
    createdAt: Date.now(),
    authMethod,
    previousSecretHash: null,
    previousSecretExpiresAt: null,
    jwksUri: keys?.jwksUri ?? null,
    jwks: keys?.jwks ?? null,
    pkce,
    ...(values['require-phishing-resistant'] ? { requirePhishingResistant: true } : {}),
    firstParty: values['first-party'] === true,
    postLogoutRedirectUris: [...new Set(values['post-logout-redirect-uri'] ?? [])],
    backchannelLogoutUri: values['backchannel-logout-uri'] ?? null,
    requireDpop: values['require-dpop'] === true,
    requirePar: values['require-par'] === true,
  };
  checkRegistration(client);
  await withStore(config, async (store) => {
    await checkScopes(store, scopes);
    await store.clients.create(client);
    await recordOperatorEvent(config, store, io, { type: 'client.created', clientId, detail: { name, auth_method: authMethod } });
  });
  if (values.json) {
    const { created_at: _, ...described } = clientJson(client, client.createdAt);
    io.stdout(`${JSON.stringify({ ...described, ...(clientSecret === null ? {} : { client_secret: clientSecret }) })}\n`);
  } else if (authMethod === 'none') {
    io.stdout(`Registered public client "${name}".\n  client_id: ${clientId}\nIt has no secret: it sends its client_id in the form body and proves itself with PKCE.\n`);
  } else if (clientSecret === null) {
    io.stdout(`Registered client "${name}".\n  client_id: ${clientId}\nIt authenticates with private_key_jwt: assertions signed with its keys.\n`);
  } else {
    io.stdout(`Registered client "${name}".\n  client_id:     ${clientId}\n  client_secret: ${clientSecret}\nThe secret is shown only now; Tessera keeps only its hash.\n`);
  }
}

async function clientList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const clients = await withStore(config, (store) => store.clients.list());
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
  const id = positionals[0]!;
  const client = await withStore(config, (store) => store.clients.get(id));
  if (!client) throw new Error(`no client with id ${id}`);
  io.stdout(values.json ? `${JSON.stringify(clientJson(client, Date.now()))}\n` : clientText(client, Date.now()));
}

/**
 * Changes a registration. Every instance sees the change at its next request: each reads
 * clients from the database, and PostgreSQL's instances drop a cached client when the
 * trigger announces its change.
 */
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
    'require-phishing-resistant': { type: 'boolean' },
    'no-require-phishing-resistant': { type: 'boolean' },
    'first-party': { type: 'boolean' },
    'no-first-party': { type: 'boolean' },
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
  const keys = await clientKeys(values);
  const outcome = await withStore(config, async (store) => {
    const client = await store.clients.get(id);
    if (!client) throw new Error(`no client with id ${id}`);
    const name = values.name?.trim();
    if (values.name !== undefined && !name) throw new UsageError('--name must not be empty');
    const removeUris = values['remove-redirect-uri'] ?? [];
    const missing = removeUris.filter((uri) => !client.redirectUris.includes(uri));
    if (missing.length > 0) throw new UsageError(`--remove-redirect-uri ${missing.join(', ')}: not registered for this client`);
    const removeOrigins = (values['remove-web-origin'] ?? []).map((origin) => origin.replace(/\/$/, ''));
    const missingOrigins = removeOrigins.filter((origin) => !client.webOrigins.includes(origin));
    if (missingOrigins.length > 0) throw new UsageError(`--remove-web-origin ${missingOrigins.join(', ')}: not registered for this client`);
    if (values['first-party'] && values['no-first-party']) throw new UsageError('--first-party and --no-first-party: give one');
    if (values['backchannel-logout-uri'] !== undefined && values['no-backchannel-logout-uri']) {
      throw new UsageError('--backchannel-logout-uri and --no-backchannel-logout-uri: give one');
    }
    const removeLogoutUris = values['remove-post-logout-redirect-uri'] ?? [];
    const missingLogoutUris = removeLogoutUris.filter((uri) => !client.postLogoutRedirectUris.includes(uri));
    if (missingLogoutUris.length > 0) throw new UsageError(`--remove-post-logout-redirect-uri ${missingLogoutUris.join(', ')}: not registered for this client`);

    let authMethod = client.authMethod;
    if (values['auth-method'] !== undefined) {
      if (client.authMethod === 'none') throw new UsageError('--auth-method: a public client cannot become confidential; register a new client');
      authMethod = parseAuthMethod(values['auth-method']);
    } else if (keys !== null && client.authMethod !== 'none') {
      authMethod = 'private_key_jwt';
    }
    if (keys !== null && authMethod !== 'private_key_jwt') throw new UsageError('--jwks-uri and --jwks-file are for --auth-method private_key_jwt');
    if (authMethod === 'private_key_jwt' && keys === null && client.jwks === null && client.jwksUri === null) {
      throw new UsageError('--auth-method private_key_jwt needs --jwks-uri URL or --jwks-file FILE');
    }
    // A client that had no secret and now authenticates with one gets a new one, shown once.
    const newSecret = SECRET_AUTH_METHODS.includes(authMethod) && client.secretHash === null ? randomToken(32) : null;
    const withSecret = SECRET_AUTH_METHODS.includes(authMethod);
    const changes: ClientChanges = {
      name: name ?? client.name,
      redirectUris: [...new Set([...client.redirectUris.filter((uri) => !removeUris.includes(uri)), ...(values['add-redirect-uri'] ?? [])])],
      scopes: values.scope !== undefined ? parseScopes(values.scope) : client.scopes,
      grantTypes: values.grant !== undefined ? parseGrants(values.grant) : client.grantTypes,
      webOrigins: [...new Set([...client.webOrigins.filter((origin) => !removeOrigins.includes(origin)), ...(values['add-web-origin'] ?? []).map(parseWebOrigin)])],
      deviceNetworks: client.deviceNetworks,
      authMethod,
      secretHash: withSecret ? (newSecret !== null ? hashSecret(newSecret) : client.secretHash) : null,
      previousSecretHash: withSecret && newSecret === null ? client.previousSecretHash : null,
      previousSecretExpiresAt: withSecret && newSecret === null ? client.previousSecretExpiresAt : null,
      jwksUri: authMethod === 'private_key_jwt' ? (keys ? keys.jwksUri : client.jwksUri) : null,
      jwks: authMethod === 'private_key_jwt' ? (keys ? keys.jwks : client.jwks) : null,
      pkce: values.pkce !== undefined ? parsePkce(values.pkce) : client.pkce,
      // --no-require-phishing-resistant lets password sign-ins approve it again.
      ...((values['require-phishing-resistant'] ? true : values['no-require-phishing-resistant'] ? false : client.requirePhishingResistant === true)
        ? { requirePhishingResistant: true }
        : {}),
      firstParty: values['first-party'] ? true : values['no-first-party'] ? false : client.firstParty,
      postLogoutRedirectUris: [
        ...new Set([...client.postLogoutRedirectUris.filter((uri) => !removeLogoutUris.includes(uri)), ...(values['add-post-logout-redirect-uri'] ?? [])]),
      ],
      backchannelLogoutUri: values['no-backchannel-logout-uri'] ? null : (values['backchannel-logout-uri'] ?? client.backchannelLogoutUri),
      requireDpop: values['require-dpop'] ? true : values['no-require-dpop'] ? false : client.requireDpop,
      requirePar: values['require-par'] ? true : values['no-require-par'] ? false : client.requirePar,
    };
    checkRegistration(changes);
    if (values.scope !== undefined) await checkScopes(store, changes.scopes);
    const updated = await store.clients.update(id, changes);
    if (!updated) throw new Error(`no client with id ${id}`);
    await recordOperatorEvent(config, store, io, { type: 'client.updated', clientId: id, detail: { fields: Object.keys(values).filter((key) => key !== 'json').join(' ') } });
    return { updated, newSecret };
  });
  const now = Date.now();
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...clientJson(outcome.updated, now), ...(outcome.newSecret === null ? {} : { client_secret: outcome.newSecret }) })}\n`);
    return;
  }
  io.stdout(`Updated client ${id}; the change is in effect now.\n${clientText(outcome.updated, now)}`);
  if (outcome.newSecret !== null) io.stdout(`  client_secret: ${outcome.newSecret}\nThe secret is shown only now; Tessera keeps only its hash.\n`);
}

/** The longest grace a rotated-out secret can be given: long enough for any redeployment. */
const MAX_GRACE_SECONDS = 30 * 86400;

/**
 * Gives a client a new secret. The old one keeps working for the grace period, so that the
 * application can be redeployed with the new one without a moment in which neither works.
 */
async function clientRotateSecret(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { grace: { type: 'string' }, json: { type: 'boolean' } }, 1);
  const id = positionals[0]!;
  const grace = values.grace ?? '86400';
  if (!/^\d{1,7}$/.test(grace) || Number(grace) > MAX_GRACE_SECONDS) throw new UsageError(`--grace ${grace}: a number of seconds from 0 to ${MAX_GRACE_SECONDS}`);
  const secret = randomToken(32);
  const previousExpiresAt = Date.now() + Number(grace) * 1000;
  const rotated = await withStore(config, async (store) => {
    const client = await store.clients.get(id);
    if (!client) throw new Error(`no client with id ${id}`);
    if (!SECRET_AUTH_METHODS.includes(client.authMethod)) {
      throw new Error(`client ${id} authenticates with ${client.authMethod === 'none' ? 'no secret (a public client)' : client.authMethod}: there is no secret to rotate`);
    }
    const done = await store.clients.rotateSecret(id, hashSecret(secret), previousExpiresAt);
    if (!done) throw new Error(`no client with id ${id}`);
    await recordOperatorEvent(config, store, io, { type: 'client.secret_rotated', clientId: id, detail: { previous_secret_expires_at: new Date(previousExpiresAt).toISOString() } });
    return done;
  });
  const until = new Date(rotated.previousSecretExpiresAt!).toISOString();
  if (values.json) {
    io.stdout(`${JSON.stringify({ client_id: id, client_secret: secret, previous_secret_expires_at: until })}\n`);
    return;
  }
  io.stdout(`New secret for client ${id}:\n  client_secret: ${secret}\nThe secret is shown only now. The previous one is accepted until ${until}.\n`);
}

async function clientRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  const removed = await withStore(config, async (store) => {
    const gone = await store.clients.remove(id);
    if (gone) await recordOperatorEvent(config, store, io, { type: 'client.removed', clientId: id });
    return gone;
  });
  if (!removed) throw new Error(`no client with id ${id}`);
  io.stdout(`Removed client ${id}.\n`);
}

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/;
/** Bounds on what the operator registers for an API. */
const MAX_RESOURCE_NAME = 100;
const MAX_SCOPE_DESCRIPTION = 200;
const MAX_RESOURCE_IDENTIFIER = 1024;
/** An API's own access token lifetime: from one minute to one day. */
const ACCESS_TOKEN_TTL_RANGE = { min: 60, max: 86_400 } as const;

/** `--scope NAME=DESCRIPTION`, checked. */
function resourceScope(value: string): ResourceScope {
  const equals = value.indexOf('=');
  const name = equals < 0 ? value : value.slice(0, equals);
  const description = equals < 0 ? '' : value.slice(equals + 1).trim();
  if (!SCOPE_TOKEN.test(name)) throw new UsageError(`--scope ${value}: the name must be 1-128 printable characters without spaces, quotes or backslashes (RFC 6749 §3.3)`);
  if (SUPPORTED_SCOPES.includes(name)) throw new UsageError(`--scope ${name}: an OpenID Connect scope cannot belong to an API`);
  if (!description) throw new UsageError(`--scope ${value}: give what it lets an application do, as NAME=DESCRIPTION ("photos:read=See your photos")`);
  if (description.length > MAX_SCOPE_DESCRIPTION) throw new UsageError(`--scope ${name}: the description must be at most ${MAX_SCOPE_DESCRIPTION} characters`);
  return { name, description };
}

async function resourceAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    identifier: { type: 'string' },
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
    'access-token-ttl': { type: 'string' },
    'introspection-secret': { type: 'boolean' },
    json: { type: 'boolean' },
  });
  const identifier = values.identifier ?? '';
  if (!identifier) throw new UsageError('--identifier is required: the API\'s URI, such as https://api.example.com');
  const problem = identifier.length > MAX_RESOURCE_IDENTIFIER ? 'is too long' : resourceIndicatorProblem(identifier);
  if (problem) throw new UsageError(`--identifier ${identifier}: ${problem} (RFC 8707 §2)`);
  const name = values.name?.trim();
  if (!name) throw new UsageError('--name is required: what people see on the consent page');
  if (name.length > MAX_RESOURCE_NAME) throw new UsageError(`--name must be at most ${MAX_RESOURCE_NAME} characters`);
  const scopes = (values.scope ?? []).map(resourceScope);
  if (scopes.length === 0) throw new UsageError('--scope NAME=DESCRIPTION is required, at least once');
  const repeated = scopes.find((scope, index) => scopes.findIndex((other) => other.name === scope.name) !== index);
  if (repeated) throw new UsageError(`--scope ${repeated.name} is given twice`);
  const rawTtl = values['access-token-ttl'];
  let accessTokenTtl: number | null = null;
  if (rawTtl !== undefined) {
    accessTokenTtl = /^\d{1,6}$/.test(rawTtl) ? Number(rawTtl) : NaN;
    if (!(accessTokenTtl >= ACCESS_TOKEN_TTL_RANGE.min && accessTokenTtl <= ACCESS_TOKEN_TTL_RANGE.max)) {
      throw new UsageError(`--access-token-ttl ${rawTtl}: a number of seconds from ${ACCESS_TOKEN_TTL_RANGE.min} to ${ACCESS_TOKEN_TTL_RANGE.max}`);
    }
  }
  const secret = values['introspection-secret'] ? randomToken(32) : null;
  await withStore(config, async (store) => {
    // Named before writing, so the one line says which API holds a taken scope.
    for (const resource of await store.resources.list()) {
      if (resource.identifier === identifier) throw new Error(`an API with identifier ${identifier} is already registered`);
      const taken = scopes.find((scope) => resource.scopes.some((other) => other.name === scope.name));
      if (taken) throw new Error(`scope ${taken.name} already belongs to ${resource.name} (${resource.identifier}); scope names are unique across the server`);
    }
    try {
      await store.transaction((tx) =>
        tx.resources.create({ identifier, name, scopes, accessTokenTtl, introspectionSecretHash: secret === null ? null : hashSecret(secret), createdAt: Date.now() }),
      );
    } catch (error) {
      // Another registration got there between the check and the write.
      if (error instanceof DuplicateError) throw new Error(`${error.message.replace(/^resource /, 'an API with identifier ').replace(/ already exists$/, ' is already registered')}`);
      throw error;
    }
    await recordOperatorEvent(config, store, io, { type: 'resource.created', detail: { resource: identifier, scope: scopes.map((scope) => scope.name).join(' ') } });
  });
  if (values.json) {
    io.stdout(`${JSON.stringify({
      identifier,
      name,
      scopes: scopes.map((scope) => ({ name: scope.name, description: scope.description })),
      access_token_ttl: accessTokenTtl,
      ...(secret === null ? {} : { introspection_secret: secret }),
    })}\n`);
    return;
  }
  io.stdout(`Registered API "${name}" (${identifier}) with scopes ${scopes.map((scope) => scope.name).join(' ')}.\n`);
  if (secret !== null) {
    io.stdout(`  introspection secret: ${secret}\nIts resource server calls POST /oauth/introspect with HTTP Basic: the identifier (form-urlencoded) and this secret.\nThe secret is shown only now; Tessera keeps only its hash.\n`);
  }
}

async function resourceList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const resources = await withStore(config, (store) => store.resources.list());
  if (values.json) {
    io.stdout(`${JSON.stringify(resources.map((resource) => ({
      identifier: resource.identifier,
      name: resource.name,
      scopes: resource.scopes.map((scope) => ({ name: scope.name, description: scope.description })),
      access_token_ttl: resource.accessTokenTtl,
      introspection: resource.introspectionSecretHash !== null,
    })))}\n`);
    return;
  }
  if (resources.length === 0) io.stdout('No APIs registered.\n');
  for (const resource of resources) {
    io.stdout(`${resource.identifier}  ${resource.name}\n${resource.scopes.map((scope) => `  scope: ${scope.name}  ${scope.description}\n`).join('')}  access tokens live: ${resource.accessTokenTtl === null ? 'the server default' : `${resource.accessTokenTtl} s`}\n  introspection: ${resource.introspectionSecretHash === null ? 'no' : 'yes'}\n`);
  }
}

async function resourceRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const identifier = positionals[0]!;
  const removed = await withStore(config, async (store) => {
    const gone = await store.resources.remove(identifier);
    if (gone) await recordOperatorEvent(config, store, io, { type: 'resource.removed', detail: { resource: identifier } });
    return gone;
  });
  if (!removed) throw new Error(`no API with identifier ${identifier}`);
  io.stdout(`Removed API ${identifier}: its tokens stop working now, and refresh tokens can no longer get new ones for it.\n`);
}

/** Why a browser origin cannot be registered for CORS, or null. */
function webOriginProblem(origin: string): string | null {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return 'must be an origin such as https://app.example';
  }
  if (url.origin === 'null' || `${url.origin}` !== origin.replace(/\/$/, '')) return 'must be an origin (scheme, host and port) without a path';
  if (url.protocol === 'https:' || (url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname))) return null;
  return 'must use https (http only on a loopback host)';
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

async function userAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    username: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    name: { type: 'string' },
    email: { type: 'string' },
  });
  const username = normalizeUsername(values.username ?? '');
  if (!username) throw new UsageError('--username is required');
  if (!/^[\p{L}\p{N}._@+-]{1,64}$/u.test(username)) throw new UsageError('--username: 1-64 letters, digits or . _ @ + -');
  if (!values['password-stdin']) throw new UsageError('--password-stdin is required: pass the password on standard input, never as an argument');
  if (values.email !== undefined && !EMAIL.test(values.email)) throw new UsageError(`--email ${values.email}: not an email address`);
  const password = await readPassword(io);
  const id = randomUUID();
  await withStore(config, async (store) => {
    try {
      await store.users.create({
        id,
        username,
        passwordHash: await hashPassword(password, config.passwordHash),
        name: values.name?.trim() || null,
        email: values.email ?? null,
        emailVerified: false,
        disabled: false,
        createdAt: Date.now(),
      });
    } catch (error) {
      if (error instanceof DuplicateError) throw new Error(`a user named ${username} already exists`);
      throw error;
    }
    await recordOperatorEvent(config, store, io, { type: 'user.created', userId: id, username });
  });
  io.stdout(`Created user ${username} (sub ${id}).\n`);
}

async function userResetSecondFactor(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const username = normalizeUsername(positionals[0]!);
  const reset = await withStore(config, async (store) => resetSecondFactor(operatorDeps(config, store, io), await namedUser(store, username)));
  const passkeys = reset.passkeys === 1 ? '1 passkey' : `${reset.passkeys} passkeys`;
  io.stdout(`Removed ${passkeys}${reset.totp ? ', one-time codes and recovery codes' : ''} of ${username}. They sign in with their password until they set up a new one.\n`);
}

async function keysRotate(config: Config, args: string[], io: Io): Promise<void> {
  parse(args, {});
  const added = await withStore(config, async (store) => {
    const keys = keyManager(config, store);
    await keys.ensureKeys();
    const rotated = await keys.rotate();
    await recordOperatorEvent(config, store, io, { type: 'keys.rotated', detail: { kids: rotated.map((key) => key.kid).join(' ') } });
    return rotated;
  });
  for (const key of added) {
    io.stdout(`Published ${key.alg} key ${key.kid}; it signs from ${new Date(key.activatesAt).toISOString()}.\n`);
  }
}

const when = (ms: number | null): string => (ms === null ? 'never' : new Date(ms).toISOString());

/** The password from standard input (one trailing newline dropped), if it can be used. */
async function readPassword(io: Io): Promise<string> {
  const password = (await io.stdin()).replace(/\r?\n$/, '');
  const problem = passwordProblem(password);
  if (problem) throw new Error(problem);
  return password;
}

/** The user a command names; an unknown one is one line and exit 1. */
async function namedUser(store: Store, raw: string): Promise<UserRecord> {
  const username = normalizeUsername(raw);
  const user = username ? await store.users.findByUsername(username) : null;
  if (!user) throw new Error(`no user named ${raw}`);
  return user;
}

function userJson(user: UserRecord): Record<string, unknown> {
  return {
    sub: user.id,
    username: user.username,
    name: user.name,
    email: user.email,
    disabled: user.disabled,
    created_at: new Date(user.createdAt).toISOString(),
  };
}

async function userList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const users = await withStore(config, (store) => store.users.list());
  if (values.json) {
    io.stdout(`${JSON.stringify(users.map(userJson))}\n`);
    return;
  }
  if (users.length === 0) io.stdout('No users.\n');
  for (const user of users) {
    io.stdout(`${user.username}${user.disabled ? '  (disabled)' : ''}\n  sub: ${user.id}\n${user.name ? `  name: ${user.name}\n` : ''}${user.email ? `  email: ${user.email}\n` : ''}`);
  }
}

async function userShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const shown = await withStore(config, async (store) => {
    const user = await namedUser(store, positionals[0]!);
    const grants = await store.grants.listForUser(user.id);
    const [lastSignIn] = await store.events.list({ userId: user.id, type: 'signin.succeeded', limit: 1 });
    const [passkeys, totp] = await Promise.all([listPasskeys({ store }, user.id), totpStatus({ store }, user.id)]);
    return { user, grants: grants.length, lastSignIn: lastSignIn ?? null, passkeys, totp };
  });
  const { user, grants, lastSignIn, passkeys, totp } = shown;
  if (values.json) {
    io.stdout(`${JSON.stringify({
      ...userJson(user),
      grants,
      last_sign_in: lastSignIn === null ? null : { at: new Date(lastSignIn.at).toISOString(), ip: lastSignIn.ip, user_agent: lastSignIn.userAgent },
      passkeys: passkeys.map((passkey) => ({
        id: passkey.id,
        name: passkey.name,
        synced: passkey.deviceType === 'multiDevice',
        created_at: new Date(passkey.createdAt).toISOString(),
        last_used_at: passkey.lastUsedAt === null ? null : new Date(passkey.lastUsedAt).toISOString(),
      })),
      one_time_codes: totp.enabled,
      recovery_codes_left: totp.recoveryCodesLeft,
    })}\n`);
    return;
  }
  const passkeyLines = passkeys.map((passkey) =>
    `\n    ${passkey.name} (${passkey.deviceType === 'multiDevice' ? 'synced' : 'this device only'}): added ${when(passkey.createdAt)}, last used ${when(passkey.lastUsedAt)}`);
  io.stdout(`${user.username}${user.disabled ? '  (disabled)' : ''}
  sub: ${user.id}
  name: ${user.name ?? '-'}
  email: ${user.email ?? '-'}
  created: ${when(user.createdAt)}
  approvals not revoked: ${grants}
  last sign-in: ${lastSignIn === null ? 'none recorded' : `${when(lastSignIn.at)}${lastSignIn.ip ? ` from ${lastSignIn.ip}` : ''}`}
  passkeys: ${passkeys.length === 0 ? 'none' : passkeys.length}${passkeyLines.join('')}
  one-time codes: ${totp.enabled ? `on, ${totp.recoveryCodesLeft} of ${RECOVERY_CODE_COUNT} recovery codes left` : 'off'}
`);
}

function userSetDisabled(disabled: boolean): Command {
  return async (config, args, io) => {
    const { positionals } = parse(args, {}, 1);
    const told = await withStore(config, async (store) => {
      const user = await namedUser(store, positionals[0]!);
      if (user.disabled === disabled) return null;
      return tellApplications(config, store, io, await setUserDisabled(operatorDeps(config, store, io), user, disabled));
    });
    const name = positionals[0]!;
    if (told === null) io.stdout(`${name} was already ${disabled ? 'disabled' : 'enabled'}.\n`);
    else io.stdout(disabled ? `Disabled ${name}: their sessions have ended and their tokens no longer work.\n${toldLine(told)}` : `Enabled ${name}.\n`);
  };
}

async function userRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const told = await withStore(config, async (store) =>
    tellApplications(config, store, io, await removeUser(operatorDeps(config, store, io), await namedUser(store, positionals[0]!))),
  );
  io.stdout(`Removed ${positionals[0]!} and everything issued to them.\n${toldLine(told)}`);
}

async function userUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { name: { type: 'string' }, email: { type: 'string' } }, 1);
  if (values.name === undefined && values.email === undefined) throw new UsageError('give --name, --email or both');
  if (values.email !== undefined && values.email !== '' && !EMAIL.test(values.email)) throw new UsageError(`--email ${values.email}: not an email address`);
  const changes = {
    ...(values.name === undefined ? {} : { name: values.name.trim() || null }),
    ...(values.email === undefined ? {} : { email: values.email || null }),
  };
  await withStore(config, async (store) => updateUser(operatorDeps(config, store, io), await namedUser(store, positionals[0]!), changes));
  io.stdout(`Updated ${positionals[0]!}.\n`);
}

async function userSetPassword(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { 'password-stdin': { type: 'boolean' } }, 1);
  if (!values['password-stdin']) throw new UsageError('--password-stdin is required: pass the password on standard input, never as an argument');
  const told = await withStore(config, async (store) => {
    const user = await namedUser(store, positionals[0]!);
    return tellApplications(config, store, io, await setUserPassword(operatorDeps(config, store, io), user, await readPassword(io)));
  });
  io.stdout(`Set the password of ${positionals[0]!}; their sessions have ended.\n${toldLine(told)}`);
}

async function userResetLink(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { ttl: { type: 'string' } }, 1);
  const ttl = values.ttl === undefined ? DEFAULT_RESET_TTL_SECONDS : Number(values.ttl);
  if (!/^\d{1,7}$/.test(values.ttl ?? '1') || ttl < 60 || ttl > 30 * 86400) throw new UsageError(`--ttl ${values.ttl}: seconds, from 60 to ${30 * 86400}`);
  const link = await withStore(config, async (store) => {
    const user = await namedUser(store, positionals[0]!);
    if (user.disabled) throw new Error(`${positionals[0]!} is disabled: enable them first`);
    return createResetLink(operatorDeps(config, store, io), user, ttl);
  });
  io.stdout(`${link.url}\nGive this link to ${positionals[0]!} only: it sets their password once, until ${when(link.expiresAt)}.\n`);
}

/** `--since`: an ISO 8601 time, or an age (`30m`, `24h`, `7d`). */
function parseSince(raw: string, now: number): number {
  const age = /^(\d{1,6})([smhd])$/.exec(raw.trim());
  if (age) return now - Number(age[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[age[2] as 's' | 'm' | 'h' | 'd'];
  const time = Date.parse(raw);
  if (Number.isNaN(time) || !/^\d{4}-\d{2}-\d{2}/.test(raw.trim())) throw new UsageError(`--since ${raw}: an ISO time (2026-01-31T12:00:00Z) or an age such as 30m, 24h, 7d`);
  return time;
}

function eventJson(event: AuditEvent): Record<string, unknown> {
  return {
    id: event.id,
    type: event.type,
    at: new Date(event.at).toISOString(),
    user_id: event.userId,
    username: event.username,
    client_id: event.clientId,
    grant_id: event.grantId,
    ip: event.ip,
    user_agent: event.userAgent,
    detail: event.detail,
  };
}

async function eventsCommand(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    user: { type: 'string' },
    client: { type: 'string' },
    type: { type: 'string' },
    since: { type: 'string' },
    limit: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (values.type !== undefined && !isEventType(values.type)) throw new UsageError(`--type ${values.type}: one of ${EVENT_TYPES.join(', ')}`);
  const limit = values.limit === undefined ? 100 : Number(values.limit);
  if (!/^\d{1,5}$/.test(values.limit ?? '1') || limit < 1 || limit > 10000) throw new UsageError(`--limit ${values.limit}: a whole number from 1 to 10000`);
  const since = values.since === undefined ? undefined : parseSince(values.since, Date.now());
  const found = await withStore(config, async (store) => {
    const username = values.user === undefined ? undefined : normalizeUsername(values.user);
    // A user is found by their sub, which the events of a removed user still carry: the
    // user's record, or else the latest event that named both (their removal, a sign-in).
    let userId: string | undefined;
    if (username !== undefined) {
      userId = (await store.users.findByUsername(username))?.id;
      userId ??= (await store.events.list({ username, limit: 1000 })).find((event) => event.username === username && event.userId !== null)?.userId ?? username;
    }
    const listed = await store.events.list({
      ...(username === undefined ? {} : { userId, username }),
      ...(values.client === undefined ? {} : { clientId: values.client }),
      ...(values.type === undefined || !isEventType(values.type) ? {} : { type: values.type }),
      ...(since === undefined ? {} : { since }),
      limit,
    });
    // Events a flow recorded with the user's id alone are shown with their username too.
    const ids = [...new Set(listed.filter((event) => event.username === null && event.userId !== null).map((event) => event.userId!))];
    const names = new Map(await Promise.all(ids.map(async (id) => [id, (await store.users.get(id))?.username ?? null] as const)));
    return listed.map((event) => (event.username === null && event.userId !== null ? { ...event, username: names.get(event.userId) ?? null } : event));
  });
  const events = found;
  if (values.json) {
    io.stdout(`${JSON.stringify(events.map(eventJson))}\n`);
    return;
  }
  if (events.length === 0) io.stdout('No events.\n');
  for (const event of events) {
    const fields = [
      event.username ?? event.userId ? `user=${event.username ?? event.userId}` : null,
      event.clientId ? `client=${event.clientId}` : null,
      event.grantId ? `grant=${event.grantId}` : null,
      event.ip ? `ip=${event.ip}` : null,
      ...Object.entries(event.detail).map(([key, value]) => `${key}=${JSON.stringify(value)}`),
    ].filter(Boolean);
    io.stdout(`${new Date(event.at).toISOString()}  ${event.type}  ${fields.join(' ')}\n`);
  }
}

async function grantList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { username: { type: 'string' }, json: { type: 'boolean' } });
  const username = normalizeUsername(values.username ?? '');
  if (!username) throw new UsageError('--username is required');
  const listed = await withStore(config, async (store) => {
    const user = await store.users.findByUsername(username);
    if (!user) throw new Error(`no user named ${username}`);
    const grants = await store.grants.listForUser(user.id);
    const names = new Map(await Promise.all([...new Set(grants.map((grant) => grant.clientId))].map(async (id) => [id, (await store.clients.get(id))?.name ?? id] as const)));
    const catalog = new ResourceCatalog(await store.resources.list());
    // The APIs each grant covers, by their names: what the person approved access to.
    return grants.map((grant) => ({ grant, clientName: names.get(grant.clientId) ?? grant.clientId, apis: describeAccess(catalog, grant.scope, grant.createdAt).apis }));
  });
  const now = Date.now();
  if (values.json) {
    io.stdout(`${JSON.stringify(listed.map(({ grant, clientName, apis }) => ({
      grant_id: grant.id,
      client_id: grant.clientId,
      client_name: clientName,
      scope: grant.scope.join(' '),
      apis: apis.map((api) => ({ identifier: api.identifier, name: api.name, scopes: api.scopes.map((scope) => scope.name) })),
      grant_type: grant.kind,
      approved_at: new Date(grant.createdAt).toISOString(),
      last_used_at: grant.lastUsedAt === null ? null : new Date(grant.lastUsedAt).toISOString(),
      active: grant.activeUntil !== null && grant.activeUntil > now,
      device: grant.device === null ? null : { ip: grant.device.ip, user_agent: grant.device.userAgent, requested_at: new Date(grant.device.requestedAt).toISOString() },
    })))}\n`);
    return;
  }
  if (listed.length === 0) io.stdout(`${username} has approved nothing that is not revoked.\n`);
  for (const { grant, clientName, apis } of listed) {
    const state = grant.activeUntil !== null && grant.activeUntil > now ? 'active' : 'no live tokens';
    const apiLines = apis.map((api) => `  API: ${api.name} (${api.identifier}): ${api.scopes.map((scope) => scope.description).join('; ')}\n`).join('');
    io.stdout(`${grant.id}  ${clientName} (${state})\n  scopes: ${grant.scope.join(' ')}\n${apiLines}  approved: ${when(grant.createdAt)}\n  last used: ${when(grant.lastUsedAt)}\n${grant.device ? `  device sign-in from ${grant.device.ip}${grant.device.userAgent ? ` (${grant.device.userAgent})` : ''}\n` : ''}`);
  }
}

async function grantRevoke(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const id = positionals[0]!;
  const revoked = await withStore(config, async (store) => {
    const grant = await store.grants.get(id);
    if (!grant) throw new Error(`no grant with id ${id}`);
    return revokeGrant(operatorDeps(config, store, io), grant, 'operator');
  });
  io.stdout(revoked ? `Revoked grant ${id}; its tokens no longer work.\n` : `Grant ${id} was already revoked.\n`);
}

/** Acts as a device against a running server (the issuer setting, or --issuer). Exit code 1 on denial or expiry. */
async function deviceLoginCommand(config: Config, args: string[], io: Io): Promise<number> {
  const { values } = parse(args, {
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    scope: { type: 'string' },
    issuer: { type: 'string' },
  });
  const clientId = values['client-id'];
  // The environment keeps the secret out of the process list and the shell history; without
  // one, the device acts as a public client.
  const clientSecret = values['client-secret'] ?? (io.env['TESSERA_CLIENT_SECRET'] || undefined);
  if (!clientId) throw new UsageError('--client-id is required');
  if (clientSecret === '') throw new UsageError('--client-secret must not be empty (leave it out for a public client)');
  let issuer = config.issuer;
  if (values.issuer !== undefined) {
    try {
      issuer = new URL(values.issuer).href.replace(/\/+$/, '');
    } catch {
      throw new UsageError(`--issuer ${values.issuer}: not an absolute URL`);
    }
  }
  return deviceLogin(
    { issuer, clientId, clientSecret, scope: values.scope ?? 'openid profile' },
    systemDeviceLoginDeps(io.tty === true, io.stdout, io.stderr, messages(negotiateLocale({ chosen: posixLocale(io.env) }, config.site))),
  );
}

type Command = (config: Config, args: string[], io: Io) => Promise<void>;

const COMMANDS: Readonly<Record<string, Command>> = {
  'client add': clientAdd,
  'client list': clientList,
  'client show': clientShow,
  'client update': clientUpdate,
  'client rotate-secret': clientRotateSecret,
  'client remove': clientRemove,
  'resource add': resourceAdd,
  'resource list': resourceList,
  'resource remove': resourceRemove,
  'user add': userAdd,
  'user list': userList,
  'user show': userShow,
  'user disable': userSetDisabled(true),
  'user enable': userSetDisabled(false),
  'user remove': userRemove,
  'user update': userUpdate,
  'user set-password': userSetPassword,
  'user reset-link': userResetLink,
  'user reset-second-factor': userResetSecondFactor,
  'keys rotate': keysRotate,
  'grant list': grantList,
  'grant revoke': grantRevoke,
};

/** Runs one command; returns the exit code. */
export async function run(argv: string[], io: Io): Promise<number> {
  try {
    const [first = '', second = '', ...rest] = argv;
    if (first === '--help' || first === '-h' || first === 'help') {
      io.stdout(USAGE);
      return 0;
    }
    const config = loadConfig(io.env);
    if (first === 'serve') {
      const { values } = parse([second, ...rest].filter(Boolean), { workers: { type: 'string' } });
      const workers = values.workers;
      if (workers !== undefined && !(/^\d{1,2}$/.test(workers) && Number(workers) >= 1 && Number(workers) <= 64)) {
        throw new UsageError(`--workers ${workers}: must be a whole number from 1 to 64`);
      }
      await serve(workers === undefined ? config : { ...config, workers: Number(workers) });
      return -1;
    }
    if (first === 'device-login') return await deviceLoginCommand(config, argv.slice(1), io);
    if (first === 'events') {
      await eventsCommand(config, argv.slice(1), io);
      return 0;
    }
    const command = COMMANDS[`${first} ${second}`];
    if (!command) throw new UsageError(first ? `unknown command: ${[first, second].filter(Boolean).join(' ')}` : 'no command given');
    await command(config, rest, io);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`tessera: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError) {
      io.stderr(`tessera: invalid setting ${error.message}\n`);
      return 1;
    }
    io.stderr(`tessera: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('Password: ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  run(process.argv.slice(2), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: readStdin,
    env: process.env,
    tty: process.stdout.isTTY === true,
  }).then((code) => {
    // -1: a server is running and keeps the process alive.
    if (code >= 0) process.exitCode = code;
  });
}

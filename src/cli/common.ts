/**
 * What every `tessera` command shares: reading its arguments, opening the store, and the
 * dependencies of the management operations (src/flows/manage) as the command line gives them.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config/index.ts';
import { closest, SETTINGS } from '../config/settings.ts';
import { systemClock } from '../core/clock.ts';
import { eventLogFields, Events, type AuditEvent } from '../core/events.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { OWNER } from '../flows/manage/authority.ts';
import type { ManageDeps } from '../flows/manage/deps.ts';
import { inspectDatabase, keyManager } from '../main.ts';
import { openStore } from '../store/open.ts';
import type { SessionRecord, Store } from '../store/types.ts';
import { TokenIssuer } from '../tokens/issue.ts';

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

/** A command; the exit status it returns, when not 0 (a check that found differences). */
// biome-ignore lint/suspicious/noConfusingVoidType: most commands return nothing, and exit 0.
export type Command = (config: Config, args: string[], io: Io) => Promise<void | number>;

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

export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T, positionals = 0) {
  try {
    const parsed = parseArgs({ args: attachValues(args, options), options, allowPositionals: positionals > 0, strict: true });
    if (parsed.positionals.length !== positionals) throw new UsageError(`expected ${positionals} argument(s), got ${parsed.positionals.length}`);
    return parsed;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    const code = (error as { code?: string } | null)?.code;
    const option = /'(-[^']*)'/.exec(error instanceof Error ? error.message : '')?.[1]?.split('=')[0];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined) {
      // node:util's message goes on about positionals; say what was wrong and what was meant.
      const name = option.replace(/^-+/, '');
      // A secret is never an argument (it would sit in the shell's history and in ps).
      if (Object.hasOwn(options, `${name}-stdin`))
        throw new UsageError(`unknown option ${option} (did you mean --${name}-stdin? it is read from standard input, never taken as an argument)`);
      // Settings come from the environment, never from options (`serve --port`). The value
      // typed is not repeated: it may be a secret (--smtp-url with its password, the key
      // encryption key), and standard error goes to journald and container logs.
      const upper = name.toUpperCase().replaceAll('-', '_');
      const settingName = [upper, `TESSERA_${upper}`].find((candidate) => SETTINGS.some((entry) => entry.name === candidate));
      if (settingName !== undefined) throw new UsageError(`unknown option ${option} (it is a setting: ${settingName}=... in the environment)`);
      const near = closest(name, Object.keys(options));
      throw new UsageError(`unknown option ${option}${near ? ` (did you mean --${near}?)` : ''}`);
    }
    // node:util: "Option '--name <value>' argument missing"; said as the other mistakes are.
    const missing = /^Option '(-[^' ]+)[^']*' argument missing/.exec(error instanceof Error ? error.message : '');
    if (missing) throw new UsageError(`option ${missing[1]} needs a value`);
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

/** A whole number of seconds or a count as typed; NaN for anything else, which the operation refuses. */
export function wholeNumber(raw: string | undefined, digits = 7): number | undefined {
  if (raw === undefined) return undefined;
  return new RegExp(`^\\d{1,${digits}}$`).test(raw) ? Number(raw) : NaN;
}

/** The option each field of the management operations is given with (see src/flows/manage/errors.ts). */
const OPTION_OF: Readonly<Record<string, string>> = {
  client_name: 'name',
  redirect_uris: 'redirect-uri',
  grant_types: 'grant',
  token_endpoint_auth_method: 'auth-method',
  jwks: 'jwks-file',
  web_origins: 'web-origin',
  device_networks: 'device-network',
  token_exchange_audiences: 'exchange-audience',
  require_pushed_authorization_requests: 'require-par',
  dpop_bound_access_tokens: 'require-dpop',
  post_logout_redirect_uris: 'post-logout-redirect-uri',
  grace_seconds: 'grace',
  ttl_seconds: 'ttl',
  scopes: 'scope',
  password: 'password-stdin',
  client_secret: 'client-secret-stdin',
  bind_password: 'bind-password-stdin',
  allowed_domains: 'allowed-domain',
  domains: 'domain',
  allowed_organizations: 'allowed-organization',
  events: 'event',
  acs_urls: 'acs-url',
  name_id_format: 'name-id',
  attributes: 'attribute',
  certificate: 'certificate-file',
  encryption_certificate: 'encryption-certificate-file',
  metadata: 'metadata-file',
  domain_verified: 'verified',
  organization: 'org',
  organization_role: 'role',
};

export const optionLabel = (field: string): string => `--${OPTION_OF[field] ?? field.replaceAll('_', '-')}`;

/** Opens the configured store for one command; a missing SQLite file is refused as `serve` refuses it. */
export async function withStore<T>(config: Config, run: (store: Store) => Promise<T>): Promise<T> {
  inspectDatabase(config);
  const store = await openStore(config.database, config.postgres);
  try {
    return await run(store);
  } finally {
    await store.close();
  }
}

const LOG_LEVELS_SHOWING_INFO = new Set(['info', 'debug', 'trace']);

/**
 * What an operator's command needs to change things and record it: events are stored with
 * no address (the command line), and logged as one JSON line on standard error, as the
 * server logs them, unless TESSERA_LOG_LEVEL is above info.
 */
export function operatorDeps(config: Config, store: Store, io: Io): ManageDeps {
  const log = (event: AuditEvent) => {
    if (LOG_LEVELS_SHOWING_INFO.has(config.logLevel)) io.stderr(`${JSON.stringify({ level: 'info', ...eventLogFields(event), msg: 'audit event' })}\n`);
  };
  return {
    store,
    clock: systemClock,
    config,
    // Whoever runs the command on the server's database owns the server.
    caller: OWNER,
    events: new Events(systemClock, store.events, [log]),
    tellApps: (sessions) => tellApplications(config, store, io, sessions),
  };
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

export function toldLine(clients: number): string {
  return clients === 0 ? '' : `Sent a logout token to ${clients === 1 ? 'the app' : `${clients} apps`} they were signed in to.\n`;
}

export const when = (ms: number | null): string => (ms === null ? 'never' : new Date(ms).toISOString());

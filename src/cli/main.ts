#!/usr/bin/env node
/**
 * The `tessera` command: the second composition root. Run in a checkout as
 * `npm run --silent tessera -- <command>`. Each command group's file parses its arguments,
 * calls the operations of src/flows/manage (which the admin API calls too) and prints.
 */
import '../config/require-node.ts';
import cluster from 'node:cluster';
import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig, type Config } from '../config/index.ts';
import { PACKAGE } from '../config/package.ts';
import { DEFAULT_RESET_TTL_SECONDS } from '../flows/manage/users.ts';
import { ManageError } from '../flows/manage/errors.ts';
import { serve, startRefusal } from '../main.ts';
import { CLIENT_COMMANDS } from './clients.ts';
import { optionLabel, parse, UsageError, type Command, type Io } from './common.ts';
import { groupHelp, groups, helpHint, suggestion, usageLines } from './help.ts';
import { cliUsageParts } from '../flows/manage/fields/field.ts';
import { USER_FIELDS } from '../flows/manage/fields/users.ts';
import { RESOURCE_FIELDS } from '../flows/manage/fields/resources.ts';
import { PROVIDER_FIELDS, PROVIDER_KIND_CHOICES } from '../flows/manage/fields/providers.ts';
import { assumeIssuer, reportIssuer, type AssumedIssuer } from './issuer.ts';
import { deviceLogin, systemDeviceLoginDeps } from './device-login.ts';
import { messages } from '../ui/i18n.ts';
import { negotiateLocale, posixLocale } from '../ui/negotiate.ts';
import { backupCommand } from './backup.ts';
import { eventsCommand } from './events.ts';
import { GRANT_COMMANDS } from './grants.ts';
import { DEVICE_COMMANDS } from './devices.ts';
import { REGISTRATION_TOKEN_COMMANDS } from './registration-tokens.ts';
import { KEY_COMMANDS } from './keys.ts';
import { PROVIDER_COMMANDS } from './providers.ts';
import { CLIENT_FIELDS } from '../flows/manage/fields/clients.ts';
import { RESOURCE_COMMANDS } from './resources.ts';
import { USER_COMMANDS } from './users.ts';
import { TRUST_COMMANDS } from './trust.ts';
import { WEBHOOK_COMMANDS } from './webhooks.ts';
import { OUTBOX_COMMANDS } from './outbox.ts';
import { SAML_COMMANDS } from './saml.ts';
import { SAML_SP_FIELDS } from '../flows/manage/fields/saml-service-providers.ts';
import { SCIM_COMMANDS } from './scim.ts';
import { ORGANIZATION_COMMANDS } from './organizations.ts';
import { ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_FIELDS } from '../flows/manage/fields/organizations.ts';
import { SCIM_TOKEN_FIELDS } from '../flows/manage/fields/scim-tokens.ts';
import { terminalText } from './text.ts';

export { UsageError, type Io };

/** The options of the names in other languages (OIDC Core §5.2), the users' table's localized_names. */
const LOCALIZED_USAGE = ['[--name-in TAG=NAME]...', '[--given-name-in TAG=NAME]...', '[--family-name-in TAG=NAME]...'];

/** `provider add KIND`: a line for each kind with what it takes, then what any kind takes. */
const PROVIDER_ADD_USAGE = [
  ...PROVIDER_KIND_CHOICES.map((kind) =>
    usageLines(
      `provider add ${kind}`,
      cliUsageParts(
        PROVIDER_FIELDS.filter((field) => 'kinds' in field || ('required' in field && field.required)),
        'create',
        kind,
      ),
    ),
  ),
  usageLines(
    'provider add',
    [
      ...cliUsageParts(
        PROVIDER_FIELDS.filter((field) => !('kinds' in field) && !('required' in field)),
        'create',
      ),
      '[--json]',
    ],
    { head: '             any kind:' },
  ),
].join('\n');

export const USAGE = `Usage: tessera <command> [options]

\`tessera help <command>\` (or \`tessera <command> --help\`) shows one command's options;
\`tessera --version\` (or \`-v\`) prints Tessera's version.

Commands:
  serve [--workers N]                     Run the server (settings from the environment; see README);
                                          --workers: processes sharing the port (TESSERA_WORKERS)
${usageLines('client add', [...cliUsageParts(CLIENT_FIELDS, 'create'), '[--public]', '[--json]'])}
                                          Register a client; prints its client_id and client_secret once
                                          (--redirect-uri: one at least, but for a client_credentials
                                          service; --grant: authorization_code by default, device_code,
                                          refresh_token, client_credentials, token-exchange and jwt-bearer
                                          only when asked for (client_credentials: a service's own
                                          tokens, --scope required; token-exchange: tokens for a person
                                          whose token it holds, RFC 8693, for the APIs, or ID-JAGs for the
                                          other servers' issuers, --exchange-audience names; jwt-bearer:
                                          tokens for the ID-JAGs of a trusted issuer);
                                          --client-id: its client_id, when it must be the one it has at
                                          an identity provider whose ID-JAGs it redeems (else random);
                                          --device-network: the only
                                          networks its devices may start from;
                                          --public: no secret, for browser, native and CLI apps;
                                          METHOD: client_secret_basic (the default without keys;
                                          private_key_jwt, with no secret, when --jwks-uri or
                                          --jwks-file is given), client_secret_post, private_key_jwt;
                                          --pkce optional: a confidential OpenID client may use nonce instead;
                                          optional-without-nonce: neither (for a certification run);
                                          --request-object-signing-alg: the one algorithm of its request
                                          objects (none: unsigned; a signing one needs its keys;
                                          without it, any: signed with its keys, or unsigned);
                                          --require-phishing-resistant: only a passkey sign-in may approve;
                                          --first-party: your own app, signed in without a consent page;
                                          --post-logout-redirect-uri: where it may send people after logout;
                                          --backchannel-logout-uri: where logout tokens are posted;
                                          --require-dpop: token requests need a DPoP proof (RFC 9449);
                                          --require-par: authorization requests must be pushed (RFC 9126))
  client list [--json]                    List registered clients
  client show CLIENT_ID [--json]          Show a client's registration
${usageLines('client update CLIENT_ID', [...cliUsageParts(CLIENT_FIELDS, 'update'), '[--json]'])}
                                          Change a client; in effect at once on every instance
                                          (--verified: a self-registered app you have checked; its
                                          consent page no longer says "not verified")
  client rotate-secret CLIENT_ID [--grace SECONDS] [--json]
                                          Print a new secret once; the old one is accepted for the
                                          grace period (default 86400, one day)
  client revoke-tokens CLIENT_ID          End every token of a client now: its own and those people got
                                          through it (every grant revoked); the client stays registered
  client remove CLIENT_ID                 Remove a client and everything issued to it
${usageLines('resource add', [...cliUsageParts(RESOURCE_FIELDS, 'create'), '[--json]'])}
                                          Register an API (RFC 8707); its scope names are unique across
                                          the server; --introspection-secret prints, once, the secret its
                                          resource server introspects tokens with; its access tokens are
                                          signed RS256 unless --signing-alg ES256
  resource list [--json]                  List registered APIs and their scopes
${usageLines('resource update URI', [...cliUsageParts(RESOURCE_FIELDS, 'update'), '[--json]'])}
                                          Change an API from its next token: --scope replaces the list
                                          (a scope a client is registered with cannot be removed)
  resource remove URI                     Remove an API: tokens and grants for it stop working at once
  resource check URL [--json]             Fetch the protected resource metadata (RFC 9728) of the MCP
                                          server or API at URL and say what differs from the API
                                          registered here: its identifier, authorization_servers (this
                                          issuer among them), scopes; exit status 1 when something does
${PROVIDER_ADD_USAGE}
                                          Let people sign in through an OpenID provider, GitHub or an LDAP
                                          directory; prints the redirect URI to register upstream;
                                          --only: the sign-in page goes straight to it;
                                          --allow-linking: a verified e-mail address of an existing user
                                          signs in as that user; --allowed-domain: only these e-mail
                                          domains; --domain: addresses typed in these domains go to it;
                                          --trust-upstream-mfa: the provider's amr "mfa" counts as a
                                          second factor here
  provider redirect-uri NAME [--id ID]    Print the redirect URI \`provider add --name NAME\` will have, to
                                          register upstream before the provider is added
  provider list [--json]                  List identity providers, in the order of their buttons
  provider show ID [--json]               Show a provider's settings (never its secret)
${usageLines('provider update ID', [...cliUsageParts(PROVIDER_FIELDS, 'update'), '[--json]'])}
                                          Change a provider; a secret given replaces the stored one
  provider remove ID                      Remove a provider; the users it created stay
${usageLines('user add', [...cliUsageParts(USER_FIELDS, 'create').slice(0, 1), '--password-stdin', ...cliUsageParts(USER_FIELDS, 'create').slice(1), ...LOCALIZED_USAGE])}
                                          Create a user; the password is read from standard input
  user list [--json]                      List users
  user show USERNAME [--json]             Show a user, their approvals, last sign-in, passkeys and one-time codes
  user disable USERNAME                   Disable a user: sessions end and tokens stop working at once
  user enable USERNAME                    Enable a disabled user again
  user remove USERNAME                    Remove a user and everything issued to them
${usageLines('user update USERNAME', [...cliUsageParts(USER_FIELDS, 'update'), ...LOCALIZED_USAGE])}
                                          Change a user's standard claims (OIDC Core §5.1; "" clears one)
                                          and names in other languages (§5.2; TAG= removes one)
                                          or their role in the operator console (/console)
  user set-password USERNAME --password-stdin
                                          Set a user's password (from standard input); their sessions end
  user reset-link USERNAME [--ttl SECONDS]
                                          Print a single-use link where the user sets a new password
                                          (default: valid for ${DEFAULT_RESET_TTL_SECONDS} seconds)
  user invite --email EMAIL [--role ROLE] [--org ORG] [--client CLIENT_ID] [--ttl SECONDS] [--json]
                                          Invite someone: a single-use link (mailed with TESSERA_SMTP_URL,
                                          printed either way) where they make an account with that
                                          address and console role, then land in the app CLIENT_ID;
                                          with --org, a member of ORG, --role their role there
                                          (owner, admin or member)
  events [--user USERNAME] [--client CLIENT_ID] [--type TYPE] [--since TIME] [--limit N] [--json]
                                          The audit trail, newest first (--since: an ISO time, or
                                          an age such as 30m, 24h, 7d; --limit default 100)
  backup FILE                             Copy the SQLite database to FILE, safe while the server runs
                                          (keep the key file or TESSERA_KEY_ENCRYPTION_KEY with it, apart)
  user reset-second-factor USERNAME       Remove a user's passkeys, one-time codes and recovery codes
  user unlock USERNAME                    Lift a user's lockouts: wrong passwords counted against them
                                          from any address, and wrong one-time codes
  keys list [--json]                      List the published signing keys: which signs, which signs next,
                                          which retired and until when it is published
  keys rotate                             Publish new signing keys; they sign after the lead time
  device-login --client-id ID [--client-secret SECRET] [--scope "openid profile"] [--issuer URL]
                                          Act as a device (RFC 8628): show a code and a QR code, wait
                                          for approval, print the granted scopes, ID token and UserInfo claims
                                          (no secret: a public client; TESSERA_CLIENT_SECRET also works)
  grant list --user NAME [--json]         List the applications and devices a user approved
  grant revoke GRANT_ID                   Revoke a grant: its access and refresh tokens stop working
  registration-token create [--ttl SECONDS] [--max-uses N] [--json]
                                          Print, once, an initial access token that lets its holder
                                          register clients (TESSERA_REGISTRATION=token; RFC 7591);
                                          --ttl default 86400 (a day); --max-uses: registrations it allows
  registration-token list [--json]        The tokens not expired, how often each was used (never the token)
  registration-token remove ID            Withdraw a token
  device list [--limit N] [--json]        Device requests waiting for a person's approval: user code,
                                          client, the device's address, when it expires
  device deny USER_CODE [--reason TEXT]   Deny a waiting device request (a code suspected of phishing):
                                          nobody can approve it, the device gets access_denied
  webhook add --url URL --event TYPE [--event TYPE ...] [--json]
                                          POST these events to URL, signed (Standard Webhooks); prints
                                          its id and signing secret (whsec_...) once. TYPE: user.created,
                                          user.updated, user.disabled, user.enabled, user.deleted,
                                          user.credential_changed, session.ended, grant.revoked,
                                          client.created, client.updated, client.deleted, signin.failed
  webhook list [--json]                   List webhooks (never their secrets)
  webhook remove ID                       Remove a webhook and the deliveries waiting for it
  webhook rotate-secret ID [--grace SECONDS] [--json]
                                          Print a new signing secret once; the old one also signs for
                                          the grace period (default 86400, one day; 0: no longer)
  webhook deliveries ID [--state pending|delivered|dead] [--limit N] [--json]
                                          A webhook's deliveries, newest first: tries, last answer
  webhook replay ID [--event EVENT_ID]    Send its dead letters (or one) again, with the same webhook-id
  ssf deliveries STREAM_ID [--state pending|delivered|dead] [--limit N] [--json]
                                          A Shared Signals stream's SETs, newest first: tries, last answer
  ssf replay STREAM_ID [--event EVENT_ID] Send its dead letters (or one) again, with the same jti
  mail deliveries [--state pending|delivered|dead] [--limit N] [--json]
                                          The mail in the outbox, newest first: kind, tries, last error
                                          (never the address or the message)
  mail replay [--id ID]                   Send mail's dead letters (or one) again, with the same Message-ID
${usageLines('saml sp add', [...cliUsageParts(SAML_SP_FIELDS, 'create'), '[--json]'])}
                                          Register a SAML service provider (docs/saml.md): its entity ID
                                          and AssertionConsumerService URLs, or --metadata-file with its
                                          metadata; --name-id email|persistent|transient (default
                                          persistent, an id of its own); --attribute mail=email
  saml sp list [--json]                   List SAML service providers
  saml sp show ID|ENTITY_ID [--json]      Show a SAML service provider
${usageLines('saml sp update ID|ENTITY_ID', [...cliUsageParts(SAML_SP_FIELDS, 'update'), '[--json]'])}
                                          Change a SAML service provider (never its entity ID)
  saml sp remove ID|ENTITY_ID             Remove a SAML service provider: it is sent no more assertions
${usageLines('scim token add', [...cliUsageParts(SCIM_TOKEN_FIELDS, 'create'), '[--json]'])}
                                          Print, once, a token a provisioning system (Entra ID, Okta)
                                          calls <issuer>/scim/v2 with (docs/scim.md)
  scim token list [--json]                The SCIM tokens, when each was last used (never the token)
  scim token remove ID                    Withdraw a SCIM token (also: scim token revoke ID)
${usageLines('org add', [...cliUsageParts(ORGANIZATION_FIELDS, 'create'), '[--json]'])}
                                          Add an organization (docs/organizations.md): --domain with
                                          --verified sends its people's sign-in to --provider; its
                                          id is the org_id claim of the organization scope
  org list [--json]                       List organizations
  org show ID|NAME [--json]               Show an organization
${usageLines('org update ID|NAME', [...cliUsageParts(ORGANIZATION_FIELDS, 'update'), '[--json]'])}
                                          Change an organization (a changed domain is verified again)
  org remove ID|NAME                      Remove an organization and its memberships
${usageLines('org member add ID|NAME USERNAME', [...cliUsageParts(ORGANIZATION_MEMBER_FIELDS, 'create'), '[--json]'])}
                                          Make someone a member (ROLE: owner, admin or member, the
                                          default), or give a member another role
  org member list ID|NAME [--json]        An organization's members and their roles
  org member remove ID|NAME USERNAME      End a membership
  trust add --issuer URL (--jwks-uri URL | --jwks-file FILE) [--json]
                                          Redeem ID-JAGs (identity assertion grants) from this identity
                                          provider, signed by the keys at --jwks-uri (any host, loopback
                                          too) or in --jwks-file (a JWK Set); clients redeem them with
                                          --grant jwt-bearer (docs/agents.md)
  trust list [--json]                     The trusted issuers and where their keys are
  trust show ISSUER [--json]              One trusted issuer
  trust remove ISSUER                     Stop trusting it: its ID-JAGs are refused, their tokens end
`;

/** Acts as a device against a running server (the issuer setting, or --issuer). Exit code 1 on denial or expiry. */
async function deviceLoginCommand(config: Config, assumed: AssumedIssuer, args: string[], io: Io, drawing: (text: string) => void): Promise<number> {
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
  let issuer = assumed.issuer;
  if (values.issuer !== undefined) {
    try {
      issuer = new URL(values.issuer).href.replace(/\/+$/, '');
    } catch {
      throw new UsageError(`--issuer ${values.issuer}: not an absolute URL`);
    }
  }
  return deviceLogin(
    { issuer, ...(values.issuer === undefined ? { issuerBecause: assumed.because } : {}), clientId, clientSecret, scope: values.scope ?? 'openid profile' },
    systemDeviceLoginDeps(io.tty === true, io.stdout, io.stderr, drawing, messages(negotiateLocale({ chosen: posixLocale(io.env) }, config.site))),
  );
}

const COMMANDS: Readonly<Record<string, Command>> = {
  ...CLIENT_COMMANDS,
  ...RESOURCE_COMMANDS,
  ...PROVIDER_COMMANDS,
  ...USER_COMMANDS,
  ...KEY_COMMANDS,
  ...GRANT_COMMANDS,
  ...DEVICE_COMMANDS,
  ...REGISTRATION_TOKEN_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...OUTBOX_COMMANDS,
  ...SAML_COMMANDS,
  ...SCIM_COMMANDS,
  ...ORGANIZATION_COMMANDS,
  ...TRUST_COMMANDS,
};

/** The commands whose output holds the server's URLs: they say which issuer they assumed, and whether it answers. */
function printsUrls(command: string, args: readonly string[]): boolean {
  if (command === 'provider list') return args.includes('--json');
  return ['provider add', 'provider redirect-uri', 'provider show', 'provider update', 'user reset-link', 'user invite', 'registration-token create'].includes(
    command,
  );
}

/** The group a command line is about, for the help its refusals point to. */
function groupOf(argv: readonly string[]): string | null {
  const first = argv[0] ?? '';
  return groups(USAGE).includes(first) ? first : null;
}

/** Runs one command; returns the exit code. */
export async function run(argv: string[], terminal: Io): Promise<number> {
  // Everything a command writes passes here, escaped for the terminal (cli/text.ts): no
  // command prints a stranger's control characters, whether it thought of them or not.
  const io: Io = { ...terminal, stdout: (text) => terminal.stdout(terminalText(text)), stderr: (text) => terminal.stderr(terminalText(text)) };
  const group = groupOf(argv);
  try {
    const [first = '', second = '', ...rest] = argv;
    if (first === '' || first === '--help' || first === '-h' || (first === 'help' && second === '')) {
      if (first === '') throw new UsageError('no command given');
      io.stdout(USAGE);
      return 0;
    }
    if (first === '--version' || first === '-v') {
      io.stdout(`tessera ${PACKAGE.version}\n`);
      return 0;
    }
    if (first === 'help') {
      const help = groupHelp(USAGE, second);
      if (help === null) throw new UsageError(`no command ${JSON.stringify(second)}${suggestion(second, groups(USAGE))}`);
      io.stdout(help);
      return 0;
    }
    if (group !== null && (argv.includes('--help') || argv.includes('-h'))) {
      io.stdout(groupHelp(USAGE, group)!);
      return 0;
    }
    if (group === null) throw new UsageError(`unknown command ${JSON.stringify(first)}${suggestion(first, groups(USAGE))}`);
    const config = loadConfig(io.env);
    if (first === 'serve') {
      const { values } = parse([second, ...rest].filter(Boolean), { workers: { type: 'string' } });
      const workers = values.workers;
      if (workers !== undefined && !(/^\d{1,2}$/.test(workers) && Number(workers) >= 1 && Number(workers) <= 64)) {
        throw new UsageError(`--workers ${workers}: must be a whole number from 1 to 64`);
      }
      try {
        await serve(workers === undefined ? config : { ...config, workers: Number(workers) });
      } catch (error) {
        // Worded as `npm start` words it (src/main.ts).
        io.stderr(`tessera: ${startRefusal(error, 'start')}\n`);
        return 1;
      }
      return -1;
    }
    // Every command works on the issuer the server serves: links and redirect URIs are printed
    // on it, device-login calls it, logout tokens are issued by it.
    const assumed = assumeIssuer(config, io.env);
    const onIssuer: Config = { ...config, issuer: assumed.issuer };
    // Its QR code and countdown are drawn with the terminal's own escapes: written unescaped.
    if (first === 'device-login') return await deviceLoginCommand(onIssuer, assumed, argv.slice(1), io, terminal.stdout);
    if (first === 'events') {
      await eventsCommand(onIssuer, argv.slice(1), io);
      return 0;
    }
    if (first === 'backup') {
      await backupCommand(onIssuer, argv.slice(1), io);
      return 0;
    }
    const command = COMMANDS[`${first} ${second}`];
    if (!command) {
      const names = Object.keys(COMMANDS).filter((name) => name.startsWith(`${first} `));
      const subcommands = names.map((name) => name.slice(first.length + 1)).join(', ');
      if (second === '' || second.startsWith('-')) throw new UsageError(`${first} needs a command: ${subcommands}`);
      throw new UsageError(`unknown command ${JSON.stringify(`${first} ${second}`)}${suggestion(`${first} ${second}`, names)}`);
    }
    const status = await command(onIssuer, rest, io);
    if (printsUrls(`${first} ${second}`, rest)) await reportIssuer(assumed, io);
    return typeof status === 'number' ? status : 0;
  } catch (error) {
    // Every refusal is one line: what is wrong and where to read more.
    if (error instanceof ManageError) {
      const message = error.render(optionLabel);
      io.stderr(error.kind === 'invalid' ? `tessera: ${message}; ${helpHint(group)}\n` : `tessera: ${message}\n`);
      return error.kind === 'invalid' ? 2 : 1;
    }
    if (error instanceof UsageError) {
      io.stderr(`tessera: ${error.message}; ${helpHint(group)}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      io.stderr(`tessera: ${startRefusal(error, 'settings')}\n`);
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

/** The command as a process runs it: this process's arguments, streams and environment. */
export function cli(): void {
  void run(process.argv.slice(2), {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: readStdin,
    env: process.env,
    tty: process.stdout.isTTY === true,
  }).then((code) => {
    // -1: a server is running and keeps the process alive.
    if (code < 0) return;
    process.exitCode = code;
    // A node:cluster worker whose command ended without serving (a setting refused in the
    // worker alone) is held open by its channel to the primary, which would wait for it
    // forever: let go, so that it exits and the primary reports it.
    if (cluster.isWorker) cluster.worker?.disconnect();
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) cli();

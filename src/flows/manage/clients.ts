/**
 * Registering and changing clients: the one implementation the `tessera client` commands and
 * the admin API call. Input and output use the client metadata names of RFC 7591 §2 (and
 * Tessera's own for what it adds), so the API's JSON is the registration as stored.
 */
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { randomUUID } from 'node:crypto';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import type { EventInput } from '../../core/events.ts';
import { lookalikeOf } from '../../core/lookalike.ts';
import { normalizeCidr } from '../../core/networks.ts';
import { requestRefusal, type UrlRule } from '../../core/outbound.ts';
import {
  CLIENT_AUTH_METHODS,
  GRANT_AUTHORIZATION_CODE,
  GRANT_CLIENT_CREDENTIALS,
  GRANT_DEVICE_CODE,
  GRANT_JWT_BEARER,
  GRANT_REFRESH_TOKEN,
  GRANT_TOKEN_EXCHANGE,
  PKCE_POLICIES,
  REQUEST_OBJECT_ALGORITHMS,
  SECRET_AUTH_METHODS,
  type ClientAuthMethod,
  type GrantType,
  type PkcePolicy,
  type RequestObjectAlgorithm,
} from '../../core/protocol.ts';
import { isLoopbackIssuer, redirectUriProblem } from '../../core/redirect-uri.ts';
import { OPERATOR_GIVEN_SCOPES, SUPPORTED_SCOPES } from '../../core/scopes.ts';
import { DuplicateError, type ClientChanges, type ClientRecord, type SelfRegistration, type Store, type Stores } from '../../store/types.ts';
import { parseJwks } from '../../tokens/client-jwks.ts';
import { transactionWithEvents, type RecordEvent } from '../events.ts';
import { checkMayChangeClient, checkScopesGiven } from './authority.ts';
import type { ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound, problem } from './errors.ts';
import { CLIENT_FIELDS } from './fields/clients.ts';
import { checkBounds } from './fields/field.ts';

/** A registration as given: every field optional, so that an update names only what changes. */
export interface ClientMetadata {
  readonly client_name?: string;
  readonly redirect_uris?: readonly string[];
  /** Space-separated, as in RFC 7591 §2. */
  readonly scope?: string;
  readonly grant_types?: readonly string[];
  readonly token_endpoint_auth_method?: string;
  readonly jwks_uri?: string | null;
  readonly jwks?: unknown;
  readonly web_origins?: readonly string[];
  readonly device_networks?: readonly string[];
  readonly pkce?: string;
  readonly require_phishing_resistant?: boolean;
  readonly first_party?: boolean;
  readonly post_logout_redirect_uris?: readonly string[];
  readonly backchannel_logout_uri?: string | null;
  readonly dpop_bound_access_tokens?: boolean;
  readonly require_pushed_authorization_requests?: boolean;
  /** OIDC Registration §2; null (in an update): any asymmetric algorithm, signed only. */
  readonly request_object_signing_alg?: string | null;
  /** A self-registered app the operator has checked: its consent page no longer says "not verified". */
  readonly verified?: boolean;
  /** RFC 8693: the registered APIs (identifiers) and other authorization servers (issuers, for an ID-JAG) a token exchange by this client may be for. */
  readonly token_exchange_audiences?: readonly string[];
  /** Chosen by the operator at registration only: the client_id it has at the identity provider whose ID-JAGs it redeems. */
  readonly client_id?: string;
}

/** Who changed a registration: the operator, or the app itself through RFC 7592. */
export type ChangedBy = 'operator' | 'client';

/** How a client came to be registered, when not by the operator. */
export interface CreateOptions {
  readonly registeredBy?: SelfRegistration;
  /** The client_id, when not a new random one: a metadata document's URL. */
  readonly id?: string;
}

/** A client and, when the operation made one, its new secret (shown once, never stored). */
export interface ClientWithSecret {
  readonly client: ClientRecord;
  readonly secret: string | null;
}

/** Names a grant type may be given by: the short `device_code` too. */
const GRANT_NAMES: Readonly<Record<string, GrantType>> = {
  authorization_code: GRANT_AUTHORIZATION_CODE,
  device_code: GRANT_DEVICE_CODE,
  [GRANT_DEVICE_CODE]: GRANT_DEVICE_CODE,
  refresh_token: GRANT_REFRESH_TOKEN,
  client_credentials: GRANT_CLIENT_CREDENTIALS,
  'token-exchange': GRANT_TOKEN_EXCHANGE,
  [GRANT_TOKEN_EXCHANGE]: GRANT_TOKEN_EXCHANGE,
  'jwt-bearer': GRANT_JWT_BEARER,
  [GRANT_JWT_BEARER]: GRANT_JWT_BEARER,
};

/** The longest grace a rotated-out secret can be given: long enough for any redeployment. */
export const MAX_GRACE_SECONDS = 30 * 86400;
export const DEFAULT_GRACE_SECONDS = 86400;
/** Bounds on a client's name: it is shown on consent pages. */
const MAX_CLIENT_NAME = 200;

/** A client as `client show`, `client list --json` and the admin API give it (RFC 7591 §2 names). */
export function clientJson(client: ClientRecord, now: number): Record<string, unknown> {
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
    ...(client.requestObjectSigningAlg ? { request_object_signing_alg: client.requestObjectSigningAlg } : {}),
    ...((client.exchangeAudiences ?? []).length > 0 ? { token_exchange_audiences: client.exchangeAudiences } : {}),
    // Who registered it, when the app did itself, and whether the operator has checked it.
    ...(client.registeredBy === undefined ? {} : { registered_by: client.registeredBy, verified: client.verified === true }),
    ...(graceOpen ? { previous_secret_expires_at: new Date(client.previousSecretExpiresAt!).toISOString() } : {}),
    created_at: new Date(client.createdAt).toISOString(),
  };
}

/**
 * The rule for the URLs the server itself will request for `client` (no private
 * networks; no loopback for an app that registered itself, whoever edits it, as
 * the requests themselves are checked in core/outbound.ts; and none for a caller the
 * server's owner delegated to, an admin client or a console operator, as for a webhook:
 * they would otherwise have the server post logout tokens to, or fetch keys from, any port
 * of its own machine).
 */
function urlRule(deps: Pick<ManageDeps, 'config' | 'caller'>, client: Pick<ClientRecord, 'registeredBy'>): UrlRule {
  return {
    selfRegistered: client.registeredBy !== undefined,
    allowPrivateNetworks: deps.config.allowPrivateNetworkUrls,
    delegated: deps.caller.owner !== true,
  };
}

/** What registering or updating a client checks, whichever way it was set. */
function checkRegistration(client: ClientChanges, urls: UrlRule, issuer: string): void {
  const publicClient = client.authMethod === 'none';
  const issuerOnLoopback = isLoopbackIssuer(issuer);
  for (const uri of client.redirectUris) {
    const problem = redirectUriProblem(uri, { publicClient, issuerOnLoopback });
    if (problem) throw invalid`${field('redirect_uris')} ${uri}: ${problem}`;
  }
  if (client.grantTypes.length === 1 && client.grantTypes[0] === GRANT_REFRESH_TOKEN) {
    throw invalid`${field('grant_types')} refresh_token needs authorization_code or device_code too: refresh tokens come from a sign-in`;
  }
  // RFC 6749 §4.4: "The client credentials grant type MUST only be used by confidential clients."
  if (client.grantTypes.includes(GRANT_CLIENT_CREDENTIALS) && publicClient) {
    throw invalid`${field('grant_types')} client_credentials is for confidential clients: a public client has no credentials to prove`;
  }
  // RFC 8693 §2.1 leaves it to the server "whether or not to allow unauthenticated or
  // unidentified clients": here, a token that acts for a person goes only to a client that
  // proves who it is, and each may ask only for the APIs the operator listed for it.
  const exchangeAudiences = client.exchangeAudiences ?? [];
  if (client.grantTypes.includes(GRANT_TOKEN_EXCHANGE)) {
    if (publicClient)
      throw invalid`${field('grant_types')} token-exchange is for confidential clients: a public client cannot prove it is the one acting for a person`;
    if (exchangeAudiences.length === 0)
      throw invalid`${field('grant_types')} token-exchange needs ${field('token_exchange_audiences')}: the APIs it may ask for a token for`;
  } else if (exchangeAudiences.length > 0) {
    throw invalid`${field('token_exchange_audiences')} is for the token exchange grant: add ${field('grant_types')} token-exchange`;
  }
  // draft-ietf-oauth-identity-assertion-authz-grant: the ID-JAG names the client it was issued
  // for (`client_id`), which must prove it is that client when it redeems it.
  if (client.grantTypes.includes(GRANT_JWT_BEARER) && publicClient) {
    throw invalid`${field('grant_types')} jwt-bearer is for confidential clients: the ID-JAG it redeems names a client, which must prove it is that one`;
  }
  // An admin token must stand for an operator's own program, never for a person who approved an app.
  // So must a Shared Signals receiver's, which hears of every person's account.
  const admin = client.scopes.filter((scope) => OPERATOR_GIVEN_SCOPES.includes(scope));
  if (admin.length > 0 && client.grantTypes.some((grant) => grant !== GRANT_CLIENT_CREDENTIALS)) {
    throw invalid`${field('scope')} ${admin.join(' ')}: admin scopes are for clients of the client_credentials grant alone, and so is ssf:manage`;
  }
  if (client.grantTypes.includes(GRANT_AUTHORIZATION_CODE) && client.redirectUris.length === 0) {
    throw invalid`${field('redirect_uris')} is required for the authorization_code grant (or use ${field('grant_types')} device_code)`;
  }
  if (client.webOrigins.length > 0 && !publicClient) {
    throw invalid`${field('web_origins')} is for browser apps, which cannot keep a secret: register them with ${field('public')}`;
  }
  if (client.deviceNetworks.length > 0 && !client.grantTypes.includes(GRANT_DEVICE_CODE)) {
    throw invalid`${field('device_networks')} limits the device grant: add ${field('grant_types')} device_code`;
  }
  if (client.requirePar && !client.grantTypes.includes(GRANT_AUTHORIZATION_CODE)) {
    throw invalid`${field('require_pushed_authorization_requests')} is for the authorization_code grant: pushed requests are authorization requests`;
  }
  // RFC 9700 §2.1.1: only a confidential OpenID client may rely on nonce instead of PKCE.
  if (client.pkce !== 'required' && publicClient)
    throw invalid`${field('pkce')} ${client.pkce} is for confidential clients only: a public client always uses PKCE`;
  // A signed request object is verified with the client's keys (RFC 9101 §6.2).
  const signedRequests = client.requestObjectSigningAlg !== undefined && client.requestObjectSigningAlg !== 'none';
  if (signedRequests && client.jwks === null && client.jwksUri === null) {
    throw invalid`${field('request_object_signing_alg')} ${client.requestObjectSigningAlg} needs the client's public keys: ${field('jwks_uri')} URL or ${field('jwks')}`;
  }
  // RP-Initiated Logout 1.0 §3: registered as redirect URIs are, and matched exactly.
  for (const uri of client.postLogoutRedirectUris) {
    const problem = redirectUriProblem(uri, { publicClient, issuerOnLoopback });
    if (problem) throw invalid`${field('post_logout_redirect_uris')} ${uri}: ${problem}`;
  }
  // Back-Channel Logout 1.0 §2.2: an absolute URI without a fragment; here also https (http
  // only on loopback), since the logout token travels to it.
  if (client.backchannelLogoutUri !== null) {
    const problem = redirectUriProblem(client.backchannelLogoutUri, { publicClient: false });
    if (problem) throw invalid`${field('backchannel_logout_uri')} ${client.backchannelLogoutUri}: ${problem}`;
    const refusal = requestRefusal(new URL(client.backchannelLogoutUri).hostname, urls);
    if (refusal !== null) throw invalid`${field('backchannel_logout_uri')} ${client.backchannelLogoutUri}: ${refusal}`;
  }
}

/** The scheme of a private-use redirect URI (RFC 8252 §7.1: `com.example.app:/callback`), lower-cased; null for http(s) and what is not a URI. */
function privateUseScheme(uri: string): string | null {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase();
  return scheme === undefined || scheme === 'http' || scheme === 'https' ? null : scheme;
}

/**
 * What an app registering itself, or changing its own registration, may not take:
 * the name of an operator's app or of the site, or one that looks like it (core/lookalike.ts),
 * since the consent page would show it as that app; nor the private-use redirect scheme of an
 * operator's app, since the person's device would open that app's redirects in it.
 */
async function checkNotPassingFor(
  deps: Pick<ManageDeps, 'store' | 'config'>,
  client: Pick<ClientChanges, 'name' | 'redirectUris' | 'postLogoutRedirectUris'>,
): Promise<void> {
  const operators = await deps.store.clients.listOperatorClients();
  const taken = await lookalikeOf(client.name, [deps.config.site.name, ...operators.map((operator) => operator.name)]);
  if (taken !== null)
    throw invalid`${field('client_name')} ${client.name}: looks like the name of ${taken === deps.config.site.name ? 'this site' : 'an app registered by the operator'} (${taken}); an app that registers itself needs a name of its own`;
  const schemes = new Set(
    operators
      .flatMap((operator) => [...operator.redirectUris, ...operator.postLogoutRedirectUris])
      .map(privateUseScheme)
      .filter((scheme) => scheme !== null),
  );
  for (const name of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
    for (const uri of name === 'redirect_uris' ? client.redirectUris : client.postLogoutRedirectUris) {
      const scheme = privateUseScheme(uri);
      if (scheme !== null && schemes.has(scheme))
        throw invalid`${field(name)} ${uri}: the scheme ${scheme} belongs to an app registered by the operator; an app that registers itself uses a scheme of its own (its reverse domain name, RFC 8252 §7.1)`;
    }
  }
}

/** The scopes of a space-separated `scope`, each once. */
export function parseScopes(raw: string): string[] {
  return [...new Set(raw.split(' ').filter(Boolean))];
}

/** A client's scope is an OpenID one or one a registered API defines. */
async function checkScopes(store: Store, scopes: readonly string[]): Promise<void> {
  const known = [
    ...SUPPORTED_SCOPES,
    ...OPERATOR_GIVEN_SCOPES,
    ...(await store.resources.list()).flatMap((resource) => resource.scopes.map((scope) => scope.name)),
  ];
  const unknown = scopes.filter((scope) => !known.includes(scope));
  if (unknown.length > 0) {
    throw invalid`${field('scope')}: unknown scope ${unknown.join(', ')} (known: ${known.join(' ')}; an API's scopes come from \`tessera resource add\`)`;
  }
}

/**
 * What a token exchange may be for: registered APIs, by identifier (RFC 8693 §2.1 `resource`
 * and `audience` name them), and other authorization servers, by issuer, for which the
 * exchange issues an ID-JAG (draft-ietf-oauth-identity-assertion-authz-grant §4.3). Whatever
 * is not a registered API must be an issuer identifier (RFC 8414 §2: https, no query or
 * fragment; http only on loopback) other than this server's. The admin API is never one: an
 * admin token stands for an operator's program, not for a person.
 */
async function parseExchangeAudiences(store: Store, issuer: string, audiences: readonly string[]): Promise<string[]> {
  const unique = [...new Set(audiences)];
  for (const audience of unique) {
    if ((await store.resources.get(audience)) !== null) continue;
    const problem = issuerProblem(audience);
    if (problem !== null)
      throw invalid`${field('token_exchange_audiences')} ${audience}: not a registered API (\`tessera resource list\` shows them), nor another authorization server's issuer (${problem})`;
    if (audience === issuer)
      throw invalid`${field('token_exchange_audiences')} ${audience}: this server's own issuer; an ID-JAG is for another authorization server`;
  }
  return unique;
}

/** Why `value` is not an issuer identifier (RFC 8414 §2), or null when it is one. */
export function issuerProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not an absolute URL';
  }
  if (url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#')) return 'an issuer has no query or fragment';
  if (url.username !== '' || url.password !== '') return 'an issuer has no user name or password';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopbackIssuer(value)) return null;
  return 'an issuer is an https URL (http only on loopback)';
}

/** A client_id the operator chose: printable, no spaces, and never an https URL (a metadata document's). */
function parseClientId(id: string): string {
  if (!/^[\x21-\x7e]{1,200}$/.test(id)) throw invalid`${field('client_id')}: 1 to 200 printable characters, no spaces`;
  if (/^https?:/i.test(id)) throw invalid`${field('client_id')} ${id}: a URL as client_id is a Client ID Metadata Document's; choose another`;
  return id;
}

function parseGrants(grants: readonly string[]): GrantType[] {
  return [
    ...new Set(
      grants.map((grant) => {
        const type = GRANT_NAMES[grant];
        if (!type)
          throw invalid`${field('grant_types')} ${grant}: must be one of authorization_code, device_code, refresh_token, client_credentials, token-exchange, jwt-bearer`;
        return type;
      }),
    ),
  ];
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

function parseWebOrigin(origin: string): string {
  const problem = webOriginProblem(origin);
  if (problem) throw invalid`${field('web_origins')} ${origin}: ${problem}`;
  return new URL(origin).origin;
}

function parseDeviceNetwork(network: string): string {
  const parsed = normalizeCidr(network);
  if (parsed === null) throw invalid`${field('device_networks')} ${network}: must be an IPv4 or IPv6 address or CIDR range, like 192.0.2.0/24`;
  return parsed;
}

function parsePkce(value: string): PkcePolicy {
  const policy = PKCE_POLICIES.find((known) => known === value);
  if (policy === undefined) throw invalid`${field('pkce')} ${value}: must be ${PKCE_POLICIES.join(', ')}`;
  return policy;
}

/** `request_object_signing_alg`: absent (undefined) or null for any asymmetric algorithm. */
function parseRequestObjectAlg(value: string | null | undefined): { readonly requestObjectSigningAlg?: RequestObjectAlgorithm } {
  if (value === undefined || value === null) return {};
  const alg = REQUEST_OBJECT_ALGORITHMS.find((known) => known === value);
  if (alg === undefined) throw invalid`${field('request_object_signing_alg')} ${value}: must be one of ${REQUEST_OBJECT_ALGORITHMS.join(', ')}`;
  return { requestObjectSigningAlg: alg };
}

/**
 * Whether a client with `authMethod` may register keys: for private_key_jwt, or, with a
 * secret, to sign its request objects by (a signing `request_object_signing_alg`).
 */
function keysAllowed(authMethod: ClientAuthMethod, requestAlg: { readonly requestObjectSigningAlg?: RequestObjectAlgorithm }): boolean {
  if (authMethod === 'private_key_jwt') return true;
  return SECRET_AUTH_METHODS.includes(authMethod) && requestAlg.requestObjectSigningAlg !== undefined && requestAlg.requestObjectSigningAlg !== 'none';
}

function parseAuthMethod(value: string): ClientAuthMethod {
  if ((CLIENT_AUTH_METHODS as readonly string[]).includes(value)) return value as ClientAuthMethod;
  throw invalid`${field('token_endpoint_auth_method')} ${value}: must be client_secret_basic, client_secret_post or private_key_jwt`;
}

function parseName(raw: string): string {
  const name = raw.trim();
  if (!name) throw invalid`${field('client_name')} must not be empty`;
  if (name.length > MAX_CLIENT_NAME) throw invalid`${field('client_name')} must be at most ${MAX_CLIENT_NAME} characters`;
  // It is shown on consent pages and printed by the command: no line breaks, no invisible controls to disguise it.
  if (hasUnsafeCharacters(name)) throw invalid`${field('client_name')} ${UNSAFE_CHARACTERS_RULE}`;
  return name;
}

interface ClientKeys {
  readonly jwksUri: string | null;
  readonly jwks: Record<string, unknown> | null;
}

/**
 * The keys of a private_key_jwt client, when given: a jwks_uri (https, or http on a loopback
 * address) or a JWK Set of public keys.
 */
function clientKeys(metadata: ClientMetadata, urls: UrlRule): ClientKeys | null {
  const uri = metadata.jwks_uri ?? undefined;
  const jwks = metadata.jwks ?? undefined;
  if (uri !== undefined && jwks !== undefined) throw invalid`${field('jwks_uri')} and ${field('jwks')}: give one`;
  if (uri !== undefined) {
    let url: URL;
    try {
      url = new URL(uri);
    } catch {
      throw invalid`${field('jwks_uri')} ${uri}: not an absolute URL`;
    }
    const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback))
      throw invalid`${field('jwks_uri')} ${uri}: must use https (http only on a loopback address)`;
    const refusal = requestRefusal(url.hostname, urls);
    if (refusal !== null) throw invalid`${field('jwks_uri')} ${uri}: ${refusal}`;
    return { jwksUri: url.href, jwks: null };
  }
  if (jwks !== undefined) {
    try {
      parseJwks(jwks);
    } catch (error) {
      throw invalid`${field('jwks')}: ${error instanceof Error ? error.message : String(error)}`;
    }
    return { jwksUri: null, jwks: jwks as Record<string, unknown> };
  }
  return null;
}

/** Registers a client; a confidential one with a secret method gets a secret, returned once. */
export async function createClient(deps: ManageDeps, metadata: ClientMetadata, options: CreateOptions = {}): Promise<ClientWithSecret> {
  checkBounds(CLIENT_FIELDS, metadata);
  if (metadata.client_name === undefined || !metadata.client_name.trim()) throw invalid`${field('client_name')} is required`;
  const name = parseName(metadata.client_name);
  const urls = urlRule(deps, options);
  const keys = clientKeys(metadata, urls);
  const authMethod = parseAuthMethod(metadata.token_endpoint_auth_method ?? (keys ? 'private_key_jwt' : 'client_secret_basic'));
  const requestAlg = parseRequestObjectAlg(metadata.request_object_signing_alg);
  if (authMethod === 'private_key_jwt' && keys === null)
    throw invalid`${field('token_endpoint_auth_method')} private_key_jwt needs ${field('jwks_uri')} URL or ${field('jwks')}`;
  if (keys !== null && !keysAllowed(authMethod, requestAlg))
    throw invalid`${field('jwks_uri')} and ${field('jwks')} are for ${field('token_endpoint_auth_method')} private_key_jwt, or for signed request objects (${field('request_object_signing_alg')})`;
  // draft-ietf-oauth-cross-device-security: the device grant, the one a remote phishing
  // attack abuses, only for a client registered for it.
  const grantTypes = parseGrants(metadata.grant_types ?? ['authorization_code']);
  // A client acting for itself signs nobody in: its scopes are an API's, and must be named.
  const machineOnly = grantTypes.every((grant) => grant === GRANT_CLIENT_CREDENTIALS);
  const exchangeAudiences = await parseExchangeAudiences(deps.store, deps.config.issuer, metadata.token_exchange_audiences ?? []);
  if (machineOnly && metadata.scope === undefined) throw invalid`${field('scope')} is required for the client_credentials grant: the API scopes it may ask for`;
  const scopes = parseScopes(metadata.scope ?? 'openid profile email');
  const clientId = options.id ?? (metadata.client_id === undefined ? randomUUID() : parseClientId(metadata.client_id));
  // A public client (RFC 6749 §2.1) has no secret: it proves nothing but its PKCE verifier; a
  // private_key_jwt client proves itself with its keys.
  const secret = SECRET_AUTH_METHODS.includes(authMethod) ? randomToken(32) : null;
  const client: ClientRecord = {
    id: clientId,
    name,
    secretHash: secret === null ? null : hashSecret(secret),
    redirectUris: [...new Set(metadata.redirect_uris ?? [])],
    scopes,
    grantTypes,
    webOrigins: [...new Set((metadata.web_origins ?? []).map(parseWebOrigin))],
    deviceNetworks: [...new Set((metadata.device_networks ?? []).map(parseDeviceNetwork))],
    createdAt: deps.clock.now(),
    authMethod,
    previousSecretHash: null,
    previousSecretExpiresAt: null,
    jwksUri: keys?.jwksUri ?? null,
    jwks: keys?.jwks ?? null,
    pkce: parsePkce(metadata.pkce ?? 'required'),
    ...(metadata.require_phishing_resistant ? { requirePhishingResistant: true } : {}),
    firstParty: metadata.first_party === true,
    postLogoutRedirectUris: [...new Set(metadata.post_logout_redirect_uris ?? [])],
    backchannelLogoutUri: metadata.backchannel_logout_uri ?? null,
    requireDpop: metadata.dpop_bound_access_tokens === true,
    requirePar: metadata.require_pushed_authorization_requests === true,
    ...requestAlg,
    ...(exchangeAudiences.length > 0 ? { exchangeAudiences } : {}),
    ...(options.registeredBy === undefined ? {} : { registeredBy: options.registeredBy }),
    ...(metadata.verified ? { verified: true } : {}),
  };
  checkRegistration(client, urls, deps.config.issuer);
  await checkScopes(deps.store, scopes);
  checkScopesGiven(deps.caller, null, null, scopes);
  if (options.registeredBy !== undefined) await checkNotPassingFor(deps, client);
  try {
    await deps.store.clients.create(client);
  } catch (error) {
    if (error instanceof DuplicateError && options.id === undefined && metadata.client_id !== undefined)
      throw conflict`a client with id ${clientId} exists already`;
    throw error;
  }
  await deps.events.emit({
    type: 'client.created',
    clientId,
    detail: { name, auth_method: authMethod, by: options.registeredBy === undefined ? 'operator' : 'registration' },
  });
  return { client, secret };
}

export async function getClient(deps: Pick<ManageDeps, 'store'>, id: string): Promise<ClientRecord> {
  const client = await deps.store.clients.get(id);
  if (!client) throw notFound`no client with id ${id}`;
  return client;
}

/** A client's registration version as an entity tag (RFC 9110 §8.8.3): strong, quoted. */
export function clientEtag(client: ClientRecord): string {
  return `"${client.version ?? 1}"`;
}

export interface ClientQuery {
  /** Clients whose name contains this, case-insensitively. */
  readonly name?: string;
  readonly grantType?: string;
  readonly offset?: number;
  readonly limit?: number;
}

/** The registered clients, oldest first; with a query, those it matches, one page of them. */
export async function listClients(deps: Pick<ManageDeps, 'store'>, query: ClientQuery = {}): Promise<ClientRecord[]> {
  const all = await deps.store.clients.list();
  const name = query.name?.toLowerCase();
  const grant = query.grantType === undefined ? undefined : (GRANT_NAMES[query.grantType] ?? query.grantType);
  const matching = all.filter(
    (client) =>
      (name === undefined || client.name.toLowerCase().includes(name)) && (grant === undefined || (client.grantTypes as readonly string[]).includes(grant)),
  );
  const offset = query.offset ?? 0;
  return query.limit === undefined ? matching.slice(offset) : matching.slice(offset, offset + query.limit);
}

/**
 * Changes a registration: the fields `changes` names, the rest as they are. Every instance
 * sees the change at its next request: each reads clients from the database, and
 * PostgreSQL's instances drop a cached client when the trigger announces its change. A
 * client that had no secret and now authenticates with one gets a new one, returned once.
 * The change and its `client.updated` event commit together.
 */
export async function updateClient(
  deps: ManageDeps,
  id: string,
  changes: ClientMetadata,
  expectedVersion?: number,
  by: ChangedBy = 'operator',
): Promise<ClientWithSecret> {
  const update = await checkClientUpdate(deps, id, changes, expectedVersion, by);
  return transactionWithEvents(deps, (tx, record) => updateClientIn(tx, record, update));
}

/** A change of a registration that `checkClientUpdate` has checked and `updateClientIn` writes. */
export interface CheckedClientUpdate {
  readonly id: string;
  /** The registration as it will be. */
  readonly next: ClientChanges;
  /** The version the change was checked against: the write is refused unless it is still current. */
  readonly version: number;
  /** A new secret, when the change gives the client one. */
  readonly secret: string | null;
  readonly event: EventInput;
}

/**
 * `updateClient`'s checks, outside any transaction (they read the store, and the name check
 * runs on the worker pool): what `updateClientIn` writes, for a caller that writes it with
 * changes of its own in one transaction (an RFC 7592 update and its token rotation).
 */
export async function checkClientUpdate(
  deps: ManageDeps,
  id: string,
  changes: ClientMetadata,
  expectedVersion?: number,
  by: ChangedBy = 'operator',
): Promise<CheckedClientUpdate> {
  checkBounds(CLIENT_FIELDS, changes);
  const client = await getClient(deps, id);
  checkMayChangeClient(deps.caller, client);
  // RFC 9110 §13.1.1: a change made against a version that is no longer current is refused
  // (the store checks again in the update's own statement: nothing slips in between).
  if (expectedVersion !== undefined && (client.version ?? 1) !== expectedVersion) throw stale(client);
  if (changes.verified !== undefined && client.registeredBy === undefined) {
    throw invalid`${field('verified')}: only an app that registered itself is marked verified or not; the operator's own clients are`;
  }
  const urls = urlRule(deps, client);
  const keys = clientKeys(changes, urls);
  const requestAlg =
    changes.request_object_signing_alg !== undefined
      ? parseRequestObjectAlg(changes.request_object_signing_alg)
      : client.requestObjectSigningAlg === undefined
        ? {}
        : { requestObjectSigningAlg: client.requestObjectSigningAlg };
  let authMethod = client.authMethod;
  if (changes.token_endpoint_auth_method !== undefined) {
    if (client.authMethod === 'none' && changes.token_endpoint_auth_method !== 'none') {
      throw invalid`${field('token_endpoint_auth_method')}: a public client cannot become confidential; register a new client`;
    }
    authMethod = parseAuthMethod(changes.token_endpoint_auth_method);
    if (authMethod === 'none' && client.authMethod !== 'none') {
      throw invalid`${field('token_endpoint_auth_method')} none: a confidential client cannot become public; register a new client`;
    }
  } else if (keys !== null && client.authMethod !== 'none' && !keysAllowed(client.authMethod, requestAlg)) {
    // Keys given alone: the client now signs its assertions with them.
    authMethod = 'private_key_jwt';
  }
  const keysKept = keysAllowed(authMethod, requestAlg);
  if (keys !== null && !keysKept)
    throw invalid`${field('jwks_uri')} and ${field('jwks')} are for ${field('token_endpoint_auth_method')} private_key_jwt, or for signed request objects (${field('request_object_signing_alg')})`;
  if (authMethod === 'private_key_jwt' && keys === null && client.jwks === null && client.jwksUri === null) {
    throw invalid`${field('token_endpoint_auth_method')} private_key_jwt needs ${field('jwks_uri')} URL or ${field('jwks')}`;
  }
  const withSecret = SECRET_AUTH_METHODS.includes(authMethod);
  const secret = withSecret && client.secretHash === null ? randomToken(32) : null;
  const exchangeAudiences =
    changes.token_exchange_audiences !== undefined
      ? await parseExchangeAudiences(deps.store, deps.config.issuer, changes.token_exchange_audiences)
      : (client.exchangeAudiences ?? []);
  const asked: ClientChanges = {
    name: changes.client_name !== undefined ? parseName(changes.client_name) : client.name,
    redirectUris: changes.redirect_uris !== undefined ? [...new Set(changes.redirect_uris)] : client.redirectUris,
    scopes: changes.scope !== undefined ? parseScopes(changes.scope) : client.scopes,
    grantTypes: changes.grant_types !== undefined ? parseGrants(changes.grant_types) : client.grantTypes,
    webOrigins: changes.web_origins !== undefined ? [...new Set(changes.web_origins.map(parseWebOrigin))] : client.webOrigins,
    deviceNetworks: changes.device_networks !== undefined ? [...new Set(changes.device_networks.map(parseDeviceNetwork))] : client.deviceNetworks,
    authMethod,
    secretHash: withSecret ? (secret !== null ? hashSecret(secret) : client.secretHash) : null,
    previousSecretHash: withSecret && secret === null ? client.previousSecretHash : null,
    previousSecretExpiresAt: withSecret && secret === null ? client.previousSecretExpiresAt : null,
    jwksUri: keysKept ? (keys ? keys.jwksUri : client.jwksUri) : null,
    jwks: keysKept ? (keys ? keys.jwks : client.jwks) : null,
    pkce: changes.pkce !== undefined ? parsePkce(changes.pkce) : client.pkce,
    ...((changes.require_phishing_resistant ?? client.requirePhishingResistant === true) ? { requirePhishingResistant: true } : {}),
    firstParty: changes.first_party ?? client.firstParty,
    postLogoutRedirectUris: changes.post_logout_redirect_uris !== undefined ? [...new Set(changes.post_logout_redirect_uris)] : client.postLogoutRedirectUris,
    backchannelLogoutUri: changes.backchannel_logout_uri !== undefined ? changes.backchannel_logout_uri : client.backchannelLogoutUri,
    requireDpop: changes.dpop_bound_access_tokens ?? client.requireDpop,
    requirePar: changes.require_pushed_authorization_requests ?? client.requirePar,
    ...requestAlg,
    ...(exchangeAudiences.length > 0 ? { exchangeAudiences } : {}),
    ...((changes.verified ?? client.verified === true) ? { verified: true } : {}),
  };
  // The operator verified the app as it was; when the app itself changes what
  // people see of it or where it sends them, the mark goes and the warning comes back.
  const unverified = by === 'client' && asked.verified === true && changesWhatPeopleSee(client, asked);
  const next: ClientChanges = unverified ? { ...asked, verified: false } : asked;
  checkRegistration(next, urls, deps.config.issuer);
  if (changes.scope !== undefined) {
    await checkScopes(deps.store, next.scopes);
    checkScopesGiven(deps.caller, id, client.scopes, next.scopes);
  }
  if (by === 'client') await checkNotPassingFor(deps, next);
  return {
    id,
    next,
    // The version read is the one checked: the client cannot have gained scopes the caller lacks in between.
    version: expectedVersion ?? client.version ?? 1,
    secret,
    event: { type: 'client.updated', clientId: id, detail: { fields: Object.keys(changes).join(' '), by, ...(unverified ? { verified: false } : {}) } },
  };
}

/**
 * Writes a checked update inside a transaction the caller holds. A registration changed since
 * the check is refused as stale, and throwing rolls back what the caller wrote with it.
 */
export async function updateClientIn(tx: Stores, record: RecordEvent, update: CheckedClientUpdate): Promise<ClientWithSecret> {
  const updated = await tx.clients.update(update.id, update.next, update.version);
  if (!updated) {
    const now = await tx.clients.get(update.id);
    throw now === null ? notFound`no client with id ${update.id}` : stale(now);
  }
  await record(update.event);
  return { client: updated, secret: update.secret };
}

/**
 * Whether `next` changes what the operator checked when verifying a self-registered app: the
 * name people are shown, and the URIs it sends people to or the server calls (redirect and
 * post-logout redirect URIs, browser origins, back-channel logout URI, JWKS URL). Order
 * does not count. Tessera keeps no logo.
 */
function changesWhatPeopleSee(client: ClientRecord, next: ClientChanges): boolean {
  const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && new Set(a).size === new Set([...a, ...b]).size;
  return (
    client.name !== next.name ||
    !sameSet(client.redirectUris, next.redirectUris) ||
    !sameSet(client.postLogoutRedirectUris, next.postLogoutRedirectUris) ||
    !sameSet(client.webOrigins, next.webOrigins) ||
    client.backchannelLogoutUri !== next.backchannelLogoutUri ||
    client.jwksUri !== next.jwksUri
  );
}

/**
 * Gives a client a new secret. The old one keeps working for `graceSeconds`, so that the
 * application can be redeployed with the new one without a moment in which neither works.
 */
export async function rotateClientSecret(
  deps: ManageDeps,
  id: string,
  graceSeconds: number = DEFAULT_GRACE_SECONDS,
): Promise<ClientWithSecret & { readonly secret: string }> {
  if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
    throw invalid`${field('grace_seconds')}: a number of seconds from 0 to ${MAX_GRACE_SECONDS}`;
  }
  const client = await getClient(deps, id);
  checkMayChangeClient(deps.caller, client);
  if (!SECRET_AUTH_METHODS.includes(client.authMethod)) {
    throw conflict`client ${id} authenticates with ${client.authMethod === 'none' ? 'no secret (a public client)' : client.authMethod}: there is no secret to rotate`;
  }
  const secret = randomToken(32);
  const previousExpiresAt = deps.clock.now() + graceSeconds * 1000;
  const rotated = await deps.store.clients.rotateSecret(id, hashSecret(secret), previousExpiresAt);
  if (!rotated) throw notFound`no client with id ${id}`;
  await deps.events.emit({
    type: 'client.secret_rotated',
    clientId: id,
    detail: { previous_secret_expires_at: new Date(previousExpiresAt).toISOString(), by: 'operator' },
  });
  return { client: rotated, secret };
}

function stale(client: ClientRecord) {
  return problem(
    'stale',
  )`client ${client.id} has changed since it was read: it is at version ${clientEtag(client)}; read it again and apply the change to that`;
}

/**
 * Ends every token of a client at once: its own (client_credentials, by time:
 * `tokensRevokedAt`) and those people got through it (each grant revoked, so its access and
 * refresh tokens stop working), in one transaction with one `grant.revoked` event per grant.
 * The registration stays: people can sign in to the app again. Returns how many grants ended.
 */
export async function revokeClientTokens(deps: ManageDeps, id: string): Promise<{ readonly grantsRevoked: number }> {
  checkMayChangeClient(deps.caller, await getClient(deps, id));
  const now = deps.clock.now();
  const grants = await transactionWithEvents(deps, async (tx, record) => {
    if (!(await tx.clients.revokeTokens(id, now))) throw notFound`no client with id ${id}`;
    const revoked = await tx.grants.revokeForClient(id, now);
    for (const grant of revoked) await record({ type: 'grant.revoked', userId: grant.userId, clientId: id, grantId: grant.id, detail: { by: 'operator' } });
    await record({ type: 'client.tokens_revoked', clientId: id, detail: { grants_revoked: revoked.length, by: 'operator' } });
    return revoked;
  });
  return { grantsRevoked: grants.length };
}

/** Removes a client and everything issued to it. */
export async function removeClient(deps: ManageDeps, id: string, by: ChangedBy = 'operator'): Promise<void> {
  checkMayChangeClient(deps.caller, await getClient(deps, id));
  if (!(await deps.store.clients.remove(id))) throw notFound`no client with id ${id}`;
  await deps.events.emit({ type: 'client.removed', clientId: id, detail: { by } });
}

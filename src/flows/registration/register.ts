/**
 * Dynamic client registration (RFC 7591) and its management (RFC 7592). A registration is a
 * client made by the same operation as `tessera client add` (src/flows/manage/clients.ts),
 * so every rule of a registration is checked once, whoever registers; this module adds only
 * what registration decides: who may register (the policy), which fields a registering app
 * may set, the software statement, and the registration access token.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { digestsEqual, hashSecret, randomToken } from '../../core/crypto.ts';
import { REGISTRATION_PATH } from '../../core/endpoints.ts';
import { OAuthError } from '../../core/errors.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN } from '../../core/protocol.ts';
import { isNativeAppRedirect } from '../../core/redirect-uri.ts';
import { OPERATOR_GIVEN_SCOPES } from '../../core/scopes.ts';
import type { ClientRecord } from '../../store/types.ts';
import { Attempt, isRefusal } from '../attempts.ts';
import { transactionWithEvents } from '../events.ts';
import { countedAddress, networkOf } from '../../core/networks.ts';
import { checkClientUpdate, clientJson, createClient, removeClient, updateClientIn, type ClientMetadata } from '../manage/clients.ts';
import type { ManageDeps } from '../manage/deps.ts';
import { ManageError } from '../manage/errors.ts';
import { checkBounds } from '../manage/fields/field.ts';
import { CLIENT_FIELDS } from '../manage/fields/clients.ts';

/** What a registering app may set (RFC 7591 §2, and Tessera's own client metadata). */
const STRING_FIELDS = ['client_name', 'scope', 'token_endpoint_auth_method', 'jwks_uri', 'backchannel_logout_uri', 'request_object_signing_alg'] as const;
const LIST_FIELDS = ['redirect_uris', 'grant_types', 'response_types', 'post_logout_redirect_uris', 'web_origins', 'device_networks'] as const;
/**
 * Each of these only makes the client stricter. What would loosen a rule (`first_party`,
 * which skips the consent page, or optional `pkce`) is the operator's alone to set.
 */
const FLAG_FIELDS = ['dpop_bound_access_tokens', 'require_pushed_authorization_requests', 'require_phishing_resistant'] as const;
type Metadata = { -readonly [K in keyof ClientMetadata]: ClientMetadata[K] };

/** Who is registering: with an initial access token (`token`), or anyone (`open`). */
export type RegistrationPolicy = 'token' | 'open';

/** RFC 7591 §3.2.2: an error naming the field at fault. */
function refused(field: string, description: string): OAuthError {
  return new OAuthError(field === 'redirect_uris' || field === 'post_logout_redirect_uris' ? 'invalid_redirect_uri' : 'invalid_client_metadata', description);
}

/**
 * The client metadata of a request (RFC 7591 §2): the fields Tessera's clients have, each of
 * its type; "the authorization server MUST ignore any client metadata sent by the client
 * that it does not understand" (§2), so every other member is left out.
 */
export function readMetadata(body: Readonly<Record<string, unknown>>): Metadata {
  const metadata: Record<string, unknown> = {};
  for (const name of STRING_FIELDS) {
    const value = body[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw refused(name, `${name} must be a string`);
    metadata[name] = value;
  }
  for (const name of LIST_FIELDS) {
    const value = body[name];
    if (value === undefined || value === null) continue;
    // How many, and how long each, is the client table's to say (checkBounds).
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item.length > 0))
      throw refused(name, `${name} must be an array of strings`);
    metadata[name] = value;
  }
  for (const name of FLAG_FIELDS) {
    const value = body[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'boolean') throw refused(name, `${name} must be true or false`);
    metadata[name] = value;
  }
  if (body['jwks'] !== undefined && body['jwks'] !== null) {
    if (typeof body['jwks'] !== 'object' || Array.isArray(body['jwks'])) throw refused('jwks', 'jwks must be a JWK Set object');
    metadata['jwks'] = body['jwks'];
  }
  // RFC 7591 §2.1: Tessera issues codes only: `code` is the one response type there is.
  const responseTypes = metadata['response_types'] as string[] | undefined;
  if (responseTypes?.some((type) => type !== 'code')) {
    throw refused('response_types', `response_types ${responseTypes.join(' ')}: only code is supported`);
  }
  delete metadata['response_types'];
  return metadata as Metadata;
}

/**
 * RFC 7591 §2.3: a software statement's claims, when signed by a key the operator trusts
 * (`TESSERA_SOFTWARE_STATEMENT_JWKS`); "the values in the software statement take
 * precedence" over those in the request.
 */
async function softwareStatementClaims(deps: ManageDeps, statement: unknown): Promise<Record<string, unknown>> {
  if (typeof statement !== 'string') throw new OAuthError('invalid_software_statement', 'software_statement must be a signed JWT');
  const trusted = deps.config.registration.softwareStatementJwks;
  if (trusted === null) throw new OAuthError('unapproved_software_statement', 'this server trusts no software statement issuer');
  try {
    const { payload } = await jwtVerify(statement, createLocalJWKSet(trusted as unknown as JSONWebKeySet), {
      algorithms: ['RS256', 'PS256', 'ES256', 'ES384', 'EdDSA'],
      currentDate: new Date(deps.clock.now()),
    });
    return payload as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // A key it does not know: a statement from an issuer the operator has not approved.
    if (code === 'ERR_JWKS_NO_MATCHING_KEY')
      throw new OAuthError('unapproved_software_statement', 'the software statement is not signed by a key this server trusts');
    throw new OAuthError(
      'invalid_software_statement',
      `the software statement cannot be verified: ${code === 'ERR_JWT_EXPIRED' ? 'it has expired' : 'bad signature or claims'}`,
    );
  }
}

/**
 * The registration as requested and allowed by the policy, with RFC 7591's defaults
 * filled in: the whole registration, as a PUT (RFC 7592 §2.2) replaces it.
 */
export async function requestedMetadata(
  deps: ManageDeps,
  body: Readonly<Record<string, unknown>>,
  policy: RegistrationPolicy,
  current?: ClientRecord,
): Promise<Metadata> {
  const requested = readMetadata(body);
  const metadata =
    body['software_statement'] === undefined ? requested : { ...requested, ...readMetadata(await softwareStatementClaims(deps, body['software_statement'])) };
  // The table's bounds (checked again by the operation) before anything below reads the
  // lists item by item: an open registration's URIs are each parsed.
  try {
    checkBounds(CLIENT_FIELDS, metadata);
  } catch (error) {
    throw asRegistrationError(error);
  }
  // The open policy registers public clients only (RFC 7591 §3.2.1: a server "MAY replace
  // any of the client's requested metadata values"): the method defaults to none there.
  // A replacement that leaves the method out keeps it: a client cannot change between public
  // and confidential (client update refuses it), so the registration default would refuse
  // every PUT of a public client that does not repeat it.
  metadata.token_endpoint_auth_method ??= current?.authMethod ?? (policy === 'open' ? 'none' : 'client_secret_basic');
  metadata.grant_types ??= [GRANT_AUTHORIZATION_CODE];
  const grants = metadata.grant_types;
  metadata.scope ??= `openid profile email${grants.includes(GRANT_REFRESH_TOKEN) ? ' offline_access' : ''}`;
  metadata.client_name ??= defaultName(metadata.redirect_uris ?? []);
  const admin = metadata.scope.split(' ').filter((scope) => OPERATOR_GIVEN_SCOPES.includes(scope));
  if (admin.length > 0)
    throw refused('scope', `scope ${admin.join(' ')}: admin scopes are given by the operator only (tessera client add), and so is ssf:manage`);
  if (policy === 'open') {
    if (metadata.token_endpoint_auth_method !== 'none') {
      throw refused(
        'token_endpoint_auth_method',
        `token_endpoint_auth_method ${metadata.token_endpoint_auth_method}: open registration is for public clients (none)`,
      );
    }
    const grant = grants.find((type) => type !== GRANT_AUTHORIZATION_CODE && type !== GRANT_REFRESH_TOKEN);
    if (grant !== undefined) throw refused('grant_types', `grant_types ${grant}: open registration allows authorization_code and refresh_token only`);
    for (const name of ['redirect_uris', 'post_logout_redirect_uris'] as const) {
      const web = (metadata[name] ?? []).find((uri) => !isNativeAppRedirect(uri));
      if (web !== undefined)
        throw refused(
          name,
          `${name} ${web}: open registration takes loopback (http://127.0.0.1) and private-use scheme (com.example.app:/cb) redirect URIs only`,
        );
    }
    // The server would call these itself: not for anyone on the internet to choose. Nor
    // browser origins: open registration is for apps on the person's own machine.
    for (const name of ['jwks_uri', 'backchannel_logout_uri', 'web_origins'] as const) {
      if (metadata[name] !== undefined) throw refused(name, `${name}: not accepted by open registration`);
    }
  }
  return metadata;
}

/** A name for an app that gave none: where it sends people back to, which the consent page shows. */
function defaultName(redirectUris: readonly string[]): string {
  try {
    const url = new URL(redirectUris[0] ?? '');
    return `App at ${url.host || url.protocol.replace(/:$/, '')}`;
  } catch {
    return 'Unnamed app';
  }
}

/** A ManageError as RFC 7591 §3.2.2 answers it, naming the field in its JSON name. */
function asRegistrationError(error: unknown): unknown {
  if (!(error instanceof ManageError)) return error;
  const field = error.field ?? '';
  if (error.kind === 'stale') return new OAuthError('invalid_request', 'the registration changed while this request was made; read it again', { status: 409 });
  return refused(field, error.message);
}

const HOUR_MS = 3_600_000;

/**
 * The rate-limit keys of open registrations (one /24 registered 400 clients in two
 * seconds): per address, per network (IPv4 /24, IPv6 /64), and the whole server's count.
 */
export const REGISTRATION_KEYS = {
  address: 'registration:ip:',
  network: 'registration:net:',
  all: 'registration:all',
} as const;

/** What a refusal by each limit says, in RFC 7591 §3.2.2's error_description. */
const LIMITED: Readonly<Record<'address' | 'network' | 'server', string>> = {
  address: 'too many registrations from this address this hour',
  network: 'too many registrations from this network (IPv4 /24, IPv6 /64) this hour',
  server: 'this server takes no more open registrations this hour (an initial access token still registers)',
};

/**
 * Who may register (RFC 7591 §3): with `TESSERA_REGISTRATION=token`, the holder of an
 * initial access token, spent here (given back by `refund` when the registration is then
 * refused); with `open`, anyone, a limited number of times an hour per address, per network
 * and across the server, and a token, when one is sent, lets its holder register as under
 * `token`. Registrations with a token are not counted by those limits: the operator bounds
 * them by the token's uses and lifetime, and a flood of open registrations must not lock
 * out the operator's own registrants. An open registration is counted before it is made, in
 * the store's atomic counters (attempts.ts), and `refund` takes it back when it is then
 * refused: what stays counted are the registrations made. A limit already reached refuses by
 * reading alone: a refused registration writes nothing.
 */
export async function admitRegistration(
  deps: Pick<ManageDeps, 'store' | 'clock' | 'config' | 'events'>,
  token: string | null,
  ip: string,
): Promise<{ readonly policy: RegistrationPolicy; refund(): Promise<void> }> {
  const settings = deps.config.registration;
  const now = deps.clock.now();
  if (token !== null || settings.policy === 'token') {
    // RFC 7591 §3: the initial access token is an OAuth 2.0 bearer token (RFC 6750).
    if (token === null)
      throw new OAuthError('invalid_token', 'registration needs an initial access token: Authorization: Bearer <token from tessera registration-token create>');
    const spent = await deps.store.initialAccessTokens.use(hashSecret(token), now);
    if (spent === null) throw new OAuthError('invalid_token', 'the initial access token is unknown, expired or used up');
    return { policy: 'token', refund: () => deps.store.initialAccessTokens.refund(spent.id) };
  }
  const network = networkOf(ip);
  const limits = [
    { key: `${REGISTRATION_KEYS.address}${countedAddress(ip)}`, limit: settings.perAddressPerHour, scope: 'address' as const },
    ...(network === null ? [] : [{ key: `${REGISTRATION_KEYS.network}${network}`, limit: settings.perNetworkPerHour, scope: 'network' as const }]),
    { key: REGISTRATION_KEYS.all, limit: settings.perHour, scope: 'server' as const },
  ];
  const reserved = await Attempt.reserve(deps.store.rateLimits, limits, HOUR_MS, now);
  if (isRefusal(reserved)) {
    const scope = limits.find((limit) => limit.key === reserved.limit.key)!.scope;
    await deps.events.refused({ type: 'client.registration_limited', ip, detail: { limit: scope, kind: 'dynamic' } }, reserved.limit.key, reserved.endsAt);
    const minutes = Math.max(1, Math.ceil(reserved.retryAfterSeconds / 60));
    throw new OAuthError('temporarily_unavailable', `${LIMITED[scope]}; try again in ${minutes} minute${minutes === 1 ? '' : 's'}`, {
      status: 429,
      retryAfterSeconds: reserved.retryAfterSeconds,
    });
  }
  return { policy: 'open', refund: () => reserved.succeeded() };
}

export interface Registered {
  readonly client: ClientRecord;
  readonly secret: string | null;
  /** RFC 7592 §3: the new registration access token, shown once. */
  readonly registrationAccessToken: string | null;
}

/** RFC 7591 §3.1: registers the client described by `body`; `policy` is how the caller was let in. */
export async function register(deps: ManageDeps, body: Readonly<Record<string, unknown>>, policy: RegistrationPolicy): Promise<Registered> {
  const metadata = await requestedMetadata(deps, body, policy);
  let made;
  try {
    made = await createClient(deps, metadata, { registeredBy: 'dynamic' });
  } catch (error) {
    throw asRegistrationError(error);
  }
  const token = randomToken(32);
  await deps.store.registrationTokens.set(made.client.id, hashSecret(token), deps.clock.now());
  await deps.events.emit({
    type: 'client.registered',
    clientId: made.client.id,
    detail: { name: made.client.name, policy, auth_method: made.client.authMethod },
  });
  return { ...made, registrationAccessToken: token };
}

/**
 * RFC 7592 §3: the client whose registration `token` manages. "If the registration access
 * token used to make this request is not valid, the server MUST respond with an error", and
 * a client that does not exist is answered the same way, with 401.
 */
export async function registrationOwner(deps: Pick<ManageDeps, 'store'>, clientId: string, token: string | null): Promise<ClientRecord> {
  const invalid = new OAuthError('invalid_token', 'the registration access token is not valid for this client');
  if (token === null) throw new OAuthError('invalid_token', 'the registration access token is required: Authorization: Bearer <registration_access_token>');
  const [stored, client] = await Promise.all([deps.store.registrationTokens.get(clientId), deps.store.clients.get(clientId)]);
  if (stored === null || client === null || !digestsEqual(stored, hashSecret(token))) throw invalid;
  return client;
}

/**
 * RFC 7592 §2.2: replaces the registration with the one in `body` (fields left out take
 * their defaults, as at registration) and rotates the registration access token.
 */
export async function replaceRegistration(
  deps: ManageDeps,
  client: ClientRecord,
  token: string,
  body: Readonly<Record<string, unknown>>,
  policy: RegistrationPolicy,
): Promise<Registered> {
  // §2.2: "The client MUST include its client_id field in the request, and it MUST be the same as its currently issued client identifier."
  if (body['client_id'] !== client.id) throw new OAuthError('invalid_request', "client_id must be given, and be this client's");
  // §2.2: these are the server's to issue, never the client's to set.
  for (const name of ['registration_access_token', 'registration_client_uri', 'client_secret_expires_at', 'client_id_issued_at']) {
    if (body[name] !== undefined) throw new OAuthError('invalid_request', `${name} must not be sent in an update`);
  }
  // §2.2: a client_secret sent must be the one issued.
  if (
    body['client_secret'] !== undefined &&
    (typeof body['client_secret'] !== 'string' || client.secretHash === null || !digestsEqual(client.secretHash, hashSecret(body['client_secret'])))
  ) {
    throw new OAuthError('invalid_request', 'client_secret does not match the secret issued to this client');
  }
  const metadata = await requestedMetadata(deps, body, policy, client);
  const replacement: ClientMetadata = {
    ...metadata,
    // Left out is cleared: a PUT is the whole registration.
    post_logout_redirect_uris: metadata.post_logout_redirect_uris ?? [],
    web_origins: metadata.web_origins ?? [],
    device_networks: metadata.device_networks ?? [],
    require_phishing_resistant: metadata.require_phishing_resistant ?? false,
    backchannel_logout_uri: metadata.backchannel_logout_uri ?? null,
    dpop_bound_access_tokens: metadata.dpop_bound_access_tokens ?? false,
    require_pushed_authorization_requests: metadata.require_pushed_authorization_requests ?? false,
    request_object_signing_alg: metadata.request_object_signing_alg ?? null,
    redirect_uris: metadata.redirect_uris ?? [],
  };
  const next = randomToken(32);
  try {
    const update = await checkClientUpdate(deps, client.id, replacement, client.version ?? 1, 'client');
    // Of two updates made with one token, the one that rotates it first is the one written:
    // the other finds the token gone and writes nothing, whichever client version it read.
    // An update refused as stale throws, which rolls its rotation back.
    const updated = await transactionWithEvents(deps, async (tx, record) => {
      if (!(await tx.registrationTokens.rotate(client.id, hashSecret(token), hashSecret(next), deps.clock.now()))) {
        throw new OAuthError('invalid_token', 'the registration access token was used by another update');
      }
      return updateClientIn(tx, record, update);
    });
    return { ...updated, registrationAccessToken: next };
  } catch (error) {
    throw asRegistrationError(error);
  }
}

/** RFC 7592 §2.3: the app removes its registration, and everything issued to it. */
export async function deleteRegistration(deps: ManageDeps, client: ClientRecord): Promise<void> {
  await removeClient(deps, client.id, 'client');
}

/** RFC 7591 §3.2.1 and RFC 7592 §3: the registration as the app reads it. */
export function registrationJson(
  deps: Pick<ManageDeps, 'clock' | 'config'>,
  registered: { readonly client: ClientRecord; readonly secret?: string | null; readonly registrationAccessToken?: string | null },
): Record<string, unknown> {
  const { client } = registered;
  return {
    ...clientJson(client, deps.clock.now()),
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    response_types: ['code'],
    ...(registered.secret ? { client_secret: registered.secret, client_secret_expires_at: 0 } : {}),
    ...(registered.registrationAccessToken ? { registration_access_token: registered.registrationAccessToken } : {}),
    registration_client_uri: `${deps.config.issuer}${REGISTRATION_PATH}/${encodeURIComponent(client.id)}`,
  };
}

/**
 * Client authentication at the token, device authorization, revocation, introspection and
 * PAR endpoints (RFC 6749 §2.3, RFC 7523 §2.2 and §3 as draft-ietf-oauth-rfc7523bis updates
 * them, OIDC Core §9). Failures are
 * `invalid_client` with 401, whatever went wrong, so that they tell an attacker little; only
 * a request that mixes methods is `invalid_request`.
 */
import { decodeJwt, errors as joseErrors, jwtVerify } from 'jose';
import type { ClientAuthSettings } from '../config/index.ts';
import type { Clock } from '../core/clock.ts';
import { digestsEqual, hashSecret } from '../core/crypto.ts';
import { TOKEN_PATH } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import { JWT_BEARER_ASSERTION, SECRET_AUTH_METHODS, type ClientAuthMethod } from '../core/protocol.ts';
import type { ClientRecord, Store } from '../store/types.ts';
import { ClientKeysError, type ClientKeySets } from '../tokens/client-jwks.ts';
import type { Params } from './types.ts';

/** The JWS algorithms a client assertion may be signed with: asymmetric ones only. */
export const ASSERTION_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;

/**
 * The parameters that authenticate the client in a request's body (RFC 6749 §2.3.1, RFC 7521
 * §4.2): credentials, never part of the request they came with, so never kept with it.
 */
export const CLIENT_AUTH_PARAMS: readonly string[] = ['client_secret', 'client_assertion', 'client_assertion_type'];

/** What discovery lists for the token, device authorization and revocation endpoints. */
export const TOKEN_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'];
/** RFC 7662 §2.1: introspection needs a client that proves who it is, so not `none`. */
export const INTROSPECTION_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post', 'private_key_jwt'];

/**
 * The `typ` header values a client assertion may carry, compared as RFC 7515 §4.1.9 has media
 * types compared (case-insensitively, `application/` optional): none, the generic `JWT`
 * (RFC 7519 §5.1), or draft-ietf-oauth-rfc7523bis's own type.
 */
const ASSERTION_TYPES: readonly string[] = ['jwt', 'client-authentication+jwt'];

/** Client clocks drift: `exp`, `nbf` and `iat` are read with this much slack. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** Bounds what a client can make the store look up or keep. */
const MAX_ID_LENGTH = 256;

export interface ClientAuthDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly clientKeys: ClientKeySets;
  readonly config: { readonly issuer: string; readonly clientAuth: ClientAuthSettings };
}

/** What a request presented: its Authorization header, its form, and the URL it was sent to. */
export interface PresentedCredentials {
  readonly authorization: string | undefined;
  readonly params: Params;
  /** The endpoint's URL, an audience a client assertion may name under TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy. */
  readonly endpoint: string;
}

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before Basic encoding (RFC 7617). */
function formDecode(value: string): string | null {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

export function parseBasic(header: string): { id: string; secret: string } | null {
  const match = /^Basic ([A-Za-z0-9+/]+=*)$/i.exec(header.trim());
  if (!match) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const id = formDecode(decoded.slice(0, colon));
  const secret = formDecode(decoded.slice(colon + 1));
  return id === null || secret === null || id === '' ? null : { id, secret };
}

const failed = () => new OAuthError('invalid_client', 'client authentication failed');

/**
 * The client a presented id names, or null. The id is not yet authenticated and may come from
 * HTTP Basic or a client assertion's `sub`, which no form check sees: one too long or holding
 * a NUL character (which PostgreSQL's text cannot hold: the lookup would fail as a 500) names
 * no client, and is refused as an unknown one.
 */
async function findClient(store: Store, id: string): Promise<ClientRecord | null> {
  return id.length <= MAX_ID_LENGTH && !id.includes('\u0000') ? store.clients.get(id) : null;
}

/**
 * Identifies and authenticates the client of a request by the one method it used:
 * HTTP Basic with a secret (client_secret_basic), a secret in the form (client_secret_post),
 * a signed JWT (private_key_jwt), or only its client_id (a public client, RFC 6749 §3.2.1),
 * in the form or as HTTP Basic with an empty password.
 */
export async function authenticateClient(deps: ClientAuthDeps, presented: PresentedCredentials): Promise<ClientRecord> {
  const { authorization, params } = presented;
  const assertion = params['client_assertion'];
  const assertionType = params['client_assertion_type'];
  const bodySecret = params['client_secret'];
  // RFC 6749 §2.3: "The client MUST NOT use more than one authentication method in each request."
  const methods = [authorization !== undefined, bodySecret !== undefined, assertion !== undefined || assertionType !== undefined];
  if (methods.filter(Boolean).length > 1) {
    throw new OAuthError('invalid_request', 'the request uses more than one client authentication method; use one');
  }

  if (assertion !== undefined || assertionType !== undefined) return assertedClient(deps, presented);

  if (authorization !== undefined) {
    const credentials = parseBasic(authorization);
    if (!credentials) throw new OAuthError('invalid_client', 'the Authorization header is not valid HTTP Basic');
    if (params['client_id'] !== undefined && params['client_id'] !== credentials.id) {
      throw new OAuthError('invalid_client', 'client_id does not match the authenticated client');
    }
    const client = await findClient(deps.store, credentials.id);
    // An empty password is how many libraries send a public client's id (requests-oauthlib,
    // simple-oauth2): the same as client_id in the form.
    if (credentials.secret === '') {
      if (client?.authMethod === 'none') return client;
      throw failed();
    }
    return secretClient(deps, client, credentials.secret);
  }

  const clientId = params['client_id'];
  if (clientId === undefined) {
    throw new OAuthError('invalid_client', 'client authentication is required: HTTP Basic, client_secret, client_assertion, or client_id for a public client');
  }
  const client = await findClient(deps.store, clientId);
  if (bodySecret !== undefined) return secretClient(deps, client, bodySecret);
  if (!client) throw failed();
  if (client.authMethod !== 'none') throw new OAuthError('invalid_client', `this client must authenticate (${client.authMethod})`);
  return client;
}

/**
 * RFC 6749 §2.3.1: the client secret, in the Authorization header or the form; a client
 * registered with either is accepted with the other. After a rotation the previous secret
 * is accepted until its grace period ends.
 */
function secretClient(deps: ClientAuthDeps, client: ClientRecord | null, secret: string): ClientRecord {
  if (client && !SECRET_AUTH_METHODS.includes(client.authMethod)) {
    throw new OAuthError(
      'invalid_client',
      client.authMethod === 'none' ? 'a public client has no secret to present' : 'this client authenticates with private_key_jwt, not a secret',
    );
  }
  const presented = hashSecret(secret);
  const current = client?.secretHash != null && digestsEqual(presented, client.secretHash);
  const previous =
    client?.previousSecretHash != null && (client.previousSecretExpiresAt ?? 0) > deps.clock.now() && digestsEqual(presented, client.previousSecretHash);
  if (!client || !(current || previous)) throw failed();
  return client;
}

/** Why jose refused an assertion, in words that give away nothing secret. */
function assertionProblem(error: unknown): string {
  if (error instanceof ClientKeysError) return `the client's keys could not be read: ${error.message}`;
  if (error instanceof joseErrors.JWTExpired) return 'client_assertion has expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) return `client_assertion: the ${error.claim} claim is not valid (${error.reason})`;
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) {
    return `client_assertion must be signed with one of ${ASSERTION_ALGORITHMS.join(', ')}`;
  }
  if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
    return "client_assertion is signed with a key that is not among the client's keys";
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'client_assertion signature verification failed';
  return 'client_assertion is not a valid signed JWT';
}

/** RFC 7523 §2.2 and §3, OIDC Core §9 (private_key_jwt). */
async function assertedClient(deps: ClientAuthDeps, presented: PresentedCredentials): Promise<ClientRecord> {
  const { params } = presented;
  const assertion = params['client_assertion'];
  if (assertion === undefined || params['client_assertion_type'] === undefined) {
    throw new OAuthError('invalid_request', 'client_assertion and client_assertion_type go together');
  }
  // RFC 7521 §4.2: "If the client_assertion_type is invalid or unsupported ... invalid_client".
  if (params['client_assertion_type'] !== JWT_BEARER_ASSERTION) {
    throw new OAuthError('invalid_client', `client_assertion_type must be ${JWT_BEARER_ASSERTION}`);
  }
  let subject: unknown;
  try {
    subject = decodeJwt(assertion).sub;
  } catch {
    throw new OAuthError('invalid_client', 'client_assertion is not a JWT');
  }
  // RFC 7523 §3: "the "sub" (subject) of the JWT MUST be the "client_id" of the OAuth client";
  // RFC 7521 §4.2: a client_id sent alongside must name the same client.
  const clientId = params['client_id'] ?? subject;
  if (typeof clientId !== 'string' || subject !== clientId) throw new OAuthError('invalid_client', 'client_assertion sub must be the client_id');
  const client = await findClient(deps.store, clientId);
  if (!client) throw failed();
  if (client.authMethod !== 'private_key_jwt')
    throw new OAuthError('invalid_client', `this client authenticates with ${client.authMethod}, not a client_assertion`);

  const { issuer, clientAuth } = deps.config;
  const legacy = clientAuth.assertionAudience === 'legacy';
  const now = deps.clock.now();
  let payload;
  let protectedHeader;
  try {
    ({ payload, protectedHeader } = await jwtVerify(assertion, deps.clientKeys.keysOf(client), {
      algorithms: [...ASSERTION_ALGORITHMS],
      // RFC 7523 §3: iss and sub are the client_id.
      issuer: client.id,
      subject: client.id,
      // TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy: RFC 7523 §3 item 3 before RFC 7523bis, "The
      // token endpoint URL of the authorization server MAY be used as a value for an aud
      // element": the issuer, the token endpoint (OIDC Core §9) or the endpoint called (RFC
      // 9126 §2), each also among other values. By default aud is checked below instead.
      ...(legacy ? { audience: [issuer, `${issuer}${TOKEN_PATH}`, presented.endpoint] } : {}),
      requiredClaims: ['exp', 'jti'],
      currentDate: new Date(now),
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
    }));
  } catch (error) {
    throw new OAuthError('invalid_client', assertionProblem(error), { cause: error });
  }
  // draft-ietf-oauth-rfc7523bis (replacing RFC 7523 §3 item 3, and RFC 9126 §2 for PAR):
  // "the aud (audience) claim value MUST use the issuer identifier [RFC8414] of the
  // authorization server as its sole value ... the token endpoint URL of the authorization
  // server MUST NOT be used as an audience value. The authorization server MUST reject any JWT
  // that does not contain its issuer identifier as its sole audience value." A client led to
  // sign for another server that gave this server's token endpoint as its own (audience
  // injection) cannot have signed that. The issuer as the one member of an array is taken too:
  // the draft asks clients for a plain string "to simplify implementations", but a one-element
  // array names the same single audience (RFC 7519 §4.1.3 lets aud be either), carries no
  // second value for an attacker to use, and is what a library that always writes aud as a
  // list sends; refusing it would lock such a client out for no gain.
  if (!legacy && !soleAudience(payload.aud, issuer)) {
    throw new OAuthError(
      'invalid_client',
      `client_assertion: the aud claim must be this server's issuer identifier, ${issuer}, as its only value (RFC 7523bis); the token endpoint's URL and other audiences are refused (an operator can accept them with TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy)`,
    );
  }
  // draft-ietf-oauth-rfc7523bis: "Client authentication JWTs SHOULD be explicitly typed by
  // using the typ header parameter value client-authentication+jwt ... it is NOT RECOMMENDED
  // for servers to reject JWTs that do not have explicit types": none and `JWT` are taken. One
  // that says it is another kind of JWT is not, under either TESSERA_CLIENT_ASSERTION_AUDIENCE.
  // RFC 8725 §3.11: "Sometimes, one kind of JWT can be confused for another. If a particular
  // kind of JWT is subject to such confusion, that JWT can include an explicit JWT type value,
  // and the validation rules can specify checking the type. This mechanism can prevent such
  // confusion." An access token (at+jwt), a DPoP proof (dpop+jwt), a logout token
  // (logout+jwt), a security event (secevent+jwt) or an ID-JAG (oauth-id-jag+jwt) the client
  // signed is never its client assertion, whatever its claims.
  if (protectedHeader.typ !== undefined && !ASSERTION_TYPES.includes(mediaType(protectedHeader.typ))) {
    throw new OAuthError('invalid_client', 'client_assertion typ must be client-authentication+jwt or JWT, or be left out (RFC 7523bis)');
  }
  const expiresAt = payload.exp! * 1000;
  if (expiresAt - now > clientAuth.assertionMaxLifetimeSeconds * 1000) {
    throw new OAuthError('invalid_client', `client_assertion must expire within ${clientAuth.assertionMaxLifetimeSeconds} seconds`);
  }
  const jti = payload.jti;
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_ID_LENGTH) throw new OAuthError('invalid_client', 'client_assertion jti is not valid');
  // OIDC Core §9: "the Authorization Server MUST only accept JWTs with a jti claim once"; the
  // record lives until the assertion could no longer be accepted anyway.
  const first = await deps.store.clientAssertions.use(hashSecret(`${client.id} ${jti}`), expiresAt + CLOCK_TOLERANCE_SECONDS * 1000, now);
  if (!first) throw new OAuthError('invalid_client', 'client_assertion has been used already');
  return client;
}

/** Whether `aud` is `issuer` alone: the string, or the one member of an array (see above). */
function soleAudience(aud: unknown, issuer: string): boolean {
  return aud === issuer || (Array.isArray(aud) && aud.length === 1 && aud[0] === issuer);
}

/** A `typ` value as RFC 7515 §4.1.9 compares it: lowercase, without an `application/` prefix. */
function mediaType(typ: unknown): string {
  if (typeof typ !== 'string') return '';
  const lower = typ.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

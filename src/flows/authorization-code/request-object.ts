/**
 * Request objects: the authorization request passed as a JWT in the `request` parameter
 * (RFC 9101 JAR; OIDC Core §6.1 and §6.3). Unsigned ones (`alg: none`) from a client that
 * registered `none` or no algorithm; signed ones verified with the client's registered keys,
 * by the algorithm it registered (OIDC Registration §2 `request_object_signing_alg`) or, when
 * it registered none, by any asymmetric one. Every failure is `invalid_request_object`.
 */
import { decodeJwt, decodeProtectedHeader, errors as joseErrors, jwtVerify, UnsecuredJWT, type JWTPayload } from 'jose';
import type { Clock } from '../../core/clock.ts';
import { OAuthError } from '../../core/errors.ts';
import { REQUEST_OBJECT_ALGORITHMS } from '../../core/protocol.ts';
import type { ClientRecord } from '../../store/types.ts';
import { ClientKeysError, type ClientKeySets } from '../../tokens/client-jwks.ts';

/** A request object longer than this is refused: it carries a request, not a document. */
export const MAX_REQUEST_OBJECT_LENGTH = 8192;
/** Client clocks drift: `exp` and `nbf` are read with this much slack. */
const CLOCK_TOLERANCE_SECONDS = 30;
/** The signed algorithms, for a client that registered none in particular. */
const SIGNED_ALGORITHMS = REQUEST_OBJECT_ALGORITHMS.filter((alg) => alg !== 'none');
/** The JWT's own claims (RFC 7519 §4.1): about the object, not request parameters. */
const JWT_CLAIMS: readonly string[] = ['iss', 'aud', 'exp', 'iat', 'nbf', 'jti', 'sub'];

export interface RequestObjectDeps {
  readonly clientKeys: ClientKeySets;
  readonly clock: Clock;
  readonly config: { readonly issuer: string };
}

/** Request parameters as a request object yields them: strings, and `resource` repeated. */
export type RequestObjectParams = Readonly<Record<string, string | readonly string[]>>;

const refused = (description: string, cause?: unknown) => new OAuthError('invalid_request_object', description, cause === undefined ? {} : { cause });

/**
 * The claims of `jwt` read without checking anything: only to know where to report that it
 * is refused (its redirect_uri, if registered, and its state), which a request could as well
 * have named in its query. Null when it cannot be read.
 */
export function unverifiedRequestObject(jwt: string): Readonly<Record<string, unknown>> | null {
  if (jwt.length > MAX_REQUEST_OBJECT_LENGTH) return null;
  try {
    return decodeJwt(jwt);
  } catch {
    return null;
  }
}

/** Why jose refused the object, in words that give away nothing secret. */
function problem(error: unknown): string {
  if (error instanceof ClientKeysError) return `the client's keys could not be read: ${error.message}`;
  if (error instanceof joseErrors.JWTExpired) return 'the request object has expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) return `the request object's ${error.claim} claim is not valid (${error.reason})`;
  if (error instanceof joseErrors.JWKSNoMatchingKey || error instanceof joseErrors.JWKSMultipleMatchingKeys) {
    return "the request object is signed with a key that is not among the client's registered keys";
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return 'the request object signature verification failed';
  return 'the request object is not a valid JWT';
}

/**
 * The authorization request parameters `jwt` carries, once it is verified for `client`.
 * Throws `invalid_request_object`.
 */
export async function readRequestObject(deps: RequestObjectDeps, client: ClientRecord, jwt: string): Promise<RequestObjectParams> {
  if (jwt.length > MAX_REQUEST_OBJECT_LENGTH) throw refused(`the request object is longer than ${MAX_REQUEST_OBJECT_LENGTH} characters`);
  // RFC 9101 §6.1 allows an encrypted (JWE, five parts) object; Tessera publishes no
  // encryption keys, so it takes signed or unsigned ones only.
  const parts = jwt.split('.');
  if (parts.length === 5) throw refused('encrypted request objects are not supported');
  if (parts.length !== 3) throw refused('the request object is not a JWT');
  let alg: unknown;
  try {
    alg = decodeProtectedHeader(jwt).alg;
  } catch (error) {
    throw refused('the request object is not a JWT', error);
  }
  const registered = client.requestObjectSigningAlg ?? null;
  const currentDate = new Date(deps.clock.now());
  let payload: JWTPayload;
  if (alg === 'none') {
    // OIDC Registration §2 request_object_signing_alg: "All Request Objects from this Client
    // MUST be rejected, if not signed with this algorithm"; with none registered, any
    // algorithm discovery lists may be used, `none` among them. An unsigned object proves
    // nothing the query could not say (RFC 9101 §10.2), so it is taken as the query would be,
    // never in place of a signed one from a client that registered a signing algorithm.
    if (registered !== null && registered !== 'none')
      throw refused(`unsigned request objects (alg none) are not accepted from this client: it registered ${registered}; sign it with its registered key`);
    try {
      ({ payload } = UnsecuredJWT.decode(jwt, { currentDate, clockTolerance: CLOCK_TOLERANCE_SECONDS }));
    } catch (error) {
      throw refused(problem(error), error);
    }
  } else {
    // OIDC Registration §2: "All Request Objects from this Client MUST be rejected, if not
    // signed with this algorithm."
    const algorithms = registered === null ? [...SIGNED_ALGORITHMS] : registered === 'none' ? [] : [registered];
    if (typeof alg !== 'string' || !algorithms.includes(alg as (typeof SIGNED_ALGORITHMS)[number])) {
      throw refused(
        registered === 'none'
          ? 'this client registered unsigned request objects (alg none)'
          : `the request object must be signed with ${algorithms.join(', ')}`,
      );
    }
    try {
      ({ payload } = await jwtVerify(jwt, deps.clientKeys.keysOf(client), { algorithms, currentDate, clockTolerance: CLOCK_TOLERANCE_SECONDS }));
    } catch (error) {
      throw refused(problem(error), error);
    }
  }

  // OIDC Core §6.1: "The iss value SHOULD be the Client ID of the RP"; "The aud value SHOULD
  // be or include the OP's Issuer Identifier URL." Checked where they are present.
  if (payload.iss !== undefined && payload.iss !== client.id) throw refused('the request object iss must be the client_id');
  const audiences = payload.aud === undefined ? null : Array.isArray(payload.aud) ? payload.aud : [payload.aud];
  if (audiences !== null && !audiences.includes(deps.config.issuer))
    throw refused(`the request object aud must be this server's issuer, ${deps.config.issuer}`);
  // RFC 9101 §5: the client_id of the request and of the object name the same client.
  if (payload['client_id'] !== undefined && payload['client_id'] !== client.id) throw refused("the request object's client_id differs from the request's");
  // OIDC Core §6.1: "The request and request_uri parameters MUST NOT be included in Request Objects."
  if (payload['request'] !== undefined || payload['request_uri'] !== undefined) throw refused('a request object must not contain request or request_uri');

  const params: Record<string, string | readonly string[]> = {};
  for (const [name, value] of Object.entries(payload)) {
    if (JWT_CLAIMS.includes(name)) continue;
    if (typeof value === 'string') params[name] = value;
    // OIDC Core §6.1: max_age is a JSON number there; `claims` a JSON object (§5.5), read as
    // the parameter's JSON text.
    else if (typeof value === 'number' && Number.isFinite(value)) params[name] = String(value);
    else if (name === 'claims' && typeof value === 'object' && value !== null && !Array.isArray(value)) params[name] = JSON.stringify(value);
    // RFC 8707 §2: several resource values.
    else if (name === 'resource' && Array.isArray(value) && value.every((item) => typeof item === 'string')) params[name] = value;
    else throw refused(`the request object's ${name} must be a string`);
  }
  return params;
}

import type { FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';

/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * Where a request put its access token, other than the Authorization header: the
 * form-encoded body of a POST (RFC 6750 §2.2), or the query, which this server never reads
 * (§2.3: "SHOULD NOT be used", the URL ends up in logs and histories).
 */
export interface TokenParams {
  readonly query: Readonly<Record<string, unknown>>;
  /** The parsed `application/x-www-form-urlencoded` body of a POST; empty for any other request. */
  readonly body: Readonly<Record<string, unknown>>;
}

/**
 * The access token of a request to a protected resource, from the Authorization header
 * (RFC 6750 §2.1) or the form body of a POST (§2.2). Null when there is neither.
 */
export function bearerToken(request: FastifyRequest, params: TokenParams): string | null {
  if (params.query['access_token'] !== undefined) {
    throw new OAuthError('invalid_request', 'send the access token in the Authorization header (Bearer) or a POST body, not in the query');
  }
  const header = request.headers.authorization;
  const inHeader = header !== undefined && /^Bearer(\s|$)/i.test(header);
  const inBody = params.body['access_token'];
  if (inBody !== undefined) {
    // RFC 6750 §3.1: invalid_request for a request that "uses more than one method for
    // including an access token".
    if (inHeader) throw new OAuthError('invalid_request', 'send the access token one way: the Authorization header or the body, not both');
    // RFC 6750 §2.2: the body "MUST NOT" carry it unless it is form-encoded and single-part;
    // the form parser only accepts that, so a repeated or empty value is what is left to refuse.
    if (typeof inBody !== 'string' || inBody === '') throw new OAuthError('invalid_request', 'access_token must be sent once, and not empty');
    if (!B64TOKEN.test(inBody)) throw new OAuthError('invalid_token', 'the access_token parameter is not a well-formed token');
    return inBody;
  }
  if (!inHeader) return null;
  const match = BEARER.exec(header!);
  if (!match) throw new OAuthError('invalid_token', 'the Authorization header is not a well-formed Bearer token');
  return match[1]!;
}

/** RFC 9449 §7.1: `Authorization: DPoP <token>`, the token68 syntax of the Bearer scheme. */
const DPOP = /^DPoP +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The access token of a request and the scheme it came in. */
export interface AccessTokenCredential {
  readonly scheme: 'Bearer' | 'DPoP';
  readonly token: string;
}

/**
 * The access token of a request to a protected resource, as `Bearer` (RFC 6750 §2.1, or §2.2
 * in a POST body) or as `DPoP` (RFC 9449 §7.1: header only); null when there is neither.
 */
export function accessTokenCredential(request: FastifyRequest, params: TokenParams): AccessTokenCredential | null {
  const header = request.headers.authorization;
  if (header !== undefined && /^DPoP(\s|$)/i.test(header)) {
    if (params.query['access_token'] !== undefined || params.body['access_token'] !== undefined)
      throw new OAuthError('invalid_request', 'send the access token in the Authorization header only');
    const match = DPOP.exec(header);
    if (!match) throw new OAuthError('invalid_token', 'the Authorization header is not a well-formed DPoP token');
    return { scheme: 'DPoP', token: match[1]! };
  }
  const token = bearerToken(request, params);
  return token === null ? null : { scheme: 'Bearer', token };
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '')}"`;

/**
 * RFC 6750 §3: the challenge sent with a 401 or 403 from a protected resource. Without an
 * error it is the bare challenge of a request that carried no token (§3.1: the server
 * "SHOULD NOT include an error code" then).
 */
export function bearerChallenge(error?: OAuthError): string {
  const realm = `Bearer realm=${quoted('tessera')}`;
  return error ? `${realm}, error=${quoted(error.code)}, error_description=${quoted(error.description)}` : realm;
}

import type { FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';

/** RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/**
 * The access token of a request to a protected resource, sent the one way this server takes
 * it: the Authorization header (RFC 6750 §2.1). Null when there is no Bearer credential.
 */
export function bearerToken(request: FastifyRequest, params: Readonly<Record<string, unknown>>): string | null {
  // RFC 6750 §3.1: invalid_request for a request that "uses more than one method for
  // including an access token"; the body and query methods (§2.2, §2.3) are not offered.
  if (params['access_token'] !== undefined) {
    throw new OAuthError('invalid_request', 'send the access token in the Authorization header (Bearer), not as a parameter');
  }
  const header = request.headers.authorization;
  if (header === undefined || !/^Bearer(\s|$)/i.test(header)) return null;
  const match = BEARER.exec(header);
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
 * The access token of a request to a protected resource, as `Bearer` (RFC 6750 §2.1) or as
 * `DPoP` (RFC 9449 §7.1); null when there is neither.
 */
export function accessTokenCredential(request: FastifyRequest, params: Readonly<Record<string, unknown>>): AccessTokenCredential | null {
  const header = request.headers.authorization;
  if (header !== undefined && /^DPoP(\s|$)/i.test(header)) {
    if (params['access_token'] !== undefined) throw new OAuthError('invalid_request', 'send the access token in the Authorization header only');
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

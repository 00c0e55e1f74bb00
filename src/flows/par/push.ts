/**
 * RFC 9126 (OAuth 2.0 Pushed Authorization Requests) §2: the client sends its authorization
 * request to the server directly, authenticated, and gets a `request_uri` that stands for it
 * at the authorization endpoint (§4).
 */
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import type { ClientRecord } from '../../store/types.ts';
import { CLIENT_AUTH_PARAMS } from '../client-auth.ts';
import { checkAuthorizationRequest } from '../authorization-code/request.ts';
import type { ClientKeySets } from '../../tokens/client-jwks.ts';
import type { DpopProof } from '../dpop/proof.ts';
import type { FlowDeps, Params } from '../types.ts';

/** §2.2: "urn:ietf:params:oauth:request_uri:" followed by a value the server chose. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** RFC 9126 §2.2, wire names. */
export interface PushedAuthorizationResponse {
  readonly request_uri: string;
  readonly expires_in: number;
}

/**
 * Validates and stores a pushed authorization request of an authenticated client. `proof`:
 * a DPoP proof sent with it, which binds the code to its key as `dpop_jkt` would (RFC 9449
 * §10.1).
 */
export async function pushAuthorizationRequest(
  deps: FlowDeps & { readonly clientKeys: ClientKeySets },
  client: ClientRecord,
  params: Params,
  resources: readonly string[],
  proof: DpopProof | null,
): Promise<PushedAuthorizationResponse> {
  // §2.1: "The client_id parameter ... the authorization server MUST ... ensure that [it]
  // matches the authenticated client"; a client authenticated by HTTP Basic may leave it out.
  if (params['client_id'] !== undefined && params['client_id'] !== client.id) {
    throw new OAuthError('invalid_request', 'client_id does not match the authenticated client');
  }
  // §2.1: "The request_uri authorization request parameter is one exception, and it MUST
  // NOT be provided."
  if (params['request_uri'] !== undefined) throw new OAuthError('invalid_request', 'request_uri must not be sent in a pushed request');
  // The client's credentials (client_secret_post, private_key_jwt) authenticated the push and
  // are no part of the request: stored with it they would be a client secret kept in clear.
  const request: Record<string, string | readonly string[]> = {
    ...Object.fromEntries(Object.entries(params).filter(([name]) => !CLIENT_AUTH_PARAMS.includes(name))),
    client_id: client.id,
  };
  // RFC 8707 §2: resource may be sent several times, as at the authorization endpoint.
  if (resources.length > 0) request['resource'] = resources.length === 1 ? resources[0]! : resources;
  // RFC 9449 §10.1: with a proof here, "the authorization server MUST ... check that
  // dpop_jkt (if present) matches the thumbprint of the key in the DPoP proof".
  if (proof !== null) {
    if (request['dpop_jkt'] !== undefined && request['dpop_jkt'] !== proof.jkt) {
      throw new OAuthError('invalid_dpop_proof', 'dpop_jkt is not the thumbprint of the key of the DPoP proof');
    }
    request['dpop_jkt'] = proof.jkt;
  }

  // §2.1: "The authorization server MUST process the request ... as it would an authorization
  // request", with the same checks; every failure is answered here, as JSON (§2.3), never by
  // a redirect.
  // RFC 9126 §3: a request object may be pushed; what is kept is the request it carries.
  const check = await checkAuthorizationRequest(deps, request, true);
  if (check.kind !== 'ok') throw check.error;

  const now = deps.clock.now();
  const lifetime = deps.config.par.requestLifetime;
  // §7.1: the request_uri is a reference only this server can resolve; 256 bits, stored hashed.
  const requestUri = `${REQUEST_URI_PREFIX}${randomToken(32)}`;
  await deps.store.pushedRequests.create({
    hash: hashSecret(requestUri),
    clientId: client.id,
    params: check.params,
    createdAt: now,
    expiresAt: now + lifetime * 1000,
    claimedAt: null,
    browser: null,
    decidedAt: null,
  });
  return { request_uri: requestUri, expires_in: lifetime };
}

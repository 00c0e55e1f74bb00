import type { FastifyReply, FastifyRequest } from 'fastify';
import { digestsEqual, hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import { authenticateClient, parseBasic } from '../flows/client-auth.ts';
import { resourceIndicatorProblem } from '../flows/resources.ts';
import type { Params } from '../flows/types.ts';
import type { ClientRecord, ResourceRecord, Store } from '../store/types.ts';
import { bindClient } from './cors.ts';
import type { AppDeps } from './deps.ts';
import { formParams } from './form.ts';

/** Sent with every invalid_client (RFC 6749 §5.2: 401 and the scheme the client can use). */
export const BASIC_CHALLENGE = 'Basic realm="tessera", charset="UTF-8"';

/** A request from an authenticated client: the client, and its form parameters. */
export interface ClientRequest {
  readonly client: ClientRecord;
  readonly params: Params;
}

/**
 * The setup every endpoint a client calls with its credentials shares (token, device
 * authorization, revocation, introspection, ...): the answer is never cached, the form is
 * parsed (each parameter once), and the client is authenticated by whichever method it used
 * (src/flows/client-auth.ts) and bound to the request's browser origin.
 */
export async function clientRequest(deps: AppDeps, request: FastifyRequest, reply: FastifyReply): Promise<ClientRequest> {
  // RFC 6749 §5.1: responses with tokens (and, for simplicity, all of these) are not cached.
  reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
  const params = formParams(request);
  const client = await authenticateClient(deps, {
    authorization: request.headers.authorization,
    params,
    endpoint: `${deps.config.issuer}${request.routeOptions.url ?? request.url.split('?')[0]}`,
  });
  bindClient(request, client, deps.config.issuer);
  return { client, params };
}

/**
 * A resource server calling the introspection endpoint (RFC 7662 §2.1: "the protected
 * resource ... authenticate[s] with the authorization server") with HTTP Basic as its API's
 * identifier and the introspection secret `tessera resource add --introspection-secret`
 * printed. Null when the Basic user is no registered API, so the caller is tried as a
 * client; invalid_client when it is one and the secret is wrong or was never issued.
 */
export async function authenticateResourceServer(store: Store, request: FastifyRequest): Promise<ResourceRecord | null> {
  const header = request.headers.authorization;
  const credentials = header === undefined ? null : parseBasic(header);
  // Bounded, and with no NUL character, which PostgreSQL's text cannot hold (the lookup would fail as a 500).
  if (!credentials || credentials.id.length > 1024 || credentials.id.includes('\u0000') || resourceIndicatorProblem(credentials.id) !== null) return null;
  const resource = await store.resources.get(credentials.id);
  if (!resource) return null;
  const presented = hashSecret(credentials.secret);
  if (resource.introspectionSecretHash === null || !digestsEqual(presented, resource.introspectionSecretHash)) {
    throw new OAuthError('invalid_client', 'resource server authentication failed');
  }
  return resource;
}

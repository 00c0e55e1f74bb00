import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateClient } from '../flows/client-auth.ts';
import type { Params } from '../flows/types.ts';
import type { ClientRecord } from '../store/types.ts';
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

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { introspectToken } from '../flows/lifecycle/introspection.ts';
import type { AppDeps } from './deps.ts';
import { authenticateResourceServer, clientRequest } from './client-auth.ts';
import { INTROSPECTION_PATH } from '../core/endpoints.ts';
import { formParams } from './form.ts';

/**
 * The introspection endpoint (RFC 7662 §2). RFC 7662 §2.1: "the endpoint MUST also require
 * some form of authorization": the client authenticates, as at the token endpoint, or the
 * resource server, as its API's identifier with HTTP Basic.
 */
export const introspectionRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post(INTROSPECTION_PATH, async (request, reply) => {
    // The answer says whether a token is good: never cached (RFC 7662 §4).
    reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
    const resource = await authenticateResourceServer(deps.store, request);
    const { caller, params } = resource !== null ? { caller: { resource }, params: formParams(request) } : await introspectingClient(deps, request, reply);
    const token = params['token'];
    if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
    return reply.type('application/json; charset=utf-8').send(await introspectToken(deps, caller, token));
  });
};

/** A client calling the introspection endpoint, authenticated as at the token endpoint. */
async function introspectingClient(deps: AppDeps, request: FastifyRequest, reply: FastifyReply) {
  const { client, params } = await clientRequest(deps, request, reply);
  // A public client (RFC 6749 §2.1) proves nothing by its client_id: letting it introspect
  // would let anyone who knows one probe tokens.
  if (client.authMethod === 'none') throw new OAuthError('invalid_client', 'token introspection needs a client with a secret');
  return { caller: { client }, params };
}

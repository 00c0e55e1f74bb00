import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { introspectToken } from '../flows/lifecycle/introspection.ts';
import type { AppDeps } from './deps.ts';
import { authenticateClient, authenticateResourceServer } from './client-auth.ts';
import { formParams } from './form.ts';

/**
 * The introspection endpoint (RFC 7662 §2). RFC 7662 §2.1: "the endpoint MUST also require
 * some form of authorization": the client, or the resource server (as its API's identifier),
 * authenticates with HTTP Basic.
 */
export const introspectionRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post('/oauth/introspect', async (request, reply) => {
    // The answer says whether a token is good: never cached (RFC 7662 §4).
    reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
    const params = formParams(request);
    const resource = await authenticateResourceServer(deps.store, request);
    const client = resource === null ? await authenticateClient(deps.store, request, params, deps.config.issuer) : null;
    // A public client (RFC 6749 §2.1) proves nothing by its client_id: letting it introspect
    // would let anyone who knows one probe tokens.
    if (client !== null && client.secretHash === null) throw new OAuthError('invalid_client', 'token introspection needs a client with a secret');
    const token = params['token'];
    if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
    const caller = client === null ? { resource: resource! } : { client };
    return reply.type('application/json; charset=utf-8').send(await introspectToken(deps, caller, token));
  });
};

import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { introspectToken } from '../flows/lifecycle/introspection.ts';
import type { AppDeps } from './deps.ts';
import { clientRequest } from './client-auth.ts';

/**
 * The introspection endpoint (RFC 7662 §2). RFC 7662 §2.1: "the endpoint MUST also require
 * some form of authorization": the client authenticates, as at the token endpoint.
 */
export const introspectionRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post('/oauth/introspect', async (request, reply) => {
    // The answer says whether a token is good: never cached (RFC 7662 §4).
    const { client, params } = await clientRequest(deps, request, reply);
    // A public client (RFC 6749 §2.1) proves nothing by its client_id: letting it introspect
    // would let anyone who knows one probe tokens.
    if (client.authMethod === 'none') throw new OAuthError('invalid_client', 'token introspection needs a client with a secret');
    const token = params['token'];
    if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
    return reply.type('application/json; charset=utf-8').send(await introspectToken(deps, client, token));
  });
};

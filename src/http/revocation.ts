import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { revokeToken } from '../flows/lifecycle/revocation.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { authenticateClient } from './client-auth.ts';
import { formParams } from './form.ts';

/** The revocation endpoint (RFC 7009 §2): client authentication as at the token endpoint. */
export const revocationRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post('/oauth/revoke', async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const params = formParams(request);
    const client = await authenticateClient(deps.store, request, params, deps.config.issuer);
    const token = params['token'];
    if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
    await revokeToken(forRequest(deps, request), client, token);
    // RFC 7009 §2.2: "The authorization server responds with HTTP status code 200 if the token
    // has been revoked successfully or if the client submitted an invalid token."
    return reply.status(200).send();
  });
};

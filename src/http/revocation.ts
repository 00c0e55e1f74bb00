import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { revokeToken } from '../flows/lifecycle/revocation.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { clientRequest } from './client-auth.ts';
import { REVOCATION_PATH } from '../core/endpoints.ts';

/** The revocation endpoint (RFC 7009 §2): client authentication as at the token endpoint. */
export const revocationRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post(REVOCATION_PATH, async (request, reply) => {
    const { client, params } = await clientRequest(deps, request, reply);
    const token = params['token'];
    if (token === undefined) throw new OAuthError('invalid_request', 'token is required');
    await revokeToken(forRequest(deps, request), client, token);
    // RFC 7009 §2.2: "The authorization server responds with HTTP status code 200 if the token
    // has been revoked successfully or if the client submitted an invalid token." The body
    // is not specified: `{}` as JSON, since some clients (simple-oauth2's revokeAll) parse it
    // and stop at an empty one.
    return reply.status(200).type('application/json; charset=utf-8').send('{}');
  });
};

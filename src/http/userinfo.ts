import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { userInfo } from '../flows/lifecycle/userinfo.ts';
import type { AppDeps } from './deps.ts';
import { bearerChallenge, bearerToken } from './bearer.ts';
import { rawForm } from './form.ts';

/** The UserInfo endpoint (OIDC Core §5.3): GET and POST alike (§5.3.1). */
export const userinfoRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  async function handle(request: FastifyRequest, reply: FastifyReply, params: Readonly<Record<string, unknown>>) {
    reply.header('Cache-Control', 'no-store');
    const token = bearerToken(request, params);
    if (token === null) {
      reply.header('WWW-Authenticate', bearerChallenge());
      throw new OAuthError('invalid_token', 'an access token is required (Authorization: Bearer)');
    }
    const { clientId, claims } = await userInfo(deps, token);
    // Only the browser origins of the app the token was issued to may read the answer.
    const client = await deps.store.clients.get(clientId);
    if (client) request.oauthClient = client;
    return reply.type('application/json; charset=utf-8').send(claims);
  }

  app.get('/oauth/userinfo', (request, reply) => handle(request, reply, request.query as Record<string, unknown>));
  app.post('/oauth/userinfo', (request, reply) =>
    handle(request, reply, { ...(request.query as Record<string, unknown>), ...rawForm(request) }),
  );
};

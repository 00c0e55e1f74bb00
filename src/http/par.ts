import type { FastifyPluginAsync } from 'fastify';
import { pushAuthorizationRequest } from '../flows/par/push.ts';
import type { AppDeps } from './deps.ts';
import { clientRequest } from './client-auth.ts';
import { requestProof } from './dpop.ts';
import { PAR_PATH } from '../core/endpoints.ts';
import { formResources } from './form.ts';

/**
 * The pushed authorization request endpoint (RFC 9126 §2). §2: "the client authenticates
 * ... as it would at the token endpoint", with every method the token endpoint takes, and
 * `client_id` for a public client. The answer carries a reference to the request: never
 * cached (§2.2 refers to RFC 6749 §5.1), which `clientRequest` sees to.
 */
export const parRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post(PAR_PATH, async (request, reply) => {
    const { client, params } = await clientRequest(deps, request, reply);
    // RFC 9449 §10.1: a DPoP proof sent with the pushed request binds the code to its key.
    const proof = await requestProof(deps, request, reply, PAR_PATH);
    const response = await pushAuthorizationRequest(deps, client, params, formResources(request), proof);
    // §2.2: "the authorization server ... returns ... HTTP 201 status code".
    return reply.status(201).type('application/json; charset=utf-8').send(response);
  });
};

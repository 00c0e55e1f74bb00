import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { clientRequest } from './client-auth.ts';
import { proofRefused, requestProof } from './dpop.ts';
import { TOKEN_PATH } from '../core/endpoints.ts';
import { formResources } from './form.ts';

/**
 * The token endpoint (RFC 6749 §3.2): authenticate the client, then hand the request to the
 * grant its `grant_type` names. Each grant is one module registered in `AppDeps.grants`.
 */
export const tokenRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const grants = new Map(deps.grants.map((grant) => [grant.type as string, grant]));

  app.post(TOKEN_PATH, async (request, reply) => {
    const { client, params } = await clientRequest(deps, request, reply);
    // RFC 8707 §2.2: a token request may name several resources, but an access token here has
    // one audience (RFC 9068 §3), so the server refuses more than one.
    if (formResources(request).length > 1) throw new OAuthError('invalid_target', 'one resource per token request: an access token is for one API');
    const grantType = params['grant_type'];
    if (grantType === undefined) throw new OAuthError('invalid_request', 'grant_type is required');
    const grant = grants.get(grantType);
    if (!grant) throw new OAuthError('unsupported_grant_type', `grant_type ${grantType} is not supported`);
    if (!client.grantTypes.includes(grant.type)) {
      throw new OAuthError('unauthorized_client', `this client is not allowed the ${grantType} grant`);
    }
    // RFC 9449 §5: a token request with a valid DPoP proof gets tokens bound to its key.
    const proof = await requestProof(deps, request, reply, TOKEN_PATH);
    // RFC 9449 §5.2 dpop_bound_access_tokens: the server "MUST reject token requests from
    // this client that do not contain the DPoP header".
    // RFC 9449 defines no proof at device authorization, where client libraries send none:
    // a device code is bound here instead, at the poll (flows/device/token.ts).
    if (proof === null && client.requireDpop)
      throw proofRefused(`${deps.config.issuer}${TOKEN_PATH}`, 'this client must send a DPoP proof with every token request');
    return reply.type('application/json; charset=utf-8').send(await grant.handle(forRequest(deps, request), client, params, proof));
  });
};

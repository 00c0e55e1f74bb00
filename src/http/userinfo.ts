import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { userInfo } from '../flows/lifecycle/userinfo.ts';
import type { AppDeps } from './deps.ts';
import { accessTokenCredential, bearerChallenge, type TokenParams } from './bearer.ts';
import { asResourceError, dpopChallenge, isDpopError, requestProof, resourceChallenges } from './dpop.ts';
import { USERINFO_PATH } from '../core/endpoints.ts';
import { rawForm } from './form.ts';

/**
 * The UserInfo endpoint (OIDC Core §5.3): GET and POST alike (§5.3.1), with a Bearer access
 * token (RFC 6750: in the header, or a POST's form body) or a DPoP-bound one and its proof
 * (RFC 9449 §7).
 */
export const userinfoRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  async function handle(request: FastifyRequest, reply: FastifyReply, params: TokenParams) {
    reply.header('Cache-Control', 'no-store');
    const credential = accessTokenCredential(request, params);
    if (credential === null) {
      reply.header('WWW-Authenticate', resourceChallenges());
      throw new OAuthError('invalid_token', 'an access token is required (Authorization: Bearer, or DPoP with a proof)');
    }
    try {
      // RFC 9449 §7.1: the DPoP scheme comes with a proof of the key, made for this request
      // and this token (ath).
      const proof = credential.scheme === 'DPoP' ? await requestProof(deps, request, reply, USERINFO_PATH, credential.token) : null;
      if (credential.scheme === 'DPoP' && proof === null) throw new OAuthError('invalid_dpop_proof', 'a DPoP proof is required with the DPoP scheme');
      const { clientId, claims } = await userInfo(deps, { ...credential, proof });
      // Only the browser origins of the app the token was issued to may read the answer.
      const client = await deps.store.clients.get(clientId);
      if (client) request.oauthClient = client;
      return reply.type('application/json; charset=utf-8').send(claims);
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      // RFC 9449 §7.1: a request with the DPoP scheme, or refused for its proof, is answered
      // with the DPoP challenge, and a refused proof with 401 (§9: use_dpop_nonce too).
      if (credential.scheme === 'DPoP' || isDpopError(error)) {
        reply.header('WWW-Authenticate', dpopChallenge(error));
        throw isDpopError(error) ? asResourceError(error) : error;
      }
      // A refused bearer token may be a DPoP-bound one sent without its proof: §7.2 lets a
      // resource that takes both schemes send both challenges, so the client learns which.
      if (error.code === 'invalid_token') reply.header('WWW-Authenticate', [bearerChallenge(error), dpopChallenge(error)]);
      throw error;
    }
  }

  const query = (request: FastifyRequest) => request.query as Record<string, unknown>;
  app.get(USERINFO_PATH, (request, reply) => handle(request, reply, { query: query(request), body: {} }));
  // RFC 6750 §2.2: a POST may carry the token in its form body instead of the header.
  app.post(USERINFO_PATH, (request, reply) => handle(request, reply, { query: query(request), body: rawForm(request) }));
};

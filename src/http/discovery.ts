import type { FastifyPluginAsync } from 'fastify';
import { SUPPORTED_SCOPES } from '../core/scopes.ts';
import { ASSERTION_ALGORITHMS, TOKEN_AUTH_METHODS } from '../flows/client-auth.ts';
import { USER_CLAIMS } from '../tokens/claims.ts';
import type { AppDeps } from './deps.ts';

/**
 * OpenID Connect Discovery 1.0 §3 and RFC 8414 §2: what is implemented, exactly; nothing
 * is advertised that a client cannot use.
 */
export function discoveryMetadata(deps: AppDeps, resourceScopes: readonly string[] = []): Record<string, unknown> {
  const issuer = deps.config.issuer;
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    ...deps.extraMetadata,
    // The OpenID scopes, then every registered API's (RFC 8414 §2).
    scopes_supported: [...SUPPORTED_SCOPES, ...resourceScopes],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: deps.grants.map((grant) => grant.type),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    // OpenID Discovery §3: exactly what can be sent: the ID token's own claims and the person's (tokens/claims.ts).
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'azp', 'sid', 'amr', 'acr', ...USER_CLAIMS],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    // OIDC Discovery §3: the languages of the pages, for `ui_locales`.
    ui_locales_supported: deps.config.site.locales,
    // OIDC Core §5.5, parsed in flows/claims.ts.
    claims_parameter_supported: true,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  };
}

export const discoveryRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  // Built per request: registering an API adds its scopes to scopes_supported.
  const send = async (_request: unknown, reply: import('fastify').FastifyReply) => {
    const resourceScopes = (await deps.store.resources.list()).flatMap((resource) => resource.scopes.map((scope) => scope.name));
    return reply
      .header('Cache-Control', 'public, max-age=300')
      .header('Access-Control-Allow-Origin', '*')
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(discoveryMetadata(deps, resourceScopes)));
  };
  app.get('/.well-known/openid-configuration', send);
  app.get('/.well-known/oauth-authorization-server', send);

  // Relying parties cache this: the max-age stays well below the key publication lead time,
  // so a new key is seen by every cache before it signs anything.
  app.get('/.well-known/jwks.json', async (_request, reply) =>
    reply
      .header('Cache-Control', 'public, max-age=300')
      .header('Access-Control-Allow-Origin', '*')
      .type('application/jwk-set+json')
      .send(JSON.stringify(await deps.keys.jwks())),
  );
};

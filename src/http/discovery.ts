import type { FastifyPluginAsync } from 'fastify';
import { ACR_VALUES } from '../core/auth-methods.ts';
import { GRANT_JWT_BEARER, ID_JAG_PROFILE, REQUEST_OBJECT_ALGORITHMS } from '../core/protocol.ts';
import { SUPPORTED_SCOPES } from '../core/scopes.ts';
import { RESPONSE_MODES } from '../flows/authorization-code/request.ts';
import { ASSERTION_ALGORITHMS, INTROSPECTION_AUTH_METHODS, TOKEN_AUTH_METHODS } from '../flows/client-auth.ts';
import { DPOP_SIGNING_ALGORITHMS } from '../flows/dpop/proof.ts';
import { ORGANIZATION_CLAIMS, USER_CLAIMS } from '../tokens/claims.ts';
import type { AppDeps } from './deps.ts';
import { DISCOVERY_PATHS, endpointMetadata, JWKS_PATH, REGISTRATION_PATH } from '../core/endpoints.ts';

/**
 * OpenID Connect Discovery 1.0 §3 and RFC 8414 §2: what is implemented, exactly; nothing
 * is advertised that a client cannot use. Every entry of the document is here; where each
 * endpoint is comes from core/endpoints.ts.
 */
export function discoveryMetadata(deps: AppDeps, resourceScopes: readonly string[] = []): Record<string, unknown> {
  const issuer = deps.config.issuer;
  return {
    issuer,
    ...endpointMetadata(issuer),
    // RFC 7009 §2.1: a public client identifies itself by client_id to revoke its tokens.
    revocation_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    introspection_endpoint_auth_methods_supported: INTROSPECTION_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    // OIDC Discovery §3: the classes acr_values may ask for, and the claims saying how.
    acr_values_supported: [...ACR_VALUES],
    // RP-Initiated Logout 1.0 §2.1 and Back-Channel Logout 1.0 §2.1.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
    // RFC 9449 §5.1 and RFC 9126 §5.
    dpop_signing_alg_values_supported: DPOP_SIGNING_ALGORITHMS,
    require_pushed_authorization_requests: deps.config.par.required,
    // The OpenID scopes, then every registered API's (RFC 8414 §2).
    scopes_supported: [...SUPPORTED_SCOPES, ...resourceScopes],
    response_types_supported: ['code'],
    response_modes_supported: RESPONSE_MODES,
    grant_types_supported: deps.grants.map((grant) => grant.type),
    // draft-ietf-oauth-identity-assertion-authz-grant §6.1: the jwt-bearer grant redeems ID-JAGs.
    ...(deps.grants.some((grant) => grant.type === GRANT_JWT_BEARER) ? { authorization_grant_profiles_supported: [ID_JAG_PROFILE] } : {}),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: ASSERTION_ALGORITHMS,
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
    // OpenID Discovery §3: exactly what can be sent: the ID token's own claims and the person's (tokens/claims.ts).
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'azp', 'sid', 'amr', 'acr', ...USER_CLAIMS, ...ORGANIZATION_CLAIMS],
    prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
    // OIDC Discovery §3: the languages of the pages, for `ui_locales`.
    ui_locales_supported: deps.config.site.locales,
    // OIDC Discovery §3: the languages names are offered in for `claims_locales` (§5.2); a
    // person's names may be kept in others, which a request naming them still gets.
    claims_locales_supported: deps.config.site.locales,
    // OIDC Core §5.5, parsed in flows/claims.ts.
    claims_parameter_supported: true,
    // RFC 9101 and OIDC Core §6.1: request objects by value; by reference only through PAR.
    request_parameter_supported: true,
    request_object_signing_alg_values_supported: REQUEST_OBJECT_ALGORITHMS,
    request_uri_parameter_supported: false,
    // RFC 8414 §2: named only when apps may register themselves (TESSERA_REGISTRATION).
    ...(deps.config.registration.policy === 'off' ? {} : { registration_endpoint: `${issuer}${REGISTRATION_PATH}` }),
    // draft-ietf-oauth-client-id-metadata-document: an https client_id is its metadata's URL.
    ...(deps.config.registration.metadataDocuments.enabled ? { client_id_metadata_document_supported: true } : {}),
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
  for (const path of DISCOVERY_PATHS) app.get(path, send);

  // Relying parties cache this: the max-age stays well below the key publication lead time,
  // so a new key is seen by every cache before it signs anything.
  app.get(JWKS_PATH, async (_request, reply) =>
    reply
      .header('Cache-Control', 'public, max-age=300')
      .header('Access-Control-Allow-Origin', '*')
      .type('application/jwk-set+json')
      .send(JSON.stringify(await deps.keys.jwks())),
  );
};

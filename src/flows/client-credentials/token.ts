/**
 * RFC 6749 §4.4 (Client Credentials Grant): a client asks for an access token on its own
 * behalf, for an API, with nothing but its own authentication. "The client can request an
 * access token using only its client credentials ... when the client is requesting access
 * to the protected resources under its control" (§4.4). The token is an RFC 9068 JWT whose
 * `sub` is the client (§2.2: "In cases of access tokens obtained through grants where no
 * resource owner is involved, such as the client credentials grant, the value of sub SHOULD
 * correspond to an identifier the authorization server uses to indicate the client
 * application"). It stands for no person: there is no grant, no ID token, no refresh token.
 */
import { OAuthError } from '../../core/errors.ts';
import { GRANT_CLIENT_CREDENTIALS } from '../../core/protocol.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ResourceRecord } from '../../store/types.ts';
import { noteFirstUse } from '../registration/first-use.ts';
import { adminResource, isOpenIdScope, requestedResources, ResourceCatalog, ssfResource } from '../resources.ts';
import type { TokenGrant } from '../types.ts';

export const clientCredentialsGrant: TokenGrant = {
  type: GRANT_CLIENT_CREDENTIALS,

  async handle(deps, client, params, proof) {
    // §4.4: "The client credentials grant type MUST only be used by confidential clients."
    // The token endpoint has authenticated this one (§4.4.2: "The client MUST authenticate
    // with the authorization server as described in Section 3.2.1").
    if (client.authMethod === 'none') throw new OAuthError('unauthorized_client', 'the client_credentials grant is for confidential clients only');

    // §4.4.2 scope OPTIONAL (§3.3). Without one, the client's registered scopes of the API
    // named (or of its only API): §3.3 "the authorization server MUST either process the
    // request using a pre-defined default value or fail the request".
    const raw = params['scope'];
    const asked = raw === undefined ? null : parseScope(raw);
    if (raw !== undefined && (asked === null || asked.length === 0)) throw new OAuthError('invalid_scope', 'scope is malformed');
    const openId = (asked ?? []).filter(isOpenIdScope);
    // No person signs in: OpenID scopes (OIDC Core §3) have nobody to be about.
    if (openId.length > 0)
      throw new OAuthError('invalid_scope', `${openId.join(' ')}: OpenID scopes need a person signing in; the client_credentials grant has none`);
    const unregistered = (asked ?? []).filter((scope) => !client.scopes.includes(scope));
    // §5.2 invalid_scope: "The requested scope is invalid, unknown, malformed, or exceeds the
    // scope granted by the resource owner" (here: registered for the client).
    if (unregistered.length > 0) throw new OAuthError('invalid_scope', `not registered for this client: ${unregistered.join(' ')}`);

    // RFC 8707 §2: the API the token is for, named by resource or by the scopes' owner.
    const admin = adminResource(deps.config.issuer);
    const catalog = new ResourceCatalog([...(await deps.store.resources.list()), admin, ssfResource(deps.config.issuer)]);
    const resourceParam = params['resource'];
    let resource: ResourceRecord | undefined;
    if (resourceParam !== undefined) {
      [resource] = requestedResources(catalog, [resourceParam]);
    } else {
      const owners = [...new Set((asked ?? client.scopes.filter((scope) => !isOpenIdScope(scope))).map((scope) => catalog.ownerOf(scope)))];
      if (owners.length > 1) throw new OAuthError('invalid_target', 'the scopes belong to several APIs: name one with resource');
      resource = owners[0];
    }
    // An access token for no API would be for this server's UserInfo, which has no person to describe.
    if (resource === undefined) throw new OAuthError('invalid_target', 'name the API the token is for with resource (RFC 8707), or ask for its scopes');
    const target = resource;
    const scope = asked ?? client.scopes.filter((value) => catalog.ownerOf(value) === target);
    const elsewhere = scope.filter((value) => catalog.ownerOf(value) !== target);
    if (elsewhere.length > 0) throw new OAuthError('invalid_scope', `scope belongs to another API than the resource requested: ${elsewhere.join(' ')}`);
    if (scope.length === 0) throw new OAuthError('invalid_scope', `this client is registered for none of the scopes of ${target.identifier}`);

    // §4.4.3: "A refresh token SHOULD NOT be included."
    await noteFirstUse(deps.store.clients, client, deps.clock.now());
    const response = await deps.tokens.issueForClient({ client, scope, resource: target, dpopJkt: proof?.jkt ?? null });
    await deps.events.emit({ type: 'client.token_issued', clientId: client.id, detail: { resource: target.identifier, scope: scope.join(' ') } });
    return response;
  },
};

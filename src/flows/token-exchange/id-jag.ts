/**
 * draft-ietf-oauth-identity-assertion-authz-grant §4.3 (as the MCP enterprise profile uses it):
 * this server as the enterprise identity provider. A client holding a person's ID token from
 * here exchanges it (RFC 8693) for an Identity Assertion JWT Authorization Grant (ID-JAG) for
 * another authorization server, which redeems it for an access token to its API without
 * asking the person to sign in again (flows/jwt-bearer/token.ts is that other half).
 *
 * What the client may ask for is the operator's: the other server's issuer must be among the
 * client's exchange audiences (`tessera client add --grant token-exchange --exchange-audience
 * ISSUER`), as a registered API must be for an access token.
 */
import { OAuthError } from '../../core/errors.ts';
import { TOKEN_TYPE_ID_JAG, TOKEN_TYPE_ID_TOKEN } from '../../core/protocol.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord } from '../../store/types.ts';
import type { TokenResponse } from '../../tokens/issue.ts';
import { resourceIndicatorProblem } from '../resources.ts';
import type { FlowDeps, Params } from '../types.ts';

export async function exchangeForIdJag(
  deps: FlowDeps,
  client: ClientRecord,
  params: Params,
  refused: (description: string) => OAuthError,
): Promise<TokenResponse> {
  // §4.3.1 audience: "The Issuer Identifier of the Resource Authorization Server" (REQUIRED).
  const audience = params['audience'];
  if (audience === undefined) throw refused('audience is required for an ID-JAG: the issuer of the authorization server it is for');
  const allowed = client.exchangeAudiences ?? [];
  // RFC 8693 §2.2.2: invalid_target for a target the server is unwilling to issue a token for.
  if (!allowed.includes(audience))
    throw new OAuthError('invalid_target', `this client may not ask for an ID-JAG for ${audience}: its exchange audiences are ${allowed.join(' ') || 'none'}`);
  if ((await deps.store.resources.get(audience)) !== null)
    throw new OAuthError('invalid_target', `${audience} is an API of this server, not another authorization server: ask for an access token for it`);
  // §4.3.1 resource: "The Resource Identifier of the Resource Server" (OPTIONAL): the other
  // server's API, which this server does not know; only its form is checked.
  const resource = params['resource'] ?? null;
  if (resource !== null) {
    const problem = resourceIndicatorProblem(resource);
    if (problem) throw new OAuthError('invalid_target', `resource ${problem}`);
  }
  // §4.3.1 scope (OPTIONAL): the other server's scopes, which it narrows to what it grants.
  const rawScope = params['scope'];
  const scope = rawScope === undefined ? [] : parseScope(rawScope);
  if (scope === null || (rawScope !== undefined && scope.length === 0)) throw new OAuthError('invalid_scope', 'scope is malformed');

  // §4.3.1 subject_token_type: urn:ietf:params:oauth:token-type:id_token (SAML assertions are
  // not issued here). RFC 8693 §2.1: subject_token and its type are REQUIRED.
  const token = params['subject_token'];
  const type = params['subject_token_type'];
  if (token === undefined) throw refused('subject_token is required');
  if (type !== TOKEN_TYPE_ID_TOKEN) throw refused(`subject_token_type must be ${TOKEN_TYPE_ID_TOKEN} for an ID-JAG: the person's ID token from this server`);
  if (params['actor_token'] !== undefined || params['actor_token_type'] !== undefined)
    throw refused('an ID-JAG takes no actor_token: the client it is for is named by its own authentication');
  // §4.3.3: the IdP "MUST validate the subject token": signed here, unexpired, and issued to
  // the client exchanging it (its `aud`), so that one app cannot spend another's sign-in.
  const claims = await deps.tokens.readIdToken(token);
  if (!claims) throw refused('subject_token is not an unexpired ID token issued by this server');
  if (!claims.aud.includes(client.id)) throw refused('subject_token is an ID token issued to another client');
  const user = await deps.store.users.get(claims.sub);
  if (!user || user.disabled) throw refused('subject_token is not an unexpired ID token issued by this server');

  const response = await deps.tokens.issueIdJag({
    client,
    userId: user.id,
    audience,
    resource,
    scope,
    authTime: claims.authTime,
    email: user.email !== null && user.emailVerified ? user.email : null,
    notAfter: claims.exp,
    lifetime: deps.config.agents.idJagLifetime,
  });
  await deps.events.emit({
    type: 'token.exchanged',
    userId: user.id,
    username: user.username,
    clientId: client.id,
    detail: { issued_token_type: TOKEN_TYPE_ID_JAG, audience, resource, scope: scope.join(' ') },
  });
  return response;
}

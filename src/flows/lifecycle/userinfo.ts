/**
 * OpenID Connect Core §5.3 (UserInfo Endpoint), a resource protected by Bearer access
 * tokens (RFC 6750).
 */
import { OAuthError } from '../../core/errors.ts';
import { groupsOf, ORGANIZATION_SCOPE, organizationClaims, releasedClaims } from '../../tokens/claims.ts';
import type { FlowDeps } from '../types.ts';
import { checkSenderConstraint, liveAccessToken, type Presentation } from './access-token.ts';

export type { Presentation };

/**
 * The claims about the user that the access token's scope releases: `sub` always (OIDC Core
 * §5.3.2: "The sub Claim MUST always be returned"), then those of `profile` and `email`
 * (§5.4), and those the `claims` parameter asked for by name that the person approved (§5.5:
 * `name` alone is `name` alone), from the user record as it is now; with the client the
 * token was issued to.
 */
export async function userInfo(deps: FlowDeps, presented: Presentation): Promise<{ clientId: string; claims: Record<string, unknown> }> {
  const live = await liveAccessToken(deps, presented.token);
  // RFC 6750 §3.1: invalid_token for a token that is "expired, revoked, malformed, or invalid".
  if (!live) throw new OAuthError('invalid_token', 'the access token is invalid, expired or revoked');
  // A live token made for something else is refused as such, so its holder looks for the
  // right audience rather than for a fault in the token.
  // RFC 9068 §4: a resource server "MUST validate that the aud claim contains a resource
  // indicator value corresponding to an identifier the resource server expects for itself".
  // UserInfo is this server's own: a token made for a registered API is that API's alone.
  if (live.resource !== null) throw new OAuthError('invalid_token', 'this access token is for another audience (the API in its aud), not for UserInfo');
  // A client's own token (client_credentials) speaks for no person: UserInfo has nobody to describe.
  if (live.user === null)
    throw new OAuthError(
      'invalid_token',
      "this access token is for another audience: a client's own token (client_credentials) names no person for UserInfo to describe",
    );
  checkSenderConstraint(live.claims, presented);
  // OIDC Core §5.3: the UserInfo endpoint answers to tokens from an OpenID Connect sign-in.
  if (!live.claims.scope.includes('openid')) throw new OAuthError('insufficient_scope', 'the access token was not granted the openid scope');
  // OIDC Core §5.4 and §5.5: the scope's claims, and those asked for by name and approved.
  const { scope, userinfoClaims, claimsLocales } = live.claims;
  const groups = await groupsOf(deps.store, live.user.id, scope, userinfoClaims);
  // The organization approved for, as the grant keeps it now (a person no longer a member has none).
  const grant = scope.includes(ORGANIZATION_SCOPE) && live.claims.gid !== null ? await deps.store.grants.get(live.claims.gid) : null;
  const organization = await organizationClaims(deps.store, grant?.organizationId, live.user.id, scope);
  return {
    clientId: live.claims.client_id,
    claims: { sub: live.user.id, ...releasedClaims(live.user, scope, undefined, groups, claimsLocales, userinfoClaims), ...organization },
  };
}

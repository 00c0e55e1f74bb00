/**
 * OpenID Connect Core §5.3 (UserInfo Endpoint), a resource protected by Bearer access
 * tokens (RFC 6750).
 */
import { OAuthError } from '../../core/errors.ts';
import { scopeClaims } from '../../tokens/issue.ts';
import type { FlowDeps } from '../types.ts';
import { liveAccessToken } from './access-token.ts';

/**
 * The claims about the user that the access token's scope releases: `sub` always (OIDC Core
 * §5.3.2: "The sub Claim MUST always be returned"), then those of `profile` and `email`
 * (§5.4), from the user record as it is now; with the client the token was issued to.
 */
export async function userInfo(deps: FlowDeps, accessToken: string): Promise<{ clientId: string; claims: Record<string, unknown> }> {
  const live = await liveAccessToken(deps, accessToken);
  // RFC 6750 §3.1: invalid_token for a token that is "expired, revoked, malformed, or invalid".
  if (!live) throw new OAuthError('invalid_token', 'the access token is invalid, expired or revoked');
  // OIDC Core §5.3: the UserInfo endpoint answers to tokens from an OpenID Connect sign-in.
  if (!live.claims.scope.includes('openid')) throw new OAuthError('insufficient_scope', 'the access token was not granted the openid scope');
  return { clientId: live.claims.client_id, claims: { sub: live.user.id, ...scopeClaims(live.user, live.claims.scope) } };
}

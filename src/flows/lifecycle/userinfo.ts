/**
 * OpenID Connect Core §5.3 (UserInfo Endpoint), a resource protected by Bearer access
 * tokens (RFC 6750).
 */
import { OAuthError } from '../../core/errors.ts';
import { releasedClaims } from '../../tokens/claims.ts';
import type { FlowDeps } from '../types.ts';
import type { DpopProof } from '../dpop/proof.ts';
import { liveAccessToken } from './access-token.ts';

/** How the access token was presented: its scheme and, for DPoP, the checked proof. */
export interface Presentation {
  readonly scheme: 'Bearer' | 'DPoP';
  readonly token: string;
  readonly proof: DpopProof | null;
}

/**
 * The claims about the user that the access token's scope releases: `sub` always (OIDC Core
 * §5.3.2: "The sub Claim MUST always be returned"), then those of `profile` and `email`
 * (§5.4; a claim asked for alone in the `claims` parameter, §5.5, had its scope approved),
 * from the user record as it is now; with the client the token was issued to.
 */
export async function userInfo(deps: FlowDeps, presented: Presentation): Promise<{ clientId: string; claims: Record<string, unknown> }> {
  const live = await liveAccessToken(deps, presented.token);
  // RFC 6750 §3.1: invalid_token for a token that is "expired, revoked, malformed, or invalid".
  // A client's own token (client_credentials) speaks for no person: UserInfo has nobody to describe.
  if (!live || live.user === null) throw new OAuthError('invalid_token', 'the access token is invalid, expired or revoked');
  const { jkt } = live.claims;
  // RFC 9449 §7.2: a resource "MUST NOT grant access to the resource unless all checks are
  // successful"; a DPoP-bound token sent as a bearer token is refused, or anyone who stole
  // it could use it without the key.
  if (jkt !== null && presented.scheme !== 'DPoP') throw new OAuthError('invalid_token', 'this access token is bound to a DPoP key: send it with the DPoP scheme and a proof');
  if (jkt === null && presented.scheme === 'DPoP') throw new OAuthError('invalid_token', 'this access token is not bound to a DPoP key: send it with the Bearer scheme');
  // RFC 9449 §7.1: the resource checks "that the public key to which the access token is
  // bound matches the public key of the DPoP proof".
  if (jkt !== null && presented.proof?.jkt !== jkt) throw new OAuthError('invalid_dpop_proof', 'the DPoP proof is not signed by the key the access token is bound to');
  // OIDC Core §5.3: the UserInfo endpoint answers to tokens from an OpenID Connect sign-in.
  if (!live.claims.scope.includes('openid')) throw new OAuthError('insufficient_scope', 'the access token was not granted the openid scope');
  return { clientId: live.claims.client_id, claims: { sub: live.user.id, ...releasedClaims(live.user, live.claims.scope) } };
}

import type { ResourceRecord, UserRecord } from '../../store/types.ts';
import type { AccessTokenClaims } from '../../tokens/issue.ts';
import type { FlowDeps } from '../types.ts';

/** An access token that can still be used, with the user it speaks for. */
export interface LiveAccessToken {
  readonly claims: AccessTokenClaims;
  readonly user: UserRecord;
  /** The API it is for (its `aud`); null when it is for this server's own API (userinfo). */
  readonly resource: ResourceRecord | null;
}

/** Access tokens are JWTs (three dot-separated parts); refresh tokens are opaque. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/**
 * The access token if it is still good: signed here and unexpired, not revoked by its `jti`
 * (RFC 7009), its grant not revoked (by the user, by reuse of a code or refresh token), and
 * its user still active, and its audience this server or an API still registered (removing
 * an API ends its tokens at once). Null for anything else: callers tell nobody which check
 * failed.
 */
export async function liveAccessToken(deps: FlowDeps, token: string): Promise<LiveAccessToken | null> {
  if (!looksLikeJwt(token)) return null;
  const claims = await deps.tokens.readAccessToken(token);
  if (!claims) return null;
  const ownApi = claims.aud === deps.config.issuer;
  const [revoked, grant, user, resource] = await Promise.all([
    deps.store.accessTokens.isRevoked(claims.jti),
    deps.store.grants.get(claims.gid),
    deps.store.users.get(claims.sub),
    ownApi ? null : deps.store.resources.get(claims.aud),
  ]);
  if (revoked || !grant || grant.revokedAt !== null || grant.userId !== claims.sub || grant.clientId !== claims.client_id) return null;
  if (!user || user.disabled) return null;
  // An API registered again after the grant is another API for this grant (see grantedResources);
  // a remembered grant counts from its last approval, which may have added the API.
  if (!ownApi && (!resource || resource.createdAt > (grant.renewedAt ?? grant.createdAt))) return null;
  return { claims, user, resource };
}

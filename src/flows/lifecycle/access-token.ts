import type { UserRecord } from '../../store/types.ts';
import type { AccessTokenClaims } from '../../tokens/issue.ts';
import type { FlowDeps } from '../types.ts';

/** An access token that can still be used, with the user it speaks for. */
export interface LiveAccessToken {
  readonly claims: AccessTokenClaims;
  readonly user: UserRecord;
}

/** Access tokens are JWTs (three dot-separated parts); refresh tokens are opaque. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/**
 * The access token if it is still good: signed here and unexpired, not revoked by its `jti`
 * (RFC 7009), its grant not revoked (by the user, by reuse of a code or refresh token), and
 * its user still active. Null for anything else: callers tell nobody which check failed.
 */
export async function liveAccessToken(deps: FlowDeps, token: string): Promise<LiveAccessToken | null> {
  if (!looksLikeJwt(token)) return null;
  const claims = await deps.tokens.readAccessToken(token);
  if (!claims) return null;
  const [revoked, grant, user] = await Promise.all([
    deps.store.accessTokens.isRevoked(claims.jti),
    deps.store.grants.get(claims.gid),
    deps.store.users.get(claims.sub),
  ]);
  if (revoked || !grant || grant.revokedAt !== null || grant.userId !== claims.sub || grant.clientId !== claims.client_id) return null;
  if (!user || user.disabled) return null;
  return { claims, user };
}

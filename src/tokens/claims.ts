/**
 * The claims about a person this server can send (OIDC Core §5.1), the scope that releases
 * each (§5.4), and how each is read from the user record.
 */
import type { Store, UserRecord } from '../store/types.ts';

/** OIDC Core §5.4: the claims of `profile` and `email` this server keeps. */
export const SCOPE_CLAIMS = {
  profile: ['name', 'given_name', 'family_name', 'preferred_username', 'picture', 'locale', 'zoneinfo', 'updated_at'],
  email: ['email', 'email_verified'],
  // Not OIDC Core's: the groups the person's linked upstream identities reported (issue 28).
  groups: ['groups'],
} as const satisfies Readonly<Record<string, readonly string[]>>;

export type ClaimScope = keyof typeof SCOPE_CLAIMS;
export type UserClaim = (typeof SCOPE_CLAIMS)[ClaimScope][number];

/** Every claim about the person that can be sent, in the order above. */
export const USER_CLAIMS: readonly UserClaim[] = Object.values(SCOPE_CLAIMS).flat();

/** The scope that releases `claim`, or null for a claim this server does not keep. */
export function scopeOfClaim(claim: string): ClaimScope | null {
  for (const [scope, claims] of Object.entries(SCOPE_CLAIMS) as [ClaimScope, readonly string[]][]) {
    if (claims.includes(claim)) return scope;
  }
  return null;
}

/** A claim's value for `user`; undefined where the user has none (§5.3.2: omitted, never null). */
function claimValue(user: UserRecord, claim: UserClaim, groups: readonly string[]): string | number | boolean | readonly string[] | undefined {
  switch (claim) {
    case 'name': return user.name ?? undefined;
    case 'given_name': return user.givenName ?? undefined;
    case 'family_name': return user.familyName ?? undefined;
    case 'preferred_username': return user.username;
    case 'picture': return user.picture ?? undefined;
    case 'locale': return user.locale ?? undefined;
    case 'zoneinfo': return user.zoneinfo ?? undefined;
    // §5.1: "seconds from 1970-01-01T00:00:00Z".
    case 'updated_at': return Math.floor(user.updatedAt / 1000);
    case 'email': return user.email ?? undefined;
    // Said of an address only: without one there is nothing verified or not.
    case 'email_verified': return user.email === null ? undefined : user.emailVerified;
    case 'groups': return groups;
  }
}

/**
 * The claims `scope` releases (OIDC Core §5.4), from the user record as it is now; only
 * those named in `only` when it is given (a claims request, §5.5, for the ID token).
 */
export function releasedClaims(user: UserRecord, scope: readonly string[], only?: readonly string[], groups: readonly string[] = []): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const claim of USER_CLAIMS) {
    if (only !== undefined && !only.includes(claim)) continue;
    if (!scope.includes(scopeOfClaim(claim)!)) continue;
    const value = claimValue(user, claim, groups);
    if (value !== undefined) claims[claim] = value;
  }
  return claims;
}

/**
 * The person's groups for the `groups` claim: those their linked upstream identities last
 * reported (an OpenID provider's `groups` claim, a directory's group search), each once, in
 * order. Read only when the scope asks for them.
 */
export async function groupsOf(store: Pick<Store, 'linkedIdentities'>, userId: string, scope: readonly string[]): Promise<string[]> {
  if (!scope.includes('groups')) return [];
  const links = await store.linkedIdentities.listForUser(userId);
  return [...new Set(links.flatMap((link) => link.groups))];
}

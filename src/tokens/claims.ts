/**
 * The claims about a person this server can send (OIDC Core §5.1), the scope that releases
 * each (§5.4), and how each is read from the user record.
 */
import type { Store, UserRecord } from '../store/types.ts';
import { type Address, LOCALIZABLE_CLAIMS, type LocalizableClaim } from '../store/users.ts';

/** OIDC Core §5.4: the claims each scope asks for, every one of §5.1, in §5.4's order. */
export const SCOPE_CLAIMS = {
  profile: [
    'name',
    'family_name',
    'given_name',
    'middle_name',
    'nickname',
    'preferred_username',
    'profile',
    'picture',
    'website',
    'gender',
    'birthdate',
    'zoneinfo',
    'locale',
    'updated_at',
  ],
  email: ['email', 'email_verified'],
  address: ['address'],
  phone: ['phone_number', 'phone_number_verified'],
  // Not OIDC Core's: the groups the person's linked upstream identities reported.
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
function claimValue(user: UserRecord, claim: UserClaim, groups: readonly string[]): string | number | boolean | readonly string[] | Address | undefined {
  switch (claim) {
    case 'name':
      return user.name ?? undefined;
    case 'given_name':
      return user.givenName ?? undefined;
    case 'family_name':
      return user.familyName ?? undefined;
    case 'preferred_username':
      return user.username;
    case 'picture':
      return user.picture ?? undefined;
    case 'locale':
      return user.locale ?? undefined;
    case 'zoneinfo':
      return user.zoneinfo ?? undefined;
    // §5.1: "seconds from 1970-01-01T00:00:00Z".
    case 'updated_at':
      return Math.floor(user.updatedAt / 1000);
    case 'email':
      return user.email ?? undefined;
    // Said of an address only: without one there is nothing verified or not.
    case 'email_verified':
      return user.email === null ? undefined : user.emailVerified;
    case 'middle_name':
      return user.middleName ?? undefined;
    case 'nickname':
      return user.nickname ?? undefined;
    case 'profile':
      return user.profile ?? undefined;
    case 'website':
      return user.website ?? undefined;
    case 'gender':
      return user.gender ?? undefined;
    case 'birthdate':
      return user.birthdate ?? undefined;
    // §5.1.1: a JSON object of the members the person has.
    case 'address':
      return user.address ?? undefined;
    case 'phone_number':
      return user.phoneNumber ?? undefined;
    // As email_verified: said of a number only.
    case 'phone_number_verified':
      return user.phoneNumber === null ? undefined : user.phoneNumberVerified;
    case 'groups':
      return groups;
  }
}

/**
 * The claims `scope` releases (OIDC Core §5.4), from the user record as it is now, and
 * those asked for by name and approved (`named`, §5.5) whatever the scope; only those named
 * in `only` when it is given (a claims request for the ID token).
 */
export function releasedClaims(
  user: UserRecord,
  scope: readonly string[],
  only?: readonly string[],
  groups: readonly string[] = [],
  claimsLocales: readonly string[] = [],
  named: readonly string[] = [],
): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  for (const claim of USER_CLAIMS) {
    if (only !== undefined && !only.includes(claim)) continue;
    if (!scope.includes(scopeOfClaim(claim)!) && !named.includes(claim)) continue;
    const value = claimValue(user, claim, groups);
    if (value !== undefined) claims[claim] = value;
    // OIDC Core §5.2: a name in the languages the request's claims_locales asked for, beside
    // the plain one, which stays the default for a client that reads no tagged claims.
    if ((LOCALIZABLE_CLAIMS as readonly string[]).includes(claim)) {
      for (const tag of matchingTags(Object.keys(user.localizedNames), claimsLocales)) {
        const localized = user.localizedNames[tag]?.[claim as LocalizableClaim];
        if (localized !== undefined) claims[`${claim}#${tag}`] = localized;
      }
    }
  }
  return claims;
}

/**
 * Of the claims asked for by name (§5.5), those the person approved: each of a scope in
 * `claimsScope`, the scopes the approval page asked for them (flows/claims.ts
 * scopesForClaims). A scope the client was not registered for was not asked, and its claims
 * are not released.
 */
export function approvedClaims(named: readonly string[], claimsScope: readonly string[]): string[] {
  return named.filter((claim) => {
    const scope = scopeOfClaim(claim);
    return scope !== null && claimsScope.includes(scope);
  });
}

/**
 * The person's tags that a requested language matches by BCP 47 prefix (RFC 4647 §3.3.1
 * basic filtering, case-insensitive): `ja` matches `ja-Kana-JP`, and `ja-Kana-JP` matches
 * `ja` too, so a request more precise than the names kept still gets the language's.
 */
export function matchingTags(tags: readonly string[], requested: readonly string[]): string[] {
  const within = (range: string, tag: string) => tag === range || tag.startsWith(`${range}-`);
  return tags.filter((tag) =>
    requested.some((wanted) => {
      const [a, b] = [tag.toLowerCase(), wanted.toLowerCase()];
      return within(b, a) || within(a, b);
    }),
  );
}

/**
 * OIDC Core §5.2 `claims_locales`: a space-separated list of BCP 47 tags. A malformed tag is
 * dropped, not refused (the parameter states a preference, and the plain claims still go);
 * a bounded number is kept.
 */
export function parseClaimsLocales(value: string | null): string[] {
  if (value === null) return [];
  const tags: string[] = [];
  for (const candidate of value.split(' ').filter(Boolean)) {
    let tag: string;
    try {
      tag = Intl.getCanonicalLocales(candidate)[0]!;
    } catch {
      continue;
    }
    if (!tags.includes(tag)) tags.push(tag);
    if (tags.length === MAX_CLAIMS_LOCALES) break;
  }
  return tags;
}

/** More languages than any person reads; bounds what a request makes a code and a refresh token keep. */
const MAX_CLAIMS_LOCALES = 10;

/**
 * The person's groups for the `groups` claim: the groups provisioned over SCIM they are a
 * member of (docs/scim.md), then those their linked upstream identities last reported (an
 * OpenID provider's `groups` claim, a directory's group search), each once, in order. Read
 * only when the scope, or a claims request approved by name, asks for them (the `groups`
 * scope, as Keycloak's and authentik's group mappers release them).
 */
export async function groupsOf(
  store: Pick<Store, 'linkedIdentities' | 'groups'>,
  userId: string,
  scope: readonly string[],
  named: readonly string[] = [],
): Promise<string[]> {
  if (!scope.includes('groups') && !named.includes('groups')) return [];
  const [provisioned, links] = await Promise.all([store.groups.namesOf(userId), store.linkedIdentities.listForUser(userId)]);
  return [...new Set([...provisioned, ...links.flatMap((link) => link.groups)])];
}

/** The scope that releases `org_id` and `org_name` (docs/organizations.md). */
export const ORGANIZATION_SCOPE = 'organization';
export const ORGANIZATION_CLAIMS = ['org_id', 'org_name'] as const;

/**
 * `org_id` and `org_name` of the organization the person approved for (kept with the grant:
 * a refresh keeps it), when the scope was granted and they are still a member; none otherwise.
 * Not OIDC Core's: the claims Auth0 and WorkOS name so.
 */
export async function organizationClaims(
  store: Pick<Store, 'organizations'>,
  organizationId: string | undefined,
  userId: string,
  scope: readonly string[],
): Promise<{ org_id?: string; org_name?: string }> {
  if (!scope.includes(ORGANIZATION_SCOPE) || organizationId === undefined) return {};
  const membership = (await store.organizations.membershipsOf(userId)).find((one) => one.organization.id === organizationId);
  return membership === undefined ? {} : { org_id: membership.organization.id, org_name: membership.organization.name };
}

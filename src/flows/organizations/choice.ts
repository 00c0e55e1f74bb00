/**
 * Which organization an approval is for (docs/organizations.md): with the `organization`
 * scope, the tokens carry `org_id` and `org_name` of one organization the person is a member
 * of. One membership is that one; with several, the person chooses on the approval page, and
 * the choice is kept with the grant (a refresh, and a later approval that asks nothing new,
 * keep it while they are still a member).
 */
import type { Membership } from '../../store/types.ts';
import { ORGANIZATION_SCOPE } from '../../tokens/claims.ts';

export type OrganizationChoice =
  /** Nothing to choose: the scope was not asked, or the person is in no organization. */
  | { readonly kind: 'none' }
  | { readonly kind: 'chosen'; readonly organizationId: string }
  /** The person must choose among these (nothing chosen yet, or a choice that is not theirs). */
  | { readonly kind: 'choose'; readonly organizations: readonly { readonly id: string; readonly name: string }[] };

/**
 * The organization of an approval of `scope` by a person with `memberships`: the one
 * `posted` on the approval page (if it is one of theirs), else their only one, else the one
 * their remembered grant keeps (if they are still in it).
 */
export function organizationChoice(
  memberships: readonly Membership[],
  scope: readonly string[],
  posted: string | null,
  remembered: string | undefined,
): OrganizationChoice {
  if (!scope.includes(ORGANIZATION_SCOPE) || memberships.length === 0) return { kind: 'none' };
  const theirs = (id: string | null | undefined) => memberships.find((membership) => membership.organization.id === id);
  const choose = { kind: 'choose', organizations: memberships.map(({ organization }) => ({ id: organization.id, name: organization.name })) } as const;
  if (posted !== null) return theirs(posted) ? { kind: 'chosen', organizationId: posted } : choose;
  if (memberships.length === 1) return { kind: 'chosen', organizationId: memberships[0]!.organization.id };
  const kept = theirs(remembered);
  return kept ? { kind: 'chosen', organizationId: kept.organization.id } : choose;
}

/**
 * The organizations an approval page offers as a choice (the consent page, the device's
 * approval page): the person's, when the scope asks for one and they are in several; none
 * otherwise, since one membership is that one.
 */
export function organizationsToChoose(memberships: readonly Membership[], scope: readonly string[]): readonly { readonly id: string; readonly name: string }[] {
  return scope.includes(ORGANIZATION_SCOPE) && memberships.length > 1
    ? memberships.map(({ organization }) => ({ id: organization.id, name: organization.name }))
    : [];
}

/**
 * The sign-in policy the person's organizations add (flows/second-factor/policy.ts): a member
 * of one that requires a passkey, or a second factor, approves apps only after such a sign-in.
 * Every organization they are in counts, whichever they sign in for: the strictest holds.
 */
export function organizationPolicy(memberships: readonly Membership[]): { readonly requirePasskey: boolean; readonly requireSecondFactor: boolean } {
  return {
    requirePasskey: memberships.some(({ organization }) => organization.requirePasskey),
    requireSecondFactor: memberships.some(({ organization }) => organization.requireSecondFactor),
  };
}

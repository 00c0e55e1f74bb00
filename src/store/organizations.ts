/**
 * Organizations (docs/organizations.md): groups of people who sign in to the same apps as one
 * customer, each with its members and their roles, a verified e-mail domain that sends its
 * people's sign-in to its own upstream provider, and a sign-in policy of its own.
 */
import type { OperatorRole } from '../core/scopes.ts';

/** What a member may do in the organization: `owner` and `admin` manage it, `member` belongs. */
export type OrganizationRole = 'owner' | 'admin' | 'member';
export const ORGANIZATION_ROLES: readonly OrganizationRole[] = ['owner', 'admin', 'member'];

export function isOrganizationRole(value: unknown): value is OrganizationRole {
  return typeof value === 'string' && (ORGANIZATION_ROLES as readonly string[]).includes(value);
}

export interface OrganizationRecord {
  /** Given by the server: the `org_id` claim. */
  readonly id: string;
  /** Unique without regard to case: the `org_name` claim, and what the consent page shows. */
  readonly name: string;
  /** Its e-mail domain, lower-cased; null: none. */
  readonly domain: string | null;
  /** The operator vouched that the domain is the organization's: only then does it route sign-in. */
  readonly domainVerified: boolean;
  /** The upstream identity provider its verified domain's people sign in through; null: none. */
  readonly providerId: string | null;
  /** Its members approve apps only after signing in with a passkey. */
  readonly requirePasskey: boolean;
  /** Its members approve apps only after a sign-in with a second factor. */
  readonly requireSecondFactor: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export interface OrganizationMemberRecord {
  readonly organizationId: string;
  readonly userId: string;
  readonly role: OrganizationRole;
  readonly createdAt: number;
}

/** A person's membership, with the organization it is in. */
export interface Membership {
  readonly organization: OrganizationRecord;
  readonly role: OrganizationRole;
}

export interface OrganizationStore {
  /** Throws DuplicateError when the name (without case) or a verified domain is taken. */
  create(organization: OrganizationRecord): Promise<void>;
  get(id: string): Promise<OrganizationRecord | null>;
  /** By its name, without regard to case. */
  byName(name: string): Promise<OrganizationRecord | null>;
  /** The organization whose verified domain `domain` (lower-cased) is, if any. */
  byVerifiedDomain(domain: string): Promise<OrganizationRecord | null>;
  list(): Promise<OrganizationRecord[]>;
  /** Writes every field but the id and createdAt; false when there is none. Throws DuplicateError as `create`. */
  update(organization: OrganizationRecord): Promise<boolean>;
  /** Removes it with its memberships; the grants given for it keep no organization. */
  remove(id: string): Promise<boolean>;
  /** Adds the person, or gives a member the role: one statement either way. */
  setMember(member: OrganizationMemberRecord): Promise<void>;
  /** Adds the person unless a member already (whose role stays): one statement; false when they were one. */
  join(member: OrganizationMemberRecord): Promise<boolean>;
  removeMember(organizationId: string, userId: string): Promise<boolean>;
  /** The members, oldest first, with their usernames and console roles (`UserRecord.role`). */
  members(organizationId: string): Promise<(OrganizationMemberRecord & { readonly username: string; readonly consoleRole: OperatorRole | null })[]>;
  /** The person's memberships, by organization name. */
  membershipsOf(userId: string): Promise<Membership[]>;
}

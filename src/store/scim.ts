/**
 * SCIM 2.0 provisioning (RFC 7643, RFC 7644; docs/scim.md): the tokens a provisioning system
 * calls with, what SCIM keeps of a person beyond their standard claims, and groups with their
 * members.
 */
import type { UserRecord } from './users.ts';

/** A long-lived bearer token a provisioning system (Entra ID, Okta) calls `/scim/v2` with. */
export interface ScimTokenRecord {
  readonly id: string;
  /** Who it was made for ("Entra ID"): unique. */
  readonly name: string;
  /** `hashSecret` of the token: the token itself is shown once, when made. */
  readonly tokenHash: string;
  readonly createdAt: number;
  /** When it was last presented and accepted; null: never. */
  readonly lastUsedAt: number | null;
}

export interface ScimTokenStore {
  /** Throws `DuplicateError` when the name or the hash is taken. */
  create(token: ScimTokenRecord): Promise<void>;
  /** The token whose hash this is, or null. */
  findByHash(tokenHash: string): Promise<ScimTokenRecord | null>;
  /** Records a use (at most once a minute is enough for the list to say it is alive). */
  markUsed(id: string, now: number): Promise<void>;
  /** Every token, oldest first. */
  list(): Promise<ScimTokenRecord[]>;
  /** False when there was none. */
  remove(id: string): Promise<boolean>;
}

/** A comparison of a SCIM filter (RFC 7644 §3.4.2.2) that a list's search hands the database. */
export type ScimSearchOp = 'eq' | 'ne' | 'co' | 'sw' | 'ew' | 'gt' | 'ge' | 'lt' | 'le';

/**
 * A SCIM filter over the fields the database holds (`F`), in two-valued logic: a value that is
 * not there matches no comparison but `ne` (and `present` fails), so that `not` is the
 * filter's own. Text compares as each field's SCIM attribute does (its case kept for `id`,
 * `externalId` and `members`, ignored for the rest); times (`created`, `lastModified`) are
 * milliseconds since the epoch; `active` compares with true or false. A multi-valued field
 * (`emails`, `members`) matches when any of its values does (`ne`: when none is equal).
 */
export type ScimCondition<F extends string> =
  | { readonly kind: 'and' | 'or'; readonly left: ScimCondition<F>; readonly right: ScimCondition<F> }
  | { readonly kind: 'not'; readonly condition: ScimCondition<F> }
  | { readonly kind: 'present'; readonly field: F }
  | { readonly kind: 'compare'; readonly field: F; readonly op: ScimSearchOp; readonly value: string | number | boolean };

/**
 * One page of a list (RFC 7644 §3.4.2): the resources `where` holds for (all: null), ordered by
 * `sortBy` (those without a value last if ascending and first if descending, §3.4.2.3; then oldest first), from `offset`.
 */
export interface ScimSearch<F extends string> {
  readonly where: ScimCondition<F> | null;
  readonly sortBy: F | null;
  readonly descending: boolean;
  readonly offset: number;
  readonly limit: number;
}

/** The fields of a User a search filters and sorts on: its columns, and the e-mail addresses SCIM keeps. */
export type UserSearchField = 'id' | 'userName' | 'externalId' | 'active' | 'displayName' | 'emails' | 'created' | 'lastModified';
/** The fields of a Group a search filters and sorts on (`members`: its members' ids). */
export type GroupSearchField = 'id' | 'displayName' | 'externalId' | 'members' | 'created' | 'lastModified';

/**
 * What SCIM keeps of a person that their account's standard claims do not hold (RFC 7643
 * §4.1): the provisioning system's `externalId`, and the other attributes as given (`title`,
 * `userType`, the enterprise extension), by their SCIM names. Removed with the account.
 */
export interface ScimUserRecord {
  readonly userId: string;
  readonly externalId: string | null;
  readonly attributes: Readonly<Record<string, unknown>>;
}

export interface ScimUserStore {
  get(userId: string): Promise<ScimUserRecord | null>;
  list(): Promise<ScimUserRecord[]>;
  /** Stores or replaces the record of its user. */
  put(record: ScimUserRecord): Promise<void>;
  /** Which of `userIds` are accounts (a group's members must be). */
  existing(userIds: readonly string[]): Promise<string[]>;
  /** One page of the accounts a search finds, each with SCIM's record of it (null: none), and how many it finds in all. */
  search(
    search: ScimSearch<UserSearchField>,
  ): Promise<{ readonly total: number; readonly users: readonly { readonly user: UserRecord; readonly scim: ScimUserRecord | null }[] }>;
}

/** A group (RFC 7643 §4.2): its name is what the `groups` claim carries. */
export interface GroupRecord {
  readonly id: string;
  /** Unique, compared without regard to case. */
  readonly displayName: string;
  readonly externalId: string | null;
  readonly createdAt: number;
  /** Its version: every change to it or its members moves it on. */
  readonly updatedAt: number;
}

export interface GroupStore {
  /** Throws `DuplicateError` when the name is taken. */
  create(group: GroupRecord): Promise<void>;
  get(id: string): Promise<GroupRecord | null>;
  list(): Promise<GroupRecord[]>;
  /**
   * Renames it and sets its external id, and its version to `now`, only while it is at
   * `expectedUpdatedAt` (one conditional statement); false when it changed since or is gone.
   * Throws `DuplicateError` when the name is another group's.
   */
  update(id: string, changes: { readonly displayName: string; readonly externalId: string | null }, expectedUpdatedAt: number, now: number): Promise<boolean>;
  /** False when there was none. Its memberships go with it. */
  remove(id: string): Promise<boolean>;
  /** The ids of its members. */
  members(groupId: string): Promise<string[]>;
  /** Every membership. */
  memberships(): Promise<{ readonly groupId: string; readonly userId: string }[]>;
  /** Adds a member (already one: nothing changes). */
  addMember(groupId: string, userId: string): Promise<void>;
  removeMember(groupId: string, userId: string): Promise<void>;
  /** The groups a person is in, by name. */
  namesOf(userId: string): Promise<string[]>;
  /** The groups a person is in, by name, with their ids (a User's `groups`). */
  groupsOf(userId: string): Promise<{ readonly id: string; readonly displayName: string }[]>;
  /** A group's members, by id, with their usernames (a Group's `members`). */
  membersNamed(groupId: string): Promise<{ readonly id: string; readonly username: string }[]>;
  /** Every membership with the member's username: many groups' `members` in one statement. */
  everyMemberNamed(): Promise<{ readonly groupId: string; readonly id: string; readonly username: string }[]>;
  /** One page of the groups a search finds, and how many it finds in all. */
  search(search: ScimSearch<GroupSearchField>): Promise<{ readonly total: number; readonly groups: readonly GroupRecord[] }>;
}

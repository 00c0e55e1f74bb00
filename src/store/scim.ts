/**
 * SCIM 2.0 provisioning (RFC 7643, RFC 7644; docs/scim.md): the tokens a provisioning system
 * calls with, what SCIM keeps of a person beyond their standard claims, and groups with their
 * members.
 */

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
}

/**
 * The people who sign in, and their profile claims (OIDC Core §5.1).
 */
import type { OperatorRole } from '../core/scopes.ts';

/** OIDC Core §5.1.1 Address Claim: each member optional; `formatted` and `street_address` may hold several lines. */
export const ADDRESS_MEMBERS = ['formatted', 'street_address', 'locality', 'region', 'postal_code', 'country'] as const;
export type Address = Readonly<Partial<Record<(typeof ADDRESS_MEMBERS)[number], string>>>;

/** A person who signs in. `id` is the OIDC `sub`: stable, never reassigned. */
/** The claims that can be given per language (OIDC Core §5.2), under their claim names. */
export const LOCALIZABLE_CLAIMS = ['name', 'given_name', 'family_name'] as const;
export type LocalizableClaim = (typeof LOCALIZABLE_CLAIMS)[number];
/** By BCP 47 language tag, the names in that language; a tag with no name is not kept. */
export type LocalizedNames = Readonly<Record<string, Readonly<Partial<Record<LocalizableClaim, string>>>>>;

export interface UserRecord {
  readonly id: string;
  /** Unique; stored as given (the flows normalise it before it gets here). */
  readonly username: string;
  /** PHC-format argon2id. */
  readonly passwordHash: string;
  readonly name: string | null;
  readonly email: string | null;
  readonly emailVerified: boolean;
  /**
   * Whoever made the account chose its address themselves (self-service sign-up with the link
   * later) and it has been neither verified nor replaced since: nobody vouches that it is theirs,
   * so the account may have been made with someone else's address, waiting for them
   * (flows/users.ts `proveAddressIn`). False for every account an operator, SCIM, an invitation
   * or an upstream provider made. Only `create` sets it; `update` clears it.
   */
  readonly emailSelfAsserted: boolean;
  /** OIDC Core §5.1 `given_name`, `family_name`, `locale` (BCP 47), `zoneinfo` (IANA), `picture` (a URL). */
  readonly givenName: string | null;
  readonly familyName: string | null;
  readonly locale: string | null;
  readonly zoneinfo: string | null;
  readonly picture: string | null;
  /** OIDC Core §5.1 `middle_name`, `nickname`, `profile` and `website` (URLs), `gender`, `birthdate` (YYYY or YYYY-MM-DD). */
  readonly middleName: string | null;
  readonly nickname: string | null;
  readonly profile: string | null;
  readonly website: string | null;
  readonly gender: string | null;
  readonly birthdate: string | null;
  /** OIDC Core §5.1 `phone_number` (E.164, e.g. +1 (425) 555-1212) and `phone_number_verified`. */
  readonly phoneNumber: string | null;
  readonly phoneNumberVerified: boolean;
  /** OIDC Core §5.1.1: their postal address, by its members; null: none. */
  readonly address: Address | null;
  /**
   * OIDC Core §5.2: the person's names in other languages and scripts, by BCP 47 tag
   * (`ja-Kana-JP`), sent as `name#ja-Kana-JP` when a request's `claims_locales` asks for one.
   */
  readonly localizedNames: LocalizedNames;
  readonly disabled: boolean;
  /** What the person may do in the operator console (core/scopes.ts); null: no entry. */
  readonly role: OperatorRole | null;
  readonly createdAt: number;
  /** OIDC Core §5.1 `updated_at`: when the profile last changed (its creation at first). */
  readonly updatedAt: number;
}

/**
 * A new account's record: the fields not given at their defaults (no profile claims, e-mail
 * address not verified, enabled), `updatedAt` its creation.
 */
export function newUserRecord(fields: Pick<UserRecord, 'id' | 'username' | 'passwordHash' | 'createdAt'> & Partial<UserRecord>): UserRecord {
  return {
    name: null,
    email: null,
    emailVerified: false,
    emailSelfAsserted: false,
    givenName: null,
    familyName: null,
    locale: null,
    zoneinfo: null,
    picture: null,
    localizedNames: {},
    middleName: null,
    nickname: null,
    profile: null,
    website: null,
    gender: null,
    birthdate: null,
    phoneNumber: null,
    phoneNumberVerified: false,
    address: null,
    disabled: false,
    role: null,
    updatedAt: fields.createdAt,
    ...fields,
  };
}

/** The standard claims of a person an operator may change (OIDC Core §5.1); null clears one. */
export interface UserProfileChanges {
  readonly name?: string | null;
  readonly givenName?: string | null;
  readonly familyName?: string | null;
  readonly email?: string | null;
  readonly emailVerified?: boolean;
  readonly locale?: string | null;
  readonly zoneinfo?: string | null;
  readonly picture?: string | null;
  readonly middleName?: string | null;
  readonly nickname?: string | null;
  readonly profile?: string | null;
  readonly website?: string | null;
  readonly gender?: string | null;
  readonly birthdate?: string | null;
  readonly phoneNumber?: string | null;
  readonly phoneNumberVerified?: boolean;
  /** Replaces the whole address; null clears it. */
  readonly address?: Address | null;
  /** Replaces every name in other languages (the flows merge a change into the ones kept). */
  readonly localizedNames?: LocalizedNames;
}

/** The text fields of `UserProfileChanges`, as the store writes them. */
export const USER_PROFILE_TEXT_FIELDS = [
  'name',
  'givenName',
  'familyName',
  'email',
  'locale',
  'zoneinfo',
  'picture',
  'middleName',
  'nickname',
  'profile',
  'website',
  'gender',
  'birthdate',
  'phoneNumber',
] as const satisfies readonly (keyof UserProfileChanges)[];

/**
 * An account whose e-mail address the upgrade to unique addresses (migration 37) took away,
 * because another account (`keptBy`) had it too, and that has not been changed since.
 */
export interface ClearedEmail {
  readonly userId: string;
  readonly username: string;
  readonly email: string;
  readonly emailVerified: boolean;
  /** The username of the account that kept the address; null: since removed. */
  readonly keptBy: string | null;
  readonly clearedAt: number;
}

export interface UserStore {
  /**
   * Throws `DuplicateError` when the username is taken (its `field` `username`), or the e-mail
   * address is another account's, compared without case (`email`).
   */
  create(user: UserRecord): Promise<void>;
  get(id: string): Promise<UserRecord | null>;
  findByUsername(username: string): Promise<UserRecord | null>;
  /** The accounts whose e-mail address is `email`, compared without case (at most ten, oldest first). */
  findByEmail(email: string): Promise<UserRecord[]>;
  list(): Promise<UserRecord[]>;
  /** False when there is no such user. Ending their sessions is the caller's, in the same transaction. */
  setDisabled(id: string, disabled: boolean): Promise<boolean>;
  /** Gives the user an operator role, or none (null); false when there is no such user. */
  setRole(id: string, role: OperatorRole | null): Promise<boolean>;
  /**
   * Changes the profile fields given (null clears one), and `updatedAt` to `now`, in one
   * statement; false when there is no such user. Changes that verify the address, or give
   * another one (compared without case), clear `emailSelfAsserted` in the same statement: the
   * address is proved, or someone other than the account's maker chose it. Throws `DuplicateError` (`field` `email`)
   * when the e-mail address is another account's, compared without case.
   */
  update(id: string, changes: UserProfileChanges, now: number): Promise<boolean>;
  /**
   * Sets `updatedAt` to `now` if it is still `expectedUpdatedAt`, in one conditional
   * statement: an If-Match precondition (RFC 9110 §13.1.1) taken as the first write of a
   * change's transaction, so two changes made against the same version cannot both pass.
   * False when the user changed since (or is gone).
   */
  touch(id: string, expectedUpdatedAt: number, now: number): Promise<boolean>;
  /** Replaces the password hash (PHC argon2id); false when there is no such user. */
  setPasswordHash(id: string, passwordHash: string): Promise<boolean>;
  /**
   * Deletes the user row (its password resets go with it). Everything else that names the
   * user (sessions, grants, device requests) must be removed first, in the same transaction.
   */
  remove(id: string): Promise<boolean>;
  /**
   * Gives the user another username (stored as given: the flows normalise it), in one
   * conditional statement; false when another user has it, or there is no such user.
   */
  rename(id: string, username: string): Promise<boolean>;
  /** The accounts the upgrade to unique e-mail addresses left without theirs, unchanged since, oldest first. */
  clearedEmails(): Promise<ClearedEmail[]>;
}

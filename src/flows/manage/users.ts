/**
 * Managing people's accounts: the one implementation the `tessera user` commands and the
 * admin API call. The changes themselves are flows/users.ts's (also used by /account and
 * reset links); this adds finding the user, checking the input, and telling the apps of the
 * sessions a change ended.
 */
import { linkedIdentitiesOf, type LinkedIdentityView } from '../upstream/accounts.ts';
import { randomUUID } from 'node:crypto';
import type { AuditEvent } from '../../core/events.ts';
import { hashPassword } from '../../core/password.ts';
import { isOperatorRole, OPERATOR_ROLES, type OperatorRole } from '../../core/scopes.ts';
import { normalizeUsername } from '../../core/username.ts';
import { DuplicateError, newUserRecord, type PasskeyRecord, type SessionRecord, type UserProfileChanges, type UserRecord } from '../../store/types.ts';
import type { Address, LocalizedNames } from '../../store/users.ts';
import { transactionWithEvents } from '../events.ts';
import { endSessionsIn } from '../session/session.ts';
import { checkProfile, type LocalizedNamesInput, mergeLocalizedNames } from '../profile.ts';
import { listPasskeys } from '../passkeys/authentication.ts';
import { RECOVERY_CODE_COUNT, totpStatus } from '../second-factor/codes.ts';
import { resetSecondFactor } from '../second-factor/reset.ts';
import {
  createResetLink,
  DEFAULT_RESET_TTL_SECONDS,
  passwordProblem,
  removeUser as removeAccount,
  setUserDisabled,
  setUserPassword as replacePassword,
  updateUser as updateAccount,
} from '../users.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { checkMayChangeUser, mayAssignRole } from './authority.ts';
import { conflict, field, forbidden, invalid, notFound, problem, rejected } from './errors.ts';

export { DEFAULT_RESET_TTL_SECONDS, RECOVERY_CODE_COUNT };

/** What a username may be: 1-64 letters, digits or . _ @ + - (the rule every door shares, sign-up too). */
export const USERNAME = /^[\p{L}\p{N}._@+-]{1,64}$/u;
/** Bounds on a reset link's life: a minute to thirty days. */
export const RESET_TTL_RANGE = { min: 60, max: 30 * 86400 } as const;

/** The standard claims of a person (OIDC Core §5.1), by their claim names; null or "" clears one. */
export interface ProfileInput {
  readonly name?: string | null;
  readonly given_name?: string | null;
  readonly family_name?: string | null;
  readonly email?: string | null;
  readonly email_verified?: boolean;
  readonly locale?: string | null;
  readonly zoneinfo?: string | null;
  readonly picture?: string | null;
  readonly middle_name?: string | null;
  readonly nickname?: string | null;
  readonly profile?: string | null;
  readonly website?: string | null;
  readonly gender?: string | null;
  readonly birthdate?: string | null;
  readonly phone_number?: string | null;
  readonly phone_number_verified?: boolean;
  /** §5.1.1: the whole postal address, by its members; null clears it. */
  readonly address?: Address | null;
  /**
   * OIDC Core §5.2: names in other languages and scripts, by BCP 47 tag, laid over those kept
   * (a tag or a name given null or "" is removed): `{ "ja-Kana-JP": { "name": "ヤマダ タロウ" } }`.
   */
  readonly localized_names?: LocalizedNamesInput;
}

export interface UserInput extends ProfileInput {
  readonly username?: string;
  readonly password?: string;
}

/** A user as `user list --json` and the admin API give them; never a password hash. */
export function userJson(user: UserRecord): Record<string, unknown> {
  return {
    sub: user.id,
    username: user.username,
    name: user.name,
    given_name: user.givenName,
    family_name: user.familyName,
    email: user.email,
    email_verified: user.emailVerified,
    locale: user.locale,
    zoneinfo: user.zoneinfo,
    picture: user.picture,
    middle_name: user.middleName,
    nickname: user.nickname,
    profile: user.profile,
    website: user.website,
    gender: user.gender,
    birthdate: user.birthdate,
    phone_number: user.phoneNumber,
    phone_number_verified: user.phoneNumberVerified,
    address: user.address,
    localized_names: user.localizedNames,
    disabled: user.disabled,
    role: user.role,
    created_at: new Date(user.createdAt).toISOString(),
    updated_at: new Date(user.updatedAt).toISOString(),
  };
}

/** The user a username names; an unknown one is `not_found`. */
export async function findUser(deps: Pick<ManageDeps, 'store'>, raw: string): Promise<UserRecord> {
  const username = normalizeUsername(raw);
  const user = username ? await deps.store.users.findByUsername(username) : null;
  if (!user) throw notFound`no user named ${raw}`;
  return user;
}

/**
 * The user a change is about, when the caller may change them: a person who holds a console
 * role is changed only by a caller holding everything that role allows (else a
 * narrower credential resets an operator's password or second factor and becomes them).
 */
async function changeableUser(deps: ManageDeps, raw: string): Promise<UserRecord> {
  const user = await findUser(deps, raw);
  checkMayChangeUser(deps.caller, user);
  return user;
}

function checkPassword(password: string): string {
  const problem = passwordProblem(password);
  if (problem) throw rejected`${problem}`;
  return password;
}

/** The standard claims given, checked as OIDC Core §5.1 describes them (flows/profile.ts). */
function checkedProfile(input: ProfileInput, kept: LocalizedNames = {}): UserProfileChanges {
  const given: Record<string, unknown> = {};
  const fields: readonly [keyof ProfileInput, keyof UserProfileChanges][] = [
    ['name', 'name'],
    ['given_name', 'givenName'],
    ['family_name', 'familyName'],
    ['email', 'email'],
    ['email_verified', 'emailVerified'],
    ['locale', 'locale'],
    ['zoneinfo', 'zoneinfo'],
    ['picture', 'picture'],
    ['middle_name', 'middleName'],
    ['nickname', 'nickname'],
    ['profile', 'profile'],
    ['website', 'website'],
    ['gender', 'gender'],
    ['birthdate', 'birthdate'],
    ['phone_number', 'phoneNumber'],
    ['phone_number_verified', 'phoneNumberVerified'],
    ['address', 'address'],
  ];
  for (const [claim, key] of fields) if (input[claim] !== undefined) given[key] = input[claim];
  const checked = checkProfile(given as UserProfileChanges);
  if (!checked.ok) throw invalid`${field(checked.claim)} ${checked.problem}`;
  if (input.localized_names === undefined) return checked.changes;
  const merged = mergeLocalizedNames(kept, input.localized_names);
  if (!merged.ok) throw invalid`${field(merged.claim)} ${merged.problem}`;
  return { ...checked.changes, localizedNames: merged.names };
}

/** The hash of a password an operation sets: on the server's password queue when it has one. */
function newPasswordHash(deps: ManageDeps, password: string): Promise<string> {
  return deps.hashPassword ? deps.hashPassword(password) : hashPassword(password, deps.config.passwordHash);
}

export async function createUser(deps: ManageDeps, input: UserInput): Promise<UserRecord> {
  const username = normalizeUsername(input.username ?? '');
  if (!username) throw invalid`${field('username')} is required`;
  if (!USERNAME.test(username)) throw invalid`${field('username')}: 1-64 letters, digits or . _ @ + -`;
  if (input.password === undefined) throw invalid`${field('password')} is required`;
  const profile = checkedProfile(input);
  const password = checkPassword(input.password);
  const user = newUserRecord({
    id: randomUUID(),
    username,
    passwordHash: await newPasswordHash(deps, password),
    ...profile,
    createdAt: deps.clock.now(),
  });
  try {
    await deps.store.users.create(user);
  } catch (error) {
    if (error instanceof DuplicateError && error.field === 'email') throw emailTaken(user.email);
    if (error instanceof DuplicateError) throw conflict`a user named ${username} already exists`;
    throw error;
  }
  await deps.events.emit({ type: 'user.created', userId: user.id, username, detail: { by: 'operator' } });
  return user;
}

/** An e-mail address is one account's, compared without case, whichever door made it (migration 37). */
function emailTaken(email: string | null | undefined) {
  return conflict`${field('email')} ${email ?? ''}: another account has this e-mail address`;
}

export interface UserQuery {
  /** Users whose username, name or e-mail address contains this, case-insensitively. */
  readonly q?: string;
  readonly offset?: number;
  readonly limit?: number;
}

export async function listUsers(deps: Pick<ManageDeps, 'store'>, query: UserQuery = {}): Promise<UserRecord[]> {
  const all = await deps.store.users.list();
  const q = query.q?.toLowerCase();
  const matching = q === undefined ? all : all.filter((user) => [user.username, user.name, user.email].some((value) => value?.toLowerCase().includes(q)));
  const offset = query.offset ?? 0;
  return query.limit === undefined ? matching.slice(offset) : matching.slice(offset, offset + query.limit);
}

/** The user's browser sessions live now, newest first. */
export async function listUserSessions(deps: Pick<ManageDeps, 'store' | 'clock'>, username: string): Promise<SessionRecord[]> {
  const user = await findUser(deps, username);
  return deps.store.sessions.listForUser(user.id, deps.clock.now());
}

/** Signs the user out everywhere: every session ends; returns how many, and how many apps were told. */
export async function endUserSessions(deps: ManageDeps, username: string): Promise<{ sessions: number; told: number }> {
  const user = await changeableUser(deps, username);
  const ended = await transactionWithEvents(deps, async (tx, record) => {
    const sessions = await endSessionsIn(tx, user.id);
    await record({ type: 'logout', userId: user.id, username: user.username, detail: { sessions_ended: sessions.length, by: 'operator' } });
    return sessions;
  });
  return { sessions: ended.length, told: await deps.tellApps(ended) };
}

export interface UserDetails {
  readonly user: UserRecord;
  /** Approvals not revoked. */
  readonly grants: number;
  readonly lastSignIn: AuditEvent | null;
  readonly passkeys: readonly PasskeyRecord[];
  readonly totp: { readonly enabled: boolean; readonly recoveryCodesLeft: number };
  /** The upstream identities they sign in through. */
  readonly identities: readonly LinkedIdentityView[];
}

/** A user, their approvals, last sign-in, passkeys and one-time codes. */
export async function userDetails(deps: Pick<ManageDeps, 'store'>, username: string): Promise<UserDetails> {
  const user = await findUser(deps, username);
  const grants = await deps.store.grants.listForUser(user.id);
  const [lastSignIn] = await deps.store.events.list({ userId: user.id, type: 'signin.succeeded', limit: 1 });
  const [passkeys, totp, identities] = await Promise.all([listPasskeys(deps, user.id), totpStatus(deps, user.id), linkedIdentitiesOf(deps, user.id)]);
  return { user, grants: grants.length, lastSignIn: lastSignIn ?? null, passkeys, totp, identities };
}

export function userDetailsJson(details: UserDetails): Record<string, unknown> {
  const { user, grants, lastSignIn, passkeys, totp, identities } = details;
  return {
    ...userJson(user),
    grants,
    last_sign_in: lastSignIn === null ? null : { at: new Date(lastSignIn.at).toISOString(), ip: lastSignIn.ip, user_agent: lastSignIn.userAgent },
    passkeys: passkeys.map((passkey) => ({
      id: passkey.id,
      name: passkey.name,
      synced: passkey.deviceType === 'multiDevice',
      created_at: new Date(passkey.createdAt).toISOString(),
      last_used_at: isoTime(passkey.lastUsedAt),
    })),
    one_time_codes: totp.enabled,
    recovery_codes_left: totp.recoveryCodesLeft,
    linked_identities: identities.map((identity) => ({
      provider: identity.providerId,
      provider_name: identity.providerName,
      subject: identity.subject,
      label: identity.label,
      groups: identity.groups,
      linked_at: new Date(identity.linkedAt).toISOString(),
      last_used_at: isoTime(identity.lastUsedAt),
    })),
  };
}

export interface UserChanges extends ProfileInput {
  /** The operator console's role (core/scopes.ts OPERATOR_ROLES); null takes it away. */
  readonly role?: string | null;
}

/**
 * Changes a user's standard claims (OIDC Core §5.1; null or "" clears one; `updated_at`
 * becomes now) and their operator role. The caller may give or take away only a role that
 * allows no more than they hold, and change a person with a role only if they hold
 * everything it allows (flows/manage/authority.ts).
 */
export async function updateUser(deps: ManageDeps, username: string, changes: UserChanges, expectedVersion?: string): Promise<UserRecord> {
  const { role: rawRole, ...claims } = changes;
  const user = await findUser(deps, username);
  const profile = checkedProfile(claims, user.localizedNames);
  let role: OperatorRole | null | undefined;
  if (rawRole !== undefined && rawRole !== null && rawRole !== 'none' && !isOperatorRole(rawRole)) {
    throw invalid`${field('role')} ${rawRole}: one of ${OPERATOR_ROLES.join(', ')}, or none`;
  }
  if (rawRole !== undefined) role = rawRole === null || rawRole === 'none' ? null : (rawRole as OperatorRole);
  if (Object.keys(profile).length === 0 && role === undefined)
    throw invalid`give ${field('name')}, ${field('email')}, ${field('role')} or another claim to change`;
  if (role !== undefined && !(mayAssignRole(deps.caller.scopes, role) && mayAssignRole(deps.caller.scopes, user.role))) {
    throw forbidden`${field('role')}: only an operator who holds everything a role allows may give it or take it away`;
  }
  checkMayChangeUser(deps.caller, user);
  // RFC 9110 §13.1.1: made against the version the caller read, or not at all.
  if (expectedVersion !== undefined && expectedVersion !== userEtag(user)) throw stale(user);
  let done: boolean;
  try {
    done = await updateAccount(deps, user, profile, role, expectedVersion === undefined ? undefined : user.updatedAt);
  } catch (error) {
    if (error instanceof DuplicateError && error.field === 'email') throw emailTaken(profile.email);
    throw error;
  }
  if (!done) throw stale((await deps.store.users.get(user.id)) ?? user);
  return (await deps.store.users.get(user.id)) ?? user;
}

/** A user's version as an entity tag (RFC 9110 §8.8.3): strong, quoted, new at every change through updateUser. */
export function userEtag(user: UserRecord): string {
  return `"${user.updatedAt}"`;
}

function stale(user: UserRecord) {
  return problem(
    'stale',
  )`${user.username} has changed since they were read: they are at version ${userEtag(user)}; read them again and apply the change to that`;
}

/**
 * Disables (`disabled` true: sessions end and tokens stop working at once) or enables a
 * user. Null when they already were; else how many apps were told of ended sessions.
 */
export async function setDisabled(deps: ManageDeps, username: string, disabled: boolean): Promise<number | null> {
  const user = await changeableUser(deps, username);
  if (user.disabled === disabled) return null;
  return deps.tellApps(await setUserDisabled(deps, user, disabled));
}

/** Removes a user and everything issued to them; returns how many apps were told. */
export async function removeUser(deps: ManageDeps, username: string): Promise<number> {
  return deps.tellApps(await removeAccount(deps, await changeableUser(deps, username)));
}

/** Sets a user's password; their sessions end. Returns how many apps were told. */
export async function setPassword(deps: ManageDeps, username: string, password: string): Promise<number> {
  const user = await changeableUser(deps, username);
  const hash = await newPasswordHash(deps, checkPassword(password));
  return deps.tellApps(await replacePassword(deps, user, { hash }));
}

/** A single-use link where the user sets a new password, valid for `ttlSeconds`. */
export async function resetLink(
  deps: ManageDeps,
  username: string,
  ttlSeconds: number = DEFAULT_RESET_TTL_SECONDS,
): Promise<{ url: string; expiresAt: number }> {
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < RESET_TTL_RANGE.min || ttlSeconds > RESET_TTL_RANGE.max) {
    throw invalid`${field('ttl')}: seconds, from ${RESET_TTL_RANGE.min} to ${RESET_TTL_RANGE.max}`;
  }
  const user = await changeableUser(deps, username);
  if (user.disabled) throw conflict`${username} is disabled: enable them first`;
  return createResetLink(deps, user, ttlSeconds);
}

/** Removes a user's passkeys, one-time codes and recovery codes. */
export async function resetUserSecondFactor(deps: ManageDeps, username: string): Promise<{ passkeys: number; totp: boolean }> {
  return resetSecondFactor(deps, await changeableUser(deps, username));
}

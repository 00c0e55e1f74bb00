/**
 * RFC 7644 §3.3-§3.6 over RFC 7643 §4.1: SCIM Users as Tessera's accounts. The attributes
 * that are standard claims live in the account (userName the username, name.givenName the
 * given_name, emails' primary value the email, locale, timezone the zoneinfo, …); the rest
 * (externalId, title, the enterprise extension, every e-mail address as given) in SCIM's own
 * record beside it (store/scim.ts). Every change is one transaction with its events, made
 * only at the version read (`meta.version`, If-Match: 412 when stale); `active: false` and
 * DELETE use the accounts' own disable and remove, which end sessions, revoke grants and tell
 * apps by back-channel logout at once. The mapping is in docs/scim.md.
 */
import { randomUUID } from 'node:crypto';
import { randomToken } from '../../core/crypto.ts';
import { hashPassword } from '../../core/password.ts';
import { normalizeUsername } from '../../core/username.ts';
import { DuplicateError, newUserRecord, type ScimUserRecord, type SessionRecord, type UserProfileChanges, type UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { ManageDeps } from '../manage/deps.ts';
import { checkProfile } from '../profile.ts';
import { passwordProblem, removeUser, setDisabledIn, setPasswordIn, updateProfileIn } from '../users.ts';
import { checkScimJson, invalidValue, notFound, ScimError } from './errors.ts';
import { applyPatch, coerce, readOperations } from './patch.ts';
import { definitionOf, ENTERPRISE_SCHEMA, USER_KIND, USER_SCHEMA } from './schema.ts';

/** What the SCIM operations are given: the management deps, and the base URL of `/scim/v2`. */
export interface ScimDeps extends ManageDeps {
  readonly base: string;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

const USERNAME = /^[\p{L}\p{N}._@+-]{1,64}$/u;
/** A resource's attributes bounded: no provisioning system sends more. */
const MAX_TEXT = 1024;
const MAX_VALUES = 20;

/** RFC 7644 §3.14: a weak entity tag of the version (the account's `updated_at`). */
export const versionOf = (updatedAt: number): string => `W/"${updatedAt}"`;

/** The version an If-Match names, weak or strong (SCIM's are weak: §3.14 compares them as opaque); null: any. */
export function ifMatchVersion(header: string | undefined): number | null {
  if (header === undefined || header.trim() === '*') return null;
  const match = /^\s*(?:W\/)?"(\d{1,15})"\s*$/.exec(header);
  // An entity tag of no version this server gave never matches: 412, as for a stale one.
  return match === null ? -1 : Number(match[1]);
}

function stale(): ScimError {
  return new ScimError(412, null, 'the resource changed since the version If-Match names: read it again and apply the change to that');
}

// Rendering.

function primaryOf(values: unknown): Json | undefined {
  if (!Array.isArray(values)) return undefined;
  const objects = values.filter(isObject);
  return objects.find((value) => value['primary'] === true) ?? objects[0];
}

/** A user as SCIM renders it (RFC 7643 §4.1, §8.2). */
export function userResource(
  base: string,
  user: UserRecord,
  scim: ScimUserRecord | null,
  groups: readonly { readonly id: string; readonly displayName: string }[],
): Json {
  const kept = scim?.attributes ?? {};
  const name: Json = {
    ...(isObject(kept['name']) ? kept['name'] : {}),
    // The name claim is name.formatted when that was given (or the account was made elsewhere), else displayName.
    ...(user.name === null || (scim !== null && !(isObject(kept['name']) && 'formatted' in kept['name'])) ? {} : { formatted: user.name }),
    ...(user.familyName === null ? {} : { familyName: user.familyName }),
    ...(user.givenName === null ? {} : { givenName: user.givenName }),
    ...(user.middleName === null ? {} : { middleName: user.middleName }),
  };
  // The e-mail addresses as given, with the account's own first when it was changed elsewhere.
  let emails = Array.isArray(kept['emails']) ? (kept['emails'] as Json[]) : [];
  if (user.email === null) emails = [];
  else if (!emails.some((email) => typeof email['value'] === 'string' && email['value'].toLowerCase() === user.email!.toLowerCase())) {
    emails = [{ value: user.email, primary: true }, ...emails.map(({ primary: _primary, ...rest }) => rest)];
  }
  // The phone numbers as given; an account made elsewhere, its own phone_number.
  const phoneNumbers = Array.isArray(kept['phoneNumbers'])
    ? kept['phoneNumbers']
    : user.phoneNumber === null
      ? []
      : [{ value: user.phoneNumber, primary: true }];
  const extension = kept[ENTERPRISE_SCHEMA];
  const optional = (key: string, value: unknown) =>
    value === null || value === undefined || (Array.isArray(value) && value.length === 0) ? {} : { [key]: value };
  return {
    schemas: [USER_SCHEMA, ...(isObject(extension) ? [ENTERPRISE_SCHEMA] : [])],
    id: user.id,
    ...optional('externalId', scim?.externalId),
    userName: user.username,
    ...(Object.keys(name).length === 0 ? {} : { name }),
    ...optional('displayName', typeof kept['displayName'] === 'string' ? kept['displayName'] : user.name),
    ...optional('nickName', user.nickname),
    ...optional('profileUrl', user.profile),
    ...optional('title', kept['title']),
    ...optional('userType', kept['userType']),
    ...optional('preferredLanguage', kept['preferredLanguage']),
    ...optional('locale', user.locale),
    ...optional('timezone', user.zoneinfo),
    active: !user.disabled,
    ...optional('emails', emails),
    ...optional('phoneNumbers', phoneNumbers),
    ...optional('addresses', kept['addresses']),
    ...optional(
      'groups',
      groups.map((group) => ({ value: group.id, $ref: `${base}/Groups/${group.id}`, display: group.displayName, type: 'direct' })),
    ),
    ...(isObject(extension) ? { [ENTERPRISE_SCHEMA]: extension } : {}),
    meta: {
      resourceType: 'User',
      created: new Date(user.createdAt).toISOString(),
      lastModified: new Date(user.updatedAt).toISOString(),
      location: `${base}/Users/${user.id}`,
      version: versionOf(user.updatedAt),
    },
  };
}

// Reading a resource given.

/** What a User resource sets: the account's claims, its state, and SCIM's own record. */
interface Account {
  readonly username: string;
  readonly profile: UserProfileChanges;
  readonly active: boolean;
  readonly password: string | null;
  readonly externalId: string | null;
  readonly attributes: Json;
}

function text(value: unknown, attribute: string, max = MAX_TEXT): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalidValue(`${attribute}: must be text`);
  if (value.length > max) throw invalidValue(`${attribute}: at most ${max} characters`);
  return value.trim() === '' ? null : value.trim();
}

function values(value: unknown, attribute: string): Json[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalidValue(`${attribute}: must be a list`);
  if (value.length > MAX_VALUES) throw invalidValue(`${attribute}: at most ${MAX_VALUES} values`);
  return value.map((item, i) => {
    if (!isObject(item)) throw invalidValue(`${attribute}[${i}]: must be an object`);
    // Each sub-attribute by its schema's spelling (`Value` is `value`): kept so, it is found by the database's search too.
    const canonicalItem: Json = {};
    for (const [given, inner] of Object.entries(item)) {
      const key = definitionOf(USER_KIND, { uri: null, name: attribute, sub: given })?.sub?.name ?? given;
      if (key === 'primary') {
        if (typeof inner !== 'boolean') throw invalidValue(`${attribute}[${i}].primary: must be true or false`);
      } else text(inner, `${attribute}[${i}].${key}`);
      canonicalItem[key] = inner;
    }
    return canonicalItem;
  });
}

/** The attributes of `resource` a User defines, each by its schema's spelling; an unknown one is `invalidValue`... or ignored, as §3.3 lets a provider ignore them. */
function canonical(resource: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(resource)) {
    if (key === ENTERPRISE_SCHEMA || key.toLowerCase() === ENTERPRISE_SCHEMA.toLowerCase()) {
      out[ENTERPRISE_SCHEMA] = value;
      continue;
    }
    const found = definitionOf(USER_KIND, { uri: null, name: key, sub: null });
    // RFC 7643 §3.1: read-only attributes given (id, meta, groups) are ignored, as are unknown ones.
    if (found === undefined || found.attribute.mutability === 'readOnly') continue;
    out[found.attribute.name] = coerce(found.attribute, value);
  }
  return out;
}

/** The e-mail address or phone number a list's primary value (else its first) gives the account. */
function primaryValue(list: readonly Json[]): string | null {
  const primary = primaryOf(list);
  return primary === undefined ? null : text(primary['value'], 'value');
}

/**
 * RFC 7643 §4.3: manager is "A complex type that optionally allows service providers to
 * represent organizational hierarchy by referencing the "id" attribute of another User." Its
 * sub-attributes are value, $ref and displayName, each text: nothing else is kept there.
 */
function checkManager(manager: unknown): void {
  if (manager === null) return;
  const name = `${ENTERPRISE_SCHEMA}:manager`;
  if (!isObject(manager)) throw invalidValue(`${name}: must be an object`);
  for (const [key, value] of Object.entries(manager)) {
    if (definitionOf(USER_KIND, { uri: ENTERPRISE_SCHEMA, name: 'manager', sub: key }) === undefined)
      throw invalidValue(`${name}: value, $ref and displayName only, not ${JSON.stringify(key.slice(0, 80))}`);
    text(value, `${name}.${key}`);
  }
}

function accountOf(resource: unknown): Account {
  if (!isObject(resource)) throw new ScimError(400, 'invalidSyntax', 'the body is not a User resource (a JSON object)');
  checkScimJson(resource);
  const given = canonical(resource);
  const rawUsername = text(given['userName'], 'userName', 256);
  if (rawUsername === null) throw invalidValue('userName is required');
  const username = normalizeUsername(rawUsername);
  if (!USERNAME.test(username)) throw invalidValue(`userName ${JSON.stringify(rawUsername.slice(0, 80))}: 1-64 letters, digits or . _ @ + -`);
  const name = given['name'] === undefined || given['name'] === null ? {} : given['name'];
  if (!isObject(name)) throw invalidValue('name: must be an object');
  for (const [key, value] of Object.entries(name)) text(value, `name.${key}`);
  const active = given['active'] ?? true;
  if (typeof active !== 'boolean') throw invalidValue('active: must be true or false');
  const emails = values(given['emails'], 'emails');
  const phoneNumbers = values(given['phoneNumbers'], 'phoneNumbers');
  const addresses = values(given['addresses'], 'addresses');
  if (emails.filter((email) => email['primary'] === true).length > 1) throw invalidValue('emails: at most one is primary');
  const extension = given[ENTERPRISE_SCHEMA];
  if (extension !== undefined && extension !== null && !isObject(extension)) throw invalidValue(`${ENTERPRISE_SCHEMA}: must be an object`);
  if (isObject(extension)) {
    for (const [key, value] of Object.entries(extension)) {
      if (key === 'manager') checkManager(value);
      else text(value, `${ENTERPRISE_SCHEMA}:${key}`);
    }
  }
  const displayName = text(given['displayName'], 'displayName', 200);
  const formatted = text(name['formatted'], 'name.formatted', 200);
  const profile: Record<string, unknown> = {
    // The name claim: the full name as given, else the name shown (Entra ID and Okta send displayName alone).
    name: formatted ?? displayName,
    givenName: text(name['givenName'], 'name.givenName', 200),
    familyName: text(name['familyName'], 'name.familyName', 200),
    middleName: text(name['middleName'], 'name.middleName', 200),
    nickname: text(given['nickName'], 'nickName', 200),
    profile: text(given['profileUrl'], 'profileUrl', 2048),
    email: primaryValue(emails),
    locale: text(given['locale'], 'locale', 35),
    zoneinfo: text(given['timezone'], 'timezone', 64),
  };
  const checked = checkProfile(profile as UserProfileChanges);
  if (!checked.ok) throw invalidValue(`${SCIM_NAME_OF[checked.claim] ?? checked.claim} ${checked.problem}`);
  // A directory's phone number is often not in E.164 form: kept as given, the claim only when it is one.
  const phone = primaryValue(phoneNumbers);
  const phoneChecked = phone === null ? null : checkProfile({ phoneNumber: phone });
  const phoneNumber = phoneChecked?.ok ? (phoneChecked.changes.phoneNumber ?? null) : null;
  const password = given['password'] === undefined || given['password'] === null ? null : given['password'];
  if (password !== null) {
    if (typeof password !== 'string') throw invalidValue('password: must be text');
    const problem = passwordProblem(password);
    if (problem !== null) throw invalidValue(`password: ${problem}`);
  }
  const attributes: Json = {
    ...(displayName === null ? {} : { displayName }),
    ...(Object.keys(name).length === 0
      ? {}
      : {
          name: Object.fromEntries(
            Object.entries(name).filter(([key, value]) => ['honorificPrefix', 'honorificSuffix', 'formatted'].includes(key) && value !== null && value !== ''),
          ),
        }),
    ...(emails.length === 0 ? {} : { emails }),
    ...(phoneNumbers.length === 0 ? {} : { phoneNumbers }),
    ...(addresses.length === 0 ? {} : { addresses }),
    ...Object.fromEntries(
      ['title', 'userType', 'preferredLanguage'].flatMap((key) => {
        const value = text(given[key], key, 200);
        return value === null ? [] : [[key, value]];
      }),
    ),
    ...(isObject(extension) ? { [ENTERPRISE_SCHEMA]: extension } : {}),
  };
  return {
    username,
    profile: { ...checked.changes, phoneNumber, ...(phoneNumber === null ? {} : { phoneNumberVerified: false }) },
    active,
    password: password as string | null,
    externalId: text(given['externalId'], 'externalId', 256),
    attributes,
  };
}

/** A claim's SCIM attribute, for the words of a refusal. */
const SCIM_NAME_OF: Readonly<Record<string, string>> = {
  name: 'name.formatted',
  given_name: 'name.givenName',
  family_name: 'name.familyName',
  middle_name: 'name.middleName',
  nickname: 'nickName',
  profile: 'profileUrl',
  email: 'emails',
  locale: 'locale',
  zoneinfo: 'timezone',
};

// The operations.

async function userOf(deps: Pick<ScimDeps, 'store'>, id: string): Promise<UserRecord> {
  const user = id.length > 200 || id.includes('\u0000') ? null : await deps.store.users.get(id);
  if (user === null) throw notFound(`no User with id ${id.slice(0, 200)}`);
  return user;
}

export async function getUserResource(deps: Pick<ScimDeps, 'store' | 'base'>, id: string): Promise<Json> {
  const user = await userOf(deps, id);
  return userResource(deps.base, user, await deps.store.scimUsers.get(user.id), await deps.store.groups.groupsOf(user.id));
}

/** Past this many resources, their groups are read in one statement (every membership) rather than one each. */
export const READ_EACH_UP_TO = 50;

/** The users of a list's page as resources, each with the groups they are in. */
export async function userResourcesOf(
  deps: Pick<ScimDeps, 'store' | 'base'>,
  found: readonly { readonly user: UserRecord; readonly scim: ScimUserRecord | null }[],
): Promise<Json[]> {
  if (found.length <= READ_EACH_UP_TO)
    return Promise.all(found.map(async ({ user, scim }) => userResource(deps.base, user, scim, await deps.store.groups.groupsOf(user.id))));
  const [groups, memberships] = await Promise.all([deps.store.groups.list(), deps.store.groups.memberships()]);
  const byId = new Map(groups.map((group) => [group.id, group]));
  const byUser = new Map<string, { id: string; displayName: string }[]>();
  for (const { groupId, userId } of memberships) {
    const group = byId.get(groupId);
    if (group === undefined) continue;
    const list = byUser.get(userId) ?? [];
    list.push({ id: group.id, displayName: group.displayName });
    byUser.set(userId, list);
  }
  const sorted = (list: { id: string; displayName: string }[]) =>
    [...list].sort((a, b) => (a.displayName < b.displayName ? -1 : a.displayName > b.displayName ? 1 : a.id < b.id ? -1 : 1));
  return found.map(({ user, scim }) => userResource(deps.base, user, scim, sorted(byUser.get(user.id) ?? [])));
}

const usernameTaken = (account: Account) => new ScimError(409, 'uniqueness', `userName ${account.username} is taken`);
const emailTaken = (account: Account) => new ScimError(409, 'uniqueness', `the e-mail address ${account.profile.email ?? ''} is another user's`);

/**
 * §3.3 uniqueness, across every door: no other account has the userName or the e-mail address
 * (without regard to case). The store's unique indexes decide (a write that loses a race is
 * refused the same way, `uniquenessOf`); this answers before a password is hashed.
 */
async function checkUnique(deps: Pick<ScimDeps, 'store'>, account: Account, self: string | null): Promise<void> {
  const taken = await deps.store.users.findByUsername(account.username);
  if (taken !== null && taken.id !== self) throw usernameTaken(account);
  const email = account.profile.email;
  if (email === undefined || email === null) return;
  if ((await deps.store.users.findByEmail(email)).some((user) => user.id !== self)) throw emailTaken(account);
}

/** A refused write as §3.12's `409 uniqueness`, naming the value that is taken. */
function uniquenessOf(error: unknown, account: Account): unknown {
  if (!(error instanceof DuplicateError)) return error;
  return error.field === 'email' ? emailTaken(account) : usernameTaken(account);
}

/**
 * A person who holds a console role is changed by an operator, not by provisioning: their
 * account is the console's door, and their groups (`what`) are what apps grant rights by.
 */
export function checkChangeable(user: UserRecord, what: 'account' | 'groups' = 'account'): void {
  if (user.role !== null)
    throw new ScimError(
      403,
      null,
      `${user.username} holds a console role: an operator changes their ${what} (tessera user, the admin API or the console), not provisioning`,
    );
}

/** §3.3: makes a User. A password is optional: a person made without one signs in by an upstream provider or a reset link. */
export async function createUserResource(deps: ScimDeps, body: unknown): Promise<Json> {
  const account = accountOf(body);
  await checkUnique(deps, account, null);
  // Without a password, one nobody knows: the account has a password hash, as every account has.
  const password = account.password ?? randomToken(32);
  const passwordHash = deps.hashPassword ? await deps.hashPassword(password) : await hashPassword(password, deps.config.passwordHash);
  const user = newUserRecord({
    id: randomUUID(),
    username: account.username,
    passwordHash,
    ...account.profile,
    disabled: !account.active,
    createdAt: deps.clock.now(),
  });
  try {
    await transactionWithEvents(deps, async (tx, record) => {
      await tx.users.create(user);
      await tx.scimUsers.put({ userId: user.id, externalId: account.externalId, attributes: account.attributes });
      await record({ type: 'user.created', userId: user.id, username: user.username, detail: { by: 'scim' } });
      if (!account.active)
        await record({ type: 'user.disabled', userId: user.id, username: user.username, detail: { sessions_ended: 0, grants_revoked: 0, by: 'scim' } });
    });
  } catch (error) {
    throw uniquenessOf(error, account);
  }
  return getUserResource(deps, user.id);
}

/**
 * Writes `account` over the user, in one transaction made only at the version read: the
 * username, the claims, SCIM's record, and whether they are active (disabling ends their
 * sessions and grants in it). Then the apps of the ended sessions are told.
 */
async function writeAccount(deps: ScimDeps, user: UserRecord, account: Account, expected: number | null): Promise<Json> {
  if (expected !== null && expected !== user.updatedAt) throw stale();
  checkChangeable(user);
  await checkUnique(deps, account, user.id);
  const passwordHash =
    account.password === null
      ? null
      : deps.hashPassword
        ? await deps.hashPassword(account.password)
        : await hashPassword(account.password, deps.config.passwordHash);
  const now = Math.max(deps.clock.now(), user.updatedAt + 1);
  let ended: SessionRecord[] = [];
  let done: boolean;
  try {
    done = await transactionWithEvents(deps, async (tx, record) => {
      if (!(await tx.users.touch(user.id, user.updatedAt, now))) return false;
      if (account.username !== user.username && !(await tx.users.rename(user.id, account.username))) throw usernameTaken(account);
      await updateProfileIn(tx, user, account.profile, now);
      await tx.scimUsers.put({ userId: user.id, externalId: account.externalId, attributes: account.attributes });
      await record({ type: 'user.updated', userId: user.id, username: account.username, detail: { fields: 'scim', by: 'scim' } });
      if (passwordHash !== null) {
        ended = await setPasswordIn(tx, user.id, passwordHash, now);
        await record({ type: 'user.password_set', userId: user.id, username: account.username, detail: { sessions_ended: ended.length, by: 'scim' } });
      }
      if (account.active === user.disabled)
        ended = [...ended, ...(await setDisabledIn(deps, tx, record, { ...user, username: account.username }, !account.active))];
      return true;
    });
  } catch (error) {
    throw uniquenessOf(error, account);
  }
  if (!done) throw stale();
  if (ended.length > 0) await deps.tellApps(ended);
  return getUserResource(deps, user.id);
}

/** §3.5.1: replaces a User with the resource given. */
export async function replaceUserResource(deps: ScimDeps, id: string, body: unknown, expected: number | null): Promise<Json> {
  const user = await userOf(deps, id);
  const account = accountOf(body);
  // §3.5.1: "Unassigned attributes ... SHALL be considered to be null"; a password not given stays.
  return writeAccount(deps, user, account, expected);
}

/** The resource as PATCH changes it: what the account and SCIM's record hold, without the read-only parts. */
function writableResource(resource: Json): Json {
  const { id: _id, meta: _meta, groups: _groups, schemas: _schemas, ...rest } = resource;
  return rest;
}

/** §3.5.2: changes a User by the operations given, all or none. */
export async function patchUserResource(deps: ScimDeps, id: string, body: unknown, expected: number | null): Promise<Json> {
  const operations = readOperations(body);
  const user = await userOf(deps, id);
  const current = writableResource(userResource(deps.base, user, await deps.store.scimUsers.get(user.id), []));
  const changed = applyPatch(current, USER_KIND, operations);
  return writeAccount(deps, user, accountOf(changed), expected);
}

/** §3.6: removes a User, with everything issued to them; the apps of their sessions are told. */
export async function deleteUserResource(deps: ScimDeps, id: string, expected: number | null): Promise<void> {
  const user = await userOf(deps, id);
  if (expected !== null && expected !== user.updatedAt) throw stale();
  checkChangeable(user);
  await deps.tellApps(await removeUser(deps, user));
}

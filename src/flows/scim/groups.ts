/**
 * RFC 7644 §3.3-§3.6 over RFC 7643 §4.2: SCIM Groups and their members (Users). A group's
 * name is what its members' `groups` claim carries (tokens/claims.ts). Each change is one
 * transaction with its event, made only at the version read (`meta.version`, If-Match).
 */
import { randomUUID } from 'node:crypto';
import { DuplicateError, type GroupRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import { checkScimJson, invalidValue, notFound, ScimError } from './errors.ts';
import { member as memberOf } from './filter.ts';
import { applyPatch, readOperations } from './patch.ts';
import { GROUP_KIND, GROUP_SCHEMA } from './schema.ts';
import { checkChangeable, READ_EACH_UP_TO, versionOf, type ScimDeps } from './users.ts';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A group has at most this many members (a bigger one is several groups, or an upstream directory's). */
export const MAX_GROUP_MEMBERS = 10_000;

function stale(): ScimError {
  return new ScimError(412, null, 'the group changed since the version If-Match names: read it again and apply the change to that');
}

export function groupResource(base: string, group: GroupRecord, members: readonly { readonly id: string; readonly username: string }[]): Json {
  return {
    schemas: [GROUP_SCHEMA],
    id: group.id,
    ...(group.externalId === null ? {} : { externalId: group.externalId }),
    displayName: group.displayName,
    ...(members.length === 0
      ? {}
      : { members: members.map((user) => ({ value: user.id, $ref: `${base}/Users/${user.id}`, display: user.username, type: 'User' })) }),
    meta: {
      resourceType: 'Group',
      created: new Date(group.createdAt).toISOString(),
      lastModified: new Date(group.updatedAt).toISOString(),
      location: `${base}/Groups/${group.id}`,
      version: versionOf(group.updatedAt),
    },
  };
}

interface GroupInput {
  readonly displayName: string;
  readonly externalId: string | null;
  readonly members: readonly string[];
}

/** The group a resource describes; each member a User there is. */
async function inputOf(deps: Pick<ScimDeps, 'store'>, resource: unknown): Promise<GroupInput> {
  if (!isObject(resource)) throw new ScimError(400, 'invalidSyntax', 'the body is not a Group resource (a JSON object)');
  checkScimJson(resource);
  const displayName = memberOf(resource, 'displayName');
  if (typeof displayName !== 'string' || displayName.trim() === '') throw invalidValue('displayName is required');
  if (displayName.trim().length > 200 || /\p{Cc}/u.test(displayName)) throw invalidValue('displayName: at most 200 characters, no control characters');
  const externalId = memberOf(resource, 'externalId') ?? null;
  if (externalId !== null && (typeof externalId !== 'string' || externalId.length > 256)) throw invalidValue('externalId: text of at most 256 characters');
  const rawMembers = memberOf(resource, 'members') ?? [];
  if (!Array.isArray(rawMembers)) throw invalidValue('members: must be a list');
  if (rawMembers.length > MAX_GROUP_MEMBERS) throw invalidValue(`members: at most ${MAX_GROUP_MEMBERS}`);
  const ids = rawMembers.map((item, i) => {
    const value = isObject(item) ? memberOf(item, 'value') : undefined;
    if (typeof value !== 'string' || value === '' || value.length > 200) throw invalidValue(`members[${i}].value: the id of a User`);
    return value;
  });
  const unique = [...new Set(ids)];
  const users = new Set(unique.length === 0 ? [] : await deps.store.scimUsers.existing(unique));
  const unknown = unique.find((id) => !users.has(id));
  if (unknown !== undefined) throw invalidValue(`members: no User with id ${unknown}`);
  return { displayName: displayName.trim(), externalId: externalId as string | null, members: unique };
}

/**
 * Provisioning adds no one holding a console role to a group, takes no one out of one, and
 * neither renames nor deletes a group one is in: a group's name is in its members' `groups` claim, which apps grant rights by, and an
 * operator's account is changed by an operator (tessera user, the admin API, the console),
 * never by provisioning, as flows/scim/users.ts refuses a change of the operator themselves.
 * Otherwise a SCIM token, which `admin:users` may make, would decide an operator's groups.
 */
async function checkMembersChangeable(deps: Pick<ScimDeps, 'store'>, changed: readonly string[]): Promise<void> {
  for (const userId of changed) {
    const user = await deps.store.users.get(userId);
    if (user !== null) checkChangeable(user, 'groups');
  }
}

async function groupOf(deps: Pick<ScimDeps, 'store'>, id: string): Promise<GroupRecord> {
  const group = id.length > 200 || id.includes('\u0000') ? null : await deps.store.groups.get(id);
  if (group === null) throw notFound(`no Group with id ${id.slice(0, 200)}`);
  return group;
}

export async function getGroupResource(deps: Pick<ScimDeps, 'store' | 'base'>, id: string): Promise<Json> {
  const group = await groupOf(deps, id);
  return groupResource(deps.base, group, await deps.store.groups.membersNamed(group.id));
}

/** The groups of a list's page as resources, each with its members. */
export async function groupResourcesOf(deps: Pick<ScimDeps, 'store' | 'base'>, groups: readonly GroupRecord[]): Promise<Json[]> {
  if (groups.length <= READ_EACH_UP_TO)
    return Promise.all(groups.map(async (group) => groupResource(deps.base, group, await deps.store.groups.membersNamed(group.id))));
  const byGroup = new Map<string, { id: string; username: string }[]>();
  for (const { groupId, id, username } of await deps.store.groups.everyMemberNamed()) {
    const list = byGroup.get(groupId) ?? [];
    list.push({ id, username });
    byGroup.set(groupId, list);
  }
  return groups.map((group) => groupResource(deps.base, group, byGroup.get(group.id) ?? []));
}

export async function createGroupResource(deps: ScimDeps, body: unknown): Promise<Json> {
  const input = await inputOf(deps, body);
  await checkMembersChangeable(deps, input.members);
  const now = deps.clock.now();
  const group: GroupRecord = { id: randomUUID(), displayName: input.displayName, externalId: input.externalId, createdAt: now, updatedAt: now };
  try {
    await transactionWithEvents(deps, async (tx, record) => {
      await tx.groups.create(group);
      for (const userId of input.members) await tx.groups.addMember(group.id, userId);
      await record({ type: 'group.created', detail: { group: group.id, name: group.displayName, members: input.members.length, by: 'scim' } });
    });
  } catch (error) {
    if (error instanceof DuplicateError) throw new ScimError(409, 'uniqueness', `a group named ${input.displayName} exists`);
    throw error;
  }
  return getGroupResource(deps, group.id);
}

async function writeGroup(deps: ScimDeps, group: GroupRecord, input: GroupInput, expected: number | null): Promise<Json> {
  if (expected !== null && expected !== group.updatedAt) throw stale();
  const before = new Set(await deps.store.groups.members(group.id));
  const after = new Set(input.members);
  // A new name is every member's groups claim changed, as much as a membership is.
  const renamed = input.displayName !== group.displayName;
  await checkMembersChangeable(
    deps,
    renamed ? [...new Set([...before, ...after])] : [...[...after].filter((id) => !before.has(id)), ...[...before].filter((id) => !after.has(id))],
  );
  const now = Math.max(deps.clock.now(), group.updatedAt + 1);
  let done: boolean;
  try {
    done = await transactionWithEvents(deps, async (tx, record) => {
      if (!(await tx.groups.update(group.id, { displayName: input.displayName, externalId: input.externalId }, group.updatedAt, now))) return false;
      const added = [...after].filter((id) => !before.has(id));
      const removed = [...before].filter((id) => !after.has(id));
      for (const userId of added) await tx.groups.addMember(group.id, userId);
      for (const userId of removed) await tx.groups.removeMember(group.id, userId);
      const fields = [
        ...(input.displayName !== group.displayName ? ['displayName'] : []),
        ...(input.externalId !== group.externalId ? ['externalId'] : []),
        ...(added.length + removed.length > 0 ? ['members'] : []),
      ];
      await record({
        type: 'group.updated',
        detail: {
          group: group.id,
          name: input.displayName,
          fields: fields.join(' '),
          members_added: added.length,
          members_removed: removed.length,
          by: 'scim',
        },
      });
      return true;
    });
  } catch (error) {
    if (error instanceof DuplicateError) throw new ScimError(409, 'uniqueness', `a group named ${input.displayName} exists`);
    throw error;
  }
  if (!done) throw stale();
  return getGroupResource(deps, group.id);
}

export async function replaceGroupResource(deps: ScimDeps, id: string, body: unknown, expected: number | null): Promise<Json> {
  const group = await groupOf(deps, id);
  return writeGroup(deps, group, await inputOf(deps, body), expected);
}

export async function patchGroupResource(deps: ScimDeps, id: string, body: unknown, expected: number | null): Promise<Json> {
  const operations = readOperations(body);
  const group = await groupOf(deps, id);
  const {
    id: _id,
    meta: _meta,
    schemas: _schemas,
    ...current
  } = groupResource(
    deps.base,
    group,
    (await deps.store.groups.members(group.id)).map((userId) => ({ id: userId, username: '' })),
  );
  // Members are compared by their value alone: what PATCH adds has no display.
  if (Array.isArray(current['members'])) current['members'] = (current['members'] as Json[]).map((m) => ({ value: m['value'] }));
  const changed = applyPatch(current, GROUP_KIND, operations);
  return writeGroup(deps, group, await inputOf(deps, changed), expected);
}

export async function deleteGroupResource(deps: ScimDeps, id: string, expected: number | null): Promise<void> {
  const group = await groupOf(deps, id);
  if (expected !== null && expected !== group.updatedAt) throw stale();
  // Deleting the group takes every member out of it.
  await checkMembersChangeable(deps, await deps.store.groups.members(group.id));
  await transactionWithEvents(deps, async (tx, record) => {
    if (!(await tx.groups.remove(group.id))) throw notFound(`no Group with id ${id.slice(0, 200)}`);
    await record({ type: 'group.removed', detail: { group: group.id, name: group.displayName, by: 'scim' } });
  });
}

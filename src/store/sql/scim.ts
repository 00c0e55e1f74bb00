/** SCIM tokens, what SCIM keeps of people, and groups with their members (`../scim.ts`): statements and stores. */
import { integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import { DuplicateError } from '../errors.ts';
import type { GroupRecord, ScimTokenRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';
import { composeSearch, countOf, groupSearchTable, userSearchTable } from './scim-search.ts';
import { userFromRow } from './users.ts';

/** The statements, by name, in `d`'s SQL. */
export function scimStatements(d: Dialect) {
  return {
    insertScimToken: `
      INSERT INTO scim_tokens (id, name, token_hash, created_at, last_used_at)
      VALUES (:id, :name, :tokenHash, :createdAt, :lastUsedAt)
      ON CONFLICT DO NOTHING`,
    findScimToken: 'SELECT * FROM scim_tokens WHERE token_hash = :tokenHash',
    markScimTokenUsed: `UPDATE scim_tokens SET last_used_at = :now WHERE id = :id AND (last_used_at IS NULL OR last_used_at < ${d.bigint(':now')} - 60000)`,
    listScimTokens: 'SELECT * FROM scim_tokens ORDER BY created_at, id',
    removeScimToken: 'DELETE FROM scim_tokens WHERE id = :id',
    getScimUser: 'SELECT * FROM scim_users WHERE user_id = :userId',
    listScimUsers: 'SELECT * FROM scim_users',
    existingUsers: `SELECT id FROM users WHERE ${d.inList('id', ':ids')}`,
    putScimUser: `
      INSERT INTO scim_users (user_id, external_id, attributes) VALUES (:userId, :externalId, :attributes)
      ON CONFLICT (user_id) DO UPDATE SET external_id = excluded.external_id, attributes = excluded.attributes`,
    insertGroup: `
      INSERT INTO user_groups (id, display_name, external_id, created_at, updated_at)
      VALUES (:id, :displayName, :externalId, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getGroup: 'SELECT * FROM user_groups WHERE id = :id',
    listGroups: 'SELECT * FROM user_groups ORDER BY created_at, id',
    updateGroup: `
      UPDATE user_groups SET display_name = :displayName, external_id = :externalId, updated_at = :now
      WHERE id = :id AND updated_at = :expectedUpdatedAt
        AND NOT EXISTS (SELECT 1 FROM user_groups other WHERE lower(other.display_name) = lower(:displayName) AND other.id <> :id)`,
    groupNameTaken: 'SELECT id FROM user_groups WHERE lower(display_name) = lower(:displayName) AND id <> :id',
    removeGroup: 'DELETE FROM user_groups WHERE id = :id',
    groupMembers: 'SELECT user_id FROM group_members WHERE group_id = :groupId ORDER BY user_id',
    allGroupMembers: 'SELECT group_id, user_id FROM group_members ORDER BY group_id, user_id',
    addGroupMember: 'INSERT INTO group_members (group_id, user_id) VALUES (:groupId, :userId) ON CONFLICT DO NOTHING',
    removeGroupMember: 'DELETE FROM group_members WHERE group_id = :groupId AND user_id = :userId',
    groupsOfUser: `
      SELECT g.id, g.display_name FROM group_members m JOIN user_groups g ON g.id = m.group_id
      WHERE m.user_id = :userId ORDER BY g.display_name, g.id`,
    groupMembersNamed: `
      SELECT u.id, u.username FROM group_members m JOIN users u ON u.id = m.user_id
      WHERE m.group_id = :groupId ORDER BY u.id`,
    everyGroupMemberNamed: `
      SELECT m.group_id, u.id, u.username FROM group_members m JOIN users u ON u.id = m.user_id
      ORDER BY m.group_id, u.id`,
    groupNamesOf: `
      SELECT g.display_name FROM group_members m JOIN user_groups g ON g.id = m.group_id
      WHERE m.user_id = :userId ORDER BY g.display_name`,
  };
}

function scimTokenFromRow(row: Row): ScimTokenRecord {
  return {
    id: text(row, 'id'),
    name: text(row, 'name'),
    tokenHash: text(row, 'token_hash'),
    createdAt: integer(row, 'created_at'),
    lastUsedAt: integerOrNull(row, 'last_used_at'),
  };
}

function groupFromRow(row: Row): GroupRecord {
  return {
    id: text(row, 'id'),
    displayName: text(row, 'display_name'),
    externalId: textOrNull(row, 'external_id'),
    createdAt: integer(row, 'created_at'),
    updatedAt: integer(row, 'updated_at'),
  };
}

export function scimStores(d: Dialect, q: Runner<keyof ReturnType<typeof scimStatements>>): Pick<Stores, 'scimTokens' | 'scimUsers' | 'groups'> {
  const { first, every, changedAny, write } = queries(q);
  const scimUser = (row: Row) => ({ userId: text(row, 'user_id'), externalId: textOrNull(row, 'external_id'), attributes: d.read.object(row, 'attributes') });
  const users = userSearchTable(d);
  const groups = groupSearchTable();
  return {
    scimTokens: {
      async create(token) {
        if ((await q.changed('insertScimToken', { ...token })) === 0) throw new DuplicateError(`scim token ${JSON.stringify(token.name)}`);
      },
      findByHash: (tokenHash) => first('findScimToken', { tokenHash }, scimTokenFromRow),
      markUsed: (id, now) => write('markScimTokenUsed', { id, now }),
      list: () => every('listScimTokens', {}, scimTokenFromRow),
      remove: (id) => changedAny('removeScimToken', { id }),
    },
    scimUsers: {
      get: (userId) => first('getScimUser', { userId }, scimUser),
      list: () => every('listScimUsers', {}, scimUser),
      put: (record) => write('putScimUser', { userId: record.userId, externalId: record.externalId, attributes: JSON.stringify(record.attributes) }),
      existing: (userIds) => every('existingUsers', { ids: d.list(userIds) }, (row) => text(row, 'id')),
      async search(search) {
        const { page, count, params } = composeSearch(d, users, search);
        const [rows, counted] = await Promise.all([q.select(page, params), q.select(count, params)]);
        return {
          total: countOf(counted),
          users: rows.map((row) => ({
            user: userFromRow(row, d.read),
            scim:
              row['scim_user_id'] === null || row['scim_user_id'] === undefined
                ? null
                : { userId: text(row, 'scim_user_id'), externalId: textOrNull(row, 'scim_external_id'), attributes: d.read.object(row, 'scim_attributes') },
          })),
        };
      },
    },
    groups: {
      async create(group) {
        if ((await q.changed('insertGroup', { ...group })) === 0) throw new DuplicateError(`group ${JSON.stringify(group.displayName)}`);
      },
      get: (id) => first('getGroup', { id }, groupFromRow),
      list: () => every('listGroups', {}, groupFromRow),
      async update(id, changes, expectedUpdatedAt, now) {
        if ((await q.one('groupNameTaken', { id, displayName: changes.displayName })) !== undefined)
          throw new DuplicateError(`group ${JSON.stringify(changes.displayName)}`);
        return changedAny('updateGroup', { id, displayName: changes.displayName, externalId: changes.externalId, expectedUpdatedAt, now });
      },
      remove: (id) => changedAny('removeGroup', { id }),
      members: (groupId) => every('groupMembers', { groupId }, (row) => text(row, 'user_id')),
      memberships: () => every('allGroupMembers', {}, (row) => ({ groupId: text(row, 'group_id'), userId: text(row, 'user_id') })),
      addMember: (groupId, userId) => write('addGroupMember', { groupId, userId }),
      removeMember: (groupId, userId) => write('removeGroupMember', { groupId, userId }),
      namesOf: (userId) => every('groupNamesOf', { userId }, (row) => text(row, 'display_name')),
      groupsOf: (userId) => every('groupsOfUser', { userId }, (row) => ({ id: text(row, 'id'), displayName: text(row, 'display_name') })),
      membersNamed: (groupId) => every('groupMembersNamed', { groupId }, (row) => ({ id: text(row, 'id'), username: text(row, 'username') })),
      everyMemberNamed: () =>
        every('everyGroupMemberNamed', {}, (row) => ({ groupId: text(row, 'group_id'), id: text(row, 'id'), username: text(row, 'username') })),
      async search(search) {
        const { page, count, params } = composeSearch(d, groups, search);
        const [rows, counted] = await Promise.all([q.select(page, params), q.select(count, params)]);
        return { total: countOf(counted), groups: rows.map(groupFromRow) };
      },
    },
  };
}

/**
 * Organizations and their members (`../organizations.ts`): statements, rows and stores.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import { DuplicateError, type Stores } from '../types.ts';
import { ORGANIZATION_ROLES, type OrganizationRecord } from '../organizations.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';
import { operatorRole } from './users.ts';

export function organizationsStatements(_d: Dialect) {
  return {
    // A taken name or verified domain inserts nothing (the unique indexes), which create reports.
    insertOrganization: `
      INSERT INTO organizations (id, name, domain, domain_verified, provider_id, require_passkey, require_second_factor, created_at, updated_at)
      VALUES (:id, :name, :domain, :domainVerified, :providerId, :requirePasskey, :requireSecondFactor, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getOrganization: 'SELECT * FROM organizations WHERE id = :id',
    organizationByName: 'SELECT * FROM organizations WHERE lower(name) = lower(:name)',
    organizationByVerifiedDomain: 'SELECT * FROM organizations WHERE domain = :domain AND domain_verified = TRUE',
    listOrganizations: 'SELECT * FROM organizations ORDER BY lower(name), id',
    organizationTaken: `
      SELECT id FROM organizations
      WHERE id <> :id AND (lower(name) = lower(:name) OR (:domainVerified = TRUE AND domain_verified = TRUE AND domain = :domain))`,
    updateOrganization: `
      UPDATE organizations SET name = :name, domain = :domain, domain_verified = :domainVerified, provider_id = :providerId,
        require_passkey = :requirePasskey, require_second_factor = :requireSecondFactor, updated_at = :updatedAt
      WHERE id = :id`,
    removeOrganization: 'DELETE FROM organizations WHERE id = :id',
    setOrganizationMember: `
      INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES (:organizationId, :userId, :role, :createdAt)
      ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role`,
    joinOrganization: `
      INSERT INTO organization_members (organization_id, user_id, role, created_at) VALUES (:organizationId, :userId, :role, :createdAt)
      ON CONFLICT (organization_id, user_id) DO NOTHING`,
    removeOrganizationMember: 'DELETE FROM organization_members WHERE organization_id = :organizationId AND user_id = :userId',
    organizationMembers: `
      SELECT m.*, u.username, u.role AS console_role FROM organization_members m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = :organizationId ORDER BY m.created_at, u.username`,
    membershipsOf: `
      SELECT o.*, m.role AS member_role FROM organization_members m JOIN organizations o ON o.id = m.organization_id
      WHERE m.user_id = :userId ORDER BY lower(o.name), o.id`,
  };
}

function organizationFromRow(row: Row, read: ColumnReader): OrganizationRecord {
  return {
    id: rows.text(row, 'id'),
    name: rows.text(row, 'name'),
    domain: rows.textOrNull(row, 'domain'),
    domainVerified: read.boolean(row, 'domain_verified'),
    providerId: rows.textOrNull(row, 'provider_id'),
    requirePasskey: read.boolean(row, 'require_passkey'),
    requireSecondFactor: read.boolean(row, 'require_second_factor'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

export function organizationsStores(d: Dialect, q: Runner<keyof ReturnType<typeof organizationsStatements>>): Pick<Stores, 'organizations'> {
  const { read } = d;
  const { first, every, changedAny, write } = queries(q);
  const organization = (row: Row) => organizationFromRow(row, read);
  const params = (o: OrganizationRecord) => ({
    id: o.id,
    name: o.name,
    domain: o.domain,
    domainVerified: d.flag(o.domainVerified),
    providerId: o.providerId,
    requirePasskey: d.flag(o.requirePasskey),
    requireSecondFactor: d.flag(o.requireSecondFactor),
    updatedAt: o.updatedAt,
  });
  const taken = async (o: OrganizationRecord) =>
    (await q.one('organizationTaken', { id: o.id, name: o.name, domain: o.domain, domainVerified: d.flag(o.domainVerified) })) !== undefined;
  return {
    organizations: {
      async create(o) {
        if ((await q.changed('insertOrganization', { ...params(o), createdAt: o.createdAt })) === 0) throw new DuplicateError(`organization ${o.name}`);
      },
      get: (id) => first('getOrganization', { id }, organization),
      byName: (name) => first('organizationByName', { name }, organization),
      byVerifiedDomain: (domain) => first('organizationByVerifiedDomain', { domain }, organization),
      list: () => every('listOrganizations', {}, organization),
      async update(o) {
        // The unique indexes refuse it too; asked first so that both databases say DuplicateError alike.
        if (await taken(o)) throw new DuplicateError(`organization ${o.name}`);
        return changedAny('updateOrganization', params(o));
      },
      remove: (id) => changedAny('removeOrganization', { id }),
      setMember: (member) => write('setOrganizationMember', { ...member }),
      join: (member) => changedAny('joinOrganization', { ...member }),
      removeMember: (organizationId, userId) => changedAny('removeOrganizationMember', { organizationId, userId }),
      members: (organizationId) =>
        every('organizationMembers', { organizationId }, (row) => ({
          organizationId: rows.text(row, 'organization_id'),
          userId: rows.text(row, 'user_id'),
          role: rows.oneOf(ORGANIZATION_ROLES, 'role', rows.text(row, 'role')),
          createdAt: rows.integer(row, 'created_at'),
          username: rows.text(row, 'username'),
          consoleRole: operatorRole(row, 'console_role'),
        })),
      membershipsOf: (userId) =>
        every('membershipsOf', { userId }, (row) => ({
          organization: organization(row),
          role: rows.oneOf(ORGANIZATION_ROLES, 'member_role', rows.text(row, 'member_role')),
        })),
    },
  };
}

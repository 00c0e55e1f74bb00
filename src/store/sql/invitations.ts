/**
 * Invitations (`../invitations.ts`): statements, rows and store.
 */
import { isOperatorRole } from '../../core/scopes.ts';
import { isOrganizationRole } from '../organizations.ts';
import { integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { InvitationRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

function invitationFromRow(row: Row): InvitationRecord {
  const role = textOrNull(row, 'role');
  return {
    tokenHash: text(row, 'token_hash'),
    email: text(row, 'email'),
    role: role !== null && isOperatorRole(role) ? role : null,
    clientId: textOrNull(row, 'client_id'),
    organizationId: textOrNull(row, 'organization_id'),
    organizationRole: isOrganizationRole(textOrNull(row, 'organization_role')) ? (textOrNull(row, 'organization_role') as 'owner' | 'admin' | 'member') : null,
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
  };
}

export function invitationsStatements(d: Dialect) {
  return {
    insertInvitation: `
      INSERT INTO invitations (token_hash, email, role, client_id, organization_id, organization_role, created_at, expires_at, used_at)
      VALUES (:tokenHash, :email, :role, :clientId, :organizationId, :organizationRole, :createdAt, :expiresAt, :usedAt)`,
    getInvitation: 'SELECT * FROM invitations WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumeInvitation: `
      UPDATE invitations SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    purgeInvitations: d.purge('invitations', 'token_hash', 'expires_at < :before'),
  };
}

export function invitationsStores(_d: Dialect, q: Runner<keyof ReturnType<typeof invitationsStatements>>): Pick<Stores, 'invitations'> {
  const { first, write } = queries(q);
  return {
    invitations: {
      create: (invitation) => write('insertInvitation', { ...invitation }),
      find: (tokenHash, now) => first('getInvitation', { tokenHash, now }, invitationFromRow),
      consume: (tokenHash, now) => first('consumeInvitation', { tokenHash, now }, invitationFromRow),
    },
  };
}

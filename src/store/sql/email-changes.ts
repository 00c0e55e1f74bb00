/**
 * E-mail address changes waiting for their link (`../email-changes.ts`): statements, rows and store.
 */
import { integer, integerOrNull, type Row, text } from '../rows.ts';
import type { EmailChangeRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

function emailChangeFromRow(row: Row): EmailChangeRecord {
  return {
    tokenHash: text(row, 'token_hash'),
    userId: text(row, 'user_id'),
    email: text(row, 'email'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
  };
}

export function emailChangesStatements(d: Dialect) {
  return {
    insertEmailChange: `
      INSERT INTO email_changes (token_hash, user_id, email, created_at, expires_at, used_at)
      VALUES (:tokenHash, :userId, :email, :createdAt, :expiresAt, :usedAt)`,
    getEmailChange: 'SELECT * FROM email_changes WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumeEmailChange: `
      UPDATE email_changes SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    pendingEmailChange: `
      SELECT * FROM email_changes WHERE user_id = :userId AND used_at IS NULL AND expires_at > :now
      ORDER BY created_at DESC LIMIT 1`,
    spendEmailChangesForUser: 'UPDATE email_changes SET used_at = :now WHERE user_id = :userId AND used_at IS NULL',
    purgeEmailChanges: d.purge('email_changes', 'token_hash', 'expires_at < :before'),
  };
}

export function emailChangesStores(_d: Dialect, q: Runner<keyof ReturnType<typeof emailChangesStatements>>): Pick<Stores, 'emailChanges'> {
  const { first, write } = queries(q);
  return {
    emailChanges: {
      create: (change) => write('insertEmailChange', { ...change }),
      find: (tokenHash, now) => first('getEmailChange', { tokenHash, now }, emailChangeFromRow),
      consume: (tokenHash, now) => first('consumeEmailChange', { tokenHash, now }, emailChangeFromRow),
      pendingFor: (userId, now) => first('pendingEmailChange', { userId, now }, emailChangeFromRow),
      spendAllForUser: (userId, now) => write('spendEmailChangesForUser', { userId, now }),
    },
  };
}

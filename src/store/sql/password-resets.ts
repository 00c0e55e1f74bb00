/**
 * Password reset links: their statements, rows and store.
 */

import { integer, integerOrNull, type Row, text, textOrNull } from '../rows.ts';
import type { PasswordResetRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

export function passwordResetFromRow(row: Row): PasswordResetRecord {
  return {
    tokenHash: text(row, 'token_hash'),
    userId: text(row, 'user_id'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    usedAt: integerOrNull(row, 'used_at'),
    mailedTo: textOrNull(row, 'mailed_to'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function passwordResetsStatements(d: Dialect) {
  return {
    insertPasswordReset: `
      INSERT INTO password_resets (token_hash, user_id, created_at, expires_at, used_at, mailed_to)
      VALUES (:tokenHash, :userId, :createdAt, :expiresAt, :usedAt, :mailedTo)`,
    getPasswordReset: 'SELECT * FROM password_resets WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now',
    consumePasswordReset: `
      UPDATE password_resets SET used_at = :now
      WHERE token_hash = :tokenHash AND used_at IS NULL AND expires_at > :now
      RETURNING *`,
    spendPasswordResetsForUser: 'UPDATE password_resets SET used_at = :now WHERE user_id = :userId AND used_at IS NULL',
    purgePasswordResets: d.purge('password_resets', 'token_hash', 'expires_at < :before'),
  };
}

export function passwordResetsStores(_d: Dialect, q: Runner<keyof ReturnType<typeof passwordResetsStatements>>): Pick<Stores, 'passwordResets'> {
  const { first, write } = queries(q);
  return {
    passwordResets: {
      create: (reset) => write('insertPasswordReset', { ...reset }),
      find: (tokenHash, now) => first('getPasswordReset', { tokenHash, now }, passwordResetFromRow),
      consume: (tokenHash, now) => first('consumePasswordReset', { tokenHash, now }, passwordResetFromRow),
      spendAllForUser: (userId, now) => write('spendPasswordResetsForUser', { userId, now }),
    },
  };
}

/**
 * TOTP secrets, recovery codes and sign-ins waiting for a code: their statements, rows and stores.
 */

import { authMethodsOrNull, type ColumnReader, integer, integerOrNull, type Row, text } from '../rows.ts';
import type { PendingSignInRecord, Stores, TotpRecord } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';

export function totpFromRow(row: Row): TotpRecord {
  return {
    userId: text(row, 'user_id'),
    secret: text(row, 'secret'),
    createdAt: integer(row, 'created_at'),
    confirmedAt: integerOrNull(row, 'confirmed_at'),
    lastStep: integerOrNull(row, 'last_step'),
  };
}

export function pendingSignInFromRow(row: Row, read: ColumnReader): PendingSignInRecord {
  return {
    idHash: text(row, 'id_hash'),
    userId: text(row, 'user_id'),
    amr: authMethodsOrNull(row, 'amr', read) ?? [],
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function oneTimeCodesStatements(d: Dialect) {
  return {
    // A new secret replaces one never confirmed, never a confirmed one.
    beginTotp: `
      INSERT INTO totp_secrets (user_id, secret, created_at, confirmed_at, last_step)
      VALUES (:userId, :secret, :now, NULL, NULL)
      ON CONFLICT (user_id) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_step = NULL
      WHERE totp_secrets.confirmed_at IS NULL`,
    getTotp: 'SELECT * FROM totp_secrets WHERE user_id = :userId',
    confirmTotp: `
      UPDATE totp_secrets SET confirmed_at = :now, last_step = :step
      WHERE user_id = :userId AND confirmed_at IS NULL
      RETURNING *`,
    // RFC 6238 §5.2: "the verifier MUST NOT accept the second attempt of the same OTP after
    // the successful validation has been issued for the first OTP".
    useTotpStep: `
      UPDATE totp_secrets SET last_step = :step
      WHERE user_id = :userId AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ${d.bigint(':step')})`,
    removeTotp: 'DELETE FROM totp_secrets WHERE user_id = :userId',
    insertRecoveryCode: `
      INSERT INTO recovery_codes (user_id, hash, created_at, used_at) VALUES (:userId, :hash, :createdAt, NULL)`,
    consumeRecoveryCode: `
      UPDATE recovery_codes SET used_at = :now
      WHERE user_id = :userId AND hash = :hash AND used_at IS NULL`,
    countRecoveryCodes: 'SELECT COUNT(*) AS unused FROM recovery_codes WHERE user_id = :userId AND used_at IS NULL',
    removeRecoveryCodes: 'DELETE FROM recovery_codes WHERE user_id = :userId',
    insertPendingSignIn: `
      INSERT INTO pending_sign_ins (id_hash, user_id, amr, created_at, expires_at)
      VALUES (:idHash, :userId, :amr, :createdAt, :expiresAt)`,
    getPendingSignIn: 'SELECT * FROM pending_sign_ins WHERE id_hash = :idHash AND expires_at > :now',
    consumePendingSignIn: `
      DELETE FROM pending_sign_ins WHERE id_hash = :idHash AND expires_at > :now
      RETURNING *`,
    removePendingSignInsForUser: 'DELETE FROM pending_sign_ins WHERE user_id = :userId',
    purgePendingSignIns: d.purge('pending_sign_ins', 'id_hash', 'expires_at < :before'),
  };
}

export function oneTimeCodesStores(
  d: Dialect,
  q: Runner<keyof ReturnType<typeof oneTimeCodesStatements>>,
): Pick<Stores, 'totp' | 'recoveryCodes' | 'pendingSignIns'> {
  const { read, list } = d;
  return {
    totp: {
      begin: async (userId, secret, now) => (await q.changed('beginTotp', { userId, secret, now })) > 0,
      get: async (userId) => {
        const row = await q.one('getTotp', { userId });
        return row === undefined ? null : totpFromRow(row);
      },
      confirm: async (userId, step, now) => {
        const row = await q.one('confirmTotp', { userId, step, now });
        return row === undefined ? null : totpFromRow(row);
      },
      useStep: async (userId, step) => (await q.changed('useTotpStep', { userId, step })) > 0,
      remove: async (userId) => (await q.changed('removeTotp', { userId })) > 0,
    },

    recoveryCodes: {
      async replace(userId, hashes, now) {
        await q.changed('removeRecoveryCodes', { userId });
        for (const hash of hashes) await q.changed('insertRecoveryCode', { userId, hash, createdAt: now });
      },
      consume: async (userId, hash, now) => (await q.changed('consumeRecoveryCode', { userId, hash, now })) > 0,
      countUnused: async (userId) => {
        const row = await q.one('countRecoveryCodes', { userId });
        return row === undefined ? 0 : integer(row, 'unused');
      },
      removeAllForUser: async (userId) => void (await q.changed('removeRecoveryCodes', { userId })),
    },

    pendingSignIns: {
      create: async (record) => void (await q.changed('insertPendingSignIn', { ...record, amr: list(record.amr) })),
      get: async (idHash, now) => {
        const row = await q.one('getPendingSignIn', { idHash, now });
        return row === undefined ? null : pendingSignInFromRow(row, read);
      },
      consume: async (idHash, now) => {
        const row = await q.one('consumePendingSignIn', { idHash, now });
        return row === undefined ? null : pendingSignInFromRow(row, read);
      },
      removeForUser: async (userId) => void (await q.changed('removePendingSignInsForUser', { userId })),
    },
  };
}

/**
 * The passkey and one-time-code stores over a driver's `Runner`, beside `sqlStores` so that
 * each method stays one statement of `statements.ts`.
 */

import * as rows from '../rows.ts';
import { DuplicateError, type Stores } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';

type SecondFactorStores = Pick<Stores, 'passkeys' | 'webauthnChallenges' | 'totp' | 'recoveryCodes' | 'pendingSignIns'>;

export function secondFactorStores(d: Dialect, q: Runner): SecondFactorStores {
  const { read, list, flag } = d;
  const passkey = (row: rows.Row) => rows.passkeyFromRow(row, read);
  return {
    passkeys: {
      async create(record) {
        const inserted = await q.changed('insertPasskey', {
          ...record,
          transports: list(record.transports),
          backedUp: flag(record.backedUp),
        });
        if (inserted === 0) throw new DuplicateError('passkey');
      },
      get: async (id) => {
        const row = await q.one('getPasskey', { id });
        return row === undefined ? null : passkey(row);
      },
      listForUser: async (userId) => (await q.all('listPasskeysForUser', { userId })).map(passkey),
      recordUse: async (id, use, now) => {
        const row = await q.one('recordPasskeyUse', { id, counter: use.counter, backedUp: flag(use.backedUp), now });
        return row === undefined ? null : passkey(row);
      },
      remove: async (id, userId) => (await q.changed('removePasskey', { id, userId })) > 0,
      removeAllForUser: (userId) => q.changed('removePasskeysForUser', { userId }),
    },

    webauthnChallenges: {
      create: async (record) => void (await q.changed('insertWebauthnChallenge', { ...record })),
      consume: async (challengeHash, purpose, now) => {
        const row = await q.one('consumeWebauthnChallenge', { challengeHash, purpose, now });
        return row === undefined ? null : rows.webauthnChallengeFromRow(row);
      },
      removeForUser: async (userId) => void (await q.changed('removeWebauthnChallengesForUser', { userId })),
    },

    totp: {
      begin: async (userId, secret, now) => (await q.changed('beginTotp', { userId, secret, now })) > 0,
      get: async (userId) => {
        const row = await q.one('getTotp', { userId });
        return row === undefined ? null : rows.totpFromRow(row);
      },
      confirm: async (userId, step, now) => {
        const row = await q.one('confirmTotp', { userId, step, now });
        return row === undefined ? null : rows.totpFromRow(row);
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
        return row === undefined ? 0 : rows.integer(row, 'unused');
      },
      removeAllForUser: async (userId) => void (await q.changed('removeRecoveryCodes', { userId })),
    },

    pendingSignIns: {
      create: async (record) => void (await q.changed('insertPendingSignIn', { ...record })),
      get: async (idHash, now) => {
        const row = await q.one('getPendingSignIn', { idHash, now });
        return row === undefined ? null : rows.pendingSignInFromRow(row);
      },
      consume: async (idHash, now) => {
        const row = await q.one('consumePendingSignIn', { idHash, now });
        return row === undefined ? null : rows.pendingSignInFromRow(row);
      },
      removeForUser: async (userId) => void (await q.changed('removePendingSignInsForUser', { userId })),
    },
  };
}

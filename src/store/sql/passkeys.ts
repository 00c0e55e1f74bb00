/**
 * Passkeys and their ceremonies' challenges: their statements, rows and stores.
 */

import { type ColumnReader, integer, integerOrNull, oneOf, type Row, text, textOrNull } from '../rows.ts';
import { DuplicateError, type PasskeyRecord, type Stores, type WebauthnChallengeRecord } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';

const deviceTypes: readonly PasskeyRecord['deviceType'][] = ['singleDevice', 'multiDevice'];
const challengePurposes: readonly WebauthnChallengeRecord['purpose'][] = ['register', 'authenticate'];

export function passkeyFromRow(row: Row, read: ColumnReader): PasskeyRecord {
  return {
    id: text(row, 'id'),
    userId: text(row, 'user_id'),
    name: text(row, 'name'),
    publicKey: text(row, 'public_key'),
    counter: integer(row, 'counter'),
    transports: read.strings(row, 'transports'),
    deviceType: oneOf(deviceTypes, 'device_type', text(row, 'device_type')),
    backedUp: read.boolean(row, 'backed_up'),
    createdAt: integer(row, 'created_at'),
    lastUsedAt: integerOrNull(row, 'last_used_at'),
  };
}

export function webauthnChallengeFromRow(row: Row): WebauthnChallengeRecord {
  return {
    challengeHash: text(row, 'challenge_hash'),
    purpose: oneOf(challengePurposes, 'purpose', text(row, 'purpose')),
    userId: textOrNull(row, 'user_id'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function passkeysStatements(d: Dialect) {
  return {
    insertPasskey: `
      INSERT INTO passkeys (id, user_id, name, public_key, counter, transports, device_type, backed_up, created_at, last_used_at)
      VALUES (:id, :userId, :name, :publicKey, :counter, :transports, :deviceType, :backedUp, :createdAt, :lastUsedAt)
      ON CONFLICT DO NOTHING`,
    getPasskey: 'SELECT * FROM passkeys WHERE id = :id',
    listPasskeysForUser: 'SELECT * FROM passkeys WHERE user_id = :userId ORDER BY created_at, id',
    // WebAuthn §6.1.1: a signature counter that does not move forward (both zero excepted:
    // an authenticator without one) means a cloned authenticator, or a replay racing this
    // sign-in; either way this statement changes nothing and the caller refuses.
    recordPasskeyUse: `
      UPDATE passkeys SET counter = :counter, backed_up = :backedUp, last_used_at = :now
      WHERE id = :id AND (counter < ${d.bigint(':counter')} OR (counter = 0 AND ${d.bigint(':counter')} = 0))
      RETURNING *`,
    removePasskey: 'DELETE FROM passkeys WHERE id = :id AND user_id = :userId',
    removePasskeysForUser: 'DELETE FROM passkeys WHERE user_id = :userId',
    insertWebauthnChallenge: `
      INSERT INTO webauthn_challenges (challenge_hash, purpose, user_id, created_at, expires_at)
      VALUES (:challengeHash, :purpose, :userId, :createdAt, :expiresAt)`,
    // Single use: the one caller whose DELETE finds the row may finish the ceremony.
    consumeWebauthnChallenge: `
      DELETE FROM webauthn_challenges
      WHERE challenge_hash = :challengeHash AND purpose = :purpose AND expires_at > :now
      RETURNING *`,
    removeWebauthnChallengesForUser: 'DELETE FROM webauthn_challenges WHERE user_id = :userId',
    purgeWebauthnChallenges: d.purge('webauthn_challenges', 'challenge_hash', 'expires_at < :before'),
  };
}

export function passkeysStores(d: Dialect, q: Runner<keyof ReturnType<typeof passkeysStatements>>): Pick<Stores, 'passkeys' | 'webauthnChallenges'> {
  const { read, list, flag } = d;
  const passkey = (row: Row) => passkeyFromRow(row, read);
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
        return row === undefined ? null : webauthnChallengeFromRow(row);
      },
      removeForUser: async (userId) => void (await q.changed('removeWebauthnChallengesForUser', { userId })),
    },
  };
}

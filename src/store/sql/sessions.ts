/**
 * Browser sessions and the clients of each: their statements, rows and store.
 */

import { authMethodsOrNull, type ColumnReader, integer, type Row, text, textOrNull } from '../rows.ts';
import type { SessionRecord, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

export function sessionFromRow(row: Row, read: ColumnReader): SessionRecord {
  const amr = authMethodsOrNull(row, 'amr', read);
  return {
    idHash: text(row, 'id_hash'),
    sid: text(row, 'sid'),
    userId: text(row, 'user_id'),
    authTime: integer(row, 'auth_time'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    ...(amr === null ? {} : { amr }),
    ip: textOrNull(row, 'ip'),
    userAgent: textOrNull(row, 'user_agent'),
  };
}

/** The statements, by name, in `d`'s SQL. */
export function sessionsStatements(d: Dialect) {
  return {
    insertSession: `
      INSERT INTO sessions (id_hash, sid, user_id, auth_time, created_at, expires_at, ip, user_agent, amr)
      VALUES (:idHash, :sid, :userId, :authTime, :createdAt, :expiresAt, :ip, :userAgent, :amr)`,
    getSession: 'SELECT * FROM sessions WHERE id_hash = :idHash AND expires_at > :now',
    continueSession: `
      UPDATE sessions SET id_hash = :idHash, auth_time = :authTime, created_at = :createdAt, expires_at = :expiresAt,
        ip = :ip, user_agent = :userAgent, amr = :amr
      WHERE id_hash = :previousHash AND sid = :sid AND user_id = :userId
      RETURNING *`,
    removeSession: 'DELETE FROM sessions WHERE id_hash = :idHash RETURNING *',
    listSessionsForUser: `
      SELECT * FROM sessions WHERE user_id = :userId AND expires_at > :now
      ORDER BY created_at DESC, id_hash`,
    removeSessionsForUser: 'DELETE FROM sessions WHERE user_id = :userId AND id_hash <> :except RETURNING *',
    addSessionClient: `
      INSERT INTO session_clients (sid, client_id, expires_at) VALUES (:sid, :clientId, :expiresAt)
      ON CONFLICT (sid, client_id) DO UPDATE SET expires_at = ${d.greatest('session_clients.expires_at', 'excluded.expires_at')}`,
    // Delivered once: whoever deletes a row is the one who sends its logout token.
    takeSessionClients: 'DELETE FROM session_clients WHERE sid = :sid RETURNING client_id',
    purgeSessions: d.purge('sessions', 'id_hash', 'expires_at < :before'),
    // By session id, as the purge deletes: a sid's clients go once its last has expired. A
    // client's row expiring first must not take the others with it, or they would miss the
    // session's back-channel logout.
    purgeSessionClients: d.purge(
      'session_clients',
      'sid',
      'expires_at < :before AND NOT EXISTS (SELECT 1 FROM session_clients later WHERE later.sid = session_clients.sid AND later.expires_at >= :before)',
    ),
  };
}

export function sessionsStores(d: Dialect, q: Runner<keyof ReturnType<typeof sessionsStatements>>): Pick<Stores, 'sessions'> {
  const { read, list } = d;
  const { first, every, write } = queries(q);
  const sessionParams = (session: SessionRecord) => ({ ...session, amr: session.amr === undefined ? null : list(session.amr) });
  return {
    sessions: {
      create: (session) => write('insertSession', sessionParams(session)),
      continue: (previousHash, next) => first('continueSession', { ...sessionParams(next), previousHash }, (row) => sessionFromRow(row, read)),
      get: (idHash, now) => first('getSession', { idHash, now }, (row) => sessionFromRow(row, read)),
      remove: (idHash) => first('removeSession', { idHash }, (row) => sessionFromRow(row, read)),
      listForUser: (userId, now) => every('listSessionsForUser', { userId, now }, (row) => sessionFromRow(row, read)),
      // No session id hashes to the empty string.
      removeForUser: (userId, except) => every('removeSessionsForUser', { userId, except: except ?? '' }, (row) => sessionFromRow(row, read)),
      addClient: (sid, clientId, expiresAt) => write('addSessionClient', { sid, clientId, expiresAt }),
      takeClients: (sid) => every('takeSessionClients', { sid }, (row) => text(row, 'client_id')),
    },
  };
}

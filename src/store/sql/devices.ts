/**
 * Device authorization requests: their statements, rows and store.
 */

import { type ColumnReader, integer, integerOrNull, oneOf, type Row, text, textOrNull } from '../rows.ts';
import type { DeviceAuthorizationRecord, DevicePollOutcome, DeviceStatus, Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';
import { eventParams } from './events.ts';

const deviceStatuses: readonly DeviceStatus[] = ['pending', 'approved', 'denied', 'consumed'];
const pollOutcomes: readonly DevicePollOutcome[] = ['expired', 'consumed', 'denied', 'slow_down', 'issue', 'pending'];

/**
 * The interval stops growing here: no device code lives longer (the seed's ten minutes), so
 * a larger interval would change no answer, and the bound keeps `poll_interval * 1000` far
 * inside PostgreSQL's 32-bit integer however often a device is told to slow down.
 */
export const MAX_POLL_INTERVAL_SECONDS = 600;

/**
 * What inserting a device authorization does when its user code is taken: a user code is
 * unique among live records only, so an expired record holding it is replaced in the same
 * statement, and a live one makes the insert do nothing.
 */
export const DEVICE_USER_CODE_CONFLICT = `ON CONFLICT (user_code) DO UPDATE SET
  device_code_hash = excluded.device_code_hash, client_id = excluded.client_id, scope = excluded.scope,
  status = excluded.status, poll_interval = excluded.poll_interval, last_polled_at = excluded.last_polled_at,
  last_outcome = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at,
  request_ip = excluded.request_ip, request_user_agent = excluded.request_user_agent,
  user_id = excluded.user_id, auth_time = excluded.auth_time, grant_id = excluded.grant_id,
  decided_at = excluded.decided_at, dpop_jkt = excluded.dpop_jkt
WHERE device_authorizations.expires_at <= excluded.created_at`;

/**
 * What one device poll finds (`DevicePollOutcome`), as an SQL expression over the row as
 * it was before the poll, in the documented order. RFC 8628 §3.5: "expired_token: The
 * device_code has expired"; "slow_down: ... the interval MUST be increased by 5 seconds
 * for this and all subsequent requests". A first poll (no `last_polled_at`) is never too
 * soon.
 */
function devicePollOutcome(now: string): string {
  return `(CASE
    WHEN expires_at <= ${now} THEN 'expired'
    WHEN status = 'consumed' THEN 'consumed'
    WHEN status = 'denied' THEN 'denied'
    WHEN last_polled_at IS NOT NULL AND ${now} - last_polled_at < poll_interval * 1000 THEN 'slow_down'
    WHEN status = 'approved' THEN 'issue'
    ELSE 'pending'
  END)`;
}

/**
 * The SET list of the device poll's one UPDATE. Every expression in a SET list sees the
 * row as it was before the UPDATE (in SQLite and PostgreSQL alike), so the outcome is
 * computed once from the old row and drives the other columns: `slow_down` grows the
 * interval, `issue` consumes the record. Concurrent polls are serialised (SQLite's write
 * lock, PostgreSQL's row lock) and each sees the row its predecessor left: one `issue`,
 * then `consumed`. Once a record has expired, `last_polled_at` keeps the time of the first
 * poll that found it so: that poll alone is told it was the first (`last_polled_at` equal
 * to its `now`), so that a device polling on after `expired_token` is recorded once.
 */
export function devicePollAssignments(now: string): string {
  const outcome = devicePollOutcome(now);
  return `last_outcome = ${outcome},
    poll_interval = CASE WHEN ${outcome} = 'slow_down' AND poll_interval < ${MAX_POLL_INTERVAL_SECONDS} THEN poll_interval + 5 ELSE poll_interval END,
    status = CASE ${outcome} WHEN 'issue' THEN 'consumed' ELSE status END,
    last_polled_at = CASE WHEN ${outcome} = 'expired' AND last_outcome = 'expired' THEN last_polled_at ELSE ${now} END`;
}

export function deviceFromRow(row: Row, read: ColumnReader): DeviceAuthorizationRecord {
  return {
    deviceCodeHash: text(row, 'device_code_hash'),
    userCode: text(row, 'user_code'),
    clientId: text(row, 'client_id'),
    scope: read.strings(row, 'scope'),
    status: oneOf(deviceStatuses, 'status', text(row, 'status')),
    interval: integer(row, 'poll_interval'),
    lastPolledAt: integerOrNull(row, 'last_polled_at'),
    createdAt: integer(row, 'created_at'),
    expiresAt: integer(row, 'expires_at'),
    requestIp: text(row, 'request_ip'),
    requestUserAgent: textOrNull(row, 'request_user_agent'),
    userId: textOrNull(row, 'user_id'),
    authTime: integerOrNull(row, 'auth_time'),
    grantId: textOrNull(row, 'grant_id'),
    decidedAt: integerOrNull(row, 'decided_at'),
    dpopJkt: textOrNull(row, 'dpop_jkt'),
  };
}

/** The outcome the device poll's UPDATE stored in `last_outcome` and returned. */
export function pollOutcomeFromRow(row: Row): DevicePollOutcome {
  return oneOf(pollOutcomes, 'last_outcome', text(row, 'last_outcome'));
}

/** The statements, by name, in `d`'s SQL. */
export function devicesStatements(d: Dialect) {
  return {
    insertDevice: `
      INSERT INTO device_authorizations (device_code_hash, user_code, client_id, scope, status, poll_interval,
                                         last_polled_at, last_outcome, created_at, expires_at, request_ip,
                                         request_user_agent, user_id, auth_time, grant_id, decided_at, dpop_jkt)
      VALUES (:deviceCodeHash, :userCode, :clientId, :scope, :status, :interval,
              :lastPolledAt, NULL, :createdAt, :expiresAt, :requestIp,
              :requestUserAgent, :userId, :authTime, :grantId, :decidedAt, :dpopJkt)
      ${DEVICE_USER_CODE_CONFLICT}`,
    // Run just after insertDevice, in the same commit: the event of a record that was stored.
    insertDeviceEvent: `
      INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail)
      SELECT :id, :type, :at, :userId, :username, :clientId, :grantId, :ip, :userAgent, :detail
      WHERE EXISTS (SELECT 1 FROM device_authorizations WHERE device_code_hash = :deviceCodeHash AND created_at = :createdAt)`,
    getDeviceByUserCode: 'SELECT * FROM device_authorizations WHERE user_code = :userCode AND expires_at > :now',
    // By its device code hash too: the user code of an expired record is given to the next
    // (DEVICE_USER_CODE_CONFLICT), and a decision is for the request its approver was shown.
    decideDevice: `
      UPDATE device_authorizations
      SET status = :status, user_id = :userId, auth_time = :authTime, grant_id = :grantId, decided_at = :now
      WHERE device_code_hash = :deviceCodeHash AND status = 'pending' AND expires_at > :now
      RETURNING *`,
    // A device code bound to a DPoP key is polled only with a proof by that key: any other
    // poll leaves the record as it is, so it can neither take the tokens nor slow the device.
    pollDevice: `
      UPDATE device_authorizations SET ${devicePollAssignments(d.bigint(':now'))},
        dpop_jkt = COALESCE(dpop_jkt, :dpopJkt)
      WHERE device_code_hash = :deviceCodeHash AND client_id = :clientId
        AND (dpop_jkt IS NULL OR dpop_jkt = :dpopJkt)
      RETURNING *`,
    getDevice: 'SELECT * FROM device_authorizations WHERE device_code_hash = :deviceCodeHash',
    countPendingDevices: `SELECT COUNT(*) AS pending FROM device_authorizations WHERE status = 'pending' AND expires_at > :now`,
    removeDevicesForUser: 'DELETE FROM device_authorizations WHERE user_id = :userId',
    listPendingDevices: `
      SELECT * FROM device_authorizations WHERE status = 'pending' AND expires_at > :now
      ORDER BY created_at, device_code_hash LIMIT :limit`,
    purgeDevices: d.purge('device_authorizations', 'device_code_hash', 'expires_at < :before'),
  };
}

export function devicesStores(d: Dialect, q: Runner<keyof ReturnType<typeof devicesStatements>>): Pick<Stores, 'devices'> {
  const { read, list } = d;
  const { first, every, changedAny, write } = queries(q);
  const device = (row: Row) => deviceFromRow(row, read);
  return {
    devices: {
      async create(record, event) {
        const inserted = changedAny('insertDevice', { ...record, scope: list(record.scope) });
        if (!event) return inserted;
        // Issued together, not one after the other's answer: a driver runs a connection's
        // statements in order, and SQLite's group commit commits both at once.
        const [stored] = await Promise.all([
          inserted,
          write('insertDeviceEvent', { ...eventParams(event), deviceCodeHash: record.deviceCodeHash, createdAt: record.createdAt }),
        ]);
        return stored;
      },
      findByUserCode: (userCode, now) => first('getDeviceByUserCode', { userCode, now }, device),
      decide: ({ deviceCodeHash }, decision, now) =>
        first(
          'decideDevice',
          {
            deviceCodeHash,
            status: decision.approve ? 'approved' : 'denied',
            userId: decision.approve ? decision.userId : null,
            authTime: decision.approve ? decision.authTime : null,
            grantId: decision.approve ? decision.grantId : null,
            now,
          },
          device,
        ),
      poll: (deviceCodeHash, clientId, now, dpopJkt = null) =>
        first('pollDevice', { deviceCodeHash, clientId, now, dpopJkt }, (row) => ({ outcome: pollOutcomeFromRow(row), record: device(row) })),
      find: (deviceCodeHash) => first('getDevice', { deviceCodeHash }, device),
      // COUNT(*) is a bigint in PostgreSQL, which the driver reads as a number.
      countPending: async (now) => (await first('countPendingDevices', { now }, (row) => Number(row['pending']))) ?? 0,
      listPending: (now, limit) => every('listPendingDevices', { now, limit }, device),
      removeForUser: (userId) => q.changed('removeDevicesForUser', { userId }),
    },
  };
}

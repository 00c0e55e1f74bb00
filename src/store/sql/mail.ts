/**
 * Mail in the outbox (`../mail.ts`): statements written once, and the store over a driver's `Runner`.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { Stores } from '../types.ts';
import type { MailDeliveryRecord } from '../mail.ts';
import type { DeliveryState } from '../webhooks.ts';
import type { Dialect, Runner } from './dialect.ts';

export function mailStatements(_d: Dialect) {
  const free = "state = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)";
  return {
    insertMail: `
      INSERT INTO mail_deliveries (id, event_id, kind, message, state, attempts, queued_at, next_attempt_at)
      VALUES (:id, :eventId, :kind, :message, 'pending', 0, :now, :now)`,
    // The oldest due message; under READ COMMITTED a second instance's UPDATE waits for the
    // first's row lock, then finds the lease taken and claims nothing this round.
    claimMail: `
      UPDATE mail_deliveries SET attempts = attempts + 1, lease_until = :leaseUntil
      WHERE ${free} AND id = (SELECT id FROM mail_deliveries WHERE ${free} ORDER BY next_attempt_at, id LIMIT 1)
      RETURNING *`,
    // `attempts` fences the answer of a try whose lease ran out and was taken over. A delivered
    // message's text (its link) is not kept.
    deliveredMail: `
      UPDATE mail_deliveries SET state = 'delivered', delivered_at = :now, lease_until = NULL, last_error = NULL, message = NULL
      WHERE id = :id AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    failedMail: `
      UPDATE mail_deliveries SET state = CASE WHEN queued_at <= :deadBefore THEN 'dead' ELSE 'pending' END,
        next_attempt_at = :nextAttemptAt, lease_until = NULL, last_error = :error
      WHERE id = :id AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    releaseMail: `
      UPDATE mail_deliveries SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = :now
      WHERE id = :id AND attempts = :attempts AND state = 'pending'`,
    mailForEvent: 'SELECT * FROM mail_deliveries WHERE event_id = :eventId ORDER BY queued_at, id',
    countMail: "SELECT state, COUNT(*) AS count FROM mail_deliveries WHERE state <> 'delivered' GROUP BY state",
  };
}

const STATES: readonly DeliveryState[] = ['pending', 'delivered', 'dead'];

function mailFromRow(row: Row, read: ColumnReader): MailDeliveryRecord {
  return {
    id: rows.text(row, 'id'),
    eventId: rows.text(row, 'event_id'),
    kind: rows.text(row, 'kind'),
    message: row['message'] === null || row['message'] === undefined ? null : read.object(row, 'message'),
    state: rows.oneOf(STATES, 'state', rows.text(row, 'state')),
    attempts: rows.integer(row, 'attempts'),
    queuedAt: rows.integer(row, 'queued_at'),
    nextAttemptAt: rows.integer(row, 'next_attempt_at'),
    leaseUntil: rows.integerOrNull(row, 'lease_until'),
    deliveredAt: rows.integerOrNull(row, 'delivered_at'),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

export function mailStores(d: Dialect, q: Runner<keyof ReturnType<typeof mailStatements>>): Pick<Stores, 'mail'> {
  const { read } = d;
  const settled = (row: Row | undefined) => (row === undefined ? null : rows.oneOf(STATES, 'state', rows.text(row, 'state')));
  return {
    mail: {
      enqueue: async (delivery, now) =>
        void (await q.changed('insertMail', {
          id: delivery.id,
          eventId: delivery.eventId,
          kind: delivery.kind,
          message: delivery.message === null ? null : JSON.stringify(delivery.message),
          now,
        })),
      claim: async (now, leaseUntil) => {
        const row = await q.one('claimMail', { now, leaseUntil });
        return row === undefined ? null : mailFromRow(row, read);
      },
      settle: async (id, attempts, outcome, now) =>
        outcome.kind === 'delivered'
          ? settled(await q.one('deliveredMail', { id, attempts, now }))
          : settled(
              await q.one('failedMail', {
                id,
                attempts,
                error: outcome.error.slice(0, 500),
                nextAttemptAt: outcome.nextAttemptAt,
                deadBefore: outcome.deadBefore,
              }),
            ),
      release: async (id, attempts, now) => void (await q.changed('releaseMail', { id, attempts, now })),
      forEvent: async (eventId) => (await q.all('mailForEvent', { eventId })).map((row) => mailFromRow(row, read)),
      countByState: async () => {
        const counts = { pending: 0, dead: 0 };
        for (const row of await q.all('countMail')) {
          const state = rows.text(row, 'state');
          if (state === 'pending' || state === 'dead') counts[state] = Number(row['count']);
        }
        return counts;
      },
    },
  };
}

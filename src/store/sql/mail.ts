/**
 * Mail in the outbox (`../mail.ts`): statements written once, and the store over a driver's
 * `Runner`; claimed, settled and released by the outbox's statements (./outbox.ts).
 */
import type { Stores } from '../types.ts';
import type { Dialect, Runner } from './dialect.ts';
import { claimNext, mailDeliveryFromRow, outboxStore, type OutboxStatementName } from './outbox.ts';

export function mailStatements(_d: Dialect) {
  return {
    insertMail: `
      INSERT INTO mail_deliveries (id, event_id, kind, message, state, attempts, queued_at, next_attempt_at)
      VALUES (:id, :eventId, :kind, :message, 'pending', 0, :now, :now)`,
    mailForEvent: 'SELECT * FROM mail_deliveries WHERE event_id = :eventId ORDER BY queued_at, id',
  };
}

export function mailStores(d: Dialect, q: Runner<keyof ReturnType<typeof mailStatements> | OutboxStatementName>): Pick<Stores, 'mail'> {
  const outbox = outboxStore(d, q);
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
      claim: (now, leaseUntil) => claimNext(d, q, 'mail', now, leaseUntil),
      settle: (id, attempts, outcome, now) => outbox.settle('mail', id, id, attempts, { ...outcome, status: null }, now),
      release: (id, attempts, now) => outbox.release('mail', id, id, attempts, now),
      forEvent: async (eventId) => (await q.all('mailForEvent', { eventId })).map((row) => mailDeliveryFromRow(row, d.read)),
      countByState: () => outbox.countByState('mail'),
    },
  };
}

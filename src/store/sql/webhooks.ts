/**
 * Webhooks and their deliveries (`../webhooks.ts`): statements written once, and the store
 * over a driver's `Runner`. The delivery rows themselves are inserted by the trigger on
 * `events` (migrations.ts, version 23), never here.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { Stores } from '../types.ts';
import { DuplicateError } from '../errors.ts';
import type { DeliveryState, WebhookDeliveryRecord, WebhookRecord } from '../webhooks.ts';
import type { Dialect, Runner } from './dialect.ts';
import { eventFromRow } from './events.ts';

/** The statements, by name, in `d`'s SQL. */
export function webhooksStatements(_d: Dialect) {
  const delivery = 'webhook_id = :webhookId AND event_id = :eventId';
  return {
    insertWebhook: `
      INSERT INTO webhooks (id, url, events, secret, previous_secret, previous_secret_expires_at, added_by_owner, created_at, updated_at)
      VALUES (:id, :url, :events, :secret, :previousSecret, :previousSecretExpiresAt, :addedByOwner, :createdAt, :updatedAt)
      ON CONFLICT DO NOTHING`,
    getWebhook: 'SELECT * FROM webhooks WHERE id = :id',
    listWebhooks: 'SELECT * FROM webhooks ORDER BY created_at, id',
    // Its deliveries go with it: ON DELETE CASCADE.
    removeWebhook: 'DELETE FROM webhooks WHERE id = :id',
    rotateWebhookSecret: `
      UPDATE webhooks SET previous_secret = CASE WHEN CAST(:previousSecretExpiresAt AS BIGINT) IS NULL THEN NULL ELSE secret END,
        previous_secret_expires_at = :previousSecretExpiresAt, secret = :secret, updated_at = :now
      WHERE id = :id`,
    resealWebhook: 'UPDATE webhooks SET secret = :secret, previous_secret = :previousSecret WHERE id = :id',
    // Each webhook's head (its oldest pending delivery), found through (webhook_id, state,
    // event_at, event_id): one probe per webhook, however long its backlog.
    dueWebhooks: `
      SELECT w.id FROM webhooks w WHERE (
        SELECT CASE WHEN d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until <= :now) THEN 1 ELSE 0 END
        FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.state = 'pending'
        ORDER BY d.event_at, d.event_id LIMIT 1) = 1
      LIMIT :limit`,
    // The webhook's head (its oldest pending delivery), taken only if due and free: later
    // events wait behind it, so that a receiver hears them in order. Under READ COMMITTED a
    // second instance's UPDATE waits for the first's row lock, then finds the lease taken.
    claimWebhookDelivery: `
      UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = :leaseUntil
      WHERE webhook_id = :webhookId AND state = 'pending' AND next_attempt_at <= :now AND (lease_until IS NULL OR lease_until <= :now)
        AND event_id = (
          SELECT event_id FROM webhook_deliveries
          WHERE webhook_id = :webhookId AND state = 'pending'
          ORDER BY event_at, event_id LIMIT 1)
      RETURNING *`,
    webhookEvent: 'SELECT * FROM events WHERE id = :eventId',
    // `attempts` fences the answer of a try whose lease ran out and was taken over.
    deliveredWebhook: `
      UPDATE webhook_deliveries SET state = 'delivered', delivered_at = :now, lease_until = NULL, last_status = :status, last_error = NULL
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    failedWebhook: `
      UPDATE webhook_deliveries SET state = CASE WHEN queued_at <= :deadBefore THEN 'dead' ELSE 'pending' END,
        next_attempt_at = :nextAttemptAt, lease_until = NULL, last_status = :status, last_error = :error
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'
      RETURNING state`,
    releaseWebhookDelivery: `
      UPDATE webhook_deliveries SET attempts = attempts - 1, lease_until = NULL, next_attempt_at = :now
      WHERE ${delivery} AND attempts = :attempts AND state = 'pending'`,
    listWebhookDeliveries: `
      SELECT * FROM webhook_deliveries
      WHERE webhook_id = :webhookId AND (CAST(:state AS TEXT) IS NULL OR state = :state)
      ORDER BY event_at DESC, event_id DESC
      LIMIT :limit`,
    replayWebhookDeliveries: `
      UPDATE webhook_deliveries SET state = 'pending', attempts = 0, queued_at = :now, next_attempt_at = :now, lease_until = NULL
      WHERE webhook_id = :webhookId AND state = 'dead' AND (CAST(:eventId AS TEXT) IS NULL OR event_id = :eventId)`,
    countDeliveriesByWebhook: 'SELECT webhook_id, state, COUNT(*) AS count FROM webhook_deliveries GROUP BY webhook_id, state',
    countWebhookDeliveries: "SELECT state, COUNT(*) AS count FROM webhook_deliveries WHERE state <> 'delivered' GROUP BY state",
  };
}

function webhookFromRow(row: Row, read: ColumnReader): WebhookRecord {
  return {
    id: rows.text(row, 'id'),
    url: rows.text(row, 'url'),
    events: read.strings(row, 'events'),
    secret: read.object(row, 'secret'),
    previousSecret: row['previous_secret'] === null ? null : read.object(row, 'previous_secret'),
    previousSecretExpiresAt: rows.integerOrNull(row, 'previous_secret_expires_at'),
    addedByOwner: read.boolean(row, 'added_by_owner'),
    createdAt: rows.integer(row, 'created_at'),
    updatedAt: rows.integer(row, 'updated_at'),
  };
}

const STATES: readonly DeliveryState[] = ['pending', 'delivered', 'dead'];

function deliveryFromRow(row: Row): WebhookDeliveryRecord {
  return {
    webhookId: rows.text(row, 'webhook_id'),
    eventId: rows.text(row, 'event_id'),
    eventAt: rows.integer(row, 'event_at'),
    state: rows.oneOf(STATES, 'state', rows.text(row, 'state')),
    attempts: rows.integer(row, 'attempts'),
    queuedAt: rows.integer(row, 'queued_at'),
    nextAttemptAt: rows.integer(row, 'next_attempt_at'),
    leaseUntil: rows.integerOrNull(row, 'lease_until'),
    deliveredAt: rows.integerOrNull(row, 'delivered_at'),
    lastStatus: rows.integerOrNull(row, 'last_status'),
    lastError: rows.textOrNull(row, 'last_error'),
  };
}

export function webhooksStores(d: Dialect, q: Runner<keyof ReturnType<typeof webhooksStatements>>): Pick<Stores, 'webhooks'> {
  const { read } = d;
  const settled = (row: Row | undefined) => (row === undefined ? null : rows.oneOf(STATES, 'state', rows.text(row, 'state')));
  return {
    webhooks: {
      async create(webhook) {
        const inserted = await q.changed('insertWebhook', {
          id: webhook.id,
          url: webhook.url,
          events: d.list(webhook.events),
          secret: JSON.stringify(webhook.secret),
          previousSecret: webhook.previousSecret === null ? null : JSON.stringify(webhook.previousSecret),
          previousSecretExpiresAt: webhook.previousSecretExpiresAt,
          addedByOwner: d.flag(webhook.addedByOwner),
          createdAt: webhook.createdAt,
          updatedAt: webhook.updatedAt,
        });
        if (inserted === 0) throw new DuplicateError(`webhook ${webhook.id}`);
      },
      get: async (id) => {
        const row = await q.one('getWebhook', { id });
        return row === undefined ? null : webhookFromRow(row, read);
      },
      list: async () => (await q.all('listWebhooks')).map((row) => webhookFromRow(row, read)),
      remove: async (id) => (await q.changed('removeWebhook', { id })) > 0,
      reseal: async (id, secret, previousSecret) =>
        (await q.changed('resealWebhook', {
          id,
          secret: JSON.stringify(secret),
          previousSecret: previousSecret === null ? null : JSON.stringify(previousSecret),
        })) > 0,
      rotateSecret: async (id, secret, previousSecretExpiresAt, now) =>
        (await q.changed('rotateWebhookSecret', { id, secret: JSON.stringify(secret), previousSecretExpiresAt, now })) > 0,
      due: async (now, limit) => (await q.all('dueWebhooks', { now, limit })).map((row) => rows.text(row, 'id')),
      claim: async (webhookId, now, leaseUntil) => {
        const row = await q.one('claimWebhookDelivery', { webhookId, now, leaseUntil });
        return row === undefined ? null : deliveryFromRow(row);
      },
      event: async (eventId) => {
        const row = await q.one('webhookEvent', { eventId });
        return row === undefined ? null : eventFromRow(row, read);
      },
      settle: async (webhookId, eventId, attempts, outcome, now) =>
        outcome.kind === 'delivered'
          ? settled(await q.one('deliveredWebhook', { webhookId, eventId, attempts, now, status: outcome.status }))
          : settled(
              await q.one('failedWebhook', {
                webhookId,
                eventId,
                attempts,
                status: outcome.status,
                error: outcome.error.slice(0, 500),
                nextAttemptAt: outcome.nextAttemptAt,
                deadBefore: outcome.deadBefore,
              }),
            ),
      release: async (webhookId, eventId, attempts, now) => void (await q.changed('releaseWebhookDelivery', { webhookId, eventId, attempts, now })),
      deliveries: async (webhookId, filter) =>
        (await q.all('listWebhookDeliveries', { webhookId, state: filter.state ?? null, limit: filter.limit })).map(deliveryFromRow),
      replay: (webhookId, eventId, now) => q.changed('replayWebhookDeliveries', { webhookId, eventId, now }),
      countsByWebhook: async () => {
        const counts = new Map<string, Record<DeliveryState, number>>();
        for (const row of await q.all('countDeliveriesByWebhook')) {
          const id = rows.text(row, 'webhook_id');
          const of = counts.get(id) ?? { pending: 0, delivered: 0, dead: 0 };
          of[rows.oneOf(STATES, 'state', rows.text(row, 'state'))] = Number(row['count']);
          counts.set(id, of);
        }
        return counts;
      },
      countByState: async () => {
        const counts = { pending: 0, dead: 0 };
        for (const row of await q.all('countWebhookDeliveries')) {
          const state = rows.text(row, 'state');
          if (state === 'pending' || state === 'dead') counts[state] = Number(row['count']);
        }
        return counts;
      },
    },
  };
}

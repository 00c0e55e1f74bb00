/**
 * Webhooks and their deliveries (`../webhooks.ts`): statements written once, and the store
 * over a driver's `Runner`. The delivery rows themselves are written by the outbox
 * (./outbox.ts) from the events past the webhook's cursor, which starts at its creation.
 */
import * as rows from '../rows.ts';
import type { ColumnReader, Row } from '../rows.ts';
import type { Stores } from '../types.ts';
import { DuplicateError } from '../errors.ts';
import type { DeliveryState, WebhookRecord } from '../webhooks.ts';
import type { Dialect, Runner } from './dialect.ts';
import { NEW_QUEUE_SEQ, outboxCursors, outboxStore, type OutboxStatementName } from './outbox.ts';

/** The statements, by name, in `d`'s SQL. */
export function webhooksStatements(_d: Dialect) {
  return {
    insertWebhook: `
      INSERT INTO webhooks (id, url, events, secret, previous_secret, previous_secret_expires_at, added_by_owner, created_at, updated_at, outbox_seq, outbox_written)
      VALUES (:id, :url, :events, :secret, :previousSecret, :previousSecretExpiresAt, :addedByOwner, :createdAt, :updatedAt, ${NEW_QUEUE_SEQ}, ${NEW_QUEUE_SEQ})
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
    countDeliveriesByWebhook: 'SELECT webhook_id, state, COUNT(*) AS count FROM webhook_deliveries GROUP BY webhook_id, state',
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

export function webhooksStores(d: Dialect, q: Runner<keyof ReturnType<typeof webhooksStatements> | OutboxStatementName>): Pick<Stores, 'webhooks'> {
  const { read } = d;
  const outbox = outboxStore(d, q);
  const cursors = outboxCursors(q);
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
      due: (now, limit) => outbox.due('webhook', now, limit),
      claim: async (webhookId, now, leaseUntil) => (await outbox.claim('webhook', webhookId, now, leaseUntil, 1))[0] ?? null,
      event: async (eventId) => (await outbox.events([eventId])).get(eventId) ?? null,
      settle: (webhookId, eventId, attempts, outcome, now) => outbox.settle('webhook', webhookId, eventId, attempts, outcome, now),
      release: (webhookId, eventId, attempts, now) => outbox.release('webhook', webhookId, eventId, attempts, now),
      deliveries: (webhookId, filter) => outbox.list('webhook', { queue: webhookId, ...filter }),
      replay: (webhookId, eventId, now) => outbox.replay('webhook', webhookId, eventId, now),
      countsByWebhook: async () => {
        await cursors.catchUp('webhook', null);
        const counts = new Map<string, Record<DeliveryState, number>>();
        for (const row of await q.all('countDeliveriesByWebhook')) {
          const id = rows.text(row, 'webhook_id');
          const of = counts.get(id) ?? { pending: 0, delivered: 0, dead: 0 };
          of[rows.oneOf(STATES, 'state', rows.text(row, 'state'))] = Number(row['count']);
          counts.set(id, of);
        }
        return counts;
      },
      countByState: () => outbox.countByState('webhook'),
    },
  };
}

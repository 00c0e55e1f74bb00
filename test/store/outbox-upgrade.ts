/**
 * The upgrade to the outbox's cursors (migration 45) over a database whose triggers wrote a
 * delivery row per webhook and event, run against each store: the rows written before stay as
 * they were (delivered, pending), the pending go out first, in the order of their events, and
 * an event stored after the upgrade follows them, each event once.
 */
import assert from 'node:assert/strict';
import { migrations, type Migration } from '../../src/store/migrations.ts';
import type { Store } from '../../src/store/types.ts';
import { adaEvent } from './fixtures.ts';

const T0 = Date.UTC(2026, 0, 1);

/** Every migration before the cursors: what a database had with the per-webhook triggers. */
export const BEFORE_OUTBOX_CURSORS: readonly Migration[] = migrations.filter((migration) => migration.version < 45);

/**
 * `createBefore` makes the database as BEFORE_OUTBOX_CURSORS leaves it; `exec` runs statements
 * on it while no store has it open; `list` spells a list column's literal for the database;
 * `open` opens the store (migrating what the database lacks).
 */
export async function checkOutboxCursorsUpgrade(
  createBefore: () => Promise<void>,
  exec: (statements: readonly string[]) => Promise<void>,
  list: (values: readonly string[]) => string,
  open: () => Promise<Store>,
): Promise<void> {
  await createBefore();
  const event = (id: string, at: number) =>
    `INSERT INTO events (id, type, at, user_id, username, client_id, grant_id, ip, user_agent, detail) VALUES ('${id}', 'grant.revoked', ${at}, 'user-1', 'ada', NULL, NULL, NULL, NULL, '{}')`;
  await exec([
    `INSERT INTO webhooks (id, url, events, secret, previous_secret, previous_secret_expires_at, created_at, updated_at)
      VALUES ('hook-1', 'https://hooks.example.com/in', ${list(['grant.revoked'])}, '{}', NULL, NULL, ${T0}, ${T0})`,
    event('event-1', T0 + 1),
    event('event-2', T0 + 2),
    event('event-3', T0 + 3),
    `UPDATE webhook_deliveries SET state = 'delivered', attempts = 1, delivered_at = ${T0 + 10}, last_status = 204 WHERE event_id = 'event-1'`,
  ]);
  const store = await open();
  try {
    await store.events.add(adaEvent('event-4', 'grant.revoked', T0 + 4));
    const claimed = await store.outbox.claim('webhook', 'hook-1', T0 + 20, T0 + 60_000, 10);
    assert.deepEqual(
      claimed.map((delivery) => [delivery.eventId, delivery.attempts]),
      [
        ['event-2', 1],
        ['event-3', 1],
        ['event-4', 1],
      ],
      'the rows pending before the upgrade first, in order, then the event stored after it',
    );
    assert.deepEqual(
      (await store.webhooks.deliveries('hook-1', { limit: 10 })).map((delivery) => [delivery.eventId, delivery.state, delivery.lastStatus]),
      [
        ['event-4', 'pending', null],
        ['event-3', 'pending', null],
        ['event-2', 'pending', null],
        ['event-1', 'delivered', 204],
      ],
      'each event once, the delivered one as it was',
    );
  } finally {
    await store.close();
  }
}

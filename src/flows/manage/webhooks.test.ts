/**
 * Webhooks without HTTP: the operations behind `tessera webhook …`, /admin/webhooks and the
 * console's webhook pages. A webhook made with its events, its URL's rules (http or https, no
 * credentials or fragment; loopback and private addresses only for the server's owner unless
 * TESSERA_ALLOW_PRIVATE_NETWORK_URLS), its signing secret shown once and kept only sealed, the
 * secret rotated with a grace for the old one, its deliveries listed and dead letters sent
 * again, its removal, the bound on how many there are, and the authority rule: adding one or
 * replaying its deliveries needs a scope that reads the audit trail. test/webhooks.test.ts and
 * test/webhooks-admin.test.ts check the command, the admin API and the signed deliveries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { WEBHOOK_EVENT_TYPES } from '../../core/webhook-events.ts';
import type { WebhookRecord } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { SECRET_PREFIX, secretOwner } from '../webhooks/message.ts';
import type { Caller } from './authority.ts';
import {
  addWebhook,
  DEFAULT_SECRET_GRACE,
  getWebhook,
  listDeliveries,
  MAX_SECRET_GRACE,
  MAX_WEBHOOKS,
  removeWebhook,
  replayDeliveries,
  rotateWebhookSecret,
  webhookJson,
  type WebhookDeps,
  type WebhookInput,
} from './webhooks.ts';

const HOOK: WebhookInput = { url: 'https://hooks.example.com/tessera', events: ['user.disabled'] };

describe('webhooks (flows/manage/webhooks.ts)', () => {
  let world: FlowWorld;
  let deps: WebhookDeps;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.manage, secrets: world.secrets };
  });
  after(() => world.close());

  /** The deps of a caller the owner delegated to (an admin client, a console operator), holding `scopes`. */
  const delegate = (scopes: readonly string[], allowPrivateNetworkUrls = false): WebhookDeps => ({
    ...deps,
    config: { ...world.config, allowPrivateNetworkUrls },
    caller: { scopes } satisfies Caller,
  });
  const ADDER = ['admin:webhooks', 'admin:events:read'];
  const events = async (type: string) => (await world.store.events.list({ limit: 500 })).filter((event) => event.type === type);
  /** The secret the store keeps for a webhook, opened as the dispatcher opens it. */
  const opened = (webhook: WebhookRecord, sealed = webhook.secret) => world.secrets.open(secretOwner(webhook.id), sealed);

  it('adds a webhook with its events and a signing secret shown once, kept only sealed, and records who added it', async () => {
    const { webhook, secret } = await addWebhook(deps, {
      url: 'https://Hooks.Example.com/tessera',
      events: ['user.disabled', 'client.created', 'user.disabled'],
    });
    assert.equal(webhook.url, 'https://hooks.example.com/tessera', 'the URL as parsed');
    assert.deepEqual(webhook.events, ['user.disabled', 'client.created'], 'each event type once');
    assert.equal(webhook.addedByOwner, true, 'the command is the server’s owner');
    assert.deepEqual(
      [webhook.createdAt, webhook.updatedAt, webhook.previousSecret, webhook.previousSecretExpiresAt],
      [world.clock.now(), world.clock.now(), null, null],
    );
    // Standard Webhooks §"Signature scheme": `whsec_` and a base64 key; 32 random bytes here.
    assert.ok(secret.startsWith(SECRET_PREFIX));
    assert.equal(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64').length, 32);
    const stored = await world.store.webhooks.get(webhook.id);
    assert.ok(stored);
    assert.equal(JSON.stringify(stored).includes(secret.slice(SECRET_PREFIX.length)), false, 'no clear copy of the secret in the store');
    assert.equal(stored.secret['enc'], 'A256GCM', 'sealed under the key encryption key');
    assert.equal(opened(stored), secret, 'it opens to the secret shown');
    assert.throws(() => world.secrets.open(secretOwner('another'), stored.secret), 'sealed for this webhook alone');
    assert.equal(JSON.stringify(webhookJson(stored)).includes(secret.slice(SECRET_PREFIX.length)), false, 'the listing never shows it');
    const [created] = (await events('webhook.created')).filter((event) => event.detail['webhook'] === webhook.id);
    assert.deepEqual(created?.detail, { webhook: webhook.id, url: webhook.url, events: 'user.disabled client.created', by: 'operator' });
    assert.equal(JSON.stringify(created).includes(secret.slice(SECRET_PREFIX.length)), false, 'the event holds no secret');
  });

  it('accepts every event type a webhook hears, and an http URL (the operator’s choice)', async () => {
    const { webhook } = await addWebhook(deps, { url: 'http://hooks.example.com/in', events: [...WEBHOOK_EVENT_TYPES] });
    assert.deepEqual(webhook.events, WEBHOOK_EVENT_TYPES);
    assert.equal(webhook.url, 'http://hooks.example.com/in');
  });

  it('refuses a webhook a rule forbids, naming the field, and keeps nothing of it', async () => {
    const url = (value: unknown): WebhookInput => ({ ...HOOK, url: value });
    const heard = (value: unknown): WebhookInput => ({ ...HOOK, events: value });
    const cases: [string, WebhookInput, string][] = [
      ['no URL', { events: HOOK.events }, 'invalid:url'],
      ['an empty URL', url(''), 'invalid:url'],
      ['a URL that is not text', url(42), 'invalid:url'],
      ['a relative URL', url('/tessera'), 'invalid:url'],
      ['an ftp URL', url('ftp://hooks.example.com/in'), 'invalid:url'],
      ['a javascript: URL', url('javascript:alert(1)'), 'invalid:url'],
      ['a URL with a fragment', url('https://hooks.example.com/in#x'), 'invalid:url'],
      ['a URL with a user name and password', url('https://user:pass@hooks.example.com/in'), 'invalid:url'],
      ['a URL with a user name', url('https://user@hooks.example.com/in'), 'invalid:url'],
      ['a URL past 2048 characters', url(`https://hooks.example.com/${'a'.repeat(2030)}`), 'invalid:url'],
      ['no events', { url: HOOK.url }, 'invalid:events'],
      ['an empty list of events', heard([]), 'invalid:events'],
      ['events as text, not a list', heard('user.disabled'), 'invalid:events'],
      ['an unknown event type', heard(['user.disabled', 'user.exploded']), 'invalid:events'],
      ['the audit trail’s own name, not the public one', heard(['user.removed']), 'invalid:events'],
      ['an event type that is not text', heard([7]), 'invalid:events'],
      ['an event type inside a list of its own', heard([['user.disabled']]), 'invalid:events'],
    ];
    const before = (await world.store.webhooks.list()).length;
    const made = (await events('webhook.created')).length;
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addWebhook(deps, input)), expected, what);
    await assert.rejects(() => addWebhook(deps, url('')), /^ManageError: url is required/, 'an empty URL is a missing one, not a malformed one');
    assert.equal(await outcome(() => addWebhook(deps, url(`https://hooks.example.com/${'a'.repeat(2048 - 26)}`))), 'ok', 'exactly 2048 characters');
    assert.equal((await world.store.webhooks.list()).length, before + 1, 'only the one accepted is kept');
    assert.equal((await events('webhook.created')).length, made + 1);
  });

  it('lets only the server’s owner point a webhook at loopback, link-local or private addresses, unless the setting allows them', async () => {
    const hosts = [
      'https://127.0.0.1/in',
      'https://localhost:8443/in',
      'https://[::1]/in',
      'https://10.0.0.8/in',
      'https://172.16.4.4/in',
      'https://192.168.1.10/in',
      'https://100.64.0.1/in',
      // A cloud metadata service (RFC 3927 link-local).
      'http://169.254.169.254/latest/meta-data',
      'https://[fc00::1]/in',
    ];
    for (const host of hosts) {
      assert.equal(await outcome(() => addWebhook(delegate(ADDER), { ...HOOK, url: host })), 'invalid:url', `a delegate, ${host}`);
      assert.equal(await outcome(() => addWebhook(delegate(ADDER, true), { ...HOOK, url: host })), 'ok', `a delegate, ${host}, private networks allowed`);
      assert.equal(await outcome(() => addWebhook(deps, { ...HOOK, url: host })), 'ok', `the owner, ${host}`);
    }
    const { webhook } = await addWebhook(delegate(ADDER), HOOK);
    assert.equal(webhook.addedByOwner, false, 'held to the public network on each delivery too');
  });

  it('lets only a caller that may read the audit trail add a webhook or send its dead letters again', async () => {
    const { webhook } = await addWebhook(deps, HOOK);
    const count = (await world.store.webhooks.list()).length;
    const cases: [string, readonly string[], string][] = [
      ['webhooks alone', ['admin:webhooks'], 'forbidden'],
      ['webhooks and users', ['admin:webhooks', 'admin:users', 'admin:clients'], 'forbidden'],
      ['no scope at all', [], 'forbidden'],
      ['webhooks and the audit trail read', ['admin:webhooks', 'admin:events:read'], 'ok'],
      ['webhooks and the audit trail', ['admin:webhooks', 'admin:events'], 'ok'],
    ];
    for (const [what, scopes, expected] of cases) {
      assert.equal(await outcome(() => addWebhook(delegate(scopes), HOOK)), expected, `add: ${what}`);
      assert.equal(await outcome(() => replayDeliveries(delegate(scopes), webhook.id)), expected, `replay: ${what}`);
    }
    assert.equal((await world.store.webhooks.list()).length, count + 2, 'nothing kept of a refused one');
  });

  it('rotates the secret, shown once, keeping the old one sealed beside it for the grace, and everything else as it was', async () => {
    const { webhook, secret } = await addWebhook(deps, HOOK);
    world.clock.advance(60_000);
    const rotated = await rotateWebhookSecret(deps, webhook.id);
    assert.notEqual(rotated.secret, secret);
    assert.ok(rotated.secret.startsWith(SECRET_PREFIX));
    const stored = await getWebhook(deps, webhook.id);
    assert.equal(opened(stored), rotated.secret);
    assert.ok(stored.previousSecret);
    assert.equal(opened(stored, stored.previousSecret), secret, 'the old secret still signs beside the new one');
    assert.equal(stored.previousSecretExpiresAt, world.clock.now() + DEFAULT_SECRET_GRACE * 1000, 'a day by default');
    assert.equal(JSON.stringify(stored).includes(rotated.secret.slice(SECRET_PREFIX.length)), false, 'no clear copy of the new secret');
    assert.deepEqual(
      [stored.url, stored.events, stored.createdAt, stored.updatedAt, stored.addedByOwner],
      [webhook.url, webhook.events, webhook.createdAt, world.clock.now(), true],
      'only the secret and when it changed',
    );
    assert.deepEqual(rotated.webhook, stored);
    const [event] = (await events('webhook.secret_rotated')).filter((one) => one.detail['webhook'] === webhook.id);
    assert.equal(event?.detail['previous_secret_expires_at'], new Date(world.clock.now() + DEFAULT_SECRET_GRACE * 1000).toISOString());

    const now = await rotateWebhookSecret(deps, webhook.id, { grace_seconds: 0 });
    const after = await getWebhook(deps, webhook.id);
    assert.deepEqual([after.previousSecret, after.previousSecretExpiresAt], [null, null], 'no grace: the old secret stops at once');
    assert.equal(opened(after), now.secret);
    await rotateWebhookSecret(deps, webhook.id, { grace_seconds: MAX_SECRET_GRACE });
    assert.equal((await getWebhook(deps, webhook.id)).previousSecretExpiresAt, world.clock.now() + MAX_SECRET_GRACE * 1000, 'the longest grace');
  });

  it('refuses a grace out of bounds, and a webhook that is not there', async () => {
    const { webhook } = await addWebhook(deps, HOOK);
    const cases: [string, number, string][] = [
      ['a negative grace', -1, 'invalid:grace_seconds'],
      ['a grace of no whole seconds', 1.5, 'invalid:grace_seconds'],
      ['a grace past 30 days', MAX_SECRET_GRACE + 1, 'invalid:grace_seconds'],
      ['a grace that is no number', Number.NaN, 'invalid:grace_seconds'],
    ];
    for (const [what, grace, expected] of cases)
      assert.equal(await outcome(() => rotateWebhookSecret(deps, webhook.id, { grace_seconds: grace })), expected, what);
    assert.deepEqual(await getWebhook(deps, webhook.id), webhook, 'the secret unchanged');
    assert.equal(await outcome(() => rotateWebhookSecret(deps, 'nobody')), 'not_found');
  });

  it('lists a webhook’s deliveries by state and sends a dead letter again, once', async () => {
    const { webhook } = await addWebhook(deps, HOOK);
    const user = await world.addUser();
    await world.deps.events.emit({ type: 'user.disabled', userId: user.id, username: user.username, detail: {} });
    const [pending] = await listDeliveries(deps, webhook.id);
    assert.equal(pending?.state, 'pending', 'an event it hears owes it a delivery');
    assert.deepEqual(await listDeliveries(deps, webhook.id, { state: 'dead' }), []);
    assert.equal(await replayDeliveries(deps, webhook.id), 0, 'no dead letter to send');
    assert.equal(await outcome(() => replayDeliveries(deps, webhook.id, pending.eventId)), 'not_found', 'a pending delivery is no dead letter');
    // One try that fails after its retry window ended: a dead letter.
    const now = world.clock.now();
    const claimed = await world.store.webhooks.claim(webhook.id, now, now + 30_000);
    assert.ok(claimed);
    const failed = { kind: 'failed', status: 500, error: 'HTTP 500', nextAttemptAt: now + 60_000, deadBefore: now + 1 } as const;
    assert.equal(await world.store.webhooks.settle(webhook.id, claimed.eventId, claimed.attempts, failed, now), 'dead');
    assert.deepEqual(
      (await listDeliveries(deps, webhook.id, { state: 'dead' })).map((one) => one.eventId),
      [pending.eventId],
    );
    assert.equal(await replayDeliveries(deps, webhook.id, pending.eventId), 1);
    assert.equal((await listDeliveries(deps, webhook.id))[0]?.state, 'pending', 'sent again');
    assert.equal(await replayDeliveries(deps, webhook.id), 0, 'nothing dead any more');
    const replayed = (await events('webhook.replayed')).filter((one) => one.detail['webhook'] === webhook.id);
    assert.deepEqual(
      replayed.map((one) => one.detail),
      [{ webhook: webhook.id, deliveries: 1, event_id: pending.eventId, by: 'operator' }],
      'one event, for the one replay that sent something',
    );
  });

  it('refuses a listing of deliveries out of bounds, naming the field', async () => {
    const { webhook } = await addWebhook(deps, HOOK);
    const cases: [string, Parameters<typeof listDeliveries>[2], string][] = [
      ['an unknown state', { state: 'failed' }, 'invalid:state'],
      ['a limit of none', { limit: 0 }, 'invalid:limit'],
      ['a limit past 1000', { limit: 1001 }, 'invalid:limit'],
      ['a limit of no whole number', { limit: 2.5 }, 'invalid:limit'],
      ['the longest page', { limit: 1000, state: 'delivered' }, 'ok'],
    ];
    for (const [what, query, expected] of cases) assert.equal(await outcome(() => listDeliveries(deps, webhook.id, query)), expected, what);
    assert.equal(await outcome(() => listDeliveries(deps, 'nobody')), 'not_found');
  });

  it('removes a webhook: then it is not found, and removing it again is refused', async () => {
    const { webhook } = await addWebhook(deps, HOOK);
    await removeWebhook(deps, webhook.id);
    assert.equal(await world.store.webhooks.get(webhook.id), null);
    assert.equal(await outcome(() => getWebhook(deps, webhook.id)), 'not_found');
    assert.equal(await outcome(() => removeWebhook(deps, webhook.id)), 'not_found');
    assert.equal(await outcome(() => rotateWebhookSecret(deps, webhook.id)), 'not_found');
    assert.equal(await outcome(() => replayDeliveries(deps, webhook.id)), 'not_found');
    const removed = (await events('webhook.removed')).filter((event) => event.detail['webhook'] === webhook.id);
    assert.deepEqual(
      removed.map((event) => event.detail),
      [{ webhook: webhook.id, url: webhook.url, by: 'operator' }],
      'one event, naming where it pointed',
    );
  });

  // Last: it leaves the world full.
  it(`holds a server to ${MAX_WEBHOOKS} webhooks; two at the same URL are two webhooks`, async () => {
    const first = await addWebhook(deps, HOOK);
    const second = await addWebhook(deps, HOOK);
    assert.notEqual(first.webhook.id, second.webhook.id);
    assert.notEqual(first.secret, second.secret, 'each its own secret');
    for (let i = (await world.store.webhooks.list()).length; i < MAX_WEBHOOKS; i += 1) await addWebhook(deps, HOOK);
    assert.equal(await outcome(() => addWebhook(deps, HOOK)), 'conflict');
    assert.equal((await world.store.webhooks.list()).length, MAX_WEBHOOKS);
    await removeWebhook(deps, first.webhook.id);
    assert.equal(await outcome(() => addWebhook(deps, HOOK)), 'ok', 'room again once one is removed');
  });
});

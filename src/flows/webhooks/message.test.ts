/**
 * Webhook messages in the Standard Webhooks format, checked as a receiver checks them: with the
 * `standardwebhooks` library and the secret `tessera webhook add` printed. test/webhooks.test.ts
 * sends real messages from the outbox to a receiver on loopback.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { AuditEvent } from '../../core/events.ts';
import { newWebhookSecret, webhookBody, webhookHeaders } from './message.ts';

const AT = Date.UTC(2026, 10, 29, 9, 0, 0);

const event: AuditEvent = {
  id: 'evt_1',
  type: 'user.disabled',
  at: AT,
  userId: 'sub-ada',
  username: 'ada',
  clientId: null,
  grantId: null,
  ip: '192.0.2.7',
  userAgent: 'Mozilla/5.0',
  detail: { by: 'operator' },
} as AuditEvent;

/** What a receiver's library makes of a message sent at `now`, checked with `secret` at `now`. */
function received(secret: string, headers: Record<string, string>, body: string, now = AT): unknown {
  const webhook = new Webhook(secret);
  const realNow = Date.now;
  Date.now = () => now;
  try {
    return webhook.verify(body, headers);
  } finally {
    Date.now = realNow;
  }
}

describe('webhook messages (Standard Webhooks v1)', () => {
  it('is signed so that the receiver’s library verifies it with the secret, and no other', () => {
    const secret = newWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, '32 random bytes, base64, after the prefix');
    const body = webhookBody(event);
    const headers = webhookHeaders([secret], event.id, AT, body);
    assert.deepEqual(received(secret, headers, body), JSON.parse(body));
    assert.throws(() => received(newWebhookSecret(), headers, body), /signature/i, 'another secret');
    assert.throws(() => received(secret, headers, body.replace('ada', 'eve')), /signature/i, 'a changed body');
    assert.throws(() => received(secret, { ...headers, 'webhook-id': 'evt_2' }, body), /signature/i, 'another id');
    assert.throws(() => received(secret, headers, body, AT + 10 * 60_000), /timestamp/i, 'a message ten minutes old');
  });

  it('is signed with both secrets during a rotation, so that a receiver holding either verifies it', () => {
    const [old, next] = [newWebhookSecret(), newWebhookSecret()];
    const body = webhookBody(event);
    const headers = webhookHeaders([next, old], event.id, AT, body);
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const secret of [old, next]) assert.deepEqual(received(secret, headers, body), JSON.parse(body));
  });

  it('carries the id of the event, its public type and time, and what it names, but not the address or user agent', () => {
    const body = JSON.parse(webhookBody(event)) as { type: string; timestamp: string; data: Record<string, unknown> };
    const headers = webhookHeaders([newWebhookSecret()], event.id, AT + 999, JSON.stringify(body));
    assert.equal(headers['webhook-id'], 'evt_1', 'the same on every try, so a receiver drops what it has handled');
    assert.equal(headers['webhook-timestamp'], String(AT / 1000), 'seconds');
    assert.equal(body.type, 'user.disabled');
    assert.equal(body.timestamp, '2026-11-29T09:00:00.000Z');
    assert.deepEqual(body.data, {
      id: 'evt_1',
      event: 'user.disabled',
      user_id: 'sub-ada',
      username: 'ada',
      client_id: null,
      grant_id: null,
      detail: { by: 'operator' },
    });
    const text = webhookBody(event);
    assert.equal(text.includes('192.0.2.7') || text.includes('Mozilla'), false);
  });
});

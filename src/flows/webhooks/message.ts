/**
 * A webhook message in the Standard Webhooks format (standardwebhooks.com, spec v1): the
 * headers `webhook-id`, `webhook-timestamp` and `webhook-signature`, and a JSON body with the
 * event's `type`, `timestamp` and `data`. The id is the event's: the same on every try and at
 * every endpoint, so that a receiver drops what it has already handled.
 *
 * The body says who and what the event concerns and never a secret: an event holds none
 * (core/events.ts), and of its fields the request's address and user agent are left out too,
 * being about the person rather than what happened.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { AuditEvent } from '../../core/events.ts';
import { webhookTypeOf } from '../../core/webhook-events.ts';

/** What a signing secret starts with, before its base64 key (as Standard Webhooks libraries read it). */
export const SECRET_PREFIX = 'whsec_';

/** The owner a webhook's secret is sealed for (tokens/secret-box.ts): never a provider's id, which has no space. */
export const secretOwner = (webhookId: string): string => `webhook ${webhookId}`;

/** A new signing secret: 32 random bytes (the HMAC-SHA256 key), base64 after the prefix. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/**
 * Standard Webhooks §"Signature scheme": `v1,` and the base64 HMAC-SHA256, under the secret's
 * key (the base64 after `whsec_`), of `{webhook-id}.{webhook-timestamp}.{body}`.
 */
export function webhookSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The message's body: the public type (core/webhook-events.ts), the event's time, and what it names. */
export function webhookBody(event: AuditEvent): string {
  return JSON.stringify({
    type: webhookTypeOf(event.type) ?? event.type,
    timestamp: new Date(event.at).toISOString(),
    data: {
      id: event.id,
      // The audit trail's own name for what happened (`user.removed` for `user.deleted`).
      event: event.type,
      user_id: event.userId,
      username: event.username,
      client_id: event.clientId,
      grant_id: event.grantId,
      detail: event.detail,
    },
  });
}

/**
 * The headers of one try: signed with every secret given (during a rotation, the new one and
 * the one it replaced, space-separated, as the format allows), at `now` in seconds.
 */
export function webhookHeaders(secrets: readonly string[], id: string, now: number, body: string): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': 'Tessera-Webhooks/1',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => webhookSignature(secret, id, timestamp, body)).join(' '),
  };
}

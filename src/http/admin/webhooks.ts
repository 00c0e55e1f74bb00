/**
 * The admin API's webhooks (`tessera webhook …`, docs/events.md): their registrations from the
 * one table of their fields (flows/manage/fields/webhooks.ts), the signing secret in the answer
 * that makes it only, and their deliveries. Adding one or sending its dead letters again also
 * needs a scope that reads the audit trail, which the operation checks (flows/manage/authority.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { WEBHOOK_ALWAYS, WEBHOOK_FIELDS } from '../../flows/manage/fields/webhooks.ts';
import type { ManageDeps } from '../../flows/manage/deps.ts';
import {
  addWebhook,
  DELIVERY_STATES,
  deliveryJson,
  getWebhook,
  listDeliveries,
  listWebhooks,
  MAX_DELIVERIES,
  MAX_SECRET_GRACE,
  removeWebhook,
  replayDeliveries,
  rotateWebhookSecret,
  webhookJson,
  type WebhookDeps,
  type WebhookInput,
} from '../../flows/manage/webhooks.ts';
import { listOf, object } from './answers.ts';
import { body, ID, noContent, ok, params, PROBLEM, query } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

const SECRET = { type: 'string', description: 'The signing secret (whsec_<base64>), to check webhook-signature with: in this answer only' } as const;

export const webhookRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const withSecrets = (d: ManageDeps): WebhookDeps => ({ ...d, secrets: deps.secrets });
  const WEBHOOK = responseSchema(WEBHOOK_FIELDS, WEBHOOK_ALWAYS);
  const WEBHOOK_WITH_SECRET = responseSchema(WEBHOOK_FIELDS, [...WEBHOOK_ALWAYS, 'secret'], { secret: SECRET });
  const DELIVERY = object(
    {
      event_id: { type: 'string', description: "The event's id: the message's webhook-id, the same on every try" },
      event_at: { type: 'string', format: 'date-time' },
      state: { type: 'string', enum: [...DELIVERY_STATES] },
      attempts: { type: 'integer' },
      next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When it is tried next, while pending' },
      delivered_at: { type: ['string', 'null'], format: 'date-time' },
      last_status: { type: ['integer', 'null'], description: 'The HTTP status of the last answer; null when none came' },
      last_error: { type: ['string', 'null'] },
    },
    'A delivery of one event to the webhook',
  );
  const id = params({ id: ID });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;

  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/webhooks`,
    operationId: 'listWebhooks',
    area: 'webhooks',
    write: false,
    schema: { summary: 'The webhooks (never their secrets)', response: ok(listOf('webhooks', WEBHOOK)) },
    handler: async (_request, _reply, d) => ({ webhooks: (await listWebhooks(d)).map(webhookJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/webhooks`,
    operationId: 'createWebhook',
    area: 'webhooks',
    write: true,
    location: true,
    schema: {
      summary: "Add a webhook (needs admin:events or admin:events:read too: it sends the audit trail's events out); its signing secret is in this answer only",
      body: { ...requestSchema(WEBHOOK_FIELDS, 'create'), examples: [{ url: 'https://app.example/hooks/tessera', events: ['user.disabled', 'user.deleted'] }] },
      response: { 201: WEBHOOK_WITH_SECRET, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { webhook, secret } = await addWebhook(withSecrets(d), request.body as WebhookInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/webhooks/${encodeURIComponent(webhook.id)}`);
      return { ...webhookJson(webhook), secret };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/webhooks/:id`,
    operationId: 'getWebhook',
    area: 'webhooks',
    write: false,
    schema: { summary: 'A webhook (never its secret)', params: id, response: ok(WEBHOOK) },
    handler: async (request, _reply, d) => webhookJson(await getWebhook(d, idOf(request))),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/webhooks/:id`,
    operationId: 'removeWebhook',
    area: 'webhooks',
    write: true,
    schema: { summary: 'Remove a webhook and its deliveries: nothing more is sent to it, not even what was waiting', params: id, response: noContent },
    handler: async (request, reply, d) => {
      await removeWebhook(d, idOf(request));
      return reply.status(204).send();
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/webhooks/:id/secret`,
    operationId: 'rotateWebhookSecret',
    area: 'webhooks',
    write: true,
    schema: {
      summary: 'Give a webhook a new signing secret, in this answer only; the old one still signs beside it for grace_seconds (default a day)',
      params: id,
      body: body({ grace_seconds: { type: 'integer', minimum: 0, maximum: MAX_SECRET_GRACE } }),
      response: ok(WEBHOOK_WITH_SECRET),
    },
    handler: async (request, _reply, d) => {
      const { webhook, secret } = await rotateWebhookSecret(withSecrets(d), idOf(request), request.body as { grace_seconds?: number });
      return { ...webhookJson(webhook), secret };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/webhooks/:id/deliveries`,
    operationId: 'listWebhookDeliveries',
    area: 'webhooks',
    write: false,
    schema: {
      summary: "A webhook's deliveries, newest event first (state: pending, delivered or dead, the dead letters)",
      params: id,
      querystring: query({ state: { type: 'string', enum: [...DELIVERY_STATES] }, limit: { type: 'integer', minimum: 1, maximum: MAX_DELIVERIES } }),
      response: ok(listOf('deliveries', DELIVERY)),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { state?: string; limit?: number };
      return { deliveries: (await listDeliveries(d, idOf(request), q)).map(deliveryJson) };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/webhooks/:id/replay`,
    operationId: 'replayWebhookDeliveries',
    area: 'webhooks',
    write: true,
    schema: {
      summary: "Send a webhook's dead letters again (one, by its event_id, or all), with the same webhook-id; needs admin:events or admin:events:read too",
      params: id,
      body: body({ event_id: { type: 'string', minLength: 1, maxLength: 200 } }),
      response: ok(object({ replayed: { type: 'integer', description: 'How many dead letters are pending again' } })),
    },
    handler: async (request, _reply, d) => ({ replayed: await replayDeliveries(d, idOf(request), (request.body as { event_id?: string }).event_id ?? null) }),
  });
};

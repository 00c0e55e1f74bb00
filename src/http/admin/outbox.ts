/**
 * The admin API's door to the Shared Signals pushes and mail in the outbox (`tessera ssf …`,
 * `tessera mail …`; docs/events.md, docs/mail.md): their deliveries and the dead letters sent
 * again. The area is the audit trail's (admin:events:read to read, admin:events to replay);
 * mail sent again also needs admin:users, which the operation checks (flows/manage/authority.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { listMailDeliveries, listStreamDeliveries, mailDeliveryJson, replayDeadLetters, streamDeliveryJson } from '../../flows/manage/outbox.ts';
import { DELIVERY_STATES, MAX_DELIVERIES } from '../../flows/manage/webhooks.ts';
import type { AppDeps } from '../deps.ts';
import { listOf, object } from './answers.ts';
import { adminRouter, body, ID, ok, params, query } from './kit.ts';

export const outboxRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const common = {
    state: { type: 'string', enum: [...DELIVERY_STATES] },
    attempts: { type: 'integer' },
    next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When it is tried next, while pending' },
    delivered_at: { type: ['string', 'null'], format: 'date-time' },
    last_error: { type: ['string', 'null'] },
  } as const;
  const SET = object(
    {
      event_id: { type: 'string', description: "The event's id: the SET's jti, the same on every try" },
      event_at: { type: 'string', format: 'date-time' },
      ...common,
      last_status: { type: ['integer', 'null'], description: 'The HTTP status of the last answer; null when none came' },
    },
    "A SET for one event on the stream (pushed, or waiting for a poll's acknowledgement)",
  );
  const MAIL = object(
    {
      id: { type: 'string', description: "The message's id: its Message-ID, the same on every try" },
      event_id: { type: 'string', description: 'The event that queued it' },
      kind: { type: 'string', description: 'What kind of message (reset link, notice, sign-up link, invitation)' },
      queued_at: { type: 'string', format: 'date-time', description: 'When its retry window began: queued, or last replayed' },
      ...common,
    },
    'A message in the outbox: never its address or its text',
  );
  const listing = query({ state: { type: 'string', enum: [...DELIVERY_STATES] }, limit: { type: 'integer', minimum: 1, maximum: MAX_DELIVERIES } });
  const REPLAYED = ok(object({ replayed: { type: 'integer', description: 'How many dead letters are pending again' } }));
  const stream = params({ id: ID });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;

  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/ssf/streams/:id/deliveries`,
    operationId: 'listStreamDeliveries',
    area: 'events',
    write: false,
    schema: {
      summary: "A Shared Signals stream's SETs, newest event first (state: pending, delivered or dead, the dead letters)",
      params: stream,
      querystring: listing,
      response: ok(listOf('deliveries', SET)),
    },
    handler: async (request, _reply, d) => ({ deliveries: (await listStreamDeliveries(d, idOf(request), request.query as object)).map(streamDeliveryJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/ssf/streams/:id/replay`,
    operationId: 'replayStreamDeliveries',
    area: 'events',
    write: true,
    schema: {
      summary: "Send a stream's dead letters again (one, by its event_id, or all), with the same jti",
      params: stream,
      body: body({ event_id: { type: 'string', minLength: 1, maxLength: 200 } }),
      response: REPLAYED,
    },
    handler: async (request, _reply, d) => ({
      replayed: await replayDeadLetters(d, 'ssf', idOf(request), (request.body as { event_id?: string }).event_id ?? null),
    }),
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/mail/deliveries`,
    operationId: 'listMailDeliveries',
    area: 'events',
    write: false,
    schema: {
      summary: 'The mail in the outbox, newest first (state: pending, delivered or dead, the dead letters)',
      querystring: listing,
      response: ok(listOf('deliveries', MAIL)),
    },
    handler: async (request, _reply, d) => ({ deliveries: (await listMailDeliveries(d, request.query as object)).map(mailDeliveryJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/mail/replay`,
    operationId: 'replayMailDeliveries',
    area: 'events',
    write: true,
    schema: {
      summary: "Send mail's dead letters again (one, by its id, or all), with the same Message-ID; needs admin:users too",
      body: body({ id: { type: 'string', minLength: 1, maxLength: 200 } }),
      response: REPLAYED,
    },
    handler: async (request, _reply, d) => ({ replayed: await replayDeadLetters(d, 'mail', null, (request.body as { id?: string }).id ?? null) }),
  });
};

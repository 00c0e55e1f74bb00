/** The admin API's clients (`tessera client …`): their registrations from the one table of their fields. */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import {
  clientEtag,
  clientJson,
  createClient,
  getClient,
  listClients,
  removeClient,
  revokeClientTokens,
  rotateClientSecret,
  updateClient,
  type ClientMetadata,
} from '../../flows/manage/clients.ts';
import { CLIENT_ALWAYS, CLIENT_FIELDS } from '../../flows/manage/fields/clients.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { object } from './answers.ts';
import { body, ID, ifMatch, noContent, ok, params, PAGE, PROBLEM, query } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const clientRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  /** A client's registration in and out, from the one table of its fields (flows/manage/fields/clients.ts). */
  const CLIENT_CREATE = {
    ...requestSchema(CLIENT_FIELDS, 'create'),
    examples: [{ client_name: 'Garden Planner', redirect_uris: ['https://garden.example/callback'], scope: 'openid profile' }],
  };
  const CLIENT_UPDATE = requestSchema(CLIENT_FIELDS, 'update');
  const CLIENT = responseSchema(CLIENT_FIELDS, CLIENT_ALWAYS);
  const CLIENT_WITH_SECRET = responseSchema(CLIENT_FIELDS, CLIENT_ALWAYS, {
    client_secret: { type: 'string', description: 'Its new secret: in this answer only' },
  });

  // Clients
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/clients`,
    operationId: 'listClients',
    area: 'clients',
    write: false,
    schema: {
      summary: 'List clients, a page at a time',
      querystring: query({ ...PAGE, name: { type: 'string', maxLength: 200 }, grant_type: { type: 'string', maxLength: 100 } }),
      response: ok({
        type: 'object',
        properties: { clients: { type: 'array', items: CLIENT }, next_offset: { type: ['integer', 'null'] } },
        required: ['clients', 'next_offset'],
      }),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { offset: number; limit: number; name?: string; grant_type?: string };
      const page = await listClients(d, {
        offset: q.offset,
        limit: q.limit + 1,
        ...(q.name === undefined ? {} : { name: q.name }),
        ...(q.grant_type === undefined ? {} : { grantType: q.grant_type }),
      });
      const now = d.clock.now();
      return { clients: page.slice(0, q.limit).map((client) => clientJson(client, now)), next_offset: page.length > q.limit ? q.offset + q.limit : null };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/clients`,
    operationId: 'createClient',
    area: 'clients',
    write: true,
    etag: true,
    location: true,
    schema: { summary: 'Register a client; its secret is in this answer only', body: CLIENT_CREATE, response: { 201: CLIENT_WITH_SECRET, default: PROBLEM } },
    handler: async (request, reply, d) => {
      const { client, secret } = await createClient(d, request.body as ClientMetadata);
      reply
        .status(201)
        .header('Location', `${ADMIN_PREFIX}/clients/${encodeURIComponent(client.id)}`)
        .header('ETag', clientEtag(client));
      return { ...clientJson(client, d.clock.now()), ...(secret === null ? {} : { client_secret: secret }) };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/clients/:client_id`,
    operationId: 'getClient',
    area: 'clients',
    write: false,
    etag: true,
    schema: { summary: "A client's registration, with its version as ETag", params: params({ client_id: ID }), response: ok(CLIENT) },
    handler: async (request, reply, d) => {
      const client = await getClient(d, (request.params as { client_id: string }).client_id);
      reply.header('ETag', clientEtag(client));
      return clientJson(client, d.clock.now());
    },
  });
  route({
    method: 'PATCH',
    url: `${ADMIN_PREFIX}/clients/:client_id`,
    operationId: 'updateClient',
    area: 'clients',
    write: true,
    ifMatch: 'client',
    etag: true,
    schema: {
      summary: 'Change a client: the fields given, the rest as they are; If-Match is required',
      params: params({ client_id: ID }),
      body: CLIENT_UPDATE,
      response: ok(CLIENT_WITH_SECRET),
    },
    handler: async (request, reply, d) => {
      const id = (request.params as { client_id: string }).client_id;
      const version = ifMatch(request, reply, 'client');
      if (version === null) return reply;
      const { client, secret } = await updateClient(d, id, request.body as ClientMetadata, Number(version.slice(1, -1)));
      reply.header('ETag', clientEtag(client));
      return { ...clientJson(client, d.clock.now()), ...(secret === null ? {} : { client_secret: secret }) };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/clients/:client_id/secret`,
    operationId: 'rotateClientSecret',
    area: 'clients',
    write: true,
    schema: {
      summary: 'Give a client a new secret; the old one works for the grace period',
      params: params({ client_id: ID }),
      body: body({ grace_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86400 } }),
      response: ok(
        object({
          client_id: { type: 'string' },
          client_secret: { type: 'string', description: 'The new secret: in this answer only' },
          previous_secret_expires_at: { type: 'string', format: 'date-time' },
        }),
      ),
    },
    handler: async (request, _reply, d) => {
      const id = (request.params as { client_id: string }).client_id;
      const grace = (request.body as { grace_seconds?: number } | undefined)?.grace_seconds;
      const { client, secret } = await rotateClientSecret(d, id, grace);
      return { client_id: client.id, client_secret: secret, previous_secret_expires_at: new Date(client.previousSecretExpiresAt!).toISOString() };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/clients/:client_id/revoke-tokens`,
    operationId: 'revokeClientTokens',
    area: 'clients',
    write: true,
    schema: {
      summary: 'End every token of a client now: its own (client_credentials) and every grant people approved for it; the client stays registered',
      params: params({ client_id: ID }),
      response: ok(object({ grants_revoked: { type: 'integer', description: 'How many grants people approved were revoked' } })),
    },
    handler: async (request, _reply, d) => {
      const { grantsRevoked } = await revokeClientTokens(d, (request.params as { client_id: string }).client_id);
      return { grants_revoked: grantsRevoked };
    },
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/clients/:client_id`,
    operationId: 'removeClient',
    area: 'clients',
    write: true,
    schema: { summary: 'Remove a client and everything issued to it', params: params({ client_id: ID }), response: noContent },
    handler: async (request, reply, d) => {
      await removeClient(d, (request.params as { client_id: string }).client_id);
      return reply.status(204).send();
    },
  });
};

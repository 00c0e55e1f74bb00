/** The admin API's APIs (RFC 8707 resources, `tessera resource …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { RESOURCE_ALWAYS, RESOURCE_FIELDS } from '../../flows/manage/fields/resources.ts';
import {
  addResource,
  getResource,
  listResources,
  removeResource,
  resourceJson,
  updateResource,
  type ResourceInput,
  type ResourceUpdate,
} from '../../flows/manage/resources.ts';
import { noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const resourceRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  /** An API's registration in and out, from the one table of its fields (flows/manage/fields/resources.ts). */
  const RESOURCE = responseSchema(RESOURCE_FIELDS, RESOURCE_ALWAYS);
  const RESOURCE_WITH_SECRET = responseSchema(RESOURCE_FIELDS, RESOURCE_ALWAYS, {
    introspection_secret: { type: 'string', description: 'The secret its resource server introspects tokens with: in this answer only' },
  });
  const identifier = params({ identifier: { type: 'string', minLength: 1, maxLength: 1024 } });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/resources`,
    operationId: 'listResources',
    area: 'resources',
    write: false,
    schema: {
      summary: 'The registered APIs and their scopes',
      response: ok({ type: 'object', properties: { resources: { type: 'array', items: RESOURCE } }, required: ['resources'] }),
    },
    handler: async (_request, _reply, d) => ({ resources: (await listResources(d)).map(resourceJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/resources`,
    operationId: 'createResource',
    area: 'resources',
    write: true,
    location: true,
    schema: {
      summary: 'Register an API (RFC 8707) and its scopes',
      body: requestSchema(RESOURCE_FIELDS, 'create'),
      response: { 201: RESOURCE_WITH_SECRET, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { resource, introspectionSecret } = await addResource(d, request.body as ResourceInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/resources/${encodeURIComponent(resource.identifier)}`);
      return { ...resourceJson(resource), ...(introspectionSecret === null ? {} : { introspection_secret: introspectionSecret }) };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/resources/:identifier`,
    operationId: 'getResource',
    area: 'resources',
    write: false,
    schema: { summary: 'An API by its identifier (URL-encoded in the path)', params: identifier, response: ok(RESOURCE) },
    handler: async (request, _reply, d) => resourceJson(await getResource(d, (request.params as { identifier: string }).identifier)),
  });
  route({
    method: 'PATCH',
    url: `${ADMIN_PREFIX}/resources/:identifier`,
    operationId: 'updateResource',
    area: 'resources',
    write: true,
    schema: {
      summary:
        'Change an API from its next token: name, scopes (the list replaces the old one; a scope a client is registered with cannot be removed), token lifetime, algorithm',
      params: identifier,
      body: requestSchema(RESOURCE_FIELDS, 'update'),
      response: ok(RESOURCE),
    },
    handler: async (request, _reply, d) =>
      resourceJson(await updateResource(d, (request.params as { identifier: string }).identifier, request.body as ResourceUpdate)),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/resources/:identifier`,
    operationId: 'removeResource',
    area: 'resources',
    write: true,
    schema: { summary: 'Remove an API: tokens and grants for it stop working at once', params: identifier, response: noContent },
    handler: async (request, reply, d) => {
      await removeResource(d, (request.params as { identifier: string }).identifier);
      return reply.status(204).send();
    },
  });
};

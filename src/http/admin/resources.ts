/** The admin API's APIs (RFC 8707 resources, `tessera resource …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { addResource, API_SIGNING_ALGORITHMS, getResource, listResources, removeResource, resourceJson, updateResource, type ResourceUpdate } from '../../flows/manage/resources.ts';
import { body, noContent, ok, OBJECT, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const resourceRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const RESOURCE_FIELDS = {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    scopes: { type: 'array', minItems: 1, maxItems: 100, items: body({ name: { type: 'string', minLength: 1, maxLength: 128 }, description: { type: 'string', minLength: 1, maxLength: 200 } }, ['name', 'description']) },
    access_token_ttl: { type: ['integer', 'null'], minimum: 60, maximum: 86400 },
    signing_alg: { type: 'string', enum: [...API_SIGNING_ALGORITHMS] },
  } as const;
  const identifier = params({ identifier: { type: 'string', minLength: 1, maxLength: 1024 } });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/resources`, operationId: 'listResources', area: 'resources', write: false,
    schema: { summary: 'The registered APIs and their scopes', response: ok() },
    handler: async (_request, _reply, d) => ({ resources: (await listResources(d)).map(resourceJson) }),
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/resources`, operationId: 'createResource', area: 'resources', write: true, location: true,
    schema: {
      summary: 'Register an API (RFC 8707) and its scopes',
      body: body({ identifier: { type: 'string', minLength: 1, maxLength: 1024 }, ...RESOURCE_FIELDS, introspection_secret: { type: 'boolean' } }, ['identifier', 'name', 'scopes']),
      response: { 201: OBJECT, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { resource, introspectionSecret } = await addResource(d, request.body as Parameters<typeof addResource>[1]);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/resources/${encodeURIComponent(resource.identifier)}`);
      return { ...resourceJson(resource), ...(introspectionSecret === null ? {} : { introspection_secret: introspectionSecret }) };
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/resources/:identifier`, operationId: 'getResource', area: 'resources', write: false,
    schema: { summary: 'An API by its identifier (URL-encoded in the path)', params: identifier, response: ok() },
    handler: async (request, _reply, d) => resourceJson(await getResource(d, (request.params as { identifier: string }).identifier)),
  });
  route({
    method: 'PATCH', url: `${ADMIN_PREFIX}/resources/:identifier`, operationId: 'updateResource', area: 'resources', write: true,
    schema: {
      summary: "Change an API from its next token: name, scopes (the list replaces the old one; a scope a client is registered with cannot be removed), token lifetime, algorithm",
      params: identifier,
      body: body(RESOURCE_FIELDS),
      response: ok(),
    },
    handler: async (request, _reply, d) => resourceJson(await updateResource(d, (request.params as { identifier: string }).identifier, request.body as ResourceUpdate)),
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/resources/:identifier`, operationId: 'removeResource', area: 'resources', write: true,
    schema: { summary: 'Remove an API: tokens and grants for it stop working at once', params: identifier, response: noContent },
    handler: async (request, reply, d) => {
      await removeResource(d, (request.params as { identifier: string }).identifier);
      return reply.status(204).send();
    },
  });

};

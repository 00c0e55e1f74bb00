/**
 * SCIM 2.0 at `<issuer>/scim/v2` (RFC 7644; docs/scim.md): the routes parse, call a flow of
 * flows/scim/, and answer `application/scim+json`; every error, the body parser's and the
 * router's included, is the SCIM error schema (§3.12), never a 500 page. Who calls is checked
 * before anything of the request is read (flows/scim/auth.ts).
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SCIM_PATH } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { NO_ADMIN } from '../flows/manage/authority.ts';
import { scimCaller, type ScimCaller } from '../flows/scim/auth.ts';
import { bulk, MAX_PAYLOAD_BYTES, type BulkDispatch } from '../flows/scim/bulk.ts';
import { ScimError } from '../flows/scim/errors.ts';
import { createGroupResource, deleteGroupResource, getGroupResource, patchGroupResource, replaceGroupResource } from '../flows/scim/groups.ts';
import { project, type ListQuery } from '../flows/scim/query.ts';
import { listGroups, listUsers, searchAll, searchQuery } from '../flows/scim/search.ts';
import { GROUP_KIND, USER_KIND, type ResourceKind } from '../flows/scim/schema.ts';
import { KINDS, resourceType, schemaResources, serviceProviderConfig } from '../flows/scim/service-provider.ts';
import {
  createUserResource,
  deleteUserResource,
  getUserResource,
  ifMatchVersion,
  patchUserResource,
  replaceUserResource,
  type ScimDeps,
} from '../flows/scim/users.ts';
import { bearerToken } from './bearer.ts';
import { forRequest, type AppDeps } from './deps.ts';

const SCIM_JSON = 'application/scim+json; charset=utf-8';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who called `/scim/v2` (set once their token is checked). */
    scimCaller?: ScimCaller;
  }
}

function send(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  const resource = body as { meta?: { version?: string; location?: string } } | null;
  if (resource?.meta?.version !== undefined) reply.header('ETag', resource.meta.version);
  if (status === 201 && resource?.meta?.location !== undefined) reply.header('Location', resource.meta.location);
  return reply
    .status(status)
    .header('Cache-Control', 'no-store')
    .type(SCIM_JSON)
    .send(body === null ? undefined : JSON.stringify(body));
}

function sendError(reply: FastifyReply, error: ScimError): FastifyReply {
  if (error.status === 401) reply.header('WWW-Authenticate', 'Bearer realm="tessera"');
  if (error.retryAfterSeconds !== undefined) reply.header('Retry-After', String(error.retryAfterSeconds));
  return reply.status(error.status).header('Cache-Control', 'no-store').type(SCIM_JSON).send(JSON.stringify(error.toJSON()));
}

/** The error a failure answers as (§3.12): a ScimError as it is, Fastify's own and OAuth's by their status. */
function asScimError(error: FastifyError | Error): ScimError {
  if (error instanceof ScimError) return error;
  const code = (error as FastifyError).code;
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ScimError(413, null, `the body is larger than ${MAX_PAYLOAD_BYTES} bytes`);
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new ScimError(415, null, 'send application/scim+json (or application/json)');
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || code === 'FST_ERR_CTP_INVALID_JSON_BODY') return new ScimError(400, 'invalidSyntax', 'the body is not JSON');
  if (error instanceof OAuthError)
    return new ScimError(error.status, null, error.description, error.retryAfterSeconds === undefined ? undefined : Math.ceil(error.retryAfterSeconds));
  const status = (error as FastifyError).statusCode;
  if (status !== undefined && status >= 400 && status < 500) return new ScimError(status, null, error.message.slice(0, 300));
  return new ScimError(500, null, 'the server failed to answer; try again');
}

export const scimRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const base = `${deps.config.issuer}${SCIM_PATH}`;

  // RFC 7644 §3.1: application/scim+json; plain JSON too (Okta and curl send it). Bounded.
  const parse = (_request: FastifyRequest, text: string | Buffer, done: (error: Error | null, body?: unknown) => void) => {
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(new ScimError(400, 'invalidSyntax', 'the body is not JSON'));
    }
  };
  app.addContentTypeParser(['application/scim+json', 'application/json'], { parseAs: 'string', bodyLimit: MAX_PAYLOAD_BYTES }, parse);

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const scim = asScimError(error);
    if (scim.status >= 500) request.log.error({ err: error }, 'SCIM request failed');
    return sendError(reply, scim);
  });

  // §2: who calls, before anything of the request is read.
  app.addHook('onRequest', async (request) => {
    let token: string | null;
    try {
      token = bearerToken(request, { query: {}, body: {} });
    } catch {
      throw new ScimError(401, null, 'the Authorization header is not a well-formed Bearer token');
    }
    request.scimCaller = await scimCaller(forRequest(deps, request), token, request.ip);
  });

  /** The operations' dependencies, naming the caller in every event they record. */
  const scimDeps = (request: FastifyRequest): ScimDeps => {
    const base_ = forRequest(deps, request);
    const caller = request.scimCaller!;
    return {
      ...base_,
      base,
      caller: NO_ADMIN,
      events: base_.events.withDetail(caller.kind === 'token' ? { scim_token: caller.name } : { scim_client: caller.id }),
      tellApps: async (sessions) => (await sendLogoutTokens(deps, sessions, request.log)).clients,
      hashPassword: async (password) => {
        const hash = await deps.passwords.hash(password, deps.config.passwordHash, request.ip, { trusted: true });
        if (hash === null)
          throw new ScimError(503, null, 'the server is busy checking passwords; try again shortly', Math.ceil(deps.passwords.retryAfterSeconds()));
        return hash;
      },
    };
  };

  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const queryOf = (request: FastifyRequest): ListQuery => {
    const raw = request.query as Record<string, unknown>;
    const one = (name: string): string | undefined => {
      const value = raw[name];
      if (value === undefined) return undefined;
      if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', `${name} is given once`);
      return value;
    };
    return {
      filter: one('filter'),
      sortBy: one('sortBy'),
      sortOrder: one('sortOrder'),
      startIndex: one('startIndex'),
      count: one('count'),
      attributes: one('attributes'),
      excludedAttributes: one('excludedAttributes'),
    };
  };
  const versionOf = (request: FastifyRequest) => ifMatchVersion(request.headers['if-match']);
  const one = (request: FastifyRequest, kind: ResourceKind, resource: Record<string, unknown>) => {
    const query = queryOf(request);
    if (query.attributes === undefined && query.excludedAttributes === undefined) return resource;
    return project(
      kind,
      resource,
      query.attributes
        ?.split(',')
        .map((name) => name.trim())
        .filter(Boolean) ?? [],
      query.excludedAttributes
        ?.split(',')
        .map((name) => name.trim())
        .filter(Boolean) ?? [],
    );
  };

  // Users and Groups (§3.3-§3.6): the same six operations over each resource type's own.
  const resources = [
    {
      path: 'Users',
      kind: USER_KIND,
      list: listUsers,
      create: createUserResource,
      get: getUserResource,
      replace: replaceUserResource,
      patch: patchUserResource,
      remove: deleteUserResource,
    },
    {
      path: 'Groups',
      kind: GROUP_KIND,
      list: listGroups,
      create: createGroupResource,
      get: getGroupResource,
      replace: replaceGroupResource,
      patch: patchGroupResource,
      remove: deleteGroupResource,
    },
  ] as const;
  for (const resource of resources) {
    const at = `${SCIM_PATH}/${resource.path}`;
    app.get(at, async (request, reply) => send(reply, 200, await resource.list(scimDeps(request), queryOf(request))));
    // §3.4.3: the same query in a body, which keeps a filter out of URLs and their logs.
    app.post(`${at}/.search`, async (request, reply) => send(reply, 200, await resource.list(scimDeps(request), searchQuery(request.body))));
    app.post(at, async (request, reply) => send(reply, 201, await resource.create(scimDeps(request), request.body)));
    app.get(`${at}/:id`, async (request, reply) => send(reply, 200, one(request, resource.kind, await resource.get(scimDeps(request), idOf(request)))));
    app.put(`${at}/:id`, async (request, reply) =>
      send(reply, 200, await resource.replace(scimDeps(request), idOf(request), request.body, versionOf(request))),
    );
    app.patch(`${at}/:id`, async (request, reply) =>
      send(reply, 200, await resource.patch(scimDeps(request), idOf(request), request.body, versionOf(request))),
    );
    app.delete(`${at}/:id`, async (request, reply) => {
      await resource.remove(scimDeps(request), idOf(request), versionOf(request));
      return reply.status(204).header('Cache-Control', 'no-store').send();
    });
  }

  // §3.4.3: "across all resource types", at the root.
  app.post(`${SCIM_PATH}/.search`, async (request, reply) => send(reply, 200, await searchAll(scimDeps(request), searchQuery(request.body))));

  // Service provider configuration (§4).
  app.get(`${SCIM_PATH}/ServiceProviderConfig`, async (_request, reply) => send(reply, 200, serviceProviderConfig(base)));
  app.get(`${SCIM_PATH}/ResourceTypes`, async (_request, reply) => {
    const resources = KINDS.map((kind) => resourceType(base, kind));
    return send(reply, 200, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: resources.length,
      startIndex: 1,
      itemsPerPage: resources.length,
      Resources: resources,
    });
  });
  app.get(`${SCIM_PATH}/ResourceTypes/:id`, async (request, reply) => {
    const kind = KINDS.find((candidate) => candidate.name === idOf(request));
    if (kind === undefined) throw new ScimError(404, null, `no resource type ${idOf(request).slice(0, 100)}`);
    return send(reply, 200, resourceType(base, kind));
  });
  app.get(`${SCIM_PATH}/Schemas`, async (_request, reply) => {
    const resources = schemaResources(base);
    return send(reply, 200, {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      totalResults: resources.length,
      startIndex: 1,
      itemsPerPage: resources.length,
      Resources: resources,
    });
  });
  app.get(`${SCIM_PATH}/Schemas/:id`, async (request, reply) => {
    const schema = schemaResources(base).find((candidate) => candidate['id'] === idOf(request));
    if (schema === undefined) throw new ScimError(404, null, `no schema ${idOf(request).slice(0, 200)}`);
    return send(reply, 200, schema);
  });

  // Bulk (§3.7): each operation as its own request.
  app.post(`${SCIM_PATH}/Bulk`, async (request, reply) => {
    const d = scimDeps(request);
    const dispatch: BulkDispatch = async (method, path, data, version) => {
      const [, noun, id] = path.split('/') as [string, 'Users' | 'Groups', string | undefined];
      const expected = ifMatchVersion(version);
      const users = noun === 'Users';
      if (method === 'POST') {
        if (id !== undefined) throw new ScimError(400, 'invalidPath', 'POST makes a resource: /Users or /Groups');
        return users ? createUserResource(d, data) : createGroupResource(d, data);
      }
      if (id === undefined) throw new ScimError(400, 'invalidPath', `${method} needs a resource: /${noun}/ID`);
      if (method === 'PUT') return users ? replaceUserResource(d, id, data, expected) : replaceGroupResource(d, id, data, expected);
      if (method === 'PATCH') return users ? patchUserResource(d, id, data, expected) : patchGroupResource(d, id, data, expected);
      if (users) await deleteUserResource(d, id, expected);
      else await deleteGroupResource(d, id, expected);
      return null;
    };
    return send(reply, 200, await bulk(request.body, dispatch));
  });

  // §3.12: anything else under the SCIM base is a SCIM 404 (and a method a path lacks, 405).
  app.all(`${SCIM_PATH}/*`, async (request) => {
    throw new ScimError(404, null, `no SCIM endpoint at ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`);
  });
};

/** The admin API's OpenAPI 3.1 document, built from the routes as registered: their schemas and their scopes. */
import type { RouteOptions } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { ADMIN_SCOPES } from '../../core/scopes.ts';
import { adminScopesFor } from '../../flows/manage/admin-token.ts';

/** RFC 9457 §3.1's members, and `field`: the input a refusal is about. */
const PROBLEM_SCHEMA = {
  type: 'object',
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    field: { type: 'string', description: 'The input at fault, by its name in the request' },
  },
  required: ['type', 'title', 'status', 'detail'],
};

/** The OpenAPI 3.1 document of the routes as registered (their schemas, their scopes). */
export function openApiDocument(routes: readonly RouteOptions[], issuer: string, ownListener: boolean): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const admin = route.config?.admin;
    // The document does not describe itself.
    if (!admin || admin.area === 'any') continue;
    const schema = (route.schema ?? {}) as Record<string, Record<string, unknown> | undefined>;
    // Fastify's /clients/:client_id is OpenAPI's /clients/{client_id}.
    const path = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    const parameters = [
      ...Object.entries((schema['params']?.['properties'] ?? {}) as Record<string, unknown>).map(([name, value]) => ({
        name,
        in: 'path',
        required: true,
        schema: value,
      })),
      ...Object.entries((schema['querystring']?.['properties'] ?? {}) as Record<string, unknown>).map(([name, value]) => ({
        name,
        in: 'query',
        required: false,
        schema: value,
      })),
      ...(admin.ifMatch
        ? [
            {
              name: 'If-Match',
              in: 'header',
              required: true,
              schema: { type: 'string' },
              description: `The ETag the ${admin.ifMatch} was read with (strong; 428 without it, 412 when it changed since)`,
            },
          ]
        : []),
    ];
    const headers = (status: string) => ({
      ...(admin.etag && (status === '200' || status === '201') ? { ETag: { description: 'Its version, for If-Match', schema: { type: 'string' } } } : {}),
      ...(admin.location && status === '201' ? { Location: { description: 'Where it is now', schema: { type: 'string' } } } : {}),
    });
    const responses = Object.fromEntries(
      Object.entries((schema['response'] ?? {}) as Record<string, unknown>).map(([status, value]) => {
        if (status === 'default') return [status, { $ref: '#/components/responses/Problem' }];
        const described = Object.keys(headers(status)).length > 0 ? { headers: headers(status) } : {};
        return [
          status,
          status === '204'
            ? { description: 'Done', ...described }
            : { description: status === '201' ? 'Created' : 'OK', ...described, content: { 'application/json': { schema: value } } },
        ];
      }),
    );
    // HEAD is Fastify's own twin of each GET.
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((method) => method !== 'HEAD');
    for (const method of methods) {
      (paths[path] ??= {})[method.toLowerCase()] = {
        operationId: route.config?.['operationId' as never] as unknown as string,
        summary: (schema['summary'] as unknown as string | undefined) ?? '',
        security: [{ adminToken: adminScopesFor(admin.area, admin.write) }],
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(schema['body'] ? { requestBody: { required: true, content: { 'application/json': { schema: schema['body'] } } } } : {}),
        responses,
      };
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Tessera admin API',
      version: '1',
      description: 'Manage clients, users, APIs, grants, lockouts, events and signing keys. See docs/admin-api.md.',
    },
    // On a listener of its own the API is not at the issuer: relative to where this document
    // was fetched from (OpenAPI 3.1 §4.8.5).
    servers: [{ url: ownListener ? ADMIN_PREFIX : `${issuer}${ADMIN_PREFIX}` }],
    components: {
      // The one error answer: every refusal is an RFC 9457 problem.
      schemas: { Problem: PROBLEM_SCHEMA },
      responses: {
        Problem: {
          description:
            'A problem (RFC 9457): 400 a bad field (field names it), 401 no or a bad token, 403 a scope or authority lacking, 404, 409, 412 a stale If-Match, 422, 428 no If-Match, 429 or 503 with Retry-After',
          headers: { 'Retry-After': { description: 'With 429 and 503: seconds to wait before trying again', schema: { type: 'integer' } } },
          content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
        },
      },
      securitySchemes: {
        adminToken: {
          type: 'oauth2',
          description: 'A client_credentials access token for the resource <issuer>/admin (Bearer, or DPoP-bound).',
          flows: { clientCredentials: { tokenUrl: `${issuer}/oauth/token`, scopes: Object.fromEntries(ADMIN_SCOPES.map((scope) => [scope, scope])) } },
        },
      },
    },
    paths: Object.fromEntries(Object.entries(paths).map(([path, operations]) => [path.slice(ADMIN_PREFIX.length) || '/', operations])),
  };
}

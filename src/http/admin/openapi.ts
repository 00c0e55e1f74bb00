/** The admin API's OpenAPI 3.1 document, built from the routes as registered: their schemas and their scopes. */
import type { RouteOptions } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { ADMIN_SCOPES } from '../../core/scopes.ts';
import { adminScopesFor } from '../../flows/manage/admin-token.ts';

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
      ...Object.entries((schema['params']?.['properties'] ?? {}) as Record<string, unknown>).map(([name, value]) => ({ name, in: 'path', required: true, schema: value })),
      ...Object.entries((schema['querystring']?.['properties'] ?? {}) as Record<string, unknown>).map(([name, value]) => ({ name, in: 'query', required: false, schema: value })),
      ...(admin.ifMatch ? [{ name: 'If-Match', in: 'header', required: true, schema: { type: 'string' }, description: `The ETag the ${admin.ifMatch} was read with (strong; 428 without it, 412 when it changed since)` }] : []),
    ];
    const responses = Object.fromEntries(
      Object.entries((schema['response'] ?? {}) as Record<string, unknown>).map(([status, value]) => [
        status,
        status === '204'
          ? { description: 'Done' }
          : { description: status === 'default' ? 'A problem (RFC 9457)' : 'OK', content: { [status === 'default' ? 'application/problem+json' : 'application/json']: { schema: value } } },
      ]),
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
    info: { title: 'Tessera admin API', version: '1', description: 'Manage clients, users, APIs, grants, lockouts, events and signing keys. See docs/admin-api.md.' },
    // On a listener of its own the API is not at the issuer: relative to where this document
    // was fetched from (OpenAPI 3.1 §4.8.5).
    servers: [{ url: ownListener ? ADMIN_PREFIX : `${issuer}${ADMIN_PREFIX}` }],
    components: {
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


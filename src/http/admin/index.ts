/**
 * The admin API (docs/admin-api.md): JSON over HTTP for what the `tessera` command manages,
 * calling the same operations (src/flows/manage), one encapsulated plugin per noun beside this
 * file. Every route declares its JSON schemas up front; Fastify validates requests with them
 * (unknown fields refused, not dropped), and the OpenAPI 3.1 document at
 * `/admin/v1/openapi.json` is built from those same schemas as the routes are registered, so
 * the two cannot drift apart. Errors are RFC 9457 problems. Here: who calls (RFC 6750), the
 * errors, the listener split and the document.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyRequest, RouteOptions } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { adminCaller, adminScopesFor } from '../../flows/manage/admin-token.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { accessTokenCredential, bearerChallenge } from '../bearer.ts';
import type { AppDeps } from '../deps.ts';
import { requestProof } from '../dpop.ts';
import { toOAuthError } from '../errors.ts';
import { clientRoutes } from './clients.ts';
import { deviceRoutes } from './devices.ts';
import { eventRoutes } from './events.ts';
import { keyRoutes } from './keys.ts';
import { sendProblem } from './kit.ts';
import { lockoutRoutes } from './lockouts.ts';
import { openApiDocument } from './openapi.ts';
import { providerRoutes } from './providers.ts';
import { registrationTokenRoutes } from './registration-tokens.ts';
import { resourceRoutes } from './resources.ts';
import { scimTokenRoutes } from './scim-tokens.ts';
import { userRoutes } from './users.ts';
import { trustedIssuerRoutes } from './trusted-issuers.ts';
import { webhookRoutes } from './webhooks.ts';
import { outboxRoutes } from './outbox.ts';
import { samlServiceProviderRoutes } from './saml-service-providers.ts';
import { organizationRoutes } from './organizations.ts';
import { named } from '../plugin-name.ts';

export { MAX_PAGE } from './kit.ts';

/**
 * The requests that came in through the admin listener (TESSERA_ADMIN_LISTEN): that server
 * hands each to the app through `adminListenerHandler`, which marks it here.
 */
const viaAdminListener = new WeakSet<IncomingMessage>();

/** The request handler of the admin listener: the app's routing, for requests marked as the admin listener's. */
export function adminListenerHandler(
  routing: (request: IncomingMessage, response: ServerResponse) => void,
): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    viaAdminListener.add(request);
    routing(request, response);
  };
}

/**
 * With an admin listener, each listener serves its own half: the admin API there and
 * nowhere else, everything else on the public one. A request for the other half is 404,
 * as if the path did not exist (Hydra's split of admin and public ports).
 */
export function separateAdminListener(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    // The route the router matched, not the target as sent: `/%61dmin/v1/users` and the
    // absolute form `http://host/admin/v1/keys` reach the admin routes too.
    const adminPath = (request.routeOptions.url ?? '').startsWith(ADMIN_PREFIX);
    // Not the not-found handler: it would answer 405 for a path the other listener serves.
    if (adminPath !== viaAdminListener.has(request.raw))
      return sendProblem(reply, 404, 'Not Found', `no endpoint at ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`);
  });
}

export const adminRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const registered: RouteOptions[] = [];
  app.addHook('onRoute', (route) => {
    registered.push(route);
  });
  let document: Record<string, unknown> | null = null;

  // JSON in (the rest of the server takes forms only), bounded like every body.
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, text, done) => {
    if (text === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(Object.assign(new ManageError('invalid', ['the body is not JSON']), { statusCode: 400 }), undefined);
    }
  });

  // RFC 6750 §3: who calls, before anything of the request is read.
  app.addHook('onRequest', async (request, reply) => {
    const admin = request.routeOptions.config.admin;
    if (!admin) return;
    reply.header('Cache-Control', 'no-store');
    const credential = accessTokenCredential(request, { query: {}, body: {} });
    if (credential === null) {
      // §3.1: a request without a token gets the bare challenge.
      reply.header('WWW-Authenticate', bearerChallenge());
      return sendProblem(
        reply,
        401,
        'Unauthorized',
        'an access token is required: Authorization: Bearer <a client_credentials token for the resource <issuer>/admin>',
      );
    }
    const path = request.url.split('?')[0]!;
    const proof = credential.scheme === 'DPoP' ? await requestProof(deps, request, reply, path, credential.token) : null;
    const caller = await adminCaller(deps, { ...credential, proof }, admin.area, admin.write);
    request.adminClient = caller.clientId;
    request.adminScope = caller.scope;
  });

  // A POST without a body is one with every optional field left out (`{}`): its required
  // fields are then named as missing, rather than the body refused as "not an object".
  app.addHook('preValidation', async (request) => {
    if (request.body === undefined && request.routeOptions.schema?.body) request.body = {};
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ManageError)
      return sendProblem(reply, MANAGE_STATUS[error.kind], error.kind.replace('_', ' '), error.message, error.field ? { field: error.field } : {});
    if (error.validation) {
      // Which input was refused: the unknown field, the missing one, or the one that is wrong.
      const [first] = error.validation;
      const params = (first?.params ?? {}) as Record<string, unknown>;
      const name = (params['additionalProperty'] ?? params['missingProperty'] ?? first?.instancePath.replace(/^\//, '').split('/')[0] ?? '') as string;
      const where = error.validationContext ?? 'body';
      const detail =
        params['additionalProperty'] !== undefined ? `${where}: unknown field ${name}` : `${where}${name ? ` ${name}` : ''}: ${first?.message ?? 'invalid'}`;
      return sendProblem(reply, 400, 'Bad Request', detail, name ? { field: name } : {});
    }
    const oauth = toOAuthError(error);
    if (oauth.code === 'invalid_token' || oauth.code === 'insufficient_scope' || oauth.code === 'invalid_dpop_proof') {
      reply.header(
        'WWW-Authenticate',
        oauth.code === 'insufficient_scope' ? `${bearerChallenge(oauth)}, scope="${adminScopeOf(request)}"` : bearerChallenge(oauth),
      );
    }
    if (oauth.retryAfterSeconds !== undefined) reply.header('Retry-After', String(Math.max(1, Math.ceil(oauth.retryAfterSeconds))));
    if (oauth.status >= 500 && oauth.code !== 'temporarily_unavailable') request.log.error({ err: error }, 'admin request failed');
    return sendProblem(reply, oauth.status, oauth.code, oauth.description);
  });

  // Each noun's routes, in a plugin of its own: the hooks and the error handler above are theirs too.
  for (const noun of [
    clientRoutes,
    userRoutes,
    registrationTokenRoutes,
    deviceRoutes,
    lockoutRoutes,
    resourceRoutes,
    providerRoutes,
    eventRoutes,
    keyRoutes,
    webhookRoutes,
    outboxRoutes,
    trustedIssuerRoutes,
    scimTokenRoutes,
    samlServiceProviderRoutes,
    organizationRoutes,
  ]) {
    await app.register(named(noun), { deps });
  }

  // On the public listener, the API's description is for its callers only, as the API is:
  // it maps every operation for whoever probes. On a listener of its own, on a
  // network the operator chose, it is served to all, as the API's own port is.
  app.get(
    `${ADMIN_PREFIX}/openapi.json`,
    { config: deps.config.adminListen === null ? ({ admin: { area: 'any', write: false } } as never) : {} },
    async (_request, reply) => {
      document ??= openApiDocument(registered, deps.config.issuer, deps.config.adminListen !== null);
      return reply.type('application/json; charset=utf-8').send(document);
    },
  );
};

/** The scope a refused request needed, for the challenge's `scope` attribute (RFC 6750 §3). */
function adminScopeOf(request: FastifyRequest): string {
  const admin = request.routeOptions.config.admin;
  return admin ? adminScopesFor(admin.area, admin.write)[0]! : '';
}

/**
 * The admin API (docs/admin-api.md): JSON over HTTP for what the `tessera` command manages,
 * calling the same operations (src/flows/manage). Every route declares its JSON schemas up
 * front; Fastify validates requests with them (unknown fields refused, not dropped), and the
 * OpenAPI 3.1 document at `/admin/v1/openapi.json` is built from those same schemas as the
 * routes are registered, so the two cannot drift apart. Errors are RFC 9457 problems.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { ADMIN_PREFIX } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import { ADMIN_SCOPES, OPERATOR_ROLES } from '../core/scopes.ts';
import { formatUserCode } from '../flows/device/user-code.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { adminCaller, adminScopesFor, type AdminArea, type AdminNeed } from '../flows/manage/admin-token.ts';
import { clientEtag, clientJson, createClient, getClient, listClients, removeClient, revokeClientTokens, rotateClientSecret, updateClient, type ClientMetadata } from '../flows/manage/clients.ts';
import { MAX_PAGE, type ManageDeps } from '../flows/manage/deps.ts';
import { CLIENT_ALWAYS, CLIENT_FIELDS } from '../flows/manage/fields/clients.ts';
import { requestSchema, responseSchema } from '../flows/manage/fields/field.ts';
import { MANAGE_STATUS, ManageError } from '../flows/manage/errors.ts';
import { eventCursor, eventJson, listEvents, parseSince } from '../flows/manage/events.ts';
import { grantJson, listUserGrants, revokeGrant } from '../flows/manage/grants.ts';
import { keyJson, listKeys, rotateKeys } from '../flows/manage/keys.ts';
import { clearLockouts, listLockouts, lockoutJson } from '../flows/manage/lockouts.ts';
import { addProvider, getProvider, listProviders, providerJson, removeProvider, updateProvider, type ProviderInput } from '../flows/manage/providers.ts';
import { createInitialAccessToken, initialAccessTokenJson, listInitialAccessTokens, MAX_INITIAL_TOKEN_TTL, MAX_INITIAL_TOKEN_USES, removeInitialAccessToken, type InitialTokenInput } from '../flows/manage/registration-tokens.ts';
import { denyDevice, listPendingDevices, MAX_REASON, pendingDeviceJson } from '../flows/manage/devices.ts';
import { addResource, API_SIGNING_ALGORITHMS, getResource, listResources, removeResource, resourceJson, updateResource, type ResourceUpdate } from '../flows/manage/resources.ts';
import {
  createUser,
  endUserSessions,
  listUsers,
  listUserSessions,
  removeUser,
  resetLink,
  resetUserSecondFactor,
  setDisabled,
  type UserChanges,
  setPassword,
  updateUser,
  userDetails,
  userEtag,
  userDetailsJson,
  userJson,
} from '../flows/manage/users.ts';
import { accessTokenCredential, bearerChallenge } from './bearer.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { requestProof } from './dpop.ts';
import { toOAuthError } from './errors.ts';

/**
 * The requests that came in through the admin listener (TESSERA_ADMIN_LISTEN): that server
 * hands each to the app through `adminListenerHandler`, which marks it here.
 */
const viaAdminListener = new WeakSet<IncomingMessage>();

/** The request handler of the admin listener: the app's routing, for requests marked as the admin listener's. */
export function adminListenerHandler(routing: (request: IncomingMessage, response: ServerResponse) => void): (request: IncomingMessage, response: ServerResponse) => void {
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
    // absolute form `http://host/admin/v1/keys` reach the admin routes too (issue 40).
    const adminPath = (request.routeOptions.url ?? '').startsWith(ADMIN_PREFIX);
    // Not the not-found handler: it would answer 405 for a path the other listener serves.
    if (adminPath !== viaAdminListener.has(request.raw)) return sendProblem(reply, 404, 'Not Found', `no endpoint at ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`);
  });
}
export { MAX_PAGE };

/**
 * The entity tag a PATCH was made against (its If-Match), or null when the answer has been
 * sent: 428 without one (RFC 6585 §3: an update must say which version it was made
 * against). A weak tag never matches (RFC 9110 §13.1.1: If-Match compares strongly), nor does
 * anything but one of our quoted version numbers: both are 412.
 */
function ifMatch(request: FastifyRequest, reply: FastifyReply, noun: string): string | null {
  const given = request.headers['if-match'];
  if (given === undefined) {
    sendProblem(reply, 428, 'Precondition Required', `send If-Match with the ETag the ${noun} was read with, so that no other change is overwritten unseen`);
    return null;
  }
  const tag = given.trim();
  if (/^W\//.test(tag)) throw new ManageError('stale', [`If-Match ${tag.slice(0, 40)}: a weak entity tag never matches an If-Match (RFC 9110 §13.1.1); send the ETag as read`]);
  if (!/^"\d{1,15}"$/.test(tag)) throw new ManageError('stale', [`If-Match ${tag.slice(0, 40)}: not an ETag of this ${noun}`]);
  return tag;
}
const DEFAULT_PAGE = 50;


/** Who may call a route: the area of its scope, and whether it changes something. */
interface AdminRouteConfig {
  readonly area: AdminNeed;
  readonly write: boolean;
  /** What a change must name the version of, in If-Match (428 without it). */
  readonly ifMatch?: 'client' | 'user';
}

declare module 'fastify' {
  interface FastifyContextConfig {
    readonly admin?: AdminRouteConfig;
  }
  interface FastifySchema {
    /** The operation's one line in the OpenAPI document. */
    readonly summary?: string;
  }
}

/** RFC 9457 §3: a problem; `field` names the input it is about, where one is. */
function sendProblem(reply: FastifyReply, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): FastifyReply {
  return reply
    .status(status)
    .header('Cache-Control', 'no-store')
    .type('application/problem+json')
    .send(JSON.stringify({ type: 'about:blank', title, status, detail, ...extra }));
}

// Identifiers in paths are checked before they reach the store: printable, no spaces, bounded.
const ID = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' } as const;
const USERNAME = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[^\\s/]+$' } as const;
const PAGE = {
  offset: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 0 },
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
} as const;
const strings = (maxItems: number) => ({ type: 'array', maxItems, items: { type: 'string', minLength: 1, maxLength: 2048 } }) as const;
const OBJECT = { type: 'object', additionalProperties: true } as const;
const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 problem details',
  properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' }, field: { type: 'string' } },
} as const;

/** A client's registration in and out, from the one table of its fields (flows/manage/fields/clients.ts). */
const CLIENT_CREATE = requestSchema(CLIENT_FIELDS, 'create');
const CLIENT_UPDATE = requestSchema(CLIENT_FIELDS, 'update');
const CLIENT = responseSchema(CLIENT_FIELDS, CLIENT_ALWAYS);
const CLIENT_WITH_SECRET = responseSchema(CLIENT_FIELDS, CLIENT_ALWAYS, { client_secret: { type: 'string', description: 'Its new secret: in this answer only' } });

/** A person's standard claims (OIDC Core §5.1), by their claim names; null clears one. */
const PROFILE_FIELDS = {
  name: { type: ['string', 'null'], maxLength: 200 },
  given_name: { type: ['string', 'null'], maxLength: 200 },
  family_name: { type: ['string', 'null'], maxLength: 200 },
  email: { type: ['string', 'null'], maxLength: 320 },
  email_verified: { type: 'boolean' },
  locale: { type: ['string', 'null'], maxLength: 35 },
  zoneinfo: { type: ['string', 'null'], maxLength: 64 },
  picture: { type: ['string', 'null'], maxLength: 2048 },
  localized_names: {
    type: 'object',
    description: 'OIDC Core §5.2: names in other languages and scripts by BCP 47 tag, laid over those kept; null or "" removes one',
    maxProperties: 20,
    propertyNames: { type: 'string', maxLength: 35 },
    additionalProperties: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        name: { type: ['string', 'null'], maxLength: 200 },
        given_name: { type: ['string', 'null'], maxLength: 200 },
        family_name: { type: ['string', 'null'], maxLength: 200 },
      },
    },
  },
} as const;

const body = (properties: Record<string, unknown>, required: readonly string[] = []) => ({ type: 'object', additionalProperties: false, properties, required });
const query = (properties: Record<string, unknown>) => ({ type: 'object', additionalProperties: false, properties });
const params = (properties: Record<string, unknown>) => ({ type: 'object', additionalProperties: false, properties, required: Object.keys(properties) });
const ok = (schema: unknown = OBJECT) => ({ 200: schema, default: PROBLEM });
const noContent = { 204: { type: 'null', description: 'Done' }, default: PROBLEM };

type Route = Omit<RouteOptions, 'handler'> & { handler: (request: FastifyRequest, reply: FastifyReply, deps: ManageDeps) => Promise<unknown> };

/** The OpenAPI 3.1 document of the routes as registered (their schemas, their scopes). */
function openApiDocument(routes: readonly RouteOptions[], issuer: string, ownListener: boolean): Record<string, unknown> {
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
      return sendProblem(reply, 401, 'Unauthorized', 'an access token is required: Authorization: Bearer <a client_credentials token for the resource <issuer>/admin>');
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
    if (error instanceof ManageError) return sendProblem(reply, MANAGE_STATUS[error.kind], error.kind.replace('_', ' '), error.message, error.field ? { field: error.field } : {});
    if (error.validation) {
      // Which input was refused: the unknown field, the missing one, or the one that is wrong.
      const [first] = error.validation;
      const params = (first?.params ?? {}) as Record<string, unknown>;
      const name = (params['additionalProperty'] ?? params['missingProperty'] ?? first?.instancePath.replace(/^\//, '').split('/')[0] ?? '') as string;
      const where = error.validationContext ?? 'body';
      const detail = params['additionalProperty'] !== undefined ? `${where}: unknown field ${name}` : `${where}${name ? ` ${name}` : ''}: ${first?.message ?? 'invalid'}`;
      return sendProblem(reply, 400, 'Bad Request', detail, name ? { field: name } : {});
    }
    const oauth = toOAuthError(error);
    if (oauth.code === 'invalid_token' || oauth.code === 'insufficient_scope' || oauth.code === 'invalid_dpop_proof') {
      reply.header('WWW-Authenticate', oauth.code === 'insufficient_scope' ? `${bearerChallenge(oauth)}, scope="${adminScopeOf(request)}"` : bearerChallenge(oauth));
    }
    if (oauth.retryAfterSeconds !== undefined) reply.header('Retry-After', String(Math.max(1, Math.ceil(oauth.retryAfterSeconds))));
    if (oauth.status >= 500 && oauth.code !== 'temporarily_unavailable') request.log.error({ err: error }, 'admin request failed');
    return sendProblem(reply, oauth.status, oauth.code, oauth.description);
  });

  const route = (options: Route & { operationId: string; area: AdminArea; write: boolean; ifMatch?: 'client' | 'user' }) => {
    const { operationId, area, write, ifMatch: versioned, handler, ...rest } = options;
    app.route({
      ...rest,
      config: { admin: { area, write, ...(versioned ? { ifMatch: versioned } : {}) }, operationId } as never,
      handler: async (request, reply) => {
        const base = forRequest(deps, request);
        const manage: ManageDeps = {
          ...base,
          // What the caller may do is what its token holds and the client still has.
          caller: { scopes: request.adminScope ?? [], ...(request.adminClient === undefined ? {} : { clientId: request.adminClient }) },
          // Each change names the admin client that made it (docs/operations.md).
          events: base.events.withDetail({ admin_client: request.adminClient ?? null }),
          tellApps: async (sessions) => (await sendLogoutTokens(deps, sessions, request.log)).clients,
          // On the password queue, as every hash the server computes (docs/security.md);
          // trusted: the caller holds an admin token.
          hashPassword: async (password) => {
            const hash = await deps.passwords.hash(password, deps.config.passwordHash, request.ip, { trusted: true });
            if (hash === null) throw new OAuthError('temporarily_unavailable', 'the server is busy checking passwords; try again shortly', { status: 503, retryAfterSeconds: deps.passwords.retryAfterSeconds() });
            return hash;
          },
        };
        reply.header('Cache-Control', 'no-store');
        return handler(request, reply, manage);
      },
    });
  };

  // Clients
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/clients`, operationId: 'listClients', area: 'clients', write: false,
    schema: {
      summary: 'List clients, a page at a time',
      querystring: query({ ...PAGE, name: { type: 'string', maxLength: 200 }, grant_type: { type: 'string', maxLength: 100 } }),
      response: ok({ type: 'object', properties: { clients: { type: 'array', items: CLIENT }, next_offset: { type: ['integer', 'null'] } }, required: ['clients', 'next_offset'] }),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { offset: number; limit: number; name?: string; grant_type?: string };
      const page = await listClients(d, { offset: q.offset, limit: q.limit + 1, ...(q.name === undefined ? {} : { name: q.name }), ...(q.grant_type === undefined ? {} : { grantType: q.grant_type }) });
      const now = d.clock.now();
      return { clients: page.slice(0, q.limit).map((client) => clientJson(client, now)), next_offset: page.length > q.limit ? q.offset + q.limit : null };
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/clients`, operationId: 'createClient', area: 'clients', write: true,
    schema: { summary: 'Register a client; its secret is in this answer only', body: CLIENT_CREATE, response: { 201: CLIENT_WITH_SECRET, default: PROBLEM } },
    handler: async (request, reply, d) => {
      const { client, secret } = await createClient(d, request.body as ClientMetadata);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/clients/${encodeURIComponent(client.id)}`).header('ETag', clientEtag(client));
      return { ...clientJson(client, d.clock.now()), ...(secret === null ? {} : { client_secret: secret }) };
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/clients/:client_id`, operationId: 'getClient', area: 'clients', write: false,
    schema: { summary: "A client's registration, with its version as ETag", params: params({ client_id: ID }), response: ok(CLIENT) },
    handler: async (request, reply, d) => {
      const client = await getClient(d, (request.params as { client_id: string }).client_id);
      reply.header('ETag', clientEtag(client));
      return clientJson(client, d.clock.now());
    },
  });
  route({
    method: 'PATCH', url: `${ADMIN_PREFIX}/clients/:client_id`, operationId: 'updateClient', area: 'clients', write: true, ifMatch: 'client',
    schema: { summary: 'Change a client: the fields given, the rest as they are; If-Match is required', params: params({ client_id: ID }), body: CLIENT_UPDATE, response: ok(CLIENT_WITH_SECRET) },
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
    method: 'POST', url: `${ADMIN_PREFIX}/clients/:client_id/secret`, operationId: 'rotateClientSecret', area: 'clients', write: true,
    schema: { summary: 'Give a client a new secret; the old one works for the grace period', params: params({ client_id: ID }), body: body({ grace_seconds: { type: 'integer', minimum: 0, maximum: 30 * 86400 } }), response: ok() },
    handler: async (request, _reply, d) => {
      const id = (request.params as { client_id: string }).client_id;
      const grace = (request.body as { grace_seconds?: number } | undefined)?.grace_seconds;
      const { client, secret } = await rotateClientSecret(d, id, grace);
      return { client_id: client.id, client_secret: secret, previous_secret_expires_at: new Date(client.previousSecretExpiresAt!).toISOString() };
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/clients/:client_id/revoke-tokens`, operationId: 'revokeClientTokens', area: 'clients', write: true,
    schema: { summary: "End every token of a client now: its own (client_credentials) and every grant people approved for it; the client stays registered", params: params({ client_id: ID }), response: ok() },
    handler: async (request, _reply, d) => {
      const { grantsRevoked } = await revokeClientTokens(d, (request.params as { client_id: string }).client_id);
      return { grants_revoked: grantsRevoked };
    },
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/clients/:client_id`, operationId: 'removeClient', area: 'clients', write: true,
    schema: { summary: 'Remove a client and everything issued to it', params: params({ client_id: ID }), response: noContent },
    handler: async (request, reply, d) => {
      await removeClient(d, (request.params as { client_id: string }).client_id);
      return reply.status(204).send();
    },
  });

  // Users
  const username = params({ username: USERNAME });
  const named = (request: FastifyRequest) => (request.params as { username: string }).username;
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/users`, operationId: 'listUsers', area: 'users', write: false,
    schema: { summary: 'List or search users (q: in the username, name or e-mail address)', querystring: query({ ...PAGE, q: { type: 'string', minLength: 1, maxLength: 200 } }), response: ok() },
    handler: async (request, _reply, d) => {
      const q = request.query as { offset: number; limit: number; q?: string };
      const page = await listUsers(d, { offset: q.offset, limit: q.limit + 1, ...(q.q === undefined ? {} : { q: q.q }) });
      return { users: page.slice(0, q.limit).map(userJson), next_offset: page.length > q.limit ? q.offset + q.limit : null };
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/users`, operationId: 'createUser', area: 'users', write: true,
    schema: {
      summary: 'Create a user',
      body: body({ username: { type: 'string', minLength: 1, maxLength: 64 }, password: { type: 'string', minLength: 1, maxLength: 1024 }, ...PROFILE_FIELDS }, ['username', 'password']),
      response: { 201: OBJECT, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const user = await createUser(d, request.body as { username: string; password: string });
      reply.status(201).header('Location', `${ADMIN_PREFIX}/users/${encodeURIComponent(user.username)}`);
      return userJson(user);
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/users/:username`, operationId: 'getUser', area: 'users', write: false,
    schema: { summary: "A user, their approvals, last sign-in, passkeys and one-time codes, with their version as ETag", params: username, response: ok() },
    handler: async (request, reply, d) => {
      const details = await userDetails(d, named(request));
      reply.header('ETag', userEtag(details.user));
      return userDetailsJson(details);
    },
  });
  route({
    method: 'PATCH', url: `${ADMIN_PREFIX}/users/:username`, operationId: 'updateUser', area: 'users', write: true, ifMatch: 'user',
    schema: {
      summary: "Change a user's standard claims (null clears one) or operator console role (a role needs a token holding every scope it allows); If-Match is required",
      params: username,
      body: body({ ...PROFILE_FIELDS, role: { type: ['string', 'null'], enum: [...OPERATOR_ROLES, null] } }),
      response: ok(),
    },
    handler: async (request, reply, d) => {
      const version = ifMatch(request, reply, 'user');
      if (version === null) return reply;
      const user = await updateUser(d, named(request), request.body as UserChanges, version);
      reply.header('ETag', userEtag(user));
      return userJson(user);
    },
  });
  for (const [action, disabled] of [['disable', true], ['enable', false]] as const) {
    route({
      method: 'POST', url: `${ADMIN_PREFIX}/users/:username/${action}`, operationId: `${action}User`, area: 'users', write: true,
      schema: { summary: disabled ? 'Disable a user: sessions end and tokens stop working at once' : 'Enable a disabled user', params: username, response: ok() },
      handler: async (request, _reply, d) => {
        const told = await setDisabled(d, named(request), disabled);
        return { username: named(request), disabled, changed: told !== null, apps_told: told ?? 0 };
      },
    });
  }
  route({
    method: 'PUT', url: `${ADMIN_PREFIX}/users/:username/password`, operationId: 'setUserPassword', area: 'users', write: true,
    schema: { summary: "Set a user's password; their sessions end", params: username, body: body({ password: { type: 'string', minLength: 1, maxLength: 1024 } }, ['password']), response: noContent },
    handler: async (request, reply, d) => {
      await setPassword(d, named(request), (request.body as { password: string }).password);
      return reply.status(204).send();
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/users/:username/reset-link`, operationId: 'createResetLink', area: 'users', write: true,
    schema: { summary: 'A single-use link where the user sets a new password', params: username, body: body({ ttl_seconds: { type: 'integer', minimum: 60, maximum: 30 * 86400 } }), response: ok() },
    handler: async (request, _reply, d) => {
      const link = await resetLink(d, named(request), (request.body as { ttl_seconds?: number } | undefined)?.ttl_seconds);
      return { url: link.url, expires_at: new Date(link.expiresAt).toISOString() };
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/users/:username/reset-second-factor`, operationId: 'resetSecondFactor', area: 'users', write: true,
    schema: { summary: "Remove a user's passkeys, one-time codes and recovery codes", params: username, response: ok() },
    handler: async (request, _reply, d) => {
      const reset = await resetUserSecondFactor(d, named(request));
      return { passkeys_removed: reset.passkeys, totp_removed: reset.totp };
    },
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/users/:username`, operationId: 'removeUser', area: 'users', write: true,
    schema: { summary: 'Remove a user and everything issued to them', params: username, response: noContent },
    handler: async (request, reply, d) => {
      await removeUser(d, named(request));
      return reply.status(204).send();
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/users/:username/sessions`, operationId: 'listUserSessions', area: 'users', write: false,
    schema: { summary: "A user's live browser sessions", params: username, response: ok() },
    handler: async (request, _reply, d) => ({
      sessions: (await listUserSessions(d, named(request))).map((session) => ({
        sid: session.sid,
        created_at: new Date(session.createdAt).toISOString(),
        auth_time: new Date(session.authTime).toISOString(),
        expires_at: new Date(session.expiresAt).toISOString(),
        amr: session.amr ?? ['pwd'],
      })),
    }),
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/users/:username/sessions`, operationId: 'endUserSessions', area: 'users', write: true,
    schema: { summary: 'Sign a user out everywhere', params: username, response: ok() },
    handler: async (request, _reply, d) => {
      const ended = await endUserSessions(d, named(request));
      return { sessions_ended: ended.sessions, apps_told: ended.told };
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/users/:username/grants`, operationId: 'listUserGrants', area: 'users', write: false,
    schema: { summary: 'What a user approved and has not revoked', params: username, response: ok() },
    handler: async (request, _reply, d) => {
      const now = d.clock.now();
      return { grants: (await listUserGrants(d, named(request))).map((entry) => grantJson(entry, now)) };
    },
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/grants/:grant_id`, operationId: 'revokeGrant', area: 'users', write: true,
    schema: { summary: 'Revoke a grant: its access and refresh tokens stop working', params: params({ grant_id: ID }), response: ok() },
    handler: async (request, _reply, d) => ({ revoked: await revokeGrant(d, (request.params as { grant_id: string }).grant_id) }),
  });

  // Initial access tokens for dynamic registration (RFC 7591 §3)
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/registration-tokens`, operationId: 'createRegistrationToken', area: 'clients', write: true,
    schema: {
      summary: 'An initial access token that lets its holder register clients (TESSERA_REGISTRATION=token); the token is in this answer only',
      body: body({ ttl_seconds: { type: 'integer', minimum: 60, maximum: MAX_INITIAL_TOKEN_TTL }, max_uses: { type: 'integer', minimum: 1, maximum: MAX_INITIAL_TOKEN_USES } }),
      response: { 201: OBJECT, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { token, record } = await createInitialAccessToken(d, request.body as InitialTokenInput);
      reply.status(201);
      return { ...initialAccessTokenJson(record), token };
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/registration-tokens`, operationId: 'listRegistrationTokens', area: 'clients', write: false,
    schema: { summary: 'The initial access tokens not expired, and how often each was used (never the token)', response: ok() },
    handler: async (_request, _reply, d) => ({ registration_tokens: (await listInitialAccessTokens(d)).map(initialAccessTokenJson) }),
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/registration-tokens/:id`, operationId: 'removeRegistrationToken', area: 'clients', write: true,
    schema: { summary: 'Withdraw an initial access token', params: params({ id: ID }), response: noContent },
    handler: async (request, reply, d) => {
      await removeInitialAccessToken(d, (request.params as { id: string }).id);
      return reply.status(204).send();
    },
  });

  // Device requests waiting for a person (RFC 8628)
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/devices`, operationId: 'listPendingDevices', area: 'users', write: false,
    schema: { summary: 'Device requests waiting for approval, oldest first: user code, client, where the device asked from', querystring: query({ limit: PAGE.limit }), response: ok() },
    handler: async (request, _reply, d) => ({ devices: (await listPendingDevices(d, (request.query as { limit: number }).limit)).map(pendingDeviceJson) }),
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/devices/:user_code/deny`, operationId: 'denyDevice', area: 'users', write: true,
    schema: {
      summary: 'Deny a waiting device request (a user code suspected of phishing): nobody can approve it; the device gets access_denied',
      params: params({ user_code: { type: 'string', minLength: 8, maxLength: 9, pattern: '^[A-Za-z]{4}-?[A-Za-z]{4}$' } }),
      body: body({ reason: { type: 'string', minLength: 1, maxLength: MAX_REASON } }),
      response: ok(),
    },
    handler: async (request, _reply, d) => {
      const denied = await denyDevice(d, (request.params as { user_code: string }).user_code, (request.body as { reason?: string } | undefined)?.reason ?? null);
      return { user_code: formatUserCode(denied.userCode), client_id: denied.clientId, status: denied.status };
    },
  });

  // Lockouts
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/lockouts`, operationId: 'listLockouts', area: 'users', write: false,
    schema: {
      summary: "The guessing limits' open counters: who is locked out, or on the way to it",
      querystring: query({ username: { type: 'string', minLength: 1, maxLength: 256 }, ip: { type: 'string', minLength: 1, maxLength: 64 }, locked: { type: 'boolean' }, limit: PAGE.limit }),
      response: ok(),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { username?: string; ip?: string; locked?: boolean; limit: number };
      const found = await listLockouts(d, { limit: q.limit, ...(q.username === undefined ? {} : { username: q.username }), ...(q.ip === undefined ? {} : { ip: q.ip }), ...(q.locked ? { lockedOnly: true } : {}) });
      return { lockouts: found.map(lockoutJson) };
    },
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/lockouts`, operationId: 'clearLockouts', area: 'users', write: true,
    schema: { summary: 'Lift the lockouts of a user, an address, or one counter', querystring: query({ username: { type: 'string', minLength: 1, maxLength: 256 }, ip: { type: 'string', minLength: 1, maxLength: 64 }, key: { type: 'string', minLength: 1, maxLength: 600 } }), response: ok() },
    handler: async (request, _reply, d) => ({ cleared: (await clearLockouts(d, request.query as { username?: string; ip?: string; key?: string })).map(lockoutJson) }),
  });

  // Resources (APIs)
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
    method: 'POST', url: `${ADMIN_PREFIX}/resources`, operationId: 'createResource', area: 'resources', write: true,
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

  // Upstream identity providers
  const PROVIDER_FIELDS = {
    name: { type: 'string', minLength: 1, maxLength: 60 },
    position: { type: 'integer', minimum: 0, maximum: 1_000_000 },
    only: { type: 'boolean' },
    allow_linking: { type: 'boolean' },
    allowed_domains: strings(100),
    domains: strings(100),
    claim_mapping: { type: 'object', maxProperties: 20, additionalProperties: { type: 'string', minLength: 1, maxLength: 100 } },
    issuer: { type: 'string', minLength: 1, maxLength: 1024 },
    client_id: { type: 'string', minLength: 1, maxLength: 1024 },
    client_secret: { type: 'string', minLength: 1, maxLength: 1024, writeOnly: true },
    scopes: strings(50),
    trust_upstream_mfa: { type: 'boolean' },
    allowed_organizations: strings(100),
    web_url: { type: 'string', minLength: 1, maxLength: 1024 },
    api_url: { type: 'string', minLength: 1, maxLength: 1024 },
    url: { type: 'string', minLength: 1, maxLength: 1024 },
    start_tls: { type: 'boolean' },
    bind_dn: { type: ['string', 'null'], maxLength: 1024 },
    bind_password: { type: 'string', minLength: 1, maxLength: 1024, writeOnly: true },
    user_search_base: { type: 'string', minLength: 1, maxLength: 1024 },
    user_filter: { type: 'string', minLength: 1, maxLength: 1024 },
    group_search_base: { type: ['string', 'null'], maxLength: 1024 },
    group_filter: { type: 'string', minLength: 1, maxLength: 1024 },
  } as const;
  const providerId = params({ id: { type: 'string', minLength: 1, maxLength: 40, pattern: '^[a-z0-9-]+$' } });
  const providerDeps = (d: ManageDeps) => ({ ...d, secrets: deps.secrets });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/providers`, operationId: 'listProviders', area: 'providers', write: false,
    schema: { summary: 'The upstream identity providers, in the order of their sign-in buttons (never their secrets)', response: ok() },
    handler: async (_request, _reply, d) => ({ providers: (await listProviders(d)).map((provider) => providerJson(provider, d.config.issuer)) }),
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/providers`, operationId: 'createProvider', area: 'providers', write: true,
    schema: {
      summary: 'Add an OpenID provider, GitHub or an LDAP directory to sign in through; the answer has the redirect URI to register upstream',
      body: body({ kind: { type: 'string', enum: ['oidc', 'github', 'ldap'] }, id: { type: 'string', minLength: 1, maxLength: 40 }, ...PROVIDER_FIELDS }, ['kind', 'name']),
      response: { 201: OBJECT, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const provider = await addProvider(providerDeps(d), request.body as ProviderInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/providers/${provider.id}`);
      return providerJson(provider, d.config.issuer);
    },
  });
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/providers/:id`, operationId: 'getProvider', area: 'providers', write: false,
    schema: { summary: "A provider's settings (never its secret)", params: providerId, response: ok() },
    handler: async (request, _reply, d) => providerJson(await getProvider(d, (request.params as { id: string }).id), d.config.issuer),
  });
  route({
    method: 'PATCH', url: `${ADMIN_PREFIX}/providers/:id`, operationId: 'updateProvider', area: 'providers', write: true,
    schema: { summary: 'Change a provider: the fields given, the rest as they are; a secret given replaces the stored one', params: providerId, body: body(PROVIDER_FIELDS), response: ok() },
    handler: async (request, _reply, d) => providerJson(await updateProvider(providerDeps(d), (request.params as { id: string }).id, request.body as ProviderInput), d.config.issuer),
  });
  route({
    method: 'DELETE', url: `${ADMIN_PREFIX}/providers/:id`, operationId: 'removeProvider', area: 'providers', write: true,
    schema: { summary: 'Remove a provider: nobody signs in through it any more; the users it created stay', params: providerId, response: noContent },
    handler: async (request, reply, d) => {
      await removeProvider(providerDeps(d), (request.params as { id: string }).id);
      return reply.status(204).send();
    },
  });

  // Events
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/events`, operationId: 'listEvents', area: 'events', write: false,
    schema: {
      summary: 'The audit trail, newest first, a page at a time (after: the previous page\'s next cursor)',
      querystring: query({
        user: { type: 'string', minLength: 1, maxLength: 256 },
        client: { type: 'string', minLength: 1, maxLength: 200 },
        type: { type: 'string', minLength: 1, maxLength: 64 },
        since: { type: 'string', minLength: 1, maxLength: 40 },
        after: { type: 'string', minLength: 1, maxLength: 200 },
        limit: PAGE.limit,
      }),
      response: ok(),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { user?: string; client?: string; type?: string; since?: string; after?: string; limit: number };
      const events = await listEvents(d, {
        limit: q.limit,
        ...(q.user === undefined ? {} : { username: q.user }),
        ...(q.client === undefined ? {} : { clientId: q.client }),
        ...(q.type === undefined ? {} : { type: q.type }),
        ...(q.since === undefined ? {} : { since: parseSince(q.since, d.clock.now()) }),
        ...(q.after === undefined ? {} : { after: q.after }),
      });
      return { events: events.map(eventJson), next: events.length === q.limit ? eventCursor(events[events.length - 1]!) : null };
    },
  });

  // Signing keys
  route({
    method: 'GET', url: `${ADMIN_PREFIX}/keys`, operationId: 'listKeys', area: 'keys', write: false,
    schema: { summary: 'The published signing keys and their state (public facts only), oldest first', response: ok() },
    handler: async (_request, _reply, d) => {
      const now = d.clock.now();
      return { keys: (await listKeys(d, now)).map((key) => keyJson(key, now)) };
    },
  });
  route({
    method: 'POST', url: `${ADMIN_PREFIX}/keys/rotate`, operationId: 'rotateKeys', area: 'keys', write: true,
    schema: { summary: 'Publish new signing keys; they sign after the lead time', response: ok() },
    handler: async (_request, _reply, d) => ({
      keys: (await rotateKeys({ ...d, keys: deps.keys })).map((key) => ({ kid: key.kid, alg: key.alg, activates_at: new Date(key.activatesAt).toISOString() })),
    }),
  });

  // On the public listener, the API's description is for its callers only, as the API is
  // (issue 40): it maps every operation for whoever probes. On a listener of its own, on a
  // network the operator chose, it is served to all, as the API's own port is.
  app.get(`${ADMIN_PREFIX}/openapi.json`, { config: deps.config.adminListen === null ? ({ admin: { area: 'any', write: false } } as never) : {} }, async (_request, reply) => {
    document ??= openApiDocument(registered, deps.config.issuer, deps.config.adminListen !== null);
    return reply.type('application/json; charset=utf-8').send(document);
  });
};

/** The scope a refused request needed, for the challenge's `scope` attribute (RFC 6750 §3). */
function adminScopeOf(request: FastifyRequest): string {
  const admin = request.routeOptions.config.admin;
  return admin ? adminScopesFor(admin.area, admin.write)[0]! : '';
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The admin client calling (set once its token is checked). */
    adminClient?: string;
    /** The admin scopes its token holds (and the client still has). */
    adminScope?: readonly string[];
  }
}


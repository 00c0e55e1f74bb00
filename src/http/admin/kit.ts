/**
 * What every admin API route is built with (docs/admin-api.md): the JSON schema pieces, RFC
 * 9457 problems, the If-Match precondition, and `adminRouter`, which registers a route on a
 * noun's plugin with the caller's authority in the operations' dependencies.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { OAuthError } from '../../core/errors.ts';
import { sendLogoutTokens } from '../../flows/logout/backchannel.ts';
import type { AdminArea, AdminNeed } from '../../flows/manage/admin-token.ts';
import { MAX_PAGE, type ManageDeps } from '../../flows/manage/deps.ts';
import { ManageError } from '../../flows/manage/errors.ts';
import { forRequest, type AppDeps } from '../deps.ts';

export { MAX_PAGE };

/**
 * The entity tag a PATCH was made against (its If-Match), or null when the answer has been
 * sent: 428 without one (RFC 6585 §3: an update must say which version it was made
 * against). A weak tag never matches (RFC 9110 §13.1.1: If-Match compares strongly), nor does
 * anything but one of our quoted version numbers: both are 412.
 */
export function ifMatch(request: FastifyRequest, reply: FastifyReply, noun: string): string | null {
  const given = request.headers['if-match'];
  if (given === undefined) {
    sendProblem(reply, 428, 'Precondition Required', `send If-Match with the ETag the ${noun} was read with, so that no other change is overwritten unseen`);
    return null;
  }
  const tag = given.trim();
  if (/^W\//.test(tag))
    throw new ManageError('stale', [`If-Match ${tag.slice(0, 40)}: a weak entity tag never matches an If-Match (RFC 9110 §13.1.1); send the ETag as read`]);
  if (!/^"\d{1,15}"$/.test(tag)) throw new ManageError('stale', [`If-Match ${tag.slice(0, 40)}: not an ETag of this ${noun}`]);
  return tag;
}
export const DEFAULT_PAGE = 50;

/** Who may call a route: the area of its scope, and whether it changes something. */
export interface AdminRouteConfig {
  readonly area: AdminNeed;
  readonly write: boolean;
  /** What a change must name the version of, in If-Match (428 without it). */
  readonly ifMatch?: 'client' | 'user';
  /** The answer carries the version as `ETag`. */
  readonly etag?: true;
  /** A 201 answer carries the new resource's address as `Location`. */
  readonly location?: true;
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
export function sendProblem(reply: FastifyReply, status: number, title: string, detail: string, extra: Record<string, unknown> = {}): FastifyReply {
  return reply
    .status(status)
    .header('Cache-Control', 'no-store')
    .type('application/problem+json')
    .send(JSON.stringify({ type: 'about:blank', title, status, detail, ...extra }));
}

export const ID = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' } as const;
export const USERNAME = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[^\\s/]+$' } as const;
export const PAGE = {
  offset: { type: 'integer', minimum: 0, maximum: 1_000_000, default: 0 },
  limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
} as const;
export const strings = (maxItems: number) => ({ type: 'array', maxItems, items: { type: 'string', minLength: 1, maxLength: 2048 } }) as const;
export const OBJECT = { type: 'object', additionalProperties: true } as const;
export const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 problem details',
  properties: { type: { type: 'string' }, title: { type: 'string' }, status: { type: 'integer' }, detail: { type: 'string' }, field: { type: 'string' } },
} as const;

export const body = (properties: Record<string, unknown>, required: readonly string[] = []) => ({
  type: 'object',
  additionalProperties: false,
  properties,
  required,
});
export const query = (properties: Record<string, unknown>) => ({ type: 'object', additionalProperties: false, properties });
export const params = (properties: Record<string, unknown>) => ({ type: 'object', additionalProperties: false, properties, required: Object.keys(properties) });
export const ok = (schema: unknown = OBJECT) => ({ 200: schema, default: PROBLEM });
export const noContent = { 204: { type: 'null', description: 'Done' }, default: PROBLEM };

type Route = Omit<RouteOptions, 'handler'> & { handler: (request: FastifyRequest, reply: FastifyReply, deps: ManageDeps) => Promise<unknown> };
/** Registers an admin route on `app`: its scope's area, whether it changes something, and what it must name the version of. */

export type AdminRoute = (
  options: Route & { operationId: string; area: AdminArea; write: boolean; ifMatch?: 'client' | 'user'; etag?: true; location?: true },
) => void;

/** The route registrar of a noun's plugin. */
export function adminRouter(app: FastifyInstance, deps: AppDeps): AdminRoute {
  return (options) => {
    const { operationId, area, write, ifMatch: versioned, etag, location, handler, ...rest } = options;
    app.route({
      ...rest,
      config: {
        admin: { area, write, ...(versioned ? { ifMatch: versioned } : {}), ...(etag ? { etag } : {}), ...(location ? { location } : {}) },
        operationId,
      } as never,
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
            if (hash === null)
              throw new OAuthError('temporarily_unavailable', 'the server is busy checking passwords; try again shortly', {
                status: 503,
                retryAfterSeconds: deps.passwords.retryAfterSeconds(),
              });
            return hash;
          },
        };
        reply.header('Cache-Control', 'no-store');
        return handler(request, reply, manage);
      },
    });
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The admin client calling (set once its token is checked). */
    adminClient?: string;
    /** The admin scopes its token holds (and the client still has). */
    adminScope?: readonly string[];
  }
}

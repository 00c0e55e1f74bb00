import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HOME_PATH } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import { StoreUnavailableError } from '../store/errors.ts';
import { isMessageKey, type Messages } from '../ui/i18n.ts';
import { errorPage, type Site } from '../ui/pages.ts';
import { pageUi } from './locale.ts';
import { bearerChallenge } from './bearer.ts';
import { BASIC_CHALLENGE } from './client-auth.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The operator's name and look, for pages rendered outside a route (errors). */
    site: Site;
  }
  interface FastifyContextConfig {
    /** The route serves a page to a person: errors render as HTML, not JSON. */
    page?: boolean;
  }
}

const FASTIFY_CLIENT_ERRORS: Readonly<Record<string, OAuthError>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: new OAuthError('invalid_request', 'the request body is too large', { status: 413 }),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: new OAuthError('invalid_request', 'the request body must be application/x-www-form-urlencoded'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: new OAuthError('invalid_request', 'the Content-Length does not match the body'),
  FST_ERR_CTP_EMPTY_TYPE: new OAuthError('invalid_request', 'the request body must be application/x-www-form-urlencoded'),
};

const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/**
 * How long a client is told to wait before trying again (RFC 9110 §10.2.3) when the database
 * is not available: about what a failover or a restart of PostgreSQL takes.
 */
export const RETRY_AFTER_SECONDS = 5;

/** Maps anything thrown to the OAuth error the client sees; unknown errors are server_error. */
export function toOAuthError(error: unknown): OAuthError {
  if (error instanceof OAuthError) return error;
  // RFC 6749 §4.1.2.1 defines temporarily_unavailable for the authorization endpoint only;
  // §5.2 has no such code for the token endpoint, but it is the one clients understand there
  // too, and its 503 says that the same request may succeed later.
  if (error instanceof StoreUnavailableError) {
    return new OAuthError('temporarily_unavailable', 'the service is temporarily unavailable; try again shortly', { cause: error });
  }
  const fastifyError = error as Partial<FastifyError> | null;
  const known = fastifyError?.code ? FASTIFY_CLIENT_ERRORS[fastifyError.code] : undefined;
  if (known) return known;
  if (fastifyError?.validation) return new OAuthError('invalid_request', fastifyError.message ?? 'the request is malformed');
  const status = fastifyError?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new OAuthError('invalid_request', 'the request is malformed', { status: status === 413 || status === 431 ? status : 400 });
  }
  return new OAuthError('server_error', 'the server could not complete the request', { cause: error });
}

/** Writes an OAuth error as RFC 6749 §5.2 JSON, or as a page on page routes. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: OAuthError): FastifyReply {
  // RFC 6749 §5.2: 401 with the scheme the client can use.
  if (error.code === 'invalid_client' && error.status === 401) reply.header('WWW-Authenticate', BASIC_CHALLENGE);
  // RFC 6750 §3: a protected resource names the error in its challenge, unless the route has
  // already set the bare challenge of a request without a token.
  if ((error.code === 'invalid_token' || error.code === 'insufficient_scope') && !reply.hasHeader('WWW-Authenticate')) {
    reply.header('WWW-Authenticate', bearerChallenge(error));
  }
  if (error.retryAfterSeconds !== undefined) reply.header('Retry-After', String(Math.max(1, Math.ceil(error.retryAfterSeconds))));
  else if (error.code === 'temporarily_unavailable') reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
  reply.header('Cache-Control', 'no-store');
  reply.status(error.status);
  if (request.routeOptions.config?.page) {
    // The menu leads back to the path alone: the refused request's values are not repeated in the page.
    const ui = pageUi(request.server.site, request, { here: request.url.split('?')[0]! });
    const [title, message, details] = inPlainWords(ui.t, error);
    return reply.type('text/html; charset=utf-8').send(errorPage(ui, title, message, { details }));
  }
  return reply.type('application/json; charset=utf-8').send(error.toJSON());
}

/**
 * The title and message a person reads for an error on a page ("invalid_request"
 * means nothing to them). Refusals (403) and limits (429) are written for people already and
 * are shown as they are; the others get a sentence saying what to do, and their protocol
 * description goes to the small print.
 */
function inPlainWords(t: Messages, error: OAuthError): [title: string, message: string, details: string] {
  const details = `${error.code}: ${error.description}`;
  if (error.status === 503) return [t.text('error.unavailable'), t.text('error.unavailableText'), details];
  if (error.status >= 500) return [t.text('error.server'), t.text('error.serverText'), details];
  if (error.status !== 429 && error.status !== 403) return [t.text('error.cannotComplete'), t.text('error.cannotCompleteText'), details];
  const title = t.text(error.status === 429 ? 'error.tooMany' : 'error.refused');
  // The refusal's own sentence in the page's language, with only the code in the small print.
  if (error.page && isMessageKey(error.page.key)) return [title, t.text(error.page.key, error.page.values), error.code];
  // Without one, its description is written for people, but in English: said as it
  // is on an English page; on another, a sentence of the page's language, the English below.
  if (t.locale === 'en')
    return [title, `${error.description.charAt(0).toUpperCase()}${error.description.slice(1)}${/[.!?]$/.test(error.description) ? '' : '.'}`, error.code];
  return [title, t.text(error.status === 429 ? 'error.tooManyText' : 'error.refusedText'), details];
}

/** A browser asking for a page (its Accept names HTML); API clients get JSON. */
function wantsHtml(request: FastifyRequest): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && /\btext\/html\b/.test(request.headers.accept ?? '');
}

/**
 * The one error handler: every failure becomes an OAuth error with its status; stack traces
 * and internal messages go to the log only.
 */
export function registerErrorHandling(app: FastifyInstance, site: Site): void {
  app.decorate('site', site);
  app.setErrorHandler((error, request, reply) => {
    const oauth = toOAuthError(error);
    // An outage fails every request until it ends: one line each, its cause without a stack.
    if (error instanceof StoreUnavailableError) request.log.warn(error.message);
    else if (oauth.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(request, reply, oauth);
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    // RFC 9110 §15.5.6: a path that exists under other methods is 405 with the methods it
    // takes in Allow (RFC 9126 §2.3 asks it of the PAR endpoint), not 404.
    const allowed = HTTP_METHODS.filter((method) => request.server.hasRoute({ method, url: path }));
    if (allowed.length > 0) {
      reply.header('Allow', allowed.join(', '));
      return sendError(
        request,
        reply,
        new OAuthError('invalid_request', `${request.method} is not allowed at ${path} (${allowed.join(', ')})`, { status: 405 }),
      );
    }
    if (wantsHtml(request)) {
      const ui = pageUi(site, request, { here: HOME_PATH });
      return reply
        .status(404)
        .header('Cache-Control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(errorPage(ui, ui.t.text('error.notFound'), ui.t.text('error.notFoundText', { path, site: site.name })));
    }
    return sendError(request, reply, new OAuthError('invalid_request', `no endpoint at ${request.method} ${path}`, { status: 404 }));
  });
}

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { resourceParams } from '../flows/resources.ts';
import type { Params } from '../flows/types.ts';

/** OAuth requests are small; anything larger is refused with 413 before it is parsed. */
export const FORM_BODY_LIMIT = 16 * 1024;

/** Parses `a=1&b=2&a=3` keeping repeats: a repeated name maps to an array. */
export function parseParams(raw: string): Record<string, string | string[]> {
  const result: Record<string, string | string[]> = Object.create(null);
  for (const [name, value] of new URLSearchParams(raw)) {
    const seen = result[name];
    if (seen === undefined) result[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else result[name] = [seen, value];
  }
  return result;
}

/**
 * Refuses parameters of which a name or a value holds a NUL character (U+0000, sent as
 * `%00`): no OAuth parameter means one, and PostgreSQL keeps no NUL in text, so a statement
 * that sent one to the store would fail, and the client's error would be answered 500
 * server_error (a client_id with one did so at the token endpoint, before any authentication).
 */
function checkNoNul(params: Record<string, string | string[]>): void {
  // for…in over the parser's own null-prototype object: no array of entries a request.
  for (const name in params) {
    const value = params[name]!;
    if (name.includes('\u0000')) throw new OAuthError('invalid_request', 'a parameter name holds a NUL character (%00), which none may');
    if (Array.isArray(value) ? value.some((one) => one.includes('\u0000')) : value.includes('\u0000'))
      throw new OAuthError('invalid_request', `parameter ${name} holds a NUL character (%00), which no parameter may`);
  }
}

/**
 * Only `application/x-www-form-urlencoded` bodies are accepted (RFC 6749 §3.2); every other
 * content type is refused by Fastify with 415, which the error handler turns into
 * `invalid_request`. Query strings are parsed the same way, so repeats are seen there too.
 * A form or a query with a NUL character is refused here, for every endpoint (token, PAR,
 * device authorization, revocation, introspection, the authorization endpoint, the pages).
 */
export function registerFormParsing(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    async (_request: FastifyRequest, body: string) => {
      const params = parseParams(body);
      checkNoNul(params);
      return params;
    },
  );
  // The query is parsed by the router (app.ts, parseParams), where a throw would escape
  // Fastify's error handling: it is checked as the request begins instead.
  app.addHook('onRequest', async (request) => checkNoNul(request.query as Record<string, string | string[]>));
}

/** Raw form values of a request (an empty object when there was no body). */
export function rawForm(request: FastifyRequest): RawParams {
  const body = request.body;
  return body !== null && typeof body === 'object' ? (body as RawParams) : {};
}

/**
 * The form parameters of a token-side request, each at most once (RFC 6749 §3.1: request
 * parameters MUST NOT be included more than once), empty ones treated as omitted.
 */
export function formParams(request: FastifyRequest): Params {
  if (request.body === undefined || request.body === null) {
    throw new OAuthError('invalid_request', 'the request body must be application/x-www-form-urlencoded');
  }
  const params: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(rawForm(request))) {
    // RFC 8707 §2: resource may be repeated; a repeated one is read with formResources.
    if (name === 'resource' && Array.isArray(value)) continue;
    if (Array.isArray(value)) throw new OAuthError('invalid_request', `parameter ${name} is repeated`);
    if (typeof value === 'string' && value !== '') params[name] = value;
  }
  return params;
}

/** Every `resource` value of a form (RFC 8707 §2: the parameter may be repeated). */
export function formResources(request: FastifyRequest): string[] {
  return resourceParams(rawForm(request)['resource']);
}

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
 * Only `application/x-www-form-urlencoded` bodies are accepted (RFC 6749 §3.2); every other
 * content type is refused by Fastify with 415, which the error handler turns into
 * `invalid_request`. Query strings are parsed the same way, so repeats are seen there too.
 */
export function registerFormParsing(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    done(null, parseParams(body as string));
  });
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

/**
 * The registration endpoint (RFC 7591 §3) and the client configuration endpoint (RFC 7592
 * §2): JSON in and out. The policy (TESSERA_REGISTRATION) decides whether they exist at all:
 * with `off` (the default) they answer 404 and discovery does not name them.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { NO_ADMIN } from '../flows/manage/authority.ts';
import type { ManageDeps } from '../flows/manage/deps.ts';
import { admitRegistration, deleteRegistration, register, registrationJson, registrationOwner, replaceRegistration } from '../flows/registration/register.ts';
import { REGISTRATION_PATH } from '../core/endpoints.ts';
import { forRequest, type AppDeps } from './deps.ts';

const JSON_BODY_LIMIT = 64 * 1024;

/** RFC 6750 §2.1: the bearer token of the Authorization header, or null when there is none. */
function bearer(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (header === undefined) return null;
  const match = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  if (!match) throw new OAuthError('invalid_token', 'the Authorization header must be Bearer <token>');
  return match[1]!;
}

/** The request's JSON object (RFC 7591 §3.1: "application/json"), or invalid_client_metadata. */
function jsonObject(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new OAuthError('invalid_client_metadata', 'the body must be a JSON object of client metadata (Content-Type: application/json)');
  return body as Record<string, unknown>;
}

function send(reply: FastifyReply, status: number, body: Record<string, unknown>): FastifyReply {
  // RFC 7591 §3.2.1: the response holds the client's credentials.
  return reply
    .status(status)
    .header('Cache-Control', 'no-store')
    .header('Pragma', 'no-cache')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(body));
}

export const registrationRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  if (deps.config.registration.policy === 'off') return;

  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (_request, text, done) => {
    // RFC 7592 §2.3's DELETE has no body, yet some libraries send it with this Content-Type:
    // no body is no metadata, which a POST or PUT then refuses as invalid_client_metadata.
    if (text === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(new OAuthError('invalid_client_metadata', 'the body is not JSON'), undefined);
    }
  });

  const manageDeps = (request: FastifyRequest): ManageDeps => ({
    ...forRequest(deps, request),
    // An app registering itself holds no admin scope (flows/manage/authority.ts).
    caller: NO_ADMIN,
    tellApps: async (sessions) => (await sendLogoutTokens(deps, sessions, request.log)).clients,
  });

  app.post(REGISTRATION_PATH, async (request, reply) => {
    const d = manageDeps(request);
    const admitted = await admitRegistration(d, bearer(request), request.ip);
    try {
      const registered = await register(d, jsonObject(request), admitted.policy);
      return send(reply.header('Location', registrationJson(d, registered)['registration_client_uri'] as string), 201, registrationJson(d, registered));
    } catch (error) {
      // A refused registration does not use up the initial access token.
      await admitted.refund();
      throw error;
    }
  });

  const clientId = (request: FastifyRequest) => (request.params as { client_id: string }).client_id;
  const configuration = `${REGISTRATION_PATH}/:client_id`;
  app.get(configuration, async (request, reply) => {
    const d = manageDeps(request);
    const client = await registrationOwner(d, clientId(request), bearer(request));
    return send(reply, 200, registrationJson(d, { client }));
  });
  app.put(configuration, async (request, reply) => {
    const d = manageDeps(request);
    const token = bearer(request);
    const client = await registrationOwner(d, clientId(request), token);
    // The rules of the policy in force now apply to the replacement as to a registration.
    const replaced = await replaceRegistration(d, client, token!, jsonObject(request), deps.config.registration.policy === 'open' ? 'open' : 'token');
    return send(reply, 200, registrationJson(d, replaced));
  });
  app.delete(configuration, async (request, reply) => {
    const d = manageDeps(request);
    const client = await registrationOwner(d, clientId(request), bearer(request));
    await deleteRegistration(d, client);
    // RFC 7592 §2.3: "the server MUST respond with an HTTP 204 No Content message".
    return reply.status(204).header('Cache-Control', 'no-store').send();
  });
};

/** The admin API's initial access tokens for dynamic registration (RFC 7591 §3, `tessera registration-token …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import {
  createInitialAccessToken,
  initialAccessTokenJson,
  listInitialAccessTokens,
  MAX_INITIAL_TOKEN_TTL,
  MAX_INITIAL_TOKEN_USES,
  removeInitialAccessToken,
  type InitialTokenInput,
} from '../../flows/manage/registration-tokens.ts';
import { listOf, NEW_REGISTRATION_TOKEN, REGISTRATION_TOKEN } from './answers.ts';
import { body, ID, noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const registrationTokenRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/registration-tokens`,
    operationId: 'createRegistrationToken',
    area: 'clients',
    write: true,
    schema: {
      summary: 'An initial access token that lets its holder register clients (TESSERA_REGISTRATION=token); the token is in this answer only',
      body: body({
        ttl_seconds: { type: 'integer', minimum: 60, maximum: MAX_INITIAL_TOKEN_TTL },
        max_uses: { type: 'integer', minimum: 1, maximum: MAX_INITIAL_TOKEN_USES },
      }),
      response: { 201: NEW_REGISTRATION_TOKEN, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { token, record } = await createInitialAccessToken(d, request.body as InitialTokenInput);
      reply.status(201);
      return { ...initialAccessTokenJson(record), token };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/registration-tokens`,
    operationId: 'listRegistrationTokens',
    area: 'clients',
    write: false,
    schema: {
      summary: 'The initial access tokens not expired, and how often each was used (never the token)',
      response: ok(listOf('registration_tokens', REGISTRATION_TOKEN)),
    },
    handler: async (_request, _reply, d) => ({ registration_tokens: (await listInitialAccessTokens(d)).map(initialAccessTokenJson) }),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/registration-tokens/:id`,
    operationId: 'removeRegistrationToken',
    area: 'clients',
    write: true,
    schema: { summary: 'Withdraw an initial access token', params: params({ id: ID }), response: noContent },
    handler: async (request, reply, d) => {
      await removeInitialAccessToken(d, (request.params as { id: string }).id);
      return reply.status(204).send();
    },
  });
};

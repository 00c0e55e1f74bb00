/**
 * The admin API's SCIM tokens (`tessera scim token …`, docs/scim.md), from the one table of
 * their fields (flows/manage/fields/scim-tokens.ts): the token in the answer that makes it only.
 * Making one hands out a way to create and disable people: the `admin:users` scope's.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { SCIM_TOKEN_ALWAYS, SCIM_TOKEN_FIELDS } from '../../flows/manage/fields/scim-tokens.ts';
import { addScimToken, getScimToken, listScimTokens, removeScimToken, scimTokenJson, type ScimTokenInput } from '../../flows/manage/scim-tokens.ts';
import { listOf } from './answers.ts';
import { ID, noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

const TOKEN = { type: 'string', description: 'The token (scim_…), for Authorization: Bearer at <issuer>/scim/v2: in this answer only' } as const;

export const scimTokenRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const SCIM_TOKEN = responseSchema(SCIM_TOKEN_FIELDS, SCIM_TOKEN_ALWAYS);
  const SCIM_TOKEN_WITH_TOKEN = responseSchema(SCIM_TOKEN_FIELDS, [...SCIM_TOKEN_ALWAYS, 'token'], { token: TOKEN });
  const id = params({ id: ID });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;

  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/scim-tokens`,
    operationId: 'listScimTokens',
    area: 'users',
    write: false,
    schema: { summary: 'The SCIM tokens (never the tokens themselves)', response: ok(listOf('scim_tokens', SCIM_TOKEN)) },
    handler: async (_request, _reply, d) => ({ scim_tokens: (await listScimTokens(d)).map(scimTokenJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/scim-tokens`,
    operationId: 'createScimToken',
    area: 'users',
    write: true,
    location: true,
    schema: {
      summary: 'Make a SCIM token for a provisioning system; the token is in this answer only',
      body: { ...requestSchema(SCIM_TOKEN_FIELDS, 'create'), examples: [{ name: 'Entra ID' }] },
      response: { 201: SCIM_TOKEN_WITH_TOKEN, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const { record, token } = await addScimToken(d, request.body as ScimTokenInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/scim-tokens/${encodeURIComponent(record.id)}`);
      return { ...scimTokenJson(record), token };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/scim-tokens/:id`,
    operationId: 'getScimToken',
    area: 'users',
    write: false,
    schema: { summary: 'A SCIM token (never the token itself)', params: id, response: ok(SCIM_TOKEN) },
    handler: async (request, _reply, d) => scimTokenJson(await getScimToken(d, idOf(request))),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/scim-tokens/:id`,
    operationId: 'removeScimToken',
    area: 'users',
    write: true,
    schema: { summary: 'Withdraw a SCIM token: the next request made with it is refused', params: id, response: noContent },
    handler: async (request, reply, d) => {
      await removeScimToken(d, idOf(request));
      return reply.status(204).send();
    },
  });
};

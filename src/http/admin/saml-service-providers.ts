/**
 * The admin API's SAML service providers (`tessera saml sp …`, docs/saml.md), their
 * registrations from the one table of their fields
 * (flows/manage/fields/saml-service-providers.ts). `metadata` is taken, never answered: what
 * it held is in the fields it filled.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { SAML_SP_ALWAYS, SAML_SP_FIELDS } from '../../flows/manage/fields/saml-service-providers.ts';
import { addSamlSp, getSamlSp, listSamlSps, removeSamlSp, samlSpJson, updateSamlSp, type SamlSpInput } from '../../flows/manage/saml-service-providers.ts';
import { listOf } from './answers.ts';
import { ID, noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const samlServiceProviderRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const SP = responseSchema(SAML_SP_FIELDS, SAML_SP_ALWAYS);
  const id = params({ id: ID });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;
  const base = `${ADMIN_PREFIX}/saml/service-providers`;

  route({
    method: 'GET',
    url: base,
    operationId: 'listSamlServiceProviders',
    area: 'saml',
    write: false,
    schema: { summary: 'The SAML service providers', response: ok(listOf('service_providers', SP)) },
    handler: async (_request, _reply, d) => ({ service_providers: (await listSamlSps(d)).map(samlSpJson) }),
  });
  route({
    method: 'POST',
    url: base,
    operationId: 'createSamlServiceProvider',
    area: 'saml',
    write: true,
    location: true,
    schema: {
      summary: 'Register a SAML service provider: its entity ID and AssertionConsumerService URLs, or its metadata',
      body: {
        ...requestSchema(SAML_SP_FIELDS, 'create'),
        examples: [{ entity_id: 'https://wiki.example/saml', acs_urls: ['https://wiki.example/saml/acs'], attributes: { mail: 'email' } }],
      },
      response: { 201: SP, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const sp = await addSamlSp(d, request.body as SamlSpInput);
      reply.status(201).header('Location', `${base}/${encodeURIComponent(sp.id)}`);
      return samlSpJson(sp);
    },
  });
  route({
    method: 'GET',
    url: `${base}/:id`,
    operationId: 'getSamlServiceProvider',
    area: 'saml',
    write: false,
    schema: { summary: 'A SAML service provider, by its id or its entity ID', params: id, response: ok(SP) },
    handler: async (request, _reply, d) => samlSpJson(await getSamlSp(d, idOf(request))),
  });
  route({
    method: 'PATCH',
    url: `${base}/:id`,
    operationId: 'updateSamlServiceProvider',
    area: 'saml',
    write: true,
    schema: {
      summary: 'Change a SAML service provider: the fields given, the rest as they are (never its entity ID)',
      params: id,
      body: requestSchema(SAML_SP_FIELDS, 'update'),
      response: ok(SP),
    },
    handler: async (request, _reply, d) => samlSpJson(await updateSamlSp(d, idOf(request), request.body as SamlSpInput)),
  });
  route({
    method: 'DELETE',
    url: `${base}/:id`,
    operationId: 'removeSamlServiceProvider',
    area: 'saml',
    write: true,
    schema: { summary: 'Remove a SAML service provider: it is sent no more assertions', params: id, response: noContent },
    handler: async (request, reply, d) => {
      await removeSamlSp(d, idOf(request));
      return reply.status(204).send();
    },
  });
};

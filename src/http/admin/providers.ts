/** The admin API's upstream identity providers (`tessera provider …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import type { ManageDeps } from '../../flows/manage/deps.ts';
import { addProvider, getProvider, listProviders, providerJson, removeProvider, updateProvider, type ProviderInput } from '../../flows/manage/providers.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { PROVIDER_ALWAYS, PROVIDER_FIELDS } from '../../flows/manage/fields/providers.ts';
import { noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const providerRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  /** A provider in and out, from the one table of its fields (flows/manage/fields/providers.ts): one schema for every kind, the fields of another kind refused by the operation. */
  const PROVIDER = responseSchema(PROVIDER_FIELDS, PROVIDER_ALWAYS);
  const providerId = params({ id: { type: 'string', minLength: 1, maxLength: 40, pattern: '^[a-z0-9-]+$' } });
  const providerDeps = (d: ManageDeps) => ({ ...d, secrets: deps.secrets });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/providers`,
    operationId: 'listProviders',
    area: 'providers',
    write: false,
    schema: {
      summary: 'The upstream identity providers, in the order of their sign-in buttons (never their secrets)',
      response: ok({ type: 'object', properties: { providers: { type: 'array', items: PROVIDER } }, required: ['providers'] }),
    },
    handler: async (_request, _reply, d) => ({ providers: (await listProviders(d)).map((provider) => providerJson(provider, d.config.issuer)) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/providers`,
    operationId: 'createProvider',
    area: 'providers',
    write: true,
    location: true,
    schema: {
      summary: 'Add an OpenID provider, GitHub or an LDAP directory to sign in through; the answer has the redirect URI to register upstream',
      body: requestSchema(PROVIDER_FIELDS, 'create'),
      response: { 201: PROVIDER, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const provider = await addProvider(providerDeps(d), request.body as ProviderInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/providers/${provider.id}`);
      return providerJson(provider, d.config.issuer);
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/providers/:id`,
    operationId: 'getProvider',
    area: 'providers',
    write: false,
    schema: { summary: "A provider's settings (never its secret)", params: providerId, response: ok(PROVIDER) },
    handler: async (request, _reply, d) => providerJson(await getProvider(d, (request.params as { id: string }).id), d.config.issuer),
  });
  route({
    method: 'PATCH',
    url: `${ADMIN_PREFIX}/providers/:id`,
    operationId: 'updateProvider',
    area: 'providers',
    write: true,
    schema: {
      summary: 'Change a provider: the fields given, the rest as they are; a secret given replaces the stored one',
      params: providerId,
      body: requestSchema(PROVIDER_FIELDS, 'update'),
      response: ok(PROVIDER),
    },
    handler: async (request, _reply, d) =>
      providerJson(await updateProvider(providerDeps(d), (request.params as { id: string }).id, request.body as ProviderInput), d.config.issuer),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/providers/:id`,
    operationId: 'removeProvider',
    area: 'providers',
    write: true,
    schema: { summary: 'Remove a provider: nobody signs in through it any more; the users it created stay', params: providerId, response: noContent },
    handler: async (request, reply, d) => {
      await removeProvider(providerDeps(d), (request.params as { id: string }).id);
      return reply.status(204).send();
    },
  });
};

/** The admin API's upstream identity providers (`tessera provider …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import type { ManageDeps } from '../../flows/manage/deps.ts';
import { addProvider, getProvider, listProviders, providerJson, removeProvider, updateProvider, type ProviderInput } from '../../flows/manage/providers.ts';
import { body, noContent, ok, OBJECT, params, PROBLEM, strings } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const providerRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
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
    method: 'POST', url: `${ADMIN_PREFIX}/providers`, operationId: 'createProvider', area: 'providers', write: true, location: true,
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

};

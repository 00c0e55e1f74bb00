/**
 * The admin API's trusted issuers (`tessera trust …`, docs/agents.md): the identity providers
 * whose ID-JAGs this server redeems, from the one table of their fields
 * (flows/manage/fields/trusted-issuers.ts). Under the clients' scopes: which assertions a
 * client may redeem is part of what clients may do. An issuer is named in the path by its
 * identifier, percent-encoded.
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { TRUSTED_ISSUER_ALWAYS, TRUSTED_ISSUER_FIELDS } from '../../flows/manage/fields/trusted-issuers.ts';
import {
  addTrustedIssuer,
  getTrustedIssuer,
  listTrustedIssuers,
  removeTrustedIssuer,
  trustedIssuerJson,
  type TrustedIssuerInput,
} from '../../flows/manage/trusted-issuers.ts';
import { listOf } from './answers.ts';
import { adminRouter, noContent, ok, params, PROBLEM } from './kit.ts';
import type { AppDeps } from '../deps.ts';

const ISSUER = { type: 'string', minLength: 1, maxLength: 2048, description: 'The issuer identifier, percent-encoded' } as const;

export const trustedIssuerRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const TRUSTED_ISSUER = responseSchema(TRUSTED_ISSUER_FIELDS, TRUSTED_ISSUER_ALWAYS);
  const issuer = params({ issuer: ISSUER });
  const issuerOf = (request: { params: unknown }) => (request.params as { issuer: string }).issuer;

  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/trusted-issuers`,
    operationId: 'listTrustedIssuers',
    area: 'clients',
    write: false,
    schema: { summary: 'The identity providers whose ID-JAGs this server redeems', response: ok(listOf('trusted_issuers', TRUSTED_ISSUER)) },
    handler: async (_request, _reply, d) => ({ trusted_issuers: (await listTrustedIssuers(d)).map(trustedIssuerJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/trusted-issuers`,
    operationId: 'createTrustedIssuer',
    area: 'clients',
    write: true,
    location: true,
    schema: {
      summary: "Trust an identity provider's ID-JAGs (draft-ietf-oauth-identity-assertion-authz-grant), signed by the keys at its jwks_uri or given as jwks",
      body: {
        ...requestSchema(TRUSTED_ISSUER_FIELDS, 'create'),
        examples: [{ issuer: 'https://idp.example.com', jwks_uri: 'https://idp.example.com/.well-known/jwks.json' }],
      },
      response: { 201: TRUSTED_ISSUER, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const added = await addTrustedIssuer(d, request.body as TrustedIssuerInput);
      reply.status(201).header('Location', `${ADMIN_PREFIX}/trusted-issuers/${encodeURIComponent(added.issuer)}`);
      return trustedIssuerJson(added);
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/trusted-issuers/:issuer`,
    operationId: 'getTrustedIssuer',
    area: 'clients',
    write: false,
    schema: { summary: 'A trusted issuer', params: issuer, response: ok(TRUSTED_ISSUER) },
    handler: async (request, _reply, d) => trustedIssuerJson(await getTrustedIssuer(d, issuerOf(request))),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/trusted-issuers/:issuer`,
    operationId: 'removeTrustedIssuer',
    area: 'clients',
    write: true,
    schema: { summary: 'Stop trusting an issuer: its ID-JAGs are refused, and the tokens issued from them end', params: issuer, response: noContent },
    handler: async (request, reply, d) => {
      await removeTrustedIssuer(d, issuerOf(request));
      return reply.status(204).send();
    },
  });
};

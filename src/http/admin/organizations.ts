/**
 * The admin API's organizations and their members (`tessera org …`, docs/organizations.md),
 * from the tables of their fields (flows/manage/fields/organizations.ts).
 */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { ORGANIZATION_ALWAYS, ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_ALWAYS, ORGANIZATION_MEMBER_FIELDS } from '../../flows/manage/fields/organizations.ts';
import {
  addOrganization,
  getOrganization,
  listOrganizationMembers,
  listOrganizations,
  organizationJson,
  removeOrganization,
  removeOrganizationMember,
  setOrganizationMember,
  updateOrganization,
  type MemberInput,
  type OrganizationInput,
} from '../../flows/manage/organizations.ts';
import type { AppDeps } from '../deps.ts';
import { listOf } from './answers.ts';
import { adminRouter, ID, noContent, ok, params, PROBLEM, USERNAME } from './kit.ts';

export const organizationRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  const ORGANIZATION = responseSchema(ORGANIZATION_FIELDS, ORGANIZATION_ALWAYS);
  const MEMBER = responseSchema(ORGANIZATION_MEMBER_FIELDS, ORGANIZATION_MEMBER_ALWAYS);
  const id = params({ id: ID });
  const member = params({ id: ID, username: USERNAME });
  const idOf = (request: { params: unknown }) => (request.params as { id: string }).id;
  const usernameOf = (request: { params: unknown }) => (request.params as { username: string }).username;
  const base = `${ADMIN_PREFIX}/organizations`;

  route({
    method: 'GET',
    url: base,
    operationId: 'listOrganizations',
    area: 'orgs',
    write: false,
    schema: { summary: 'The organizations', response: ok(listOf('organizations', ORGANIZATION)) },
    handler: async (_request, _reply, d) => ({ organizations: (await listOrganizations(d)).map(organizationJson) }),
  });
  route({
    method: 'POST',
    url: base,
    operationId: 'createOrganization',
    area: 'orgs',
    write: true,
    location: true,
    schema: {
      summary: 'Add an organization: its name, and its e-mail domain, verified, with the provider its people sign in through',
      body: { ...requestSchema(ORGANIZATION_FIELDS, 'create'), examples: [{ name: 'Acme', domain: 'acme.example', domain_verified: true }] },
      response: { 201: ORGANIZATION, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const organization = await addOrganization(d, request.body as OrganizationInput);
      reply.status(201).header('Location', `${base}/${encodeURIComponent(organization.id)}`);
      return organizationJson(organization);
    },
  });
  route({
    method: 'GET',
    url: `${base}/:id`,
    operationId: 'getOrganization',
    area: 'orgs',
    write: false,
    schema: { summary: 'An organization, by its id or its name', params: id, response: ok(ORGANIZATION) },
    handler: async (request, _reply, d) => organizationJson(await getOrganization(d, idOf(request))),
  });
  route({
    method: 'PATCH',
    url: `${base}/:id`,
    operationId: 'updateOrganization',
    area: 'orgs',
    write: true,
    schema: {
      summary: 'Change an organization: the fields given, the rest as they are (a changed domain is verified again)',
      params: id,
      body: requestSchema(ORGANIZATION_FIELDS, 'update'),
      response: ok(ORGANIZATION),
    },
    handler: async (request, _reply, d) => organizationJson(await updateOrganization(d, idOf(request), request.body as OrganizationInput)),
  });
  route({
    method: 'DELETE',
    url: `${base}/:id`,
    operationId: 'removeOrganization',
    area: 'orgs',
    write: true,
    schema: { summary: 'Remove an organization and its memberships', params: id, response: noContent },
    handler: async (request, reply, d) => {
      await removeOrganization(d, idOf(request));
      return reply.status(204).send();
    },
  });
  route({
    method: 'GET',
    url: `${base}/:id/members`,
    operationId: 'listOrganizationMembers',
    area: 'orgs',
    write: false,
    schema: { summary: "An organization's members and their roles", params: id, response: ok(listOf('members', MEMBER)) },
    handler: async (request, _reply, d) => ({ members: await listOrganizationMembers(d, idOf(request)) }),
  });
  route({
    method: 'PUT',
    url: `${base}/:id/members/:username`,
    operationId: 'setOrganizationMember',
    area: 'orgs',
    write: true,
    schema: {
      summary: 'Make someone a member with a role (member unless given), or give a member another role',
      params: member,
      body: requestSchema(
        ORGANIZATION_MEMBER_FIELDS.filter((field) => field.name !== 'username'),
        'create',
      ),
      response: ok(MEMBER),
    },
    handler: async (request, _reply, d) => setOrganizationMember(d, idOf(request), { ...((request.body ?? {}) as MemberInput), username: usernameOf(request) }),
  });
  route({
    method: 'DELETE',
    url: `${base}/:id/members/:username`,
    operationId: 'removeOrganizationMember',
    area: 'orgs',
    write: true,
    schema: { summary: 'End a membership', params: member, response: noContent },
    handler: async (request, reply, d) => {
      await removeOrganizationMember(d, idOf(request), usernameOf(request));
      return reply.status(204).send();
    },
  });
};

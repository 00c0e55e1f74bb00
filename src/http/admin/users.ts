/** The admin API's users (`tessera user …`), their sessions and approvals. */
import { INVITATION_TTL_RANGE, inviteUser } from '../../flows/manage/invitations.ts';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { USER_ALWAYS, USER_FIELDS } from '../../flows/manage/fields/users.ts';
import { requestSchema, responseSchema } from '../../flows/manage/fields/field.ts';
import { grantJson, listUserGrants, revokeGrant } from '../../flows/manage/grants.ts';
import {
  createUser,
  endUserSessions,
  listUsers,
  listUserSessions,
  removeUser,
  resetLink,
  resetUserSecondFactor,
  setDisabled,
  type UserChanges,
  setPassword,
  updateUser,
  userDetails,
  userEtag,
  userDetailsJson,
  userJson,
} from '../../flows/manage/users.ts';
import { GRANT, listOf, object, SESSION } from './answers.ts';
import { body, ID, ifMatch, noContent, ok, OBJECT, PAGE, params, PROBLEM, query, USERNAME } from './kit.ts';

const S = { type: 'string' } as const;
const B = { type: 'boolean' } as const;
const T = { type: 'string', format: 'date-time' } as const;
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const userRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  /** A user in and out, from the one table of their fields (flows/manage/fields/users.ts). */
  const PASSWORD = { type: 'string', minLength: 1, maxLength: 1024, writeOnly: true, description: 'Their first password' };
  const created = requestSchema(USER_FIELDS, 'create', { password: PASSWORD });
  const USER_CREATE = { ...created, required: [...(created['required'] as string[]), 'password'] };
  const USER_UPDATE = requestSchema(USER_FIELDS, 'update');
  const USER = responseSchema(USER_FIELDS, USER_ALWAYS);
  const USER_DETAILS = responseSchema(USER_FIELDS, USER_ALWAYS, {
    grants: { type: 'integer', description: 'Approvals not revoked' },
    last_sign_in: { type: ['object', 'null'], additionalProperties: true, description: 'When and from where they last signed in' },
    passkeys: { type: 'array', items: OBJECT },
    one_time_codes: { type: 'boolean' },
    recovery_codes_left: { type: 'integer' },
    linked_identities: { type: 'array', items: OBJECT, description: 'The upstream identities they sign in through' },
  });

  // Users
  const username = params({ username: USERNAME });
  const named = (request: FastifyRequest) => (request.params as { username: string }).username;
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/users`,
    operationId: 'listUsers',
    area: 'users',
    write: false,
    schema: {
      summary: 'List or search users (q: in the username, name or e-mail address)',
      querystring: query({ ...PAGE, q: { type: 'string', minLength: 1, maxLength: 200 } }),
      response: ok({
        type: 'object',
        properties: { users: { type: 'array', items: USER }, next_offset: { type: ['integer', 'null'] } },
        required: ['users', 'next_offset'],
      }),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { offset: number; limit: number; q?: string };
      const page = await listUsers(d, { offset: q.offset, limit: q.limit + 1, ...(q.q === undefined ? {} : { q: q.q }) });
      return { users: page.slice(0, q.limit).map(userJson), next_offset: page.length > q.limit ? q.offset + q.limit : null };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/users`,
    operationId: 'createUser',
    area: 'users',
    write: true,
    location: true,
    schema: {
      summary: 'Create a user',
      body: USER_CREATE,
      response: { 201: USER, default: PROBLEM },
    },
    handler: async (request, reply, d) => {
      const user = await createUser(d, request.body as { username: string; password: string });
      reply.status(201).header('Location', `${ADMIN_PREFIX}/users/${encodeURIComponent(user.username)}`);
      return userJson(user);
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/users/:username`,
    operationId: 'getUser',
    area: 'users',
    write: false,
    etag: true,
    schema: {
      summary: 'A user, their approvals, last sign-in, passkeys and one-time codes, with their version as ETag',
      params: username,
      response: ok(USER_DETAILS),
    },
    handler: async (request, reply, d) => {
      const details = await userDetails(d, named(request));
      reply.header('ETag', userEtag(details.user));
      return userDetailsJson(details);
    },
  });
  route({
    method: 'PATCH',
    url: `${ADMIN_PREFIX}/users/:username`,
    operationId: 'updateUser',
    area: 'users',
    write: true,
    ifMatch: 'user',
    etag: true,
    schema: {
      summary:
        "Change a user's standard claims (null clears one) or operator console role (a role needs a token holding every scope it allows); If-Match is required",
      params: username,
      body: USER_UPDATE,
      response: ok(USER),
    },
    handler: async (request, reply, d) => {
      const version = ifMatch(request, reply, 'user');
      if (version === null) return reply;
      const user = await updateUser(d, named(request), request.body as UserChanges, version);
      reply.header('ETag', userEtag(user));
      return userJson(user);
    },
  });
  for (const [action, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    route({
      method: 'POST',
      url: `${ADMIN_PREFIX}/users/:username/${action}`,
      operationId: `${action}User`,
      area: 'users',
      write: true,
      schema: {
        summary: disabled ? 'Disable a user: sessions end and tokens stop working at once' : 'Enable a disabled user',
        params: username,
        response: ok(
          object({
            username: S,
            disabled: B,
            changed: { type: 'boolean', description: 'False when they already were' },
            apps_told: { type: 'integer', description: 'Apps sent a logout token for the sessions that ended' },
          }),
        ),
      },
      handler: async (request, _reply, d) => {
        const told = await setDisabled(d, named(request), disabled);
        return { username: named(request), disabled, changed: told !== null, apps_told: told ?? 0 };
      },
    });
  }
  route({
    method: 'PUT',
    url: `${ADMIN_PREFIX}/users/:username/password`,
    operationId: 'setUserPassword',
    area: 'users',
    write: true,
    schema: {
      summary: "Set a user's password; their sessions end",
      params: username,
      body: body({ password: { type: 'string', minLength: 1, maxLength: 1024 } }, ['password']),
      response: noContent,
    },
    handler: async (request, reply, d) => {
      await setPassword(d, named(request), (request.body as { password: string }).password);
      return reply.status(204).send();
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/users/:username/reset-link`,
    operationId: 'createResetLink',
    area: 'users',
    write: true,
    schema: {
      summary: 'A single-use link where the user sets a new password',
      params: username,
      body: body({ ttl_seconds: { type: 'integer', minimum: 60, maximum: 30 * 86400 } }),
      response: ok(object({ url: { type: 'string', description: 'The link: in this answer only' }, expires_at: T })),
    },
    handler: async (request, _reply, d) => {
      const link = await resetLink(d, named(request), (request.body as { ttl_seconds?: number } | undefined)?.ttl_seconds);
      return { url: link.url, expires_at: new Date(link.expiresAt).toISOString() };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/invitations`,
    operationId: 'inviteUser',
    area: 'users',
    write: true,
    schema: {
      summary: 'Invite someone by e-mail: a single-use link where they make an account with that address (mailed when a mail server is set)',
      body: body(
        {
          email: { type: 'string', maxLength: 320 },
          role: { type: 'string', enum: ['admin', 'support', 'viewer', 'none'] },
          client_id: { type: 'string', maxLength: 256, description: 'The app that invites them: they land there once their account is made' },
          organization: {
            type: 'string',
            maxLength: 200,
            description: 'An organization (its id or name) they become a member of (with admin:orgs too)',
          },
          organization_role: { type: 'string', enum: ['owner', 'admin', 'member'], description: 'Their role in the organization (member unless given)' },
          ttl_seconds: { type: 'integer', minimum: INVITATION_TTL_RANGE.min, maximum: INVITATION_TTL_RANGE.max },
        },
        ['email'],
      ),
      response: ok(object({ url: { type: 'string', description: 'The link: in this answer only' }, email: { type: 'string' }, expires_at: T, mailed: B })),
    },
    handler: async (request, _reply, d) => {
      const given = request.body as {
        email: string;
        role?: string;
        client_id?: string;
        organization?: string;
        organization_role?: string;
        ttl_seconds?: number;
      };
      const invitation = await inviteUser(d, {
        email: given.email,
        role: given.role ?? null,
        clientId: given.client_id ?? null,
        organization: given.organization ?? null,
        organizationRole: given.organization_role ?? null,
        ...(given.ttl_seconds === undefined ? {} : { ttlSeconds: given.ttl_seconds }),
      });
      return { url: invitation.url, email: invitation.email, expires_at: new Date(invitation.expiresAt).toISOString(), mailed: invitation.mailed };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/users/:username/reset-second-factor`,
    operationId: 'resetSecondFactor',
    area: 'users',
    write: true,
    schema: {
      summary: "Remove a user's passkeys, one-time codes and recovery codes",
      params: username,
      response: ok(object({ passkeys_removed: { type: 'integer' }, totp_removed: B })),
    },
    handler: async (request, _reply, d) => {
      const reset = await resetUserSecondFactor(d, named(request));
      return { passkeys_removed: reset.passkeys, totp_removed: reset.totp };
    },
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/users/:username`,
    operationId: 'removeUser',
    area: 'users',
    write: true,
    schema: { summary: 'Remove a user and everything issued to them', params: username, response: noContent },
    handler: async (request, reply, d) => {
      await removeUser(d, named(request));
      return reply.status(204).send();
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/users/:username/sessions`,
    operationId: 'listUserSessions',
    area: 'users',
    write: false,
    schema: { summary: "A user's live browser sessions", params: username, response: ok(listOf('sessions', SESSION)) },
    handler: async (request, _reply, d) => ({
      sessions: (await listUserSessions(d, named(request))).map((session) => ({
        sid: session.sid,
        created_at: new Date(session.createdAt).toISOString(),
        auth_time: new Date(session.authTime).toISOString(),
        expires_at: new Date(session.expiresAt).toISOString(),
        amr: session.amr ?? ['pwd'],
      })),
    }),
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/users/:username/sessions`,
    operationId: 'endUserSessions',
    area: 'users',
    write: true,
    schema: {
      summary: 'Sign a user out everywhere',
      params: username,
      response: ok(object({ sessions_ended: { type: 'integer' }, apps_told: { type: 'integer' } })),
    },
    handler: async (request, _reply, d) => {
      const ended = await endUserSessions(d, named(request));
      return { sessions_ended: ended.sessions, apps_told: ended.told };
    },
  });
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/users/:username/grants`,
    operationId: 'listUserGrants',
    area: 'users',
    write: false,
    schema: { summary: 'What a user approved and has not revoked', params: username, response: ok(listOf('grants', GRANT)) },
    handler: async (request, _reply, d) => {
      const now = d.clock.now();
      return { grants: (await listUserGrants(d, named(request))).map((entry) => grantJson(entry, now)) };
    },
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/grants/:grant_id`,
    operationId: 'revokeGrant',
    area: 'users',
    write: true,
    schema: {
      summary: 'Revoke a grant: its access and refresh tokens stop working',
      params: params({ grant_id: ID }),
      response: ok(object({ revoked: { type: 'boolean', description: 'False when it was revoked already' } })),
    },
    handler: async (request, _reply, d) => ({ revoked: await revokeGrant(d, (request.params as { grant_id: string }).grant_id) }),
  });
};

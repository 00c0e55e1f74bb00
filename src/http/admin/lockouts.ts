/** The admin API's lockouts: the guessing limits' counters (`tessera user unlock`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { clearLockouts, listLockouts, lockoutJson } from '../../flows/manage/lockouts.ts';
import { listOf, LOCKOUT } from './answers.ts';
import { ok, PAGE, query } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const lockoutRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/lockouts`,
    operationId: 'listLockouts',
    area: 'users',
    write: false,
    schema: {
      summary: "The guessing limits' open counters: who is locked out, or on the way to it",
      querystring: query({
        username: { type: 'string', minLength: 1, maxLength: 256 },
        ip: { type: 'string', minLength: 1, maxLength: 64 },
        locked: { type: 'boolean' },
        limit: PAGE.limit,
      }),
      response: ok(listOf('lockouts', LOCKOUT)),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { username?: string; ip?: string; locked?: boolean; limit: number };
      const found = await listLockouts(d, {
        limit: q.limit,
        ...(q.username === undefined ? {} : { username: q.username }),
        ...(q.ip === undefined ? {} : { ip: q.ip }),
        ...(q.locked ? { lockedOnly: true } : {}),
      });
      return { lockouts: found.map(lockoutJson) };
    },
  });
  route({
    method: 'DELETE',
    url: `${ADMIN_PREFIX}/lockouts`,
    operationId: 'clearLockouts',
    area: 'users',
    write: true,
    schema: {
      summary: 'Lift the lockouts of a user, an address, or one counter',
      querystring: query({
        username: { type: 'string', minLength: 1, maxLength: 256 },
        ip: { type: 'string', minLength: 1, maxLength: 64 },
        key: { type: 'string', minLength: 1, maxLength: 600 },
      }),
      response: ok(listOf('cleared', LOCKOUT)),
    },
    handler: async (request, _reply, d) => ({
      cleared: (await clearLockouts(d, request.query as { username?: string; ip?: string; key?: string })).map(lockoutJson),
    }),
  });
};

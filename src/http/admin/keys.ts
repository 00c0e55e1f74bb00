/** The admin API's signing keys (`tessera keys …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { keyJson, listKeys, rotateKeys } from '../../flows/manage/keys.ts';
import { KEY, listOf, ROTATED_KEY } from './answers.ts';
import { ok } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const keyRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/keys`,
    operationId: 'listKeys',
    area: 'keys',
    write: false,
    schema: { summary: 'The published signing keys and their state (public facts only), oldest first', response: ok(listOf('keys', KEY)) },
    handler: async (_request, _reply, d) => {
      const now = d.clock.now();
      return { keys: (await listKeys(d, now)).map((key) => keyJson(key, now)) };
    },
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/keys/rotate`,
    operationId: 'rotateKeys',
    area: 'keys',
    write: true,
    schema: { summary: 'Publish new signing keys; they sign after the lead time', response: ok(listOf('keys', ROTATED_KEY)) },
    handler: async (_request, _reply, d) => ({
      keys: (await rotateKeys({ ...d, keys: deps.keys })).map((key) => ({ kid: key.kid, alg: key.alg, activates_at: new Date(key.activatesAt).toISOString() })),
    }),
  });
};

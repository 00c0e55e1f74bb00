/** The admin API's device requests waiting for a person (RFC 8628, `tessera device …`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { formatUserCode } from '../../flows/device/user-code.ts';
import { denyDevice, listPendingDevices, MAX_REASON, pendingDeviceJson } from '../../flows/manage/devices.ts';
import { DENIED_DEVICE, listOf, PENDING_DEVICE } from './answers.ts';
import { body, ok, PAGE, params, query } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const deviceRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/devices`,
    operationId: 'listPendingDevices',
    area: 'users',
    write: false,
    schema: {
      summary: 'Device requests waiting for approval, oldest first: user code, client, where the device asked from',
      querystring: query({ limit: PAGE.limit }),
      response: ok(listOf('devices', PENDING_DEVICE)),
    },
    handler: async (request, _reply, d) => ({ devices: (await listPendingDevices(d, (request.query as { limit: number }).limit)).map(pendingDeviceJson) }),
  });
  route({
    method: 'POST',
    url: `${ADMIN_PREFIX}/devices/:user_code/deny`,
    operationId: 'denyDevice',
    area: 'users',
    write: true,
    schema: {
      summary: 'Deny a waiting device request (a user code suspected of phishing): nobody can approve it; the device gets access_denied',
      params: params({ user_code: { type: 'string', minLength: 8, maxLength: 9, pattern: '^[A-Za-z]{4}-?[A-Za-z]{4}$' } }),
      body: body({ reason: { type: 'string', minLength: 1, maxLength: MAX_REASON } }),
      response: ok(DENIED_DEVICE),
    },
    handler: async (request, _reply, d) => {
      const denied = await denyDevice(
        d,
        (request.params as { user_code: string }).user_code,
        (request.body as { reason?: string } | undefined)?.reason ?? null,
      );
      return { user_code: formatUserCode(denied.userCode), client_id: denied.clientId, status: denied.status };
    },
  });
};

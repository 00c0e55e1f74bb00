import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { DEVICE_AUTHORIZATION_PATH } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import { countedAddress } from '../core/networks.ts';
import { LocalRateLimit, OncePerWindow } from '../flows/attempts.ts';
import { startDeviceAuthorization } from '../flows/device/authorization.ts';
import { clientRequest } from './client-auth.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { requestProof } from './dpop.ts';
import { formResources } from './form.ts';

/**
 * The device authorization endpoint (RFC 8628 §3.1-3.2), which the device calls. The pages
 * a person uses on a second screen (§3.3) are browser routes: device-verification.ts.
 */
export const deviceRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  // Every device authorization stores a record, and a public client needs only
  // its client_id: requests per address and per client are limited, in memory, so that a
  // refused one costs no write. RFC 8628 reserves slow_down for the token endpoint; this
  // is 429 with Retry-After (RFC 6585 §4).
  const limits = deps.config.deviceAuthorizationLimits;
  const perAddress = new LocalRateLimit(limits.perAddressPerMinute, 60_000);
  const perClient = new LocalRateLimit(limits.perClientPerMinute, 60_000);
  const refusalLog = new OncePerWindow(60_000);
  const tooMany = (request: FastifyRequest, scope: 'address' | 'client', key: string, retryAfterSeconds: number) => {
    if (refusalLog.first(`${scope} ${key}`, deps.clock.now())) {
      request.log.warn(
        { ip: request.ip, limit: scope, ...(scope === 'client' ? { client: key } : {}) },
        'device authorizations refused: over the per-minute limit',
      );
    }
    return new OAuthError('temporarily_unavailable', `too many device authorization requests from this ${scope}; try again in ${retryAfterSeconds} seconds`, {
      status: 429,
      retryAfterSeconds,
    });
  };

  app.post(DEVICE_AUTHORIZATION_PATH, async (request, reply) => {
    // RFC 6749 §5.1 (RFC 8628 §3.2): the response carries a secret, so no caching; a refusal
    // by the per-address limit comes before anything is read or written.
    reply.header('Cache-Control', 'no-store').header('Pragma', 'no-cache');
    const address = countedAddress(request.ip);
    const addressWait = perAddress.take(address, deps.clock.now());
    if (addressWait !== null) throw tooMany(request, 'address', address, addressWait);
    // RFC 8628 §3.1: the client authenticates as at the token endpoint.
    const { client, params } = await clientRequest(deps, request, reply);
    const clientWait = perClient.take(client.id, deps.clock.now());
    if (clientWait !== null) throw tooMany(request, 'client', client.id, clientWait);
    // RFC 9449 defines no proof here; one binds the device code to its key, as dpop_jkt
    // binds a code (§10), so that a device code phished or read off the device is worth
    // nothing without the device's key (the cross-device security BCP's sender constraint).
    // It is not required, even of a --require-dpop client: openid-client and oauth4webapi
    // cannot send one here. Such a client proves its key at every poll instead, and the
    // first poll with a proof binds the device code (store devices.poll).
    const proof = await requestProof(deps, request, reply, DEVICE_AUTHORIZATION_PATH);
    const response = await startDeviceAuthorization(
      forRequest(deps, request),
      client,
      params,
      { ip: request.ip, userAgent: request.headers['user-agent'] ?? null, dpopJkt: proof?.jkt ?? null },
      formResources(request),
    );
    return reply.type('application/json; charset=utf-8').send(response);
  });
};

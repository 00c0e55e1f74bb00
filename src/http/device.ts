import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { unverifiedClient } from './authorize.ts';
import { hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { startDeviceAuthorization, VERIFICATION_PATH } from '../flows/device/authorization.ts';
import { sameNetwork } from '../flows/device/proximity.ts';
import { describeScope } from '../flows/resources.ts';
import { formatUserCode } from '../flows/device/user-code.ts';
import { LocalRateLimit, OncePerWindow } from '../flows/attempts.ts';
import { assertApprovalAllowed } from '../flows/second-factor/policy.ts';
import {
  decideDeviceRequest,
  findDeviceRequest,
  type CodeAttempt,
  type LockScope,
  type LookupFailure,
} from '../flows/device/verification.ts';

import { forRequest, type AppDeps } from './deps.ts';
import type { ClientRecord, DeviceAuthorizationRecord, UserRecord } from '../store/types.ts';
import { deviceCodePage, deviceCodeUsedPage, deviceDetails, deviceDonePage } from '../ui/device.ts';
import type { MessageKey, Messages } from '../ui/i18n.ts';
import { consentPage } from '../ui/pages.ts';
import { pageUi } from './locale.ts';
import { refuseApprovalPage, renderSignIn } from './page.ts';
import { clientRequest } from './client-auth.ts';
import { requestProof } from './dpop.ts';
import { DEVICE_AUTHORIZATION_PATH } from './endpoints.ts';
import { formResources, rawForm } from './form.ts';
import { checkCsrf, cookieNames, csrfToken, signedInUser } from './session.ts';

const APPROVE_PATH = `${VERIFICATION_PATH}/approve`;

/** What a person is told when their code was not looked up: what happened, and what to do. */
const LOCKED_MESSAGES: Readonly<Record<LockScope, MessageKey>> = {
  browser: 'device.code.lockedBrowser',
  address: 'device.code.lockedAddress',
  network: 'device.code.lockedNetwork',
  'large-network': 'device.code.lockedNetwork',
  server: 'device.code.lockedServer',
};

function lookupMessage(t: Messages, kind: 'malformed' | 'unknown', codeLifetimeSeconds: number): string {
  return kind === 'malformed'
    ? t.text('device.code.malformed', { example: 'BCDF-GHJK' })
    : t.text('device.code.unknown', { minutes: Math.round(codeLifetimeSeconds / 60) });
}

function single(params: RawParams, name: string): string {
  const value = params[name];
  return typeof value === 'string' ? value : '';
}

/**
 * The device authorization endpoint (RFC 8628 §3.1-3.2) and the verification pages a
 * person uses on a second screen (§3.3): enter the code, sign in, review, decide.
 */
export const deviceRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {

  // Issue 12: every device authorization stores a record, and a public client needs only
  // its client_id: requests per address and per client are limited, in memory, so that a
  // refused one costs no write. RFC 8628 reserves slow_down for the token endpoint; this
  // is 429 with Retry-After (RFC 6585 §4).
  const limits = deps.config.deviceAuthorizationLimits;
  const perAddress = new LocalRateLimit(limits.perAddressPerMinute, 60_000);
  const perClient = new LocalRateLimit(limits.perClientPerMinute, 60_000);
  const refusalLog = new OncePerWindow(60_000);
  const tooMany = (request: FastifyRequest, scope: 'address' | 'client', key: string, retryAfterSeconds: number) => {
    if (refusalLog.first(`${scope} ${key}`, deps.clock.now())) {
      request.log.warn({ ip: request.ip, limit: scope, ...(scope === 'client' ? { client: key } : {}) }, 'device authorizations refused: over the per-minute limit');
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
    const addressWait = perAddress.take(request.ip, deps.clock.now());
    if (addressWait !== null) throw tooMany(request, 'address', request.ip, addressWait);
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

  function page(reply: FastifyReply, status: number, body: string): FastifyReply {
    return reply.status(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(body);
  }

  /** The browser, for the wrong-code limit: its CSRF cookie (hashed, so the key reveals nothing). */
  function attemptOf(request: FastifyRequest, input: string): CodeAttempt {
    const cookie = request.cookies[cookieNames(deps.config).csrf];
    return {
      input,
      ip: request.ip,
      browser: cookie && /^[A-Za-z0-9_-]{43}$/.test(cookie) ? hashSecret(cookie) : null,
      goodRecord: async () => (await signedInUser(deps, request)) !== null,
    };
  }

  /** Every lookup that did not find a pending request ends on one of these pages. */
  function lookupFailed(request: FastifyRequest, reply: FastifyReply, lookup: LookupFailure, typed: string) {
    const ui = pageUi(deps.config.site, request);
    if (lookup.kind === 'decided') return page(reply, 400, deviceCodeUsedPage(ui));
    const form = (status: number, error: string) =>
      page(reply, status, deviceCodePage(ui, { csrf: csrfToken(deps.config, request, reply), value: typed.slice(0, 32), error }));
    if (lookup.kind === 'locked') {
      // Its one log line per limit and window is the lockout's event (core/events.ts).
      reply.header('Retry-After', String(lookup.retryAfterSeconds));
      return form(429, ui.t.text(LOCKED_MESSAGES[lookup.scope], { minutes: Math.max(1, Math.ceil(lookup.retryAfterSeconds / 60)) }));
    }
    return form(400, lookupMessage(ui.t, lookup.kind, deps.config.device.codeLifetime));
  }

  function approvalUrl(userCode: string): string {
    return `${APPROVE_PATH}?${new URLSearchParams({ user_code: formatUserCode(userCode) }).toString()}`;
  }

  async function approvalPage(request: FastifyRequest, reply: FastifyReply, record: DeviceAuthorizationRecord, client: ClientRecord, user: UserRecord) {
    const userCode = formatUserCode(record.userCode);
    const access = await describeScope(deps.store, record.scope);
    const ui = pageUi(deps.config.site, request, { user: user.locale });
    return page(
      reply,
      200,
      consentPage(ui, {
        csrf: csrfToken(deps.config, request, reply),
        action: APPROVE_PATH,
        fields: { user_code: userCode },
        clientName: client.name,
        ...unverifiedClient(client),
        access,
        signedInAs: user.name ?? user.username,
        details: deviceDetails(ui, {
          userCode,
          requestedAt: record.createdAt,
          now: deps.clock.now(),
          deviceIp: record.requestIp,
          deviceUserAgent: record.requestUserAgent,
          approverIp: request.ip,
          otherNetwork: !sameNetwork(record.requestIp, request.ip),
        }),
        returnTo: `${VERIFICATION_PATH}?${new URLSearchParams({ user_code: userCode }).toString()}`,
      }),
    );
  }

  // RFC 8628 §3.3.1: verification_uri_complete pre-fills the code; the person still
  // confirms it, so that a link alone never leads to an approval page.
  app.get(VERIFICATION_PATH, { config: { page: true } }, async (request, reply) => {
    const value = single(request.query as RawParams, 'user_code').slice(0, 32);
    return page(reply, 200, deviceCodePage(pageUi(deps.config.site, request), { csrf: csrfToken(deps.config, request, reply), value }));
  });

  app.post(VERIFICATION_PATH, { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const typed = single(form, 'user_code');
    const lookup = await findDeviceRequest(forRequest(deps, request), attemptOf(request, typed));
    if (lookup.kind !== 'pending') return lookupFailed(request, reply, lookup, typed);
    // Post, redirect, get: the approval page can be reloaded, and is where sign-in returns.
    return reply.redirect(approvalUrl(lookup.record.userCode), 303);
  });

  app.get(APPROVE_PATH, { config: { page: true } }, async (request, reply) => {
    const typed = single(request.query as RawParams, 'user_code');
    const lookup = await findDeviceRequest(forRequest(deps, request), attemptOf(request, typed));
    if (lookup.kind !== 'pending') return lookupFailed(request, reply, lookup, typed);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return renderSignIn(deps, request, reply, approvalUrl(lookup.record.userCode), lookup.client);
    const refused = refuseApprovalPage(deps, request, reply, lookup.client, signedIn.session, approvalUrl(lookup.record.userCode));
    if (refused) return refused;
    return approvalPage(request, reply, lookup.record, lookup.client, signedIn.user);
  });

  app.post(APPROVE_PATH, { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const typed = single(form, 'user_code');
    const decision = single(form, 'decision');
    if (decision !== 'approve' && decision !== 'deny') throw new OAuthError('invalid_request', 'decision must be approve or deny');
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) {
      // The session ended while the page was open: sign in again, then review again.
      return reply.redirect(`${APPROVE_PATH}?${new URLSearchParams({ user_code: typed.slice(0, 32) }).toString()}`, 303);
    }
    const result = await decideDeviceRequest(
      forRequest(deps, request),
      attemptOf(request, typed),
      decision === 'approve'
        ? // The sign-in policy, checked again at the decision: the page may have been open for long.
          { approve: true, session: signedIn.session, check: (client) => assertApprovalAllowed(deps.config, client, signedIn.session) }
        : { approve: false, userId: signedIn.user.id },
    );
    if (result.kind !== 'done') return lookupFailed(request, reply, result, typed);
    return page(reply, 200, deviceDonePage(pageUi(deps.config.site, request, { user: signedIn.user.locale }), result.approved, result.client.name));
  });
};

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { hashSecret } from '../core/crypto.ts';
import { DEVICE_APPROVAL_PATH, DEVICE_VERIFICATION_PATH } from '../core/endpoints.ts';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { sameNetwork } from '../flows/device/proximity.ts';
import { formatUserCode } from '../flows/device/user-code.ts';
import { decideDeviceRequest, findDeviceRequest, type CodeAttempt, type LockScope, type LookupFailure } from '../flows/device/verification.ts';
import { describeScope } from '../flows/resources.ts';
import { assertApprovalAllowed } from '../flows/second-factor/policy.ts';
import { organizationPolicy, organizationsToChoose } from '../flows/organizations/choice.ts';
import type { ClientRecord, DeviceAuthorizationRecord, Membership, SessionRecord, UserRecord } from '../store/types.ts';
import { deviceCodePage, deviceCodeUsedPage, deviceDetails, deviceDonePage } from '../ui/device.ts';
import type { MessageKey, Messages } from '../ui/i18n.ts';
import { consentPage } from '../ui/pages.ts';
import { unverifiedClient } from './authorize.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { cookieNames, csrfToken, signedInUser } from './session.ts';

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

/** The approval form's field naming the sign-in session the page was shown in (its public `sid`). */
const SHOWN_IN = 'shown_in';
/**
 * The approval form's field naming the request the page was shown for: its device code's hash,
 * which the person's browser may hold (a poll hashes the device code it is sent, so the hash
 * gets no tokens), unlike the device code.
 */
const SHOWN_FOR = 'shown_for';

/**
 * The verification pages a person uses on a second screen (RFC 8628 §3.3): enter the code,
 * sign in, review, decide. Browser routes (browser.ts); the device authorization endpoint
 * the device itself calls is device.ts.
 */
export const deviceVerificationRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
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
    const ui = pages.ui(request);
    if (lookup.kind === 'decided') return pages.send(reply, 400, deviceCodeUsedPage(ui));
    const form = (status: number, error: string) =>
      pages.send(reply, status, deviceCodePage(ui, { csrf: csrfToken(deps.config, request, reply), value: typed.slice(0, 32), error }));
    if (lookup.kind === 'locked') {
      // Its one log line per limit and window is the lockout's event (core/events.ts).
      reply.header('Retry-After', String(lookup.retryAfterSeconds));
      return form(429, ui.t.text(LOCKED_MESSAGES[lookup.scope], { minutes: Math.max(1, Math.ceil(lookup.retryAfterSeconds / 60)) }));
    }
    return form(400, lookupMessage(ui.t, lookup.kind, deps.config.device.codeLifetime));
  }

  function approvalUrl(userCode: string): string {
    return `${DEVICE_APPROVAL_PATH}?${new URLSearchParams({ user_code: formatUserCode(userCode) }).toString()}`;
  }

  async function approvalPage(
    request: FastifyRequest,
    reply: FastifyReply,
    record: DeviceAuthorizationRecord,
    client: ClientRecord,
    user: UserRecord,
    memberships: readonly Membership[],
    session: SessionRecord,
  ) {
    const userCode = formatUserCode(record.userCode);
    const access = await describeScope(deps.store, record.scope);
    const ui = pages.ui(request, { user: user.locale });
    // A member of several organizations chooses the one the device's tokens name, as on the consent page.
    const organizations = organizationsToChoose(memberships, record.scope);
    return pages.send(
      reply,
      200,
      consentPage(ui, {
        csrf: csrfToken(deps.config, request, reply),
        action: DEVICE_APPROVAL_PATH,
        // The sign-in session the page was shown in: a decision posted from it once the browser
        // is signed in as someone else (another tab signed out, then in as another person) would
        // give the device to an account its approver never saw. The page is shown again instead.
        // The request too: a user code is given again once its request has expired.
        fields: { user_code: userCode, [SHOWN_IN]: session.sid, [SHOWN_FOR]: record.deviceCodeHash },
        clientName: client.name,
        ...unverifiedClient(client),
        access,
        signedInAs: user.name ?? user.username,
        organizations,
        details: deviceDetails(ui, {
          userCode,
          requestedAt: record.createdAt,
          now: deps.clock.now(),
          deviceIp: record.requestIp,
          deviceUserAgent: record.requestUserAgent,
          approverIp: request.ip,
          otherNetwork: !sameNetwork(record.requestIp, request.ip),
        }),
        returnTo: `${DEVICE_VERIFICATION_PATH}?${new URLSearchParams({ user_code: userCode }).toString()}`,
      }),
    );
  }

  // RFC 8628 §3.3.1: verification_uri_complete pre-fills the code, and the person presses
  // Continue. The approval page is what protects a person sent a link (it may be linked to
  // as well): it shows the code to compare with the device's screen, as §3.3.1 asks.
  app.get(DEVICE_VERIFICATION_PATH, { config: { page: true } }, async (request, reply) => {
    const value = single(request.query as RawParams, 'user_code').slice(0, 32);
    return pages.send(reply, 200, deviceCodePage(pages.ui(request), { csrf: csrfToken(deps.config, request, reply), value }));
  });

  app.post(DEVICE_VERIFICATION_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const typed = single(form, 'user_code');
    const lookup = await findDeviceRequest(forRequest(deps, request), attemptOf(request, typed));
    if (lookup.kind !== 'pending') return lookupFailed(request, reply, lookup, typed);
    // Post, redirect, get: the approval page can be reloaded, and is where sign-in returns.
    return reply.redirect(approvalUrl(lookup.record.userCode), 303);
  });

  app.get(DEVICE_APPROVAL_PATH, { config: { page: true } }, async (request, reply) => {
    const typed = single(request.query as RawParams, 'user_code');
    const lookup = await findDeviceRequest(forRequest(deps, request), attemptOf(request, typed));
    if (lookup.kind !== 'pending') return lookupFailed(request, reply, lookup, typed);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return pages.signInFor(request, reply, approvalUrl(lookup.record.userCode), lookup.client);
    // The person's organizations may ask more of the sign-in (docs/organizations.md).
    const memberships = await deps.store.organizations.membershipsOf(signedIn.user.id);
    const refused = pages.refuseApproval(
      request,
      reply,
      lookup.client,
      signedIn.session,
      approvalUrl(lookup.record.userCode),
      null,
      organizationPolicy(memberships),
    );
    if (refused) return refused;
    return approvalPage(request, reply, lookup.record, lookup.client, signedIn.user, memberships, signedIn.session);
  });

  app.post(DEVICE_APPROVAL_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const typed = single(form, 'user_code');
    const decision = single(form, 'decision');
    if (decision !== 'approve' && decision !== 'deny') throw new OAuthError('invalid_request', 'decision must be approve or deny');
    const signedIn = await signedInUser(deps, request);
    // A decision made on a page shown in another session (the form names it; a post that is no
    // page's form names none, and is decided by the rules below like any other).
    const shownIn = form[SHOWN_IN];
    if (!signedIn || (shownIn !== undefined && shownIn !== signedIn.session.sid)) {
      // The session ended while the page was open, or the browser is now signed in as someone
      // else: sign in if need be, then review again, as whoever is signed in now.
      return reply.redirect(`${DEVICE_APPROVAL_PATH}?${new URLSearchParams({ user_code: typed.slice(0, 32) }).toString()}`, 303);
    }
    const memberships = await deps.store.organizations.membershipsOf(signedIn.user.id);
    const member = organizationPolicy(memberships);
    // The organization chosen is the person's input: the flow checks it against their memberships.
    const posted = typeof form['organization'] === 'string' ? form['organization'].slice(0, 200) : null;
    const shownFor = form[SHOWN_FOR] === undefined ? {} : { shownFor: single(form, SHOWN_FOR) };
    const result = await decideDeviceRequest(
      forRequest(deps, request),
      attemptOf(request, typed),
      decision === 'approve'
        ? {
            approve: true,
            session: signedIn.session,
            // The sign-in policy, checked again at the decision: the page may have been open for long.
            check: (client) => assertApprovalAllowed(deps.config, client, signedIn.session, null, member),
            organization: { memberships, posted },
            ...shownFor,
          }
        : { approve: false, userId: signedIn.user.id, ...shownFor },
    );
    // Approved with no choice of theirs (none posted, or one not theirs): the page asks again.
    if (result.kind === 'choose') return approvalPage(request, reply, result.record, result.client, signedIn.user, memberships, signedIn.session);
    if (result.kind !== 'done') return lookupFailed(request, reply, result, typed);
    return pages.send(reply, 200, deviceDonePage(pages.ui(request, { user: signedIn.user.locale }), result.approved, result.client.name));
  });
};

import { samlLogoutKit } from './saml-logout.ts';
import { linkedIdentitiesOf } from '../flows/upstream/accounts.ts';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import type { AuditEvent } from '../core/events.ts';
import { revokeGrant } from '../flows/lifecycle/grants.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { describeAccess, isOpenIdScope, ResourceCatalog } from '../flows/resources.ts';
import { endEverywhere, liveSessions } from '../flows/session/session.ts';
import { changePassword, hasPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../flows/users.ts';
import type { RawParams } from '../core/protocol.ts';
import { forRequest } from './deps.ts';
import type { ClientRecord } from '../store/types.ts';
import { accountPage, type ActivityView } from '../ui/account.ts';
import { emailChangeConfirmPage, emailChangeDonePage } from '../ui/pages.ts';
import { accountReauthenticateMinutes } from '../flows/second-factor/policy.ts';
import { emailChangeOffered, openEmailChangeLink, pendingEmailChange, requestEmailChange, verifyEmailChange } from '../flows/email-change.ts';
import type { MessageKey } from '../ui/i18n.ts';
import type { BrowserRoutesOptions, SignedIn } from './browser-kit.ts';
import {
  ACCOUNT_PATH,
  ACCOUNT_REVOKE_PATH,
  ACCOUNT_SIGN_IN,
  CHANGE_EMAIL_PATH,
  CHANGE_PASSWORD_PATH,
  EMAIL_CHANGE_VERIFY_PATH,
  SIGN_OUT_EVERYWHERE_PATH,
} from '../core/endpoints.ts';
import { accountSecurity, SECURITY_NOTICES, setUpReturn } from './second-factor.ts';
import { rawForm } from './form.ts';
import { browserOf, cookieNames, csrfToken, signedInUser } from './session.ts';

/** How many of the person's own sign-ins and approvals the page shows. */
const ACTIVITY_SHOWN = 10;
/** The events read to find them (other kinds, such as refreshes, are in between). */
const ACTIVITY_READ = 200;

const NOTICES: Readonly<Record<string, MessageKey>> = {
  revoked: 'account.notice.revoked',
  password: 'account.notice.password',
  email: 'account.notice.emailSent',
};

/**
 * The signed-in user's own page: every application and device they approved whose tokens
 * can still be used, each with a Revoke button that ends its grant, and with it every
 * access and refresh token issued under it; their recent sign-ins and approvals; and a
 * form to change their password.
 */
export const accountRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost, signedIn: signedInOnly, signedInOf }) => {
  const samlLogout = samlLogoutKit(deps, pages);
  async function activity(userId: string): Promise<ActivityView[]> {
    const events = await deps.store.events.list({ userId, limit: ACTIVITY_READ });
    const shown = events.filter((event) => ['signin.succeeded', 'consent.given', 'device.approved'].includes(event.type)).slice(0, ACTIVITY_SHOWN);
    const names = new Map<string, string | null>();
    for (const id of new Set(shown.map((event) => event.clientId).filter((id) => id !== null))) {
      names.set(id, (await deps.store.clients.get(id))?.name ?? null);
    }
    const kind = (event: AuditEvent): ActivityView['kind'] =>
      event.type === 'signin.succeeded' ? 'signed-in' : event.type === 'device.approved' ? 'approved-device' : 'approved';
    return shown.map((event) => ({
      kind: kind(event),
      clientName: event.clientId === null ? null : (names.get(event.clientId) ?? null),
      at: event.at,
      ip: event.ip,
      userAgent: event.userAgent,
    }));
  }

  async function render(
    request: FastifyRequest,
    reply: FastifyReply,
    signedIn: SignedIn,
    options: {
      notice?: MessageKey;
      passwordError?: MessageKey;
      emailError?: { readonly key: MessageKey; readonly typed: string };
      status?: number;
      retryAfterSeconds?: number;
    } = {},
  ) {
    reply.header('Cache-Control', 'no-store');
    const now = deps.clock.now();
    // A grant whose last tokens have all expired can do nothing more: it is not listed,
    // unless it is a remembered consent, which signs the person in to the app without asking.
    const grants = (await deps.store.grants.listForUser(signedIn.user.id)).filter(
      (grant) => grant.remembered || (grant.activeUntil !== null && grant.activeUntil > now),
    );
    const sessions = await liveSessions(deps, signedIn.user.id);
    const clientIds = [...new Set(grants.map((grant) => grant.clientId))];
    const clients = new Map<string, ClientRecord | null>(await Promise.all(clientIds.map(async (id) => [id, await deps.store.clients.get(id)] as const)));
    const catalog = new ResourceCatalog(grants.some((grant) => !grant.scope.every(isOpenIdScope)) ? await deps.store.resources.list() : []);
    const csrf = csrfToken(deps.config, request, reply);
    // The person's own language (their locale claim) after the app's and their menu choice.
    const ui = pages.ui(request, { user: signedIn.user.locale });
    const { t } = ui;
    const wait = options.retryAfterSeconds ?? 0;
    const limits = { min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH, seconds: wait, minutes: Math.max(1, Math.ceil(wait / 60)) };
    return reply
      .status(options.status ?? 200)
      .type('text/html; charset=utf-8')
      .send(
        accountPage(ui, {
          csrf,
          security: await accountSecurity(deps, ui, signedIn, csrf, setUpReturn(request.query as Record<string, unknown> as RawParams)),
          identities: (await linkedIdentitiesOf(deps, signedIn.user.id)).map((identity) => ({
            provider: identity.providerName ?? identity.providerId,
            label: identity.label ?? identity.subject,
            linkedAt: identity.linkedAt,
          })),
          signedInAs: signedIn.user.name ?? signedIn.user.username,
          operator: signedIn.user.role !== null,
          email: {
            current: signedIn.user.email,
            verified: signedIn.user.emailVerified,
            pending: await pendingEmailChange(deps, signedIn.user),
            changeable: emailChangeOffered(deps),
            error: options.emailError && t.text(options.emailError.key, limits),
            typed: options.emailError?.typed,
          },
          notice: options.notice && t.text(options.notice, limits),
          passwordError: options.passwordError && t.text(options.passwordError, limits),
          // "Forgot password?" mails a link that sets one, where there is a mail server and an address.
          noPassword: hasPassword(signedIn.user) ? undefined : { recovery: deps.mail !== undefined && signedIn.user.email !== null },
          activity: await activity(signedIn.user.id),
          connections: grants.map((grant) => ({
            grantId: grant.id,
            clientName: clients.get(grant.clientId)?.name ?? grant.clientId,
            // A remembered grant grows: its scopes are as of its last approval.
            access: describeAccess(catalog, grant.scope, grant.renewedAt ?? grant.createdAt),
            approvedAt: grant.createdAt,
            lastUsedAt: grant.lastUsedAt,
            device: grant.device,
          })),
          sessions: sessions.map((session) => ({
            signedInAt: session.authTime,
            ip: session.ip,
            userAgent: session.userAgent,
            current: session.idHash === signedIn.session.idHash,
          })),
        }),
      );
  }

  app.get(ACCOUNT_PATH, { config: { page: true }, preHandler: signedInOnly }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const done = typeof query['done'] === 'string' ? query['done'] : query['revoked'] === '1' ? 'revoked' : '';
    const notice = NOTICES[done] ?? (typeof query['notice'] === 'string' ? SECURITY_NOTICES[query['notice']] : undefined);
    return render(request, reply, signedInOf(request), notice === undefined ? {} : { notice });
  });

  const form = { config: { page: true }, preHandler: [formPost, signedInOnly] };

  app.post(ACCOUNT_REVOKE_PATH, form, async (request, reply) => {
    const signedIn = signedInOf(request);
    const grantId = rawForm(request)['grant_id'];
    const grant = typeof grantId === 'string' && grantId.length <= 256 ? await deps.store.grants.get(grantId) : null;
    // Someone else's grant is answered exactly like one that does not exist.
    if (!grant || grant.userId !== signedIn.user.id) {
      throw new OAuthError('invalid_request', 'There is no such connection on your account.', { status: 404 });
    }
    // A remembered grant is the consent itself: revoking it forgets it.
    await revokeGrant(forRequest(deps, request), grant, 'user');
    return reply.redirect(`${ACCOUNT_PATH}?revoked=1`, 303);
  });

  // Ends every browser session of the person, this one included, and tells the apps that
  // received an ID token in any of them (Back-Channel Logout 1.0).
  app.post(SIGN_OUT_EVERYWHERE_PATH, form, async (request, reply) => {
    const ended = await endEverywhere(deps, browserOf(deps, request, reply), signedInOf(request).user);
    // Their SAML SPs through this browser (a LogoutRequest names the session by its SessionIndex, whichever browser it was in).
    const saml = await samlLogout.begin(
      request,
      reply,
      ended.map((session) => session.sid),
      { kind: 'redirect', url: ACCOUNT_SIGN_IN },
    );
    return saml ?? reply.redirect(ACCOUNT_SIGN_IN, 303);
  });

  app.post(CHANGE_EMAIL_PATH, form, async (request, reply) => {
    const signedIn = signedInOf(request);
    const raw = rawForm(request)['email'];
    const typed = typeof raw === 'string' ? raw.slice(0, 320) : '';
    const ui = pages.ui(request, { user: signedIn.user.locale });
    const result = await requestEmailChange(forRequest(deps, request), signedIn.user, {
      email: typed,
      ip: request.ip,
      locale: ui.t.locale,
      signedInAt: signedIn.session.authTime,
    });
    switch (result.kind) {
      case 'unavailable':
        return reply.callNotFound();
      case 'sign-in-again':
        // The sign-in page, then back here to ask again: the address typed is not carried, so
        // that no link can arrive with one filled in.
        return pages.signIn(
          request,
          reply,
          401,
          {
            returnTo: ACCOUNT_PATH,
            notice: ui.t.text('account.email.signInAgain', { minutes: accountReauthenticateMinutes(deps.config) }),
            username: signedIn.user.username,
            maxAge: 0,
          },
          { user: signedIn.user.locale },
        );
      case 'invalid':
        return render(request, reply, signedIn, { emailError: { key: 'account.email.invalid', typed }, status: 400 });
      case 'same':
        return render(request, reply, signedIn, { emailError: { key: 'account.email.same', typed }, status: 400 });
      case 'limited':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return render(request, reply, signedIn, {
          emailError: { key: 'account.email.limited', typed },
          status: 429,
          retryAfterSeconds: result.retryAfterSeconds,
        });
      case 'sent':
        return reply.redirect(`${ACCOUNT_PATH}?done=email`, 303);
    }
  });

  // The link mailed to a new address: the link, which was sent to that address alone, in a
  // browser signed in as the account whose change it is (flows/address-link.ts). Anyone else,
  // or no one, gets the sign-in page, which comes back here: on another device, the person
  // signs in there first.
  if (emailChangeOffered(deps)) {
    const follower = async (request: FastifyRequest) => (await signedInUser(deps, request))?.user ?? null;
    const linkPath = (token: string) => `${EMAIL_CHANGE_VERIFY_PATH}?${new URLSearchParams({ token }).toString()}`;
    const tokenOf = (raw: unknown) => (typeof raw === 'string' ? raw.slice(0, 256) : '');

    app.get(EMAIL_CHANGE_VERIFY_PATH, { config: { page: true } }, async (request, reply) => {
      const token = tokenOf((request.query as RawParams)['token']);
      const opened = await openEmailChangeLink(deps, token, await follower(request));
      if (opened.kind === 'sign-in') return pages.signInFirst(request, reply, opened, linkPath(token));
      const ui = pages.ui(request, { user: opened.kind === 'confirm' ? opened.user.locale : undefined });
      if (opened.kind === 'invalid_link') return pages.send(reply, 400, emailChangeDonePage(ui, { kind: 'invalid' }));
      const csrf = csrfToken(deps.config, request, reply);
      return pages.send(reply, 200, emailChangeConfirmPage(ui, { csrf, token, username: opened.user.username, email: opened.change.email }));
    });

    app.post(EMAIL_CHANGE_VERIFY_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
      const token = tokenOf(rawForm(request)['token']);
      const result = await verifyEmailChange(forRequest(deps, request), token, await follower(request));
      if (result.kind === 'sign-in') return pages.signInFirst(request, reply, result, linkPath(token));
      const ui = pages.ui(request, { user: result.kind === 'done' ? result.user.locale : undefined });
      if (result.kind === 'invalid_link') return pages.send(reply, 400, emailChangeDonePage(ui, { kind: 'invalid' }));
      return pages.send(reply, 200, emailChangeDonePage(ui, { kind: 'done', username: result.user.username, email: result.email }));
    });
  }

  app.post(CHANGE_PASSWORD_PATH, form, async (request, reply) => {
    const signedIn = signedInOf(request);
    const fields = rawForm(request);
    const current = typeof fields['current_password'] === 'string' ? fields['current_password'] : '';
    const next = typeof fields['new_password'] === 'string' ? fields['new_password'] : '';
    // The browser's own session stays: it is the one that proved the current password.
    const result = await changePassword(forRequest(deps, request), signedIn.user, signedIn.session.idHash, {
      current,
      next,
      ip: request.ip,
      browser: request.cookies[cookieNames(deps.config).knownBrowser] ?? null,
    });
    if (result.kind === 'wrong_password') return render(request, reply, signedIn, { passwordError: 'account.password.wrongCurrent', status: 400 });
    if (result.kind === 'invalid') {
      const passwordError = next.length < MIN_PASSWORD_LENGTH ? 'account.password.tooShort' : 'account.password.tooLong';
      return render(request, reply, signedIn, { passwordError, status: 400 });
    }
    if (result.kind === 'limited' || result.kind === 'busy') {
      reply.header('Retry-After', String(result.retryAfterSeconds));
      const passwordError = result.kind === 'busy' ? 'account.password.busy' : 'account.password.limited';
      return render(request, reply, signedIn, { passwordError, status: 429, retryAfterSeconds: result.retryAfterSeconds });
    }
    // The other browsers were signed out: the apps that signed in through them are told.
    await sendLogoutTokens(deps, result.endedSessions, request.log);
    // And the SAML SPs they signed in to, through this browser (each LogoutRequest names its session).
    const done = `${ACCOUNT_PATH}?done=password`;
    const saml = await samlLogout.begin(
      request,
      reply,
      result.endedSessions.map((session) => session.sid),
      { kind: 'redirect', url: done },
    );
    return saml ?? reply.redirect(done, 303);
  });
};

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { AuditEvent } from '../core/events.ts';
import { revokeGrant } from '../flows/lifecycle/grants.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { describeAccess, isOpenIdScope, ResourceCatalog } from '../flows/resources.ts';
import { changePassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../flows/users.ts';
import { forRequest, type AppDeps } from './deps.ts';
import type { ClientRecord, SessionRecord, UserRecord } from '../store/types.ts';
import { accountPage, type ActivityView } from '../ui/account.ts';
import type { MessageKey } from '../ui/i18n.ts';
import { pageUi } from './locale.ts';
import { accountSecurity, SECURITY_NOTICES } from './second-factor.ts';
import { signedInUser } from './sign-in.ts';
import { rawForm } from './form.ts';
import { checkCsrf, cookieNames, csrfToken, endSession } from './session.ts';

const SIGN_IN = `/login?return_to=${encodeURIComponent('/account')}`;

/** How many of the person's own sign-ins and approvals the page shows. */
const ACTIVITY_SHOWN = 10;
/** The events read to find them (other kinds, such as refreshes, are in between). */
const ACTIVITY_READ = 200;

const NOTICES: Readonly<Record<string, MessageKey>> = {
  revoked: 'account.notice.revoked',
  password: 'account.notice.password',
};

/**
 * The signed-in user's own page: every application and device they approved whose tokens
 * can still be used, each with a Revoke button that ends its grant, and with it every
 * access and refresh token issued under it; their recent sign-ins and approvals; and a
 * form to change their password.
 */
export const accountRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
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
    signedIn: { session: SessionRecord; user: UserRecord },
    options: { notice?: MessageKey; passwordError?: MessageKey; status?: number } = {},
  ) {
    reply.header('Cache-Control', 'no-store');
    const now = deps.clock.now();
    // A grant whose last tokens have all expired can do nothing more: it is not listed,
    // unless it is a remembered consent, which signs the person in to the app without asking.
    const grants = (await deps.store.grants.listForUser(signedIn.user.id)).filter(
      (grant) => grant.remembered || (grant.activeUntil !== null && grant.activeUntil > now),
    );
    const sessions = await deps.store.sessions.listForUser(signedIn.user.id, now);
    const clientIds = [...new Set(grants.map((grant) => grant.clientId))];
    const clients = new Map<string, ClientRecord | null>(await Promise.all(clientIds.map(async (id) => [id, await deps.store.clients.get(id)] as const)));
    const catalog = new ResourceCatalog(grants.some((grant) => !grant.scope.every(isOpenIdScope)) ? await deps.store.resources.list() : []);
    const csrf = csrfToken(deps.config, request, reply);
    const ui = pageUi(deps.config.site, request);
    const { t } = ui;
    return reply
      .status(options.status ?? 200)
      .type('text/html; charset=utf-8')
      .send(
        accountPage(ui, {
          csrf,
          security: await accountSecurity(deps, ui, signedIn.user, csrf),
          signedInAs: signedIn.user.name ?? signedIn.user.username,
          notice: options.notice && t.text(options.notice, { min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH }),
          passwordError: options.passwordError && t.text(options.passwordError, { min: MIN_PASSWORD_LENGTH, max: MAX_PASSWORD_LENGTH }),
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

  app.get('/account', { config: { page: true } }, async (request, reply) => {
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.header('Cache-Control', 'no-store').redirect(SIGN_IN, 303);
    const query = request.query as Record<string, unknown>;
    const done = typeof query['done'] === 'string' ? query['done'] : query['revoked'] === '1' ? 'revoked' : '';
    const notice = NOTICES[done] ?? (typeof query['notice'] === 'string' ? SECURITY_NOTICES[query['notice']] : undefined);
    return render(request, reply, signedIn, notice === undefined ? {} : { notice });
  });

  app.post('/account/revoke', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(SIGN_IN, 303);
    const grantId = form['grant_id'];
    const grant = typeof grantId === 'string' && grantId.length <= 256 ? await deps.store.grants.get(grantId) : null;
    // Someone else's grant is answered exactly like one that does not exist.
    if (!grant || grant.userId !== signedIn.user.id) {
      throw new OAuthError('invalid_request', 'There is no such connection on your account.', { status: 404 });
    }
    // A remembered grant is the consent itself: revoking it forgets it.
    await revokeGrant(forRequest(deps, request), grant, 'user');
    return reply.redirect('/account?revoked=1', 303);
  });

  // Ends every browser session of the person, this one included, and tells the apps that
  // received an ID token in any of them (Back-Channel Logout 1.0).
  app.post('/account/sign-out-everywhere', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(SIGN_IN, 303);
    await endSession(deps, request, reply);
    const ended = await deps.store.sessions.removeForUser(signedIn.user.id);
    await sendLogoutTokens(deps, [signedIn.session, ...ended], request.log);
    return reply.redirect(SIGN_IN, 303);
  });

  app.post('/account/password', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(SIGN_IN, 303);
    const current = typeof form['current_password'] === 'string' ? form['current_password'] : '';
    const next = typeof form['new_password'] === 'string' ? form['new_password'] : '';
    // The browser's own session stays: it is the one that proved the current password.
    const sessionCookie = request.cookies[cookieNames(deps.config).session] ?? '';
    const result = await changePassword(forRequest(deps, request), signedIn.user, hashSecret(sessionCookie), current, next);
    if (result.kind === 'wrong_password') return render(request, reply, signedIn, { passwordError: 'account.password.wrongCurrent', status: 400 });
    if (result.kind === 'invalid') {
      const passwordError = next.length < MIN_PASSWORD_LENGTH ? 'account.password.tooShort' : 'account.password.tooLong';
      return render(request, reply, signedIn, { passwordError, status: 400 });
    }
    // The other browsers were signed out: the apps that signed in through them are told.
    await sendLogoutTokens(deps, result.endedSessions, request.log);
    return reply.redirect('/account?done=password', 303);
  });
};

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import { hasSecondFactor } from '../core/auth-methods.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { listPasskeys } from '../flows/passkeys/authentication.ts';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { beginTotpEnrolment, checkSecondFactor, confirmTotpEnrolment, removeTotp, totpStatus, type CodeLimits } from '../flows/second-factor/codes.ts';
import { approvalRefusal, sessionMethods, type ApprovalRefusal } from '../flows/second-factor/policy.ts';
import { otpauthUri } from '../flows/second-factor/totp.ts';
import type { ClientRecord, SessionRecord, UserRecord } from '../store/types.ts';
import type { SafeHtml } from '../ui/html.ts';
import { messages, type MessageKey } from '../ui/i18n.ts';
import { signInPage, type Ui } from '../ui/pages.ts';
import { recoveryCodesPage, secondFactorPage, securitySection, totpSetupPage } from '../ui/second-factor.ts';
import { signedInUser } from './sign-in.ts';
import { recordSignIn } from './audit.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { rawForm } from './form.ts';
import { pageUi } from './locale.ts';
import { checkCsrf, cookieNames, csrfToken, safeReturnTo } from './session.ts';
import { beginSession } from './sign-in-session.ts';

const ACCOUNT_SIGN_IN = `/login?return_to=${encodeURIComponent('/account')}`;

/** The cookie that carries a sign-in from its password to its one-time code. */
function pendingCookie(deps: AppDeps): string {
  return cookieNames(deps.config).session.replace('tessera_session', 'tessera_pending');
}

function cookieOptions(deps: AppDeps, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: deps.config.issuer.startsWith('https:'),
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

/** A typed code counts against the same limits as the password it follows. */
/**
 * Wrong one-time codes per user, whatever the address. Unlike a password, a one-time code is
 * asked for only after the right password: whoever reaches it has the password, and the
 * user's codes are locked against them for the window (6 digits do not survive many
 * addresses' worth of guesses).
 */
const ONE_TIME_CODE_LIMIT = { perUser: 10, windowMs: 15 * 60_000 };

/**
 * A wrong code also counts as a wrong password, under the same keys (flows/sign-in.ts), so
 * the password and the code together get no more guesses from one address than the
 * password alone.
 */
function signInLimits(deps: AppDeps, request: FastifyRequest, username: string): CodeLimits {
  return {
    limits: [
      { key: `sign-in:user-ip:${request.ip} ${username}`, limit: deps.config.signIn.perUserAddress },
      { key: `sign-in:ip:${request.ip}`, limit: deps.config.signIn.perAddress },
      { key: `one-time-code:user:${username}`, limit: ONE_TIME_CODE_LIMIT.perUser },
    ],
    windowMs: deps.config.signIn.windowSeconds * 1000,
  };
}

function page(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.status(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(body);
}

/**
 * The password was right. A person with one-time codes on is asked for one next (the
 * sign-in waits in the store, named by a cookie, for `pendingSignInTimeout`); anyone else
 * is signed in with `pwd`.
 */
export async function completePasswordSignIn(deps: AppDeps, request: FastifyRequest, reply: FastifyReply, user: UserRecord, returnTo: string): Promise<FastifyReply> {
  const status = await totpStatus(deps, user.id);
  if (!status.enabled) {
    // A new session id at every sign-in, so an id planted before sign-in is worth nothing.
    await beginSession(deps, request, reply, user, ['pwd']);
    await recordSignIn(deps, request, user, ['pwd'], returnTo);
    return reply.redirect(returnTo, 303);
  }
  const now = deps.clock.now();
  const value = randomToken(32);
  const lifetime = deps.config.secondFactor.pendingSignInTimeout;
  await deps.store.pendingSignIns.create({ idHash: hashSecret(value), userId: user.id, createdAt: now, expiresAt: now + lifetime * 1000 });
  reply.setCookie(pendingCookie(deps), value, cookieOptions(deps, lifetime));
  return page(reply, 200, secondFactorPage(pageUi(deps.config.site, request), { csrf: csrfToken(deps.config, request, reply), returnTo }));
}

const REFUSALS: Readonly<Record<ApprovalRefusal, MessageKey>> = {
  'phishing-resistant-required': 'signIn.refusal.passkeyRequired',
  'second-factor-required': 'signIn.refusal.secondFactorRequired',
};

/**
 * Before an approval page: a session whose sign-in the policy does not accept for this
 * client is asked to sign in again, told why (null: it may approve).
 */
export function refuseApprovalPage(
  deps: AppDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  client: ClientRecord,
  session: SessionRecord,
  returnTo: string,
  requestedAcr: readonly string[] | null = null,
): FastifyReply | null {
  const refusal = approvalRefusal(deps.config, client, session, requestedAcr);
  if (refusal === null) return null;
  const ui = pageUi(deps.config.site, request);
  return page(
    reply,
    200,
    signInPage(ui, {
      csrf: csrfToken(deps.config, request, reply),
      returnTo,
      clientName: client.name,
      notice: ui.t.text(REFUSALS[refusal], { client: client.name }),
      passkeys: passkeysAvailable(deps.config.issuer),
    }),
  );
}

/** At the approval itself: the same policy, as a refusal (the page may have been open for long). */
export function assertApprovalAllowed(deps: AppDeps, client: ClientRecord, session: SessionRecord, requestedAcr: readonly string[] | null = null): void {
  const refusal = approvalRefusal(deps.config, client, session, requestedAcr);
  if (refusal !== null) throw new OAuthError('access_denied', messages('en').text(REFUSALS[refusal], { client: client.name }), { status: 403 });
}

/** The account page's "Passkeys" and "Authenticator app" sections. */
export async function accountSecurity(deps: AppDeps, ui: Ui, user: UserRecord, csrf: string): Promise<SafeHtml> {
  const [passkeys, totp] = await Promise.all([listPasskeys(deps, user.id), totpStatus(deps, user.id)]);
  return securitySection(ui, {
    csrf,
    passkeysAvailable: passkeysAvailable(deps.config.issuer),
    passkeys: passkeys.map((passkey) => ({
      id: passkey.id,
      name: passkey.name,
      createdAt: passkey.createdAt,
      lastUsedAt: passkey.lastUsedAt,
      synced: passkey.deviceType === 'multiDevice',
    })),
    totpEnabled: totp.enabled,
    recoveryCodesLeft: totp.recoveryCodesLeft,
  });
}

/** Notices the account page shows after a change made here. */
export const SECURITY_NOTICES: Readonly<Record<string, MessageKey>> = {
  'passkey-added': 'account.notice.passkeyAdded',
  'passkey-removed': 'account.notice.passkeyRemoved',
  'totp-removed': 'account.notice.totpRemoved',
};

function single(params: RawParams, name: string): string {
  const value = params[name];
  return typeof value === 'string' ? value : '';
}

/**
 * One-time codes: the code asked after the password (RFC 6238), and enrolment and removal
 * on the account page.
 */
export const secondFactorRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.post('/login/second-factor', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const returnTo = safeReturnTo(form['return_to']);
    const ui = pageUi(deps.config.site, request);
    const cookie = request.cookies[pendingCookie(deps)];
    const now = deps.clock.now();
    const pending = cookie && cookie.length <= 128 ? await deps.store.pendingSignIns.get(hashSecret(cookie), now) : null;
    const user = pending ? await deps.store.users.get(pending.userId) : null;
    if (!pending || !user || user.disabled) {
      reply.clearCookie(pendingCookie(deps), cookieOptions(deps));
      return page(reply, 400, signInPage(ui, {
        csrf: csrfToken(deps.config, request, reply),
        returnTo,
        error: ui.t.text('signIn.error.pendingEnded'),
        passkeys: passkeysAvailable(deps.config.issuer),
      }));
    }
    const retry = (status: number, error: MessageKey) =>
      page(reply, status, secondFactorPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, error: ui.t.text(error) }));
    // Every refused code is a `second_factor.failed` event (and its log line).
    const result = await checkSecondFactor(forRequest(deps, request), user, single(form, 'code'), signInLimits(deps, request, user.username));
    switch (result.kind) {
      case 'locked':
        request.log.warn({ user: user.id, ip: request.ip }, 'one-time code entry locked after too many wrong attempts');
        return retry(429, 'code.error.locked');
      case 'replayed':
        request.log.warn({ user: user.id, ip: request.ip }, 'a one-time code was used twice');
        return retry(401, 'code.error.replayed');
      case 'wrong-code':
        return retry(401, 'code.error.wrong');
      case 'accepted':
        break;
    }
    // Single use of the waiting sign-in: of two right codes sent at once, one signs in.
    if (!(await deps.store.pendingSignIns.consume(pending.idHash, now))) return retry(400, 'code.error.done');
    reply.clearCookie(pendingCookie(deps), cookieOptions(deps));
    await beginSession(deps, request, reply, user, ['pwd', 'otp', 'mfa']);
    await recordSignIn(deps, request, user, ['pwd', 'otp', 'mfa'], returnTo);
    return reply.redirect(returnTo, 303);
  });

  async function setupPage(request: FastifyRequest, reply: FastifyReply, user: UserRecord, secret: string, status: number, error?: MessageKey) {
    const uri = otpauthUri(deps.config.site.name, new URL(deps.config.issuer).hostname, user.username, secret);
    const qr = await QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 1, width: 200 });
    const ui = pageUi(deps.config.site, request);
    const message = error === undefined ? undefined : ui.t.text(error, { site: deps.config.site.name });
    return page(reply, status, totpSetupPage(ui, { csrf: csrfToken(deps.config, request, reply), secret, qr, error: message }));
  }

  app.post('/account/totp/setup', { config: { page: true } }, async (request, reply) => {
    checkCsrf(deps.config, request, rawForm(request)['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(ACCOUNT_SIGN_IN, 303);
    const started = await beginTotpEnrolment(deps, signedIn.user.id);
    if (started.kind === 'enrolled') throw new OAuthError('invalid_request', 'One-time codes are on already. Turn them off first to set up another app.', { status: 409 });
    return setupPage(request, reply, signedIn.user, started.secret, 200);
  });

  app.post('/account/totp/confirm', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(ACCOUNT_SIGN_IN, 303);
    const { user } = signedIn;
    const result = await confirmTotpEnrolment(forRequest(deps, request), user, single(form, 'code'), {
      limits: [{ key: `totp-enrol:user:${user.id}`, limit: ONE_TIME_CODE_LIMIT.perUser }],
      windowMs: ONE_TIME_CODE_LIMIT.windowMs,
    });
    if (result.kind === 'not-started') throw new OAuthError('invalid_request', 'There is no authenticator app being set up. Start again from your account page.', { status: 409 });
    if (result.kind !== 'confirmed') {
      const pending = await deps.store.totp.get(user.id);
      if (!pending || pending.confirmedAt !== null) throw new OAuthError('invalid_request', 'There is no authenticator app being set up. Start again from your account page.', { status: 409 });
      return result.kind === 'locked'
        ? setupPage(request, reply, user, pending.secret, 429, 'totp.setup.locked')
        : setupPage(request, reply, user, pending.secret, 400, 'totp.setup.wrong');
    }
    // The code proved the second factor in this browser: a password session now has both.
    if (!hasSecondFactor(sessionMethods(signedIn.session))) {
      await beginSession(deps, request, reply, user, ['pwd', 'otp', 'mfa']);
    }
    return page(reply, 200, recoveryCodesPage(pageUi(deps.config.site, request), result.recoveryCodes));
  });

  app.post('/account/totp/remove', { config: { page: true } }, async (request, reply) => {
    checkCsrf(deps.config, request, rawForm(request)['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(ACCOUNT_SIGN_IN, 303);
    await removeTotp(forRequest(deps, request), signedIn.user);
    return reply.redirect('/account?notice=totp-removed', 303);
  });
};

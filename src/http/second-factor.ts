import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { listPasskeys, mayRemoveAPasskey } from '../flows/passkeys/authentication.ts';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { beginTotpEnrolment, confirmTotpEnrolment, removeTotp, totpStatus } from '../flows/second-factor/codes.ts';
import { accountReauthenticateMinutes, assertMayChangeSecondFactors, secondFactorChangeRefusal } from '../flows/second-factor/policy.ts';
import { otpauthUri } from '../flows/second-factor/totp.ts';
import { completeSecondFactor, gainOneTimeCode } from '../flows/session/sign-in.ts';
import { enrolmentLimits } from '../flows/sign-in.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import type { SafeHtml } from '../ui/html.ts';
import type { MessageKey } from '../ui/i18n.ts';
import type { Ui } from '../ui/pages.ts';
import { recoveryCodesPage, secondFactorPage, securitySection, totpSetupPage } from '../ui/second-factor.ts';
import { signInClientRecord } from './audit.ts';
import { allowClientTargets } from './security.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { ACCOUNT_PATH, SECOND_FACTOR_PATH, TOTP_CONFIRM_PATH, TOTP_REMOVE_PATH, TOTP_SETUP_PATH } from '../core/endpoints.ts';
import { rawForm } from './form.ts';
import { browserOf, csrfToken, safeReturnTo } from './session.ts';

/** The account page's "Passkeys" and "Authenticator app" sections. */
export async function accountSecurity(
  deps: AppDeps,
  ui: Ui,
  signedIn: { readonly user: UserRecord; readonly session: SessionRecord },
  csrf: string,
  returnTo?: string,
): Promise<SafeHtml> {
  const { user } = signedIn;
  const [passkeys, totp, changeRefusal] = await Promise.all([
    listPasskeys(deps, user.id),
    totpStatus(deps, user.id),
    secondFactorChangeRefusal(deps, signedIn.session),
  ]);
  const removable = passkeys.length > 0 && (await mayRemoveAPasskey(deps, user, passkeys.length));
  return securitySection(ui, {
    csrf,
    changeRefusal,
    reauthenticateMinutes: accountReauthenticateMinutes(deps.config),
    passkeysAvailable: passkeysAvailable(deps.config.issuer),
    passkeys: passkeys.map((passkey) => ({
      id: passkey.id,
      name: passkey.name,
      createdAt: passkey.createdAt,
      lastUsedAt: passkey.lastUsedAt,
      synced: passkey.deviceType === 'multiDevice',
      removable,
    })),
    totpEnabled: totp.enabled,
    recoveryCodesLeft: totp.recoveryCodesLeft,
    returnTo,
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
 * The approval a second factor is being set up for (`return_to`, from the sign-in page that
 * asked for one): a path on this server, or undefined when the set-up began on the account page.
 */
export function setUpReturn(params: RawParams): string | undefined {
  return params['return_to'] === undefined ? undefined : safeReturnTo(params['return_to']);
}

/**
 * One-time codes: the code asked after the password (RFC 6238), and enrolment and removal
 * on the account page.
 */
export const secondFactorRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost, signedIn, signedInOf }) => {
  app.post(SECOND_FACTOR_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const returnTo = safeReturnTo(form['return_to']);
    const client = await signInClientRecord(deps, form);
    const clientId = client?.id ?? null;
    const ui = pages.ui(request);
    // A wrong code shows the page again, whose next post may end at the client's redirect URI.
    allowClientTargets(reply, client);
    const retry = (status: number, error: MessageKey) =>
      pages.send(reply, status, secondFactorPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, clientId, error: ui.t.text(error) }));
    // Every refused code is a `second_factor.failed` event (and its log line).
    const result = await completeSecondFactor(deps, browserOf(deps, request, reply), single(form, 'code'), { clientId });
    switch (result.kind) {
      case 'expired':
        return pages.signIn(request, reply, 400, { returnTo, clientId, error: ui.t.text('signIn.error.pendingEnded') });
      case 'locked':
        // Its one log line per limit and window is the lockout's event (core/events.ts).
        return retry(429, 'code.error.locked');
      case 'replayed':
        request.log.warn({ user: result.userId, ip: request.ip }, 'a one-time code was used twice');
        return retry(401, 'code.error.replayed');
      case 'wrong-code':
        return retry(401, 'code.error.wrong');
      case 'completed-already':
        return retry(400, 'code.error.done');
      case 'signed-in':
        return reply.redirect(returnTo, 303);
    }
  });

  async function setupPage(request: FastifyRequest, reply: FastifyReply, user: UserRecord, secret: string, status: number, error?: MessageKey) {
    const returnTo = setUpReturn(rawForm(request));
    const uri = otpauthUri(pages.site.name, new URL(deps.config.issuer).hostname, user.username, secret);
    const qr = await (await import('qrcode')).default.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 1, width: 200 });
    const ui = pages.ui(request, { user: user.locale });
    const message = error === undefined ? undefined : ui.t.text(error, { site: pages.site.name });
    return pages.send(reply, status, totpSetupPage(ui, { csrf: csrfToken(deps.config, request, reply), secret, qr, error: message, returnTo }));
  }

  const account = { config: { page: true }, preHandler: [formPost, signedIn] };

  app.post(TOTP_SETUP_PATH, account, async (request, reply) => {
    const { session, user } = signedInOf(request);
    await assertMayChangeSecondFactors(deps, session);
    const started = await beginTotpEnrolment(deps, user.id);
    if (started.kind === 'enrolled')
      throw new OAuthError('invalid_request', 'One-time codes are on already. Turn them off first to set up another app.', { status: 409 });
    return setupPage(request, reply, user, started.secret, 200);
  });

  app.post(TOTP_CONFIRM_PATH, account, async (request, reply) => {
    const { session, user } = signedInOf(request);
    // Again at the confirmation: a passkey may have been added since the setup began.
    await assertMayChangeSecondFactors(deps, session);
    const result = await confirmTotpEnrolment(forRequest(deps, request), user, single(rawForm(request), 'code'), enrolmentLimits(user.id));
    if (result.kind === 'not-started')
      throw new OAuthError('invalid_request', 'There is no authenticator app being set up. Start again from your account page.', { status: 409 });
    if (result.kind !== 'confirmed') {
      const pending = await deps.store.totp.get(user.id);
      if (!pending || pending.confirmedAt !== null)
        throw new OAuthError('invalid_request', 'There is no authenticator app being set up. Start again from your account page.', { status: 409 });
      return result.kind === 'locked'
        ? setupPage(request, reply, user, pending.secret, 429, 'totp.setup.locked')
        : setupPage(request, reply, user, pending.secret, 400, 'totp.setup.wrong');
    }
    // The code is proved in this browser: the session records it, and two factors only
    // when it is another kind of factor than what the session proved before.
    await gainOneTimeCode(deps, browserOf(deps, request, reply), session, user);
    // Set up to approve something: the codes page continues to that approval.
    return pages.send(reply, 200, recoveryCodesPage(pages.ui(request, { user: user.locale }), result.recoveryCodes, setUpReturn(rawForm(request))));
  });

  app.post(TOTP_REMOVE_PATH, account, async (request, reply) => {
    await assertMayChangeSecondFactors(deps, signedInOf(request).session);
    await removeTotp(forRequest(deps, request), signedInOf(request).user);
    return reply.redirect(`${ACCOUNT_PATH}?notice=totp-removed`, 303);
  });
};

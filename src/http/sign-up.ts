import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/index.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { INVITATION_PATH, SIGN_IN_PATH, SIGN_UP_PASSKEY_OPTIONS_PATH, SIGN_UP_PATH, SIGN_UP_VERIFY_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { findInvitation } from '../flows/invitation.ts';
import {
  openSignUpLink,
  signUp,
  signUpOffered,
  signUpPasskeyOptions,
  signUpPasskeysOffered,
  verifySignUp,
  type SignUpPasskeyAnswer,
  type SignUpResult,
} from '../flows/sign-up.ts';
import { errorPage, signUpConfirmPage, signUpDonePage, signUpPage, signUpSentPage, type Ui } from '../ui/pages.ts';
import { describeUserAgent } from '../ui/user-agent.ts';
import { ceremonyBrowser } from './passkeys.ts';
import type { Follower } from '../flows/address-link.ts';
import { cookieNames, usableCookie } from '../flows/session/cookies.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { browserOf, cookiePort, csrfToken, safeReturnTo, signedInUser } from './session.ts';

function single(params: RawParams, name: string, max: number): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

function errorText(ui: Ui, result: Extract<SignUpResult, { kind: 'invalid' | 'taken' }>, domains: readonly string[] | null): string {
  const { t } = ui;
  if (result.kind === 'taken') return t.text('signUp.error.taken');
  switch (result.field) {
    case 'username':
      return t.text('signUp.error.username');
    case 'name':
      return t.text('signUp.error.name');
    case 'email':
      return result.problem === 'domain' ? t.text('signUp.error.domain', { domains: (domains ?? []).join(', ') }) : t.text('signUp.error.email');
    case 'password':
      return t.text('signUp.error.password');
  }
}

/**
 * The passkey answer a sign-up or invitation form carries, if any: the browser's response and
 * the account id its options named (the user handle, base64url as the options gave it).
 */
export function passkeyAnswer(form: RawParams, browser: string, userAgent: string | undefined): SignUpPasskeyAnswer | undefined {
  const response = single(form, 'response', 64 * 1024);
  if (response === '') return undefined;
  const accountId = Buffer.from(single(form, 'passkey_user', 128), 'base64url').toString('utf8');
  return { accountId, response, browser, name: userAgent ? describeUserAgent(userAgent).slice(0, 64) : '' };
}

/**
 * Sign-up (flows/sign-up.ts): the form, the same page after it whether the address had an
 * account, and the page the mailed link leads to. Only with TESSERA_SIGN_UP=open: without it,
 * there are no such routes (with `invite`, one that leads an invitation's token to its page).
 */
/**
 * The hash of this browser's sign-up cookie (flows/session/cookies.ts `signUp`), kept with the
 * sign-up it posts: made at its first sign-up, and renewed for as long as a link lives at each,
 * so that every link it asked for in that time is used here in one step.
 */
function signUpBrowser(config: Config, request: FastifyRequest, reply: FastifyReply): string {
  const name = cookieNames(config).signUp;
  const existing = request.cookies[name];
  const token = usableCookie(existing) ? existing : randomToken(32);
  cookiePort(config, request, reply).set(name, token, config.signUp.linkTtlSeconds);
  return hashSecret(token);
}

export const signUpRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost, passkeyCeremony }) => {
  // TESSERA_SIGN_UP=invite: the sign-up page is an invitation's (http/invitation.ts), and
  // opens for a live invitation's token alone; anything else finds no page.
  if (deps.config.signUp.policy === 'invite') {
    app.get(SIGN_UP_PATH, { config: { page: true } }, async (request, reply) => {
      const token = single(request.query as RawParams, 'token', 256);
      if ((await findInvitation(deps, token)) === null) {
        const { t } = pages.ui(request);
        return pages.send(reply, 404, errorPage(pages.ui(request), t.text('signUp.title'), t.text('signUp.inviteOnly')));
      }
      return reply.redirect(`${INVITATION_PATH}?${new URLSearchParams({ token }).toString()}`, 303);
    });
    return;
  }
  if (!signUpOffered(deps)) return;
  const settings = deps.config.signUp;
  const passkeys = signUpPasskeysOffered(deps);

  app.get(SIGN_UP_PATH, { config: { page: true } }, async (request, reply) => {
    const returnTo = safeReturnTo((request.query as RawParams)['return_to']);
    return pages.send(reply, 200, signUpPage(pages.ui(request), { csrf: csrfToken(deps.config, request, reply), returnTo, passkeys }));
  });

  // The options of the passkey a sign-up makes, for the fields typed so far; a field refused
  // is said as the form would say it, in JSON, for the page's script to show.
  app.post(SIGN_UP_PASSKEY_OPTIONS_PATH, { preHandler: [formPost, passkeyCeremony] }, async (request, reply) => {
    const form = rawForm(request);
    const values = { username: single(form, 'username', 256), name: single(form, 'name', 512), email: single(form, 'email', 320) };
    const result = await signUpPasskeyOptions(forRequest(deps, request), values, ceremonyBrowser(deps.config, request));
    reply.header('Cache-Control', 'no-store').type('application/json; charset=utf-8');
    switch (result.kind) {
      case 'closed':
        return reply.callNotFound();
      case 'invalid':
        return reply.status(400).send({ field: result.field, error: errorText(pages.ui(request), result, settings.domains) });
      case 'taken':
        return reply.status(409).send({ field: 'username', error: errorText(pages.ui(request), result, settings.domains) });
      case 'options':
        return reply.send(result.options);
    }
  });

  app.post(SIGN_UP_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const returnTo = safeReturnTo(form['return_to']);
    const values = { username: single(form, 'username', 256), name: single(form, 'name', 512), email: single(form, 'email', 320) };
    const password = single(form, 'password', 2048);
    const ui = pages.ui(request);
    const passkey = passkeyAnswer(form, ceremonyBrowser(deps.config, request), request.headers['user-agent']);
    const result = await signUp(
      forRequest(deps, request),
      // The browser is kept with the sign-up: its link is used there in one step (flows/address-link.ts).
      { ...values, password, passkey, ip: request.ip, locale: ui.t.locale, returnTo, browser: signUpBrowser(deps.config, request, reply) },
      browserOf(deps, request, reply),
    );
    const again = (status: number, error: { field: 'username' | 'name' | 'email' | 'password' | null; text: string }) =>
      pages.send(reply, status, signUpPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, values, error, passkeys }));
    switch (result.kind) {
      case 'closed':
        return reply.callNotFound();
      case 'invalid':
        return again(400, { field: result.field, text: errorText(ui, result, settings.domains) });
      case 'taken':
        return again(409, { field: 'username', text: errorText(ui, result, settings.domains) });
      case 'limited':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return again(429, { field: null, text: ui.t.text('signUp.busy', { minutes: Math.ceil(result.retryAfterSeconds / 60) }) });
      case 'busy':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return again(429, { field: null, text: ui.t.text('reset.busy', { seconds: result.retryAfterSeconds }) });
      case 'passkey':
        if (result.reason !== undefined) request.log.info({ reason: result.reason }, 'sign-up passkey refused');
        return again(400, { field: null, text: ui.t.text('signUp.error.passkey') });
      case 'sent':
        return pages.send(
          reply,
          200,
          signUpSentPage(ui, { email: result.email, hours: Math.round(settings.linkTtlSeconds / 3600), returnTo, later: settings.verify === 'later' }),
        );
    }
  });

  /** Who follows the link: the account this browser is signed in as (flows/address-link.ts). */
  const follower = async (request: FastifyRequest): Promise<Follower> => (await signedInUser(deps, request))?.user ?? null;
  /** The link itself, where a sign-in it asks for comes back to. */
  const linkPath = (token: string) => `${SIGN_UP_VERIFY_PATH}?${new URLSearchParams({ token }).toString()}`;

  /** Which browser follows the link (the hash of its sign-up cookie), or null: the one that signed up uses it in one step (flows/address-link.ts). */
  const browser = (request: FastifyRequest) => {
    const token = request.cookies[cookieNames(deps.config).signUp];
    return usableCookie(token) ? hashSecret(token) : null;
  };

  app.get(SIGN_UP_VERIFY_PATH, { config: { page: true } }, async (request, reply) => {
    const token = single(request.query as RawParams, 'token', 256);
    const opened = await openSignUpLink(deps, token, await follower(request), { browser: browser(request) });
    if (opened.kind === 'sign-in') return pages.signInFirst(request, reply, opened, linkPath(token));
    const ui = pages.ui(request, { user: opened.kind === 'confirm' ? opened.link.locale : opened.kind === 'maker-browser' ? opened.locale : undefined });
    if (opened.kind === 'invalid_link') return pages.send(reply, 400, signUpDonePage(ui, { kind: 'invalid' }));
    const csrf = csrfToken(deps.config, request, reply);
    if (opened.kind === 'maker-browser') return pages.send(reply, 200, signUpConfirmPage(ui, { csrf, token, username: opened.username, ask: 'maker-browser' }));
    const ask = opened.password ? 'password' : undefined;
    return pages.send(reply, 200, signUpConfirmPage(ui, { csrf, token, username: opened.link.username, ask }));
  });

  app.post(SIGN_UP_VERIFY_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const token = single(form, 'token', 256);
    const typed = { password: single(form, 'password', 2048), ip: request.ip };
    const result = await verifySignUp(forRequest(deps, request), token, await follower(request), { browser: browser(request), typed });
    if (result.kind === 'sign-in') return pages.signInFirst(request, reply, result, linkPath(token));
    if (result.kind === 'limited' || result.kind === 'busy') reply.header('Retry-After', String(result.retryAfterSeconds));
    const ui = pages.ui(request, { user: result.kind === 'done' ? result.user.locale : 'locale' in result ? result.locale : undefined });
    if (result.kind === 'invalid_link') return pages.send(reply, 400, signUpDonePage(ui, { kind: 'invalid' }));
    if (result.kind === 'taken') return pages.send(reply, 409, signUpDonePage(ui, { kind: 'taken' }));
    if (result.kind !== 'done') {
      // Nothing was made and the link is not spent: the page again, saying why.
      const csrf = csrfToken(deps.config, request, reply);
      const { t } = ui;
      switch (result.kind) {
        case 'maker-browser':
          return pages.send(reply, 403, signUpConfirmPage(ui, { csrf, token, username: result.username, ask: 'maker-browser' }));
        case 'password':
          return pages.send(
            reply,
            400,
            signUpConfirmPage(ui, { csrf, token, username: result.username, ask: 'password', error: t.text('signUp.confirm.passwordMissing') }),
          );
        case 'wrong_password':
          return pages.send(
            reply,
            400,
            signUpConfirmPage(ui, { csrf, token, username: result.username, ask: 'password', error: t.text('signUp.confirm.passwordWrong') }),
          );
        case 'limited':
        case 'busy': {
          const error =
            result.kind === 'busy'
              ? t.text('account.password.busy', { seconds: result.retryAfterSeconds })
              : t.text('account.password.limited', { minutes: Math.ceil(result.retryAfterSeconds / 60) });
          return pages.send(reply, 429, signUpConfirmPage(ui, { csrf, token, username: result.username, ask: 'password', error }));
        }
      }
    }
    // Continue where the sign-up started: the app's request, through the sign-in page.
    const next = `${SIGN_IN_PATH}?${new URLSearchParams({ return_to: result.returnTo }).toString()}`;
    return pages.send(reply, 200, signUpDonePage(ui, { kind: 'done', username: result.user.username, returnTo: next, signedIn: result.signedIn }));
  });
};

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/index.ts';
import { hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { authenticationOptions, finishAuthentication, removePasskey, type AuthenticationResult } from '../flows/passkeys/authentication.ts';
import { registrationOptions, finishRegistration, type RegistrationResult } from '../flows/passkeys/registration.ts';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { assertMayChangeSecondFactors } from '../flows/second-factor/policy.ts';
import { afterPasskey } from '../flows/session/sign-in.ts';
import type { MessageKey } from '../ui/i18n.ts';
import { errorPage } from '../ui/pages.ts';
import { signInClient } from './audit.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import {
  ACCOUNT_PATH,
  PASSKEY_REGISTRATION_OPTIONS_PATH,
  PASSKEY_REMOVE_PATH,
  PASSKEY_SIGN_IN_OPTIONS_PATH,
  PASSKEY_SIGN_IN_PATH,
  PASSKEYS_PATH,
  PASSKEYS_SCRIPT_PATH,
  WEBAUTHN_SCRIPT_PATH,
} from '../core/endpoints.ts';
import { setUpReturn } from './second-factor.ts';
import { rawForm } from './form.ts';
import { browserOf, cookieNames, safeReturnTo, signedInUser } from './session.ts';

/** @simplewebauthn/browser's own bundle, served from here: pages load nothing from elsewhere. */
const WEBAUTHN_SCRIPT = readFileSync(fileURLToPath(new URL('../dist/bundle/index.umd.min.js', import.meta.resolve('@simplewebauthn/browser'))), 'utf8');
const PASSKEYS_SCRIPT = readFileSync(new URL('../ui/passkeys.js', import.meta.url), 'utf8');

/** What each failed passkey sign-in tells the person. None says which check failed to an attacker's benefit. */
const SIGN_IN_FAILURES: Readonly<Record<Exclude<AuthenticationResult['kind'], 'signed-in'>, { status: number; message: MessageKey }>> = {
  malformed: { status: 400, message: 'passkey.signIn.malformed' },
  challenge: { status: 400, message: 'passkey.signIn.challenge' },
  'unknown-credential': { status: 401, message: 'passkey.signIn.unknown' },
  rejected: { status: 401, message: 'passkey.signIn.rejected' },
  cloned: { status: 401, message: 'passkey.signIn.cloned' },
  disabled: { status: 401, message: 'signIn.error.incorrect' },
};

const REGISTRATION_FAILURES: Readonly<Record<Exclude<RegistrationResult['kind'], 'added'>, { status: number; message: MessageKey }>> = {
  malformed: { status: 400, message: 'passkey.add.malformed' },
  challenge: { status: 400, message: 'passkey.add.challenge' },
  rejected: { status: 400, message: 'passkey.add.rejected' },
  duplicate: { status: 409, message: 'passkey.add.duplicate' },
};

function single(params: RawParams, name: string): string {
  const value = params[name];
  return typeof value === 'string' ? value : '';
}

/**
 * A ceremony is answered only by the browser that asked for it: the one holding this CSRF
 * cookie (checked on both requests), known by its hash.
 */
export function ceremonyBrowser(config: Config, request: FastifyRequest): string {
  return hashSecret(request.cookies[cookieNames(config).csrf] ?? '');
}

/**
 * Passkeys (WebAuthn Level 3 through @simplewebauthn): the browser scripts, the options
 * each ceremony starts from, and the form posts that finish them. Options are fetched with
 * the page's CSRF token; answers come back as ordinary form posts, so every outcome is a
 * page.
 */
export const passkeyRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost, signedIn, signedInOf, passkeyCeremony }) => {
  const available = passkeysAvailable(deps.config.issuer);

  for (const [path, body] of [
    [WEBAUTHN_SCRIPT_PATH, WEBAUTHN_SCRIPT],
    [PASSKEYS_SCRIPT_PATH, PASSKEYS_SCRIPT],
  ] as const) {
    app.get(path, (_request, reply) => reply.header('Cache-Control', 'public, max-age=3600').type('text/javascript; charset=utf-8').send(body));
  }

  function options(reply: FastifyReply, value: unknown): FastifyReply {
    return reply.header('Cache-Control', 'no-store').type('application/json; charset=utf-8').send(value);
  }

  function unavailable(): never {
    throw new OAuthError('invalid_request', 'Passkeys need this server to be reached by a domain name.', { status: 404 });
  }

  /** preHandler: refused where passkeys cannot work (an IP address for an issuer). */
  const passkeysOnly = async () => {
    if (!available) unavailable();
  };

  app.post(PASSKEY_SIGN_IN_OPTIONS_PATH, { preHandler: [formPost, passkeyCeremony] }, async (request, reply) => {
    if (!available) unavailable();
    return options(reply, await authenticationOptions(deps, ceremonyBrowser(deps.config, request)));
  });

  app.post(PASSKEY_SIGN_IN_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const returnTo = safeReturnTo(form['return_to']);
    if (!available) unavailable();
    const clientId = await signInClient(deps, form);
    // Every refusal is a `passkey.refused` event (and its log line).
    const result = await finishAuthentication(forRequest(deps, request), single(form, 'response'), ceremonyBrowser(deps.config, request));
    if (result.kind !== 'signed-in') {
      if (result.kind === 'cloned') {
        // WebAuthn §6.1.1: a counter that went backwards is the sign of a cloned authenticator.
        request.log.warn(
          { passkey: result.passkey.id, user: result.passkey.userId, stored: result.passkey.counter, received: result.counter, ip: request.ip },
          'passkey refused: signature counter did not increase (possible cloned authenticator)',
        );
      }
      const { status, message } = SIGN_IN_FAILURES[result.kind];
      return pages.signIn(request, reply, status, { returnTo, clientId, error: pages.ui(request).t.text(message) });
    }
    await afterPasskey(deps, browserOf(deps, request, reply), result.user, result.amr, { clientId });
    return reply.redirect(returnTo, 303);
  });

  app.post(PASSKEY_REGISTRATION_OPTIONS_PATH, { preHandler: [formPost, passkeyCeremony] }, async (request, reply) => {
    if (!available) unavailable();
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) throw new OAuthError('invalid_request', 'Sign in first.', { status: 401 });
    await assertMayChangeSecondFactors(deps, signedIn.session);
    return options(reply, await registrationOptions(deps, signedIn.user, ceremonyBrowser(deps.config, request)));
  });

  app.post(PASSKEYS_PATH, { config: { page: true }, preHandler: [formPost, passkeysOnly, signedIn] }, async (request, reply) => {
    const form = rawForm(request);
    const { session, user } = signedInOf(request);
    await assertMayChangeSecondFactors(deps, session);
    const result = await finishRegistration(
      forRequest(deps, request),
      user,
      single(form, 'name'),
      single(form, 'response'),
      ceremonyBrowser(deps.config, request),
    );
    if (result.kind !== 'added') {
      if (result.kind === 'rejected') request.log.info({ reason: result.reason, user: user.id }, 'passkey registration refused');
      const { status, message } = REGISTRATION_FAILURES[result.kind];
      const ui = pages.ui(request);
      return pages.send(
        reply,
        status,
        errorPage(ui, ui.t.text('passkey.add.failedTitle'), ui.t.text(message), { back: { href: ACCOUNT_PATH, label: ui.t.text('recovery.back') } }),
      );
    }
    // Added to approve something (the sign-in page's set-up link): back to that approval,
    // where the new passkey signs in (a registration does not prove the sign-in it joins).
    const returnTo = setUpReturn(form);
    return reply.redirect(returnTo ?? `${ACCOUNT_PATH}?notice=passkey-added`, 303);
  });

  app.post(PASSKEY_REMOVE_PATH, { config: { page: true }, preHandler: [formPost, signedIn] }, async (request, reply) => {
    const id = single(rawForm(request), 'passkey_id');
    await assertMayChangeSecondFactors(deps, signedInOf(request).session);
    // Someone else's passkey is answered exactly like one that does not exist.
    const removal = id.length === 0 || id.length > 1366 ? 'missing' : await removePasskey(forRequest(deps, request), signedInOf(request).user, id);
    if (removal === 'missing') throw new OAuthError('invalid_request', 'There is no such passkey on your account.', { status: 404 });
    if (removal === 'last') {
      // Said in the page's language, as the account page says it beside the passkey.
      const ui = pages.ui(request);
      return pages.send(
        reply,
        409,
        errorPage(ui, ui.t.text('error.cannotComplete'), ui.t.text('passkeys.onlyWayIn'), { back: { href: ACCOUNT_PATH, label: ui.t.text('recovery.back') } }),
      );
    }
    return reply.redirect(`${ACCOUNT_PATH}?notice=passkey-removed`, 303);
  });
};

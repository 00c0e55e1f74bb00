import { samlLogoutKit } from './saml-logout.ts';
import { onlyProvider } from '../flows/upstream/sign-in.ts';
import { emailDomain } from '../flows/upstream/accounts.ts';
import { providerForDomain } from '../flows/organizations/routing.ts';
import { routedSignInPage, upstreamStartUrl } from '../ui/pages.ts';
import type { FastifyPluginAsync } from 'fastify';
import { PASSWORD_ONLY } from '../core/auth-methods.ts';
import { SIGN_IN_PATH, SIGN_OUT_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { afterFirstStep } from '../flows/session/sign-in.ts';
import { endSession } from '../flows/session/session.ts';
import { signIn } from '../flows/sign-in.ts';
import { secondFactorPage } from '../ui/second-factor.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { signInClientRecord } from './audit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { allowClientTargets } from './security.ts';
import { browserOf, cookieNames, cookiePort, csrfToken, safeReturnTo, signedInUser, signInMaxAge } from './session.ts';

/** The sign-in form every flow leads to, and signing out. */
export const signInRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  const samlLogout = samlLogoutKit(deps, pages);
  app.get(SIGN_IN_PATH, { config: { page: true } }, async (request, reply) => {
    const query = request.query as RawParams;
    const returnTo = safeReturnTo(query['return_to']);
    const signedIn = await signedInUser(deps, request);
    // `prompt=login` (as OIDC Core §3.1.2.1 names it): the page though the browser is signed in,
    // for a change that asks for a recent sign-in (the account page links here); a provider
    // is asked for a new sign-in too (max_age=0).
    const again = query['prompt'] === 'login';
    if (signedIn && !again) return reply.redirect(returnTo, 303);
    const maxAge = again ? 0 : null;
    return pages.signIn(request, reply, 200, signedIn ? { returnTo, username: signedIn.user.username, maxAge } : { returnTo, maxAge });
  });

  app.post(SIGN_IN_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    reply.header('Cache-Control', 'no-store');
    const returnTo = safeReturnTo(form['return_to']);
    const rawUsername = typeof form['username'] === 'string' ? form['username'] : '';
    const password = typeof form['password'] === 'string' ? form['password'] : '';
    const client = await signInClientRecord(deps, form);
    const clientId = client?.id ?? null;
    const maxAge = signInMaxAge(form['max_age']);
    // The page shown again still says which app it continues to, and how recent a sign-in it needs.
    const ui = pages.ui(request);
    const { t } = ui;
    const page = (status: number, error: string) =>
      pages.signIn(request, reply, status, { returnTo, clientId, clientName: client?.name, error, username: rawUsername.slice(0, 256), maxAge });

    // A provider that is the only way in takes no password here: the person is sent to it.
    const only = await onlyProvider(deps);
    if (only !== null) return reply.redirect(upstreamStartUrl(only.id, returnTo, { clientId, maxAge }), 303);

    // An address typed in a routed domain (an organization's verified one) is sent on to its
    // provider, the address its login_hint: decided by the domain alone, before any password
    // is checked, so the answer says nothing of whether an account exists.
    const routed = rawUsername.includes('@')
      ? await providerForDomain(deps.store, await deps.store.identityProviders.list(), emailDomain(rawUsername.trim().slice(0, 320)))
      : null;
    if (routed !== null) {
      const address = rawUsername.trim().slice(0, 320);
      return pages.send(
        reply,
        200,
        routedSignInPage(ui, {
          domain: emailDomain(address)!,
          provider: routed.name,
          href: upstreamStartUrl(routed.id, returnTo, { clientId, loginHint: address, maxAge }),
        }),
      );
    }
    const known = cookieNames(deps.config).knownBrowser;
    const result = await signIn(forRequest(deps, request), {
      username: rawUsername,
      password,
      ip: request.ip,
      browser: request.cookies[known] ?? null,
      clientId,
    });
    // The page is shown again; its next post may go on to the client the authorization step
    // named (see authorize.ts): to one of its registered redirect URIs, never anywhere else.
    if (result.kind !== 'signed-in') allowClientTargets(reply, client);
    if (result.kind === 'refused') return page(401, t.text('signIn.error.incorrect'));
    if (result.kind === 'busy') {
      reply.header('Retry-After', String(result.retryAfterSeconds));
      return page(429, t.text('signIn.error.busy', { seconds: result.retryAfterSeconds }));
    }
    if (result.kind === 'limited') {
      // Its one log line per limit and window is the lockout's event (core/events.ts).
      const minutes = Math.ceil(result.retryAfterSeconds / 60);
      reply.header('Retry-After', String(result.retryAfterSeconds));
      return page(429, t.text(result.scope === 'user-address' ? 'signIn.error.limitedUser' : 'signIn.error.limitedAddress', { minutes }));
    }
    // The right password gives this browser its good record for the username (flows/sign-in.ts).
    if (deps.config.signIn.goodRecordSeconds > 0) cookiePort(deps.config, request, reply).set(known, result.browser, deps.config.signIn.goodRecordSeconds);
    // A person with one-time codes on is asked for one next; anyone else is signed in.
    const next = await afterFirstStep(deps, browserOf(deps, request, reply), result.user, PASSWORD_ONLY, { clientId });
    if (next === 'signed-in') return reply.redirect(returnTo, 303);
    allowClientTargets(reply, client);
    return pages.send(reply, 200, secondFactorPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, clientId }));
  });

  app.post(SIGN_OUT_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const ended = await endSession(deps, browserOf(deps, request, reply), 'user');
    const returnTo = safeReturnTo(form['return_to']);
    // The SAML SPs of the session first (SAML Profiles §4.4.3.3), each by the browser, then on.
    const saml = ended === null ? null : await samlLogout.begin(request, reply, [ended.sid], { kind: 'redirect', url: returnTo });
    return saml ?? reply.redirect(returnTo, 303);
  });
};

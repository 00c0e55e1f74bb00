import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SIGN_IN_PATH, UPSTREAM_SIGN_IN_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import type { ClientRecord } from '../store/types.ts';
import type { UpstreamRefusal } from '../flows/upstream/accounts.ts';
import { finishUpstream, signInWithDirectory, startUpstream, type UpstreamContinuation } from '../flows/upstream/sign-in.ts';
import { directorySignInPage, errorPage, signedInPage } from '../ui/pages.ts';
import { secondFactorPage } from '../ui/second-factor.ts';
import type { MessageKey } from '../ui/i18n.ts';
import { allowSignInTarget, signInClientRecord } from './audit.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { allowClientTargets } from './security.ts';
import { browserOf, checkCsrf, cookieNames, cookiePort, csrfToken, safeReturnTo, signInMaxAge } from './session.ts';

/** What a refused sign-in through a provider answers: its status and the person's words. */
const REFUSALS: Readonly<Record<UpstreamRefusal, { readonly status: number; readonly message: MessageKey }>> = {
  upstream_error: { status: 401, message: 'upstream.refused.upstream_error' },
  state_mismatch: { status: 400, message: 'upstream.refused.state_mismatch' },
  expired: { status: 400, message: 'upstream.refused.expired' },
  invalid_response: { status: 502, message: 'upstream.refused.invalid_response' },
  unavailable: { status: 503, message: 'upstream.refused.unavailable' },
  domain_not_allowed: { status: 403, message: 'upstream.refused.domain_not_allowed' },
  organization_not_allowed: { status: 403, message: 'upstream.refused.organization_not_allowed' },
  email_taken: { status: 403, message: 'upstream.refused.email_taken' },
  // The same words: the person signs in with the account's own password either way.
  console_role: { status: 403, message: 'upstream.refused.email_taken' },
  disabled: { status: 403, message: 'upstream.refused.disabled' },
  wrong_password: { status: 401, message: 'upstream.refused.wrong_password' },
  unknown_provider: { status: 404, message: 'upstream.refused.unknown_provider' },
};

/**
 * Signing in through an upstream identity provider (flows/upstream/): a provider's button
 * leads to `GET /login/upstream/:id`, which sends the browser to the provider (or shows a
 * directory's password form); the provider sends it back to `…/callback`, the redirect URI
 * registered there.
 */
export const upstreamRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages }) => {
  const params = (request: FastifyRequest) => request.params as { id: string };

  /** A refusal page: what happened in the person's words, and the way back to signing in. */
  const refused = (
    request: FastifyRequest,
    reply: FastifyReply,
    reason: UpstreamRefusal,
    provider: string | null,
    continuation: UpstreamContinuation | null,
  ) => {
    const ui = pages.ui(request);
    const { t } = ui;
    const { status, message } = REFUSALS[reason];
    const back = continuation ? continuation.returnTo : SIGN_IN_PATH;
    return pages.send(
      reply,
      status,
      errorPage(ui, t.text('upstream.refused.title'), t.text(message, { provider: provider ?? ui.site.name, site: ui.site.name }), {
        back: { href: back, label: t.text('upstream.backToSignIn') },
      }),
    );
  };

  const directoryPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    view: { id: string; name: string; returnTo: string; client: ClientRecord | null; error?: string; username?: string },
  ) => {
    // The form's post may lead on to the app the sign-in continues to: its redirect URIs are form targets (as on /login).
    allowClientTargets(reply, view.client);
    const providers = await deps.store.identityProviders.list();
    return pages.send(
      reply,
      status,
      directorySignInPage(pages.ui(request), {
        csrf: csrfToken(deps.config, request, reply),
        provider: { id: view.id, name: view.name },
        returnTo: view.returnTo,
        clientId: view.client?.id ?? null,
        clientName: view.client?.name,
        error: view.error,
        username: view.username,
        others: !providers.some((provider) => provider.settings['only'] === true),
      }),
    );
  };

  app.get(`${UPSTREAM_SIGN_IN_PATH}/:id`, { config: { page: true } }, async (request, reply) => {
    const query = request.query as RawParams;
    const returnTo = safeReturnTo(query['return_to']);
    const client = await signInClientRecord(deps, query);
    const loginHint = typeof query['login_hint'] === 'string' ? query['login_hint'].slice(0, 320) : null;
    const maxAge = signInMaxAge(query['max_age']);
    const continuation = { returnTo, clientId: client?.id ?? null };
    const start = await startUpstream(forRequest(deps, request), browserOf(deps, request, reply), params(request).id, continuation, { loginHint, maxAge });
    if (start.kind === 'redirect') return reply.header('Cache-Control', 'no-store').redirect(start.url, 303);
    if (start.kind === 'refused') return refused(request, reply, start.reason, start.provider, continuation);
    return directoryPage(request, reply, 200, { id: start.provider.id, name: start.provider.name, returnTo, client });
  });

  app.post(`${UPSTREAM_SIGN_IN_PATH}/:id`, { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    reply.header('Cache-Control', 'no-store');
    const returnTo = safeReturnTo(form['return_to']);
    const client = await signInClientRecord(deps, form);
    const clientId = client?.id ?? null;
    const username = typeof form['username'] === 'string' ? form['username'] : '';
    const password = typeof form['password'] === 'string' ? form['password'] : '';
    const known = cookieNames(deps.config).knownBrowser;
    const id = params(request).id;
    const browser = browserOf(deps, request, reply);
    const result = await signInWithDirectory(forRequest(deps, request), browser, id, {
      username,
      password,
      browserToken: request.cookies[known] ?? null,
      clientId,
    });
    const provider = await deps.store.identityProviders.get(id);
    const { t } = pages.ui(request);
    const again = (status: number, error: string) =>
      provider
        ? directoryPage(request, reply, status, { id, name: provider.name, returnTo, client, error, username: username.slice(0, 256) })
        : refused(request, reply, 'unknown_provider', null, { returnTo, clientId });
    switch (result.kind) {
      case 'wrong':
        return again(401, t.text('signIn.error.incorrect'));
      case 'busy':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return again(429, t.text('signIn.error.busy', { seconds: result.retryAfterSeconds }));
      case 'limited':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return again(
          429,
          t.text(result.scope === 'user-address' ? 'signIn.error.limitedUser' : 'signIn.error.limitedAddress', {
            minutes: Math.ceil(result.retryAfterSeconds / 60),
          }),
        );
      case 'refused':
        return refused(request, reply, result.reason, result.provider, { returnTo, clientId });
      default:
        if (deps.config.signIn.goodRecordSeconds > 0)
          cookiePort(deps.config, request, reply).set(known, result.browserToken, deps.config.signIn.goodRecordSeconds);
        if (result.kind === 'signed-in') return reply.redirect(returnTo, 303);
        await allowSignInTarget(deps, reply, clientId);
        return pages.send(reply, 200, secondFactorPage(pages.ui(request), { csrf: csrfToken(deps.config, request, reply), returnTo, clientId }));
    }
  });

  app.get(`${UPSTREAM_SIGN_IN_PATH}/:id/callback`, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const callback = new URL(request.url, deps.config.issuer);
    const outcome = await finishUpstream(forRequest(deps, request), browserOf(deps, request, reply), params(request).id, callback);
    if (outcome.kind === 'refused') return refused(request, reply, outcome.reason, outcome.provider, outcome.continuation);
    const { returnTo, clientId } = outcome.continuation;
    if (outcome.kind === 'signed-in') return pages.send(reply, 200, signedInPage(pages.ui(request), safeReturnTo(returnTo)));
    await allowSignInTarget(deps, reply, clientId);
    return pages.send(
      reply,
      200,
      secondFactorPage(pages.ui(request), { csrf: csrfToken(deps.config, request, reply), returnTo: safeReturnTo(returnTo), clientId }),
    );
  });
};

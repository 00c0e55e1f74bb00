import type { FastifyPluginAsync } from 'fastify';
import { FORGOT_PASSWORD_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { requestRecovery } from '../flows/recovery.ts';
import { forgotPasswordPage, forgotSentPage } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { csrfToken, safeReturnTo } from './session.ts';

/**
 * "Forgot password?" (flows/recovery.ts): the address typed, the same page after it whether
 * an account has it or not. Offered only with a mail server: without one, there are no such routes.
 */
export const recoveryRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  if (deps.mail === undefined) return;
  app.get(FORGOT_PASSWORD_PATH, { config: { page: true } }, async (request, reply) => {
    const returnTo = safeReturnTo((request.query as RawParams)['return_to']);
    return pages.send(reply, 200, forgotPasswordPage(pages.ui(request), { csrf: csrfToken(deps.config, request, reply), returnTo }));
  });

  app.post(FORGOT_PASSWORD_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const returnTo = safeReturnTo(form['return_to']);
    const typed = typeof form['email'] === 'string' ? form['email'].slice(0, 320) : '';
    const ui = pages.ui(request);
    const result = await requestRecovery(forRequest(deps, request), { email: typed, ip: request.ip, locale: ui.t.locale });
    const again = (status: number, error: string) =>
      pages.send(reply, status, forgotPasswordPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, email: typed, error }));
    switch (result.kind) {
      case 'unavailable':
        return pages.send(reply, 404, forgotPasswordPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo }));
      case 'invalid':
        return again(400, ui.t.text('forgot.invalid'));
      case 'limited':
        reply.header('Retry-After', String(result.retryAfterSeconds));
        return again(429, ui.t.text('forgot.busy', { minutes: Math.ceil(result.retryAfterSeconds / 60) }));
      case 'sent':
        return pages.send(reply, 200, forgotSentPage(ui, { email: result.email, minutes: Math.round(deps.config.recovery.linkTtlSeconds / 60), returnTo }));
    }
  });
};

import type { FastifyPluginAsync } from 'fastify';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { RESET_PASSWORD_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { findResetLink, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, resetPassword } from '../flows/users.ts';
import { resetDonePage, resetPasswordPage } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { csrfToken } from './session.ts';

function single(params: RawParams, name: string): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, 256) : '';
}

/**
 * The page a reset link (`tessera user reset-link`) leads to: the person sets a new
 * password; the link then stops working and every session of theirs ends, and the apps that
 * received an ID token in one are sent a logout token.
 */
export const passwordRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  app.get(RESET_PASSWORD_PATH, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store').type('text/html; charset=utf-8');
    const token = single(request.query as RawParams, 'token');
    const link = await findResetLink(deps, token);
    const user = link ? await deps.store.users.get(link.userId) : null;
    const ui = pages.ui(request, { user: user?.locale });
    if (!user || user.disabled) return reply.status(400).send(resetDonePage(ui, false));
    return reply.send(resetPasswordPage(ui, { csrf: csrfToken(deps.config, request, reply), token, username: user.username }));
  });

  app.post(RESET_PASSWORD_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    reply.header('Cache-Control', 'no-store').type('text/html; charset=utf-8');
    const token = single(form, 'token');
    const password = typeof form['new_password'] === 'string' ? form['new_password'] : '';
    const result = await resetPassword(forRequest(deps, request), token, password, request.ip);
    const ui = pages.ui(request);
    if (result.kind === 'invalid_link') return reply.status(400).send(resetDonePage(ui, false));
    if (result.kind === 'invalid' || result.kind === 'busy') {
      const link = await findResetLink(deps, token);
      const user = link ? await deps.store.users.get(link.userId) : null;
      if (!user) return reply.status(400).send(resetDonePage(ui, false));
      const resetError = () => {
        if (result.kind === 'busy') return ui.t.text('reset.busy', { seconds: result.retryAfterSeconds });
        return password.length < MIN_PASSWORD_LENGTH
          ? ui.t.text('reset.tooShort', { min: MIN_PASSWORD_LENGTH })
          : ui.t.text('reset.tooLong', { max: MAX_PASSWORD_LENGTH });
      };
      if (result.kind === 'busy') reply.header('Retry-After', String(result.retryAfterSeconds));
      return reply.status(result.kind === 'busy' ? 429 : 400).send(
        resetPasswordPage(ui, {
          csrf: csrfToken(deps.config, request, reply),
          token,
          username: user.username,
          error: resetError(),
        }),
      );
    }
    // Every session of theirs ended (a stolen one among them): the apps are told.
    await sendLogoutTokens(deps, result.endedSessions, request.log);
    return reply.send(resetDonePage(ui, true, result.waysInRemoved !== null));
  });
};

import type { FastifyPluginAsync } from 'fastify';
import { INVITATION_PATH, SIGN_IN_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { acceptInvitation, findInvitation } from '../flows/invitation.ts';
import { invitationInvalidPage, invitationPage, signUpDonePage } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { csrfToken } from './session.ts';

function single(params: RawParams, name: string, max: number): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

/**
 * Where an invitation's link leads (flows/invitation.ts): the person invited makes their
 * account, then goes to the app that invited them (the origin of its first redirect URI), or
 * to the sign-in page.
 */
export const invitationRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  app.get(INVITATION_PATH, { config: { page: true } }, async (request, reply) => {
    const token = single(request.query as RawParams, 'token', 256);
    const invitation = await findInvitation(deps, token);
    const ui = pages.ui(request);
    if (invitation === null) return pages.send(reply, 400, invitationInvalidPage(ui));
    return pages.send(reply, 200, invitationPage(ui, { csrf: csrfToken(deps.config, request, reply), token, email: invitation.email }));
  });

  app.post(INVITATION_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const token = single(form, 'token', 256);
    const values = { username: single(form, 'username', 256), name: single(form, 'name', 512) };
    const ui = pages.ui(request);
    const result = await acceptInvitation(forRequest(deps, request), {
      token,
      ...values,
      password: single(form, 'password', 2048),
      ip: request.ip,
      locale: ui.t.locale,
    });
    if (result.kind === 'invalid_link') return pages.send(reply, 400, invitationInvalidPage(ui));
    if (result.kind !== 'done') {
      const invitation = await findInvitation(deps, token);
      if (invitation === null) return pages.send(reply, 400, invitationInvalidPage(ui));
      const error =
        result.kind === 'taken'
          ? { field: 'username' as const, text: ui.t.text('signUp.error.taken') }
          : result.kind === 'busy'
            ? { field: null, text: ui.t.text('reset.busy', { seconds: result.retryAfterSeconds }) }
            : {
                field: result.field,
                text: ui.t.text(
                  result.field === 'username' ? 'signUp.error.username' : result.field === 'name' ? 'signUp.error.name' : 'signUp.error.password',
                ),
              };
      const status = result.kind === 'taken' ? 409 : result.kind === 'busy' ? 429 : 400;
      return pages.send(reply, status, invitationPage(ui, { csrf: csrfToken(deps.config, request, reply), token, email: invitation.email, values, error }));
    }
    const client = result.clientId === null ? null : await deps.store.clients.get(result.clientId);
    const home = client?.redirectUris[0] ? new URL(client.redirectUris[0]).origin : null;
    const next = home !== null && home !== 'null' ? home : `${SIGN_IN_PATH}?${new URLSearchParams({ return_to: '/account' }).toString()}`;
    return pages.send(reply, 200, signUpDonePage(ui, { kind: 'done', username: result.user.username, returnTo: next }));
  });
};

import type { FastifyPluginAsync } from 'fastify';
import { INVITATION_PASSKEY_OPTIONS_PATH, INVITATION_PATH, SIGN_IN_PATH } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { acceptInvitation, findInvitation, invitationPasskeyOptions, invitationPasskeysOffered } from '../flows/invitation.ts';
import { invitationInvalidPage, invitationPage, signUpDonePage, type Ui } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { ceremonyBrowser } from './passkeys.ts';
import { csrfToken } from './session.ts';
import { passkeyAnswer } from './sign-up.ts';

function single(params: RawParams, name: string, max: number): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

function fieldError(ui: Ui, field: 'username' | 'name' | 'password'): string {
  return ui.t.text(field === 'username' ? 'signUp.error.username' : field === 'name' ? 'signUp.error.name' : 'signUp.error.password');
}

/**
 * Where an invitation's link leads (flows/invitation.ts): the person invited makes their
 * account, with a passkey (where the issuer allows passkeys and the browser can) or a
 * password, then goes to the app that invited them (the origin of its first redirect URI), or
 * to the sign-in page.
 */
export const invitationRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost, passkeyCeremony }) => {
  const passkeys = invitationPasskeysOffered(deps);

  app.get(INVITATION_PATH, { config: { page: true } }, async (request, reply) => {
    const token = single(request.query as RawParams, 'token', 256);
    const invitation = await findInvitation(deps, token);
    const ui = pages.ui(request);
    if (invitation === null) return pages.send(reply, 400, invitationInvalidPage(ui));
    return pages.send(reply, 200, invitationPage(ui, { csrf: csrfToken(deps.config, request, reply), token, email: invitation.email, passkeys }));
  });

  // The options of the passkey the account is made with, for the fields typed so far; a field
  // refused is said as the form would say it, in JSON, for the page's script to show.
  if (passkeys) {
    app.post(INVITATION_PASSKEY_OPTIONS_PATH, { preHandler: [formPost, passkeyCeremony] }, async (request, reply) => {
      const form = rawForm(request);
      const input = { token: single(form, 'token', 256), username: single(form, 'username', 256), name: single(form, 'name', 512) };
      const result = await invitationPasskeyOptions(forRequest(deps, request), input, ceremonyBrowser(deps.config, request));
      const ui = pages.ui(request);
      reply.header('Cache-Control', 'no-store').type('application/json; charset=utf-8');
      switch (result.kind) {
        case 'closed':
          return reply.callNotFound();
        case 'invalid_link':
          return reply.status(400).send({ field: null, error: ui.t.text('invitation.invalid.text') });
        case 'invalid':
          return reply.status(400).send({ field: result.field, error: fieldError(ui, result.field) });
        case 'taken':
          return reply.status(409).send({ field: 'username', error: ui.t.text('signUp.error.taken') });
        case 'options':
          return reply.send(result.options);
      }
    });
  }

  app.post(INVITATION_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const token = single(form, 'token', 256);
    const values = { username: single(form, 'username', 256), name: single(form, 'name', 512) };
    const ui = pages.ui(request);
    const result = await acceptInvitation(forRequest(deps, request), {
      token,
      ...values,
      password: single(form, 'password', 2048),
      passkey: passkeyAnswer(form, ceremonyBrowser(deps.config, request), request.headers['user-agent']),
      ip: request.ip,
      locale: ui.t.locale,
    });
    if (result.kind === 'invalid_link') return pages.send(reply, 400, invitationInvalidPage(ui));
    if (result.kind !== 'done') {
      const invitation = await findInvitation(deps, token);
      if (invitation === null) return pages.send(reply, 400, invitationInvalidPage(ui));
      if (result.kind === 'passkey' && result.reason !== undefined) request.log.info({ reason: result.reason }, 'invitation passkey refused');
      const error =
        result.kind === 'taken'
          ? { field: 'username' as const, text: ui.t.text('signUp.error.taken') }
          : result.kind === 'busy'
            ? { field: null, text: ui.t.text('reset.busy', { seconds: result.retryAfterSeconds }) }
            : result.kind === 'invalid'
              ? { field: result.field, text: fieldError(ui, result.field) }
              : { field: null, text: ui.t.text('signUp.error.passkey') };
      const status = result.kind === 'taken' ? 409 : result.kind === 'busy' ? 429 : 400;
      return pages.send(
        reply,
        status,
        invitationPage(ui, { csrf: csrfToken(deps.config, request, reply), token, email: invitation.email, values, error, passkeys }),
      );
    }
    const client = result.clientId === null ? null : await deps.store.clients.get(result.clientId);
    const home = client?.redirectUris[0] ? new URL(client.redirectUris[0]).origin : null;
    const next = home !== null && home !== 'null' ? home : `${SIGN_IN_PATH}?${new URLSearchParams({ return_to: '/account' }).toString()}`;
    return pages.send(reply, 200, signUpDonePage(ui, { kind: 'done', username: result.user.username, returnTo: next }));
  });
};

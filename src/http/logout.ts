import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RawParams } from '../core/protocol.ts';
import { checkEndSession, postLogoutRedirect, type AfterLogout } from '../flows/logout/end-session.ts';
import { endSession } from '../flows/session/session.ts';
import { logoutConfirmPage, signedOutPage } from '../ui/logout.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { END_SESSION_CONFIRM_PATH, END_SESSION_PATH } from '../core/endpoints.ts';
import { sendError } from './errors.ts';
import { rawForm } from './form.ts';
import { samlLogoutKit } from './saml-logout.ts';
import { allowFormTarget } from './security.ts';
import { browserOf, csrfToken, signedInUser } from './session.ts';

/**
 * The end-session endpoint (RP-Initiated Logout 1.0): an app sends the browser here, by GET
 * or by a form POST, to sign the person out; a confirmation page stands in front of every
 * sign-out the request cannot prove it may make.
 */
export const logoutRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  const samlLogout = samlLogoutKit(deps, pages);
  /** Signs the browser out for the app the request names (if any), then goes where it asked. */
  async function signOut(request: FastifyRequest, reply: FastifyReply, after: AfterLogout): Promise<FastifyReply> {
    const ended = await endSession(deps, browserOf(deps, request, reply), 'rp', after.client?.id ?? null);
    const target = postLogoutRedirect(after);
    // The SAML SPs of the session first (SAML Profiles §4.4.3.3), each by the browser, then on.
    const saml =
      ended === null ? null : await samlLogout.begin(request, reply, [ended.sid], target === null ? { kind: 'page' } : { kind: 'redirect', url: target });
    if (saml !== null) return saml;
    if (target !== null) return reply.redirect(target, 303);
    return pages.send(reply, 200, signedOutPage(pages.ui(request)));
  }

  async function endSessionRequest(request: FastifyRequest, reply: FastifyReply, params: RawParams) {
    reply.header('Cache-Control', 'no-store');
    const signedIn = await signedInUser(deps, request);
    const step = await checkEndSession(deps, params, signedIn?.session ?? null, false);
    if (step.kind === 'error') return sendError(request, reply, step.error);
    if (step.kind === 'end') return signOut(request, reply, step.after);
    const { after } = step;
    const fields: Record<string, string> = {};
    if (after.client) fields['client_id'] = after.client.id;
    if (after.redirectUri !== null) {
      fields['post_logout_redirect_uri'] = after.redirectUri;
      allowFormTarget(reply, after.redirectUri);
    }
    if (after.state !== null) fields['state'] = after.state;
    return reply.type('text/html; charset=utf-8').send(
      logoutConfirmPage(pages.ui(request, { user: signedIn?.user.locale }), {
        csrf: csrfToken(deps.config, request, reply),
        clientName: after.client?.name ?? null,
        fields,
        signedInAs: signedIn ? (signedIn.user.name ?? signedIn.user.username) : null,
      }),
    );
  }

  app.get(END_SESSION_PATH, { config: { page: true } }, (request, reply) => endSessionRequest(request, reply, request.query as RawParams));
  // §2: "OPs MUST support the use of the HTTP GET and POST methods"; an app's form post
  // carries no CSRF token of ours, so it is treated exactly as the GET.
  app.post(END_SESSION_PATH, { config: { page: true } }, (request, reply) => endSessionRequest(request, reply, rawForm(request)));

  app.post(END_SESSION_CONFIRM_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const form = rawForm(request);
    const params = Object.fromEntries(Object.entries(form).filter(([name]) => ['client_id', 'post_logout_redirect_uri', 'state'].includes(name)));
    const step = await checkEndSession(deps, params, null, true);
    if (step.kind === 'error') return sendError(request, reply, step.error);
    return signOut(request, reply, step.after);
  });
};

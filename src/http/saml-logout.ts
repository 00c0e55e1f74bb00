/**
 * Single logout to the SAML SPs of a session that ended in this browser (flows/saml/single-logout.ts):
 * what every door that signs a person out (the OpenID Connect end-session endpoint, the
 * account page's sign-out and "Sign out everywhere", an SP's own LogoutRequest) calls once
 * the session has ended, to send the browser through each SP's SingleLogoutService before it
 * goes where the sign-out was to end.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { samlEndpoints } from '../core/endpoints.ts';
import { beginSingleLogout, type LogoutEnd, type LogoutStep, type SingleLogoutDeps } from '../flows/saml/single-logout.ts';
import { logoutResponse, STATUS, type OutgoingMessage } from '../flows/saml/response.ts';
import { signingCertificate } from '../tokens/certificate.ts';
import { formPostPage } from '../ui/form-post.ts';
import { signedOutPage, singleLogoutPage } from '../ui/logout.ts';
import type { AppDeps } from './deps.ts';
import { forRequest } from './deps.ts';
import type { Pages } from './page.ts';
import { formPostPolicy } from './security.ts';

export interface SamlLogoutKit {
  /** The deps of the single logout flow, now. */
  flowDeps(): Promise<SingleLogoutDeps>;
  /**
   * Once sessions `sids` ended in this browser: the browser is sent to the first of their SAML
   * SPs with a LogoutRequest (null: none takes part in single logout, and the caller goes on
   * as it would have). `except`: the SP whose own LogoutRequest ended them.
   */
  begin(request: FastifyRequest, reply: FastifyReply, sids: readonly string[], end: LogoutEnd, except?: string | null): Promise<FastifyReply | null>;
  /** Goes on with `step`: to the next SP, or to where the logout ends, each by a page of ours (singleLogoutPage). */
  follow(request: FastifyRequest, reply: FastifyReply, step: LogoutStep): Promise<FastifyReply>;
  /**
   * Where a logout ends, with the status an SP that started it is answered with. `byPage`:
   * a page of ours goes there, not a redirect (a step of a logout through several SPs).
   */
  finish(request: FastifyRequest, reply: FastifyReply, end: LogoutEnd, status: string, byPage?: boolean): Promise<FastifyReply>;
  /**
   * Sends a message to an SP: a redirect (or, `byPage`, a page of ours that goes there), or a
   * page whose form the browser posts at once (SAML Bindings §3.5).
   */
  send(request: FastifyRequest, reply: FastifyReply, message: OutgoingMessage, byPage?: boolean): FastifyReply;
}

export function samlLogoutKit(deps: AppDeps, pages: Pages): SamlLogoutKit {
  const idp = samlEndpoints(deps.config.issuer).metadata;
  const kit: SamlLogoutKit = {
    async flowDeps() {
      return {
        store: deps.store,
        idp,
        now: deps.clock.now(),
        signer: await signingCertificate(deps.keys, deps.config.issuer),
        lifetime: deps.config.saml.requestLifetime,
      };
    },

    async begin(request, reply, sids, end, except = null) {
      if (sids.length === 0) return null;
      const step = await beginSingleLogout(await kit.flowDeps(), sids, end, except);
      return step.kind === 'done' ? null : kit.follow(request, reply, step);
    },

    async follow(request, reply, step) {
      if (step.kind === 'done') return kit.finish(request, reply, step.end, step.partial ? STATUS.partialLogout : STATUS.success, true);
      await forRequest(deps, request).events.emit({ type: 'saml.logout_requested', detail: { entity_id: step.sp.entityId, binding: step.sp.sloBinding } });
      return kit.send(request, reply, step.message, true);
    },

    async finish(request, reply, end, status, byPage = false) {
      reply.header('Cache-Control', 'no-store');
      switch (end.kind) {
        case 'page':
          return pages.send(reply, 200, signedOutPage(pages.ui(request)));
        case 'redirect':
          return byPage ? pages.send(reply, 200, singleLogoutPage(pages.ui(request), end.url)) : reply.redirect(end.url, 303);
        case 'saml': {
          const sp = await deps.store.samlServiceProviders.get(end.sp);
          // The SP that asked was removed meanwhile: nobody to answer.
          if (sp === null || sp.sloUrl === null) return pages.send(reply, 200, signedOutPage(pages.ui(request)));
          const message = logoutResponse(
            { idp, sloUrl: sp.sloUrl, binding: sp.sloBinding, inResponseTo: end.inResponseTo, now: deps.clock.now(), status, relayState: end.relayState },
            await signingCertificate(deps.keys, deps.config.issuer),
          );
          return kit.send(request, reply, message, byPage);
        }
      }
    },

    send(request, reply, message, byPage = false) {
      reply.header('Cache-Control', 'no-store');
      if (message.binding === 'redirect')
        return byPage ? pages.send(reply, 200, singleLogoutPage(pages.ui(request), message.url)) : reply.redirect(message.url, 303);
      // A LogoutRequest is answered with a LogoutResponse back here (a LogoutResponse is not answered).
      reply.header('Content-Security-Policy', formPostPolicy(message.url, 'SAMLRequest' in message.params));
      return reply.type('text/html; charset=utf-8').send(formPostPage(pages.ui(request), { redirectUri: message.url, params: message.params }));
    },
  };
  return kit;
}

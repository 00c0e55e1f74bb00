import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost } from '../core/networks.ts';
import { accountRoutes } from './account.ts';
import { authorizeRoutes } from './authorize.ts';
import { browserRouteOptions } from './browser-kit.ts';
import { consoleRoutes } from './console/index.ts';
import type { AppDeps } from './deps.ts';
import { deviceVerificationRoutes } from './device-verification.ts';
import { logoutRoutes } from './logout.ts';
import { passkeyRoutes } from './passkeys.ts';
import { passwordRoutes } from './password.ts';
import { recoveryRoutes } from './recovery.ts';
import { signUpRoutes } from './sign-up.ts';
import { invitationRoutes } from './invitation.ts';
import { secondFactorRoutes } from './second-factor.ts';
import { signInRoutes } from './sign-in.ts';
import { upstreamRoutes } from './upstream.ts';
import { samlRoutes } from './saml.ts';
import { named } from './plugin-name.ts';

/**
 * The pages a person signs in, signs out and looks after their account on, and those that
 * lead there (the authorization endpoint's, the device verification's), as one
 * encapsulated plugin: each route parses, calls a flow (flows/session/ and the others), and
 * answers with a page (the operator console's too, console.ts); they share the page helper bound to the site, the CSRF check of
 * every form post, and the signed-in pre-handler (browser-kit.ts).
 */
export const browserRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const options = browserRouteOptions(deps);
  app.addHook('onRequest', toIssuerHost(deps.config.issuer));
  for (const routes of [
    signInRoutes,
    upstreamRoutes,
    secondFactorRoutes,
    passkeyRoutes,
    accountRoutes,
    passwordRoutes,
    recoveryRoutes,
    signUpRoutes,
    invitationRoutes,
    logoutRoutes,
    authorizeRoutes,
    samlRoutes,
    deviceVerificationRoutes,
    consoleRoutes,
  ])
    await app.register(named(routes), options);
};

/**
 * A page opened at another loopback name than the issuer's (`127.0.0.1` where the issuer is
 * `localhost`) is sent to the issuer's, before anyone types a password into a form whose
 * post would be refused as coming from another site (session.ts checkCsrf) and whose
 * cookies the issuer's host never sees. Only GET and HEAD move; posts stay refused. Only
 * between loopback names: a proxy in front of a public issuer may pass its own Host, and
 * sending that request to the issuer would send it round again.
 */
function toIssuerHost(issuer: string): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const ours = new URL(issuer);
  const loopbackIssuer = ours.protocol === 'http:' && isLoopbackHost(ours.hostname);
  return async (request, reply) => {
    if (!loopbackIssuer || (request.method !== 'GET' && request.method !== 'HEAD')) return;
    const hostname = request.hostname;
    if (hostname === ours.hostname || !isLoopbackHost(hostname) || !request.url.startsWith('/')) return;
    // Appended, not resolved: a target of `//elsewhere/` stays a path on the issuer's host.
    await reply.header('Cache-Control', 'no-store').redirect(`${ours.origin}${request.url}`, 307);
  };
}

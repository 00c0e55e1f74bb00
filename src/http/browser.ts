import type { FastifyPluginAsync } from 'fastify';
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
import { secondFactorRoutes } from './second-factor.ts';
import { signInRoutes } from './sign-in.ts';
import { upstreamRoutes } from './upstream.ts';

/**
 * The pages a person signs in, signs out and looks after their account on, and those that
 * lead there (the authorization endpoint's, the device verification's), as one
 * encapsulated plugin: each route parses, calls a flow (flows/session/ and the others), and
 * answers with a page (the operator console's too, console.ts); they share the page helper bound to the site, the CSRF check of
 * every form post, and the signed-in pre-handler (browser-kit.ts).
 */
export const browserRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const options = browserRouteOptions(deps);
  await app.register(signInRoutes, options);
  await app.register(upstreamRoutes, options);
  await app.register(secondFactorRoutes, options);
  await app.register(passkeyRoutes, options);
  await app.register(accountRoutes, options);
  await app.register(passwordRoutes, options);
  await app.register(recoveryRoutes, options);
  await app.register(signUpRoutes, options);
  await app.register(logoutRoutes, options);
  await app.register(authorizeRoutes, options);
  await app.register(deviceVerificationRoutes, options);
  await app.register(consoleRoutes, options);
};

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RawParams } from '../core/protocol.ts';
import { redirectUriAfterSignIn } from '../flows/authorization-code/request.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { OncePerWindow } from '../flows/attempts.ts';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { sessionUser, signIn } from '../flows/sign-in.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import { signInPage } from '../ui/pages.ts';
import { signInClient } from './audit.ts';
import { pageUi } from './locale.ts';
import { forRequest, type AppDeps } from './deps.ts';
import { rawForm } from './form.ts';
import { completePasswordSignIn } from './second-factor.ts';
import { allowFormTarget } from './security.ts';
import { checkCsrf, csrfToken, currentSession, endSession, safeReturnTo } from './session.ts';

/** The signed-in user, or null when there is no live session or the account is disabled. */
export async function signedInUser(deps: AppDeps, request: FastifyRequest): Promise<{ session: SessionRecord; user: UserRecord } | null> {
  const session = await currentSession(deps, request);
  if (!session) return null;
  const user = await sessionUser(deps, session);
  return user ? { session, user } : null;
}

/**
 * Signs the browser out: its session ends, its cookie is cleared, and the clients that
 * received an ID token in it are sent logout tokens (in the background).
 */
export async function signOut(deps: AppDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const ended = await endSession(deps, request, reply);
  if (ended) await sendLogoutTokens(deps, [ended], request.log);
}

export function renderSignIn(deps: AppDeps, request: FastifyRequest, reply: FastifyReply, returnTo: string, clientName?: string, uiLocales?: string | null): FastifyReply {
  return reply
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(signInPage(pageUi(deps.config.site, request, { uiLocales }), { csrf: csrfToken(deps.config, request, reply), returnTo, clientName, passkeys: passkeysAvailable(deps.config.issuer) }));
}

/** The sign-in form every flow leads to, and signing out. */
export const signInRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  // One log line per address and limit per window, however many requests it refuses.
  const refusalLog = new OncePerWindow(deps.config.signIn.windowSeconds * 1000);
  app.get('/login', { config: { page: true } }, async (request, reply) => {
    const returnTo = safeReturnTo((request.query as RawParams)['return_to']);
    if (await signedInUser(deps, request)) return reply.redirect(returnTo, 303);
    return renderSignIn(deps, request, reply, returnTo);
  });

  app.post('/login', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    reply.header('Cache-Control', 'no-store');
    const returnTo = safeReturnTo(form['return_to']);
    const rawUsername = typeof form['username'] === 'string' ? form['username'] : '';
    const password = typeof form['password'] === 'string' ? form['password'] : '';
    const ui = pageUi(deps.config.site, request);
    const { t } = ui;
    const page = (status: number, error: string) =>
      reply
        .status(status)
        .type('text/html; charset=utf-8')
        .send(signInPage(ui, { csrf: csrfToken(deps.config, request, reply), returnTo, error, username: rawUsername.slice(0, 256), passkeys: passkeysAvailable(deps.config.issuer) }));

    const result = await signIn(forRequest(deps, request), { username: rawUsername, password, ip: request.ip, clientId: await signInClient(deps, returnTo) });
    if (result.kind !== 'signed-in') {
      // The page is shown again; its next post may go on to the client (see authorize.ts).
      const target = await redirectUriAfterSignIn(deps.store, returnTo);
      if (target !== null) allowFormTarget(reply, target);
    }
    if (result.kind === 'refused') return page(401, t.text('signIn.error.incorrect'));
    if (result.kind === 'busy') {
      reply.header('Retry-After', String(result.retryAfterSeconds));
      return page(429, t.text('signIn.error.busy', { seconds: result.retryAfterSeconds }));
    }
    if (result.kind === 'limited') {
      if (refusalLog.first(`${result.scope} ${request.ip}`, deps.clock.now())) {
        request.log.warn({ ip: request.ip, limit: result.scope }, 'sign-in attempts refused: too many wrong passwords');
      }
      const minutes = Math.ceil(result.retryAfterSeconds / 60);
      reply.header('Retry-After', String(result.retryAfterSeconds));
      return page(
        429,
        t.text(result.scope === 'user-address' ? 'signIn.error.limitedUser' : 'signIn.error.limitedAddress', { minutes }),
      );
    }
    // A person with one-time codes on is asked for one next; anyone else is signed in.
    return completePasswordSignIn(deps, request, reply, result.user, returnTo);
  });

  app.post('/logout', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const session = await currentSession(deps, request);
    await signOut(deps, request, reply);
    if (session) await forRequest(deps, request).events.emit({ type: 'logout', userId: session.userId });
    return reply.redirect(safeReturnTo(form['return_to']), 303);
  });
};

import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { decoyPasswordHash, verifyPassword } from '../core/password.ts';
import type { RawParams } from '../core/protocol.ts';
import { normalizeUsername } from '../core/username.ts';
import { Attempt } from '../flows/attempts.ts';
import { approveAuthorization, denyAuthorization } from '../flows/authorization-code/approve.ts';
import { checkAuthorizationRequest, redirectToClient } from '../flows/authorization-code/request.ts';
import { forRequest, type AppDeps } from './deps.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import { html } from '../ui/html.ts';
import { consentPage, signInPage } from '../ui/pages.ts';
import { sendError } from './errors.ts';
import { rawForm } from './form.ts';
import { allowFormTarget } from './security.ts';
import { checkCsrf, csrfToken, currentSession, endSession, safeReturnTo, startSession } from './session.ts';

/** Sign-in attempts allowed per username, and per client address, in one window. */
const SIGN_IN_LIMIT = { perUser: 10, perAddress: 100, windowMs: 15 * 60_000 };

/** The request's single-valued parameters, to carry through a form or a URL unchanged. */
function singleValues(params: RawParams, omit: readonly string[] = []): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string' && !omit.includes(name)) result[name] = value;
  }
  return result;
}

function redirectTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.host || url.protocol;
}

function authorizeUrl(params: Record<string, string>): string {
  return `/oauth/authorize?${new URLSearchParams(params).toString()}`;
}

/** The signed-in user, or null when there is no live session or the account is disabled. */
export async function signedInUser(deps: AppDeps, request: FastifyRequest): Promise<{ session: SessionRecord; user: UserRecord } | null> {
  const session = await currentSession(deps, request);
  if (!session) return null;
  const user = await deps.store.users.get(session.userId);
  return user && !user.disabled ? { session, user } : null;
}

export function renderSignIn(deps: AppDeps, request: FastifyRequest, reply: FastifyReply, returnTo: string, clientName?: string): FastifyReply {
  return reply
    .header('Cache-Control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(signInPage(deps.config.site, { csrf: csrfToken(deps.config, request, reply), returnTo, clientName }));
}

/**
 * The authorization endpoint (RFC 6749 §3.1, §4.1.1-4.1.2), the sign-in form it leads to,
 * and the approval it ends with.
 */
export const authorizeRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const issuer = deps.config.issuer;

  async function handle(request: FastifyRequest, reply: FastifyReply, params: RawParams, decision: string | null) {
    reply.header('Cache-Control', 'no-store');
    const check = await checkAuthorizationRequest(deps.store, params);
    if (check.kind === 'fatal') return sendError(request, reply, check.error);
    if (check.kind === 'redirect') {
      const { error, redirectUri, state } = check;
      return reply.redirect(redirectToClient(redirectUri, issuer, state, { error: error.code, error_description: error.description }), 303);
    }
    const authorization = check.request;
    const fail = (code: 'login_required' | 'consent_required', description: string) =>
      reply.redirect(redirectToClient(authorization.redirectUri, issuer, authorization.state, { error: code, error_description: description }), 303);

    const signedIn = await signedInUser(deps, request);
    const now = deps.clock.now();
    // OIDC Core §3.1.2.1: prompt=login and an exceeded max_age both ask for the password again.
    const stale =
      signedIn !== null &&
      decision === null &&
      (authorization.prompt === 'login' || (authorization.maxAge !== null && now - signedIn.session.authTime > authorization.maxAge * 1000));
    if (authorization.prompt === 'none') {
      // Every approval is asked for, so there is never a silent answer to give.
      return signedIn ? fail('consent_required', 'the user must approve this request') : fail('login_required', 'the user is not signed in');
    }
    if (!signedIn || stale) {
      // After signing in, come back without the parameters that asked for it.
      const returnTo = authorizeUrl(singleValues(params, ['prompt', 'max_age', 'csrf_token', 'decision']));
      return renderSignIn(deps, request, reply, returnTo, authorization.client.name);
    }

    if (decision === 'approve') return reply.redirect(await approveAuthorization(forRequest(deps, request), authorization, signedIn.session), 303);
    if (decision === 'deny') return reply.redirect(await denyAuthorization(forRequest(deps, request), authorization, signedIn.session), 303);
    if (decision !== null) return sendError(request, reply, new OAuthError('invalid_request', 'decision must be approve or deny'));

    const fields = singleValues(params, ['prompt', 'max_age']);
    allowFormTarget(reply, authorization.redirectUri);
    return reply.type('text/html; charset=utf-8').send(
      consentPage(deps.config.site, {
        csrf: csrfToken(deps.config, request, reply),
        action: '/oauth/authorize',
        fields,
        clientName: authorization.client.name,
        scopes: authorization.scope,
        signedInAs: signedIn.user.name ?? signedIn.user.username,
        returnTo: authorizeUrl(fields),
        // The address the user will be sent to, so a look-alike application name is not all
        // they have to judge by.
        details: html`<p class="muted">After you decide, you will return to <strong>${redirectTarget(authorization.redirectUri)}</strong>.</p>`,
      }),
    );
  }

  app.get('/oauth/authorize', { config: { page: true } }, (request, reply) => handle(request, reply, request.query as RawParams, null));

  app.post('/oauth/authorize', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const decision = typeof form['decision'] === 'string' ? form['decision'] : '';
    const params = Object.fromEntries(Object.entries(form).filter(([name]) => name !== 'csrf_token' && name !== 'decision'));
    return handle(request, reply, params, decision);
  });

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
    const username = normalizeUsername(rawUsername).slice(0, 256);
    const now = deps.clock.now();
    const page = (status: number, error: string) =>
      reply
        .status(status)
        .type('text/html; charset=utf-8')
        .send(signInPage(deps.config.site, { csrf: csrfToken(deps.config, request, reply), returnTo, error, username: rawUsername.slice(0, 256) }));

    const attempt = await Attempt.reserve(
      deps.store.rateLimits,
      [
        { key: `sign-in:user:${username}`, limit: SIGN_IN_LIMIT.perUser },
        { key: `sign-in:ip:${request.ip}`, limit: SIGN_IN_LIMIT.perAddress },
      ],
      SIGN_IN_LIMIT.windowMs,
      now,
    );
    const events = forRequest(deps, request).events;
    // The application the sign-in is for, when it interrupted an authorization request.
    const requested = new URLSearchParams(returnTo.split('?')[1] ?? '').get('client_id');
    const clientId = requested && requested.length <= 256 && returnTo.startsWith('/oauth/authorize?') ? ((await deps.store.clients.get(requested))?.id ?? null) : null;
    if (!attempt) {
      await events.emit({ type: 'signin.locked', username, clientId });
      return page(429, 'Too many failed sign-in attempts. Wait a few minutes, then try again.');
    }
    const user = username ? await deps.store.users.findByUsername(username) : null;
    // The password is checked even for an unknown user, so the answer takes as long either way.
    const passwordMatches = await verifyPassword(password.slice(0, 1024), user?.passwordHash ?? (await decoyPasswordHash(deps.config.passwordHash)));
    if (!user || !passwordMatches || user.disabled) {
      const reason = !user ? 'unknown_user' : !passwordMatches ? 'wrong_password' : 'disabled';
      await events.emit({ type: 'signin.failed', userId: user?.id ?? null, username, clientId, detail: { reason } });
      return page(401, 'The username or password is incorrect.');
    }
    await attempt.succeeded();
    // A new session id at every sign-in, so an id planted before sign-in is worth nothing.
    await endSession(deps, request, reply);
    await startSession(deps, reply, user.id);
    await events.emit({ type: 'signin.succeeded', userId: user.id, username: user.username, clientId });
    return reply.redirect(returnTo, 303);
  });

  app.post('/logout', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const session = await currentSession(deps, request);
    await endSession(deps, request, reply);
    if (session) await forRequest(deps, request).events.emit({ type: 'logout', userId: session.userId });
    return reply.redirect(safeReturnTo(form['return_to']), 303);
  });
};

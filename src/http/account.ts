import type { FastifyPluginAsync } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import type { AppDeps } from './deps.ts';
import type { ClientRecord } from '../store/types.ts';
import { accountPage } from '../ui/account.ts';
import { describeAccess, isOpenIdScope, ResourceCatalog } from '../flows/resources.ts';
import { accountSecurity, SECURITY_NOTICES } from './second-factor.ts';
import { signedInUser } from './sign-in.ts';
import { rawForm } from './form.ts';
import { checkCsrf, csrfToken } from './session.ts';

const SIGN_IN = `/login?return_to=${encodeURIComponent('/account')}`;

/**
 * The signed-in user's own page: every application and device they approved whose tokens
 * can still be used, each with a Revoke button that ends its grant, and with it every
 * access and refresh token issued under it.
 */
export const accountRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get('/account', { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(SIGN_IN, 303);
    const now = deps.clock.now();
    // A grant whose last tokens have all expired can do nothing more: it is not listed.
    const grants = (await deps.store.grants.listForUser(signedIn.user.id)).filter((grant) => grant.activeUntil !== null && grant.activeUntil > now);
    const clientIds = [...new Set(grants.map((grant) => grant.clientId))];
    const clients = new Map<string, ClientRecord | null>(await Promise.all(clientIds.map(async (id) => [id, await deps.store.clients.get(id)] as const)));
    const catalog = new ResourceCatalog(grants.some((grant) => !grant.scope.every(isOpenIdScope)) ? await deps.store.resources.list() : []);
    const query = request.query as Record<string, unknown>;
    const notice = query['revoked'] === '1' ? 'Access revoked. It has been signed out.' : typeof query['notice'] === 'string' ? SECURITY_NOTICES[query['notice']] : undefined;
    const csrf = csrfToken(deps.config, request, reply);
    return reply.type('text/html; charset=utf-8').send(
      accountPage({
        csrf,
        security: await accountSecurity(deps, signedIn.user, csrf),
        signedInAs: signedIn.user.name ?? signedIn.user.username,
        notice,
        connections: grants.map((grant) => ({
          grantId: grant.id,
          clientName: clients.get(grant.clientId)?.name ?? grant.clientId,
          access: describeAccess(catalog, grant.scope, grant.createdAt),
          approvedAt: grant.createdAt,
          lastUsedAt: grant.lastUsedAt,
          device: grant.device,
        })),
      }),
    );
  });

  app.post('/account/revoke', { config: { page: true } }, async (request, reply) => {
    const form = rawForm(request);
    checkCsrf(deps.config, request, form['csrf_token']);
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(SIGN_IN, 303);
    const grantId = form['grant_id'];
    const grant = typeof grantId === 'string' && grantId.length <= 256 ? await deps.store.grants.get(grantId) : null;
    // Someone else's grant is answered exactly like one that does not exist.
    if (!grant || grant.userId !== signedIn.user.id) {
      throw new OAuthError('invalid_request', 'There is no such connection on your account.', { status: 404 });
    }
    await deps.store.grants.revoke(grant.id, deps.clock.now());
    return reply.redirect('/account?revoked=1', 303);
  });
};

import type { FastifyPluginAsync } from 'fastify';
import type { AppDeps } from './deps.ts';
import { ACCOUNT_PATH, DISCOVERY_PATHS, HEALTH_PATH, HOME_PATH, READY_PATH, STYLESHEET_PATH } from '../core/endpoints.ts';
import { html } from '../ui/html.ts';
import { layout, stylesheet } from '../ui/pages.ts';
import { pageUi } from './locale.ts';

/** How long the store has to answer a readiness check. */
const READY_TIMEOUT_MS = 1000;

/** The landing page, the stylesheet, and liveness and readiness checks for load balancers. */
export const homeRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const site = deps.config.site;
  const css = stylesheet(site);
  app.get(STYLESHEET_PATH, async (_request, reply) => reply.header('Cache-Control', 'public, max-age=3600').type('text/css; charset=utf-8').send(css));

  app.get(HOME_PATH, { config: { page: true } }, async (request, reply) => {
    const ui = pageUi(site, request);
    const { t } = ui;
    return reply.type('text/html; charset=utf-8').send(
      layout(
        ui,
        t.text('home.title'),
        html`<h1>${site.name}</h1>
<p>${t.html('home.about', { site: site.name })}</p>
<p class="muted">${t.html('home.issuer', { issuer: html`<code>${deps.config.issuer}</code>` })}</p>
<p><a href="${DISCOVERY_PATHS[0]}">${t.html('home.discovery')}</a></p>
<p><a href="${ACCOUNT_PATH}">${t.html('home.account')}</a></p>`,
      ),
    );
  });

  // Liveness: the process answers. A load balancer that restarts on this must not use /readyz.
  app.get(HEALTH_PATH, async (_request, reply) => reply.header('Cache-Control', 'no-store').send({ status: 'ok' }));

  // Readiness: send this instance requests only while it can serve them: not draining, the
  // store answering within READY_TIMEOUT_MS, and signing keys at hand.
  app.get(READY_PATH, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    if (deps.readiness.draining) return reply.status(503).send({ status: 'draining' });
    const checks = Promise.all([
      deps.store.keys.listPublished(deps.clock.now()),
      deps.keys.signingKey('RS256'),
      deps.keys.signingKey(deps.config.accessTokenAlg),
    ]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), READY_TIMEOUT_MS);
    });
    try {
      const outcome = await Promise.race([checks, late]);
      if (outcome === 'late') {
        checks.catch(() => {});
        return reply.status(503).send({ status: 'unavailable', reason: 'the store did not answer within a second' });
      }
      return reply.send({ status: 'ready' });
    } catch (error) {
      request.log.warn({ err: error }, 'not ready');
      return reply.status(503).send({ status: 'unavailable', reason: 'the store or the signing keys are not available' });
    } finally {
      clearTimeout(timer);
    }
  });
};

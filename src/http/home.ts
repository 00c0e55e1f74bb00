import type { FastifyPluginAsync } from 'fastify';
import type { AppDeps } from './deps.ts';
import { html } from '../ui/html.ts';
import { layout, STYLESHEET_PATH, stylesheet } from '../ui/pages.ts';

/** The landing page, the stylesheet and a health check for load balancers. */
export const homeRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const site = deps.config.site;
  const css = stylesheet(site);
  app.get(STYLESHEET_PATH, async (_request, reply) =>
    reply.header('Cache-Control', 'public, max-age=3600').type('text/css; charset=utf-8').send(css),
  );

  app.get('/', { config: { page: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(
      layout(site, 'Home', html`<h1>${site.name}</h1>
<p>This is ${site.name}'s sign-in service (an OAuth 2.0 and OpenID Connect authorization server).</p>
<p class="muted">Issuer: <code>${deps.config.issuer}</code></p>
<p><a href="/.well-known/openid-configuration">OpenID Connect discovery document</a></p>
<p><a href="/account">Your connected apps and devices</a></p>`),
    ),
  );

  app.get('/healthz', async (_request, reply) => reply.header('Cache-Control', 'no-store').send({ status: 'ok' }));
};

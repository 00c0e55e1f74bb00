/** The console's signing keys: which sign, and rotating them. */
import type { FastifyPluginAsync } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { listKeys, rotateKeys } from '../../flows/manage/keys.ts';
import { confirmPage, keysPage, type KeyView } from '../../ui/console.ts';
import { html } from '../../ui/html.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { consoleKit, single } from './kit.ts';

export const keyPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);

  // Signing keys
  app.get(CONSOLE_PATHS.keys, page('keys'), async (request, reply) => {
    const now = deps.clock.now();
    const keys = await listKeys(deps, now);
    const state = (key: (typeof keys)[number]): KeyView['state'] => {
      if (key.expiresAt !== null && key.expiresAt <= now) return { kind: 'withdrawn' };
      if (key.activatesAt > now) return { kind: 'next', at: key.activatesAt };
      if (key.retiresAt !== null && key.retiresAt <= now) return { kind: 'retired', until: key.expiresAt };
      return { kind: 'signing' };
    };
    const f = frame(request, reply, 'keys');
    return pages.send(
      reply,
      200,
      keysPage(f, {
        keys: keys.map((key) => ({ kid: key.kid, alg: key.alg, createdAt: key.createdAt, state: state(key) })),
        rotateHref: may(request, 'keys', true) ? `${CONSOLE_PATHS.keys}/rotate` : null,
        notice: single(request.query as RawParams, 'done', 20) === 'rotated' ? f.ui.t.text('console.keys.rotated') : undefined,
      }),
    );
  });

  app.get(`${CONSOLE_PATHS.keys}/rotate`, confirm('keys'), async (request, reply) => {
    const f = frame(request, reply, 'keys');
    const { t } = f.ui;
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.keys.rotate'),
        t.text('console.keys.rotate.confirm'),
        `${CONSOLE_PATHS.keys}/rotate`,
        CONSOLE_PATHS.keys,
        html`<input type="hidden" name="return_to" value="${CONSOLE_PATHS.keys}/rotate">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.keys}/rotate`, change('keys'), async (request, reply) => {
    await rotateKeys({ ...manage(request), keys: deps.keys });
    return reply.redirect(`${CONSOLE_PATHS.keys}?done=rotated`, 303);
  });
};

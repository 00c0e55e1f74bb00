/** The admin API's audit trail (`tessera events`). */
import type { FastifyPluginAsync } from 'fastify';
import { ADMIN_PREFIX } from '../../core/endpoints.ts';
import { eventCursor, eventJson, listEvents, parseSince } from '../../flows/manage/events.ts';
import { EVENT, listOf } from './answers.ts';
import { ok, PAGE, query } from './kit.ts';
import type { AppDeps } from '../deps.ts';
import { adminRouter } from './kit.ts';

export const eventRoutes: FastifyPluginAsync<{ deps: AppDeps }> = async (app, { deps }) => {
  const route = adminRouter(app, deps);
  route({
    method: 'GET',
    url: `${ADMIN_PREFIX}/events`,
    operationId: 'listEvents',
    area: 'events',
    write: false,
    schema: {
      summary: "The audit trail, newest first, a page at a time (after: the previous page's next cursor)",
      querystring: query({
        user: { type: 'string', minLength: 1, maxLength: 256 },
        client: { type: 'string', minLength: 1, maxLength: 200 },
        type: { type: 'string', minLength: 1, maxLength: 64 },
        since: { type: 'string', minLength: 1, maxLength: 40 },
        after: { type: 'string', minLength: 1, maxLength: 200 },
        limit: PAGE.limit,
      }),
      response: ok(listOf('events', EVENT, 'cursor')),
    },
    handler: async (request, _reply, d) => {
      const q = request.query as { user?: string; client?: string; type?: string; since?: string; after?: string; limit: number };
      const events = await listEvents(d, {
        limit: q.limit,
        ...(q.user === undefined ? {} : { username: q.user }),
        ...(q.client === undefined ? {} : { clientId: q.client }),
        ...(q.type === undefined ? {} : { type: q.type }),
        ...(q.since === undefined ? {} : { since: parseSince(q.since, d.clock.now()) }),
        ...(q.after === undefined ? {} : { after: q.after }),
      });
      return { events: events.map(eventJson), next: events.length === q.limit ? eventCursor(events[events.length - 1]!) : null };
    },
  });
};

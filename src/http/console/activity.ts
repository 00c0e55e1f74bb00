/** The console's dashboard and audit trail. */
import type { FastifyPluginAsync } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import { EVENT_TYPES, type AuditEvent, type EventType } from '../../core/events.ts';
import type { RawParams } from '../../core/protocol.ts';
import { ManageError } from '../../flows/manage/errors.ts';
import { eventCounts, eventCursor, listEvents, parseSince } from '../../flows/manage/events.ts';
import { listLockouts } from '../../flows/manage/lockouts.ts';
import { dashboardPage, eventsPage } from '../../ui/console.ts';
import type { SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { consoleKit, reasonOf, single } from './kit.ts';

/** How many events a page lists. */
const EVENTS_SHOWN = 50;

const SINCE_CHOICES: readonly { readonly value: string; readonly label: MessageKey }[] = [
  { value: '1h', label: 'console.events.hour' },
  { value: '24h', label: 'console.events.day' },
  { value: '7d', label: 'console.events.week' },
];

export const activityPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, frame, eventViews } = consoleKit(app, options);

  // Dashboard: the last hour's and day's sign-ins, failures, device sign-ins and lockouts.
  app.get(CONSOLE_PATHS.dashboard, page('events'), async (request, reply) => {
    const now = deps.clock.now();
    const [counts, locked, pendingDevices] = await Promise.all([
      eventCounts(deps, now),
      listLockouts(deps, { lockedOnly: true }),
      deps.store.devices.countPending(now),
    ]);
    const count = (types: readonly EventType[]) => ({
      hour: types.reduce((sum, type) => sum + (counts.hour.get(type) ?? 0), 0),
      day: types.reduce((sum, type) => sum + (counts.day.get(type) ?? 0), 0),
    });
    return pages.send(
      reply,
      200,
      dashboardPage(frame(request, reply, 'dashboard'), {
        counts: [
          { label: 'console.dashboard.signIns', ...count(['signin.succeeded']) },
          { label: 'console.dashboard.failures', ...count(['signin.failed']) },
          { label: 'console.dashboard.deviceStarted', ...count(['device.started']) },
          { label: 'console.dashboard.deviceApproved', ...count(['device.approved']) },
          // A limit's refusals are one event per limit and window, stored when the window ends (core/events.ts).
          { label: 'console.dashboard.lockouts', ...count(['signin.locked', 'device.code_entry_locked']) },
        ],
        lockedNow: locked.length,
        pendingDevices,
      }),
    );
  });

  // Events: by user, app, type and time, a page at a time.
  app.get(CONSOLE_PATHS.events, page('events'), async (request, reply) => {
    const query = request.query as RawParams;
    const filter = {
      user: single(query, 'user', 256).trim(),
      client: single(query, 'client', 200).trim(),
      type: single(query, 'type', 64),
      since: single(query, 'since', 10),
    };
    const after = single(query, 'after', 200);
    const f = frame(request, reply, 'events');
    let events: AuditEvent[] = [];
    let error: SafeHtml | undefined;
    try {
      events = await listEvents(deps, {
        limit: EVENTS_SHOWN,
        ...(filter.user === '' ? {} : { username: filter.user }),
        ...(filter.client === '' ? {} : { clientId: filter.client }),
        ...(filter.type === '' ? {} : { type: filter.type }),
        ...(SINCE_CHOICES.some((choice) => choice.value === filter.since) ? { since: parseSince(filter.since, deps.clock.now()) } : {}),
        ...(after === '' ? {} : { after }),
      });
    } catch (caught) {
      if (!(caught instanceof ManageError)) throw caught;
      error = reasonOf(f.ui, caught);
      reply.status(400);
    }
    const older =
      events.length === EVENTS_SHOWN
        ? `${CONSOLE_PATHS.events}?${new URLSearchParams({ ...Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== '')), after: eventCursor(events[events.length - 1]!) }).toString()}`
        : null;
    return pages.send(
      reply,
      error === undefined ? 200 : 400,
      eventsPage(f, {
        action: CONSOLE_PATHS.events,
        filter,
        types: EVENT_TYPES,
        sinceChoices: SINCE_CHOICES,
        events: await eventViews(events),
        olderHref: older,
        error,
      }),
    );
  });
};

/**
 * The console's page of the Shared Signals pushes' and mail's dead letters (docs/events.md),
 * in the audit trail's section: listed, and sent again, calling the operations the command and
 * the admin API call (flows/manage/outbox.ts) with the operator's authority: reading them needs
 * the audit trail's scope, sending them again its write scope, and for mail the users' too.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { holdsAll } from '../../flows/manage/authority.ts';
import { deadLetters, replayDeadLetters } from '../../flows/manage/outbox.ts';
import { deadLettersPage } from '../../ui/console-outbox.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, single } from './kit.ts';

export const DEAD_LETTERS_PATH = `${CONSOLE_PATHS.events}/dead-letters`;
/** The dead letters of each kind the page lists at most. */
const SHOWN = 100;
const NOTICES: Readonly<Record<string, MessageKey>> = { replayed: 'console.outbox.replayed', none: 'console.webhooks.nothingToReplay' };

export const outboxPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { pages, page, change, frame, manage } = consoleKit(app, options);
  const noticeOf = (request: FastifyRequest) => NOTICES[single(request.query as RawParams, 'done', 20)];

  app.get(DEAD_LETTERS_PATH, page('events'), async (request, reply) => {
    const deps = manage(request);
    const f = frame(request, reply, 'events');
    const [streams, mail] = await Promise.all([deadLetters(deps, 'ssf', SHOWN), deadLetters(deps, 'mail', SHOWN)]);
    const done = noticeOf(request);
    return pages.send(
      reply,
      200,
      deadLettersPage(f, {
        streams: streams.map((letter) => ({
          streamId: letter.streamId,
          eventId: letter.eventId,
          eventAt: letter.eventAt,
          attempts: letter.attempts,
          lastError: letter.lastError,
        })),
        mail: mail.map((letter) => ({ id: letter.id, kind: letter.kind, queuedAt: letter.queuedAt, attempts: letter.attempts, lastError: letter.lastError })),
        // Offered only to an operator who may send both kinds again (the operation checks each).
        replayAction: holdsAll(deps.caller.scopes, ['admin:events', 'admin:users']) ? `${DEAD_LETTERS_PATH}/replay` : null,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  app.post(`${DEAD_LETTERS_PATH}/replay`, change('events'), async (request, reply) => {
    const form = rawForm(request);
    const kind = single(form, 'kind', 10) === 'ssf' ? 'ssf' : 'mail';
    const streamId = single(form, 'stream_id', 200);
    const id = single(form, 'id', 200);
    const replayed = await replayDeadLetters(manage(request), kind, streamId === '' ? null : streamId, id === '' ? null : id);
    return reply.redirect(`${DEAD_LETTERS_PATH}?done=${replayed === 0 ? 'none' : 'replayed'}`, 303);
  });
};

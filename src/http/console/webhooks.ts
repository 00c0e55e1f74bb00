/**
 * The console's webhooks (docs/events.md): the list with each one's deliveries by
 * state, the form to add one from the webhooks' field table (its signing secret shown once),
 * a webhook's dead letters sent again, and remove after a confirmation, calling the operations
 * the command and the admin API call (flows/manage/webhooks.ts) with the operator's authority:
 * adding one or sending its dead letters again needs the audit trail's scope too, and its URL
 * may not point into the server's network (flows/manage/authority.ts), as through the admin API.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { WEBHOOK_FIELDS } from '../../flows/manage/fields/webhooks.ts';
import {
  addWebhook,
  deliveryCounts,
  getWebhook,
  listDeliveries,
  listWebhooks,
  removeWebhook,
  replayDeliveries,
  type WebhookDeps,
  type WebhookInput,
} from '../../flows/manage/webhooks.ts';
import { confirmPage, shownOncePage } from '../../ui/console.ts';
import { webhookFormPage, webhookPage, webhooksPage } from '../../ui/console-webhooks.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, reasonOf, single } from './kit.ts';

export const webhookPath = (id: string) => `${CONSOLE_PATHS.webhooks}/${encodeURIComponent(id)}`;

const NONE = { pending: 0, delivered: 0, dead: 0 } as const;
/** The dead letters a webhook's page lists at most. */
const DEAD_LETTERS_SHOWN = 100;
const NOTICES: Readonly<Record<string, MessageKey>> = {
  removed: 'console.webhooks.removed',
  replayed: 'console.webhooks.replayed',
  none: 'console.webhooks.nothingToReplay',
};

export const webhookPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const webhookDeps = (request: FastifyRequest): WebhookDeps => ({ ...manage(request), secrets: deps.secrets });
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const noticeOf = (request: FastifyRequest) => NOTICES[single(request.query as RawParams, 'done', 20)];

  app.get(CONSOLE_PATHS.webhooks, page('webhooks'), async (request, reply) => {
    const f = frame(request, reply, 'webhooks');
    const counts = await deliveryCounts(deps);
    const done = noticeOf(request);
    return pages.send(
      reply,
      200,
      webhooksPage(f, {
        webhooks: (await listWebhooks(deps)).map((webhook) => ({
          url: webhook.url,
          events: webhook.events,
          counts: counts.get(webhook.id) ?? NONE,
          href: webhookPath(webhook.id),
        })),
        addHref: may(request, 'webhooks', true) ? `${CONSOLE_PATHS.webhooks}/new` : null,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: FormValues, error?: SafeHtml) =>
    pages.send(
      reply,
      status,
      webhookFormPage(frame(request, reply, 'webhooks'), { action: CONSOLE_PATHS.webhooks, values, cancel: CONSOLE_PATHS.webhooks, error }),
    );

  app.get(`${CONSOLE_PATHS.webhooks}/new`, confirm('webhooks'), async (request, reply) => newForm(request, reply, 200, formValues(WEBHOOK_FIELDS, {})));

  app.post(CONSOLE_PATHS.webhooks, change('webhooks'), async (request, reply) => {
    const values = postedValues(WEBHOOK_FIELDS, rawForm(request));
    // As `webhook add`: a field left empty is not given, and the operation names it as missing.
    const given = formKeys(WEBHOOK_FIELDS).filter((key) => !sameValue(values[key], '') && !sameValue(values[key], []));
    let added;
    try {
      added = await addWebhook(webhookDeps(request), inputOf(WEBHOOK_FIELDS, values, given) as WebhookInput);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'webhooks').ui, error));
    }
    const f = frame(request, reply, 'webhooks');
    const { t } = f.ui;
    return pages.send(
      reply,
      201,
      shownOncePage(f, {
        title: t.text('console.webhooks.added'),
        lines: [
          { label: t.text('console.webhook.url'), value: added.webhook.url },
          { label: t.text('console.webhook.secret'), value: added.secret },
        ],
        text: t.text('console.webhook.secretOnce'),
        back: webhookPath(added.webhook.id),
      }),
    );
  });

  app.get(`${CONSOLE_PATHS.webhooks}/:id`, page('webhooks'), async (request, reply) => {
    const webhook = await getWebhook(deps, idOf(request));
    const f = frame(request, reply, 'webhooks');
    const { t } = f.ui;
    const writable = may(request, 'webhooks', true);
    const dead = await listDeliveries(deps, webhook.id, { state: 'dead', limit: DEAD_LETTERS_SHOWN });
    const done = noticeOf(request);
    return pages.send(
      reply,
      200,
      webhookPage(f, {
        url: webhook.url,
        facts: [
          { label: t.text('console.webhook.events'), value: webhook.events.join(', ') },
          { label: t.text('console.webhook.id'), value: webhook.id },
          { label: t.text('console.webhook.createdAt'), value: t.time(webhook.createdAt) },
        ],
        counts: (await deliveryCounts(deps)).get(webhook.id) ?? NONE,
        deadLetters: dead.map((letter) => ({ eventId: letter.eventId, eventAt: letter.eventAt, attempts: letter.attempts, lastError: letter.lastError })),
        replayAction: writable ? `${webhookPath(webhook.id)}/replay` : null,
        removeHref: writable ? `${webhookPath(webhook.id)}/remove` : null,
        notice: done === undefined ? undefined : t.text(done),
      }),
    );
  });

  app.post(`${CONSOLE_PATHS.webhooks}/:id/replay`, change('webhooks'), async (request, reply) => {
    const eventId = single(rawForm(request), 'event_id', 200);
    const replayed = await replayDeliveries(webhookDeps(request), idOf(request), eventId === '' ? null : eventId);
    return reply.redirect(`${webhookPath(idOf(request))}?done=${replayed === 0 ? 'none' : 'replayed'}`, 303);
  });

  app.get(`${CONSOLE_PATHS.webhooks}/:id/remove`, confirm('webhooks'), async (request, reply) => {
    const webhook = await getWebhook(deps, idOf(request));
    const f = frame(request, reply, 'webhooks');
    const { t } = f.ui;
    const path = webhookPath(webhook.id);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.webhooks.remove'),
        t.text('console.webhook.remove.confirm', { url: webhook.url }),
        `${path}/remove`,
        path,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.webhooks}/:id/remove`, change('webhooks'), async (request, reply) => {
    await removeWebhook(webhookDeps(request), idOf(request));
    return reply.redirect(`${CONSOLE_PATHS.webhooks}?done=removed`, 303);
  });
};

/** The console's apps: the list, the registration form from the clients' field table (flows/manage/fields/clients.ts), rotate, verify and remove. */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import {
  clientJson,
  createClient,
  DEFAULT_GRACE_SECONDS,
  getClient,
  listClients,
  removeClient,
  rotateClientSecret,
  updateClient,
} from '../../flows/manage/clients.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import type { ClientRecord } from '../../store/types.ts';
import {
  appOrigin,
  appFormPage,
  appPage,
  appsPage,
  confirmPage,
  fieldLabel,
  linkButton,
  shownOncePage,
  type AppFormValues,
  type ConsoleFrame,
} from '../../ui/console.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { Ui } from '../../ui/pages.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { FORM_KEYS, formOf, metadataOf, NEW_APP, postedForm, same } from './app-form.ts';
import { TRUST_PATH } from './trust.ts';
import { appPath, consoleKit, encodeOriginal, grantName, otherChanges, overNow, postedOriginal, reasonOf, single } from './kit.ts';

/** Grace periods offered for a rotated-out secret, seconds. */
const GRACE_CHOICES: readonly { readonly seconds: number; readonly label: MessageKey }[] = [
  { seconds: 0, label: 'console.app.rotate.none' },
  { seconds: 3600, label: 'console.app.rotate.hour' },
  { seconds: DEFAULT_GRACE_SECONDS, label: 'console.app.rotate.day' },
  { seconds: 7 * 86400, label: 'console.app.rotate.week' },
];

export const appPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);

  // Apps
  app.get(CONSOLE_PATHS.apps, page('clients'), async (request, reply) => {
    const f = frame(request, reply, 'apps');
    const clients = await listClients(deps);
    return pages.send(
      reply,
      200,
      appsPage(f, {
        apps: clients.map((client) => ({
          name: client.name,
          clientId: client.id,
          publicClient: client.authMethod === 'none',
          grants: client.grantTypes.map(grantName),
          href: appPath(client.id),
          unverified: client.registeredBy !== undefined && client.verified !== true,
        })),
        registerHref: may(request, 'clients', true) ? `${CONSOLE_PATHS.apps}/new` : null,
        trustHref: TRUST_PATH,
        notice: single(request.query as RawParams, 'done', 20) === 'removed' ? f.ui.t.text('console.apps.removed') : undefined,
      }),
    );
  });

  const newAppForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: AppFormValues, error?: SafeHtml) => {
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(
      reply,
      status,
      appFormPage(f, { title: t.text('console.app.new'), action: CONSOLE_PATHS.apps, submit: t.text('console.app.create'), values, edit: null, error }),
    );
  };

  app.get(`${CONSOLE_PATHS.apps}/new`, confirm('clients'), async (request, reply) => newAppForm(request, reply, 200, NEW_APP));

  app.post(CONSOLE_PATHS.apps, change('clients'), async (request, reply) => {
    const values = postedForm(rawForm(request));
    // As `client add`: a field left empty is not given, so the operation's defaults apply.
    const given = FORM_KEYS.filter((key) => !same(values[key], '') && !same(values[key], []));
    let created;
    try {
      created = await createClient(manage(request), metadataOf(values, given));
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newAppForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'apps').ui, error));
    }
    const { client, secret } = created;
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(
      reply,
      201,
      shownOncePage(f, {
        title: t.text('console.app.created', { name: client.name }),
        lines: [
          { label: t.text('console.app.clientId'), value: client.id },
          ...(secret === null ? [] : [{ label: t.text('console.app.secret'), value: secret }]),
        ],
        text: secret === null ? t.text('console.app.noSecret') : t.text('console.app.secretOnce'),
        back: appPath(client.id),
      }),
    );
  });

  const id = (request: FastifyRequest) => (request.params as { client_id: string }).client_id;

  /** Under an app's page: its events, and for one who may change apps, rotate and remove. */
  function appFooter(request: FastifyRequest, ui: Ui, client: ClientRecord) {
    const { t } = ui;
    const writable = may(request, 'clients', true);
    return html`<div class="actions">
${writable && client.secretHash !== null ? linkButton(`${appPath(client.id)}/rotate`, t.text('console.app.rotate')) : null}
${writable ? linkButton(`${appPath(client.id)}/remove`, t.text('console.app.remove')) : null}
</div>
<p class="more"><a href="${CONSOLE_PATHS.events}?${new URLSearchParams({ client: client.id }).toString()}">${t.html('console.app.events')}</a></p>`;
  }

  /** How a self-registered app came, with Verify for an operator who may change apps. */
  const originOf = (request: FastifyRequest, f: ConsoleFrame, client: ClientRecord) =>
    appOrigin(f, {
      registeredBy: client.registeredBy,
      verified: client.verified === true,
      verifyAction: may(request, 'clients', true) ? `${appPath(client.id)}/verify` : null,
    });

  function editForm(
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    client: ClientRecord,
    values: AppFormValues,
    extra: { notice?: string; error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {},
  ) {
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(
      reply,
      status,
      appFormPage(f, {
        title: t.text('console.app.edit', { name: client.name }),
        action: appPath(client.id),
        submit: t.text('console.app.save'),
        values,
        edit: { version: client.version ?? 1, original: encodeOriginal(formOf(client)), clientId: client.id },
        origin: originOf(request, f, client),
        footer: appFooter(request, f.ui, client),
        ...extra,
      }),
    );
  }

  app.get(`${CONSOLE_PATHS.apps}/:client_id`, page('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const done = single(request.query as RawParams, 'done', 20);
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    if (may(request, 'clients', true)) {
      return editForm(
        request,
        reply,
        200,
        client,
        formOf(client),
        done === 'saved' ? { notice: t.text('console.app.saved') } : done === 'verified' ? { notice: t.text('console.app.verified') } : {},
      );
    }
    const described = clientJson(client, deps.clock.now());
    const value = (key: string, raw: unknown): string | SafeHtml => {
      if (typeof raw === 'boolean') return t.text(raw ? 'console.yes' : 'console.no');
      if ((key === 'created_at' || key === 'previous_secret_expires_at') && typeof raw === 'string') return t.time(Date.parse(raw));
      if (Array.isArray(raw) && raw.every((item) => typeof item === 'string')) return raw.join(', ');
      return typeof raw === 'string' ? raw : JSON.stringify(raw);
    };
    return pages.send(
      reply,
      200,
      appPage(f, {
        name: client.name,
        // Shown above as the page's origin notice.
        facts: Object.entries(described)
          .filter(([key]) => key !== 'client_name' && key !== 'verified')
          .map(([key, raw]) => ({ label: fieldLabel(f.ui, key), value: value(key, raw) })),
        origin: originOf(request, f, client),
        footer: appFooter(request, f.ui, client),
      }),
    );
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id`, change('clients'), async (request, reply) => {
    const form = rawForm(request);
    const client = await getClient(deps, id(request));
    const values = postedForm(form);
    const version = Number.parseInt(single(form, 'version', 12), 10);
    const original = postedOriginal(form, FORM_KEYS) ?? formOf(client);
    // Only what the operator changed is sent: the event names those fields, and what someone
    // else changed meanwhile in other fields would be kept (but the version refuses it all).
    const changed = FORM_KEYS.filter((key) => !same(values[key], original[key]));
    if (changed.length === 0) return reply.redirect(`${appPath(client.id)}?done=saved`, 303);
    try {
      await updateClient(manage(request), client.id, metadataOf(values, changed), Number.isInteger(version) ? version : 0);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      const ui = frame(request, reply, 'apps').ui;
      if (error.kind === 'stale') {
        // RFC 9110 §13.1.1: refused, and the change that came in between is shown.
        const current = await getClient(deps, client.id);
        const now = formOf(current);
        // The form again at the current version: the other change, and this operator's over it.
        return editForm(request, reply, 409, current, overNow(now, values, changed), { otherChange: otherChanges(ui, FORM_KEYS, original, now) });
      }
      return editForm(request, reply, MANAGE_STATUS[error.kind], client, values, { error: reasonOf(ui, error) });
    }
    return reply.redirect(`${appPath(client.id)}?done=saved`, 303);
  });

  // As `tessera client update --verified`: the consent page no longer says "not verified".
  app.post(`${CONSOLE_PATHS.apps}/:client_id/verify`, change('clients'), async (request, reply) => {
    await updateClient(manage(request), id(request), { verified: true });
    return reply.redirect(`${appPath(id(request))}?done=verified`, 303);
  });

  app.get(`${CONSOLE_PATHS.apps}/:client_id/rotate`, confirm('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    const path = appPath(client.id);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.app.rotate'),
        t.text('console.app.rotate.confirm', { name: client.name }),
        `${path}/rotate`,
        path,
        html`<input type="hidden" name="return_to" value="${path}/rotate">
<label for="grace">${t.html('console.app.rotate.grace')}</label>
<select id="grace" name="grace">${GRACE_CHOICES.map((choice) => html`<option value="${String(choice.seconds)}"${choice.seconds === DEFAULT_GRACE_SECONDS ? html` selected` : null}>${t.html(choice.label)}</option>`)}</select>`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id/rotate`, change('clients'), async (request, reply) => {
    const grace = Number(single(rawForm(request), 'grace', 10));
    const { client, secret } = await rotateClientSecret(
      manage(request),
      id(request),
      GRACE_CHOICES.some((choice) => choice.seconds === grace) ? grace : DEFAULT_GRACE_SECONDS,
    );
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(
      reply,
      200,
      shownOncePage(f, {
        title: t.text('console.app.rotate.done', { name: client.name }),
        lines: [
          { label: t.text('console.app.clientId'), value: client.id },
          { label: t.text('console.app.secret'), value: secret },
        ],
        text: `${t.text('console.app.secretOnce')} ${t.text('console.app.rotate.until', { time: t.date(client.previousSecretExpiresAt ?? deps.clock.now()) })}`,
        back: appPath(client.id),
      }),
    );
  });

  app.get(`${CONSOLE_PATHS.apps}/:client_id/remove`, confirm('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    const path = appPath(client.id);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.app.remove'),
        t.text('console.app.remove.confirm', { name: client.name }),
        `${path}/remove`,
        path,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id/remove`, change('clients'), async (request, reply) => {
    await removeClient(manage(request), id(request));
    return reply.redirect(`${CONSOLE_PATHS.apps}?done=removed`, 303);
  });
};

/**
 * The console's identity providers: the list, the form of each kind from the providers' field
 * table (flows/manage/fields/providers.ts), and remove, calling the operations the command and
 * the admin API call (flows/manage/providers.ts) with the operator's authority: a provider that
 * links accounts or vouches for a second factor needs every admin scope
 * (flows/manage/authority.ts), which the admin role holds.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formValues, FormValueError, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { PROVIDER_FIELDS, PROVIDER_KIND_CHOICES } from '../../flows/manage/fields/providers.ts';
import {
  addProvider,
  getProvider,
  listProviders,
  providerJson,
  removeProvider,
  updateProvider,
  type ProviderDeps,
  type ProviderInput,
} from '../../flows/manage/providers.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import { appPage, confirmPage, fieldLabel, linkButton } from '../../ui/console.ts';
import { kindName, providerFormPage, providersPage } from '../../ui/console-providers.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, editOverOriginal, encodeOriginal, postedOriginal, reasonOf, single } from './kit.ts';

export const providerPath = (id: string) => `${CONSOLE_PATHS.providers}/${encodeURIComponent(id)}`;

/** The fields of a kind's form: those it takes when adding, and those an edit compares. */
const formKeys = (kind: string, operation: 'create' | 'update'): readonly string[] =>
  PROVIDER_FIELDS.filter((field) => field.form !== null && field[operation] && (!('kinds' in field) || (field.kinds as readonly string[]).includes(kind))).map(
    (field) => field.name,
  );

/** Form values as the operation's input, only the fields in `names`; a value that is not one is refused as the operation refuses. */
function inputOfForm(values: FormValues, names: readonly string[]): ProviderInput {
  try {
    return inputOf(PROVIDER_FIELDS, values, names) as ProviderInput;
  } catch (error) {
    if (error instanceof FormValueError) throw new ManageError('invalid', [{ field: error.field }, `: ${error.message}`]);
    throw error;
  }
}

const NOTICES: Readonly<Record<string, MessageKey>> = {
  added: 'console.providers.added',
  saved: 'console.providers.saved',
  removed: 'console.providers.removed',
};

export const providerPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const providerDeps = (request: FastifyRequest): ProviderDeps => ({ ...manage(request), secrets: deps.secrets });
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const kindOf = (value: string): string | undefined => PROVIDER_KIND_CHOICES.find((kind) => kind === value);

  app.get(CONSOLE_PATHS.providers, page('providers'), async (request, reply) => {
    const f = frame(request, reply, 'providers');
    const done = NOTICES[single(request.query as RawParams, 'done', 20)];
    return pages.send(
      reply,
      200,
      providersPage(f, {
        providers: (await listProviders(deps)).map((provider) => ({
          id: provider.id,
          kind: provider.kind,
          name: provider.name,
          href: providerPath(provider.id),
          only: provider.settings['only'] === true,
          allowLinking: provider.settings['allowLinking'] === true,
          trustUpstreamMfa: provider.settings['trustUpstreamMfa'] === true,
        })),
        addHrefs: may(request, 'providers', true) ? PROVIDER_KIND_CHOICES.map((kind) => ({ kind, href: `${CONSOLE_PATHS.providers}/new?kind=${kind}` })) : null,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  /** What the server says of a provider, above its form: its id, kind, redirect URI and whether a secret is stored. */
  function facts(request: FastifyRequest, reply: FastifyReply, provider: IdentityProviderRecord) {
    const { t } = frame(request, reply, 'providers').ui;
    const json = providerJson(provider, deps.config.issuer);
    const secret = json['client_secret_set'] ?? json['bind_password_set'];
    return [
      { label: t.text('console.provider.id'), value: provider.id },
      { label: t.text('console.provider.kind'), value: kindName(frame(request, reply, 'providers').ui, provider.kind) },
      ...(typeof json['redirect_uri'] === 'string' ? [{ label: t.text('console.provider.redirectUri'), value: json['redirect_uri'] }] : []),
      ...(typeof secret === 'boolean' ? [{ label: t.text('console.provider.secretSet'), value: t.text(secret ? 'console.yes' : 'console.no') }] : []),
    ];
  }

  function footer(request: FastifyRequest, reply: FastifyReply, provider: IdentityProviderRecord): SafeHtml {
    const { t } = frame(request, reply, 'providers').ui;
    return html`<div class="actions">${may(request, 'providers', true) ? linkButton(`${providerPath(provider.id)}/remove`, t.text('console.providers.remove', { name: provider.name })) : null}</div>
<p class="more"><a href="${CONSOLE_PATHS.events}?${new URLSearchParams({ type: 'provider.updated' }).toString()}">${t.html('console.provider.events')}</a></p>`;
  }

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, kind: string, values: FormValues, error?: SafeHtml) => {
    const f = frame(request, reply, 'providers');
    const { t } = f.ui;
    return pages.send(
      reply,
      status,
      providerFormPage(f, {
        title: t.text(`console.providers.add.${kind}` as MessageKey),
        action: CONSOLE_PATHS.providers,
        submit: t.text('console.provider.create'),
        kind,
        values,
        edit: null,
        error,
        cancel: CONSOLE_PATHS.providers,
      }),
    );
  };

  const editForm = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    provider: IdentityProviderRecord,
    values: FormValues,
    extra: { notice?: string; error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {},
  ) => {
    const f = frame(request, reply, 'providers');
    const { t } = f.ui;
    return pages.send(
      reply,
      status,
      providerFormPage(f, {
        title: t.text('console.provider.edit', { name: provider.name }),
        action: providerPath(provider.id),
        submit: t.text('console.app.save'),
        kind: provider.kind,
        values,
        cancel: CONSOLE_PATHS.providers,
        footer: footer(request, reply, provider),
        edit: { original: encodeOriginal(formOf(provider)), facts: facts(request, reply, provider) },
        ...extra,
      }),
    );
  };

  const formOf = (provider: IdentityProviderRecord): FormValues => formValues(PROVIDER_FIELDS, providerJson(provider, deps.config.issuer));

  app.get(`${CONSOLE_PATHS.providers}/new`, confirm('providers'), async (request, reply) => {
    const kind = kindOf(single(request.query as RawParams, 'kind', 10));
    if (kind === undefined) return reply.redirect(CONSOLE_PATHS.providers, 303);
    return newForm(request, reply, 200, kind, formValues(PROVIDER_FIELDS, {}));
  });

  app.post(CONSOLE_PATHS.providers, change('providers'), async (request, reply) => {
    const form = rawForm(request);
    const kind = kindOf(single(form, 'kind', 10));
    if (kind === undefined) return reply.redirect(CONSOLE_PATHS.providers, 303);
    const values = postedValues(PROVIDER_FIELDS, form);
    // As `provider add`: a field left empty is not given, so the operation's defaults apply.
    const given = formKeys(kind, 'create').filter((key) => !sameValue(values[key], '') && values[key] !== false);
    let added;
    try {
      added = await addProvider(providerDeps(request), { ...inputOfForm(values, given), kind });
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(
        request,
        reply,
        MANAGE_STATUS[error.kind],
        kind,
        { ...values, client_secret: '', bind_password: '' },
        reasonOf(frame(request, reply, 'providers').ui, error),
      );
    }
    return reply.redirect(`${providerPath(added.id)}?done=added`, 303);
  });

  app.get(`${CONSOLE_PATHS.providers}/:id`, page('providers'), async (request, reply) => {
    const provider = await getProvider(deps, idOf(request));
    const f = frame(request, reply, 'providers');
    const { t } = f.ui;
    const done = NOTICES[single(request.query as RawParams, 'done', 20)];
    if (may(request, 'providers', true)) return editForm(request, reply, 200, provider, formOf(provider), done === undefined ? {} : { notice: t.text(done) });
    const json = providerJson(provider, deps.config.issuer);
    return pages.send(
      reply,
      200,
      appPage(f, {
        name: provider.name,
        facts: Object.entries(json)
          .filter(([key]) => key !== 'name')
          .map(([key, value]) => ({
            label: fieldLabel(f.ui, key),
            value: typeof value === 'string' ? value : typeof value === 'boolean' ? t.text(value ? 'console.yes' : 'console.no') : JSON.stringify(value),
          })),
        origin: null,
        footer: footer(request, reply, provider),
      }),
    );
  });

  app.post(`${CONSOLE_PATHS.providers}/:id`, change('providers'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getProvider(deps, idOf(request));
    const keys = formKeys(current.kind, 'update');
    const now = formOf(current);
    const original = postedOriginal(form, keys) ?? now;
    const values = postedValues(PROVIDER_FIELDS, form);
    // Providers carry no version: the values the form was opened with stand for it. Someone
    // else's change meanwhile refuses the edit with their change shown (as an API's is).
    const ui = frame(request, reply, 'providers').ui;
    // A secret typed is a change; left empty, the stored one stays.
    const { changed, otherChange, merged } = editOverOriginal(ui, keys, original, now, values);
    if (otherChange.length > 0) return editForm(request, reply, 409, current, { ...merged, client_secret: '', bind_password: '' }, { otherChange });
    if (changed.length === 0) return reply.redirect(`${providerPath(current.id)}?done=saved`, 303);
    try {
      await updateProvider(providerDeps(request), current.id, inputOfForm(values, changed));
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return editForm(request, reply, MANAGE_STATUS[error.kind], current, { ...values, client_secret: '', bind_password: '' }, { error: reasonOf(ui, error) });
    }
    return reply.redirect(`${providerPath(current.id)}?done=saved`, 303);
  });

  app.get(`${CONSOLE_PATHS.providers}/:id/remove`, confirm('providers'), async (request, reply) => {
    const provider = await getProvider(deps, idOf(request));
    const f = frame(request, reply, 'providers');
    const { t } = f.ui;
    const path = providerPath(provider.id);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.providers.remove', { name: provider.name }),
        t.text('console.provider.remove.confirm', { name: provider.name, id: provider.id }),
        `${path}/remove`,
        path,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.providers}/:id/remove`, change('providers'), async (request, reply) => {
    await removeProvider(providerDeps(request), idOf(request));
    return reply.redirect(`${CONSOLE_PATHS.providers}?done=removed`, 303);
  });
};

/** The console's APIs and their scopes (RFC 8707 resources). */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { SCOPE_DESCRIPTIONS } from '../../core/scopes.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formValues, inputOf, postedValues } from '../../flows/manage/fields/field.ts';
import { RESOURCE_FIELDS } from '../../flows/manage/fields/resources.ts';
import {
  addResource,
  getResource,
  listResources,
  removeResource,
  resourceJson,
  updateResource,
  type ResourceInput,
  type ResourceUpdate,
} from '../../flows/manage/resources.ts';
import type { ResourceRecord, ResourceScope } from '../../store/types.ts';
import { apiFormPage, apisPage, confirmPage, shownOncePage, type ApiFormValues } from '../../ui/console.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { apiPath, consoleKit, editOverOriginal, encodeOriginal, postedOriginal, reasonOf, single } from './kit.ts';

/** An API's form of a stored registration: its admin API JSON, through the table (fields/resources.ts). */
const apiFormOf = (resource: ResourceRecord): ApiFormValues => formValues(RESOURCE_FIELDS, resourceJson(resource));

/** What a new API's form starts with: `tessera resource add`'s defaults. */
const NEW_API: ApiFormValues = formValues(RESOURCE_FIELDS, { signing_alg: 'RS256' });

/** The fields a form gives when registering, and those an edit compares (the identifier is fixed, the introspection secret is asked for once). */
const CREATE_KEYS: readonly string[] = RESOURCE_FIELDS.filter((field) => field.create && field.form !== null).map((field) => field.name);
const UPDATE_KEYS: readonly string[] = RESOURCE_FIELDS.filter((field) => field.update && field.form !== null).map((field) => field.name);

const postedApi = (form: RawParams): ApiFormValues => postedValues(RESOURCE_FIELDS, form);

/** Form values as the operation's input, only the fields in `names`. */
const inputOfApi = (values: ApiFormValues, names: readonly string[]) => inputOf(RESOURCE_FIELDS, values, names);

/** A scope as the form has it, in a refusal: its line. */
const scopeLine = (scope: ResourceScope) => `${scope.name}=${scope.description}`;

export const apiPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);

  // APIs and their scopes
  app.get(CONSOLE_PATHS.apis, page('resources'), async (request, reply) => {
    const resources = await listResources(deps);
    const writable = may(request, 'resources', true);
    const f = frame(request, reply, 'apis');
    const done = API_NOTICES[single(request.query as RawParams, 'done', 20)];
    return pages.send(
      reply,
      200,
      apisPage(f, {
        apis: resources.map((resource) => ({
          name: resource.name,
          identifier: resource.identifier,
          tokenTtl: resource.accessTokenTtl,
          signingAlg: resource.signingAlg,
          scopes: resource.scopes,
          editHref: writable ? apiPath(resource.identifier) : null,
        })),
        openid: Object.entries(SCOPE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
        registerHref: writable ? `${CONSOLE_PATHS.apis}/new` : null,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  const API_NOTICES: Readonly<Record<string, MessageKey>> = { added: 'console.apis.added', saved: 'console.apis.saved', removed: 'console.apis.removed' };
  const identifierOf = (request: FastifyRequest) => (request.params as { identifier: string }).identifier;

  const apiForm = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    values: ApiFormValues,
    edit: ResourceRecord | null,
    extra: { error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {},
  ) => {
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(
      reply,
      status,
      apiFormPage(f, {
        title: edit === null ? t.text('console.api.new') : t.text('console.api.edit', { name: edit.name }),
        action: edit === null ? CONSOLE_PATHS.apis : apiPath(edit.identifier),
        submit: t.text(edit === null ? 'console.api.create' : 'console.app.save'),
        values,
        edit: edit === null ? null : { original: encodeOriginal(apiFormOf(edit)), identifier: edit.identifier },
        cancel: CONSOLE_PATHS.apis,
        ...extra,
      }),
    );
  };

  app.get(`${CONSOLE_PATHS.apis}/new`, confirm('resources'), async (request, reply) => apiForm(request, reply, 200, NEW_API, null));

  app.post(CONSOLE_PATHS.apis, change('resources'), async (request, reply) => {
    const values = postedApi(rawForm(request));
    // As `resource add`: a field left empty is not given, so the operation's defaults apply.
    const given = CREATE_KEYS.filter((key) => values[key] !== '' && values[key] !== false);
    let added;
    try {
      added = await addResource(manage(request), inputOfApi(values, given) as ResourceInput, scopeLine);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, null, { error: reasonOf(frame(request, reply, 'apis').ui, error) });
    }
    if (added.introspectionSecret === null) return reply.redirect(`${CONSOLE_PATHS.apis}?done=added`, 303);
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(
      reply,
      201,
      shownOncePage(f, {
        title: t.text('console.api.added', { name: added.resource.name }),
        lines: [
          { label: t.text('console.apis.identifier'), value: added.resource.identifier },
          { label: t.text('console.api.introspectionSecret'), value: added.introspectionSecret },
        ],
        text: t.text('console.api.secretOnce'),
        back: CONSOLE_PATHS.apis,
      }),
    );
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    return apiForm(request, reply, 200, apiFormOf(resource), resource);
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier`, change('resources'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getResource(deps, identifierOf(request));
    const now = apiFormOf(current);
    const original = postedOriginal(form, UPDATE_KEYS) ?? now;
    const posted = postedApi(form);
    // A form posted without the menu: the algorithm as it was.
    const values: ApiFormValues = {
      ...posted,
      identifier: current.identifier,
      introspection_secret: false,
      signing_alg: posted['signing_alg'] || original['signing_alg'] || '',
    };
    // APIs carry no version: the values the form was opened with stand for it. Someone else's
    // change meanwhile refuses the edit with their change shown (as an app's stale edit is).
    const ui = frame(request, reply, 'apis').ui;
    const { changed, otherChange, merged } = editOverOriginal(ui, UPDATE_KEYS, original, now, values);
    if (otherChange.length > 0) return apiForm(request, reply, 409, merged, current, { otherChange });
    if (changed.length === 0) return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
    try {
      await updateResource(manage(request), current.identifier, inputOfApi(values, changed) as ResourceUpdate, scopeLine);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, current, { error: reasonOf(ui, error) });
    }
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier/remove`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    const path = apiPath(resource.identifier);
    const title = t.text('console.apis.remove', { name: resource.name });
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        title,
        t.text('console.api.remove.confirm', { name: resource.name, identifier: resource.identifier }),
        `${path}/remove`,
        CONSOLE_PATHS.apis,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier/remove`, change('resources'), async (request, reply) => {
    await removeResource(manage(request), identifierOf(request));
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=removed`, 303);
  });
};

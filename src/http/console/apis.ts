/** The console's APIs and their scopes (RFC 8707 resources). */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { SCOPE_DESCRIPTIONS } from '../../core/scopes.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { ACCESS_TOKEN_TTL_RANGE, addResource, API_SIGNING_ALGORITHMS, getResource, listResources, removeResource, updateResource } from '../../flows/manage/resources.ts';
import type { ResourceRecord, ResourceScope } from '../../store/types.ts';
import { apiFormPage, apisPage, confirmPage, shownOncePage, type ApiFormValues } from '../../ui/console.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { apiPath, consoleKit, lines, reasonOf, single } from './kit.ts';

/** An API's form of a stored registration: its scopes one a line, as `resource add --scope NAME=DESCRIPTION`. */
function apiFormOf(resource: ResourceRecord): ApiFormValues {
  return {
    identifier: resource.identifier,
    name: resource.name,
    scopes: resource.scopes.map((scope) => `${scope.name}=${scope.description}`).join('\n'),
    access_token_ttl: resource.accessTokenTtl === null ? '' : String(resource.accessTokenTtl),
    signing_alg: resource.signingAlg,
    introspection_secret: resource.introspectionSecretHash !== null,
  };
}

/** What an API's edit compares: the identifier is fixed, the introspection secret is the command's. */
const API_FORM_KEYS = ['name', 'scopes', 'access_token_ttl', 'signing_alg'] as const;

function postedApi(form: RawParams): ApiFormValues {
  return {
    identifier: single(form, 'identifier', 1100),
    name: single(form, 'name', 200),
    // Lines trimmed and blank ones dropped, so that retyping the same scopes is no change.
    scopes: lines(single(form, 'scopes', 64 * 1024)).join('\n'),
    access_token_ttl: single(form, 'access_token_ttl', 12).trim(),
    signing_alg: single(form, 'signing_alg', 10),
    introspection_secret: form['introspection_secret'] === 'on',
  };
}

/** Scopes typed one a line as NAME=DESCRIPTION; a line without `=` is a name without a description, which the operation refuses by its line. */
const scopesOf = (text: string): ResourceScope[] =>
  lines(text).map((line) => {
    const at = line.indexOf('=');
    return at === -1 ? { name: line, description: '' } : { name: line.slice(0, at).trim(), description: line.slice(at + 1).trim() };
  });

/** An empty lifetime is the server's default; anything else the operation checks as seconds. */
const ttlOf = (text: string): number | null => (text === '' ? null : Number(text));

const encodeApi = (values: ApiFormValues) => Buffer.from(JSON.stringify(values)).toString('base64url');

function decodeApi(text: string): ApiFormValues | null {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    return API_FORM_KEYS.every((key) => typeof parsed[key] === 'string') ? (parsed as unknown as ApiFormValues) : null;
  } catch {
    return null;
  }
}

export const apiPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);

  // APIs and their scopes
  app.get(CONSOLE_PATHS.apis, page('resources'), async (request, reply) => {
    const resources = await listResources(deps);
    const writable = may(request, 'resources', true);
    const f = frame(request, reply, 'apis');
    const done = API_NOTICES[single(request.query as RawParams, 'done', 20)];
    return pages.send(reply, 200, apisPage(f, {
      apis: resources.map((resource) => ({
        name: resource.name, identifier: resource.identifier, tokenTtl: resource.accessTokenTtl, signingAlg: resource.signingAlg, scopes: resource.scopes,
        editHref: writable ? apiPath(resource.identifier) : null,
      })),
      openid: Object.entries(SCOPE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
      registerHref: writable ? `${CONSOLE_PATHS.apis}/new` : null,
      notice: done === undefined ? undefined : f.ui.t.text(done),
    }));
  });

  const API_NOTICES: Readonly<Record<string, MessageKey>> = { added: 'console.apis.added', saved: 'console.apis.saved', removed: 'console.apis.removed' };
  const identifierOf = (request: FastifyRequest) => (request.params as { identifier: string }).identifier;
  const apiAlgorithms: readonly string[] = API_SIGNING_ALGORITHMS;

  const apiForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: ApiFormValues, edit: ResourceRecord | null, extra: { error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {}) => {
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(reply, status, apiFormPage(f, {
      title: edit === null ? t.text('console.api.new') : t.text('console.api.edit', { name: edit.name }),
      action: edit === null ? CONSOLE_PATHS.apis : apiPath(edit.identifier),
      submit: t.text(edit === null ? 'console.api.create' : 'console.app.save'),
      values,
      edit: edit === null ? null : { original: encodeApi(apiFormOf(edit)) },
      algorithms: apiAlgorithms,
      ttlRange: ACCESS_TOKEN_TTL_RANGE,
      cancel: CONSOLE_PATHS.apis,
      ...extra,
    }));
  };

  app.get(`${CONSOLE_PATHS.apis}/new`, confirm('resources'), async (request, reply) =>
    apiForm(request, reply, 200, { identifier: '', name: '', scopes: '', access_token_ttl: '', signing_alg: 'RS256', introspection_secret: false }, null));

  app.post(CONSOLE_PATHS.apis, change('resources'), async (request, reply) => {
    const values = postedApi(rawForm(request));
    let added;
    try {
      const ttl = ttlOf(values.access_token_ttl);
      added = await addResource(manage(request), {
        identifier: values.identifier.trim(),
        name: values.name,
        scopes: scopesOf(values.scopes),
        access_token_ttl: ttl,
        // A form posted without the menu: the operation's default.
        ...(values.signing_alg === '' ? {} : { signing_alg: values.signing_alg }),
        introspection_secret: values.introspection_secret,
      }, (scope) => `${scope.name}=${scope.description}`);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, null, { error: reasonOf(frame(request, reply, 'apis').ui, error) });
    }
    if (added.introspectionSecret === null) return reply.redirect(`${CONSOLE_PATHS.apis}?done=added`, 303);
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(reply, 201, shownOncePage(f, {
      title: t.text('console.api.added', { name: added.resource.name }),
      lines: [{ label: t.text('console.apis.identifier'), value: added.resource.identifier }, { label: t.text('console.api.introspectionSecret'), value: added.introspectionSecret }],
      text: t.text('console.api.secretOnce'),
      back: CONSOLE_PATHS.apis,
    }));
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    return apiForm(request, reply, 200, apiFormOf(resource), resource);
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier`, change('resources'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getResource(deps, identifierOf(request));
    const now = apiFormOf(current);
    const original = decodeApi(single(form, 'original', 64 * 1024)) ?? now;
    const posted = postedApi(form);
    const values = { ...posted, identifier: current.identifier, signing_alg: posted.signing_alg || original.signing_alg, introspection_secret: false };
    // APIs carry no version: the values the form was opened with stand for it. Someone else's
    // change meanwhile refuses the edit with their change shown (as an app's stale edit is).
    const otherChange = API_FORM_KEYS.filter((key) => now[key] !== original[key]).map((key) => ({ field: key, before: String(original[key]).replace(/\n/g, ', '), after: String(now[key]).replace(/\n/g, ', ') }));
    const changed = API_FORM_KEYS.filter((key) => values[key] !== original[key]);
    if (otherChange.length > 0) {
      const merged = { ...now, ...Object.fromEntries(changed.map((key) => [key, values[key]])) } as ApiFormValues;
      return apiForm(request, reply, 409, merged, current, { otherChange });
    }
    if (changed.length === 0) return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
    try {
      await updateResource(manage(request), current.identifier, {
        ...(changed.includes('name') ? { name: values.name } : {}),
        ...(changed.includes('scopes') ? { scopes: scopesOf(values.scopes) } : {}),
        ...(changed.includes('access_token_ttl') ? { access_token_ttl: ttlOf(values.access_token_ttl) } : {}),
        ...(changed.includes('signing_alg') ? { signing_alg: values.signing_alg } : {}),
      }, (scope) => `${scope.name}=${scope.description}`);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, current, { error: reasonOf(frame(request, reply, 'apis').ui, error) });
    }
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier/remove`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    const path = apiPath(resource.identifier);
    const title = t.text('console.apis.remove', { name: resource.name });
    return pages.send(reply, 200, confirmPage(f, title, t.text('console.api.remove.confirm', { name: resource.name, identifier: resource.identifier }), `${path}/remove`, CONSOLE_PATHS.apis, html`<input type="hidden" name="return_to" value="${path}/remove">`));
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier/remove`, change('resources'), async (request, reply) => {
    await removeResource(manage(request), identifierOf(request));
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=removed`, 303);
  });

};

/**
 * The console's provisioning page (docs/scim.md): the SCIM tokens, the form to make one from
 * their field table (the token shown once), and remove after a confirmation, calling the
 * operations the command and the admin API call (flows/manage/scim-tokens.ts) with the
 * operator's authority: a SCIM token creates and disables people, so it is the users' area.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS, SCIM_PATH } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { SCIM_TOKEN_FIELDS } from '../../flows/manage/fields/scim-tokens.ts';
import { addScimToken, getScimToken, listScimTokens, removeScimToken, type ScimTokenInput } from '../../flows/manage/scim-tokens.ts';
import { confirmPage, shownOncePage } from '../../ui/console.ts';
import { scimTokenFormPage, scimTokensPage } from '../../ui/console-scim.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, reasonOf, single } from './kit.ts';

const tokenPath = (id: string) => `${CONSOLE_PATHS.scim}/tokens/${encodeURIComponent(id)}`;

export const scimPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const endpoint = `${deps.config.issuer}${SCIM_PATH}`;

  app.get(CONSOLE_PATHS.scim, page('users'), async (request, reply) => {
    const f = frame(request, reply, 'scim');
    const writable = may(request, 'users', true);
    const removed = single(request.query as RawParams, 'done', 20) === 'removed';
    return pages.send(
      reply,
      200,
      scimTokensPage(f, {
        endpoint,
        tokens: (await listScimTokens(deps)).map((token) => ({
          name: token.name,
          createdAt: token.createdAt,
          lastUsedAt: token.lastUsedAt,
          removeHref: writable ? `${tokenPath(token.id)}/remove` : null,
        })),
        addHref: writable ? `${CONSOLE_PATHS.scim}/tokens/new` : null,
        notice: removed ? f.ui.t.text('console.scimTokens.removed') : undefined,
      }),
    );
  });

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: FormValues, error?: SafeHtml) =>
    pages.send(
      reply,
      status,
      scimTokenFormPage(frame(request, reply, 'scim'), { action: `${CONSOLE_PATHS.scim}/tokens`, values, cancel: CONSOLE_PATHS.scim, error }),
    );

  app.get(`${CONSOLE_PATHS.scim}/tokens/new`, confirm('users'), async (request, reply) => newForm(request, reply, 200, formValues(SCIM_TOKEN_FIELDS, {})));

  app.post(`${CONSOLE_PATHS.scim}/tokens`, change('users'), async (request, reply) => {
    const values = postedValues(SCIM_TOKEN_FIELDS, rawForm(request));
    const given = formKeys(SCIM_TOKEN_FIELDS).filter((key) => !sameValue(values[key], ''));
    let added;
    try {
      added = await addScimToken(manage(request), inputOf(SCIM_TOKEN_FIELDS, values, given) as ScimTokenInput);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'scim').ui, error));
    }
    const f = frame(request, reply, 'scim');
    const { t } = f.ui;
    return pages.send(
      reply,
      201,
      shownOncePage(f, {
        title: t.text('console.scimTokens.added'),
        lines: [
          { label: t.text('console.scimToken.name'), value: added.record.name },
          { label: t.text('console.scimTokens.endpoint'), value: endpoint },
          { label: t.text('console.scimToken.token'), value: added.token },
        ],
        text: t.text('console.scimToken.tokenOnce'),
        back: CONSOLE_PATHS.scim,
      }),
    );
  });

  app.get(`${CONSOLE_PATHS.scim}/tokens/:id/remove`, confirm('users'), async (request, reply) => {
    const token = await getScimToken(deps, idOf(request));
    const f = frame(request, reply, 'scim');
    const { t } = f.ui;
    const path = tokenPath(token.id);
    return pages.send(
      reply,
      200,
      confirmPage(
        f,
        t.text('console.scimTokens.remove'),
        t.text('console.scimToken.remove.confirm', { name: token.name }),
        `${path}/remove`,
        CONSOLE_PATHS.scim,
        html`<input type="hidden" name="return_to" value="${path}/remove">`,
      ),
    );
  });

  app.post(`${CONSOLE_PATHS.scim}/tokens/:id/remove`, change('users'), async (request, reply) => {
    await removeScimToken(manage(request), idOf(request));
    return reply.redirect(`${CONSOLE_PATHS.scim}?done=removed`, 303);
  });
};

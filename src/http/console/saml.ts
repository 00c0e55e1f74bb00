/**
 * The console's SAML service providers (docs/saml.md): the list, the form to add one (or paste
 * its metadata), an SP's page with the form that changes it, and remove after a confirmation,
 * calling the operations the command and the admin API call
 * (flows/manage/saml-service-providers.ts) with the operator's authority.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS, samlEndpoints } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { SAML_SP_FIELDS } from '../../flows/manage/fields/saml-service-providers.ts';
import { addSamlSp, getSamlSp, listSamlSps, removeSamlSp, samlSpJson, updateSamlSp, type SamlSpInput } from '../../flows/manage/saml-service-providers.ts';
import type { SamlServiceProviderRecord } from '../../store/saml.ts';
import { confirmPage, type OtherChange } from '../../ui/console.ts';
import { samlSpFormPage, samlSpPage, samlSpsPage } from '../../ui/console-saml.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { SafeHtml } from '../../ui/html.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, editOverOriginal, encodeOriginal, postedOriginal, reasonOf, shown, single } from './kit.ts';

export const samlSpPath = (id: string) => `${CONSOLE_PATHS.saml}/${encodeURIComponent(id)}`;

const NOTICES: Readonly<Record<string, MessageKey>> = { added: 'console.saml.added', saved: 'console.saml.updated', removed: 'console.saml.removed' };
/** The form's values of an SP as it is (its metadata is never shown back: what it held is in the other fields). */
const formOf = (sp: SamlServiceProviderRecord): FormValues => ({ ...formValues(SAML_SP_FIELDS, samlSpJson(sp)), metadata: '' });
/** The fields its edit form changes. */
const UPDATE_KEYS: readonly string[] = formKeys(SAML_SP_FIELDS).filter((key) => SAML_SP_FIELDS.find((field) => field.name === key)?.update);

export const samlPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const noticeOf = (request: FastifyRequest) => NOTICES[single(request.query as RawParams, 'done', 20)];
  const metadata = samlEndpoints(deps.config.issuer).metadata;

  app.get(CONSOLE_PATHS.saml, page('saml'), async (request, reply) => {
    const f = frame(request, reply, 'saml');
    const done = noticeOf(request);
    return pages.send(
      reply,
      200,
      samlSpsPage(f, {
        sps: (await listSamlSps(deps)).map((sp) => ({ entityId: sp.entityId, name: sp.name, href: samlSpPath(sp.id) })),
        addHref: may(request, 'saml', true) ? `${CONSOLE_PATHS.saml}/new` : null,
        metadata,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: FormValues, error?: SafeHtml) =>
    pages.send(
      reply,
      status,
      samlSpFormPage(frame(request, reply, 'saml'), { action: CONSOLE_PATHS.saml, values, cancel: CONSOLE_PATHS.saml, operation: 'create', metadata, error }),
    );

  app.get(`${CONSOLE_PATHS.saml}/new`, confirm('saml'), async (request, reply) => newForm(request, reply, 200, formValues(SAML_SP_FIELDS, {})));

  app.post(CONSOLE_PATHS.saml, change('saml'), async (request, reply) => {
    const values = postedValues(SAML_SP_FIELDS, rawForm(request));
    // As `saml sp add`: a field left empty is not given (metadata may give it).
    const given = formKeys(SAML_SP_FIELDS).filter((key) => !sameValue(values[key], '') && !sameValue(values[key], []) && values[key] !== false);
    let added;
    try {
      added = await addSamlSp(manage(request), inputOf(SAML_SP_FIELDS, values, given) as SamlSpInput);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'saml').ui, error));
    }
    return reply.redirect(`${samlSpPath(added.id)}?done=added`, 303);
  });

  const spPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    sp: SamlServiceProviderRecord,
    values: FormValues,
    refused: { readonly error?: SafeHtml; readonly otherChange?: readonly OtherChange[] } = {},
  ) => {
    const f = frame(request, reply, 'saml');
    const { ui } = f;
    const writable = may(request, 'saml', true);
    const done = noticeOf(request);
    const json = samlSpJson(sp);
    return pages.send(
      reply,
      status,
      samlSpPage(f, {
        title: sp.name ?? sp.entityId,
        facts: [
          { label: ui.t.text('console.saml.entityId'), value: sp.entityId },
          { label: ui.t.text('console.saml.id'), value: sp.id },
          ...(writable
            ? []
            : SAML_SP_FIELDS.filter((field) => field.form !== null && field.update && field.name !== 'metadata').map((field) => ({
                label: ui.t.text(field.form!.label as MessageKey),
                value: shown(ui, formValues(SAML_SP_FIELDS, json)[field.name] ?? '') || '-',
              }))),
          { label: ui.t.text('console.saml.createdAt'), value: ui.t.time(sp.createdAt) },
        ],
        edit: writable
          ? { action: samlSpPath(sp.id), values, cancel: CONSOLE_PATHS.saml, operation: 'update', original: encodeOriginal(formOf(sp)), ...refused }
          : null,
        removeHref: writable ? `${samlSpPath(sp.id)}/remove` : null,
        notice: done === undefined ? undefined : ui.t.text(done),
      }),
    );
  };

  app.get(`${CONSOLE_PATHS.saml}/:id`, page('saml'), async (request, reply) => {
    const sp = await getSamlSp(deps, idOf(request));
    return spPage(request, reply, 200, sp, formOf(sp));
  });

  app.post(`${CONSOLE_PATHS.saml}/:id`, change('saml'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getSamlSp(deps, idOf(request));
    const now = formOf(current);
    const values = postedValues(SAML_SP_FIELDS, form);
    // SPs carry no version: a form opened before someone else replaced the certificate, asked
    // for signed requests or pruned the ACS URLs would otherwise put back what it showed.
    // Their change refuses the edit.
    const ui = frame(request, reply, 'saml').ui;
    const { changed, otherChange, merged } = editOverOriginal(ui, UPDATE_KEYS, postedOriginal(form, UPDATE_KEYS) ?? now, now, values);
    if (otherChange.length > 0) return spPage(request, reply, 409, current, merged, { otherChange });
    if (changed.length > 0) {
      try {
        await updateSamlSp(manage(request), current.id, inputOf(SAML_SP_FIELDS, values, changed) as SamlSpInput);
      } catch (error) {
        if (!(error instanceof ManageError)) throw error;
        return spPage(request, reply, MANAGE_STATUS[error.kind], current, values, { error: reasonOf(ui, error) });
      }
    }
    return reply.redirect(`${samlSpPath(current.id)}?done=saved`, 303);
  });

  app.get(`${CONSOLE_PATHS.saml}/:id/remove`, confirm('saml'), async (request, reply) => {
    const sp = await getSamlSp(deps, idOf(request));
    const f = frame(request, reply, 'saml');
    const { t } = f.ui;
    const path = samlSpPath(sp.id);
    return pages.send(
      reply,
      200,
      confirmPage(f, t.text('console.saml.remove'), t.text('console.saml.remove.confirm', { entityId: sp.entityId }), `${path}/remove`, path),
    );
  });

  app.post(`${CONSOLE_PATHS.saml}/:id/remove`, change('saml'), async (request, reply) => {
    await removeSamlSp(manage(request), idOf(request));
    return reply.redirect(`${CONSOLE_PATHS.saml}?done=removed`, 303);
  });
};

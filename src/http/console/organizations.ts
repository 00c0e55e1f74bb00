/**
 * The console's organizations (docs/organizations.md): the list, the form to add one, an
 * organization's page with its members, the form that adds one and the form that changes it,
 * and remove after a confirmation, calling the operations the command and the admin API call
 * (flows/manage/organizations.ts) with the operator's authority.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import { formKeys, formValues, inputOf, postedValues, sameValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_FIELDS } from '../../flows/manage/fields/organizations.ts';
import {
  addOrganization,
  getOrganization,
  listOrganizationMembers,
  listOrganizations,
  organizationJson,
  removeOrganization,
  removeOrganizationMember,
  setOrganizationMember,
  updateOrganization,
  type MemberInput,
  type OrganizationInput,
} from '../../flows/manage/organizations.ts';
import type { OrganizationRecord } from '../../store/types.ts';
import { confirmPage, type OtherChange } from '../../ui/console.ts';
import { organizationFormPage, organizationPage, organizationsPage } from '../../ui/console-organizations.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { SafeHtml } from '../../ui/html.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { consoleKit, editOverOriginal, encodeOriginal, postedOriginal, reasonOf, shown, single, userPath } from './kit.ts';

export const organizationPath = (id: string) => `${CONSOLE_PATHS.orgs}/${encodeURIComponent(id)}`;

const NOTICES: Readonly<Record<string, MessageKey>> = {
  added: 'console.org.added',
  saved: 'console.org.updated',
  removed: 'console.org.removed',
  member: 'console.org.member.added',
  'member-removed': 'console.org.member.removed',
};
const formOf = (organization: OrganizationRecord): FormValues => formValues(ORGANIZATION_FIELDS, organizationJson(organization));
/** The fields its edit form changes. */
const UPDATE_KEYS: readonly string[] = formKeys(ORGANIZATION_FIELDS).filter((key) => ORGANIZATION_FIELDS.find((field) => field.name === key)?.update);

export const organizationPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may } = consoleKit(app, options);
  const idOf = (request: FastifyRequest) => (request.params as { id: string }).id;
  const noticeOf = (request: FastifyRequest) => NOTICES[single(request.query as RawParams, 'done', 20)];

  app.get(CONSOLE_PATHS.orgs, page('orgs'), async (request, reply) => {
    const f = frame(request, reply, 'orgs');
    const done = noticeOf(request);
    return pages.send(
      reply,
      200,
      organizationsPage(f, {
        organizations: (await listOrganizations(deps)).map((organization) => ({
          name: organization.name,
          domain: organization.domain,
          verified: organization.domainVerified,
          href: organizationPath(organization.id),
        })),
        addHref: may(request, 'orgs', true) ? `${CONSOLE_PATHS.orgs}/new` : null,
        notice: done === undefined ? undefined : f.ui.t.text(done),
      }),
    );
  });

  const newForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: FormValues, error?: SafeHtml) =>
    pages.send(
      reply,
      status,
      organizationFormPage(frame(request, reply, 'orgs'), { action: CONSOLE_PATHS.orgs, values, cancel: CONSOLE_PATHS.orgs, operation: 'create', error }),
    );

  app.get(`${CONSOLE_PATHS.orgs}/new`, confirm('orgs'), async (request, reply) => newForm(request, reply, 200, formValues(ORGANIZATION_FIELDS, {})));

  app.post(CONSOLE_PATHS.orgs, change('orgs'), async (request, reply) => {
    const values = postedValues(ORGANIZATION_FIELDS, rawForm(request));
    // As `org add`: a field left empty is not given.
    const given = formKeys(ORGANIZATION_FIELDS).filter((key) => !sameValue(values[key], '') && values[key] !== false);
    let added;
    try {
      added = await addOrganization(manage(request), inputOf(ORGANIZATION_FIELDS, values, given) as OrganizationInput);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'orgs').ui, error));
    }
    return reply.redirect(`${organizationPath(added.id)}?done=added`, 303);
  });

  const orgPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    organization: OrganizationRecord,
    values: FormValues,
    errors: {
      readonly edit?: SafeHtml;
      readonly otherChange?: readonly OtherChange[];
      readonly member?: SafeHtml;
      readonly memberValues?: FormValues;
    } = {},
  ) => {
    const f = frame(request, reply, 'orgs');
    const { ui } = f;
    const writable = may(request, 'orgs', true);
    const done = noticeOf(request);
    const members = await listOrganizationMembers(deps, organization.id);
    const path = organizationPath(organization.id);
    return pages.send(
      reply,
      status,
      organizationPage(f, {
        title: organization.name,
        facts: [
          { label: ui.t.text('console.org.id'), value: organization.id },
          ...(writable
            ? []
            : ORGANIZATION_FIELDS.filter((field) => field.form !== null && field.update).map((field) => ({
                label: ui.t.text(field.form!.label as MessageKey),
                value: shown(ui, formOf(organization)[field.name] ?? '') || '-',
              }))),
          { label: ui.t.text('console.org.createdAt'), value: ui.t.time(organization.createdAt) },
        ],
        edit: writable
          ? {
              action: path,
              values,
              cancel: CONSOLE_PATHS.orgs,
              operation: 'update',
              original: encodeOriginal(formOf(organization)),
              error: errors.edit,
              otherChange: errors.otherChange,
            }
          : null,
        members: members.map((member) => ({ username: member.username, role: member.role, href: userPath(member.username) })),
        membersAction: writable ? `${path}/members` : null,
        memberValues: errors.memberValues ?? formValues(ORGANIZATION_MEMBER_FIELDS, { role: 'member' }),
        memberError: errors.member,
        removeHref: writable ? `${path}/remove` : null,
        notice: done === undefined ? undefined : ui.t.text(done),
      }),
    );
  };

  app.get(`${CONSOLE_PATHS.orgs}/:id`, page('orgs'), async (request, reply) => {
    const organization = await getOrganization(deps, idOf(request));
    return orgPage(request, reply, 200, organization, formOf(organization));
  });

  app.post(`${CONSOLE_PATHS.orgs}/:id`, change('orgs'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getOrganization(deps, idOf(request));
    const now = formOf(current);
    const values = postedValues(ORGANIZATION_FIELDS, form);
    // Organizations carry no version: an unchecked box on a form opened before someone else
    // required a passkey would otherwise turn it off unseen. Their change refuses the edit.
    const ui = frame(request, reply, 'orgs').ui;
    const { changed, otherChange, merged } = editOverOriginal(ui, UPDATE_KEYS, postedOriginal(form, UPDATE_KEYS) ?? now, now, values);
    if (otherChange.length > 0) return orgPage(request, reply, 409, current, merged, { otherChange });
    if (changed.length > 0) {
      try {
        await updateOrganization(manage(request), current.id, inputOf(ORGANIZATION_FIELDS, values, changed) as OrganizationInput);
      } catch (error) {
        if (!(error instanceof ManageError)) throw error;
        return orgPage(request, reply, MANAGE_STATUS[error.kind], current, values, { edit: reasonOf(ui, error) });
      }
    }
    return reply.redirect(`${organizationPath(current.id)}?done=saved`, 303);
  });

  app.post(`${CONSOLE_PATHS.orgs}/:id/members`, change('orgs'), async (request, reply) => {
    const current = await getOrganization(deps, idOf(request));
    const values = postedValues(ORGANIZATION_MEMBER_FIELDS, rawForm(request));
    try {
      await setOrganizationMember(
        manage(request),
        current.id,
        inputOf(ORGANIZATION_MEMBER_FIELDS, values, formKeys(ORGANIZATION_MEMBER_FIELDS)) as MemberInput,
      );
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return orgPage(request, reply, MANAGE_STATUS[error.kind], current, formOf(current), {
        member: reasonOf(frame(request, reply, 'orgs').ui, error),
        memberValues: values,
      });
    }
    return reply.redirect(`${organizationPath(current.id)}?done=member`, 303);
  });

  app.post(`${CONSOLE_PATHS.orgs}/:id/members/remove`, change('orgs'), async (request, reply) => {
    const current = await getOrganization(deps, idOf(request));
    await removeOrganizationMember(manage(request), current.id, single(rawForm(request), 'username', 256));
    return reply.redirect(`${organizationPath(current.id)}?done=member-removed`, 303);
  });

  app.get(`${CONSOLE_PATHS.orgs}/:id/remove`, confirm('orgs'), async (request, reply) => {
    const organization = await getOrganization(deps, idOf(request));
    const f = frame(request, reply, 'orgs');
    const { t } = f.ui;
    const path = organizationPath(organization.id);
    return pages.send(
      reply,
      200,
      confirmPage(f, t.text('console.org.remove'), t.text('console.org.remove.confirm', { name: organization.name }), `${path}/remove`, path),
    );
  });

  app.post(`${CONSOLE_PATHS.orgs}/:id/remove`, change('orgs'), async (request, reply) => {
    await removeOrganization(manage(request), idOf(request));
    return reply.redirect(`${CONSOLE_PATHS.orgs}?done=removed`, 303);
  });
};

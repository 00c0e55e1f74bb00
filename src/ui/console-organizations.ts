/**
 * The operator console's organization pages (docs/organizations.md): the list, the form to add
 * one or change it from the organizations' field table (flows/manage/fields/organizations.ts),
 * and an organization's members with the form that adds one. The routes
 * (http/console/organizations.ts) decide what each page may offer.
 */
import { ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_FIELDS } from '../flows/manage/fields/organizations.ts';
import type { FormValues } from '../flows/manage/fields/field.ts';
import { consolePage, fieldTableForm, linkButton, notice, postButton, staleChange, tableForm, type ConsoleFrame, type FieldFormView } from './console.ts';
import { html, type SafeHtml } from './html.ts';
import type { MessageKey } from './i18n.ts';
import { csrfField } from './pages.ts';

export interface OrganizationListItem {
  readonly name: string;
  readonly domain: string | null;
  readonly verified: boolean;
  readonly href: string;
}

export function organizationsPage(
  frame: ConsoleFrame,
  view: { readonly organizations: readonly OrganizationListItem[]; readonly addHref: string | null; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.org.title'),
    html`<h1>${t.html('console.org.title')}</h1>
${notice(view.notice)}
<p>${t.html('console.org.intro')}</p>
${view.addHref === null ? null : html`<p>${linkButton(view.addHref, t.text('console.org.add'))}</p>`}
${
  view.organizations.length === 0
    ? html`<p>${t.html('console.org.none')}</p>`
    : html`<ul class="items">${view.organizations.map(
        (organization) =>
          html`<li><a href="${organization.href}">${organization.name}</a>${organization.domain === null ? null : html`<br><span class="muted">${organization.verified ? t.html('console.org.domainVerified', { domain: organization.domain }) : t.html('console.org.domainUnverified', { domain: organization.domain })}</span>`}</li>`,
      )}</ul>`
}`,
  );
}

export type OrganizationFormView = FieldFormView;

function organizationForm(frame: ConsoleFrame, view: OrganizationFormView): SafeHtml {
  return fieldTableForm(frame, ORGANIZATION_FIELDS, view, view.operation === 'create' ? 'console.org.create' : 'console.org.save');
}

export function organizationFormPage(frame: ConsoleFrame, view: OrganizationFormView): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.org.add'),
    html`<h1>${t.html('console.org.add')}</h1>
${notice(view.error, 'error')}
${organizationForm(frame, view)}`,
  );
}

export interface OrganizationMemberItem {
  readonly username: string;
  readonly role: string;
  readonly href: string;
}

export interface OrganizationPageView {
  readonly title: string;
  readonly facts: readonly { readonly label: string; readonly value: string | SafeHtml }[];
  /** The form that changes it (null: the operator may not). */
  readonly edit: OrganizationFormView | null;
  readonly members: readonly OrganizationMemberItem[];
  /** Where members are added and removed (null: the operator may not). */
  readonly membersAction: string | null;
  readonly memberValues: FormValues;
  readonly memberError?: string | SafeHtml | undefined;
  readonly removeHref: string | null;
  readonly notice?: string | undefined;
}

export function organizationPage(frame: ConsoleFrame, view: OrganizationPageView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const role = (name: string) => t.text(`console.org.role.${name}` as MessageKey);
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
${notice(view.notice)}
${notice(view.edit?.error, 'error')}
${staleChange(ui, 'console.org.stale', view.edit?.otherChange)}
<dl class="facts">${view.facts.map((fact) => html`<dt>${fact.label}</dt><dd><code>${fact.value}</code></dd>`)}</dl>
<section aria-labelledby="members-heading"><h2 id="members-heading">${t.html('console.org.members')}</h2>
${
  view.members.length === 0
    ? html`<p>${t.html('console.org.members.none')}</p>`
    : html`<ul class="items">${view.members.map(
        (member) =>
          html`<li><a href="${member.href}">${member.username}</a> <span class="muted">${role(member.role)}</span>${view.membersAction === null ? null : html` ${postButton(csrf, `${view.membersAction}/remove`, t.text('console.org.member.removeNamed', { username: member.username }), { username: member.username })}`}</li>`,
      )}</ul>`
}
${
  view.membersAction === null
    ? null
    : html`<h3 id="add-member-heading">${t.html('console.org.member.add')}</h3>
${notice(view.memberError, 'error')}
<form method="post" action="${view.membersAction}" aria-labelledby="add-member-heading">
${csrfField(csrf)}
${tableForm(ui, ORGANIZATION_MEMBER_FIELDS, view.memberValues, { operation: 'create' })}
<div class="actions"><button type="submit" class="primary">${t.html('console.org.member.submit')}</button></div>
</form>`
}
</section>
${view.edit === null ? null : html`<section aria-labelledby="edit-heading"><h2 id="edit-heading">${t.html('console.org.edit')}</h2>${organizationForm(frame, view.edit)}</section>`}
${view.removeHref === null ? null : html`<div class="actions">${linkButton(view.removeHref, t.text('console.org.remove'))}</div>`}`,
  );
}

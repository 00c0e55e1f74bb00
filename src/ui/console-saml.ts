/**
 * The operator console's SAML service provider pages (docs/saml.md): the list, the form to add
 * one or change it from the SPs' field table (flows/manage/fields/saml-service-providers.ts).
 * The routes (http/console/saml.ts) decide what each page may offer.
 */
import { SAML_SP_FIELDS } from '../flows/manage/fields/saml-service-providers.ts';
import { consolePage, fieldTableForm, linkButton, notice, staleChange, type ConsoleFrame, type FieldFormView } from './console.ts';
import { html, type SafeHtml } from './html.ts';

export interface SamlSpListItem {
  readonly entityId: string;
  readonly name: string | null;
  readonly href: string;
}

export function samlSpsPage(
  frame: ConsoleFrame,
  view: { readonly sps: readonly SamlSpListItem[]; readonly addHref: string | null; readonly metadata: string; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.saml.title'),
    html`<h1>${t.html('console.saml.title')}</h1>
${notice(view.notice)}
<p>${t.html('console.saml.intro', { metadata: view.metadata })}</p>
${view.addHref === null ? null : html`<p>${linkButton(view.addHref, t.text('console.saml.add'))}</p>`}
${
  view.sps.length === 0
    ? html`<p>${t.html('console.saml.none')}</p>`
    : html`<ul class="items">${view.sps.map((sp) => html`<li><a href="${sp.href}">${sp.name ?? sp.entityId}</a>${sp.name === null ? null : html`<br><code class="muted">${sp.entityId}</code>`}</li>`)}</ul>`
}`,
  );
}

export type SamlSpFormView = FieldFormView;

function spForm(frame: ConsoleFrame, view: SamlSpFormView): SafeHtml {
  return fieldTableForm(frame, SAML_SP_FIELDS, view, view.operation === 'create' ? 'console.saml.create' : 'console.saml.save');
}

export function samlSpFormPage(frame: ConsoleFrame, view: SamlSpFormView & { readonly metadata: string }): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.saml.add'),
    html`<h1>${t.html('console.saml.add')}</h1>
${notice(view.error, 'error')}
<p>${t.html('console.saml.intro', { metadata: view.metadata })}</p>
${spForm(frame, view)}`,
  );
}

export interface SamlSpPageView {
  readonly title: string;
  readonly facts: readonly { readonly label: string; readonly value: string | SafeHtml }[];
  /** The form that changes it (null: the operator may not). */
  readonly edit: SamlSpFormView | null;
  readonly removeHref: string | null;
  readonly notice?: string | undefined;
}

export function samlSpPage(frame: ConsoleFrame, view: SamlSpPageView): string {
  const { ui } = frame;
  const { t } = ui;
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
${notice(view.notice)}
${notice(view.edit?.error, 'error')}
${staleChange(ui, 'console.saml.stale', view.edit?.otherChange)}
<dl class="facts">${view.facts.map((fact) => html`<dt>${fact.label}</dt><dd><code>${fact.value}</code></dd>`)}</dl>
${view.edit === null ? null : html`<section aria-labelledby="edit-heading"><h2 id="edit-heading">${t.html('console.saml.edit')}</h2>${spForm(frame, view.edit)}</section>`}
${view.removeHref === null ? null : html`<div class="actions">${linkButton(view.removeHref, t.text('console.saml.remove'))}</div>`}`,
  );
}

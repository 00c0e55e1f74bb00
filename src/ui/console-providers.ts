/**
 * The operator console's identity-provider pages: the list in the order of the sign-in
 * buttons, a provider's form for its kind from the providers' field table
 * (flows/manage/fields/providers.ts), and what the server says of one (its redirect URI,
 * whether a secret is stored). The routes (http/console/providers.ts) decide what each page
 * may offer.
 */
import { PROVIDER_FIELDS } from '../flows/manage/fields/providers.ts';
import type { FormValues } from '../flows/manage/fields/field.ts';
import { consolePage, linkButton, notice, staleChange, tableForm, type ConsoleFrame } from './console.ts';
import { html, type SafeHtml } from './html.ts';
import type { MessageKey } from './i18n.ts';
import { csrfField, type Ui } from './pages.ts';

export interface ProviderListItem {
  readonly id: string;
  readonly kind: string;
  readonly name: string;
  readonly only: boolean;
  readonly allowLinking: boolean;
  readonly trustUpstreamMfa: boolean;
  /** Its page: the form for an operator who may change providers, its settings for the others. */
  readonly href: string;
}

/** A kind in words: `OpenID provider`, `GitHub`, `LDAP directory`. */
export const kindName = (ui: Ui, kind: string): string => ui.t.text(`console.providers.kind.${kind}` as MessageKey);

export function providersPage(
  frame: ConsoleFrame,
  view: {
    readonly providers: readonly ProviderListItem[];
    readonly addHrefs: readonly { readonly kind: string; readonly href: string }[] | null;
    readonly notice?: string | undefined;
  },
): string {
  const { t } = frame.ui;
  const tag = (key: MessageKey) => html` <span class="tag">${t.html(key)}</span>`;
  return consolePage(
    frame,
    t.text('console.providers.title'),
    html`<h1>${t.html('console.providers.title')}</h1>
${notice(view.notice)}
${view.addHrefs === null ? null : html`<div class="actions">${view.addHrefs.map((add) => linkButton(add.href, t.text(`console.providers.add.${add.kind}` as MessageKey)))}</div>`}
${
  view.providers.length === 0
    ? html`<p>${t.html('console.providers.none')}</p>`
    : html`<ul class="items">${view.providers.map((provider) => html`<li><a href="${provider.href}">${provider.name}</a>${provider.only ? tag('console.providers.only') : null}${provider.allowLinking ? tag('console.providers.linking') : null}${provider.trustUpstreamMfa ? tag('console.providers.mfa') : null}<br><span class="muted"><code>${provider.id}</code> · ${kindName(frame.ui, provider.kind)}</span></li>`)}</ul>`
}`,
  );
}

export interface ProviderFormView {
  readonly title: string;
  readonly action: string;
  readonly submit: string;
  readonly kind: string;
  readonly values: FormValues;
  /** Editing: the values as read (a change made meanwhile is found against them) and what the server says of it. */
  readonly edit: { readonly original: string; readonly facts: readonly { readonly label: string; readonly value: string }[] } | null;
  readonly notice?: string | undefined;
  readonly error?: string | SafeHtml | undefined;
  readonly otherChange?: readonly { readonly field: string; readonly before: string; readonly after: string }[] | undefined;
  readonly cancel: string;
  /** Under the form: remove, and the provider's events. */
  readonly footer?: SafeHtml | undefined;
}

export function providerFormPage(frame: ConsoleFrame, view: ProviderFormView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
${notice(view.notice)}${notice(view.error, 'error')}
${staleChange(ui, 'console.provider.stale', view.otherChange)}
${view.edit === null ? null : html`<dl class="facts">${view.edit.facts.map((fact) => html`<dt>${fact.label}</dt><dd><code>${fact.value}</code></dd>`)}</dl>`}
<form method="post" action="${view.action}" class="app-form">
${csrfField(csrf)}
<input type="hidden" name="kind" value="${view.kind}">
${view.edit === null ? html`<input type="hidden" name="return_to" value="${view.action}/new?kind=${view.kind}">` : html`<input type="hidden" name="original" value="${view.edit.original}">`}
${tableForm(ui, PROVIDER_FIELDS, view.values, { operation: view.edit === null ? 'create' : 'update', kind: view.kind })}
<div class="actions"><a class="button" href="${view.cancel}">${t.html('console.cancel')}</a><button type="submit" class="primary">${view.submit}</button></div>
</form>
${view.footer ?? null}`,
  );
}

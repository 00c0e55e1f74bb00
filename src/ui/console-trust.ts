/**
 * The operator console's trusted issuers: the identity providers whose ID-JAGs this server
 * redeems (docs/agents.md), listed, added from their field table
 * (flows/manage/fields/trusted-issuers.ts), and each on a page of its own with a way to stop
 * trusting it. Under the apps section: which assertions apps may redeem is part of what apps
 * may do. The routes (http/console/trust.ts) decide what each page may offer.
 */
import { TRUSTED_ISSUER_FIELDS } from '../flows/manage/fields/trusted-issuers.ts';
import { addFormPage, consolePage, linkButton, notice, type AddFormView, type ConsoleFrame } from './console.ts';
import { html, type SafeHtml } from './html.ts';

export interface TrustedIssuerListItem {
  readonly issuer: string;
  readonly keys: string;
  readonly href: string;
}

export function trustedIssuersPage(
  frame: ConsoleFrame,
  view: { readonly issuers: readonly TrustedIssuerListItem[]; readonly addHref: string | null; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.trust.title'),
    html`<h1>${t.html('console.trust.title')}</h1>
${notice(view.notice)}
<p>${t.html('console.trust.intro')}</p>
${view.addHref === null ? null : html`<p>${linkButton(view.addHref, t.text('console.trust.add'))}</p>`}
${
  view.issuers.length === 0
    ? html`<p>${t.html('console.trust.none')}</p>`
    : html`<ul class="items">${view.issuers.map((item) => html`<li><a href="${item.href}"><code>${item.issuer}</code></a><br><span class="muted">${item.keys}</span></li>`)}</ul>`
}`,
  );
}

export function trustedIssuerFormPage(frame: ConsoleFrame, view: AddFormView): string {
  return addFormPage(frame, TRUSTED_ISSUER_FIELDS, { title: 'console.trust.add', intro: 'console.trust.formIntro', submit: 'console.trust.create' }, view);
}

export function trustedIssuerPage(
  frame: ConsoleFrame,
  view: {
    readonly issuer: string;
    readonly facts: readonly { readonly label: string; readonly value: string | SafeHtml }[];
    readonly removeHref: string | null;
  },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.trust.one'),
    html`<h1>${t.html('console.trust.one')}</h1>
<dl class="facts"><dt>${t.html('console.trust.issuer')}</dt><dd><code>${view.issuer}</code></dd>${view.facts.map((fact) => html`<dt>${fact.label}</dt><dd>${fact.value}</dd>`)}</dl>
${view.removeHref === null ? null : html`<div class="actions">${linkButton(view.removeHref, t.text('console.trust.remove'))}</div>`}`,
  );
}

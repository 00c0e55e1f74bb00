/**
 * The operator console's webhook pages: the list with each webhook's deliveries by
 * state, the form to add one from the webhooks' field table (flows/manage/fields/webhooks.ts),
 * and a webhook's page with its dead letters, each sent again with a button. The routes
 * (http/console/webhooks.ts) decide what each page may offer.
 */
import { WEBHOOK_FIELDS } from '../flows/manage/fields/webhooks.ts';
import type { DeliveryCounts } from '../store/types.ts';
import { addFormPage, consolePage, linkButton, notice, postButton, type AddFormView, type ConsoleFrame } from './console.ts';
import { html, type SafeHtml } from './html.ts';
import type { Ui } from './pages.ts';

export interface WebhookListItem {
  readonly url: string;
  readonly events: readonly string[];
  readonly counts: DeliveryCounts;
  readonly href: string;
}

/** A webhook's deliveries in words: waiting, delivered, dead letters (these marked when there are any). */
export function countsOf(ui: Ui, counts: DeliveryCounts): SafeHtml {
  const { t } = ui;
  return html`${t.html('console.webhooks.pending', { count: counts.pending })} · ${t.html('console.webhooks.delivered', { count: counts.delivered })} · ${
    counts.dead > 0
      ? html`<span class="tag warning">${t.html('console.webhooks.dead', { count: counts.dead })}</span>`
      : t.html('console.webhooks.dead', { count: 0 })
  }`;
}

export function webhooksPage(
  frame: ConsoleFrame,
  view: { readonly webhooks: readonly WebhookListItem[]; readonly addHref: string | null; readonly notice?: string | undefined },
): string {
  const { ui } = frame;
  const { t } = ui;
  return consolePage(
    frame,
    t.text('console.webhooks.title'),
    html`<h1>${t.html('console.webhooks.title')}</h1>
${notice(view.notice)}
${view.addHref === null ? null : html`<p>${linkButton(view.addHref, t.text('console.webhooks.add'))}</p>`}
${
  view.webhooks.length === 0
    ? html`<p>${t.html('console.webhooks.none')}</p>`
    : html`<ul class="items">${view.webhooks.map((webhook) => html`<li><a href="${webhook.href}"><code>${webhook.url}</code></a><br><span class="muted">${webhook.events.join(', ')}</span><br>${countsOf(ui, webhook.counts)}</li>`)}</ul>`
}`,
  );
}

export function webhookFormPage(frame: ConsoleFrame, view: AddFormView): string {
  return addFormPage(frame, WEBHOOK_FIELDS, { title: 'console.webhooks.add', intro: 'console.webhook.intro', submit: 'console.webhook.create' }, view);
}

export interface DeadLetterView {
  readonly eventId: string;
  readonly eventAt: number;
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface WebhookPageView {
  readonly url: string;
  readonly facts: readonly { readonly label: string; readonly value: string | SafeHtml }[];
  readonly counts: DeliveryCounts;
  readonly deadLetters: readonly DeadLetterView[];
  /** Where dead letters are sent again (null: the operator may not). */
  readonly replayAction: string | null;
  readonly removeHref: string | null;
  readonly notice?: string | undefined;
}

export function webhookPage(frame: ConsoleFrame, view: WebhookPageView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const replay = view.replayAction;
  return consolePage(
    frame,
    t.text('console.webhook.title'),
    html`<h1>${t.html('console.webhook.title')}</h1>
${notice(view.notice)}
<dl class="facts"><dt>${t.html('console.webhook.url')}</dt><dd><code>${view.url}</code></dd>${view.facts.map((fact) => html`<dt>${fact.label}</dt><dd>${fact.value}</dd>`)}<dt>${t.html('console.webhook.deliveries')}</dt><dd>${countsOf(ui, view.counts)}</dd></dl>
<section aria-labelledby="dead-heading">
<h2 id="dead-heading">${t.html('console.webhook.deadLetters')}</h2>
${
  view.deadLetters.length === 0
    ? html`<p>${t.html('console.webhook.noDeadLetters')}</p>`
    : html`<table><thead><tr><th scope="col">${t.html('console.webhook.event')}</th><th scope="col">${t.html('console.webhook.tries')}</th><th scope="col">${t.html('console.webhook.lastError')}</th>${replay === null ? null : html`<td></td>`}</tr></thead>
<tbody>${view.deadLetters.map((letter) => html`<tr><td><code>${letter.eventId}</code><br><span class="muted">${t.time(letter.eventAt)}</span></td><td>${letter.attempts}</td><td>${letter.lastError ?? '-'}</td>${replay === null ? null : html`<td>${postButton(csrf, replay, t.text('console.webhook.replay'), { event_id: letter.eventId })}</td>`}</tr>`)}</tbody></table>
${replay === null ? null : html`<div class="actions">${postButton(csrf, replay, t.text('console.webhook.replayAll'))}</div>`}`
}
</section>
${view.removeHref === null ? null : html`<div class="actions">${linkButton(view.removeHref, t.text('console.webhooks.remove'))}</div>`}`,
  );
}

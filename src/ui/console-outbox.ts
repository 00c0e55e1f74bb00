/**
 * The operator console's page of the Shared Signals pushes' and mail's dead letters (the
 * webhooks' are on each webhook's page), each sent again with a button. The routes
 * (http/console/outbox.ts) decide whether the page may offer the buttons.
 */
import { consolePage, notice, postButton, type ConsoleFrame } from './console.ts';
import { html } from './html.ts';

export interface StreamDeadLetterView {
  readonly streamId: string;
  readonly eventId: string;
  readonly eventAt: number;
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface MailDeadLetterView {
  readonly id: string;
  readonly kind: string;
  readonly queuedAt: number;
  readonly attempts: number;
  readonly lastError: string | null;
}

export interface DeadLettersPageView {
  readonly streams: readonly StreamDeadLetterView[];
  readonly mail: readonly MailDeadLetterView[];
  /** Where dead letters are sent again (null: the operator may not). */
  readonly replayAction: string | null;
  readonly notice?: string | undefined;
}

export function deadLettersPage(frame: ConsoleFrame, view: DeadLettersPageView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const replay = view.replayAction;
  const head = (first: string) =>
    html`<thead><tr><th scope="col">${first}</th><th scope="col">${t.html('console.webhook.event')}</th><th scope="col">${t.html('console.webhook.tries')}</th><th scope="col">${t.html('console.webhook.lastError')}</th>${replay === null ? null : html`<td></td>`}</tr></thead>`;
  return consolePage(
    frame,
    t.text('console.outbox.title'),
    html`<h1>${t.html('console.outbox.title')}</h1>
${notice(view.notice, 'status')}
<section aria-labelledby="ssf-heading">
<h2 id="ssf-heading">${t.html('console.outbox.ssf')}</h2>
${
  view.streams.length === 0
    ? html`<p>${t.html('console.outbox.none')}</p>`
    : html`<table>${head(t.text('console.outbox.stream'))}
<tbody>${view.streams.map((letter) => html`<tr><td><code>${letter.streamId}</code></td><td><code>${letter.eventId}</code><br><span class="muted">${t.time(letter.eventAt)}</span></td><td>${letter.attempts}</td><td>${letter.lastError ?? '-'}</td>${replay === null ? null : html`<td>${postButton(csrf, replay, t.text('console.webhook.replay'), { kind: 'ssf', stream_id: letter.streamId, id: letter.eventId })}</td>`}</tr>`)}</tbody></table>`
}
</section>
<section aria-labelledby="mail-heading">
<h2 id="mail-heading">${t.html('console.outbox.mail')}</h2>
${
  view.mail.length === 0
    ? html`<p>${t.html('console.outbox.none')}</p>`
    : html`<table>${head(t.text('console.outbox.kind'))}
<tbody>${view.mail.map((letter) => html`<tr><td>${letter.kind}</td><td><code>${letter.id}</code><br><span class="muted">${t.time(letter.queuedAt)}</span></td><td>${letter.attempts}</td><td>${letter.lastError ?? '-'}</td>${replay === null ? null : html`<td>${postButton(csrf, replay, t.text('console.webhook.replay'), { kind: 'mail', id: letter.id })}</td>`}</tr>`)}</tbody></table>
${replay === null ? null : html`<div class="actions">${postButton(csrf, replay, t.text('console.webhook.replayAll'), { kind: 'mail' })}</div>`}`
}
</section>`,
  );
}

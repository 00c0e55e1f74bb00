/**
 * The operator console's provisioning page (docs/scim.md): the SCIM tokens, when each was last
 * used, the form to make one from their field table (flows/manage/fields/scim-tokens.ts), and
 * the address a provisioning system is given. The routes (http/console/scim.ts) decide what
 * the page may offer.
 */
import { SCIM_TOKEN_FIELDS } from '../flows/manage/fields/scim-tokens.ts';
import { addFormPage, consolePage, linkButton, notice, type AddFormView, type ConsoleFrame } from './console.ts';
import { html } from './html.ts';

export interface ScimTokenListItem {
  readonly name: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  /** Where it is removed after a confirmation (null: the operator may not). */
  readonly removeHref: string | null;
}

export function scimTokensPage(
  frame: ConsoleFrame,
  view: { readonly endpoint: string; readonly tokens: readonly ScimTokenListItem[]; readonly addHref: string | null; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.scimTokens.title'),
    html`<h1>${t.html('console.scimTokens.title')}</h1>
${notice(view.notice)}
<p>${t.html('console.scimTokens.intro')}</p>
<dl class="facts"><dt>${t.html('console.scimTokens.endpoint')}</dt><dd><code>${view.endpoint}</code></dd></dl>
${view.addHref === null ? null : html`<p>${linkButton(view.addHref, t.text('console.scimTokens.add'))}</p>`}
${
  view.tokens.length === 0
    ? html`<p>${t.html('console.scimTokens.none')}</p>`
    : html`<table><thead><tr><th scope="col">${t.html('console.scimToken.name')}</th><th scope="col">${t.html('console.scimToken.createdAt')}</th><th scope="col">${t.html('console.scimToken.lastUsed')}</th><td></td></tr></thead>
<tbody>${view.tokens.map((token) => html`<tr><td>${token.name}</td><td>${t.time(token.createdAt)}</td><td>${token.lastUsedAt === null ? t.html('console.scimToken.never') : t.time(token.lastUsedAt)}</td><td>${token.removeHref === null ? null : linkButton(token.removeHref, t.text('console.scimTokens.remove'))}</td></tr>`)}</tbody></table>`
}`,
  );
}

export function scimTokenFormPage(frame: ConsoleFrame, view: AddFormView): string {
  return addFormPage(frame, SCIM_TOKEN_FIELDS, { title: 'console.scimTokens.add', submit: 'console.scimToken.create' }, view);
}

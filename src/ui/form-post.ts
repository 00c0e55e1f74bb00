/**
 * OAuth 2.0 Form Post Response Mode §2: the answer to an authorization request as a page
 * whose form the browser posts to the client's redirect URI at once. The one script is
 * allowed by its hash (CSP), so no other inline script can run; without scripts, the
 * person presses Continue.
 */
import { createHash } from 'node:crypto';
import { html, SafeHtml } from './html.ts';
import { layout, type Ui } from './pages.ts';

const SUBMIT_SCRIPT = 'document.forms[0].submit();';
/** The CSP source that lets the page's one script run (CSP Level 3 §8.4 hash-source). */
export const FORM_POST_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(SUBMIT_SCRIPT).digest('base64')}'`;

export interface FormPostView {
  readonly redirectUri: string;
  readonly params: Readonly<Record<string, string>>;
}

export function formPostPage(ui: Ui, view: FormPostView): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('formPost.title'),
    html`<h1>${t.html('formPost.title')}</h1>
<form method="post" action="${view.redirectUri}">
${Object.entries(view.params).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<noscript><p>${t.html('formPost.noscript')}</p></noscript>
<div class="actions"><button type="submit" class="primary">${t.html('common.continue')}</button></div>
</form>
${new SafeHtml(`<script>${SUBMIT_SCRIPT}</script>`)}`,
  );
}

/**
 * OAuth 2.0 Form Post Response Mode §2: the answer to an authorization request as a page
 * whose form the browser posts to the client's redirect URI at once. The one script is
 * allowed by its hash (CSP), so no other inline script can run; without scripts, the
 * person presses Continue.
 */
import { createHash } from 'node:crypto';
import { html, SafeHtml } from './html.ts';
import { layout, type Site } from './pages.ts';

const SUBMIT_SCRIPT = 'document.forms[0].submit();';
/** The CSP source that lets the page's one script run (CSP Level 3 §8.4 hash-source). */
export const FORM_POST_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(SUBMIT_SCRIPT).digest('base64')}'`;

export interface FormPostView {
  readonly redirectUri: string;
  readonly params: Readonly<Record<string, string>>;
}

export function formPostPage(site: Site, view: FormPostView): string {
  return layout(site, 'Returning to the application', html`<h1>Returning to the application</h1>
<form method="post" action="${view.redirectUri}">
${Object.entries(view.params).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<noscript><p>Press Continue to go back to the application.</p></noscript>
<div class="actions"><button type="submit" class="primary">Continue</button></div>
</form>
${new SafeHtml(`<script>${SUBMIT_SCRIPT}</script>`)}`);
}

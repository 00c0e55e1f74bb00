import { ACCOUNT_PATH, END_SESSION_CONFIRM_PATH } from '../core/endpoints.ts';
import { html } from './html.ts';
import { csrfField, layout, type Ui } from './pages.ts';

export interface LogoutConfirmView {
  readonly csrf: string;
  /** The app that asked, when it could be told. */
  readonly clientName: string | null;
  /** Carried to the confirmation: client_id, post_logout_redirect_uri, state. */
  readonly fields: Readonly<Record<string, string>>;
  readonly signedInAs: string | null;
}

/** RP-Initiated Logout 1.0 §2: asks the person before signing them out at an app's request. */
export function logoutConfirmPage(ui: Ui, view: LogoutConfirmView): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('logout.title', { site: site.name }),
    html`<h1>${t.html('logout.title', { site: site.name })}</h1>
${view.clientName ? html`<p>${t.html('logout.asks', { client: view.clientName })}</p>` : null}
${view.signedInAs ? html`<p>${t.html('logout.signedInAs', { name: view.signedInAs })}</p>` : null}
<form method="post" action="${END_SESSION_CONFIRM_PATH}">
${csrfField(view.csrf)}
${Object.entries(view.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<div class="actions">
<a href="${ACCOUNT_PATH}">${t.html('logout.stay')}</a>
<button type="submit" class="primary">${t.html('logout.submit')}</button>
</div>
</form>`,
  );
}

/** Where the browser lands after logout when the app gave no (valid) address to go back to. */
export function signedOutPage(ui: Ui): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('signedOut.title'),
    html`<h1>${t.html('signedOut.heading')}</h1>
<p>${t.html('signedOut.text')}</p>`,
  );
}

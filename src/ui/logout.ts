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

/**
 * A step of single logout to the SAML SPs of a session (docs/saml.md): on to `href` (an SP's
 * SingleLogoutService with a LogoutRequest, or where the sign-out ends) by a page of ours, not
 * a redirect. The step may come at the end of a redirect chain that began at a form of ours
 * (the sign-out confirmation, the account page, the form that posted the previous SP its
 * LogoutRequest), and browsers hold every redirect of that chain to that page's CSP
 * `form-action`, which names none of the SPs.
 */
export function singleLogoutPage(ui: Ui, href: string): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('samlLogout.title'),
    html`<h1>${t.html('samlLogout.title')}</h1>
<p>${t.html('samlLogout.text')}</p>
<p><a href="${href}">${t.html('common.continue')}</a></p>`,
    { head: html`<meta http-equiv="refresh" content="0;url=${href}">` },
  );
}

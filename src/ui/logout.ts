import { html } from './html.ts';
import { csrfField, layout , type Site } from './pages.ts';

export interface LogoutConfirmView {
  readonly csrf: string;
  /** The app that asked, when it could be told. */
  readonly clientName: string | null;
  /** Carried to the confirmation: client_id, post_logout_redirect_uri, state. */
  readonly fields: Readonly<Record<string, string>>;
  readonly signedInAs: string | null;
}

/** RP-Initiated Logout 1.0 §2: asks the person before signing them out at an app's request. */
export function logoutConfirmPage(site: Site, view: LogoutConfirmView): string {
  return layout(site, `Sign out of ${site.name}?`, html`<h1>Sign out of ${site.name}?</h1>
${view.clientName ? html`<p><strong>${view.clientName}</strong> asks to sign you out.</p>` : null}
${view.signedInAs ? html`<p>You are signed in as <strong>${view.signedInAs}</strong>. Signing out also signs you out of the apps you signed in to here.</p>` : null}
<form method="post" action="/oauth/logout/confirm">
${csrfField(view.csrf)}
${Object.entries(view.fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}
<div class="actions">
<a href="/account">Stay signed in</a>
<button type="submit" class="primary">Sign out</button>
</div>
</form>`);
}

/** Where the browser lands after logout when the app gave no (valid) address to go back to. */
export function signedOutPage(site: Site): string {
  return layout(site, 'Signed out', html`<h1>You are signed out</h1>
<p>You can close this window.</p>`);
}

import type { DescribedAccess } from '../flows/resources.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout, signedInAs } from './pages.ts';

/** One approval as the account page shows it. */
export interface ConnectionView {
  readonly grantId: string;
  readonly clientName: string;
  /** The OpenID scopes and the APIs the approval covers, described. */
  readonly access: DescribedAccess;
  readonly approvedAt: number;
  readonly lastUsedAt: number | null;
  /** For a device sign-in: where and when the device asked. */
  readonly device: { readonly ip: string; readonly userAgent: string | null; readonly requestedAt: number } | null;
}

export interface AccountView {
  readonly csrf: string;
  readonly signedInAs: string;
  readonly connections: readonly ConnectionView[];
  /** Set right after a revocation. */
  readonly notice?: string | undefined;
  /** How the person signs in: passkeys and one-time codes. */
  readonly security?: SafeHtml | undefined;
}

const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

function time(ms: number): SafeHtml {
  return html`<time datetime="${new Date(ms).toISOString()}">${DATE.format(ms)} UTC</time>`;
}

function connection(view: ConnectionView, csrf: string): SafeHtml {
  const heading = `connection-${view.grantId}`;
  return html`<li>
<section aria-labelledby="${heading}">
<h2 id="${heading}">${view.clientName}</h2>
${view.device ? html`<p class="muted">Device sign-in</p>` : null}
<dl class="origin">
<dt>Access</dt><dd>${view.access.openid.map((scope) => scope.description).join('; ')}</dd>
${view.access.apis.map((api) => html`<dt>${api.name}</dt><dd>${api.scopes.map((scope) => scope.description).join('; ')}</dd>`)}
<dt>Approved</dt><dd>${time(view.approvedAt)}</dd>
<dt>Last used</dt><dd>${view.lastUsedAt === null ? 'not yet' : time(view.lastUsedAt)}</dd>
${view.device
  ? html`<dt>Device</dt><dd>${view.device.userAgent ?? 'unnamed device'}, from ${view.device.ip}, asked at ${time(view.device.requestedAt)}</dd>`
  : null}
</dl>
<form method="post" action="/account/revoke">
${csrfField(csrf)}
<input type="hidden" name="grant_id" value="${view.grantId}">
<button type="submit">Revoke</button>
</form>
</section>
</li>`;
}

/** The user's connected applications and devices, each with a Revoke button. */
export function accountPage(view: AccountView): string {
  return layout('Connected apps and devices', html`<h1>Connected apps and devices</h1>
<p class="muted">These can use your account. Revoke any you no longer use or do not recognise: it is signed out at once and must ask you again.</p>
${view.notice ? html`<p class="alert" role="status">${view.notice}</p>` : null}
${view.connections.length === 0
  ? html`<p>No applications or devices are connected to your account.</p>`
  : html`<ul class="connections">${view.connections.map((item) => connection(item, view.csrf))}</ul>`}
${view.security ?? null}
${signedInAs(view.signedInAs, view.csrf, '/account')}`);
}

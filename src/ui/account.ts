import type { DescribedAccess } from '../flows/resources.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout, signedInAs, type Site } from './pages.ts';
import { describeUserAgent } from './user-agent.ts';

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

/** One signed-in browser. */
export interface BrowserSessionView {
  readonly signedInAt: number;
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** The browser looking at the page. */
  readonly current: boolean;
}

/** One of the person's own recent sign-ins or approvals (from the audit trail). */
export interface ActivityView {
  readonly what: string;
  readonly at: number;
  readonly ip: string | null;
  readonly userAgent: string | null;
}

export interface AccountView {
  readonly csrf: string;
  readonly signedInAs: string;
  readonly connections: readonly ConnectionView[];
  readonly sessions: readonly BrowserSessionView[];
  readonly activity: readonly ActivityView[];
  /** Set right after a revocation or a password change. */
  readonly notice?: string | undefined;
  /** Why the password was not changed. */
  readonly passwordError?: string | undefined;
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
  ? html`<dt>Device</dt><dd>${view.device.userAgent === null ? 'unnamed device' : describeUserAgent(view.device.userAgent)}, from ${view.device.ip}, asked at ${time(view.device.requestedAt)}</dd>`
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
export function accountPage(site: Site, view: AccountView): string {
  return layout(site, 'Connected apps and devices', html`<h1>Connected apps and devices</h1>
<p class="muted">These can use your account. Revoke any you no longer use or do not recognise: it is signed out at once and must ask you again.</p>
${view.notice ? html`<p class="alert" role="status">${view.notice}</p>` : null}
${view.connections.length === 0
  ? html`<p>No applications or devices are connected to your account.</p>`
  : html`<ul class="connections">${view.connections.map((item) => connection(item, view.csrf))}</ul>`}
<h2 id="sessions-heading">Signed-in browsers</h2>
<ul class="sessions" aria-labelledby="sessions-heading">${view.sessions.map(
  (session) => html`<li>${session.userAgent === null ? 'Unknown browser' : describeUserAgent(session.userAgent)}${session.ip ? html`, from ${session.ip}` : null}, signed in ${time(session.signedInAt)}${session.current ? html` <strong>(this browser)</strong>` : null}</li>`,
)}</ul>
<form method="post" action="/account/sign-out-everywhere">
${csrfField(view.csrf)}
<button type="submit">Sign out everywhere</button>
</form>
${view.security ?? null}
<section aria-labelledby="activity-heading">
<h2 id="activity-heading">Recent sign-ins and approvals</h2>
${view.activity.length === 0
  ? html`<p class="muted">None recorded yet.</p>`
  : html`<details class="activity">
<summary>Show the last ${view.activity.length === 1 ? 'one' : String(view.activity.length)}</summary>
<ul class="activity">${view.activity.map((item) => html`<li>${item.what}, ${time(item.at)}${item.ip ? html`, from ${item.ip}` : null}${item.userAgent ? html`, ${describeUserAgent(item.userAgent)}` : null}</li>`)}</ul>
</details>`}
<p class="muted">If you do not recognise one, change your password: every other browser is then signed out.</p>
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">Change password</h2>
${view.passwordError ? html`<p class="alert error" role="alert">${view.passwordError}</p>` : null}
<form method="post" action="/account/password">
${csrfField(view.csrf)}
<label for="current_password">Current password</label>
<input type="password" id="current_password" name="current_password" autocomplete="current-password" required>
<label for="new_password">New password</label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" minlength="8" required>
<div class="actions"><button type="submit">Change password</button></div>
</form>
</section>
${signedInAs(view.signedInAs, view.csrf, '/account')}`);
}

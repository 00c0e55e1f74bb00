import { ACCOUNT_PATH, ACCOUNT_REVOKE_PATH, CHANGE_EMAIL_PATH, CHANGE_PASSWORD_PATH, CONSOLE_PATHS, SIGN_OUT_EVERYWHERE_PATH } from '../core/endpoints.ts';
import type { DescribedAccess } from '../flows/resources.ts';
import { html, type SafeHtml } from './html.ts';
import { apiName, apiScope, csrfField, layout, openIdScope, signedInAs, type Ui } from './pages.ts';
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
  readonly kind: 'signed-in' | 'approved' | 'approved-device';
  /** The app approved; null when it has since been removed. */
  readonly clientName: string | null;
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
  /** The account has no password (made with a passkey, or through a provider): no form to change one. */
  readonly noPassword?: { readonly recovery: boolean } | undefined;
  /** How the person signs in: passkeys and one-time codes. */
  readonly security?: SafeHtml | undefined;
  /** The accounts at upstream providers they sign in through; none: the section is not shown. */
  readonly identities?: readonly { readonly provider: string; readonly label: string; readonly linkedAt: number }[] | undefined;
  /** The person has a role in the operator console: a link to it. */
  readonly operator?: boolean | undefined;
  /** Their e-mail address, and the form to change it where a link can be mailed (`changeable`). */
  readonly email?:
    | {
        readonly current: string | null;
        readonly verified: boolean;
        /** A new address waiting for its link. */
        readonly pending: string | null;
        readonly changeable: boolean;
        /** Why the last request was refused. */
        readonly error?: string | undefined;
        /** What was typed, shown again with its error. */
        readonly typed?: string | undefined;
      }
    | undefined;
}

function emailSection(ui: Ui, view: NonNullable<AccountView['email']>, csrf: string): SafeHtml {
  const { t } = ui;
  return html`<section aria-labelledby="email-heading">
<h2 id="email-heading">${t.html('account.email.heading')}</h2>
<p>${view.current === null ? t.html('account.email.none') : t.html('account.email.current', { email: view.current })}${
    view.current !== null && !view.verified ? html` ${t.html('account.email.unverified')}` : null
  }</p>
${view.pending === null ? null : html`<p class="muted">${t.html('account.email.pending', { email: view.pending })}</p>`}
${
  view.changeable
    ? html`${view.error ? html`<p class="alert error" role="alert" id="email-error">${view.error}</p>` : null}
<form method="post" action="${CHANGE_EMAIL_PATH}">
${csrfField(csrf)}
<label for="new_email">${t.html('account.email.new')}</label>
<input type="email" id="new_email" name="email" autocomplete="email" autocapitalize="none" spellcheck="false" required maxlength="254" value="${view.typed ?? ''}" aria-describedby="${view.error ? 'email-error email-hint' : 'email-hint'}" ${view.error ? html`aria-invalid="true"` : null}>
<p class="muted" id="email-hint">${t.html('account.email.hint')}</p>
<div class="actions"><button type="submit">${t.html('account.email.submit')}</button></div>
</form>`
    : null
}
</section>`;
}

function connection(ui: Ui, view: ConnectionView, csrf: string): SafeHtml {
  const { t } = ui;
  const heading = `connection-${view.grantId}`;
  const list = t.text('common.listSeparator');
  return html`<li>
<section aria-labelledby="${heading}">
<h2 id="${heading}">${view.clientName}</h2>
${view.device ? html`<p class="muted">${t.html('account.connection.deviceSignIn')}</p>` : null}
<dl class="origin">
<dt>${t.html('account.connection.access')}</dt><dd>${view.access.openid.map((scope) => openIdScope(ui, scope)).join(list)}</dd>
${view.access.apis.map((api) => html`<dt>${apiName(ui, api)}</dt><dd>${api.scopes.map((scope) => apiScope(ui, scope)).join(list)}</dd>`)}
<dt>${t.html('account.connection.approved')}</dt><dd>${t.time(view.approvedAt)}</dd>
<dt>${t.html('common.lastUsed')}</dt><dd>${view.lastUsedAt === null ? t.html('common.notYet') : t.time(view.lastUsedAt)}</dd>
${
  view.device
    ? html`<dt>${t.html('account.connection.device')}</dt><dd>${t.html('account.connection.deviceText', {
        device: view.device.userAgent === null ? t.text('account.connection.unnamedDevice') : describeUserAgent(view.device.userAgent),
        ip: view.device.ip,
        time: t.time(view.device.requestedAt),
      })}</dd>`
    : null
}
</dl>
<form method="post" action="${ACCOUNT_REVOKE_PATH}">
${csrfField(csrf)}
<input type="hidden" name="grant_id" value="${view.grantId}">
<button type="submit">${t.html('account.connection.revoke')}</button>
</form>
</section>
</li>`;
}

function browserSession(ui: Ui, session: BrowserSessionView): SafeHtml {
  const { t } = ui;
  const values = {
    browser: session.userAgent === null ? t.text('account.sessions.unknownBrowser') : describeUserAgent(session.userAgent),
    ip: session.ip ?? '',
    time: t.time(session.signedInAt),
  };
  return html`<li>${t.html(session.ip ? 'account.sessions.itemFrom' : 'account.sessions.item', values)}${session.current ? html` ${t.html('account.sessions.current')}` : null}</li>`;
}

function activityItem(ui: Ui, item: ActivityView): SafeHtml {
  const { t } = ui;
  const client = item.clientName ?? t.text('account.activity.removedApp');
  const what =
    item.kind === 'signed-in'
      ? t.text('account.activity.signedIn')
      : item.kind === 'approved-device'
        ? t.text('account.activity.approvedDevice', { client })
        : t.text('account.activity.approved', { client });
  const values = { what, time: t.time(item.at), ip: item.ip ?? '' };
  return html`<li>${t.html(item.ip ? 'account.activity.itemFrom' : 'account.activity.item', values)}${item.userAgent ? html`, <bdi>${describeUserAgent(item.userAgent)}</bdi>` : null}</li>`;
}

/** The user's connected applications and devices, each with a Revoke button. */
export function accountPage(ui: Ui, view: AccountView): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('account.title'),
    html`<h1>${t.html('account.title')}</h1>
<p class="muted">${t.html('account.intro')}</p>
${view.notice ? html`<p class="alert" role="status">${view.notice}</p>` : null}
${
  view.connections.length === 0
    ? html`<p>${t.html('account.noConnections')}</p>`
    : html`<ul class="connections">${view.connections.map((item) => connection(ui, item, view.csrf))}</ul>`
}
<h2 id="sessions-heading">${t.html('account.sessions.heading')}</h2>
<ul class="sessions" aria-labelledby="sessions-heading">${view.sessions.map((session) => browserSession(ui, session))}</ul>
<form method="post" action="${SIGN_OUT_EVERYWHERE_PATH}">
${csrfField(view.csrf)}
<button type="submit">${t.html('account.sessions.signOutEverywhere')}</button>
</form>
${
  view.identities && view.identities.length > 0
    ? html`<section aria-labelledby="identities-heading">
<h2 id="identities-heading">${t.html('account.identities.heading')}</h2>
<ul class="identities">${view.identities.map((identity) => html`<li>${t.html('account.identities.item', { provider: identity.provider, label: identity.label, time: t.time(identity.linkedAt) })}</li>`)}</ul>
</section>`
    : null
}
${view.email ? emailSection(ui, view.email, view.csrf) : null}
${view.security ?? null}
<section aria-labelledby="activity-heading">
<h2 id="activity-heading">${t.html('account.activity.heading')}</h2>
${
  view.activity.length === 0
    ? html`<p class="muted">${t.html('account.activity.none')}</p>`
    : html`<details class="activity">
<summary>${t.html('account.activity.show', { count: view.activity.length })}</summary>
<ul class="activity">${view.activity.map((item) => activityItem(ui, item))}</ul>
</details>`
}
<p class="muted">${t.html('account.activity.advice')}</p>
</section>
<section aria-labelledby="password-heading">
<h2 id="password-heading">${t.html('account.password.heading')}</h2>
${
  view.noPassword
    ? html`<p>${t.html('account.password.none')}${view.noPassword.recovery ? html` ${t.html('account.password.noneRecovery')}` : null}</p>`
    : html`${view.passwordError ? html`<p class="alert error" role="alert">${view.passwordError}</p>` : null}
<form method="post" action="${CHANGE_PASSWORD_PATH}">
${csrfField(view.csrf)}
<label for="current_password">${t.html('account.password.current')}</label>
<input type="password" id="current_password" name="current_password" autocomplete="current-password" required>
<label for="new_password">${t.html('password.new')}</label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" minlength="8" required>
<div class="actions"><button type="submit">${t.html('account.password.submit')}</button></div>
</form>`
}
</section>
${view.operator ? html`<p class="more"><a href="${CONSOLE_PATHS.dashboard}">${ui.t.html('console.title')}</a></p>` : null}
${signedInAs(ui, view.signedInAs, view.csrf, ACCOUNT_PATH)}`,
  );
}

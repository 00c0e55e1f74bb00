/**
 * The operator console's pages: server-rendered in the site's layout, forms that
 * work without JavaScript, every value escaped by the html`` tag. The routes
 * (http/console.ts) decide what each page may offer; a page shows a change's button only to
 * an operator whose role allows it.
 */
import { SIGN_OUT_PATH } from '../core/endpoints.ts';
import { CLIENT_FIELDS } from '../flows/manage/fields/clients.ts';
import { RESOURCE_FIELDS } from '../flows/manage/fields/resources.ts';
import { appliesTo, formNames, type Field, type FieldTable, type FormValue, type FormValues } from '../flows/manage/fields/field.ts';
import { USER_FIELDS } from '../flows/manage/fields/users.ts';
import type { OperatorRole } from '../core/scopes.ts';
import { html, type SafeHtml } from './html.ts';
import { isMessageKey, type MessageKey } from './i18n.ts';
import { csrfField, layout, openIdScope, type Ui } from './pages.ts';
import { describeUserAgent } from './user-agent.ts';

export const CONSOLE_SECTIONS = ['dashboard', 'users', 'apps', 'apis', 'providers', 'events', 'webhooks', 'saml', 'scim', 'orgs', 'keys'] as const;
export type ConsoleSection = (typeof CONSOLE_SECTIONS)[number];

/** What every console page is rendered with. */
export interface ConsoleFrame {
  readonly ui: Ui;
  readonly csrf: string;
  readonly operator: { readonly name: string; readonly role: OperatorRole };
  readonly section: ConsoleSection;
  /** The path of each section (http/endpoints.ts). */
  readonly paths: Readonly<Record<ConsoleSection, string>>;
}

const SECTION_NAMES: Readonly<Record<ConsoleSection, MessageKey>> = {
  dashboard: 'console.nav.dashboard',
  users: 'console.nav.users',
  apps: 'console.nav.apps',
  apis: 'console.nav.apis',
  providers: 'console.nav.providers',
  events: 'console.nav.events',
  webhooks: 'console.nav.webhooks',
  saml: 'console.nav.saml',
  scim: 'console.nav.scim',
  orgs: 'console.nav.orgs',
  keys: 'console.nav.keys',
};

export function roleName(ui: Ui, role: OperatorRole | null): string {
  return ui.t.text(role === null ? 'console.role.none' : `console.role.${role}`);
}

function nav(frame: ConsoleFrame): SafeHtml {
  const { ui, section, paths } = frame;
  return html`<nav class="console-nav" aria-label="${ui.t.text('console.nav')}"><ul>${CONSOLE_SECTIONS.map(
    (name) => html`<li><a href="${paths[name]}"${name === section ? html` aria-current="page"` : null}>${ui.t.html(SECTION_NAMES[name])}</a></li>`,
  )}</ul></nav>`;
}

/** A console page: the section menu, the card, and who is signed in with a way out. */
export function consolePage(frame: ConsoleFrame, title: string, body: SafeHtml): string {
  const { ui, csrf, operator } = frame;
  return layout(
    ui,
    `${title} · ${ui.t.text('console.title')}`,
    html`${body}
<div class="signed-in">${ui.t.html('console.signedInAs', { name: operator.name, role: roleName(ui, operator.role) })}
<form method="post" action="${SIGN_OUT_PATH}">${csrfField(csrf)}<input type="hidden" name="return_to" value="/"><button type="submit">${ui.t.html('logout.submit')}</button></form></div>`,
    { wide: true, nav: nav(frame) },
  );
}

/** A notice at the top of a page: what was just done, or why it was not. */
export function notice(text: string | SafeHtml | undefined, kind: 'status' | 'error' = 'status'): SafeHtml | null {
  if (text === undefined) return null;
  return kind === 'error' ? html`<p class="alert error" role="alert">${text}</p>` : html`<p class="alert" role="status">${text}</p>`;
}

/** A button that posts a form: every change is a POST with the CSRF token. */
export function postButton(csrf: string, action: string, label: string, fields: Readonly<Record<string, string>> = {}, primary = false): SafeHtml {
  return html`<form method="post" action="${action}" class="inline">${csrfField(csrf)}${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}<button type="submit"${primary ? html` class="primary"` : null}>${label}</button></form>`;
}

/** A button that opens a page (a confirmation page before a destructive change). */
export function linkButton(href: string, label: string): SafeHtml {
  return html`<a class="button" href="${href}">${label}</a>`;
}

/** Before a change that cannot be taken back: what it does, then Confirm and Cancel. */
export function confirmPage(frame: ConsoleFrame, title: string, question: string, action: string, cancel: string, extra: SafeHtml | null = null): string {
  const { ui, csrf } = frame;
  return consolePage(
    frame,
    title,
    html`<h1>${title}</h1>
<p>${question}</p>
<form method="post" action="${action}">
${csrfField(csrf)}
${extra}
<div class="actions"><a class="button" href="${cancel}">${ui.t.html('console.cancel')}</a><button type="submit" class="primary">${title}</button></div>
</form>`,
  );
}

// Dashboard

export interface DashboardView {
  readonly counts: readonly { readonly label: MessageKey; readonly hour: number; readonly day: number }[];
  readonly pendingDevices: number;
  /** The guessing limits' counters refusing now. */
  readonly lockedNow: number;
}

export function dashboardPage(frame: ConsoleFrame, view: DashboardView): string {
  const { t } = frame.ui;
  const format = new Intl.NumberFormat(t.locale);
  return consolePage(
    frame,
    t.text('console.dashboard.title'),
    html`<h1>${t.html('console.dashboard.title')}</h1>
<dl class="figures">
${view.counts.map((count) => html`<div><dt>${t.html(count.label)}</dt><dd><span>${format.format(count.hour)}</span> <span class="muted">${t.html('console.dashboard.lastHour')}</span></dd><dd><span>${format.format(count.day)}</span> <span class="muted">${t.html('console.dashboard.lastDay')}</span></dd></div>`)}
</dl>
<p>${t.html('console.dashboard.pending', { count: view.pendingDevices })}</p>
<p>${t.html('console.dashboard.lockedNow', { count: view.lockedNow })}</p>
<p class="muted">${t.html('console.dashboard.fromTrail')}</p>`,
  );
}

// Users

export interface UserListItem {
  readonly username: string;
  readonly name: string | null;
  readonly email: string | null;
  readonly disabled: boolean;
  readonly href: string;
}

export function usersPage(
  frame: ConsoleFrame,
  view: {
    readonly q: string;
    readonly users: readonly UserListItem[];
    readonly more: number | null;
    readonly action: string;
    readonly invite?: { readonly action: string; readonly email?: string; readonly error?: SafeHtml } | null;
  },
): string {
  const { t } = frame.ui;
  const invite = view.invite ?? null;
  return consolePage(
    frame,
    t.text('console.users.title'),
    html`<h1>${t.html('console.users.title')}</h1>
<form method="get" action="${view.action}" role="search" class="search">
<label for="q">${t.html('console.users.search')}</label>
<div class="row"><input type="search" id="q" name="q" value="${view.q}" autocapitalize="none" spellcheck="false"><button type="submit">${t.html('console.users.searchButton')}</button></div>
</form>
${
  view.users.length === 0
    ? html`<p>${t.html('console.users.none')}</p>`
    : html`<ul class="items">${view.users.map((user) => html`<li><a href="${user.href}">${user.username}</a>${user.disabled ? html` <span class="tag">${t.html('console.users.disabled')}</span>` : null}${user.name || user.email ? html`<br><span class="muted">${[user.name, user.email].filter(Boolean).join(' · ')}</span>` : null}</li>`)}</ul>`
}
${view.more === null ? null : html`<p class="muted">${t.html('console.users.more', { count: view.more })}</p>`}
${
  invite === null
    ? null
    : html`<h2 id="invite">${t.html('console.users.invite')}</h2>
${invite.error ? html`<p class="alert error" role="alert" id="invite-error">${invite.error}</p>` : null}
<form method="post" action="${invite.action}">
${csrfField(frame.csrf)}
<label for="invite-email">${t.html('console.users.invite.email')}</label>
<input type="email" id="invite-email" name="email" required autocapitalize="none" spellcheck="false" value="${invite.email ?? ''}" ${invite.error ? html`aria-invalid="true" aria-describedby="invite-error"` : null}>
<div class="actions"><button type="submit" class="primary">${t.html('console.users.invite.submit')}</button></div>
</form>`
}`,
  );
}

export interface UserPageView {
  readonly username: string;
  readonly sub: string;
  /** Their standard claims as the profile form has them (fields/users.ts). */
  readonly profile: FormValues;
  readonly disabled: boolean;
  readonly role: OperatorRole | null;
  readonly createdAt: number;
  readonly lastSignIn: { readonly at: number; readonly ip: string | null } | null;
  readonly apps: readonly { readonly name: string; readonly href: string | null; readonly approvedAt: number; readonly device: boolean }[];
  readonly sessions: readonly { readonly at: number; readonly ip: string | null; readonly userAgent: string | null }[];
  readonly passkeys: readonly { readonly name: string; readonly createdAt: number }[];
  readonly totp: { readonly enabled: boolean; readonly recoveryCodesLeft: number };
  /** Until when a guessing limit refuses their sign-in; null when none does. */
  readonly lockedUntil: number | null;
  readonly events: readonly EventView[];
  readonly eventsHref: string;
  /** The actions' addresses, when the operator may change users; null: read only. */
  readonly actions: { readonly base: string; readonly roles: readonly (OperatorRole | null)[] | null } | null;
  readonly notice?: string | undefined;
  readonly error?: string | SafeHtml | undefined;
}

export function userPage(frame: ConsoleFrame, view: UserPageView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const none = html`<p class="muted">${t.html('console.none')}</p>`;
  const actions = view.actions;
  return consolePage(
    frame,
    view.username,
    html`<h1>${view.username}</h1>
${notice(view.notice)}${notice(view.error, 'error')}
<dl class="facts">
${profileFacts(ui, view.profile)}
<dt>${t.html('console.user.sub')}</dt><dd><code>${view.sub}</code></dd>
<dt>${t.html('console.user.status')}</dt><dd>${t.html(view.disabled ? 'console.user.disabled' : 'console.user.enabled')}${view.lockedUntil === null ? null : html` · ${t.html('console.user.locked', { time: t.time(view.lockedUntil) })}`}</dd>
<dt>${t.html('console.user.role')}</dt><dd>${roleName(ui, view.role)}</dd>
<dt>${t.html('console.user.created')}</dt><dd>${t.time(view.createdAt)}</dd>
<dt>${t.html('console.user.lastSignIn')}</dt><dd>${view.lastSignIn === null ? t.html('common.notYet') : html`${t.time(view.lastSignIn.at)}${view.lastSignIn.ip ? html` · ${view.lastSignIn.ip}` : null}`}</dd>
</dl>
${
  actions === null
    ? null
    : html`<section aria-labelledby="actions-heading">
<h2 id="actions-heading">${t.html('console.user.actions')}</h2>
<div class="actions">
${view.disabled ? postButton(csrf, `${actions.base}/enable`, t.text('console.user.enable')) : linkButton(`${actions.base}/disable`, t.text('console.user.disable'))}
${view.disabled ? null : postButton(csrf, `${actions.base}/reset-link`, t.text('console.user.resetLink'))}
${view.lockedUntil === null ? null : postButton(csrf, `${actions.base}/unlock`, t.text('console.user.unlock'))}
${linkButton(`${actions.base}/end-sessions`, t.text('console.user.endSessions'))}
${linkButton(`${actions.base}/reset-second-factor`, t.text('console.user.resetSecondFactor'))}
${linkButton(`${actions.base}/profile`, t.text('console.user.editProfile'))}
</div>
${
  actions.roles
    ? html`<form method="post" action="${actions.base}/role" class="row">
${csrfField(csrf)}
<label for="role">${t.html('console.user.role')}</label>
<select id="role" name="role">${actions.roles.map((role) => html`<option value="${role ?? 'none'}"${view.role === role ? html` selected` : null}>${roleName(ui, role)}</option>`)}</select>
<button type="submit">${t.html('console.user.setRole')}</button>
</form>`
    : null
}
</section>`
}
<section aria-labelledby="apps-heading">
<h2 id="apps-heading">${t.html('console.user.apps')}</h2>
${view.apps.length === 0 ? none : html`<ul class="items">${view.apps.map((app) => html`<li>${app.href ? html`<a href="${app.href}">${app.name}</a>` : app.name}${app.device ? html` <span class="tag">${t.html('account.connection.deviceSignIn')}</span>` : null} <span class="muted">${t.html('console.user.approvedAt', { time: t.time(app.approvedAt) })}</span></li>`)}</ul>`}
</section>
<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">${t.html('console.user.sessions')}</h2>
${view.sessions.length === 0 ? none : html`<ul class="items">${view.sessions.map((session) => html`<li>${t.html('console.user.sessionItem', { browser: session.userAgent === null ? t.text('account.sessions.unknownBrowser') : describeUserAgent(session.userAgent), ip: session.ip ?? '-', time: t.time(session.at) })}</li>`)}</ul>`}
</section>
<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">${t.html('console.user.passkeys')}</h2>
${view.passkeys.length === 0 ? none : html`<ul class="items">${view.passkeys.map((passkey) => html`<li>${t.html('console.user.passkeyItem', { name: passkey.name, time: t.time(passkey.createdAt) })}</li>`)}</ul>`}
<h2>${t.html('console.user.codes')}</h2>
<p>${view.totp.enabled ? t.html('console.user.codesOn', { count: view.totp.recoveryCodesLeft }) : t.html('console.user.codesOff')}</p>
</section>
<section aria-labelledby="events-heading">
<h2 id="events-heading">${t.html('console.user.events')}</h2>
${eventList(ui, view.events)}
<p class="more"><a href="${view.eventsHref}">${t.html('console.user.allEvents', { username: view.username })}</a></p>
</section>`,
  );
}

/** A person's standard claims as facts, each row of the users' table with a form control (fields/users.ts). */
function profileFacts(ui: Ui, values: FormValues): SafeHtml {
  const { t } = ui;
  const shownValue = (field: Field): string => {
    if (field.type.kind === 'members')
      return (
        formNames(field)
          .map((name) => values[name])
          .filter((value) => typeof value === 'string' && value !== '')
          .join(', ')
          .replace(/\n/g, ', ') || '-'
      );
    const value = values[field.name];
    if (typeof value === 'boolean') return t.text(value ? 'console.yes' : 'console.no');
    return typeof value === 'string' && value !== '' ? value : '-';
  };
  return html`${USER_FIELDS.filter((field) => field.form !== null).map(
    (field) => html`<dt>${t.html(field.form!.label as MessageKey)}</dt><dd>${shownValue(field)}</dd>
`,
  )}`;
}

export interface UserFormView {
  readonly username: string;
  readonly action: string;
  readonly values: FormValues;
  /** The version read (the user's ETag) and the values as read, to find what changed meanwhile. */
  readonly version: string;
  readonly original: string;
  readonly error?: string | SafeHtml | undefined;
  /** The field the error is about (a taken e-mail address), marked invalid beside it. */
  readonly invalidField?: string | null;
}

/** A person's profile form: every row of the users' table with a form control. */
export function userFormPage(frame: ConsoleFrame, view: UserFormView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const title = t.text('console.user.profileTitle', { username: view.username });
  return consolePage(
    frame,
    title,
    html`<h1>${title}</h1>
${view.error === undefined ? null : html`<p class="alert error" role="alert" id="${FORM_ERROR_ID}">${view.error}</p>`}
<form method="post" action="${view.action}" class="app-form">
${csrfField(csrf)}
<input type="hidden" name="version" value="${view.version}"><input type="hidden" name="original" value="${view.original}">
${tableForm(ui, USER_FIELDS, view.values, null, view.invalidField ?? null)}
<div class="actions"><button type="submit" class="primary">${t.html('console.user.saveProfile')}</button></div>
</form>`,
  );
}

/** A page shown once: a reset link or a secret, never stored where it could be shown again. */
export function shownOncePage(
  frame: ConsoleFrame,
  view: { readonly title: string; readonly lines: readonly { readonly label: string; readonly value: string }[]; readonly text: string; readonly back: string },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
<dl class="facts">${view.lines.map((line) => html`<dt>${line.label}</dt><dd><code class="secret">${line.value}</code></dd>`)}</dl>
<p class="alert warning" role="status">${view.text}</p>
<p class="more"><a href="${view.back}">${t.html('console.back')}</a></p>`,
  );
}

// Apps

export interface AppListItem {
  readonly name: string;
  readonly clientId: string;
  readonly publicClient: boolean;
  readonly grants: readonly string[];
  readonly href: string;
  /** Registered itself (RFC 7591, or a Client ID Metadata Document) and not yet checked by an operator. */
  readonly unverified: boolean;
}

export function appsPage(
  frame: ConsoleFrame,
  view: { readonly apps: readonly AppListItem[]; readonly registerHref: string | null; readonly trustHref?: string; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text('console.apps.title'),
    html`<h1>${t.html('console.apps.title')}</h1>
${notice(view.notice)}
${view.registerHref === null ? null : html`<p>${linkButton(view.registerHref, t.text('console.apps.register'))}</p>`}
${view.trustHref === undefined ? null : html`<p><a href="${view.trustHref}">${t.html('console.trust.title')}</a></p>`}
${
  view.apps.length === 0
    ? html`<p>${t.html('console.apps.none')}</p>`
    : html`<ul class="items">${view.apps.map((app) => html`<li><a href="${app.href}">${app.name}</a>${app.publicClient ? html` <span class="tag">${t.html('console.apps.public')}</span>` : null}${app.unverified ? html` <span class="tag warning">${t.html('console.apps.unverified')}</span>` : null}<br><span class="muted"><code>${app.clientId}</code> · ${app.grants.join(', ')}</span></li>`)}</ul>`
}`,
  );
}

/** The registration form's values: what the person typed, or the stored registration (fields/field.ts FormValues). */
export type AppFormValues = FormValues;

export interface AppFormView {
  readonly title: string;
  readonly action: string;
  readonly submit: string;
  readonly values: AppFormValues;
  /** Editing: the version read and the values as read (the other change is found against them). */
  readonly edit: { readonly version: number; readonly original: string; readonly clientId: string } | null;
  readonly error?: string | SafeHtml | undefined;
  /** Above the form: how a self-registered app came, and whether it is verified. */
  readonly origin?: SafeHtml | null | undefined;
  readonly notice?: string | undefined;
  /** A stale edit: the fields someone else changed meanwhile. */
  readonly otherChange?: readonly { readonly field: string; readonly before: string; readonly after: string }[] | undefined;
  /** Under the form: rotate, remove and the app's events. */
  readonly footer?: SafeHtml | undefined;
}

/** One field's control in a form, as its row in the noun's table says (fields/field.ts). */
/** The id of a form's error, which the control it is about names (`aria-describedby`). */
export const FORM_ERROR_ID = 'form-error';

function formControl(ui: Ui, field: Field, values: FormValues, invalid = false): SafeHtml {
  const { t } = ui;
  const value: FormValue | undefined = values[field.name];
  const form = field.form!;
  const id = field.name;
  const label = t.html(form.label as MessageKey);
  const type = field.type;
  const text = typeof value === 'string' ? value : '';
  const hintId = `${id}-hint`;
  const describedBy = [...(invalid ? [FORM_ERROR_ID] : []), ...(form.hint === undefined ? [] : [hintId])].join(' ');
  const described = describedBy === '' ? null : html`${invalid ? html` aria-invalid="true"` : null} aria-describedby="${describedBy}"`;
  const hint =
    form.hint === undefined
      ? null
      : html`<p class="hint muted" id="${hintId}">${t.html(form.hint as MessageKey, type.kind === 'integer' ? { min: type.min, max: type.max } : {})}</p>`;
  switch (form.control) {
    case 'text':
      return html`<label for="${id}">${label}</label><input type="text" id="${id}" name="${id}" value="${text}" autocapitalize="none" spellcheck="false"${form.required ? html` required` : null}${described}>${hint}`;
    case 'secret':
      // Never filled in: a secret is not read back; left empty, the stored one stays.
      return html`<label for="${id}">${label}</label><input type="password" id="${id}" name="${id}" value="" autocomplete="off"${described}>${hint}`;
    case 'number':
      return html`<label for="${id}">${label}</label><input type="number" id="${id}" name="${id}" value="${text}"${type.kind === 'integer' ? html` min="${String(type.min)}" max="${String(type.max)}"` : null} inputmode="numeric"${described}>${hint}`;
    case 'area':
    case 'localized':
      return html`<label for="${id}">${label}</label><textarea id="${id}" name="${id}" rows="3" autocapitalize="none" spellcheck="false"${described}>${text}</textarea>${hint}`;
    case 'check':
      return html`<div class="check"><input type="checkbox" id="${id}" name="${id}" value="on"${value === true ? html` checked` : null}><label for="${id}">${label}</label></div>`;
    case 'select': {
      const choices = type.kind === 'choice' ? type.choices : [];
      // A choice's words are its message (`console.app.pkce.required`) where there is one, else its protocol name.
      const words = (choice: string) => {
        const key = `${form.choiceLabels}.${choice}`;
        return form.choiceLabels !== undefined && isMessageKey(key) ? t.html(key) : choice;
      };
      const empty =
        type.kind === 'choice' && type.nullable
          ? html`<option value=""${text === '' ? html` selected` : null}>${t.html(`${form.label}.any` as MessageKey)}</option>`
          : null;
      return html`<label for="${id}">${label}</label>
<select id="${id}" name="${id}">${empty}${choices.map((choice) => html`<option value="${choice}"${choice === text ? html` selected` : null}>${words(choice)}</option>`)}</select>`;
    }
    case 'checks': {
      const choices = type.kind === 'choices' ? type.choices : [];
      const checked = Array.isArray(value) ? value : [];
      return html`<fieldset><legend>${label}</legend>
${choices.map((choice) => html`<div class="check"><input type="checkbox" id="${id}-${choice}" name="${id}" value="${choice}"${checked.includes(choice) ? html` checked` : null}><label for="${id}-${choice}"><code>${choice}</code></label></div>`)}
</fieldset>`;
    }
    case 'members': {
      // Each member its own input, labelled by the message `LABEL.MEMBER`.
      const members = type.kind === 'members' ? type.members : [];
      return html`<fieldset><legend>${label}</legend>
${members.map((member) => {
  const name = `${id}.${member.name}`;
  const memberText = values[name];
  const words = t.html(`${form.label}.${member.name}` as MessageKey);
  return member.lines
    ? html`<label for="${name}">${words}</label><textarea id="${name}" name="${name}" rows="2">${typeof memberText === 'string' ? memberText : ''}</textarea>`
    : html`<label for="${name}">${words}</label><input type="text" id="${name}" name="${name}" value="${typeof memberText === 'string' ? memberText : ''}">`;
})}
</fieldset>`;
    }
  }
}

/**
 * A noun's form from its table: each field's control in table order, the checkboxes of the
 * options group together at the end. `only`: the operation the form is for (registering shows
 * what `create` takes, editing what `update` takes) and the noun's kind (the fields that apply
 * to it); without it, every row with a control.
 */
export function tableForm(
  ui: Ui,
  table: FieldTable,
  values: FormValues,
  only: { readonly operation: 'create' | 'update'; readonly kind?: string } | null = null,
  /** The field a refusal is about: its control is marked invalid and names the form's error. */
  invalid: string | null = null,
): SafeHtml {
  const fields = table.filter((field) => field.form !== null && (only === null || (field[only.operation] && appliesTo(field, only.kind))));
  const options = fields.filter((field) => field.form!.group === 'options');
  return html`${fields
    .filter((field) => field.form!.group !== 'options')
    .map(
      (field) => html`${formControl(ui, field, values, field.name === invalid)}
`,
    )}${
    options.length === 0
      ? null
      : html`<fieldset><legend>${ui.t.html('console.app.options')}</legend>
${options.map(
  (field) => html`${formControl(ui, field, values)}
`,
)}</fieldset>`
  }`;
}

export function appFormPage(frame: ConsoleFrame, view: AppFormView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  const other = view.otherChange;
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
${notice(view.notice)}${notice(view.error, 'error')}
${
  other && other.length > 0
    ? html`<div class="alert warning" role="alert"><p>${t.html('console.app.stale')}</p><ul>${other.map((change) => html`<li>${t.html('console.app.staleField', { field: fieldLabel(ui, change.field), before: change.before || t.text('console.app.empty'), after: change.after || t.text('console.app.empty') })}</li>`)}</ul><p>${t.html('console.app.staleAgain')}</p></div>`
    : null
}
${view.origin ?? null}
${view.edit === null ? null : html`<dl class="facts"><dt>${t.html('console.app.clientId')}</dt><dd><code>${view.edit.clientId}</code></dd></dl>`}
<form method="post" action="${view.action}" class="app-form">
${csrfField(csrf)}
${view.edit === null ? html`<input type="hidden" name="return_to" value="${view.action}/new">` : html`<input type="hidden" name="version" value="${String(view.edit.version)}"><input type="hidden" name="original" value="${view.edit.original}">`}
${tableForm(ui, CLIENT_FIELDS, view.values)}
<div class="actions"><button type="submit" class="primary">${view.submit}</button></div>
</form>
${view.footer ?? null}`,
  );
}

/** A registration field's name in the reader's language, its protocol name in small print (unknown ones by that name alone). */
export function fieldLabel(ui: Ui, wire: string): SafeHtml {
  const key = `console.field.${wire}`;
  return isMessageKey(key) ? html`${ui.t.text(key)} <small class="muted"><code>${wire}</code></small>` : html`<code>${wire}</code>`;
}

/**
 * How a self-registered app came (RFC 7591 dynamic registration, or a Client ID Metadata
 * Document) and whether an operator has verified it; `verify` is the Verify button's form, for
 * an operator who may change apps. Null for the operator's own registrations.
 */
export function appOrigin(
  frame: ConsoleFrame,
  view: { readonly registeredBy: 'dynamic' | 'metadata_document' | undefined; readonly verified: boolean; readonly verifyAction: string | null },
): SafeHtml | null {
  const { ui, csrf } = frame;
  const { t } = ui;
  if (view.registeredBy === undefined) return null;
  const how = t.html(view.registeredBy === 'dynamic' ? 'console.app.origin.dynamic' : 'console.app.origin.document');
  if (view.verified) return html`<p class="alert" role="status">${how} ${t.html('console.app.origin.verified')}</p>`;
  return html`<div class="alert warning" role="status"><p>${how} ${t.html('console.app.origin.unverified')}</p>
${view.verifyAction === null ? null : postButton(csrf, view.verifyAction, t.text('console.app.verify'), {}, true)}</div>`;
}

/** An app's registration, read only (a viewer's or support's view). */
export function appPage(
  frame: ConsoleFrame,
  view: {
    readonly name: string;
    readonly facts: readonly { readonly label: SafeHtml; readonly value: string | SafeHtml }[];
    readonly origin: SafeHtml | null;
    readonly footer: SafeHtml;
  },
): string {
  return consolePage(
    frame,
    view.name,
    html`<h1>${view.name}</h1>
${view.origin}
<dl class="facts">${view.facts.map((fact) => html`<dt>${fact.label}</dt><dd>${fact.value}</dd>`)}</dl>
${view.footer}`,
  );
}

// APIs

export interface ApiView {
  readonly name: string;
  readonly identifier: string;
  readonly tokenTtl: number | null;
  readonly signingAlg: string;
  readonly scopes: readonly { readonly name: string; readonly description: string }[];
  /** Its edit page, for an operator who may change APIs (remove is under it). */
  readonly editHref: string | null;
}

/** An API's registration form: what the operator typed, or the stored registration (fields/resources.ts through fields/field.ts). */
export type ApiFormValues = FormValues;

export interface ApiFormView {
  readonly title: string;
  readonly action: string;
  readonly submit: string;
  readonly values: ApiFormValues;
  /** Editing: the values as read, to find a change made meanwhile (the identifier is fixed). */
  readonly edit: { readonly original: string; readonly identifier: string } | null;
  readonly error?: string | SafeHtml | undefined;
  /** A stale edit: the fields someone else changed meanwhile. */
  readonly otherChange?: readonly { readonly field: string; readonly before: string; readonly after: string }[] | undefined;
  readonly cancel: string;
}

/** A field someone else changed after an edit form was opened: its value then and now, as shown. */
export interface OtherChange {
  readonly field: string;
  readonly before: string;
  readonly after: string;
}

/** A stale edit's warning: what someone else changed after the form was opened. */
export function staleChange(ui: Ui, intro: MessageKey, other: readonly OtherChange[] | undefined): SafeHtml | null {
  const { t } = ui;
  if (other === undefined || other.length === 0) return null;
  return html`<div class="alert warning" role="alert"><p>${t.html(intro)}</p><ul>${other.map((change) => html`<li>${t.html('console.app.staleField', { field: fieldLabel(ui, change.field), before: change.before || t.text('console.app.empty'), after: change.after || t.text('console.app.empty') })}</li>`)}</ul><p>${t.html('console.app.staleAgain')}</p></div>`;
}

export function apiFormPage(frame: ConsoleFrame, view: ApiFormView): string {
  const { ui, csrf } = frame;
  const { t } = ui;
  return consolePage(
    frame,
    view.title,
    html`<h1>${view.title}</h1>
${notice(view.error, 'error')}
${staleChange(ui, 'console.api.stale', view.otherChange)}
<form method="post" action="${view.action}" class="app-form">
${csrfField(csrf)}
${
  view.edit === null
    ? html`<input type="hidden" name="return_to" value="${view.action}/new">`
    : html`<input type="hidden" name="original" value="${view.edit.original}"><dl class="facts"><dt>${t.html('console.apis.identifier')}</dt><dd><code>${view.edit.identifier}</code></dd></dl>`
}
${tableForm(ui, RESOURCE_FIELDS, view.values, { operation: view.edit === null ? 'create' : 'update' })}
<div class="actions"><a class="button" href="${view.cancel}">${t.html('console.cancel')}</a><button type="submit" class="primary">${view.submit}</button></div>
</form>`,
  );
}

export function apisPage(
  frame: ConsoleFrame,
  view: {
    readonly apis: readonly ApiView[];
    readonly openid: readonly { readonly name: string; readonly description: string }[];
    /** For an operator who may change APIs: where to register one; null: read only. */
    readonly registerHref: string | null;
    readonly notice?: string | undefined;
  },
): string {
  const { t } = frame.ui;
  const scopes = (list: ApiView['scopes']) =>
    html`<ul class="items">${list.map((scope) => html`<li><code>${scope.name}</code>: ${scope.description}</li>`)}</ul>`;
  return consolePage(
    frame,
    t.text('console.apis.title'),
    html`<h1>${t.html('console.apis.title')}</h1>
${notice(view.notice)}
${view.registerHref === null ? null : html`<p>${linkButton(view.registerHref, t.text('console.apis.register'))}</p>`}
${
  view.apis.length === 0
    ? html`<p>${t.html('console.apis.none')}</p>`
    : view.apis.map(
        (api, index) => html`<section aria-labelledby="api-${index}">
<h2 id="api-${index}">${api.name}</h2>
<dl class="facts"><dt>${t.html('console.apis.identifier')}</dt><dd><code>${api.identifier}</code></dd>
<dt>${t.html('console.apis.tokenLifetime')}</dt><dd>${api.tokenTtl === null ? t.html('console.apis.defaultLifetime') : t.html('console.apis.seconds', { count: api.tokenTtl })}</dd>
<dt>${t.html('console.apis.signingAlg')}</dt><dd>${api.signingAlg}</dd></dl>
${scopes(api.scopes)}
${api.editHref === null ? null : html`<div class="actions">${linkButton(api.editHref, t.text('console.apis.edit', { name: api.name }))}${linkButton(`${api.editHref}/remove`, t.text('console.apis.remove', { name: api.name }))}</div>`}
</section>`,
      )
}
<section aria-labelledby="openid-heading">
<h2 id="openid-heading">${t.html('console.apis.openid')}</h2>
${scopes(view.openid.map((scope) => ({ name: scope.name, description: openIdScope(frame.ui, scope) })))}
</section>`,
  );
}

// Events

export interface EventView {
  readonly at: number;
  readonly type: string;
  readonly username: string | null;
  readonly userHref: string | null;
  readonly client: { readonly name: string; readonly href: string | null } | null;
  readonly ip: string | null;
  readonly operator: string | null;
  readonly detail: string;
}

export function eventList(ui: Ui, events: readonly EventView[]): SafeHtml {
  const { t } = ui;
  if (events.length === 0) return html`<p class="muted">${t.html('console.events.none')}</p>`;
  return html`<ul class="items events">${events.map(
    (event) => html`<li><code>${event.type}</code> <span class="muted">${t.time(event.at)}</span>
<br>${event.username === null ? null : event.userHref ? html`<a href="${event.userHref}">${event.username}</a>` : event.username}${event.username !== null && event.client !== null ? ' · ' : null}${event.client === null ? null : event.client.href ? html`<a href="${event.client.href}">${event.client.name}</a>` : event.client.name}${event.operator === null ? null : html` <span class="tag">${t.html('console.events.by', { operator: event.operator })}</span>`}${event.ip === null ? null : html` <span class="muted">${t.html('console.events.from', { ip: event.ip })}</span>`}
${event.detail ? html`<br><span class="muted detail">${event.detail}</span>` : null}</li>`,
  )}</ul>`;
}

export interface EventsPageView {
  readonly action: string;
  readonly filter: { readonly user: string; readonly client: string; readonly type: string; readonly since: string };
  readonly types: readonly string[];
  readonly sinceChoices: readonly { readonly value: string; readonly label: MessageKey }[];
  readonly events: readonly EventView[];
  readonly olderHref: string | null;
  readonly error?: string | SafeHtml | undefined;
}

export function eventsPage(frame: ConsoleFrame, view: EventsPageView): string {
  const { ui } = frame;
  const { t } = ui;
  const f = view.filter;
  return consolePage(
    frame,
    t.text('console.events.title'),
    html`<h1>${t.html('console.events.title')}</h1>
<form method="get" action="${view.action}" class="filters">
<div><label for="user">${t.html('console.events.user')}</label><input type="text" id="user" name="user" value="${f.user}" autocapitalize="none" spellcheck="false"></div>
<div><label for="client">${t.html('console.events.app')}</label><input type="text" id="client" name="client" value="${f.client}" autocapitalize="none" spellcheck="false"></div>
<div><label for="type">${t.html('console.events.type')}</label><select id="type" name="type"><option value="">${t.html('console.events.anyType')}</option>${view.types.map((type) => html`<option value="${type}"${type === f.type ? html` selected` : null}>${type}</option>`)}</select></div>
<div><label for="since">${t.html('console.events.since')}</label><select id="since" name="since"><option value="">${t.html('console.events.anyTime')}</option>${view.sinceChoices.map((choice) => html`<option value="${choice.value}"${choice.value === f.since ? html` selected` : null}>${t.html(choice.label)}</option>`)}</select></div>
<div class="actions"><button type="submit">${t.html('console.events.filter')}</button></div>
</form>
${notice(view.error, 'error')}
${eventList(ui, view.events)}
<p><a href="${view.action}/dead-letters">${t.html('console.outbox.link')}</a></p>
${view.olderHref === null ? null : html`<p class="more"><a href="${view.olderHref}">${t.html('console.events.older')}</a></p>`}`,
  );
}

// Signing keys

export interface KeyView {
  readonly kid: string;
  readonly alg: string;
  readonly createdAt: number;
  readonly state:
    | { readonly kind: 'signing' }
    | { readonly kind: 'next'; readonly at: number }
    | { readonly kind: 'retired'; readonly until: number | null }
    | { readonly kind: 'withdrawn' };
}

export function keysPage(
  frame: ConsoleFrame,
  view: { readonly keys: readonly KeyView[]; readonly rotateHref: string | null; readonly notice?: string | undefined },
): string {
  const { t } = frame.ui;
  const state = (key: KeyView) => {
    switch (key.state.kind) {
      case 'signing':
        return t.html('console.keys.signing');
      case 'next':
        return t.html('console.keys.next', { time: t.time(key.state.at) });
      case 'retired':
        return t.html('console.keys.retired', { time: key.state.until === null ? '-' : t.time(key.state.until) });
      case 'withdrawn':
        return t.html('console.keys.withdrawn');
    }
  };
  return consolePage(
    frame,
    t.text('console.keys.title'),
    html`<h1>${t.html('console.keys.title')}</h1>
${notice(view.notice)}
<ul class="items">${view.keys.map((key) => html`<li><code>${key.kid}</code> ${key.alg}<br>${state(key)} <span class="muted">${t.html('console.keys.created', { time: t.time(key.createdAt) })}</span></li>`)}</ul>
${view.rotateHref === null ? null : html`<p>${linkButton(view.rotateHref, t.text('console.keys.rotate'))}</p>`}`,
  );
}

/** The console's 403 (the person has no role, or not one that allows this), or another refusal under `title`. */
export function forbiddenPage(
  ui: Ui,
  text: string | SafeHtml,
  back: { readonly href: string; readonly label: string },
  title = ui.t.text('console.forbidden.title'),
): string {
  return layout(
    ui,
    title,
    html`<h1>${title}</h1>
<p role="alert">${text}</p>
<p><a href="${back.href}">${back.label}</a></p>`,
  );
}

/**
 * A field table's form for a noun (an organization, a SAML SP, a webhook, ...): its fields for
 * `create` or `update`, then Cancel beside the button that posts it. `hidden` goes first.
 */
export function fieldTableForm(
  frame: ConsoleFrame,
  table: FieldTable,
  view: Omit<FieldFormView, 'error'>,
  submit: MessageKey,
  hidden: SafeHtml | null = null,
): SafeHtml {
  const { ui, csrf } = frame;
  return html`<form method="post" action="${view.action}" class="app-form">
${csrfField(csrf)}
${hidden}
${view.original === undefined ? null : html`<input type="hidden" name="original" value="${view.original}">`}
${tableForm(ui, table, view.values, { operation: view.operation })}
<div class="actions"><a class="button" href="${view.cancel}">${ui.t.html('console.cancel')}</a><button type="submit" class="primary">${ui.t.html(submit)}</button></div>
</form>`;
}

/** What a noun's "add one" page shows: its field table's form, and the words around it. */
export interface AddFormView {
  readonly action: string;
  readonly values: FormValues;
  readonly cancel: string;
  readonly error?: string | SafeHtml | undefined;
}

/** A noun's form that adds one or changes one (fieldTableForm), and why a post of it was refused. */
export interface FieldFormView extends AddFormView {
  readonly operation: 'create' | 'update';
  /** Changing one: the values the form was opened with (http/console/kit.ts encodeOriginal), to find a change made meanwhile. */
  readonly original?: string | undefined;
  /** A stale edit: the fields someone else changed meanwhile. */
  readonly otherChange?: readonly OtherChange[] | undefined;
}

/**
 * The page that adds one of a noun (a webhook, a trusted issuer, a SCIM token): its title, a
 * line saying what it is for, the fields of its table for `create`, and Cancel beside the
 * button that adds it. A refused post shows it again with what was typed and why.
 */
export function addFormPage(
  frame: ConsoleFrame,
  table: FieldTable,
  words: { readonly title: MessageKey; readonly intro?: MessageKey; readonly submit: MessageKey },
  view: AddFormView,
): string {
  const { t } = frame.ui;
  return consolePage(
    frame,
    t.text(words.title),
    html`<h1>${t.html(words.title)}</h1>
${notice(view.error, 'error')}
${words.intro === undefined ? null : html`<p>${t.html(words.intro)}</p>`}
${fieldTableForm(frame, table, { ...view, operation: 'create' }, words.submit, html`<input type="hidden" name="return_to" value="${view.action}/new">`)}`,
  );
}

import { readFileSync } from 'node:fs';
import {
  ACCOUNT_PATH,
  FORGOT_PASSWORD_PATH,
  HOME_PATH,
  SIGN_UP_PATH,
  SIGN_UP_VERIFY_PATH,
  SIGN_UP_PASSKEY_OPTIONS_PATH,
  EMAIL_CHANGE_VERIFY_PATH,
  INVITATION_PATH,
  INVITATION_PASSKEY_OPTIONS_PATH,
  LOCALE_PATH,
  PASSKEY_SIGN_IN_OPTIONS_PATH,
  PASSKEY_SIGN_IN_PATH,
  PASSKEYS_SCRIPT_PATH,
  RESET_PASSWORD_PATH,
  SIGN_IN_PATH,
  SIGN_OUT_PATH,
  STYLESHEET_PATH,
  UPSTREAM_SIGN_IN_PATH,
  WEBAUTHN_SCRIPT_PATH,
} from '../core/endpoints.ts';
import type { SiteSettings } from '../config/index.ts';
import type { DescribedAccess, DescribedScope } from '../flows/resources.ts';
import { html, type SafeHtml } from './html.ts';
import { isMessageKey, LANGUAGE_NAMES, type Messages } from './i18n.ts';

/** Served at STYLESHEET_PATH; pages load nothing else (CSP default-src 'none'). */
export const STYLESHEET = readFileSync(new URL('./style.css', import.meta.url), 'utf8');

/** Whose server this is, as the operator named it (TESSERA_SITE_NAME, _LOGO_URL, _ACCENT_COLOR), and its languages. */
export type Site = SiteSettings;

/** What every page is rendered with: whose server it is, in which language, and where it is. */
export interface Ui {
  readonly site: Site;
  readonly t: Messages;
  /** This page's own address (a path on this server), where the language menu returns to. */
  readonly here: string;
}

/** The stylesheet, with the operator's accent on the buttons when one is set (its contrast with white was checked at start). */
export function stylesheet(site: Site): string {
  return site.accentColor === null ? STYLESHEET : `${STYLESHEET}\n:root { --brand: ${site.accentColor}; --brand-fg: #fff; }\n`;
}

/** Every offered language by its own name, the current one marked; nothing when only one is offered. */
function languageMenu(ui: Ui): SafeHtml | null {
  const { locales } = ui.site;
  if (locales.length < 2) return null;
  return html`<nav class="languages" aria-label="${ui.t.text('layout.languages')}"><ul>${locales.map(
    (locale) =>
      html`<li><a href="${LOCALE_PATH}?lang=${encodeURIComponent(locale)}&amp;return_to=${encodeURIComponent(ui.here)}" lang="${locale}" hreflang="${locale}" rel="nofollow"${locale === ui.t.locale ? html` aria-current="true"` : null}>${LANGUAGE_NAMES[locale]}</a></li>`,
  )}</ul></nav>`;
}

/** A page's place in a larger section: the console's wider page and its menu above the card. */
export interface LayoutOptions {
  readonly wide?: boolean;
  readonly nav?: SafeHtml;
  /** More of the page's head (a refresh that moves the browser on). */
  readonly head?: SafeHtml;
}

export function layout(ui: Ui, title: string, body: SafeHtml, options: LayoutOptions = {}): string {
  const { site, t } = ui;
  return html`<!doctype html>
<html lang="${t.locale}" dir="${t.dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${t.text('layout.title', { page: title, site: site.name })}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
${options.head ?? null}
</head>
<body>
<main${options.wide ? html` class="wide"` : null}>
<header class="brand">${site.logoUrl ? html`<img src="${site.logoUrl}" alt="" height="32">` : null}<span>${site.name}</span></header>
${options.nav ?? null}
<div class="card">
${body}
</div>
${languageMenu(ui)}
</main>
</body>
</html>`.value;
}

/**
 * The scripts of the passkey ceremonies, and the words they may show (the script has no
 * catalogue of its own: it reads them from this element's data attributes).
 */
export function passkeyScripts(ui: Ui): SafeHtml {
  const { t } = ui;
  return html`<div id="passkey-messages" hidden data-cancelled="${t.text('passkey.script.cancelled')}" data-exists="${t.text('passkey.script.exists')}" data-failed="${t.text('passkey.script.failed')}" data-unsupported="${t.text('passkey.script.unsupported')}" data-too-many="${t.text('passkey.script.tooMany')}"></div>
<script src="${WEBAUTHN_SCRIPT_PATH}" defer></script>
<script src="${PASSKEYS_SCRIPT_PATH}" defer></script>`;
}

/**
 * Beside the password form: a button that asks the browser for any passkey of this site,
 * and the hidden form the script posts the browser's answer with. The same request also
 * runs as conditional mediation, so the passkeys appear in the username field's autofill.
 */
export function passkeySignIn(ui: Ui, csrf: string, returnTo: string, clientId?: string | null): SafeHtml {
  return html`<div class="passkey" id="passkey-sign-in">
<p class="muted or">${ui.t.html('signIn.or')}</p>
<form method="post" action="${PASSKEY_SIGN_IN_PATH}" data-options="${PASSKEY_SIGN_IN_OPTIONS_PATH}" id="passkey-form">
${csrfField(csrf)}
<input type="hidden" name="return_to" value="${returnTo}">
${clientField(clientId)}
<input type="hidden" name="response" value="">
<div class="actions"><button type="button" id="passkey-button">${ui.t.html('signIn.passkey')}</button></div>
</form>
<p class="alert error" role="alert" id="passkey-error" hidden></p>
</div>
${passkeyScripts(ui)}`;
}

/** The application a sign-in continues to, carried from the authorization step to the events that record it. */
export function clientField(clientId: string | null | undefined): SafeHtml | null {
  return clientId === undefined || clientId === null ? null : html`<input type="hidden" name="client_id" value="${clientId}">`;
}

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}">`;
}

function hiddenFields(fields: Readonly<Record<string, string | readonly string[]>>): SafeHtml[] {
  return Object.entries(fields).flatMap(([name, value]) =>
    (typeof value === 'string' ? [value] : value).map((item) => html`<input type="hidden" name="${name}" value="${item}">`),
  );
}

export interface ErrorPageOptions {
  /** The protocol error, for whoever builds the app: shown in small print under the message. */
  readonly details?: string | undefined;
  /** Where the link under the message leads (default: the start page). */
  readonly back?: { readonly href: string; readonly label: string } | undefined;
}

/** A page that says in plain words what went wrong and what to do, with a way back. */
export function errorPage(ui: Ui, title: string, message: string, options: ErrorPageOptions = {}): string {
  const { site, t } = ui;
  const back = options.back ?? { href: HOME_PATH, label: t.text('error.backHome', { site: site.name }) };
  return layout(
    ui,
    title,
    html`<h1>${title}</h1>
<p role="alert">${message}</p>
<p><a href="${back.href}">${back.label}</a></p>
${options.details ? html`<p class="fine-print">${t.html('error.details', { details: options.details })}</p>` : null}`,
  );
}

/**
 * An address typed on the sign-in page whose domain signs in elsewhere (an organization's
 * verified domain, flows/organizations/routing.ts): where to continue. A link, not a redirect
 * from the form's post, which the page's form-action would keep on this server.
 */
export function routedSignInPage(ui: Ui, view: { readonly domain: string; readonly provider: string; readonly href: string }): string {
  const { t } = ui;
  const title = t.text('signIn.continueWith', { provider: view.provider });
  return layout(
    ui,
    title,
    html`<h1>${title}</h1>
<p>${t.html('signIn.routed', { domain: view.domain, provider: view.provider })}</p>
<div class="actions"><a class="button primary" href="${view.href}">${t.html('signIn.continueWith', { provider: view.provider })}</a></div>`,
  );
}

export interface SignInView {
  readonly csrf: string;
  /** Where to go after signing in: a path on this server. */
  readonly returnTo: string;
  readonly clientName?: string | undefined;
  /** The application the sign-in continues to, posted back with the form (for the audit trail). */
  readonly clientId?: string | null | undefined;
  readonly error?: string | undefined;
  readonly username?: string | undefined;
  /**
   * The person is signed in, but their sign-in is not enough to approve: link straight to
   * where a second factor is set up, which their session opens without signing in again.
   */
  readonly setUp?: boolean | undefined;
  /** Why the person is asked to sign in again (a client that needs a passkey, say). */
  readonly notice?: string | undefined;
  /** Offer "Sign in with a passkey" and passkeys in the username autofill. */
  readonly passkeys?: boolean | undefined;
  /** Show the username and password form (not when an upstream provider is the only way in). */
  readonly passwordForm?: boolean | undefined;
  /** The upstream identity providers, in the order of their buttons ("Continue with Google"). */
  readonly providers?: readonly SignInProvider[] | undefined;
  /** Link to "Forgot password?" (there is a mail server to send the link). */
  readonly forgot?: boolean | undefined;
  /** Link to "Create an account" (TESSERA_SIGN_UP=open). */
  readonly signUp?: boolean | undefined;
  /**
   * The sign-in must be a new one, at most this many seconds old (0: made now), as
   * `prompt=login` or `max_age` (OIDC Core §3.1.2.1), or a change that needs a recent sign-in,
   * asks: the providers' buttons (and the form, for the provider an address routes to) ask
   * the provider for it too, whose own session would otherwise answer without a new sign-in.
   */
  readonly maxAge?: number | null | undefined;
}

/** A button of the sign-in page: an upstream provider by its id and name. */
export interface SignInProvider {
  readonly id: string;
  readonly name: string;
}

/**
 * Where a provider's button leads: its sign-in, carrying where to go after it, the app it is
 * for, who is expected (`login_hint`), and how recent it must be (`max_age`, SignInView's).
 */
export function upstreamStartUrl(
  providerId: string,
  returnTo: string,
  options: { readonly clientId?: string | null | undefined; readonly loginHint?: string | null | undefined; readonly maxAge?: number | null | undefined } = {},
): string {
  const query = new URLSearchParams({ return_to: returnTo });
  if (options.clientId) query.set('client_id', options.clientId);
  if (options.loginHint) query.set('login_hint', options.loginHint);
  if (options.maxAge !== undefined && options.maxAge !== null) query.set('max_age', String(options.maxAge));
  return `${UPSTREAM_SIGN_IN_PATH}/${encodeURIComponent(providerId)}?${query.toString()}`;
}

/** "Continue with …", one button per provider. */
function providerButtons(ui: Ui, view: Pick<SignInView, 'providers' | 'returnTo' | 'clientId' | 'maxAge'>, afterAnother: boolean): SafeHtml | null {
  const providers = view.providers ?? [];
  if (providers.length === 0) return null;
  return html`<div class="providers">
${afterAnother ? html`<p class="muted or">${ui.t.html('signIn.or')}</p>` : null}
${providers.map((provider) => html`<a class="button" href="${upstreamStartUrl(provider.id, view.returnTo, view)}">${ui.t.html('signIn.continueWith', { provider: provider.name })}</a>`)}
</div>`;
}

/**
 * Signed in through a provider: on to `href` (a path of this server) by a page of our own, not
 * a redirect. The browser arrived through a redirect chain that began at the provider's
 * sign-in form, and browsers hold every redirect of that chain to the provider's CSP
 * `form-action` (Tessera's own, as an upstream, allows only the redirect URI): the app's
 * redirect URI at the end of it would be blocked.
 */
export function signedInPage(ui: Ui, href: string): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('upstream.continue.title'),
    html`<h1>${t.html('upstream.continue.title')}</h1>
<p>${t.html('upstream.continue.text')}</p>
<p><a href="${href}">${t.html('common.continue')}</a></p>`,
    { head: html`<meta http-equiv="refresh" content="0;url=${href}">` },
  );
}

export interface DirectorySignInView {
  readonly csrf: string;
  readonly provider: SignInProvider;
  readonly returnTo: string;
  readonly clientId?: string | null | undefined;
  readonly clientName?: string | undefined;
  readonly error?: string | undefined;
  readonly username?: string | undefined;
  /** Other ways in exist: link back to the sign-in page. */
  readonly others: boolean;
}

/** A directory's own sign-in form (LDAP): the password is checked there. */
export function directorySignInPage(ui: Ui, view: DirectorySignInView): string {
  const { t } = ui;
  const title = t.text('signIn.directory.title', { provider: view.provider.name });
  return layout(
    ui,
    title,
    html`<h1>${title}</h1>
${view.clientName ? html`<p>${t.html('signIn.toContinue', { client: view.clientName })}</p>` : null}
<p class="muted">${t.html('signIn.directory.intro', { provider: view.provider.name })}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="${UPSTREAM_SIGN_IN_PATH}/${encodeURIComponent(view.provider.id)}">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
${clientField(view.clientId)}
<label for="username">${t.html('signIn.username')}</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}" ${view.username ? null : html`autofocus`}>
<label for="password">${t.html('signIn.password')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required ${view.username ? html`autofocus` : null}>
<div class="actions"><button type="submit" class="primary">${t.html('signIn.submit')}</button></div>
</form>
${view.others ? html`<div class="providers"><p class="muted or">${t.html('signIn.or')}</p><a class="button" href="${SIGN_IN_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('signIn.otherWays')}</a></div>` : null}`,
  );
}

export function signInPage(ui: Ui, view: SignInView): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('signIn.title'),
    html`<h1>${t.html('signIn.title')}</h1>
${view.clientName ? html`<p>${t.html('signIn.toContinue', { client: view.clientName })}</p>` : null}
<p class="muted">${t.html('signIn.withAccount', { site: site.name })}</p>
${view.notice ? html`<p class="alert warning" role="status">${view.notice}</p>` : null}
${view.setUp ? html`<p>${t.html('signIn.setUp', {}, { account: `${ACCOUNT_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}` })}</p>` : null}
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
${
  view.passwordForm === false
    ? null
    : html`<form method="post" action="${SIGN_IN_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
${clientField(view.clientId)}
${view.maxAge === undefined || view.maxAge === null ? null : html`<input type="hidden" name="max_age" value="${String(view.maxAge)}">`}
<label for="username">${t.html('signIn.username')}</label>
<input type="text" id="username" name="username" autocomplete="${view.passkeys ? 'username webauthn' : 'username'}" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}" ${view.username ? null : html`autofocus`}>
<label for="password">${t.html('signIn.password')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required ${view.username ? html`autofocus` : null}>
<div class="actions"><button type="submit" class="primary">${t.html('signIn.submit')}</button></div>
</form>
${view.forgot ? html`<p class="more"><a href="${FORGOT_PASSWORD_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('signIn.forgot')}</a></p>` : null}
${view.signUp ? html`<p class="more"><a href="${SIGN_UP_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('signIn.signUp')}</a></p>` : null}`
}
${view.passkeys ? passkeySignIn(ui, view.csrf, view.returnTo, view.clientId) : null}
${providerButtons(ui, view, view.passwordForm !== false || view.passkeys === true)}`,
  );
}

export interface ConsentView {
  readonly csrf: string;
  /** Where the decision is posted. */
  readonly action: string;
  /** Carried through the form unchanged: the request being decided. */
  readonly fields: Readonly<Record<string, string | readonly string[]>>;
  readonly clientName: string;
  /** What is asked: the OpenID scopes, then each API by its name with its scopes. */
  readonly access: DescribedAccess;
  /** The person approved part of this before: `access` is only what is new. */
  readonly more?: boolean;
  readonly signedInAs: string;
  /** Flow-specific facts shown above the scopes (the device's code and origin). */
  readonly details?: SafeHtml;
  /** Where "Sign out" leads back to, to sign in as someone else. */
  readonly returnTo: string;
  /**
   * The app registered itself and the operator has not verified it: said above all else.
   * `host`: where a metadata-document app describes itself (its client_id's host).
   */
  readonly unverified?: { readonly host: string | null };
  /** The person's organizations, when they are in several and the app asks for one: they choose (docs/organizations.md). */
  readonly organizations?: readonly { readonly id: string; readonly name: string }[];
  /** The one chosen before (kept with their approval), checked. */
  readonly chosenOrganization?: string | null;
}

/** "Not verified by <site>": the warning over an app that registered itself. */
export function unverifiedNotice(ui: Ui, clientName: string, unverified: { readonly host: string | null } | undefined): SafeHtml | null {
  if (unverified === undefined) return null;
  const text =
    unverified.host === null
      ? ui.t.html('consent.unverified', { site: ui.site.name, client: clientName })
      : ui.t.html('consent.unverifiedHost', { site: ui.site.name, host: unverified.host });
  return html`<p class="alert warning unverified" role="note">${text}</p>`;
}

/**
 * The access asked for, as a person reads it: the OpenID scopes' descriptions, then each API
 * under its name (a region named by its heading), with its scopes' descriptions.
 */
export function scopeList(ui: Ui, access: DescribedAccess): SafeHtml {
  return html`${access.openid.length > 0 ? html`<ul class="scopes">${access.openid.map((scope) => html`<li>${openIdScope(ui, scope)}</li>`)}</ul>` : null}
${access.apis.map(
  (api, index) => html`<section class="api" aria-labelledby="api-${index}">
<h3 id="api-${index}">${apiName(ui, api)}</h3>
<p class="muted api-identifier">${api.identifier}</p>
<ul class="scopes">${api.scopes.map((scope) => html`<li>${apiScope(ui, scope)}</li>`)}</ul>
</section>`,
)}`;
}

/** A registered API's name in the page's language (TESSERA_API_TRANSLATIONS), or as registered. */
export function apiName(ui: Ui, api: { readonly name: string; readonly identifier: string }): string {
  return ui.site.apiTranslations?.[ui.t.locale]?.apis[api.identifier] ?? api.name;
}

/** A registered API scope's description in the page's language, or as registered. */
export function apiScope(ui: Ui, scope: { readonly name: string; readonly description: string }): string {
  return ui.site.apiTranslations?.[ui.t.locale]?.scopes[scope.name] ?? scope.description;
}

/** An OpenID scope's description in the page's language; the server's own words for one the catalogues lack. */
export function openIdScope(ui: Ui, scope: DescribedScope): string {
  const key = `scope.${scope.name}`;
  return isMessageKey(key) ? ui.t.text(key) : scope.description;
}

export function consentPage(ui: Ui, view: ConsentView): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('consent.title', { client: view.clientName }),
    html`<h1>${t.html('consent.heading', { client: view.clientName })}</h1>
${unverifiedNotice(ui, view.clientName, view.unverified)}
${view.details ?? null}
<h2 class="muted" id="scopes-heading">${t.html(view.more ? 'consent.alsoWants' : 'consent.willBeAble', { client: view.clientName })}</h2>
${scopeList(ui, view.access)}
<form method="post" action="${view.action}">
${csrfField(view.csrf)}
${hiddenFields(view.fields)}
${
  view.organizations !== undefined && view.organizations.length > 0
    ? html`<fieldset class="organizations"><legend>${t.html('consent.organization', { client: view.clientName })}</legend>
${view.organizations.map(
  (organization, index) =>
    html`<div class="check"><input type="radio" id="organization-${String(index)}" name="organization" value="${organization.id}" required ${organization.id === view.chosenOrganization ? html`checked` : null}><label for="organization-${String(index)}">${organization.name}</label></div>`,
)}
</fieldset>`
    : null
}
<div class="actions">
<button type="submit" name="decision" value="deny" class="choice" formnovalidate>${t.html('consent.deny')}</button>
<button type="submit" name="decision" value="approve" class="choice">${t.html('consent.approve')}</button>
</div>
</form>
${signedInAs(ui, view.signedInAs, view.csrf, view.returnTo)}`,
  );
}

export function signedInAs(ui: Ui, name: string, csrf: string, returnTo: string): SafeHtml {
  return html`<div class="signed-in">${ui.t.html('signedInAs.text', { name })}
<form method="post" action="${SIGN_OUT_PATH}">${csrfField(csrf)}<input type="hidden" name="return_to" value="${returnTo}"><button type="submit">${ui.t.html('signedInAs.signOut')}</button></form></div>`;
}

export interface ResetView {
  readonly csrf: string;
  readonly token: string;
  readonly username: string;
  readonly error?: string | undefined;
}

/** Where a reset link leads: set a new password for `username`. */
export function resetPasswordPage(ui: Ui, view: ResetView): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('reset.title'),
    html`<h1>${t.html('reset.title')}</h1>
<p>${t.html('reset.for', { username: view.username, site: site.name })}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="${RESET_PASSWORD_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="token" value="${view.token}">
<input type="text" name="username" value="${view.username}" autocomplete="username" hidden>
<label for="new_password">${t.html('password.new')}</label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" minlength="8" required autofocus>
<div class="actions"><button type="submit" class="primary">${t.html('reset.submit')}</button></div>
</form>`,
  );
}

export interface ForgotView {
  readonly csrf: string;
  readonly returnTo: string;
  readonly email?: string;
  readonly error?: string;
}

/** "Forgot password?": the e-mail address to send a reset link to. */
export function forgotPasswordPage(ui: Ui, view: ForgotView): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('forgot.title'),
    html`<h1>${t.html('forgot.title')}</h1>
<p>${t.html('forgot.text')}</p>
${view.error ? html`<p class="alert error" role="alert" id="email-error">${view.error}</p>` : null}
<form method="post" action="${FORGOT_PASSWORD_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
<label for="email">${t.html('forgot.email')}</label>
<input type="email" id="email" name="email" autocomplete="email" autocapitalize="none" spellcheck="false" required autofocus value="${view.email ?? ''}" ${view.error ? html`aria-invalid="true" aria-describedby="email-error"` : null}>
<div class="actions"><button type="submit" class="primary">${t.html('forgot.submit')}</button></div>
</form>
<p class="more"><a href="${SIGN_IN_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('forgot.back')}</a></p>`,
  );
}

/** The same answer whether the address has an account or not. */
export function forgotSentPage(ui: Ui, view: { readonly email: string; readonly minutes: number; readonly returnTo: string }): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('forgot.sent.title'),
    html`<h1>${t.html('forgot.sent.title')}</h1>
<p role="status">${t.html('forgot.sent.text', { email: view.email, minutes: view.minutes })}</p>
<p class="more"><a href="${SIGN_IN_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('forgot.back')}</a></p>`,
  );
}

export interface SignUpView {
  readonly csrf: string;
  readonly returnTo: string;
  readonly values?: { readonly username?: string; readonly name?: string; readonly email?: string };
  /** The field the error is about, and what it says. */
  readonly error?: { readonly field: 'username' | 'name' | 'email' | 'password' | null; readonly text: string };
  /** A passkey may be made here: the script shows its button first where the browser can. */
  readonly passkeys?: boolean | undefined;
}

/**
 * The passkey part of a form that makes an account (sign-up, an invitation): hidden until the
 * script (passkeys.js) finds WebAuthn in the browser, then first, the password below it as the
 * alternative. Its form names the options path (`data-options`) and the fields those options
 * are asked for with (`data-fields`).
 */
function newAccountPasskey(ui: Ui): SafeHtml {
  const { t } = ui;
  return html`<div class="passkey" id="new-account-passkey" hidden>
<input type="hidden" name="response" value="">
<input type="hidden" name="passkey_user" value="">
<div class="actions"><button type="button" class="primary" id="passkey-sign-up-button" aria-describedby="passkey-hint">${t.html('signUp.passkey')}</button></div>
<p class="muted" id="passkey-hint">${t.html('signUp.passkeyHint')}</p>
<p class="alert error" role="alert" id="passkey-error" hidden></p>
<p class="or">${t.html('signUp.orPassword')}</p>
</div>`;
}

/**
 * Sign-up: username, name, e-mail address, then a passkey or a password. The passkey's part
 * is hidden until the script finds WebAuthn in the browser; without it, the form is the
 * password form it always was.
 */
export function signUpPage(ui: Ui, view: SignUpView): string {
  const { site, t } = ui;
  const error = view.error;
  const invalid = (field: string) => (error?.field === field ? html`aria-invalid="true" aria-describedby="sign-up-error"` : null);
  return layout(
    ui,
    t.text('signUp.title'),
    html`<h1>${t.html('signUp.title')}</h1>
<p class="muted">${t.html('signUp.intro', { site: site.name })}</p>
${error ? html`<p class="alert error" role="alert" id="sign-up-error">${error.text}</p>` : null}
<form method="post" action="${SIGN_UP_PATH}" id="new-account-form" data-options="${SIGN_UP_PASSKEY_OPTIONS_PATH}" data-fields="username name email">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
<label for="username">${t.html('signUp.username')}</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${view.values?.username ?? ''}" ${invalid('username')}>
<label for="name">${t.html('signUp.name')}</label>
<input type="text" id="name" name="name" autocomplete="name" required maxlength="200" value="${view.values?.name ?? ''}" ${invalid('name')}>
<label for="email">${t.html('signUp.email')}</label>
<input type="email" id="email" name="email" autocomplete="email" autocapitalize="none" spellcheck="false" required value="${view.values?.email ?? ''}" ${invalid('email')}>
${view.passkeys ? newAccountPasskey(ui) : null}
<label for="password">${t.html('signUp.password')}</label>
<input type="password" id="password" name="password" autocomplete="new-password" minlength="8" required aria-describedby="password-hint" ${error?.field === 'password' ? html`aria-invalid="true"` : null}>
<p class="muted" id="password-hint">${t.html('signUp.passwordHint', { min: 8 })}</p>
<div class="actions"><button type="submit" class="primary" id="password-new-account-button">${t.html('signUp.submit')}</button></div>
</form>
<p class="more"><a href="${SIGN_IN_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('signUp.back')}</a></p>
${view.passkeys ? passkeyScripts(ui) : null}`,
  );
}

/** After the form: the same whether the address was new or had an account. */
export function signUpSentPage(ui: Ui, view: { readonly email: string; readonly hours: number; readonly returnTo: string; readonly later: boolean }): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('signUp.sent.title'),
    html`<h1>${t.html('signUp.sent.title')}</h1>
<p role="status">${t.html('signUp.sent.text', { email: view.email, hours: view.hours })}</p>
${view.later ? html`<p>${t.html('signUp.sent.later')}</p>` : null}
<p class="more"><a href="${SIGN_IN_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}">${t.html('signUp.back')}</a></p>`,
  );
}

/**
 * Where the sign-up link leads: a button makes the account, so that a mail scanner opening the
 * link makes nothing. In another browser than the one that signed up (flows/address-link.ts
 * `makerFirst`), the button asks for the password chosen in the form (`password`), or, for an
 * account to be made with a passkey, the page sends the person back to that browser and has
 * no button (`maker-browser`).
 */
export function signUpConfirmPage(
  ui: Ui,
  view: {
    readonly csrf: string;
    readonly token: string;
    readonly username: string;
    readonly ask?: 'password' | 'maker-browser' | undefined;
    readonly error?: string | undefined;
  },
): string {
  const { site, t } = ui;
  if (view.ask === 'maker-browser') {
    return layout(
      ui,
      t.text('signUp.confirm.title'),
      html`<h1>${t.html('signUp.confirm.title')}</h1>
<p role="status">${t.html('signUp.confirm.makerBrowser', { username: view.username })}</p>`,
    );
  }
  const password = view.ask === 'password';
  return layout(
    ui,
    t.text('signUp.confirm.title'),
    html`<h1>${t.html('signUp.confirm.title')}</h1>
<p>${t.html('signUp.confirm.text', { username: view.username, site: site.name })}</p>
${password ? html`<p>${t.html('signUp.confirm.password')}</p>` : null}
${view.error ? html`<p class="alert error" role="alert" id="confirm-error">${view.error}</p>` : null}
<form method="post" action="${SIGN_UP_VERIFY_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="token" value="${view.token}">
${
  password
    ? html`<label for="password">${t.html('signUp.confirm.passwordLabel')}</label>
<input type="password" id="password" name="password" autocomplete="current-password" required autofocus ${view.error ? html`aria-invalid="true" aria-describedby="confirm-error"` : null}>`
    : null
}
<div class="actions"><button type="submit" class="primary">${t.html('signUp.confirm.submit')}</button></div>
</form>`,
  );
}

/** After the link: the account is ready; or the link cannot be used (`invalid`), or the username was taken meanwhile. */
export function signUpDonePage(
  ui: Ui,
  view:
    | { readonly kind: 'done'; readonly username: string; readonly returnTo: string; readonly signedIn?: boolean | undefined }
    | { readonly kind: 'invalid' | 'taken' },
): string {
  const { t } = ui;
  if (view.kind === 'done') {
    return layout(
      ui,
      t.text('signUp.done.title'),
      html`<h1>${t.html('signUp.done.title')}</h1>
<p role="status">${view.signedIn ? t.html('signUp.done.confirmed') : t.html('signUp.done.text', { username: view.username })}</p>
<p><a class="button" href="${view.returnTo}">${t.html('signUp.done.continue')}</a></p>`,
    );
  }
  return layout(
    ui,
    t.text('signUp.invalid.title'),
    html`<h1>${t.html('signUp.invalid.title')}</h1>
<p role="alert">${t.html(view.kind === 'taken' ? 'signUp.taken.text' : 'signUp.invalid.text')}</p>
<p class="more"><a href="${SIGN_UP_PATH}">${t.html('signIn.signUp')}</a></p>`,
  );
}

/** Where the link mailed to a new address leads: a button confirms, so that a mail scanner opening the link changes nothing. */
export function emailChangeConfirmPage(
  ui: Ui,
  view: { readonly csrf: string; readonly token: string; readonly username: string; readonly email: string },
): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('emailChange.confirm.title'),
    html`<h1>${t.html('emailChange.confirm.title')}</h1>
<p>${t.html('emailChange.confirm.text', { email: view.email, username: view.username, site: site.name })}</p>
<form method="post" action="${EMAIL_CHANGE_VERIFY_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="token" value="${view.token}">
<div class="actions"><button type="submit" class="primary">${t.html('emailChange.confirm.submit')}</button></div>
</form>`,
  );
}

/** After the link: the address is changed; or the link cannot be used. */
export function emailChangeDonePage(
  ui: Ui,
  view: { readonly kind: 'done'; readonly username: string; readonly email: string } | { readonly kind: 'invalid' },
): string {
  const { t } = ui;
  if (view.kind === 'done') {
    return layout(
      ui,
      t.text('emailChange.done.title'),
      html`<h1>${t.html('emailChange.done.title')}</h1>
<p role="status">${t.html('emailChange.done.text', { email: view.email, username: view.username })}</p>
<p><a class="button" href="${ACCOUNT_PATH}">${t.html('emailChange.done.continue')}</a></p>`,
    );
  }
  return layout(
    ui,
    t.text('emailChange.invalid.title'),
    html`<h1>${t.html('emailChange.invalid.title')}</h1>
<p role="alert">${t.html('emailChange.invalid.text')}</p>
<p class="more"><a href="${ACCOUNT_PATH}">${t.html('emailChange.done.continue')}</a></p>`,
  );
}

/**
 * Where an invitation's link leads: a username, a name, then a passkey (as on sign-up) or a
 * password; the address is the invitation's.
 */
export function invitationPage(
  ui: Ui,
  view: {
    readonly csrf: string;
    readonly token: string;
    readonly email: string;
    readonly values?: { readonly username?: string; readonly name?: string };
    readonly error?: { readonly field: 'username' | 'name' | 'password' | null; readonly text: string };
    /** A passkey may be made here: the script shows its button first where the browser can. */
    readonly passkeys?: boolean | undefined;
  },
): string {
  const { site, t } = ui;
  const error = view.error;
  const invalid = (field: string) => (error?.field === field ? html`aria-invalid="true" aria-describedby="invitation-error"` : null);
  return layout(
    ui,
    t.text('invitation.title'),
    html`<h1>${t.html('invitation.title')}</h1>
<p class="muted">${t.html('invitation.for', { site: site.name, email: view.email })}</p>
${error ? html`<p class="alert error" role="alert" id="invitation-error">${error.text}</p>` : null}
<form method="post" action="${INVITATION_PATH}" id="new-account-form" data-options="${INVITATION_PASSKEY_OPTIONS_PATH}" data-fields="token username name">
${csrfField(view.csrf)}
<input type="hidden" name="token" value="${view.token}">
<label for="username">${t.html('signUp.username')}</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required maxlength="64" value="${view.values?.username ?? ''}" ${invalid('username')}>
<label for="name">${t.html('signUp.name')}</label>
<input type="text" id="name" name="name" autocomplete="name" required maxlength="200" value="${view.values?.name ?? ''}" ${invalid('name')}>
${view.passkeys ? newAccountPasskey(ui) : null}
<label for="password">${t.html('signUp.password')}</label>
<input type="password" id="password" name="password" autocomplete="new-password" minlength="8" required aria-describedby="password-hint" ${error?.field === 'password' ? html`aria-invalid="true"` : null}>
<p class="muted" id="password-hint">${t.html('signUp.passwordHint', { min: 8 })}</p>
<div class="actions"><button type="submit" class="primary" id="password-new-account-button">${t.html('invitation.submit')}</button></div>
</form>
${view.passkeys ? passkeyScripts(ui) : null}`,
  );
}

/** An invitation that cannot be used. */
export function invitationInvalidPage(ui: Ui): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('signUp.invalid.title'),
    html`<h1>${t.html('signUp.invalid.title')}</h1>
<p role="alert">${t.html('invitation.invalid.text')}</p>`,
  );
}

/**
 * After a reset, or for a link that cannot be used. `waysInRemoved`: the mailed link proved an
 * self-asserted address that had not been confirmed, and the passkeys, codes, upstream links or
 * app approvals the account had were removed (flows/users.ts `proveAddressIn`): the person is
 * told why, and that they can add new ones.
 */
export function resetDonePage(ui: Ui, done: boolean, waysInRemoved = false): string {
  const { t } = ui;
  return done
    ? layout(
        ui,
        t.text('reset.done.title'),
        html`<h1>${t.html('reset.done.title')}</h1>
<p role="status">${t.html('reset.done.text')}</p>
${waysInRemoved ? html`<p>${t.html('reset.done.unconfirmed')}</p>` : null}
<p><a href="${ACCOUNT_PATH}">${t.html('reset.done.signIn')}</a></p>`,
      )
    : layout(
        ui,
        t.text('reset.invalid.title'),
        html`<h1>${t.html('reset.invalid.heading')}</h1>
<p role="alert">${t.html('reset.invalid.text')}</p>`,
      );
}

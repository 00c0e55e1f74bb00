import { readFileSync } from 'node:fs';
import type { DescribedAccess } from '../flows/resources.ts';
import { html, type SafeHtml } from './html.ts';

/** Served at STYLESHEET_PATH; pages load nothing else (CSP default-src 'none'). */
export const STYLESHEET = readFileSync(new URL('./style.css', import.meta.url), 'utf8');
export const STYLESHEET_PATH = '/assets/tessera.css';

/** Whose server this is, as the operator named it (TESSERA_SITE_NAME, _LOGO_URL, _ACCENT_COLOR). */
export interface Site {
  readonly name: string;
  readonly logoUrl: string | null;
  readonly accentColor: string | null;
}

export const DEFAULT_SITE: Site = { name: 'Tessera', logoUrl: null, accentColor: null };

/** The stylesheet, with the operator's accent on the buttons when one is set (its contrast with white was checked at start). */
export function stylesheet(site: Site): string {
  return site.accentColor === null ? STYLESHEET : `${STYLESHEET}\n:root { --brand: ${site.accentColor}; --brand-fg: #fff; }\n`;
}

export function layout(site: Site, title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · ${site.name}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
<header class="brand">${site.logoUrl ? html`<img src="${site.logoUrl}" alt="" height="32">` : null}<span>${site.name}</span></header>
<div class="card">
${body}
</div>
</main>
</body>
</html>`.value;
}

export const WEBAUTHN_SCRIPT_PATH = '/assets/webauthn.js';
export const PASSKEYS_SCRIPT_PATH = '/assets/passkeys.js';


export function passkeyScripts(): SafeHtml {
  return html`<script src="${WEBAUTHN_SCRIPT_PATH}" defer></script>
<script src="${PASSKEYS_SCRIPT_PATH}" defer></script>`;
}

/**
 * Beside the password form: a button that asks the browser for any passkey of this site,
 * and the hidden form the script posts the browser's answer with. The same request also
 * runs as conditional mediation, so the passkeys appear in the username field's autofill.
 */
export function passkeySignIn(csrf: string, returnTo: string, clientId?: string | null): SafeHtml {
  return html`<div class="passkey" id="passkey-sign-in">
<p class="muted or">or</p>
<form method="post" action="/login/passkey" id="passkey-form">
${csrfField(csrf)}
<input type="hidden" name="return_to" value="${returnTo}">
${clientField(clientId)}
<input type="hidden" name="response" value="">
<div class="actions"><button type="button" id="passkey-button">Sign in with a passkey</button></div>
</form>
<p class="alert error" role="alert" id="passkey-error" hidden></p>
</div>
${passkeyScripts()}`;
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
export function errorPage(site: Site, title: string, message: string, options: ErrorPageOptions = {}): string {
  const back = options.back ?? { href: '/', label: `Go to the ${site.name} start page` };
  return layout(site, title, html`<h1>${title}</h1>
<p role="alert">${message}</p>
<p><a href="${back.href}">${back.label}</a></p>
${options.details ? html`<p class="fine-print">For the app's developer: ${options.details}</p>` : null}`);
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
}

export function signInPage(site: Site, view: SignInView): string {
  return layout(site, 'Sign in', html`<h1>Sign in</h1>
${view.clientName ? html`<p>to continue to <strong>${view.clientName}</strong></p>` : null}
<p class="muted">with your ${site.name} account</p>
${view.notice ? html`<p class="alert warning" role="status">${view.notice}</p>` : null}
${view.setUp ? html`<p><a href="/account">Set up a passkey or one-time codes on your account page</a>: you stay signed in, then come back here.</p>` : null}
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="/login">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
${clientField(view.clientId)}
<label for="username">Username</label>
<input type="text" id="username" name="username" autocomplete="${view.passkeys ? 'username webauthn' : 'username'}" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}" ${view.username ? null : html`autofocus`}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required ${view.username ? html`autofocus` : null}>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
${view.passkeys ? passkeySignIn(view.csrf, view.returnTo, view.clientId) : null}`);
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
  readonly heading?: string;
  /** Where "Sign out" leads back to, to sign in as someone else. */
  readonly returnTo: string;
}

/**
 * The access asked for, as a person reads it: the OpenID scopes' descriptions, then each API
 * under its name (a region named by its heading), with its scopes' descriptions.
 */
export function scopeList(access: DescribedAccess): SafeHtml {
  return html`${access.openid.length > 0 ? html`<ul class="scopes">${access.openid.map((scope) => html`<li>${scope.description}</li>`)}</ul>` : null}
${access.apis.map((api, index) => html`<section class="api" aria-labelledby="api-${index}">
<h3 id="api-${index}">${api.name}</h3>
<p class="muted api-identifier">${api.identifier}</p>
<ul class="scopes">${api.scopes.map((scope) => html`<li>${scope.description}</li>`)}</ul>
</section>`)}`;
}

export function consentPage(site: Site, view: ConsentView): string {
  return layout(site, `Allow ${view.clientName}?`, html`<h1>${view.heading ?? html`Allow <strong>${view.clientName}</strong> to access your account?`}</h1>
${view.details ?? null}
<h2 class="muted" id="scopes-heading">${view.clientName} ${view.more ? 'also wants to' : 'will be able to'}:</h2>
${scopeList(view.access)}
<form method="post" action="${view.action}">
${csrfField(view.csrf)}
${hiddenFields(view.fields)}
<div class="actions">
<button type="submit" name="decision" value="deny" class="choice">Deny</button>
<button type="submit" name="decision" value="approve" class="choice">Approve</button>
</div>
</form>
${signedInAs(view.signedInAs, view.csrf, view.returnTo)}`);
}

export function signedInAs(name: string, csrf: string, returnTo: string): SafeHtml {
  return html`<div class="signed-in">Signed in as <strong>${name}</strong>.
<form method="post" action="/logout">${csrfField(csrf)}<input type="hidden" name="return_to" value="${returnTo}"><button type="submit">Not you? Sign out</button></form></div>`;
}

export interface ResetView {
  readonly csrf: string;
  readonly token: string;
  readonly username: string;
  readonly error?: string | undefined;
}

/** Where a reset link leads: set a new password for `username`. */
export function resetPasswordPage(site: Site, view: ResetView): string {
  return layout(site, 'Set a new password', html`<h1>Set a new password</h1>
<p>for <strong>${view.username}</strong> on ${site.name}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="/reset-password">
${csrfField(view.csrf)}
<input type="hidden" name="token" value="${view.token}">
<input type="text" name="username" value="${view.username}" autocomplete="username" hidden>
<label for="new_password">New password</label>
<input type="password" id="new_password" name="new_password" autocomplete="new-password" minlength="8" required autofocus>
<div class="actions"><button type="submit" class="primary">Set password</button></div>
</form>`);
}

/** After a reset, or for a link that cannot be used. */
export function resetDonePage(site: Site, done: boolean): string {
  return done
    ? layout(site, 'Password changed', html`<h1>Password changed</h1>
<p role="status">Your new password is set, and every browser that was signed in has been signed out.</p>
<p><a href="/account">Sign in</a></p>`)
    : layout(site, 'Link not valid', html`<h1>This link cannot be used</h1>
<p role="alert">It has already been used, or it has expired. Ask your administrator for a new one.</p>`);
}

import { readFileSync } from 'node:fs';
import { SCOPE_DESCRIPTIONS } from '../core/scopes.ts';
import { html, type SafeHtml } from './html.ts';

/** Served at STYLESHEET_PATH; pages load nothing else (CSP default-src 'none'). */
export const STYLESHEET = readFileSync(new URL('./style.css', import.meta.url), 'utf8');
export const STYLESHEET_PATH = '/assets/tessera.css';

export function layout(title: string, body: SafeHtml): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${title} · Tessera</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main>
<p class="brand" aria-hidden="true">Tessera</p>
<div class="card">
${body}
</div>
</main>
</body>
</html>`.value;
}

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="csrf_token" value="${token}">`;
}

function hiddenFields(fields: Readonly<Record<string, string>>): SafeHtml[] {
  return Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`);
}

export function errorPage(title: string, message: string): string {
  return layout(title, html`<h1>${title}</h1>
<p role="alert">${message}</p>`);
}

export interface SignInView {
  readonly csrf: string;
  /** Where to go after signing in: a path on this server. */
  readonly returnTo: string;
  readonly clientName?: string | undefined;
  readonly error?: string | undefined;
  readonly username?: string | undefined;
}

export function signInPage(view: SignInView): string {
  return layout('Sign in', html`<h1>Sign in</h1>
${view.clientName ? html`<p>to continue to <strong>${view.clientName}</strong></p>` : null}
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="/login">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
<label for="username">Username</label>
<input type="text" id="username" name="username" autocomplete="username" autocapitalize="none" spellcheck="false" required value="${view.username ?? ''}" ${view.username ? null : html`autofocus`}>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required ${view.username ? html`autofocus` : null}>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>`);
}

export interface ConsentView {
  readonly csrf: string;
  /** Where the decision is posted. */
  readonly action: string;
  /** Carried through the form unchanged: the request being decided. */
  readonly fields: Readonly<Record<string, string>>;
  readonly clientName: string;
  readonly scopes: readonly string[];
  readonly signedInAs: string;
  /** Flow-specific facts shown above the scopes (the device's code and origin). */
  readonly details?: SafeHtml;
  readonly heading?: string;
  /** Where "Sign out" leads back to, to sign in as someone else. */
  readonly returnTo: string;
}

export function scopeList(scopes: readonly string[]): SafeHtml {
  return html`<ul class="scopes">${scopes.map((scope) => html`<li>${SCOPE_DESCRIPTIONS[scope] ?? scope}</li>`)}</ul>`;
}

export function consentPage(view: ConsentView): string {
  return layout(`Allow ${view.clientName}?`, html`<h1>${view.heading ?? html`Allow <strong>${view.clientName}</strong> to access your account?`}</h1>
${view.details ?? null}
<h2 class="muted" id="scopes-heading">${view.clientName} will be able to:</h2>
${scopeList(view.scopes)}
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

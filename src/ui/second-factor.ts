/**
 * The pages and page parts of passkeys and one-time codes: the passkey button beside the
 * password form, the code asked after the password, and the account page's "Passkeys"
 * and "Authenticator app" sections. The WebAuthn calls are made by /assets/passkeys.js
 * (over @simplewebauthn/browser, served from here as /assets/webauthn.js: no CDN), which
 * the CSP allows as 'self'.
 */
import { html, type SafeHtml } from './html.ts';
import { clientField, csrfField, layout, passkeyScripts, type Site } from './pages.ts';

const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

function time(ms: number): SafeHtml {
  return html`<time datetime="${new Date(ms).toISOString()}">${DATE.format(ms)} UTC</time>`;
}

export interface CodePageView {
  readonly csrf: string;
  readonly returnTo: string;
  /** The application the sign-in continues to (clientField). */
  readonly clientId?: string | null | undefined;
  readonly error?: string | undefined;
}

/** After a correct password, for a person with one-time codes on. */
export function secondFactorPage(site: Site, view: CodePageView): string {
  return layout(site, 'Enter your code', html`<h1>Enter your code</h1>
<p>Open your authenticator app and enter the 6-digit code it shows for ${site.name}. If you do not have your phone, enter one of your recovery codes.</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="/login/second-factor">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
${clientField(view.clientId)}
<label for="code">Code</label>
<input type="text" id="code" name="code" class="code" inputmode="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="64" required autofocus>
<div class="actions"><button type="submit" class="primary">Continue</button></div>
</form>`);
}

export interface PasskeyView {
  readonly id: string;
  readonly name: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  readonly synced: boolean;
}

export interface SecurityView {
  readonly csrf: string;
  /** False when the issuer's host is an IP address, which cannot be an RP ID. */
  readonly passkeysAvailable: boolean;
  readonly passkeys: readonly PasskeyView[];
  readonly totpEnabled: boolean;
  readonly recoveryCodesLeft: number;
}

function passkeyItem(view: PasskeyView, csrf: string): SafeHtml {
  const heading = `passkey-${view.id.slice(0, 32)}`;
  return html`<li>
<section aria-labelledby="${heading}">
<h3 id="${heading}">${view.name}</h3>
<dl class="origin">
<dt>Added</dt><dd>${time(view.createdAt)}</dd>
<dt>Last used</dt><dd>${view.lastUsedAt === null ? 'not yet' : time(view.lastUsedAt)}</dd>
${view.synced ? html`<dt>Kind</dt><dd>Synced between your devices</dd>` : null}
</dl>
<form method="post" action="/account/passkeys/remove">
${csrfField(csrf)}
<input type="hidden" name="passkey_id" value="${view.id}">
<button type="submit" aria-label="Remove ${view.name}">Remove</button>
</form>
</section>
</li>`;
}

/** The account page's sign-in section: passkeys, and one-time codes. */
export function securitySection(view: SecurityView): SafeHtml {
  return html`<section aria-labelledby="passkeys-heading" class="security">
<h2 id="passkeys-heading">Passkeys</h2>
<p class="muted">A passkey signs you in with your device's screen lock instead of your password, and cannot be used on a look-alike site.</p>
${view.passkeys.length === 0 ? html`<p>You have no passkeys.</p>` : html`<ul class="connections">${view.passkeys.map((passkey) => passkeyItem(passkey, view.csrf))}</ul>`}
${view.passkeysAvailable
  ? html`<form method="post" action="/account/passkeys" id="passkey-register-form">
${csrfField(view.csrf)}
<input type="hidden" name="response" value="">
<label for="passkey-name">Passkey name</label>
<input type="text" id="passkey-name" name="name" maxlength="64" placeholder="My laptop" autocomplete="off">
<div class="actions"><button type="button" id="passkey-register-button">Add a passkey</button></div>
</form>
<p class="alert error" role="alert" id="passkey-error" hidden></p>
${passkeyScripts()}`
  : html`<p class="muted">Passkeys need this server to be reached by a domain name, not an IP address.</p>`}
</section>
<section aria-labelledby="totp-heading" class="security">
<h2 id="totp-heading">Authenticator app</h2>
${view.totpEnabled
  ? html`<p>One-time codes are on: after your password, you are asked for a code from your app. ${view.recoveryCodesLeft === 1 ? '1 recovery code is' : `${view.recoveryCodesLeft} recovery codes are`} left.</p>
<form method="post" action="/account/totp/remove">${csrfField(view.csrf)}<button type="submit">Turn off one-time codes</button></form>`
  : html`<p class="muted">Ask for a code from an app on your phone after your password.</p>
<form method="post" action="/account/totp/setup">${csrfField(view.csrf)}<button type="submit">Set up an authenticator app</button></form>`}
</section>`;
}

export interface TotpSetupView {
  readonly csrf: string;
  readonly secret: string;
  /** A data: URL of the QR code of the otpauth URI. */
  readonly qr: string;
  readonly error?: string | undefined;
}

export function totpSetupPage(site: Site, view: TotpSetupView): string {
  const grouped = view.secret.replace(/(.{4})/g, '$1 ').trim();
  return layout(site, 'Set up an authenticator app', html`<h1>Set up an authenticator app</h1>
<p>Scan this code with your authenticator app, then enter the 6-digit code it shows.</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<p><img src="${view.qr}" alt="QR code for your authenticator app" width="200" height="200"></p>
<p class="muted">Cannot scan it? Enter this key in the app: <code id="totp-secret">${grouped}</code></p>
<form method="post" action="/account/totp/confirm">
${csrfField(view.csrf)}
<label for="code">Code from the app</label>
<input type="text" id="code" name="code" class="code" inputmode="numeric" autocomplete="one-time-code" maxlength="16" required autofocus>
<div class="actions"><button type="submit" class="primary">Turn on</button></div>
</form>`);
}

export function recoveryCodesPage(site: Site, codes: readonly string[]): string {
  return layout(site, 'Your recovery codes', html`<h1>Your recovery codes</h1>
<p role="status" class="alert">One-time codes are on.</p>
<p>If you lose your phone, each of these codes signs you in once in place of a code from the app. Keep them somewhere safe: they are shown only now.</p>
<ul class="recovery-codes" aria-label="Recovery codes">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ul>
<div class="actions"><a href="/account">Back to your account</a></div>`);
}

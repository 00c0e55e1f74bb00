/**
 * The pages and page parts of passkeys and one-time codes: the passkey button beside the
 * password form, the code asked after the password, and the account page's "Passkeys"
 * and "Authenticator app" sections. The WebAuthn calls are made by /assets/passkeys.js
 * (over @simplewebauthn/browser, served from here as /assets/webauthn.js: no CDN), which
 * the CSP allows as 'self'.
 */
import {
  ACCOUNT_PATH,
  PASSKEY_REGISTRATION_OPTIONS_PATH,
  PASSKEY_REMOVE_PATH,
  PASSKEYS_PATH,
  SECOND_FACTOR_PATH,
  SIGN_IN_PATH,
  TOTP_CONFIRM_PATH,
  TOTP_REMOVE_PATH,
  TOTP_SETUP_PATH,
} from '../core/endpoints.ts';
import { html, type SafeHtml } from './html.ts';
import { clientField, csrfField, layout, passkeyScripts, type Ui } from './pages.ts';

export interface CodePageView {
  readonly csrf: string;
  readonly returnTo: string;
  /** The application the sign-in continues to (clientField). */
  readonly clientId?: string | null | undefined;
  readonly error?: string | undefined;
}

/** After a correct password, for a person with one-time codes on. */
export function secondFactorPage(ui: Ui, view: CodePageView): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('code.title'),
    html`<h1>${t.html('code.title')}</h1>
<p>${t.html('code.intro', { site: site.name })}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="${SECOND_FACTOR_PATH}">
${csrfField(view.csrf)}
<input type="hidden" name="return_to" value="${view.returnTo}">
${clientField(view.clientId)}
<label for="code">${t.html('code.label')}</label>
<input type="text" id="code" name="code" class="code" inputmode="text" autocomplete="one-time-code" autocapitalize="none" spellcheck="false" maxlength="64" required autofocus>
<div class="actions"><button type="submit" class="primary">${t.html('common.continue')}</button></div>
</form>`,
  );
}

export interface PasskeyView {
  readonly id: string;
  readonly name: string;
  readonly createdAt: number;
  readonly lastUsedAt: number | null;
  readonly synced: boolean;
  /** False for a person's last way to sign in (no password, no provider, no other passkey): no "Remove", and why. */
  readonly removable: boolean;
}

export interface SecurityView {
  readonly csrf: string;
  /** False when the issuer's host is an IP address, which cannot be an RP ID. */
  readonly passkeysAvailable: boolean;
  readonly passkeys: readonly PasskeyView[];
  readonly totpEnabled: boolean;
  readonly recoveryCodesLeft: number;
  /**
   * Why this session may not add or remove a passkey or one-time codes, or null when it may
   * (flows/second-factor/policy.ts): a password alone, once the account has one; a sign-in
   * older than `reauthenticateMinutes`. If it may not, the section lists them, says why, and
   * links to the sign-in page, with no button that would be refused.
   */
  readonly changeRefusal: 'prove-first' | 'sign-in-again' | null;
  readonly reauthenticateMinutes: number;
  /**
   * Where the person came from: the approval that asked for a second factor. Setting
   * one up here leads back there, to finish it, instead of ending on this page.
   */
  readonly returnTo?: string | undefined;
}

/** The hidden field that carries the approval to return to through a set-up. */
const returnField = (returnTo: string | undefined) => (returnTo === undefined ? null : html`<input type="hidden" name="return_to" value="${returnTo}">`);

function passkeyItem(ui: Ui, view: PasskeyView, csrf: string, mayChange: boolean): SafeHtml {
  const { t } = ui;
  const heading = `passkey-${view.id.slice(0, 32)}`;
  return html`<li>
<section aria-labelledby="${heading}">
<h3 id="${heading}">${view.name}</h3>
<dl class="origin">
<dt>${t.html('passkeys.added')}</dt><dd>${t.time(view.createdAt)}</dd>
<dt>${t.html('common.lastUsed')}</dt><dd>${view.lastUsedAt === null ? t.html('common.notYet') : t.time(view.lastUsedAt)}</dd>
${view.synced ? html`<dt>${t.html('passkeys.kind')}</dt><dd>${t.html('passkeys.synced')}</dd>` : null}
</dl>
${
  !mayChange
    ? null
    : view.removable
      ? html`<form method="post" action="${PASSKEY_REMOVE_PATH}">
${csrfField(csrf)}
<input type="hidden" name="passkey_id" value="${view.id}">
<button type="submit" aria-label="${t.text('passkeys.removeNamed', { name: view.name })}">${t.html('passkeys.remove')}</button>
</form>`
      : html`<p>${t.html('passkeys.onlyWayIn')}</p>`
}
</section>
</li>`;
}

/** The account page's sign-in section: passkeys, and one-time codes. */
export function securitySection(ui: Ui, view: SecurityView): SafeHtml {
  const { t } = ui;
  const mayChange = view.changeRefusal === null;
  // The sign-in page, shown though the browser is signed in, and back here after, still on the
  // way back to the approval this page was opened for (if any): setting up a factor here then
  // leads there, as the sign-in page that sent the person here promised.
  const accountAgain = view.returnTo ? `${ACCOUNT_PATH}?${new URLSearchParams({ return_to: view.returnTo }).toString()}` : ACCOUNT_PATH;
  const signInAgain = `${SIGN_IN_PATH}?${new URLSearchParams({ prompt: 'login', return_to: accountAgain }).toString()}`;
  const refusal =
    view.changeRefusal === null
      ? null
      : html`<p class="alert warning">${
          view.changeRefusal === 'prove-first'
            ? t.html('secondFactors.proveFirst')
            : t.html('secondFactors.signInAgain', { minutes: view.reauthenticateMinutes })
        } <a href="${signInAgain}">${t.html('secondFactors.signInAgainLink')}</a></p>`;
  return html`<section aria-labelledby="passkeys-heading" class="security">
<h2 id="passkeys-heading">${t.html('passkeys.heading')}</h2>
<p class="muted">${t.html('passkeys.intro')}</p>
${refusal}
${view.passkeys.length === 0 ? html`<p>${t.html('passkeys.none')}</p>` : html`<ul class="connections">${view.passkeys.map((passkey) => passkeyItem(ui, passkey, view.csrf, mayChange))}</ul>`}
${
  !mayChange
    ? null
    : view.passkeysAvailable
      ? html`<form method="post" action="${PASSKEYS_PATH}" data-options="${PASSKEY_REGISTRATION_OPTIONS_PATH}" id="passkey-register-form">
${csrfField(view.csrf)}
${returnField(view.returnTo)}
<input type="hidden" name="response" value="">
<label for="passkey-name">${t.html('passkeys.name')}</label>
<input type="text" id="passkey-name" name="name" maxlength="64" placeholder="${t.text('passkeys.namePlaceholder')}" autocomplete="off">
<div class="actions"><button type="button" id="passkey-register-button">${t.html('passkeys.add')}</button></div>
</form>
<p class="alert error" role="alert" id="passkey-error" hidden></p>
${passkeyScripts(ui)}`
      : html`<p class="muted">${t.html('passkeys.unavailable')}</p>`
}
</section>
<section aria-labelledby="totp-heading" class="security">
<h2 id="totp-heading">${t.html('totp.heading')}</h2>
${
  view.totpEnabled
    ? html`<p>${t.html('totp.on', { count: view.recoveryCodesLeft })}</p>
${mayChange ? html`<form method="post" action="${TOTP_REMOVE_PATH}">${csrfField(view.csrf)}<button type="submit">${t.html('totp.turnOff')}</button></form>` : null}`
    : html`<p class="muted">${t.html('totp.offer')}</p>
${mayChange ? html`<form method="post" action="${TOTP_SETUP_PATH}">${csrfField(view.csrf)}${returnField(view.returnTo)}<button type="submit">${t.html('totp.setUp')}</button></form>` : null}`
}
</section>`;
}

export interface TotpSetupView {
  readonly csrf: string;
  readonly secret: string;
  /** A data: URL of the QR code of the otpauth URI. */
  readonly qr: string;
  readonly error?: string | undefined;
  readonly returnTo?: string | undefined;
}

export function totpSetupPage(ui: Ui, view: TotpSetupView): string {
  const { t } = ui;
  const grouped = view.secret.replace(/(.{4})/g, '$1 ').trim();
  return layout(
    ui,
    t.text('totp.setUp'),
    html`<h1>${t.html('totp.setUp')}</h1>
<p>${t.html('totp.setup.scan')}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<p><img src="${view.qr}" alt="${t.text('totp.setup.qrAlt')}" width="200" height="200"></p>
<p class="muted">${t.html('totp.setup.cannotScan', { key: html`<code id="totp-secret">${grouped}</code>` })}</p>
<form method="post" action="${TOTP_CONFIRM_PATH}">
${csrfField(view.csrf)}
${returnField(view.returnTo)}
<label for="code">${t.html('totp.setup.code')}</label>
<input type="text" id="code" name="code" class="code" inputmode="numeric" autocomplete="one-time-code" maxlength="16" required autofocus>
<div class="actions"><button type="submit" class="primary">${t.html('totp.setup.turnOn')}</button></div>
</form>`,
  );
}

/** The codes shown once; `returnTo`: the approval the set-up interrupted, continued from here. */
export function recoveryCodesPage(ui: Ui, codes: readonly string[], returnTo?: string): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('recovery.title'),
    html`<h1>${t.html('recovery.title')}</h1>
<p role="status" class="alert">${t.html('recovery.on')}</p>
<p>${t.html('recovery.text')}</p>
<ul class="recovery-codes" aria-label="${t.text('recovery.label')}">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ul>
<div class="actions">${returnTo === undefined ? null : html`<a href="${returnTo}">${t.html('common.continue')}</a>`}<a href="${ACCOUNT_PATH}">${t.html('recovery.back')}</a></div>`,
  );
}

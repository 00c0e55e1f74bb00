/**
 * The device verification pages (RFC 8628 §3.3): code entry, the device-specific part of
 * the approval page, and the page after the decision. The approval page itself is
 * `consentPage` with these details in its slot.
 */
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout, type Site } from './pages.ts';

export interface DeviceCodeView {
  readonly csrf: string;
  /** Pre-filled: from verification_uri_complete, or what was typed before an error. */
  readonly value: string;
  readonly error?: string | undefined;
}

export function deviceCodePage(site: Site, view: DeviceCodeView): string {
  return layout(site, 'Connect a device', html`<h1>Connect a device</h1>
<p>Enter the code shown on your device to connect it to your ${site.name} account.</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="/device">
${csrfField(view.csrf)}
<label for="user_code">Code</label>
<input type="text" id="user_code" name="user_code" class="code" value="${view.value}" maxlength="32" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus aria-describedby="code-hint">
<p class="muted" id="code-hint">8 letters, like BCDF-GHJK. Capitals and the dash are optional.</p>
<div class="actions"><button type="submit" class="primary">Continue</button></div>
</form>`);
}

/** "3 minutes ago": how long before `now` the device asked. */
export function timeAgo(then: number, now: number): string {
  const minutes = Math.floor(Math.max(0, now - then) / 60_000);
  if (minutes < 1) return 'less than a minute ago';
  if (minutes < 60) return minutes === 1 ? '1 minute ago' : `${minutes} minutes ago`;
  const hours = Math.floor(minutes / 60);
  return hours === 1 ? '1 hour ago' : `${hours} hours ago`;
}

export interface DeviceDetailsView {
  /** As shown on the device: `XXXX-XXXX`. */
  readonly userCode: string;
  readonly requestedAt: number;
  readonly now: number;
  readonly deviceIp: string;
  readonly deviceUserAgent: string | null;
  readonly approverIp: string;
  /** The proximity check failed: the device asked from another network. */
  readonly otherNetwork: boolean;
}

/**
 * What the approver must see before approving a device (RFC 8628 §5.4, remote phishing):
 * the code to compare with the device's screen, when and from where the device asked,
 * beside where the approver is, and a warning when those are different networks.
 */
export function deviceDetails(view: DeviceDetailsView): SafeHtml {
  return html`<p>Check that this code is the one on your device's screen:</p>
<p class="user-code" id="user-code">${view.userCode}</p>
${view.otherNetwork
    ? html`<p class="alert warning" role="alert"><strong>This device is on a different network from you.</strong> If you are not in front of the device, or someone sent you this code or link, choose Deny: approving would give them access to your account.</p>`
    : null}
<dl class="origin">
<dt>Requested</dt><dd>${timeAgo(view.requestedAt, view.now)}</dd>
<dt>Device</dt><dd>${view.deviceIp}${view.deviceUserAgent ? html`<br><span class="muted">${view.deviceUserAgent}</span>` : null}</dd>
<dt>You</dt><dd>${view.approverIp}</dd>
</dl>
<p><strong>Approve only if you started this yourself, on a device you have with you.</strong></p>
<p id="report">Did you not start this? Choose Deny, then report it to your administrator: someone who sends you a code
or a link to approve is trying to get into your account.</p>`;
}

export function deviceDonePage(site: Site, approved: boolean, clientName: string): string {
  return approved
    ? layout(site, 'Device approved', html`<h1>Device approved</h1>
<p role="status"><strong>${clientName}</strong> is now connected to your account.</p>
<p>You can return to your device: it will continue on its own in a few seconds.</p>`)
    : layout(site, 'Request denied', html`<h1>Request denied</h1>
<p role="status"><strong>${clientName}</strong> was not given access to your account.</p>
<p>You can return to your device and close this page.</p>
<p>If you did not start this request yourself, someone may have sent you the code to get into your account: report it to your administrator.</p>`);
}

export function deviceCodeUsedPage(site: Site): string {
  return layout(site, 'Code already used', html`<h1>This code has already been used</h1>
<p role="alert">The request was already approved or denied. Return to your device; if it needs a new code, start again there.</p>
<p><a href="/device">Enter another code</a></p>`);
}

/**
 * The device verification pages (RFC 8628 §3.3): code entry, the device-specific part of
 * the approval page, and the page after the decision. The approval page itself is
 * `consentPage` with these details in its slot.
 */
import { DEVICE_VERIFICATION_PATH } from '../core/endpoints.ts';
import { html, type SafeHtml } from './html.ts';
import { csrfField, layout, type Ui } from './pages.ts';

export interface DeviceCodeView {
  readonly csrf: string;
  /** Pre-filled: from verification_uri_complete, or what was typed before an error. */
  readonly value: string;
  readonly error?: string | undefined;
}

export function deviceCodePage(ui: Ui, view: DeviceCodeView): string {
  const { site, t } = ui;
  return layout(
    ui,
    t.text('device.code.title'),
    html`<h1>${t.html('device.code.title')}</h1>
<p>${t.html('device.code.intro', { site: site.name })}</p>
${view.error ? html`<p class="alert error" role="alert">${view.error}</p>` : null}
<form method="post" action="${DEVICE_VERIFICATION_PATH}">
${csrfField(view.csrf)}
<label for="user_code">${t.html('device.code.label')}</label>
<input type="text" id="user_code" name="user_code" class="code" value="${view.value}" maxlength="32" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus aria-describedby="code-hint">
<p class="muted" id="code-hint">${t.html('device.code.hint', { example: 'BCDF-GHJK' })}</p>
<div class="actions"><button type="submit" class="primary">${t.html('common.continue')}</button></div>
</form>`,
  );
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
export function deviceDetails(ui: Ui, view: DeviceDetailsView): SafeHtml {
  const { t } = ui;
  return html`<p>${t.html('device.details.check')}</p>
<p class="user-code" id="user-code">${view.userCode}</p>
${view.otherNetwork ? html`<p class="alert warning" role="alert">${t.html('device.details.otherNetwork')}</p>` : null}
<dl class="origin">
<dt>${t.html('device.details.requested')}</dt><dd>${t.ago(view.requestedAt, view.now)}</dd>
<dt>${t.html('device.details.device')}</dt><dd><bdi>${view.deviceIp}</bdi>${view.deviceUserAgent ? html`<br><span class="muted"><bdi>${view.deviceUserAgent}</bdi></span>` : null}</dd>
<dt>${t.html('device.details.you')}</dt><dd><bdi>${view.approverIp}</bdi></dd>
</dl>
<p>${t.html('device.details.approveOnly')}</p>
<p id="report">${t.html('device.details.report')}</p>`;
}

export function deviceDonePage(ui: Ui, approved: boolean, clientName: string): string {
  const { t } = ui;
  return approved
    ? layout(
        ui,
        t.text('device.approved.title'),
        html`<h1>${t.html('device.approved.title')}</h1>
<p role="status">${t.html('device.approved.connected', { client: clientName })}</p>
<p>${t.html('device.approved.return')}</p>`,
      )
    : layout(
        ui,
        t.text('device.denied.title'),
        html`<h1>${t.html('device.denied.title')}</h1>
<p role="status">${t.html('device.denied.notGiven', { client: clientName })}</p>
<p>${t.html('device.denied.return')}</p>
<p>${t.html('device.denied.report')}</p>`,
      );
}

export function deviceCodeUsedPage(ui: Ui): string {
  const { t } = ui;
  return layout(
    ui,
    t.text('device.used.title'),
    html`<h1>${t.html('device.used.heading')}</h1>
<p role="alert">${t.html('device.used.text')}</p>
<p><a href="${DEVICE_VERIFICATION_PATH}">${t.html('device.used.another')}</a></p>`,
  );
}

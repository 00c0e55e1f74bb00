/**
 * The words of each message (flows/mail/outbox.ts), in the person's language, as a plain-text
 * part and an HTML part saying the same. Every value is escaped in the HTML part; the subject
 * is one line whatever a value holds.
 */
import type { MailMessage } from '../flows/mail/outbox.ts';
import { html, type SafeHtml } from './html.ts';
import { messages, type MessageKey, type Messages } from './i18n.ts';

export interface RenderedMail {
  readonly subject: string;
  readonly text: string;
  readonly html: string;
}

interface Parts {
  readonly subject: MessageKey;
  /** Paragraphs, in order; `action` (a link) comes after the first. */
  readonly paragraphs: readonly MessageKey[];
  readonly action?: { readonly label: MessageKey; readonly href: string };
}

function parts(message: MailMessage): Parts {
  const link = String(message.values['link'] ?? '');
  switch (message.kind) {
    case 'recovery':
      return {
        subject: 'mail.recovery.subject',
        paragraphs: ['mail.recovery.text', 'mail.recovery.ignore'],
        action: { label: 'mail.recovery.action', href: link },
      };
    case 'password_changed':
      return { subject: 'mail.passwordChanged.subject', paragraphs: ['mail.passwordChanged.text', 'mail.passwordChanged.warning'] };
    case 'verify':
      return { subject: 'mail.verify.subject', paragraphs: ['mail.verify.text', 'mail.verify.ignore'], action: { label: 'mail.verify.action', href: link } };
    case 'invite':
      return { subject: 'mail.invite.subject', paragraphs: ['mail.invite.text', 'mail.invite.ignore'], action: { label: 'mail.invite.action', href: link } };
    case 'email_change':
      return {
        subject: 'mail.emailChange.subject',
        paragraphs: ['mail.emailChange.text', 'mail.emailChange.ignore'],
        action: { label: 'mail.emailChange.action', href: link },
      };
    case 'email_changed':
      return { subject: 'mail.emailChanged.subject', paragraphs: ['mail.emailChanged.text', 'mail.emailChanged.warning'] };
    case 'signup_exists':
      return {
        subject: 'mail.signupExists.subject',
        paragraphs: ['mail.signupExists.text', 'mail.signupExists.ignore'],
        action: { label: 'mail.signupExists.action', href: link },
      };
  }
}

const oneLine = (text: string) => text.replace(/[\p{Cc}\u2028\u2029]+/gu, ' ').trim();

export function renderMail(site: { readonly name: string }, message: MailMessage): RenderedMail {
  const t: Messages = messages(message.locale);
  const { subject, paragraphs, action } = parts(message);
  const at = message.values['expiresAt'] ?? message.values['at'];
  const values = {
    site: site.name,
    username: String(message.values['username'] ?? ''),
    email: String(message.values['email'] ?? ''),
    time: typeof at === 'number' ? t.date(at) : '',
  };
  const greeting = message.to.name || values.username;
  const texts = paragraphs.map((key) => t.text(key, values));
  const [first, ...rest] = texts;
  const text = [
    t.text('mail.greeting', { name: greeting }),
    '',
    first,
    ...(action ? ['', action.href] : []),
    ...rest.flatMap((paragraph) => ['', paragraph]),
    '',
    '-- ',
    t.text('mail.footer', { site: site.name }),
    '',
  ].join('\n');
  const body: SafeHtml[] = paragraphs.map((key) => html`<p>${t.html(key, values)}</p>`);
  const [firstHtml, ...restHtml] = body;
  const page = html`<!doctype html>
<html lang="${t.locale}" dir="${t.dir}">
<head><meta charset="utf-8"><title>${t.text(subject, values)}</title></head>
<body style="font-family: system-ui, sans-serif; line-height: 1.5; max-width: 36em;">
<p>${t.html('mail.greeting', { name: greeting })}</p>
${firstHtml ?? null}
${
  action
    ? html`<p><a href="${action.href}" style="display: inline-block; padding: 0.5em 1em; background: #1d4ed8; color: #ffffff; text-decoration: none; border-radius: 4px;">${t.html(action.label)}</a></p>
<p style="font-size: 0.875em; word-break: break-all;">${action.href}</p>`
    : null
}
${restHtml}
<hr>
<p style="font-size: 0.875em; color: #555555;">${t.html('mail.footer', { site: site.name })}</p>
</body>
</html>
`;
  return { subject: oneLine(t.text(subject, values)), text, html: page.value };
}

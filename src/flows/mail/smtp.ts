/**
 * Hands a message to the mail server (TESSERA_SMTP_URL) through nodemailer, which writes the
 * SMTP conversation and the MIME message: every header it writes from a value is encoded
 * (RFC 2047), and the outbox has already refused an address with a line break in it
 * (./outbox.ts), so no value reaches the conversation as a command or a header of its own.
 */
import { domainToASCII } from 'node:url';
import type { Transporter } from 'nodemailer';
import type { MailSettings } from '../../config/types.ts';

/** One message, ready to go. */
export interface Outgoing {
  readonly to: { readonly address: string; readonly name: string };
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /** The message's id, the same on every try: a receiver may drop a copy (RFC 5322 §3.6.4). */
  readonly messageId: string;
}

export interface MailTransport {
  send(message: Outgoing): Promise<void>;
  close(): void;
}

/** A transport to the configured server; `name` is what Tessera calls itself in EHLO (the issuer's host). */
export function smtpTransport(settings: MailSettings, name: string): MailTransport | null {
  if (settings.smtpUrl === null) return null;
  const url = new URL(settings.smtpUrl);
  const from = settings.from;
  const secure = url.protocol === 'smtps:';
  const timeout = settings.timeoutSeconds * 1000;
  // nodemailer is loaded with the first message, not at start: about 2.5 MiB that a server
  // without mail, or one that has sent none yet, does not hold.
  let transport: Promise<Transporter> | undefined;
  const open = () =>
    (transport ??= import('nodemailer').then(({ default: nodemailer }) =>
      nodemailer.createTransport({
        host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port === '' ? (secure ? 465 : 587) : Number(url.port),
        secure,
        // STARTTLS: required, tried when offered, or never (a test server on loopback).
        requireTLS: !secure && settings.startTls === 'require',
        ignoreTLS: !secure && settings.startTls === 'off',
        name,
        ...(url.username === '' ? {} : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
        connectionTimeout: timeout,
        greetingTimeout: timeout,
        socketTimeout: timeout,
        // A message names no file or URL for nodemailer to read: nothing outside it is attached.
        disableFileAccess: true,
        disableUrlAccess: true,
      }),
    ));
  return {
    async send(message) {
      await (await open()).sendMail({
        from: { name: from.name, address: from.address },
        to: { name: message.to.name, address: message.to.address },
        subject: message.subject,
        text: message.text,
        html: message.html,
        messageId: message.messageId,
      });
    },
    close: () => void transport?.then((opened) => opened.close()),
  };
}

/**
 * Anything shaped like an e-mail address in a server's reply: a run around an `@` without the
 * characters the outbox refuses in an address (outbox.ts), so the recipient's own is always one.
 */
const ANY_ADDRESS = /[^\s@<>()[\]\\,;:"]+@[^\s@<>()[\]\\,;:"]+/gu;

/**
 * Why a try failed, as the delivery's last error, the warning and `mail.dead_lettered` keep it:
 * nodemailer's words, the server's reply it appends ("...: 450 4.1.2 <…>: Recipient address
 * rejected"), its code and the command refused. Relays name the recipient in their replies
 * (Postfix quotes the address; postgrey's help link names its domain), and the address is sealed
 * in the outbox so that none of these shows it (docs/mail.md): every address in the text, and
 * the recipient's domain as written or in ASCII (IDNA), become a placeholder.
 */
export function smtpFailure(caught: unknown, recipient: string | null): string {
  let text = (caught instanceof Error ? caught.message : String(caught)).replace(ANY_ADDRESS, '[address]');
  const domain = recipient?.slice(recipient.lastIndexOf('@') + 1) ?? '';
  for (const written of new Set([domain, domainToASCII(domain)])) {
    if (written === '') continue;
    // The whole name only: smtp.example.com stays when the recipient is at example.com.
    const name = new RegExp(`(?<![\\p{L}\\p{N}.-])${written.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}(?![\\p{L}\\p{N}-])`, 'giu');
    text = text.replace(name, '[domain]');
  }
  if (!(caught instanceof Error)) return text;
  const { code, command } = caught as { code?: unknown; command?: unknown };
  const where = [code, command].filter((part) => typeof part === 'string' && part !== '');
  return where.length === 0 ? text : `${text} (${where.join(', ')})`;
}

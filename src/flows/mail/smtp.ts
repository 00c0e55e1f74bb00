/**
 * Hands a message to the mail server (TESSERA_SMTP_URL) through nodemailer, which writes the
 * SMTP conversation and the MIME message: every header it writes from a value is encoded
 * (RFC 2047), and the outbox has already refused an address with a line break in it
 * (./outbox.ts), so no value reaches the conversation as a command or a header of its own.
 */
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

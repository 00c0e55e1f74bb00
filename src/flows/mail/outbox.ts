/**
 * What a message says, and how it is put in the outbox: in the transaction of the event it
 * announces (`queue` is given that transaction and that event), sealed under the key
 * encryption key, since it carries the person's address and, for some kinds, a bearer link.
 * The words are chosen at send time, in the person's language (ui/mail.ts), from `kind` and
 * `values`.
 */
import { randomUUIDv7 } from 'node:crypto';
import type { Locale } from '../../config/locales.ts';
import type { AuditEvent } from '../../core/events.ts';
import type { Stores } from '../../store/types.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';

/** The events whose transaction may queue a message: each wakes the mail dispatcher at once. */
export const MAIL_EVENT_TYPES: ReadonlySet<string> = new Set([
  'recovery.requested',
  'user.password_reset',
  'signup.requested',
  'user.created',
  'user.invited',
  'user.email_change_requested',
  'user.email_changed',
]);

/** Every kind of message Tessera sends. */
export const MAIL_KINDS = ['recovery', 'password_changed', 'verify', 'signup_exists', 'invite', 'email_change', 'email_changed'] as const;
export type MailKind = (typeof MAIL_KINDS)[number];

export interface MailMessage {
  readonly kind: MailKind;
  readonly to: { readonly address: string; readonly name: string };
  readonly locale: Locale;
  /** What the words need: a link, a username, a time (ms since the epoch). Never a Host header's word: links come from the issuer. */
  readonly values: Readonly<Record<string, string | number>>;
}

/**
 * An e-mail address as a message may be sent to: one line, one `@`, nothing SMTP or a
 * header would read as syntax (angle brackets, commas, quotes, spaces, control characters).
 */
const ADDRESS = /^[^\s@<>()[\]\\,;:"\p{Cc}]{1,64}@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]{0,61}[\p{L}\p{N}])?\.)+[\p{L}]{2,63}$/u;

/** The address trimmed, or null when no message may be sent to it. */
export function mailAddress(raw: string): string | null {
  const address = raw.trim();
  return address.length <= 254 && ADDRESS.test(address) ? address : null;
}

/** A name as a header may carry it: control characters (CR, LF among them) become spaces. */
export function headerText(raw: string): string {
  return raw
    .replace(/[\p{Cc}\u2028\u2029]+/gu, ' ')
    .trim()
    .slice(0, 200);
}

/** Seals a message for the outbox, and opens it again. The mail's id binds the seal to its row. */
export interface MailOutbox {
  /** Queues `message` as announcing `event`, inside `tx`, the event's transaction. False when the address cannot take mail. */
  queue(tx: Pick<Stores, 'mail'>, event: AuditEvent, message: MailMessage): Promise<boolean>;
  open(id: string, sealed: Readonly<Record<string, unknown>>): MailMessage;
}

const owner = (id: string) => `mail:${id}`;

export function mailOutbox(secrets: SecretBox, now: () => number): MailOutbox {
  return {
    async queue(tx, event, message) {
      const address = mailAddress(message.to.address);
      if (address === null) return false;
      const id = randomUUIDv7();
      const clean: MailMessage = { ...message, to: { address, name: headerText(message.to.name) } };
      await tx.mail.enqueue({ id, eventId: event.id, kind: message.kind, message: secrets.seal(owner(id), JSON.stringify(clean)) }, now());
      return true;
    },
    open: (id, sealed) => JSON.parse(secrets.open(owner(id), sealed)) as MailMessage,
  };
}

/**
 * Sends the mail in the outbox (store/mail.ts) through the outbox's worker
 * (flows/outbox/worker.ts), which claims, leases, retries and gives up as for webhooks: each
 * message is handed to the mail server by one instance at a time, and again only after a
 * failure or after its lease ran out (an instance killed mid-try). A message is a queue of its
 * own (messages have no order between them), sent one at a time per instance. A try the server
 * refuses, or that times out (TESSERA_SMTP_TIMEOUT), is tried again after
 * TESSERA_MAIL_RETRY_DELAY_MS, doubled each time (at most an hour), until
 * TESSERA_MAIL_RETRY_WINDOW has passed; then it is a dead letter (`mail.dead_lettered`, logged
 * at warn).
 *
 * Nothing a request waits for happens here: a page queues its message in its transaction and
 * answers; a mail server that is down or slow delays the message, never the page.
 */
import type { MailSettings } from '../../config/types.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../../core/events.ts';
import type { Store } from '../../store/types.ts';
import { type DeliveryKind, type DeliveryObserver, OutboxWorker, type TurnBudget, workerDeps } from '../outbox/worker.ts';
import type { MailMessage, MailOutbox } from './outbox.ts';
import { type MailTransport, type Outgoing, smtpFailure } from './smtp.ts';

/** How long stopping waits for a message being handed over: a try cannot be ended halfway through SMTP. */
const STOP_WAIT_MS = 1000;

export interface MailDispatcherDeps {
  readonly store: Pick<Store, 'mail' | 'outbox' | 'transaction'>;
  readonly clock: Clock;
  readonly outbox: MailOutbox;
  readonly transport: MailTransport;
  readonly settings: MailSettings;
  /** The words of a message, in its language (ui/mail.ts). */
  readonly render: (message: MailMessage) => Pick<Outgoing, 'subject' | 'text' | 'html'>;
  /** The host the messages' ids are made under (the issuer's). */
  readonly host: string;
  readonly events: Pick<Events, 'record' | 'publish'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  readonly observer?: DeliveryObserver;
  readonly budget?: TurnBudget;
}

/** Mail in the outbox. */
export function mailKind(deps: MailDispatcherDeps): DeliveryKind<'mail'> {
  return {
    kind: 'mail',
    key: (mail) => ({ queue: mail.id, item: mail.id }),
    open: async () => async (mail) => {
      let recipient: string | null = null;
      try {
        if (mail.message === null) throw new Error('the message is gone');
        const message = deps.outbox.open(mail.id, mail.message);
        recipient = message.to.address;
        // The same Message-ID on every try: a server that took it once may drop the copy.
        await deps.transport.send({ ...deps.render(message), to: message.to, messageId: `<${mail.id}@${deps.host}>` });
        return { kind: 'delivered', status: null, eventAt: mail.queuedAt };
      } catch (caught) {
        return { kind: 'failed', status: null, error: smtpFailure(caught, recipient) };
      }
    },
    async deadLetter(mail, error) {
      const detail = { mail: mail.id, kind: mail.kind, attempts: mail.attempts, last_error: error };
      return { event: { type: 'mail.dead_lettered', detail }, log: [detail, 'mail given up: a dead letter'] };
    },
  };
}

/** The outbox's worker over mail. */
export class MailDispatcher extends OutboxWorker<'mail'> {
  readonly #transport: MailTransport;

  constructor(deps: MailDispatcherDeps) {
    const timeoutMs = deps.settings.timeoutSeconds * 1000;
    super(mailKind(deps), workerDeps(deps), {
      // TESSERA_SMTP_TIMEOUT bounds each step of the conversation: connecting, the greeting, the message.
      timeoutMs: timeoutMs * 3,
      retryDelayMs: deps.settings.retryDelayMs,
      retryWindowMs: deps.settings.retryWindowSeconds * 1000,
      batch: 1,
      concurrency: 1,
      stopWaitMs: STOP_WAIT_MS,
    });
    this.#transport = deps.transport;
  }

  override async stop(): Promise<void> {
    await super.stop();
    this.#transport.close();
  }
}

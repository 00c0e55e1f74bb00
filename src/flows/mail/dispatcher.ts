/**
 * Sends the mail in the outbox (store/mail.ts): every instance runs one, and each message is
 * claimed by one conditional UPDATE, so it is handed to the mail server by one instance at a
 * time, and again only after a failure or after its lease ran out (an instance killed
 * mid-try). A try the server refuses, or that times out (TESSERA_SMTP_TIMEOUT), is tried
 * again after TESSERA_MAIL_RETRY_DELAY_MS, doubled each time (at most an hour, as webhooks'
 * deliveries: the same `retryDelay`), until TESSERA_MAIL_RETRY_WINDOW has passed; then it is
 * a dead letter (`mail.dead_lettered`, logged at warn).
 *
 * Nothing a request waits for happens here: a page queues its message in its transaction and
 * answers; a mail server that is down or slow delays the message, never the page.
 */
import type { MailSettings } from '../../config/types.ts';
import type { Clock } from '../../core/clock.ts';
import type { Events } from '../../core/events.ts';
import type { MailDeliveryRecord, Store } from '../../store/types.ts';
import { POLL_MS, retryDelay } from '../webhooks/dispatcher.ts';
import type { MailMessage, MailOutbox } from './outbox.ts';
import type { MailTransport, Outgoing } from './smtp.ts';

/** A lease outlasts the try's timeout by this much, so that only a dead instance's lease runs out. */
const LEASE_MARGIN_MS = 30_000;

export interface MailDispatcherDeps {
  readonly store: Pick<Store, 'mail'>;
  readonly clock: Clock;
  readonly outbox: MailOutbox;
  readonly transport: MailTransport;
  readonly settings: MailSettings;
  /** The words of a message, in its language (ui/mail.ts). */
  readonly render: (message: MailMessage) => Pick<Outgoing, 'subject' | 'text' | 'html'>;
  /** The host the messages' ids are made under (the issuer's). */
  readonly host: string;
  readonly events: Pick<Events, 'emit'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
}

export class MailDispatcher {
  readonly #deps: MailDispatcherDeps;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #draining: Promise<void> | null = null;
  #drainAgain = false;

  constructor(deps: MailDispatcherDeps) {
    this.#deps = deps;
  }

  start(pollMs = POLL_MS): void {
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Sends what is due now (once more after the round under way, if one is). */
  wake(): void {
    if (this.#stopped) return;
    if (this.#draining) {
      this.#drainAgain = true;
      return;
    }
    this.#draining = this.#drain()
      .catch((error: unknown) => this.#deps.log.warn({ err: error }, 'sending mail failed'))
      .finally(() => {
        this.#draining = null;
        if (this.#drainAgain) {
          this.#drainAgain = false;
          this.wake();
        }
      });
  }

  /**
   * Stops claiming. A try under way is waited for a moment; one still going after it keeps
   * its lease, which runs out, and another instance (or this one, restarted) sends it.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    if (this.#draining) await Promise.race([this.#draining, new Promise((resolve) => setTimeout(resolve, 1000).unref())]);
    this.#deps.transport.close();
  }

  async #drain(): Promise<void> {
    const leaseMs = this.#deps.settings.timeoutSeconds * 1000 * 3 + LEASE_MARGIN_MS;
    while (!this.#stopped) {
      const now = this.#deps.clock.now();
      const mail = await this.#deps.store.mail.claim(now, now + leaseMs);
      if (mail === null) return;
      await this.#try(mail);
    }
  }

  async #try(mail: MailDeliveryRecord): Promise<void> {
    const { store, clock, settings, outbox, transport, render } = this.#deps;
    let error: string;
    try {
      if (mail.message === null) throw new Error('the message is gone');
      const message = outbox.open(mail.id, mail.message);
      await transport.send({ ...render(message), to: message.to, messageId: `<${mail.id}@${this.#deps.host}>` });
      await store.mail.settle(mail.id, mail.attempts, { kind: 'delivered' }, clock.now());
      return;
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    const failedAt = clock.now();
    const state = await store.mail.settle(
      mail.id,
      mail.attempts,
      {
        kind: 'failed',
        error,
        nextAttemptAt: failedAt + retryDelay(mail.attempts, settings.retryDelayMs),
        deadBefore: failedAt - settings.retryWindowSeconds * 1000,
      },
      failedAt,
    );
    if (state !== 'dead') return;
    this.#deps.log.warn({ mail: mail.id, kind: mail.kind, attempts: mail.attempts, last_error: error }, 'mail given up: a dead letter');
    await this.#deps.events.emit({ type: 'mail.dead_lettered', detail: { mail: mail.id, kind: mail.kind, attempts: mail.attempts, last_error: error } });
  }
}

/**
 * `tessera ssf deliveries|replay` and `tessera mail deliveries|replay`: arguments in,
 * src/flows/manage/outbox.ts, text out (docs/events.md, docs/mail.md). Webhooks' are
 * `tessera webhook deliveries|replay` (./webhooks.ts).
 */
import type { Config } from '../config/index.ts';
import { listMailDeliveries, listStreamDeliveries, mailDeliveryJson, replayDeadLetters, streamDeliveryJson, type OutboxQuery } from '../flows/manage/outbox.ts';
import { OWNER } from '../flows/manage/authority.ts';
import { operatorDeps, parse, when, wholeNumber, withStore, type Io } from './common.ts';

/** The options of every `deliveries` command (ssf, mail, webhook). */
export const LIST_OPTIONS = { state: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } } as const;

export function listQuery(values: { state?: string | undefined; limit?: string | undefined }): OutboxQuery {
  const limit = wholeNumber(values.limit, 5);
  return { ...(values.state === undefined ? {} : { state: values.state }), ...(limit === undefined ? {} : { limit }) };
}

/** What a `replay` command says: how many dead letters go out again, and under which id of theirs. */
export const replayed = (count: number, id: string) =>
  count === 0 ? 'No dead letters to send again.\n' : `Sending ${count} dead letter${count === 1 ? '' : 's'} again, with the same ${id}.\n`;

async function ssfDeliveries(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, LIST_OPTIONS, 1);
  const deliveries = await withStore(config, (store) => listStreamDeliveries({ store, caller: OWNER }, positionals[0]!, listQuery(values)));
  if (values.json) {
    io.stdout(`${JSON.stringify(deliveries.map(streamDeliveryJson))}\n`);
    return;
  }
  writeDeliveries(io, deliveries);
}

/** An event's deliveries to a webhook or a stream, a line each: when, which event, its state, tries and last answer. */
export function writeDeliveries(
  io: Io,
  deliveries: readonly {
    readonly eventAt: number;
    readonly eventId: string;
    readonly state: string;
    readonly attempts: number;
    readonly nextAttemptAt: number;
    readonly lastError: string | null;
    readonly lastStatus: number | null;
  }[],
): void {
  if (deliveries.length === 0) io.stdout('No deliveries.\n');
  for (const delivery of deliveries) {
    const last = delivery.lastError ?? (delivery.lastStatus === null ? '' : `answered ${delivery.lastStatus}`);
    const next = delivery.state === 'pending' ? `  next ${when(delivery.nextAttemptAt)}` : '';
    io.stdout(`${when(delivery.eventAt)}  ${delivery.eventId}  ${delivery.state}  tries ${delivery.attempts}${next}${last ? `  ${last}` : ''}\n`);
  }
}

async function ssfReplay(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { event: { type: 'string' } }, 1);
  const count = await withStore(config, (store) => replayDeadLetters(operatorDeps(config, store, io), 'ssf', positionals[0]!, values.event ?? null));
  io.stdout(replayed(count, 'jti'));
}

async function mailDeliveries(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, LIST_OPTIONS);
  const deliveries = await withStore(config, (store) => listMailDeliveries({ store, caller: OWNER }, listQuery(values)));
  if (values.json) {
    io.stdout(`${JSON.stringify(deliveries.map(mailDeliveryJson))}\n`);
    return;
  }
  if (deliveries.length === 0) io.stdout('No mail.\n');
  for (const mail of deliveries) {
    const next = mail.state === 'pending' ? `  next ${when(mail.nextAttemptAt)}` : '';
    io.stdout(`${when(mail.queuedAt)}  ${mail.id}  ${mail.kind}  ${mail.state}  tries ${mail.attempts}${next}${mail.lastError ? `  ${mail.lastError}` : ''}\n`);
  }
}

async function mailReplay(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { id: { type: 'string' } });
  const count = await withStore(config, (store) => replayDeadLetters(operatorDeps(config, store, io), 'mail', null, values.id ?? null));
  io.stdout(replayed(count, 'Message-ID'));
}

export const OUTBOX_COMMANDS = {
  'ssf deliveries': ssfDeliveries,
  'ssf replay': ssfReplay,
  'mail deliveries': mailDeliveries,
  'mail replay': mailReplay,
};

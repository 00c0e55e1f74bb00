import type { AuditEvent, EventInput, Events } from '../core/events.ts';
import type { Store, Stores } from '../store/types.ts';

/** Records an event inside the transaction it describes; the event, for what must name it (a message in the outbox). */
export type RecordEvent = (input: EventInput) => Promise<AuditEvent>;

/**
 * Runs `work` as one store transaction in which the events it records are written too, so
 * that a change is never committed without its event, nor an event without its change;
 * the events reach the log and the metrics once the transaction has committed.
 */
export async function transactionWithEvents<T>(
  deps: { readonly store: Pick<Store, 'transaction'>; readonly events: Pick<Events, 'record' | 'publish'> },
  work: (tx: Stores, record: RecordEvent) => Promise<T>,
): Promise<T> {
  const recorded: AuditEvent[] = [];
  const result = await deps.store.transaction((tx) =>
    work(tx, async (input) => {
      const event = await deps.events.record(tx.events, input);
      recorded.push(event);
      return event;
    }),
  );
  deps.events.publish(...recorded);
  return result;
}

/**
 * An app that registered itself and that nobody ever used is removed after
 * TESSERA_UNUSED_REGISTRATION_RETENTION (the purge, store/sql/clients.ts). Its first use, a
 * person's approval or a token of its own, marks it, once.
 */
import type { ClientRecord, ClientStore } from '../../store/types.ts';

/**
 * Marks `client` used at `now` when it is a self-registered app not yet marked: one
 * conditional write in its life, and nothing for the operator's clients or later uses.
 */
export async function noteFirstUse(clients: Pick<ClientStore, 'markUsed'>, client: ClientRecord, now: number): Promise<void> {
  if (client.registeredBy !== undefined && client.usedAt === undefined) await clients.markUsed(client.id, now);
}

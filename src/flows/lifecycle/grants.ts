import type { RevokedBy } from '../../core/events.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';

/**
 * Revokes a grant, and with it every access and refresh token issued under it, recording
 * who did (`grant.revoked`) in the same transaction. True when this call revoked it; false
 * when it was revoked already (nothing is recorded then).
 */
export async function revokeGrant(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'events'>,
  grant: { readonly id: string; readonly userId: string; readonly clientId: string },
  by: RevokedBy,
): Promise<boolean> {
  return transactionWithEvents(deps, async (tx, record) => {
    const revoked = await tx.grants.revoke(grant.id, deps.clock.now());
    if (revoked) await record({ type: 'grant.revoked', userId: grant.userId, clientId: grant.clientId, grantId: grant.id, detail: { by } });
    return revoked;
  });
}

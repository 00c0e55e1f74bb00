/**
 * An operator's way back in for a person who lost their authenticator: every passkey, the
 * TOTP secret and the recovery codes go, in one transaction with its event; the password
 * stays.
 */
import type { UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';

export interface SecondFactorReset {
  readonly passkeys: number;
  readonly totp: boolean;
}

export async function resetSecondFactor(deps: Pick<FlowDeps, 'store' | 'events'>, user: Pick<UserRecord, 'id' | 'username'>): Promise<SecondFactorReset> {
  return transactionWithEvents(deps, async (tx, record) => {
    const passkeys = await tx.passkeys.removeAllForUser(user.id);
    await tx.recoveryCodes.removeAllForUser(user.id);
    const totp = await tx.totp.remove(user.id);
    await record({
      type: 'second_factor.reset',
      userId: user.id,
      username: user.username,
      detail: { passkeys_removed: passkeys, totp_removed: totp, by: 'operator' },
    });
    return { passkeys, totp };
  });
}

/**
 * An operator's way back in for a person who lost their authenticator: every passkey, the
 * TOTP secret and the recovery codes go, in one transaction with its event; the password
 * stays.
 */
import type { Stores, UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';

export interface SecondFactorReset {
  readonly passkeys: number;
  readonly totp: boolean;
}

/**
 * Removes every passkey, the TOTP secret and the recovery codes of `userId` inside `tx`, without
 * an event: the caller records why (an operator here; a reset link that proved an unverified
 * address in flows/users.ts).
 */
export async function removeSecondFactorsIn(tx: Stores, userId: string): Promise<SecondFactorReset> {
  const passkeys = await tx.passkeys.removeAllForUser(userId);
  await tx.recoveryCodes.removeAllForUser(userId);
  const totp = await tx.totp.remove(userId);
  return { passkeys, totp };
}

export async function resetSecondFactor(deps: Pick<FlowDeps, 'store' | 'events'>, user: Pick<UserRecord, 'id' | 'username'>): Promise<SecondFactorReset> {
  return transactionWithEvents(deps, async (tx, record) => {
    const { passkeys, totp } = await removeSecondFactorsIn(tx, user.id);
    await record({
      type: 'second_factor.reset',
      userId: user.id,
      username: user.username,
      detail: { passkeys_removed: passkeys, totp_removed: totp, by: 'operator' },
    });
    return { passkeys, totp };
  });
}

/**
 * An operator's way back in for a person who lost their authenticator: every passkey, the
 * TOTP secret and the recovery codes go, in one transaction; the password stays.
 */
import type { Store } from '../../store/types.ts';

export interface SecondFactorReset {
  readonly passkeys: number;
  readonly totp: boolean;
}

export async function resetSecondFactor(store: Pick<Store, 'transaction'>, userId: string): Promise<SecondFactorReset> {
  return store.transaction(async (tx) => {
    const passkeys = await tx.passkeys.removeAllForUser(userId);
    await tx.recoveryCodes.removeAllForUser(userId);
    const totp = await tx.totp.remove(userId);
    return { passkeys, totp };
  });
}

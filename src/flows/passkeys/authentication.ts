/**
 * Signing in with a passkey (WebAuthn Level 3 §7.2) through @simplewebauthn/server: no
 * username is asked; the browser offers the person's discoverable credentials for this RP
 * ID, by a button or in the username field's autofill (conditional mediation, §5.1.4.1).
 */
import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { AuthMethod } from '../../core/auth-methods.ts';
import type { PasskeyRecord, UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import { hasPassword } from '../users.ts';
import type { FlowDeps } from '../types.ts';
import { consumeChallenge, parseResponse, relyingParty, storeChallenge } from './relying-party.ts';

/** The options for navigator.credentials.get(), with a fresh challenge stored for them. */
/** `browser`: a stable, non-secret identifier of the asking browser; only it can answer. */
export async function authenticationOptions(deps: FlowDeps, browser: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
  const rp = relyingParty(deps.config);
  // No allowCredentials: §5.1.4.1, the authenticator offers its discoverable credentials.
  const options = await (await import('@simplewebauthn/server')).generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: 'preferred',
    timeout: deps.config.secondFactor.ceremonyTimeout * 1000,
  });
  await storeChallenge(deps, options.challenge, 'authenticate', null, browser);
  return options;
}

export type AuthenticationResult =
  | { readonly kind: 'signed-in'; readonly user: UserRecord; readonly passkey: PasskeyRecord; readonly amr: readonly AuthMethod[] }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'challenge' }
  /** No passkey with this credential id (removed, or never registered here). */
  | { readonly kind: 'unknown-credential' }
  /** The library or a check below refused it: another origin or RP ID, a bad signature, … */
  | { readonly kind: 'rejected'; readonly reason: string; readonly passkey: PasskeyRecord }
  /**
   * §6.1.1: the signature counter did not move forward. "This is a signal that the
   * authenticator may be cloned": refused, and logged by the caller.
   */
  | { readonly kind: 'cloned'; readonly passkey: PasskeyRecord; readonly counter: number }
  | { readonly kind: 'disabled'; readonly passkey: PasskeyRecord };

/** Why each refusal is recorded (`passkey.refused`'s `detail.reason`). */
const REFUSAL_REASONS: Readonly<Record<Exclude<AuthenticationResult['kind'], 'signed-in'>, string>> = {
  malformed: 'malformed',
  challenge: 'challenge',
  'unknown-credential': 'unknown_credential',
  rejected: 'rejected',
  cloned: 'cloned',
  disabled: 'disabled',
};

/** Checks a passkey's answer; every refusal is an audit event, naming the owner when the passkey is known. */
export async function finishAuthentication(deps: FlowDeps, raw: string, browser: string): Promise<AuthenticationResult> {
  const result = await checkAssertion(deps, raw, browser);
  if (result.kind !== 'signed-in') {
    const passkey = 'passkey' in result ? result.passkey : null;
    await deps.events.emit({
      type: 'passkey.refused',
      userId: passkey?.userId ?? null,
      detail: {
        reason: REFUSAL_REASONS[result.kind],
        ...(passkey ? { passkey: passkey.name } : {}),
        ...(result.kind === 'rejected' ? { error: result.reason.slice(0, 200) } : {}),
        ...(result.kind === 'cloned' ? { stored_counter: result.passkey.counter, received_counter: result.counter } : {}),
      },
    });
  }
  return result;
}

async function checkAssertion(deps: FlowDeps, raw: string, browser: string): Promise<AuthenticationResult> {
  const parsed = parseResponse(raw);
  if (!parsed) return { kind: 'malformed' };
  const consumed = await consumeChallenge(deps, parsed.clientDataJSON, 'authenticate', browser);
  if (!consumed) return { kind: 'challenge' };
  const passkey = await deps.store.passkeys.get(parsed.id);
  if (!passkey) return { kind: 'unknown-credential' };
  // §7.2 step 6: the user handle, when the authenticator returns one, names the owner.
  const userHandle = (parsed.value['response'] as Record<string, unknown>)['userHandle'];
  if (userHandle !== undefined && userHandle !== null && userHandle !== Buffer.from(passkey.userId, 'utf8').toString('base64url')) {
    return { kind: 'rejected', reason: 'the user handle does not match the credential', passkey };
  }
  const rp = relyingParty(deps.config);
  let verified;
  try {
    verified = await (await import('@simplewebauthn/server')).verifyAuthenticationResponse({
      response: parsed.value as unknown as AuthenticationResponseJSON,
      expectedChallenge: consumed.challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      // The counter is compared below, after the signature is known good, so that a
      // regression is reported as what it is rather than as a library error.
      credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: 0, transports: passkey.transports as never },
      requireUserVerification: false,
    });
  } catch (error) {
    return { kind: 'rejected', reason: error instanceof Error ? error.message : String(error), passkey };
  }
  if (!verified.verified) return { kind: 'rejected', reason: 'not verified', passkey };
  const info = verified.authenticationInfo;
  // §6.1.3: backup eligibility is fixed when the credential is made; a change means this
  // is not the authenticator that registered it.
  if (info.credentialDeviceType !== passkey.deviceType) {
    return { kind: 'rejected', reason: `backup eligibility changed from ${passkey.deviceType} to ${info.credentialDeviceType}`, passkey };
  }
  // §6.1.1 / §7.2 step 22: if either counter is non-zero, the new one must be greater.
  if ((info.newCounter > 0 || passkey.counter > 0) && info.newCounter <= passkey.counter) {
    return { kind: 'cloned', passkey, counter: info.newCounter };
  }
  // The same rule in the one statement that records the use: of two assertions racing with
  // the same counter, one wins.
  const recorded = await deps.store.passkeys.recordUse(passkey.id, { counter: info.newCounter, backedUp: info.credentialBackedUp }, deps.clock.now());
  if (!recorded) return { kind: 'cloned', passkey, counter: info.newCounter };
  const user = await deps.store.users.get(passkey.userId);
  if (!user || user.disabled) return { kind: 'disabled', passkey };
  // RFC 8176: a synced passkey's key is software-protected (`swk`), a device-bound one is
  // hardware-protected (`hwk`). §6.1: only with the UV flag (PIN or biometric) is it two
  // factors in one (`mfa`); with presence alone (`user`) it is one factor, and counts as one
  // wherever a second or a phishing-resistant factor is required (core/auth-methods.ts).
  const key: AuthMethod = passkey.deviceType === 'multiDevice' ? 'swk' : 'hwk';
  return { kind: 'signed-in', user, passkey: recorded, amr: info.userVerified ? [key, 'mfa'] : [key, 'user'] };
}

/** A person's passkeys, for their account page and `tessera user show`. */
export function listPasskeys(deps: Pick<FlowDeps, 'store'>, userId: string): Promise<PasskeyRecord[]> {
  return deps.store.passkeys.listForUser(userId);
}

/** What removing a passkey came to: removed, none of the person's by that id, or kept as the last way they sign in. */
export type PasskeyRemoval = 'removed' | 'missing' | 'last';

/** Thrown inside the transaction to undo a removal that would leave the person no way in. */
class LastWayIn extends Error {}

/**
 * Whether a person keeps a way to sign in: a password, a passkey left or a linked provider.
 * The counts are read only when needed, as most people have a password.
 */
async function keepsAWayIn(
  user: Pick<UserRecord, 'passwordHash'>,
  passkeysLeft: () => Promise<number>,
  linkedIdentities: () => Promise<number>,
): Promise<boolean> {
  return hasPassword(user) || (await passkeysLeft()) > 0 || (await linkedIdentities()) > 0;
}

/**
 * Whether the person may remove one of their `passkeys` passkeys: the account page offers
 * "Remove" only then, and says why not otherwise. `removePasskey` checks the same again in
 * its transaction; this is what the page shows, not what decides.
 */
export function mayRemoveAPasskey(deps: Pick<FlowDeps, 'store'>, user: Pick<UserRecord, 'id' | 'passwordHash'>, passkeys: number): Promise<boolean> {
  return keepsAWayIn(
    user,
    async () => passkeys - 1,
    async () => (await deps.store.linkedIdentities.listForUser(user.id)).length,
  );
}

/**
 * Removes one of the person's passkeys, unless it is the last way they sign in: an account
 * made with a passkey has no password, and one with no provider linked has nothing else, so
 * removing its only passkey would lock its owner out (a reset link, if the operator gives
 * one, is the way back). Checked after the removal, in its transaction, so that two removals
 * at once cannot each leave the other passkey as the last.
 */
export async function removePasskey(deps: FlowDeps, user: Pick<UserRecord, 'id' | 'username' | 'passwordHash'>, id: string): Promise<PasskeyRemoval> {
  try {
    return await transactionWithEvents(deps, async (tx, record): Promise<PasskeyRemoval> => {
      if (!(await tx.passkeys.remove(id, user.id))) return 'missing';
      const keeps = await keepsAWayIn(
        user,
        async () => (await tx.passkeys.listForUser(user.id)).length,
        async () => (await tx.linkedIdentities.listForUser(user.id)).length,
      );
      if (!keeps) throw new LastWayIn();
      await record({ type: 'passkey.removed', userId: user.id, username: user.username, detail: { by: 'user' } });
      return 'removed';
    });
  } catch (error) {
    if (error instanceof LastWayIn) return 'last';
    throw error;
  }
}

/**
 * Registering a passkey (WebAuthn Level 3 §7.1) for the signed-in person, through
 * @simplewebauthn/server. Discoverable credentials (§6.2.2: resident keys) so that sign-in
 * needs no username; user verification preferred; no attestation (we trust the person's
 * choice of authenticator, not its maker).
 */
import { withoutUnsafeCharacters } from '../../core/display-text.ts';
import type { PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { DuplicateError, type PasskeyRecord, type SignUpPasskey, type UserRecord } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';
import { type CeremonyDeps, consumeChallenge, parseResponse, relyingParty, storeChallenge } from './relying-party.ts';

export const PASSKEY_NAME_MAX = 64;

/** The options for navigator.credentials.create(), with a fresh challenge stored for them. */
export async function registrationOptions(deps: FlowDeps, user: UserRecord, browser: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const rp = relyingParty(deps.config);
  const existing = await deps.store.passkeys.listForUser(user.id);
  const options = await (await import('@simplewebauthn/server')).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: user.username,
    userDisplayName: user.name ?? user.username,
    // §5.4.3: the user handle is an opaque id, not the username: it is the OIDC sub.
    userID: new TextEncoder().encode(user.id),
    timeout: deps.config.secondFactor.ceremonyTimeout * 1000,
    attestationType: 'none',
    // §5.4.3 excludeCredentials: the same authenticator is not registered twice.
    excludeCredentials: existing.map((passkey) => ({ id: passkey.id, transports: passkey.transports as never })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(deps, options.challenge, 'register', user.id, browser);
  return options;
}

export type RegistrationResult =
  | { readonly kind: 'added'; readonly passkey: PasskeyRecord }
  /** Not a response at all. */
  | { readonly kind: 'malformed' }
  /** Its challenge is unknown, used, expired, or was given to someone else. */
  | { readonly kind: 'challenge' }
  /** The library refused it: another origin or RP ID, a bad signature, no user presence. */
  | { readonly kind: 'rejected'; readonly reason: string }
  | { readonly kind: 'duplicate' };

/**
 * A passkey at sign-up, before its account exists: `accountId` is the id the account will
 * have, the user handle (§5.4.3) the authenticator keeps. The challenge is stored under this
 * browser and that id together (no account row to point at yet), so that the response is
 * accepted only for the account it was made for, from the browser that asked. `purpose` binds it
 * further: an invitation's passkey is bound to that invitation (its token's hash), so that it
 * makes an account with no other link.
 */
export async function signUpRegistrationOptions(
  deps: CeremonyDeps,
  account: { readonly id: string; readonly username: string; readonly name: string },
  browser: string,
  purpose = 'sign-up',
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const rp = relyingParty(deps.config);
  const options = await (await import('@simplewebauthn/server')).generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: account.username,
    userDisplayName: account.name,
    userID: new TextEncoder().encode(account.id),
    timeout: deps.config.secondFactor.ceremonyTimeout * 1000,
    attestationType: 'none',
    authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
  });
  await storeChallenge(deps, options.challenge, 'register', null, newAccountBrowser(browser, purpose, account.id));
  return options;
}

const newAccountBrowser = (browser: string, purpose: string, accountId: string) => `${browser} ${purpose} ${accountId}`;

export type SignUpRegistrationResult =
  | { readonly kind: 'verified'; readonly passkey: SignUpPasskey }
  | Exclude<RegistrationResult, { readonly kind: 'added' | 'duplicate' }>;

/**
 * Checks the browser's answer to signUpRegistrationOptions and returns the passkey to make
 * the account with; nothing is stored but the challenge's use.
 */
export async function verifySignUpRegistration(
  deps: CeremonyDeps,
  accountId: string,
  name: string,
  raw: string,
  browser: string,
  purpose = 'sign-up',
): Promise<SignUpRegistrationResult> {
  const parsed = parseResponse(raw);
  if (!parsed) return { kind: 'malformed' };
  const consumed = await consumeChallenge(deps, parsed.clientDataJSON, 'register', newAccountBrowser(browser, purpose, accountId));
  if (!consumed || consumed.record.userId !== null) return { kind: 'challenge' };
  const verified = await verifiedCredential(deps, parsed.value, consumed.challenge);
  if (verified.kind !== 'verified') return verified;
  return { kind: 'verified', passkey: { ...verified.credential, userId: accountId, name: passkeyName(name) } };
}

/** What the person typed, without what would forge a line where it is listed (core/display-text.ts). */
const passkeyName = (name: string) => withoutUnsafeCharacters(name).trim().slice(0, PASSKEY_NAME_MAX) || 'Passkey';

/** §7.1 steps 5-26, by the library: the credential a registration response carries, or why it is refused. */
async function verifiedCredential(
  deps: CeremonyDeps,
  response: Record<string, unknown>,
  challenge: string,
): Promise<
  { readonly kind: 'verified'; readonly credential: Omit<SignUpPasskey, 'userId' | 'name'> } | { readonly kind: 'rejected'; readonly reason: string }
> {
  const rp = relyingParty(deps.config);
  let verified;
  try {
    verified = await (await import('@simplewebauthn/server')).verifyRegistrationResponse({
      response: response as unknown as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      // Preferred, not required: an authenticator without a PIN or biometric still makes a
      // passkey, signed in with as `user` presence rather than `mfa`.
      requireUserVerification: false,
    });
  } catch (error) {
    return { kind: 'rejected', reason: error instanceof Error ? error.message : String(error) };
  }
  if (!verified.verified) return { kind: 'rejected', reason: 'not verified' };
  const info = verified.registrationInfo;
  return {
    kind: 'verified',
    credential: {
      id: info.credential.id,
      publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: (info.credential.transports ?? []).filter((transport) => typeof transport === 'string'),
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
    },
  };
}

export async function finishRegistration(deps: FlowDeps, user: UserRecord, name: string, raw: string, browser: string): Promise<RegistrationResult> {
  const parsed = parseResponse(raw);
  if (!parsed) return { kind: 'malformed' };
  const consumed = await consumeChallenge(deps, parsed.clientDataJSON, 'register', browser);
  if (!consumed || consumed.record.userId !== user.id) return { kind: 'challenge' };
  const verified = await verifiedCredential(deps, parsed.value, consumed.challenge);
  if (verified.kind !== 'verified') return verified;
  const now = deps.clock.now();
  const passkey: PasskeyRecord = { ...verified.credential, userId: user.id, name: passkeyName(name), createdAt: now, lastUsedAt: null };
  try {
    await transactionWithEvents(deps, async (tx, record) => {
      await tx.passkeys.create(passkey);
      await record({
        type: 'passkey.added',
        userId: user.id,
        username: user.username,
        detail: { passkey: passkey.name, synced: passkey.deviceType === 'multiDevice' },
      });
    });
  } catch (error) {
    if (error instanceof DuplicateError) return { kind: 'duplicate' };
    throw error;
  }
  return { kind: 'added', passkey };
}

/**
 * How a person signed in, in the words ID tokens use: RFC 8176 Authentication Method
 * Reference values for `amr` (OIDC Core §2), and the `acr` classes Tessera reports when a
 * client asks for one through `acr_values` (OIDC Core §3.1.2.1).
 */

/**
 * RFC 8176 §2: `pwd` password; `otp` one-time password (a TOTP or recovery code); `hwk`
 * proof of possession of a hardware-secured key (a device-bound passkey); `swk` of a
 * software-secured key (a synced passkey, whose private key leaves the device); `user`
 * user presence test; `mfa` more than one factor (a password and a code, or a passkey
 * unlocked by the person's PIN or biometric).
 */
export type AuthMethod = 'pwd' | 'otp' | 'hwk' | 'swk' | 'user' | 'mfa';

export const AUTH_METHODS: readonly AuthMethod[] = ['pwd', 'otp', 'hwk', 'swk', 'user', 'mfa'];

/**
 * How the person signed in for one approval, as its ID tokens say it: `amr` always, `acr`
 * when the client asked for one (OIDC Core §2: acr is returned as requested).
 */
export interface SignInFacts {
  readonly amr: readonly AuthMethod[];
  readonly acr?: string;
}

/** The facts a code or refresh token kept, or undefined for one from before they were kept. */
export function keptSignIn(record: { readonly amr?: readonly AuthMethod[]; readonly acr?: string }): SignInFacts | undefined {
  if (record.amr === undefined) return undefined;
  return record.acr === undefined ? { amr: record.amr } : { amr: record.amr, acr: record.acr };
}

/** A password alone (checked here or by a directory); and a session from before sessions remembered how they began, which began with one. */
export const PASSWORD_ONLY: readonly AuthMethod[] = ['pwd'];

/**
 * What an upstream OpenID provider's ID token says it checked (its `amr`, OIDC Core §2),
 * as far as Tessera can repeat it: the RFC 8176 values above, each once; anything else
 * (a provider's own values, a malformed claim) is dropped, and a provider that says nothing
 * proved nothing Tessera can name. Its second factors (`mfa`, and the codes and keys that
 * count as proof of one: `otp`, `hwk`, `swk`) are the provider's word, which only the
 * operator can choose to take (`trustMfa`, per provider): otherwise they are dropped, so an
 * upstream sign-in never counts here as more factors than Tessera saw proved, nor as the
 * proof of a factor that lets a session change the account's passkeys and codes.
 */
export function upstreamMethods(claim: unknown, trustMfa: boolean): AuthMethod[] {
  if (!Array.isArray(claim)) return [];
  const known = AUTH_METHODS.filter((method) => claim.includes(method));
  return trustMfa ? known : known.filter((method) => method === 'pwd' || method === 'user');
}

/**
 * The authentication context classes, strongest first. `phrh` and `phr` are the OpenID
 * Extended Authentication Profile's phishing-resistant classes (hardware-protected, and
 * any passkey that verified the person); the two below them are Tessera's own names, the
 * last for any one factor (a password alone, or a passkey that only tested presence).
 */
export const ACR_VALUES = ['phrh', 'phr', 'urn:tessera:acr:mfa', 'urn:tessera:acr:pwd'] as const;
export type Acr = (typeof ACR_VALUES)[number];

/**
 * More than one factor: a password and a code, or a passkey that verified the person (its
 * PIN or biometric). A passkey that only tested presence (`user` without `mfa`: a security
 * key with no PIN) is one factor, something held, whoever holds it (WebAuthn Level 3 §6.1,
 * the UV flag; NIST SP 800-63B §5.1.7 single-factor and §5.1.9 multi-factor cryptographic
 * devices: the second factor is the PIN or biometric that unlocks the key).
 */
export function hasSecondFactor(amr: readonly string[]): boolean {
  return amr.includes('mfa');
}

/**
 * The methods of a session that has now also proved a one-time code (typed to turn codes on,
 * RFC 6238): `otp` joins what it proved before, which stays as it was, and `mfa` only when
 * the code is a factor of another kind than the rest. A password is something known and a
 * code something held, so a password session gains `mfa`; a passkey is something held too, so
 * a passkey that only tested presence and a code are two things held, one kind of factor
 * (NIST SP 800-63B §4.2.1: two single-factor authenticators make AAL2 only when one is a
 * memorized secret), and a thief of the key could set up the code: no `mfa`. A session that has `mfa` already keeps it.
 */
export function withOneTimeCode(amr: readonly AuthMethod[]): readonly AuthMethod[] {
  const proved = amr.filter((method) => method !== 'mfa' && method !== 'otp');
  const twoKinds = amr.includes('mfa') || proved.includes('pwd');
  return [...proved, 'otp', ...(twoKinds ? (['mfa'] as const) : [])];
}

/**
 * A passkey sign-in that verified the person: the one kind of sign-in a phishing site cannot
 * relay, and two factors in one. A client requiring it asks for a passkey in place of a
 * password and a code, so a presence-only passkey, one factor, does not satisfy it.
 */
export function isPhishingResistant(amr: readonly string[]): boolean {
  return (amr.includes('hwk') || amr.includes('swk')) && hasSecondFactor(amr);
}

/** The class a sign-in with these methods satisfies: one factor, whatever it was, is the lowest. */
export function acrOf(amr: readonly string[]): Acr {
  if (!hasSecondFactor(amr)) return 'urn:tessera:acr:pwd';
  if (amr.includes('hwk')) return 'phrh';
  if (amr.includes('swk')) return 'phr';
  return 'urn:tessera:acr:mfa';
}

/** Whether a sign-in of class `actual` satisfies a requested class (a stronger one does). */
export function acrSatisfies(actual: Acr, requested: string): boolean {
  const wanted = ACR_VALUES.indexOf(requested as Acr);
  return wanted !== -1 && ACR_VALUES.indexOf(actual) <= wanted;
}

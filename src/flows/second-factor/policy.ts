/**
 * Who may approve: the policy a session's sign-in is held to before it approves an
 * application or a device. RFC 9700 §4.8 and the cross-device security BCP
 * (draft-ietf-oauth-cross-device-security §6.1.13): device-code phishing relays a person's
 * password sign-in; FIDO/WebAuthn is the recommended defence, because the browser binds a
 * passkey to this server's origin and a phishing page cannot use it.
 */
import {
  ACR_VALUES,
  acrOf,
  acrSatisfies,
  hasSecondFactor,
  isPhishingResistant,
  PASSWORD_ONLY,
  type AuthMethod,
  type SignInFacts,
} from '../../core/auth-methods.ts';
import type { Config } from '../../config/index.ts';
import { OAuthError } from '../../core/errors.ts';
import type { ClientRecord, SessionRecord } from '../../store/types.ts';
import type { FlowDeps } from '../types.ts';

export type ApprovalRefusal =
  /** The client was registered with --require-phishing-resistant: sign in with a passkey. */
  | 'phishing-resistant-required'
  /** TESSERA_REQUIRE_SECOND_FACTOR is on and this sign-in was a password alone. */
  | 'second-factor-required';

/**
 * What a grant, and the code and refresh tokens of one approval, keep of the sign-in that
 * approved it, for its ID tokens: `amr` always, `acr` when the client asked for one (OIDC
 * Core §2: acr is returned as requested).
 */
export function signInFacts(session: SessionRecord, requestedAcr: readonly string[] | null): SignInFacts {
  const amr = sessionMethods(session);
  return requestedAcr === null ? { amr } : { amr, acr: acrOf(amr) };
}

/** How the session signed in; a session from before this was kept signed in with a password. */
export function sessionMethods(session: SessionRecord): readonly AuthMethod[] {
  return session.amr ?? PASSWORD_ONLY;
}

/** What the person's organizations require of their sign-in (flows/organizations/choice.ts `organizationPolicy`). */
export interface MemberPolicy {
  readonly requirePasskey: boolean;
  readonly requireSecondFactor: boolean;
}

const NO_MEMBER_POLICY: MemberPolicy = { requirePasskey: false, requireSecondFactor: false };

/**
 * Why this session may not approve for this client, or null when it may. `requestedAcr`:
 * the request's `acr_values` (OIDC Core §3.1.2.1). They are voluntary, so a class Tessera
 * does not know is ignored; a known one the sign-in does not reach asks for a stronger
 * sign-in (a step-up), as a client's own requirement does. `member`: what the person's
 * organizations require, as a client's own requirement.
 */
export function approvalRefusal(
  config: Config,
  client: Pick<ClientRecord, 'requirePhishingResistant'>,
  session: SessionRecord,
  requestedAcr: readonly string[] | null = null,
  member: MemberPolicy = NO_MEMBER_POLICY,
): ApprovalRefusal | null {
  const amr = sessionMethods(session);
  const known = (requestedAcr ?? []).filter((value) => (ACR_VALUES as readonly string[]).includes(value));
  const actual = acrOf(amr);
  const stepUp = known.length > 0 && !known.some((value) => acrSatisfies(actual, value));
  const wantsPasskey = stepUp && known.every((value) => value === 'phr' || value === 'phrh');
  if ((client.requirePhishingResistant === true || member.requirePasskey || wantsPasskey) && !isPhishingResistant(amr)) return 'phishing-resistant-required';
  if ((config.secondFactor.required || member.requireSecondFactor || stepUp) && !hasSecondFactor(amr)) return 'second-factor-required';
  return null;
}

/** What the person is told when the policy refuses their sign-in for `clientName`. */
export const APPROVAL_REFUSALS: Readonly<Record<ApprovalRefusal, (clientName: string) => string>> = {
  'phishing-resistant-required': (clientName) =>
    `${clientName} can be approved only after signing in with a passkey that asks for your PIN, fingerprint or face. Sign in with your passkey to continue. (No passkey yet? Add one on your account page first.)`,
  'second-factor-required': () =>
    'Approving needs a second factor: sign in with a passkey that asks for your PIN, fingerprint or face, or with your password and a one-time code. If you have neither, set one up on your account page first.',
};

/** At the approval itself: the same policy, as a refusal (the page may have been open for long). */
export function assertApprovalAllowed(
  config: Config,
  client: ClientRecord,
  session: SessionRecord,
  requestedAcr: readonly string[] | null = null,
  member: MemberPolicy = NO_MEMBER_POLICY,
): void {
  const refusal = approvalRefusal(config, client, session, requestedAcr, member);
  if (refusal !== null)
    throw new OAuthError('access_denied', APPROVAL_REFUSALS[refusal](client.name), {
      status: 403,
      page: { key: REFUSAL_MESSAGES[refusal], values: { client: client.name } },
    });
}

/** The same refusals in the pages' catalogues (src/ui/locales), for the person's language. */
export const REFUSAL_MESSAGES: Readonly<Record<ApprovalRefusal, string>> = {
  'phishing-resistant-required': 'signIn.refusal.passkeyRequired',
  'second-factor-required': 'signIn.refusal.secondFactorRequired',
};

export type OperatorRefusal =
  /** The sign-in was one factor (a password alone, a presence-only passkey): sign in with a second one. */
  | 'second-factor-required'
  /** A change, and the sign-in is older than the console allows for one: sign in again. */
  | 'sign-in-again';

/**
 * Who may act in the operator console, beyond holding a role: a sign-in with a
 * second factor (a passkey that verified the person, or a password and a one-time code), not
 * a password alone; and for a change, one at most `consoleReauthenticate` seconds old, as
 * OIDC Core §3.1.2.1 `max_age` asks: "If the elapsed time is greater than this value, the
 * OP MUST attempt to actively re-authenticate the End-User."
 */
export function operatorRefusal(config: Config, session: SessionRecord, now: number, change: boolean): OperatorRefusal | null {
  if (!hasSecondFactor(sessionMethods(session))) return 'second-factor-required';
  if (change && now - session.authTime > config.secondFactor.consoleReauthenticate * 1000) return 'sign-in-again';
  return null;
}

/** A passkey or a code: what a session proved beyond a password. */
const SECOND_FACTOR_METHODS: readonly AuthMethod[] = ['hwk', 'swk', 'otp'];

/**
 * Whether a sign-in made at `authTime` is recent enough to change how the account is reached:
 * its e-mail address (where "Forgot password?" mails its link), its passkeys and its one-time
 * codes (`TESSERA_ACCOUNT_REAUTHENTICATE`). OWASP ASVS 4.0.3 §3.7.1: "Verify the application
 * ensures a full, valid login session or requires re-authentication or secondary verification
 * before allowing any sensitive transactions or account modifications." A browser left signed
 * in, or a stolen session cookie, would otherwise add a way in of its own that outlives the
 * session (a passkey stays when the password is changed), or move the address and reset the
 * password.
 */
export function recentEnoughForAccountChange(deps: Pick<FlowDeps, 'config' | 'clock'>, authTime: number): boolean {
  return deps.clock.now() - authTime <= deps.config.secondFactor.accountReauthenticate * 1000;
}

/** `TESSERA_ACCOUNT_REAUTHENTICATE` in whole minutes, as the pages and the refusal say it. */
export function accountReauthenticateMinutes(config: Pick<Config, 'secondFactor'>): number {
  return Math.round(config.secondFactor.accountReauthenticate / 60);
}

export type SecondFactorChangeRefusal =
  /** The account has a passkey or codes, and this sign-in was a password alone: prove one of them. */
  | 'prove-first'
  /** The sign-in is older than `TESSERA_ACCOUNT_REAUTHENTICATE`: sign in again. */
  | 'sign-in-again';

/**
 * Adding or removing a passkey or one-time codes. The first one may be set up from a
 * password sign-in: the account has nothing more to prove yet. Once it has one, only a
 * session that proved one of them (a passkey or a code, not the password alone) may change
 * them; otherwise whoever holds the password alone would set up a factor of their own, and
 * with it a two-factor sign-in (NIST SP 800-63B §6.1.2.1: binding an additional
 * authenticator needs authentication at the assurance level it will give). A passkey that
 * only tested presence counts as proving one: it is a factor the account has, and an account
 * with only such a key and a password would otherwise have no way to add a stronger one.
 * Either way the sign-in must be recent (`recentEnoughForAccountChange`). Refused: 403. The
 * account page asks the same question, so that it offers no button whose post would be
 * refused, and a link to sign in again in its place.
 */
export async function secondFactorChangeRefusal(
  deps: Pick<FlowDeps, 'store' | 'config' | 'clock'>,
  session: SessionRecord,
): Promise<SecondFactorChangeRefusal | null> {
  if (!sessionMethods(session).some((method) => SECOND_FACTOR_METHODS.includes(method))) {
    const [passkeys, totp] = await Promise.all([deps.store.passkeys.listForUser(session.userId), deps.store.totp.get(session.userId)]);
    if (passkeys.length > 0 || (totp !== null && totp.confirmedAt !== null)) return 'prove-first';
  }
  return recentEnoughForAccountChange(deps, session.authTime) ? null : 'sign-in-again';
}

export async function assertMayChangeSecondFactors(deps: Pick<FlowDeps, 'store' | 'config' | 'clock'>, session: SessionRecord): Promise<void> {
  const refusal = await secondFactorChangeRefusal(deps, session);
  if (refusal === 'prove-first') {
    throw new OAuthError(
      'access_denied',
      'Your account already has a passkey or one-time codes, and this browser signed in with your password alone. To add or remove one, sign in again with your passkey, or with your password and a one-time code.',
      { status: 403, page: { key: 'secondFactors.proveFirst' } },
    );
  }
  if (refusal === 'sign-in-again') {
    const minutes = accountReauthenticateMinutes(deps.config);
    throw new OAuthError('access_denied', `To add or remove a passkey or one-time codes, sign in again: your sign-in is more than ${minutes} minutes old.`, {
      status: 403,
      page: { key: 'secondFactors.signInAgain', values: { minutes } },
    });
  }
}

/**
 * From a proved first step (a password, a directory's password, an upstream provider, or a
 * passkey) to a signed-in browser: a person with one-time codes on is asked for one next,
 * the sign-in waiting in the store under a cookie of its own for `pendingSignInTimeout`,
 * with what the first step proved; everyone else is signed in at once.
 */
import { withOneTimeCode, type AuthMethod } from '../../core/auth-methods.ts';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import type { SessionRecord, UserRecord } from '../../store/types.ts';
import { checkSecondFactor, totpStatus } from '../second-factor/codes.ts';
import { sessionMethods } from '../second-factor/policy.ts';
import { codeLimits } from '../sign-in.ts';
import type { FlowDeps } from '../types.ts';
import { cookieNames, usableCookie } from './cookies.ts';
import { beginSession, type Browser, type SignInRecord } from './session.ts';

/**
 * The first step was right, and proved `amr` (RFC 8176; `['pwd']` for a password checked
 * here or by a directory, what an upstream OpenID provider said it checked, nothing for
 * GitHub): `signed-in` when the person has no one-time codes; otherwise `second-factor`, the
 * sign-in now waiting for its code, remembering `amr` for when the code comes. The session
 * records no more than `amr`: a first step that proved nothing Tessera can name is a session
 * with an empty `amr`, one factor at most (core/auth-methods.ts `hasSecondFactor`).
 * `authTime`: when the first step was proved, now unless an upstream provider says it was
 * earlier; a one-time code, proved now, makes it now.
 */
export async function afterFirstStep(
  deps: FlowDeps,
  browser: Browser,
  user: UserRecord,
  amr: readonly AuthMethod[],
  signIn: SignInRecord,
  { authTime }: { readonly authTime?: number } = {},
): Promise<'signed-in' | 'second-factor'> {
  if (!(await totpStatus(deps, user.id)).enabled) {
    await beginSession(deps, browser, user, amr, signIn, { authTime });
    return 'signed-in';
  }
  const now = deps.clock.now();
  const value = randomToken(32);
  const lifetime = deps.config.secondFactor.pendingSignInTimeout;
  await deps.store.pendingSignIns.create({ idHash: hashSecret(value), userId: user.id, amr, createdAt: now, expiresAt: now + lifetime * 1000 });
  browser.cookies.set(cookieNames(deps.config).pending, value, lifetime);
  return 'second-factor';
}

/** Signs the person in after a passkey (`amr` as the passkey proved it). */
export async function afterPasskey(deps: FlowDeps, browser: Browser, user: UserRecord, amr: readonly AuthMethod[], signIn: SignInRecord): Promise<void> {
  await beginSession(deps, browser, user, amr, signIn);
}

export type SecondFactorStep =
  /** No sign-in waits in this browser (none, expired, or its account disabled): sign in again. */
  | { readonly kind: 'expired' }
  | { readonly kind: 'wrong-code' }
  | { readonly kind: 'replayed'; readonly userId: string }
  | { readonly kind: 'locked'; readonly userId: string }
  /** Another request with a right code completed this sign-in first. */
  | { readonly kind: 'completed-already' }
  | { readonly kind: 'signed-in'; readonly user: UserRecord };

/**
 * The code typed after the first step (RFC 6238). It counts against the password's guessing
 * limits (flows/sign-in.ts), and every refused code is a `second_factor.failed` event. Of two
 * right codes sent at once for one waiting sign-in, one signs in: using up the waiting
 * sign-in, starting the session and recording the sign-in are one transaction.
 */
export async function completeSecondFactor(deps: FlowDeps, browser: Browser, typed: string, signIn: SignInRecord): Promise<SecondFactorStep> {
  const name = cookieNames(deps.config).pending;
  const value = browser.cookies.read(name);
  const now = deps.clock.now();
  const pending = usableCookie(value) ? await deps.store.pendingSignIns.get(hashSecret(value), now) : null;
  const user = pending ? await deps.store.users.get(pending.userId) : null;
  if (!pending || !user || user.disabled) {
    browser.cookies.clear(name);
    return { kind: 'expired' };
  }
  const events = deps.events.forRequest({ ip: browser.ip, userAgent: browser.userAgent });
  const result = await checkSecondFactor({ ...deps, events }, user, typed, codeLimits(deps.config.signIn, browser.ip, user.username));
  if (result.kind === 'wrong-code') return { kind: 'wrong-code' };
  if (result.kind === 'replayed' || result.kind === 'locked') return { kind: result.kind, userId: user.id };
  // The code joins what the first step proved (a password and a code: `pwd otp mfa`; an
  // upstream sign-in that named nothing and a code: `otp`, one factor Tessera can vouch for).
  const session = await beginSession(deps, browser, user, withOneTimeCode(pending.amr), signIn, {
    guard: async (tx) => (await tx.pendingSignIns.consume(pending.idHash, now)) !== null,
  });
  if (session === null) return { kind: 'completed-already' };
  browser.cookies.clear(name);
  return { kind: 'signed-in', user };
}

/**
 * One-time codes were just turned on with a right code in this browser: the session adds
 * the code to what it proved (core/auth-methods.ts `withOneTimeCode`: a password session
 * now has two factors, a passkey that only tested presence still has one), under a new
 * cookie, in the same OIDC session, with the same `auth_time`: setting up a code is not
 * signing in again.
 */
export async function gainOneTimeCode(deps: FlowDeps, browser: Browser, session: SessionRecord, user: UserRecord): Promise<void> {
  const before = sessionMethods(session);
  const after = withOneTimeCode(before);
  if (after.length === before.length && after.every((method) => before.includes(method))) return;
  await beginSession(deps, browser, user, after, null, { authTime: session.authTime });
}

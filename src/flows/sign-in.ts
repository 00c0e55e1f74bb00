/**
 * Signing in with a password, and who a browser session belongs to. The HTTP layer reads
 * the form and the session cookie; what counts as a sign-in, and which limits it is held
 * to, is decided here.
 */
import { decoyPasswordHash, verifyPassword } from '../core/password.ts';
import { normalizeUsername } from '../core/username.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import { Attempt } from './attempts.ts';
import type { FlowDeps } from './types.ts';

/** Sign-in attempts allowed per username, and per client address, in one window. */
export const SIGN_IN_LIMIT = { perUser: 10, perAddress: 100, windowMs: 15 * 60_000 };

export interface SignInInput {
  readonly username: string;
  readonly password: string;
  /** The client address the attempt came from (per-address limit). */
  readonly ip: string;
  /** The application whose authorization request the sign-in interrupted, if known (for the audit trail). */
  readonly clientId?: string | null;
}

export type SignInResult =
  /** Too many failed attempts for this username or address in the window: nothing was checked. */
  | { readonly kind: 'limited' }
  /** Unknown user, wrong password or disabled account: one answer for all three. */
  | { readonly kind: 'refused' }
  | { readonly kind: 'signed-in'; readonly user: UserRecord };

/**
 * Checks a username and password, counted against the sign-in limits. A success takes its
 * attempt back; a failure stays counted.
 */
export async function signIn(deps: Pick<FlowDeps, 'store' | 'clock' | 'config' | 'events'>, input: SignInInput): Promise<SignInResult> {
  const username = normalizeUsername(input.username).slice(0, 256);
  const attempt = await Attempt.reserve(
    deps.store.rateLimits,
    [
      { key: `sign-in:user:${username}`, limit: SIGN_IN_LIMIT.perUser },
      { key: `sign-in:ip:${input.ip}`, limit: SIGN_IN_LIMIT.perAddress },
    ],
    SIGN_IN_LIMIT.windowMs,
    deps.clock.now(),
  );
  const clientId = input.clientId ?? null;
  if (!attempt) {
    await deps.events.emit({ type: 'signin.locked', username, clientId });
    return { kind: 'limited' };
  }
  const user = username ? await deps.store.users.findByUsername(username) : null;
  // The password is checked even for an unknown user, so the answer takes as long either way.
  const passwordMatches = await verifyPassword(input.password.slice(0, 1024), user?.passwordHash ?? (await decoyPasswordHash(deps.config.passwordHash)));
  if (!user || !passwordMatches || user.disabled) {
    const reason = !user ? 'unknown_user' : !passwordMatches ? 'wrong_password' : 'disabled';
    await deps.events.emit({ type: 'signin.failed', userId: user?.id ?? null, username, clientId, detail: { reason } });
    return { kind: 'refused' };
  }
  await attempt.succeeded();
  // The sign-in is recorded once it is complete: after a one-time code, when one is asked for.
  return { kind: 'signed-in', user };
}

/** The user a live session belongs to, or null when the account is gone or disabled. */
export async function sessionUser(deps: Pick<FlowDeps, 'store'>, session: SessionRecord): Promise<UserRecord | null> {
  const user = await deps.store.users.get(session.userId);
  return user && !user.disabled ? user : null;
}

/**
 * The OIDC session (`sid`) a new sign-in continues: the browser's live one when the same
 * person signs in again (prompt=login, max_age), so that apps signed in through it stay
 * signed in; null (a new session, and the old one ends) when someone else signs in.
 */
export function continuedSid(previous: SessionRecord | null, user: UserRecord): string | null {
  return previous !== null && previous.userId === user.id ? previous.sid : null;
}

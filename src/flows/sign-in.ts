/**
 * Signing in with a username and password, and the limits that stop guessing without
 * locking the owner out (issue 12, item 4; docs/security.md).
 *
 * - Failures for one username from one address are limited (`perUserAddress`): a guesser
 *   there is refused, the owner elsewhere is not.
 * - Failures from one address, whatever the usernames, are limited (`perAddress`).
 * - Failures for a username from anywhere only slow: past `freeFailures`, each check waits
 *   `delayMs`, doubled for every further failure, up to `maxDelayMs`. The right password
 *   still signs in after the wait: a guesser cannot lock the owner out.
 * - The check itself waits for a place on the password queue (core/password-queue.ts),
 *   with a fair share per address; an attempt with no place is refused at once.
 */
import type { SignInSettings } from '../config/index.ts';
import { decoyPasswordHash } from '../core/password.ts';
import type { PasswordQueue } from '../core/password-queue.ts';
import { normalizeUsername } from '../core/username.ts';
import type { UserRecord } from '../store/types.ts';
import { Attempt, isRefusal, type AttemptLimit } from './attempts.ts';
import type { CodeLimits } from './second-factor/codes.ts';
import type { FlowDeps } from './types.ts';

export interface SignInDeps extends FlowDeps {
  readonly passwords: PasswordQueue;
}

export interface SignInRequest {
  readonly username: string;
  readonly password: string;
  /** The client address (per-address limits and the queue's fair share). */
  readonly ip: string;
  /** The application whose authorization request the sign-in interrupted, if known (for the audit trail). */
  readonly clientId?: string | null;
}

export type SignInResult =
  | { readonly kind: 'signed-in'; readonly user: UserRecord }
  /** Unknown username, wrong password or disabled account: one answer for all three. */
  | { readonly kind: 'refused' }
  /** Too many failures for this username from this address, or from this address. */
  | { readonly kind: 'limited'; readonly scope: 'user-address' | 'address'; readonly retryAfterSeconds: number }
  /** No place on the password queue right now. */
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number };

/**
 * How the counters of sign-in guesses are named: a prefix, then what they count for. Only
 * this module builds their keys; an operator's lockout list (flows/manage/lockouts.ts) reads
 * them by these prefixes.
 */
export const SIGN_IN_KEYS = {
  /** `${ip} ${username}`: an address has no space; a username may. */
  userAddress: 'sign-in:user-ip:',
  address: 'sign-in:ip:',
  user: 'sign-in:user:',
  oneTimeCode: 'one-time-code:user:',
  enrolment: 'totp-enrol:user:',
} as const;

/** The limits a password is checked against; the delay's count (never refused) comes last. */
function passwordLimits(settings: SignInSettings, ip: string, username: string): readonly AttemptLimit[] {
  return [
    { key: `${SIGN_IN_KEYS.userAddress}${ip} ${username}`, limit: settings.perUserAddress },
    { key: `${SIGN_IN_KEYS.address}${ip}`, limit: settings.perAddress },
    // Counted, never refused: the count sets the delay.
    { key: `${SIGN_IN_KEYS.user}${username}`, limit: Infinity },
  ];
}

/**
 * Wrong one-time codes per user, whatever the address. Unlike a password, a one-time code is
 * asked for only after the right password: whoever reaches it has the password, and the
 * user's codes are locked against them for the window (6 digits do not survive many
 * addresses' worth of guesses).
 */
export const ONE_TIME_CODE_LIMIT = { perUser: 10, windowMs: 15 * 60_000 };

/**
 * The limits a one-time code typed after the password counts against. A wrong code also
 * counts as a wrong password, under the same keys, so the password and the code together
 * get no more guesses from one address than the password alone.
 */
export function codeLimits(settings: SignInSettings, ip: string, username: string): CodeLimits {
  const [userAddress, address] = passwordLimits(settings, ip, username);
  return {
    limits: [userAddress!, address!, { key: `${SIGN_IN_KEYS.oneTimeCode}${username}`, limit: ONE_TIME_CODE_LIMIT.perUser }],
    windowMs: settings.windowSeconds * 1000,
  };
}

/** The limit on codes typed while setting up an authenticator app (the person is signed in already). */
export function enrolmentLimits(userId: string): CodeLimits {
  return { limits: [{ key: `${SIGN_IN_KEYS.enrolment}${userId}`, limit: ONE_TIME_CODE_LIMIT.perUser }], windowMs: ONE_TIME_CODE_LIMIT.windowMs };
}

const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The wait before checking a password for a username that has failed `failures` times. */
export function signInDelayMs(settings: SignInSettings, failures: number): number {
  if (failures <= settings.freeFailures) return 0;
  return Math.min(settings.maxDelayMs, settings.delayMs * 2 ** Math.min(30, failures - settings.freeFailures - 1));
}

export async function signIn(deps: SignInDeps, request: SignInRequest): Promise<SignInResult> {
  const settings = deps.config.signIn;
  const username = normalizeUsername(request.username).slice(0, 256);
  const now = deps.clock.now();
  // No place on the queue: refused before anything is counted or written.
  if (!deps.passwords.hasRoom(request.ip)) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  const reserved = await Attempt.reserve(deps.store.rateLimits, passwordLimits(settings, request.ip, username), settings.windowSeconds * 1000, now);
  const clientId = request.clientId ?? null;
  if (isRefusal(reserved)) {
    const scope = reserved.limit.key.startsWith(SIGN_IN_KEYS.address) ? 'address' : 'user-address';
    await deps.events.emit({ type: 'signin.locked', username, clientId, detail: { limit: scope } });
    return { kind: 'limited', scope, retryAfterSeconds: reserved.retryAfterSeconds };
  }
  // The count includes this attempt: the failures before it are one fewer.
  const delay = signInDelayMs(settings, reserved.counts[2]! - 1);
  if (delay > 0) await (deps.sleep ?? sleepFor)(delay);

  const user = username ? await deps.store.users.findByUsername(username) : null;
  // The password is checked even for an unknown user, so the answer takes as long either way.
  const encoded = user?.passwordHash ?? (await decoyPasswordHash(deps.config.passwordHash));
  const check = await deps.passwords.verify(request.password.slice(0, 1024), encoded, request.ip);
  if (check.kind === 'busy') {
    // Nothing was tried: the attempt is not held against anyone.
    await reserved.succeeded();
    return check;
  }
  if (!user || !check.matches || user.disabled) {
    const reason = !user ? 'unknown_user' : !check.matches ? 'wrong_password' : 'disabled';
    await deps.events.emit({ type: 'signin.failed', userId: user?.id ?? null, username, clientId, detail: { reason } });
    return { kind: 'refused' };
  }
  await reserved.succeeded();
  return { kind: 'signed-in', user };
}

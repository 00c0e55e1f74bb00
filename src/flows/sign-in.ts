/**
 * Signing in with a username and password, and the limits that stop guessing without
 * locking the owner out (item 4; docs/security.md).
 *
 * - Failures for one username from one address are limited (`perUserAddress`): a guesser
 *   there is refused, the owner elsewhere is not.
 * - Failures from one address, whatever the usernames, are limited (`perAddress`).
 * - Failures for a username from anywhere only slow: past `freeFailures`, each check waits
 *   `delayMs`, doubled for every further failure, up to `maxDelayMs`. The right password
 *   still signs in after the wait: a guesser cannot lock the owner out.
 * - The check itself waits for a place on the password queue (core/password-queue.ts),
 *   with a fair share per address; an attempt with no place is refused at once.
 *
 * "One address" is an IPv4 address, or an IPv6 address's /64 (core/networks.ts
 * `countedAddress`): one host may hold a whole /64.
 */
import type { SignInSettings } from '../config/index.ts';
import { hashSecret, randomToken } from '../core/crypto.ts';
import { countedAddress } from '../core/networks.ts';
import { decoyPasswordHash } from '../core/password.ts';
import type { PasswordQueue } from '../core/password-queue.ts';
import { normalizeUsername } from '../core/username.ts';
import type { UserRecord } from '../store/types.ts';
import { Attempt, isRefusal, type AttemptLimit, type Refusal } from './attempts.ts';
import type { CodeLimits } from './second-factor/codes.ts';
import type { FlowDeps } from './types.ts';

export interface SignInDeps extends PasswordCheckDeps, FlowDeps {}

/** What a password check needs: no token issuer, so the account page's flows can use it too. */
export interface PasswordCheckDeps extends Pick<FlowDeps, 'store' | 'clock' | 'config' | 'events' | 'sleep'> {
  readonly passwords: PasswordQueue;
}

export interface SignInRequest {
  readonly username: string;
  readonly password: string;
  /** The client address (per-address limits and the queue's fair share). */
  readonly ip: string;
  /**
   * The browser's known-browser token (a cookie set after an earlier right password), if it
   * sent one: with a good record for this username it skips the wait and goes first.
   */
  readonly browser?: string | null;
  /** The application whose authorization request the sign-in interrupted, if known (for the audit trail). */
  readonly clientId?: string | null;
}

/** Too many failures for this username from this address, or from this address. */
export type Limited = { readonly kind: 'limited'; readonly scope: 'user-address' | 'address'; readonly retryAfterSeconds: number };
/** No place on the password queue right now. */
export type Busy = { readonly kind: 'busy'; readonly retryAfterSeconds: number };

export type SignInResult =
  /** `browser`: the known-browser token to keep in the browser (a new one, or the one it sent). */
  | { readonly kind: 'signed-in'; readonly user: UserRecord; readonly browser: string }
  /** Unknown username, wrong password or disabled account: one answer for all three. */
  | { readonly kind: 'refused' }
  | Limited
  | Busy;

/**
 * How the counters of sign-in guesses are named: a prefix, then what they count for. Only
 * this module builds their keys; an operator's lockout list (flows/manage/lockouts.ts) reads
 * them by these prefixes.
 */
export const SIGN_IN_KEYS = {
  /** `${address} ${username}` (the address as `countedAddress` gives it): an address has no space; a username may. */
  userAddress: 'sign-in:user-ip:',
  address: 'sign-in:ip:',
  user: 'sign-in:user:',
  oneTimeCode: 'one-time-code:user:',
  enrolment: 'totp-enrol:user:',
} as const;

/**
 * The limits a password is checked against; the delay's count (never refused) comes last. An
 * address is counted as `countedAddress` says (an IPv6 address by its /64), so that a guesser
 * cannot start a fresh count at each of the addresses one host holds.
 */
function passwordLimits(settings: SignInSettings, ip: string, username: string): readonly AttemptLimit[] {
  const address = countedAddress(ip);
  return [
    { key: `${SIGN_IN_KEYS.userAddress}${address} ${username}`, limit: settings.perUserAddress },
    { key: `${SIGN_IN_KEYS.address}${address}`, limit: settings.perAddress },
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

/**
 * The counters a good record lives in: one per address, one per browser, each with the
 * username. The exact address, not its /64: a record vouches, and no wider than the address
 * the right password came from.
 */
function goodRecordKeys(username: string, ip: string, browser: string | null | undefined): string[] {
  const keys = [`sign-in:good-ip:${ip} ${username}`];
  if (browser && browser.length <= 128) keys.push(`sign-in:good-browser:${hashSecret(browser)} ${username}`);
  return keys;
}

/** Whether a right password for `username` came from this address or this browser within the good-record period. */
async function hasGoodRecord(
  deps: Pick<FlowDeps, 'store' | 'config'>,
  username: string,
  ip: string,
  browser: string | null | undefined,
  now: number,
): Promise<boolean> {
  if (deps.config.signIn.goodRecordSeconds === 0 || !username) return false;
  const windows = await Promise.all(goodRecordKeys(username, ip, browser).map((key) => deps.store.rateLimits.window(key, now)));
  return windows.some((window) => window !== null);
}

type PasswordAttempt<T> =
  | { readonly kind: 'checked'; readonly matches: boolean; readonly reserved: Attempt; readonly found: T }
  | { readonly kind: 'limited'; readonly refusal: Refusal; readonly scope: Limited['scope'] }
  | Busy;

/**
 * Checks the password once the limits let it be checked: the check of a Tessera password
 * (`localCheck`), or a directory's (flows/upstream/ldap.ts). `trusted`: the browser or
 * address has a good record for the username. What was found (the account) comes back with
 * whether the password matched.
 */
export type PasswordChecker<T> = (
  password: string,
  trusted: boolean,
) => Promise<{ readonly kind: 'checked'; readonly matches: boolean; readonly found: T } | Busy>;

/** A Tessera password: the hash of what `findUser` finds (an account, a sign-up waiting for its link), or a decoy when it finds none, on the password queue. */
function localCheck<H extends Pick<UserRecord, 'passwordHash'>>(
  deps: PasswordCheckDeps,
  ip: string,
  findUser: () => Promise<H | null>,
): PasswordChecker<H | null> {
  return async (password, trusted) => {
    const user = await findUser();
    // The password is checked even for an unknown user, so the answer takes as long either way.
    const encoded = user?.passwordHash ?? (await decoyPasswordHash(deps.config.passwordHash));
    const check = await deps.passwords.verify(password, encoded, ip, { trusted });
    return check.kind === 'busy' ? check : { kind: 'checked', matches: check.matches, found: user };
  };
}

/**
 * One password check under the sign-in limits: every check of a person's password by the
 * server goes through here (the sign-in form, and the current password on /account), so
 * that it takes a place on the password queue, counts against the same limits and waits the
 * same wait. `user`: the account the username names (null: unknown, checked against a decoy).
 * A matching attempt's counts are left to the caller (`reserved.succeeded()` takes them back).
 */
async function attemptPassword<T>(
  deps: PasswordCheckDeps,
  attempt: { readonly username: string; readonly password: string; readonly ip: string; readonly browser?: string | null | undefined },
  checkPassword: PasswordChecker<T>,
): Promise<PasswordAttempt<T>> {
  const settings = deps.config.signIn;
  const { username, ip } = attempt;
  const now = deps.clock.now();
  // The good record is read only when it decides something: a full queue, or a wait.
  let trusted: boolean | undefined;
  const isTrusted = async () => (trusted ??= await hasGoodRecord(deps, username, ip, attempt.browser, now));
  // A full queue: the place is taken from another's attempt, or refused. Either way the owner's
  // record counts: it may take any stranger's place, and is served first,
  // where a stranger's attempt displacing a flooder's would wait behind every other.
  const place = deps.passwords.placeFor(ip);
  const trustedPlace = place !== 'free' && (await isTrusted()) && deps.passwords.hasRoom(ip, { trusted: true });
  // No place on the queue: refused before anything is counted or written.
  if (place === null && !trustedPlace) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  const reserved = await Attempt.reserve(deps.store.rateLimits, passwordLimits(settings, ip, username), settings.windowSeconds * 1000, now);
  if (isRefusal(reserved)) {
    return { kind: 'limited', refusal: reserved, scope: reserved.limit.key.startsWith(SIGN_IN_KEYS.address) ? 'address' : 'user-address' };
  }
  // The count includes this attempt: the failures before it are one fewer. The owner, in a
  // browser or at an address with a good record, does not wait for a guesser's failures.
  const delay = signInDelayMs(settings, reserved.counts[2]! - 1);
  if (delay > 0 && !(await isTrusted())) await (deps.sleep ?? sleepFor)(delay);

  let check: Awaited<ReturnType<PasswordChecker<T>>>;
  try {
    check = await checkPassword(attempt.password.slice(0, 1024), trusted === true);
  } catch (error) {
    // Nothing could be tried (a directory that does not answer): not held against anyone.
    await reserved.succeeded();
    throw error;
  }
  if (check.kind === 'busy') {
    // Nothing was tried: the attempt is not held against anyone.
    await reserved.succeeded();
    return check;
  }
  return { kind: 'checked', matches: check.matches, reserved, found: check.found };
}

/** Keeps the good record of a right password for `username`: the browser's token (new if it had none) and the address. */
async function rememberGoodRecord(
  deps: Pick<FlowDeps, 'store' | 'config'>,
  username: string,
  ip: string,
  browser: string | null | undefined,
  now: number,
): Promise<string> {
  const token = browser && browser.length <= 128 ? browser : randomToken(32);
  const windowMs = deps.config.signIn.goodRecordSeconds * 1000;
  if (windowMs > 0) await Promise.all(goodRecordKeys(username, ip, token).map((key) => deps.store.rateLimits.hit(key, windowMs, now)));
  return token;
}

export async function signIn(deps: SignInDeps, request: SignInRequest): Promise<SignInResult> {
  const username = normalizeUsername(request.username).slice(0, 256);
  const clientId = request.clientId ?? null;
  const result = await attemptPassword(
    deps,
    { ...request, username },
    localCheck(deps, request.ip, async () => (username ? deps.store.users.findByUsername(username) : null)),
  );
  if (result.kind === 'busy') return result;
  if (result.kind === 'limited') {
    // A refusal writes nothing now: one row per limit and window, with the count (core/events.ts).
    await deps.events.refused({ type: 'signin.locked', username, clientId, detail: { limit: result.scope } }, result.refusal.limit.key, result.refusal.endsAt);
    return { kind: 'limited', scope: result.scope, retryAfterSeconds: result.refusal.retryAfterSeconds };
  }
  const user = result.found;
  if (!user || !result.matches || user.disabled) {
    const reason = !user ? 'unknown_user' : !result.matches ? 'wrong_password' : 'disabled';
    await deps.events.emit({ type: 'signin.failed', userId: user?.id ?? null, username, clientId, detail: { reason } });
    return { kind: 'refused' };
  }
  await result.reserved.succeeded();
  return { kind: 'signed-in', user, browser: await rememberGoodRecord(deps, username, request.ip, request.browser, deps.clock.now()) };
}

export type CurrentPasswordCheck = { readonly kind: 'right' } | { readonly kind: 'wrong' } | Limited | Busy;

/**
 * The current password, asked before a signed-in person changes it (/account): checked as a
 * sign-in is, on the password queue and under the same limits, so that a
 * stolen session can neither flood libuv's thread pool (which signs tokens) nor guess the
 * password without end. A wrong one counts as a wrong password for that username from that
 * address.
 */
export function checkCurrentPassword(
  deps: PasswordCheckDeps,
  user: UserRecord,
  attempt: { readonly password: string; readonly ip: string; readonly browser?: string | null },
): Promise<CurrentPasswordCheck> {
  return checkKnownPassword(deps, user, attempt, 'wrong_current_password');
}

/**
 * The password chosen in a sign-up form, asked where the link that makes its account is
 * followed in another browser (flows/address-link.ts `makerFirst`): checked as a sign-in is,
 * under the username the account is to have, on the password queue and under the same limits,
 * so that whoever follows someone else's link can guess no faster than at the sign-in form. A
 * wrong one counts as a wrong password for that username from that address.
 */
export function checkChosenPassword(
  deps: PasswordCheckDeps,
  signUp: { readonly username: string; readonly passwordHash: string },
  attempt: { readonly password: string; readonly ip: string },
): Promise<CurrentPasswordCheck> {
  return checkKnownPassword(deps, { id: null, ...signUp }, attempt, 'wrong_sign_up_password');
}

/** A password checked against one known hash (an account's, or a sign-up's waiting for its link) under the sign-in limits. */
async function checkKnownPassword(
  deps: PasswordCheckDeps,
  holder: { readonly id: string | null; readonly username: string; readonly passwordHash: string },
  attempt: { readonly password: string; readonly ip: string; readonly browser?: string | null },
  reason: 'wrong_current_password' | 'wrong_sign_up_password',
): Promise<CurrentPasswordCheck> {
  const result = await attemptPassword(
    deps,
    { ...attempt, username: holder.username },
    localCheck(deps, attempt.ip, async () => holder),
  );
  if (result.kind === 'busy') return result;
  if (result.kind === 'limited') {
    await deps.events.refused(
      { type: 'signin.locked', userId: holder.id, username: holder.username, detail: { limit: result.scope } },
      result.refusal.limit.key,
      result.refusal.endsAt,
    );
    return { kind: 'limited', scope: result.scope, retryAfterSeconds: result.refusal.retryAfterSeconds };
  }
  if (!result.matches) {
    await deps.events.emit({ type: 'signin.failed', userId: holder.id, username: holder.username, detail: { reason } });
    return { kind: 'wrong' };
  }
  await result.reserved.succeeded();
  return { kind: 'right' };
}

export type DirectoryPasswordResult<T> =
  | { readonly kind: 'right'; readonly found: T; readonly browser: string }
  /** Unknown username or wrong password (one answer for both), recorded as `signin.failed`. */
  | { readonly kind: 'wrong' }
  | Limited
  | Busy;

/**
 * A password checked by a directory (LDAP) under the same limits, waits and queue
 * as a Tessera password: the guessing limits count its failures under the typed username and
 * the address, and the check holds a place of the address on the password queue. `check`
 * throws when the directory cannot be asked (the attempt is then not counted).
 */
export async function checkDirectoryPassword<T>(
  deps: PasswordCheckDeps,
  request: SignInRequest & { readonly provider: string },
  check: (username: string, password: string) => Promise<{ readonly matches: boolean; readonly found: T }>,
): Promise<DirectoryPasswordResult<T>> {
  const username = normalizeUsername(request.username).slice(0, 256);
  const clientId = request.clientId ?? null;
  const result = await attemptPassword<T | null>(deps, { ...request, username }, async (password, trusted) => {
    const checked = await deps.passwords.elsewhere(request.ip, () => check(username, password), { trusted });
    return checked === null ? { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() } : { kind: 'checked', ...checked };
  });
  if (result.kind === 'busy') return result;
  if (result.kind === 'limited') {
    await deps.events.refused(
      { type: 'signin.locked', username, clientId, detail: { limit: result.scope, provider: request.provider } },
      result.refusal.limit.key,
      result.refusal.endsAt,
    );
    return { kind: 'limited', scope: result.scope, retryAfterSeconds: result.refusal.retryAfterSeconds };
  }
  if (!result.matches || result.found === null) {
    await deps.events.emit({ type: 'signin.failed', username, clientId, detail: { reason: 'wrong_password', provider: request.provider } });
    return { kind: 'wrong' };
  }
  await result.reserved.succeeded();
  return { kind: 'right', found: result.found, browser: await rememberGoodRecord(deps, username, request.ip, request.browser, deps.clock.now()) };
}

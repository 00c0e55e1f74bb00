/**
 * Lockouts: the guessing limits' counters (flows/attempts.ts) as an operator sees them, and
 * lifting them: for a person locked out of their own account by someone else's guesses, or
 * an office behind one address. The one implementation the command and the admin API call.
 * A counter is only read and deleted here; the flows that count own the keys' shapes
 * (flows/sign-in.ts, flows/device/verification.ts).
 */
import { countedAddress } from '../../core/networks.ts';
import { normalizeUsername } from '../../core/username.ts';
import type { RateLimitWindow } from '../../store/types.ts';
import { USER_CODE_KEYS } from '../device/verification.ts';
import { ONE_TIME_CODE_LIMIT, SIGN_IN_KEYS } from '../sign-in.ts';
import { checkMayChangeUser } from './authority.ts';
import type { ManageDeps } from './deps.ts';
import { field, invalid } from './errors.ts';

export type LockoutKind = 'sign-in' | 'one-time-code' | 'user-code';
export type LockoutScope = 'user-address' | 'address' | 'user' | 'browser' | 'network';

export interface Lockout {
  /** The counter's key: what `clearLockouts({ key })` takes. */
  readonly key: string;
  readonly kind: LockoutKind;
  readonly scope: LockoutScope;
  readonly username: string | null;
  /** An address as the limits count it (an IPv6 address by its /64), or a network for `network`. */
  readonly ip: string | null;
  /** Failures counted in the window. */
  readonly failures: number;
  /** Failures the limit allows; null for a counter that only slows attempts (sign-in delays). */
  readonly limit: number | null;
  /** Refusing now: the failures reached the limit. */
  readonly locked: boolean;
  readonly until: number;
}

export const MAX_LOCKOUTS = 1000;

interface Family {
  readonly prefix: string;
  readonly kind: LockoutKind;
  readonly scope: LockoutScope;
  readonly limit: (deps: Pick<ManageDeps, 'config'>) => number | null;
  /** The username and address a key names after its prefix. */
  readonly parse: (rest: string) => { username: string | null; ip: string | null };
}

const byUser = (rest: string) => ({ username: rest, ip: null });
const byAddress = (rest: string) => ({ username: null, ip: rest });

const FAMILIES: readonly Family[] = [
  {
    prefix: SIGN_IN_KEYS.userAddress,
    kind: 'sign-in',
    scope: 'user-address',
    limit: (deps) => deps.config.signIn.perUserAddress,
    // `${ip} ${username}`: an address has no space; a username may.
    parse: (rest) => ({ ip: rest.slice(0, rest.indexOf(' ')), username: rest.slice(rest.indexOf(' ') + 1) }),
  },
  { prefix: SIGN_IN_KEYS.address, kind: 'sign-in', scope: 'address', limit: (deps) => deps.config.signIn.perAddress, parse: byAddress },
  { prefix: SIGN_IN_KEYS.user, kind: 'sign-in', scope: 'user', limit: () => null, parse: byUser },
  { prefix: SIGN_IN_KEYS.oneTimeCode, kind: 'one-time-code', scope: 'user', limit: () => ONE_TIME_CODE_LIMIT.perUser, parse: byUser },
  {
    prefix: USER_CODE_KEYS.browser,
    kind: 'user-code',
    scope: 'browser',
    limit: (deps) => deps.config.userCode.perBrowser,
    parse: () => ({ username: null, ip: null }),
  },
  { prefix: USER_CODE_KEYS.address, kind: 'user-code', scope: 'address', limit: (deps) => deps.config.userCode.perAddress, parse: byAddress },
  { prefix: USER_CODE_KEYS.network, kind: 'user-code', scope: 'network', limit: (deps) => deps.config.userCode.perNetwork, parse: byAddress },
  { prefix: USER_CODE_KEYS.largeNetwork, kind: 'user-code', scope: 'network', limit: (deps) => deps.config.userCode.perLargeNetwork, parse: byAddress },
];

function lockout(deps: Pick<ManageDeps, 'config'>, family: Family, window: RateLimitWindow): Lockout {
  const limit = family.limit(deps);
  return {
    key: window.key,
    kind: family.kind,
    scope: family.scope,
    ...family.parse(window.key.slice(family.prefix.length)),
    failures: window.hits,
    limit,
    locked: limit !== null && window.hits >= limit,
    until: window.endsAt,
  };
}

/**
 * Whether a counter counts the address an operator names: as it is, or as the limits count it
 * (`countedAddress`: an IPv6 address's /64), so that the address a locked-out person reports
 * finds their counters.
 */
function ofAddress(entry: Lockout, ip: string): boolean {
  return entry.ip === ip || entry.ip === countedAddress(ip);
}

export interface LockoutQuery {
  readonly username?: string;
  readonly ip?: string;
  /** Only counters refusing now. */
  readonly lockedOnly?: boolean;
  readonly limit?: number;
}

/** The counters open now, the latest-ending first: who is locked out, or on the way to it. */
export async function listLockouts(deps: Pick<ManageDeps, 'store' | 'clock' | 'config'>, query: LockoutQuery = {}): Promise<Lockout[]> {
  const limit = query.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LOCKOUTS) throw invalid`${field('limit')}: a whole number from 1 to ${MAX_LOCKOUTS}`;
  const username = query.username === undefined ? undefined : normalizeUsername(query.username);
  const now = deps.clock.now();
  const found = await Promise.all(
    FAMILIES.map(async (family) => (await deps.store.rateLimits.listOpen(family.prefix, now, MAX_LOCKOUTS)).map((window) => lockout(deps, family, window))),
  );
  return found
    .flat()
    .filter(
      (entry) =>
        (username === undefined || entry.username === username) &&
        (query.ip === undefined || ofAddress(entry, query.ip)) &&
        (!query.lockedOnly || entry.locked),
    )
    .sort((a, b) => b.until - a.until || a.key.localeCompare(b.key))
    .slice(0, limit);
}

/**
 * Lifts the lockouts of a user (every address's), of an address, or one counter by its
 * key: their counts are forgotten, so the next attempt starts afresh. Returns what it cleared.
 */
export async function clearLockouts(deps: ManageDeps, target: { readonly username?: string; readonly ip?: string; readonly key?: string }): Promise<Lockout[]> {
  if (target.username === undefined && target.ip === undefined && target.key === undefined)
    throw invalid`give ${field('username')}, ${field('ip')} or ${field('key')}`;
  const username = target.username === undefined ? undefined : normalizeUsername(target.username);
  const open = await listLockouts(deps, { limit: MAX_LOCKOUTS });
  const chosen = open.filter(
    (entry) =>
      (username === undefined || entry.username === username) &&
      (target.ip === undefined || ofAddress(entry, target.ip)) &&
      (target.key === undefined || entry.key === target.key),
  );
  // Lifting an operator's lockout lets their password be guessed again: a change to them,
  // whether it is named by their username or reached by an address or a counter's key.
  const named = new Set([...(username ? [username] : []), ...chosen.flatMap((entry) => (entry.username === null ? [] : [entry.username]))]);
  for (const name of named) {
    const person = await deps.store.users.findByUsername(name);
    if (person) checkMayChangeUser(deps.caller, person);
  }
  const cleared: Lockout[] = [];
  for (const entry of chosen) if (await deps.store.rateLimits.remove(entry.key)) cleared.push(entry);
  if (cleared.length > 0) {
    await deps.events.emit({
      type: 'lockout.cleared',
      username: username ?? null,
      detail: { ...(target.ip === undefined ? {} : { ip: target.ip }), counters: cleared.length, by: 'operator' },
    });
  }
  return cleared;
}

/** A lockout as the admin API and `--json` give it. */
export function lockoutJson(entry: Lockout): Record<string, unknown> {
  return {
    key: entry.key,
    kind: entry.kind,
    scope: entry.scope,
    username: entry.username,
    ip: entry.ip,
    failures: entry.failures,
    limit: entry.limit,
    locked: entry.locked,
    until: new Date(entry.until).toISOString(),
  };
}

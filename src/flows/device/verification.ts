/**
 * RFC 8628 §3.3 (User Interaction): the person enters the user code on a second screen,
 * reviews the request and approves or denies it. §5.1: user codes are short, so every
 * lookup by a typed code is rate limited (`config.userCode`, docs/security.md): wrong codes
 * are counted per browser (strictest), per address, per network (/24, /64) and per larger
 * network (/16, /48), each a refusal for that one alone, with allowances growing from browser
 * to network so that one guesser behind a NAT does not lock out everyone behind it; and across
 * the whole server, where going over the budget raises an alert and refuses every lookup
 * but those from a browser with a good record (signed in): a guesser spread over many
 * networks learns nothing more, and no one can lock out the people already signed in.
 */
import { randomUUID } from 'node:crypto';
import { GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import type { ClientRecord, DeviceAuthorizationRecord, Membership, SessionRecord } from '../../store/types.ts';
import { Attempt, isRefusal } from '../attempts.ts';
import { transactionWithEvents } from '../events.ts';
import { organizationChoice } from '../organizations/choice.ts';
import { noteFirstUse } from '../registration/first-use.ts';
import { signInFacts } from '../second-factor/policy.ts';
import type { FlowDeps } from '../types.ts';
import { countedAddress, networkOf } from '../../core/networks.ts';
import { normalizeUserCode } from './user-code.ts';

/** One try at a user code. */
export interface CodeAttempt {
  /** What the person typed or the link carried. */
  readonly input: string;
  /** The client address of the browser. */
  readonly ip: string;
  /** A stable, non-secret identifier of the browser (a hash of its CSRF cookie), if it has one. */
  readonly browser: string | null;
  /**
   * Whether the browser has a good record (a live session): asked only when the server-wide
   * budget is spent, since such a browser's lookups are never refused for what others did.
   */
  readonly goodRecord?: () => Promise<boolean>;
}

/** Which count refused a typed code: `server`, the budget of the whole server (sign in first). */
export type LockScope = 'browser' | 'address' | 'network' | 'large-network' | 'server';

/** Raised (through `FlowDeps.alert`) when wrong codes across the server go over their rate. */
export interface UserCodeAlert {
  readonly type: 'device.user_code_guessing';
  readonly wrongCodesLastMinute: number;
  readonly limitPerMinute: number;
}

export type CodeLookup =
  /** Too many wrong codes from this browser, address or network: refused without looking. */
  | { readonly kind: 'locked'; readonly scope: LockScope; readonly retryAfterSeconds: number }
  /** Cannot be a user code (wrong length or characters): not counted, it can match nothing. */
  | { readonly kind: 'malformed' }
  /** No live request has this code: unknown or expired. Counted as a wrong code. */
  | { readonly kind: 'unknown' }
  /** The request was already approved or denied (or its tokens issued). */
  | { readonly kind: 'decided'; readonly record: DeviceAuthorizationRecord }
  | { readonly kind: 'pending'; readonly record: DeviceAuthorizationRecord; readonly client: ClientRecord };

/** Why a typed code led to no approval page. */
export type LookupFailure = Exclude<CodeLookup, { readonly kind: 'pending' }>;

export type DecisionResult =
  | LookupFailure
  /** Nothing decided: the person must choose the organization (none posted, or one not theirs). */
  | { readonly kind: 'choose'; readonly record: DeviceAuthorizationRecord; readonly client: ClientRecord }
  | { readonly kind: 'done'; readonly approved: boolean; readonly record: DeviceAuthorizationRecord; readonly client: ClientRecord };

export type Decision = (
  | {
      readonly approve: true;
      readonly session: SessionRecord;
      /** Throws when this session may not approve for the request's client (the sign-in policy). */
      readonly check?: (client: ClientRecord) => void;
      /**
       * The person's organizations and the one chosen on the page, if any: with the
       * `organization` scope, the grant keeps the one the tokens name (docs/organizations.md).
       */
      readonly organization?: { readonly memberships: readonly Membership[]; readonly posted: string | null };
    }
  | { readonly approve: false; readonly userId: string }
) & {
  /**
   * The request the page was shown for (its `deviceCodeHash`); absent when the post is no
   * page's form. Another request that the code names now is not decided.
   */
  readonly shownFor?: string;
};

/** Where the device asked from, beside the approver's own address in a device event. */
function deviceDetail(record: DeviceAuthorizationRecord): Record<string, string | null> {
  return { device_ip: record.requestIp, device_user_agent: record.requestUserAgent, scope: record.scope.join(' ') };
}

/**
 * The rate-limit keys of wrong user codes: each count's prefix, followed by the browser,
 * the address or the network it counts; `all`, the whole server's count. Built here only;
 * the lockouts an operator sees (flows/manage/lockouts.ts) are found by these prefixes.
 */
export const USER_CODE_KEYS = {
  browser: 'device-user-code:browser:',
  address: 'device-user-code:ip:',
  network: 'device-user-code:net:',
  largeNetwork: 'device-user-code:large-net:',
  all: 'device-user-code:all',
} as const;

function limitsFor(deps: FlowDeps, attempt: CodeAttempt): { key: string; limit: number; scope: LockScope }[] {
  const settings = deps.config.userCode;
  const limits: { key: string; limit: number; scope: LockScope }[] = [];
  if (attempt.browser !== null) limits.push({ key: `${USER_CODE_KEYS.browser}${attempt.browser}`, limit: settings.perBrowser, scope: 'browser' });
  limits.push({ key: `${USER_CODE_KEYS.address}${countedAddress(attempt.ip)}`, limit: settings.perAddress, scope: 'address' });
  const network = networkOf(attempt.ip);
  if (network !== null) limits.push({ key: `${USER_CODE_KEYS.network}${network}`, limit: settings.perNetwork, scope: 'network' });
  const large = networkOf(attempt.ip, 'large');
  if (large !== null) limits.push({ key: `${USER_CODE_KEYS.largeNetwork}${large}`, limit: settings.perLargeNetwork, scope: 'large-network' });
  return limits;
}

const MINUTE_MS = 60_000;
const sleepFor = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Finds the live device request a typed code names, counting a wrong code against the
 * browser, the address and the network. Every lookup by user code goes through here, the
 * decision too, so no path answers "is this a code?" without the limit.
 */
export async function findDeviceRequest(deps: FlowDeps, attempt: CodeAttempt): Promise<CodeLookup> {
  const now = deps.clock.now();
  const settings = deps.config.userCode;
  const limits = limitsFor(deps, attempt);
  const [guess, overall] = await Promise.all([
    Attempt.reserve(deps.store.rateLimits, limits, settings.windowSeconds * 1000, now),
    deps.store.rateLimits.window(USER_CODE_KEYS.all, now),
  ]);
  if (isRefusal(guess)) {
    const scope = limits.find((limit) => limit.key === guess.limit.key)!.scope;
    // A refusal writes nothing now: one row per limit and window, with the count (core/events.ts).
    await deps.events.refused({ type: 'device.code_entry_locked', ip: attempt.ip, detail: { limit: scope } }, guess.limit.key, guess.endsAt);
    return { kind: 'locked', scope, retryAfterSeconds: guess.retryAfterSeconds };
  }
  // Over the server's budget, a lookup from a browser without a good record is refused (the
  // guesses of many networks add up here); a signed-in browser's still goes through, after
  // a wait, so that a person who typed their code right is never refused for what others did.
  if (overall !== null && overall.hits >= settings.globalPerMinute) {
    if (!(await attempt.goodRecord?.())) {
      await guess.succeeded();
      await deps.events.refused({ type: 'device.code_entry_locked', ip: attempt.ip, detail: { limit: 'server' } }, USER_CODE_KEYS.all, overall.endsAt);
      return { kind: 'locked', scope: 'server', retryAfterSeconds: Math.max(1, Math.ceil((overall.endsAt - now) / 1000)) };
    }
    if (settings.globalDelayMs > 0) await (deps.sleep ?? sleepFor)(settings.globalDelayMs);
  }

  const userCode = normalizeUserCode(attempt.input);
  // Input that cannot be a code guesses nothing, so it is not held against anyone.
  if (userCode === null) {
    await guess.succeeded();
    return { kind: 'malformed' };
  }
  const record = await deps.store.devices.findByUserCode(userCode, now);
  const client = record ? await deps.store.clients.get(record.clientId) : null;
  if (!record || !client) {
    const { hits: wrong } = await deps.store.rateLimits.hit(USER_CODE_KEYS.all, MINUTE_MS, now);
    // Once per window: the count reaches the budget exactly once in each.
    if (wrong === settings.globalPerMinute) {
      deps.alert?.({ type: 'device.user_code_guessing', wrongCodesLastMinute: wrong, limitPerMinute: settings.globalPerMinute });
    }
    return { kind: 'unknown' };
  }
  await guess.succeeded();
  if (record.status !== 'pending') return { kind: 'decided', record };
  return { kind: 'pending', record, client };
}

/**
 * Records the person's decision on the request a typed code names. Only a pending,
 * unexpired request can be decided, and only once: two approvals racing (a double
 * submit, two phones) have one winner; the other is told it was already decided.
 */
export async function decideDeviceRequest(deps: FlowDeps, attempt: CodeAttempt, decision: Decision): Promise<DecisionResult> {
  const found = await findDeviceRequest(deps, attempt);
  if (found.kind !== 'pending') return found;
  const { record, client } = found;
  // The request the page showed has expired and its code was given to another since: this
  // one its approver never saw. They enter the code again, and are shown it.
  if (decision.shownFor !== undefined && decision.shownFor !== record.deviceCodeHash) return { kind: 'unknown' };
  const now = deps.clock.now();
  if (decision.approve) decision.check?.(client);

  if (!decision.approve) {
    const denied = await deps.store.devices.decide(record, { approve: false }, now);
    if (denied) await deps.events.emit({ type: 'device.denied', userId: decision.userId, clientId: record.clientId, detail: deviceDetail(record) });
    return denied ? { kind: 'done', approved: false, record: denied, client } : settledState(deps, record);
  }

  // The organization is the person's input, checked against their memberships as the code
  // flow's consent is (flows/organizations/choice.ts); a device grant is never remembered.
  const choice = organizationChoice(decision.organization?.memberships ?? [], record.scope, decision.organization?.posted ?? null, undefined);
  if (choice.kind === 'choose') return { kind: 'choose', record, client };
  const organizationId = choice.kind === 'chosen' ? choice.organizationId : null;

  // The grant and the decision are one transaction: from the moment the record says
  // "approved" a poll may consume it and read the grant, so the grant must exist by then;
  // and a decision lost to another (or to expiry) takes the grant back with it.
  const { session } = decision;
  const grantId = randomUUID();
  const approved = await transactionWithEvents(deps, async (tx, recordEvent) => {
    await noteFirstUse(tx.clients, client, now);
    await tx.grants.create({
      id: grantId,
      userId: session.userId,
      clientId: record.clientId,
      scope: record.scope,
      kind: GRANT_DEVICE_CODE,
      authTime: session.authTime,
      createdAt: now,
      revokedAt: null,
      device: { ip: record.requestIp, userAgent: record.requestUserAgent, requestedAt: record.createdAt },
      ...signInFacts(session, null),
      ...(organizationId === null ? {} : { organizationId }),
    });
    const decided = await tx.devices.decide(record, { approve: true, userId: session.userId, authTime: session.authTime, grantId }, now);
    if (!decided) throw new DecisionLost();
    await recordEvent({
      type: 'device.approved',
      userId: session.userId,
      clientId: record.clientId,
      grantId,
      detail: { ...deviceDetail(record), ...(organizationId === null ? {} : { organization: organizationId }) },
    });
    return decided;
  }).catch((error: unknown) => {
    if (error instanceof DecisionLost) return null;
    throw error;
  });
  return approved ? { kind: 'done', approved: true, record: approved, client } : settledState(deps, record);
}

/** Rolls back the grant of an approval that lost its decision. */
class DecisionLost extends Error {}

/** After losing a decision: the request was decided by someone else, or has just expired. */
async function settledState(deps: FlowDeps, lost: DeviceAuthorizationRecord): Promise<LookupFailure> {
  const record = await deps.store.devices.find(lost.deviceCodeHash);
  return record !== null && record.status !== 'pending' && record.expiresAt > deps.clock.now() ? { kind: 'decided', record } : { kind: 'unknown' };
}

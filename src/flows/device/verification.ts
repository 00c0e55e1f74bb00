/**
 * RFC 8628 §3.3 (User Interaction): the person enters the user code on a second screen,
 * reviews the request and approves or denies it. §5.1: user codes are short, so every
 * lookup by a typed code is rate limited: after a few wrong codes from one browser or one
 * address, further tries are refused for a while.
 */
import { randomUUID } from 'node:crypto';
import { GRANT_DEVICE_CODE } from '../../core/protocol.ts';
import { type ClientRecord, type DeviceAuthorizationRecord, type SessionRecord } from '../../store/types.ts';
import { Attempt } from '../attempts.ts';
import { transactionWithEvents } from '../events.ts';
import { signInFacts } from '../second-factor/policy.ts';
import type { FlowDeps } from '../types.ts';
import { normalizeUserCode } from './user-code.ts';

/**
 * RFC 8628 §5.1 brute-force protection: wrong codes allowed per browser and per client
 * address in one fixed window, which starts at the first wrong code. Once either count
 * reaches `attempts`, every try is refused until that window ends.
 */
export const USER_CODE_LOCKOUT = { attempts: 5, windowMs: 10 * 60_000 } as const;

/** One try at a user code. */
export interface CodeAttempt {
  /** What the person typed or the link carried. */
  readonly input: string;
  /** The client address of the browser. */
  readonly ip: string;
  /** A stable, non-secret identifier of the browser (a hash of its CSRF cookie), if it has one. */
  readonly browser: string | null;
}

export type CodeLookup =
  /** Too many wrong codes from this browser or address: refused without looking. */
  | { readonly kind: 'locked' }
  /** Cannot be a user code (wrong length or characters): not counted, it can match nothing. */
  | { readonly kind: 'malformed' }
  /** No live request has this code: unknown or expired. Counted as a wrong code. */
  | { readonly kind: 'unknown' }
  /** The request was already approved or denied (or its tokens issued). */
  | { readonly kind: 'decided'; readonly record: DeviceAuthorizationRecord }
  | { readonly kind: 'pending'; readonly record: DeviceAuthorizationRecord; readonly client: ClientRecord };

/** Why a typed code led to no approval page. */
export type LookupFailure = Exclude<CodeLookup, { readonly kind: 'pending' }>;

export type DecisionResult = LookupFailure | { readonly kind: 'done'; readonly approved: boolean; readonly record: DeviceAuthorizationRecord; readonly client: ClientRecord };

export type Decision =
  | {
      readonly approve: true;
      readonly session: SessionRecord;
      /** Throws when this session may not approve for the request's client (the sign-in policy). */
      readonly check?: (client: ClientRecord) => void;
    }
  | { readonly approve: false; readonly userId: string };

/** Where the device asked from, beside the approver's own address in a device event. */
function deviceDetail(record: DeviceAuthorizationRecord): Record<string, string | null> {
  return { device_ip: record.requestIp, device_user_agent: record.requestUserAgent, scope: record.scope.join(' ') };
}

function lockoutKeys(attempt: CodeAttempt): string[] {
  const keys = [`device-user-code:ip:${attempt.ip}`];
  if (attempt.browser !== null) keys.push(`device-user-code:browser:${attempt.browser}`);
  return keys;
}

/**
 * Finds the live device request a typed code names, counting a wrong code against the
 * browser and the address. Every lookup by user code goes through here, the decision too,
 * so no path answers "is this a code?" without the limit.
 */
export async function findDeviceRequest(deps: FlowDeps, attempt: CodeAttempt): Promise<CodeLookup> {
  const now = deps.clock.now();
  const { attempts, windowMs } = USER_CODE_LOCKOUT;
  const keys = lockoutKeys(attempt);
  const guess = await Attempt.reserve(deps.store.rateLimits, keys.map((key) => ({ key, limit: attempts })), windowMs, now);
  if (!guess) {
    await deps.events.emit({ type: 'device.code_entry_locked', ip: attempt.ip });
    return { kind: 'locked' };
  }

  const userCode = normalizeUserCode(attempt.input);
  // Input that cannot be a code guesses nothing, so it is not held against anyone.
  if (userCode === null) {
    await guess.succeeded();
    return { kind: 'malformed' };
  }
  const record = await deps.store.devices.findByUserCode(userCode, now);
  const client = record ? await deps.store.clients.get(record.clientId) : null;
  if (!record || !client) return { kind: 'unknown' };
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
  const now = deps.clock.now();
  if (decision.approve) decision.check?.(client);

  if (!decision.approve) {
    const denied = await deps.store.devices.decide(record.userCode, { approve: false }, now);
    if (denied) await deps.events.emit({ type: 'device.denied', userId: decision.userId, clientId: record.clientId, detail: deviceDetail(record) });
    return denied ? { kind: 'done', approved: false, record: denied, client } : settledState(deps, record.userCode);
  }

  // The grant and the decision are one transaction: from the moment the record says
  // "approved" a poll may consume it and read the grant, so the grant must exist by then;
  // and a decision lost to another (or to expiry) takes the grant back with it.
  const { session } = decision;
  const grantId = randomUUID();
  const approved = await transactionWithEvents(deps, async (tx, recordEvent) => {
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
      });
      const decided = await tx.devices.decide(
        record.userCode,
        { approve: true, userId: session.userId, authTime: session.authTime, grantId },
        now,
      );
      if (!decided) throw new DecisionLost();
      await recordEvent({ type: 'device.approved', userId: session.userId, clientId: record.clientId, grantId, detail: deviceDetail(record) });
      return decided;
    })
    .catch((error: unknown) => {
      if (error instanceof DecisionLost) return null;
      throw error;
    });
  return approved ? { kind: 'done', approved: true, record: approved, client } : settledState(deps, record.userCode);
}

/** Rolls back the grant of an approval that lost its decision. */
class DecisionLost extends Error {}

/** After losing a decision: the request was decided by someone else, or has just expired. */
async function settledState(deps: FlowDeps, userCode: string): Promise<LookupFailure> {
  const record = await deps.store.devices.findByUserCode(userCode, deps.clock.now());
  return record ? { kind: 'decided', record } : { kind: 'unknown' };
}

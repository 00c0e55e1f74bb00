/**
 * One-time codes as a second factor: enrolment of a TOTP secret (RFC 6238) confirmed by a
 * code it makes, ten single-use recovery codes, and checking a code after the password.
 * Every code typed counts against the caller's guessing limits, as a password does, and
 * every code refused is a `second_factor.failed` event.
 */
import { randomInt } from 'node:crypto';
import { hashSecret } from '../../core/crypto.ts';
import { Attempt, isRefusal, type AttemptLimit, type Refusal } from '../attempts.ts';
import { transactionWithEvents } from '../events.ts';
import type { FlowDeps } from '../types.ts';
import { matchTotp, newTotpSecret } from './totp.ts';

export const RECOVERY_CODE_COUNT = 10;

/** No 0/o, 1/l/i: a code is read off paper and typed by hand. */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/**
 * A recovery code: two groups of five from a 31-letter alphabet, about 49 bits, far beyond
 * what the guessing limits leave an attacker.
 */
function newRecoveryCode(): string {
  let code = '';
  for (let i = 0; i < 10; i++) code += RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

/** What is hashed: the code as typed, without case, spaces or dashes. */
function normalizeRecoveryCode(typed: string): string {
  return typed.toLowerCase().replace(/[\s-]/g, '');
}

/** Guessing limits for codes typed, and their window: the caller's, shared with the password. */
export interface CodeLimits {
  readonly limits: readonly AttemptLimit[];
  readonly windowMs: number;
}

export type EnrolmentStart = { readonly kind: 'started'; readonly secret: string } | { readonly kind: 'enrolled' };

/** A new unconfirmed secret for the user, replacing any earlier unconfirmed one. */
export async function beginTotpEnrolment(deps: FlowDeps, userId: string): Promise<EnrolmentStart> {
  const secret = newTotpSecret();
  return (await deps.store.totp.begin(userId, secret, deps.clock.now())) ? { kind: 'started', secret } : { kind: 'enrolled' };
}

export type EnrolmentResult =
  | { readonly kind: 'confirmed'; readonly recoveryCodes: readonly string[] }
  | { readonly kind: 'wrong-code' }
  | { readonly kind: 'locked' }
  /** Nothing to confirm: enrolment was not started, or is confirmed already. */
  | { readonly kind: 'not-started' };

/**
 * Confirms the enrolment with a code the app made (proof that the secret reached it), and
 * issues the recovery codes, shown once: only their hashes are kept.
 */
export async function confirmTotpEnrolment(deps: FlowDeps, user: UserRef, typed: string, limits: CodeLimits): Promise<EnrolmentResult> {
  const now = deps.clock.now();
  const pending = await deps.store.totp.get(user.id);
  if (!pending || pending.confirmedAt !== null) return { kind: 'not-started' };
  const attempt = await Attempt.reserve(deps.store.rateLimits, limits.limits, limits.windowMs, now);
  if (isRefusal(attempt)) return locked(deps, user, 'enrolment', attempt);
  const step = matchTotp(pending.secret, typed.slice(0, 64), now);
  if (step === null) return failed(deps, user, 'enrolment', { kind: 'wrong-code' });
  const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  const confirmed = await transactionWithEvents(deps, async (tx, record) => {
    const confirmedRecord = await tx.totp.confirm(user.id, step, now);
    if (confirmedRecord) {
      await tx.recoveryCodes.replace(
        user.id,
        recoveryCodes.map((code) => hashSecret(normalizeRecoveryCode(code))),
        now,
      );
      await record({ type: 'totp.enabled', ...about(user), detail: { recovery_codes: RECOVERY_CODE_COUNT } });
    }
    return confirmedRecord;
  });
  await attempt.succeeded();
  return confirmed ? { kind: 'confirmed', recoveryCodes } : { kind: 'not-started' };
}

/** Whether the user has a confirmed TOTP secret, and how many recovery codes are left. */
export async function totpStatus(deps: Pick<FlowDeps, 'store'>, userId: string): Promise<{ readonly enabled: boolean; readonly recoveryCodesLeft: number }> {
  const record = await deps.store.totp.get(userId);
  if (!record || record.confirmedAt === null) return { enabled: false, recoveryCodesLeft: 0 };
  return { enabled: true, recoveryCodesLeft: await deps.store.recoveryCodes.countUnused(userId) };
}

/** Turns one-time codes off: the secret and the recovery codes go together. */
export async function removeTotp(deps: FlowDeps, user: UserRef): Promise<boolean> {
  return transactionWithEvents(deps, async (tx, record) => {
    await tx.recoveryCodes.removeAllForUser(user.id);
    const removed = await tx.totp.remove(user.id);
    if (removed) await record({ type: 'totp.disabled', ...about(user), detail: { by: 'user' } });
    return removed;
  });
}

export type CodeCheck =
  | { readonly kind: 'accepted'; readonly method: 'totp' | 'recovery' }
  | { readonly kind: 'wrong-code' }
  /** A TOTP code right for its step, but that step (or a later one) was used already. */
  | { readonly kind: 'replayed' }
  | { readonly kind: 'locked' };

/**
 * The code asked after the password: a TOTP code of the current window, used at most once
 * (RFC 6238 §5.2), or one of the recovery codes, each used once. A wrong or replayed code
 * stays counted against `limits`, as a wrong password does.
 */
export async function checkSecondFactor(deps: FlowDeps, user: UserRef, typed: string, limits: CodeLimits): Promise<CodeCheck> {
  const now = deps.clock.now();
  const attempt = await Attempt.reserve(deps.store.rateLimits, limits.limits, limits.windowMs, now);
  const input = typed.slice(0, 64);
  if (isRefusal(attempt)) {
    // The lockout is for guessable codes: a recovery code (50 bits, each used once) is the
    // way back in for the person whose codes a guesser has locked, and stays open.
    if (await useRecoveryCode(deps, user, input, now)) return { kind: 'accepted', method: 'recovery' };
    return locked(deps, user, 'sign_in', attempt);
  }
  const totp = await deps.store.totp.get(user.id);
  if (!totp || totp.confirmedAt === null) return failed(deps, user, 'sign_in', { kind: 'wrong-code' });
  const step = matchTotp(totp.secret, input, now);
  if (step !== null) {
    // One statement decides: the step must be later than the last one accepted.
    if (!(await deps.store.totp.useStep(user.id, step))) return failed(deps, user, 'sign_in', { kind: 'replayed' });
    await attempt.succeeded();
    return { kind: 'accepted', method: 'totp' };
  }
  if (await useRecoveryCode(deps, user, input, now)) {
    await attempt.succeeded();
    return { kind: 'accepted', method: 'recovery' };
  }
  return failed(deps, user, 'sign_in', { kind: 'wrong-code' });
}

/** Uses up `input` as one of the user's recovery codes, if it is one; each works once. */
async function useRecoveryCode(deps: FlowDeps, user: UserRef, input: string, now: number): Promise<boolean> {
  const recovery = normalizeRecoveryCode(input);
  if (!/^[a-z0-9]{10}$/.test(recovery) || !(await deps.store.recoveryCodes.consume(user.id, hashSecret(recovery), now))) return false;
  await deps.events.emit({
    type: 'second_factor.recovery_code_used',
    ...about(user),
    detail: { recovery_codes_left: await deps.store.recoveryCodes.countUnused(user.id) },
  });
  return true;
}

/** A code refused without looking, its limit used up: counted per limit and window, not written per request (core/events.ts). */
async function locked(deps: FlowDeps, user: UserRef, during: 'sign_in' | 'enrolment', refusal: Refusal): Promise<{ readonly kind: 'locked' }> {
  await deps.events.refused({ type: 'second_factor.failed', ...about(user), detail: { reason: 'locked', during } }, refusal.limit.key, refusal.endsAt);
  return { kind: 'locked' };
}

/** The person a code is typed for, as events name them. */
export interface UserRef {
  readonly id: string;
  readonly username: string;
}

function about(user: UserRef): { userId: string; username: string } {
  return { userId: user.id, username: user.username };
}

const FAILURE_REASONS = { 'wrong-code': 'wrong_code', replayed: 'replayed' } as const;

/** Records a refused code (`second_factor.failed`) and answers with the refusal. */
async function failed<T extends { readonly kind: keyof typeof FAILURE_REASONS }>(
  deps: FlowDeps,
  user: UserRef,
  during: 'sign_in' | 'enrolment',
  refusal: T,
): Promise<T> {
  await deps.events.emit({ type: 'second_factor.failed', ...about(user), detail: { reason: FAILURE_REASONS[refusal.kind], during } });
  return refusal;
}

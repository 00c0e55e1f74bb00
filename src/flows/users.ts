/**
 * What operators (the `tessera user` commands) and people (`/account`, a reset link) do to
 * accounts. Each change and its event are one transaction; a change that takes access away
 * (disabling, removing, a new password) ends the user's browser sessions in it too. Tokens
 * need nothing more: every check of an access or refresh token reads the user and the
 * grant from the store, so on every instance they stop working with the next request.
 */
import { hashSecret, randomToken } from '../core/crypto.ts';
import { RESET_PASSWORD_PATH } from '../core/endpoints.ts';
import { hashPassword, parsePasswordHash } from '../core/password.ts';
import type { OperatorRole } from '../core/scopes.ts';
import type { PasswordResetRecord, SessionRecord, Stores, UserProfileChanges, UserRecord } from '../store/types.ts';
import { transactionWithEvents, type RecordEvent } from './events.ts';
import type { AuditEvent } from '../core/events.ts';
import { endSessionsIn, recordEnded, type EndedBy } from './session/session.ts';
import { checkCurrentPassword, type Busy, type Limited, type PasswordCheckDeps } from './sign-in.ts';
import { removeSecondFactorsIn } from './second-factor/reset.ts';
import type { FlowDeps } from './types.ts';
import type { Locale } from '../config/locales.ts';

/** What account changes need: no token issuer, so the command line can run them. */
export type AccountDeps = Pick<FlowDeps, 'store' | 'clock' | 'config' | 'events' | 'mail'>;

/** Passwords shorter than this are refused (NIST SP 800-63B §5.1.1.1: at least 8). */
export const MIN_PASSWORD_LENGTH = 8;

/** A password hash no password matches: an account made with a passkey, or through a provider. */
export const NO_PASSWORD = '!';

/** Whether the account has a password to sign in with (and to give as the current one). */
export function hasPassword(user: Pick<UserRecord, 'passwordHash'>): boolean {
  return parsePasswordHash(user.passwordHash) !== null;
}
/** Longer ones are refused too: argon2 would hash them, but nobody types more. */
export const MAX_PASSWORD_LENGTH = 1024;

/** `tessera user reset-link` default: a link lasts an hour. */
export const DEFAULT_RESET_TTL_SECONDS = 3600;

/** Why a password cannot be used, or null. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `the password must be at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password must be at most ${MAX_PASSWORD_LENGTH} characters`;
  return null;
}

const about = (user: UserRecord) => ({ userId: user.id, username: user.username });

/**
 * Disables (ending every session, revoking every grant and spending every reset link at once) or enables an account.
 * Returns the sessions it ended, whose apps the caller tells (flows/logout/backchannel.ts).
 */
export async function setUserDisabled(deps: AccountDeps, user: UserRecord, disabled: boolean): Promise<SessionRecord[]> {
  return transactionWithEvents(deps, (tx, record) => setDisabledIn(deps, tx, record, user, disabled));
}

/**
 * `setUserDisabled`'s writes, inside a transaction the caller holds (a SCIM change that also
 * renames the person commits both or neither). `by` says who did it in the events.
 */
export async function setDisabledIn(
  deps: Pick<AccountDeps, 'clock'>,
  tx: Stores,
  record: RecordEvent,
  user: UserRecord,
  disabled: boolean,
  by: EndedBy = 'operator',
): Promise<SessionRecord[]> {
  await tx.users.setDisabled(user.id, disabled);
  const ended = disabled ? await endSessionsIn(tx, user.id) : [];
  // A reset link given out before is spent, not paused: enabling the account again must not
  // bring back a link that may have gone astray while it was disabled.
  if (disabled) await tx.passwordResets.spendAllForUser(user.id, deps.clock.now());
  // Their grants are revoked, not only paused: enabling the account again must not bring
  // back the access and refresh tokens issued before. Apps ask them again.
  const revoked = disabled ? await revokeGrantsIn(tx, record, user.id, deps.clock.now(), by) : 0;
  await record({
    type: disabled ? 'user.disabled' : 'user.enabled',
    ...about(user),
    detail: disabled ? { sessions_ended: ended.length, grants_revoked: revoked, by } : { by },
  });
  await recordEnded(record, user, ended, by);
  return ended;
}

/**
 * Revokes every grant of `userId` inside `tx`, and with them every access and refresh token
 * issued under them, each with its `grant.revoked` event (`by`); how many this revoked.
 */
async function revokeGrantsIn(tx: Stores, record: RecordEvent, userId: string, now: number, by: string): Promise<number> {
  let revoked = 0;
  for (const grant of await tx.grants.listForUser(userId)) {
    if (!(await tx.grants.revoke(grant.id, now))) continue;
    revoked += 1;
    await record({ type: 'grant.revoked', userId, clientId: grant.clientId, grantId: grant.id, detail: { by } });
  }
  return revoked;
}

/**
 * Removes an account and everything issued to it: its sessions, its device requests, its
 * grants (with their codes and refresh tokens), its passkeys, one-time code secret and
 * recovery codes, and its reset links. Its events stay. Returns the sessions it ended.
 */
export async function removeUser(deps: AccountDeps, user: UserRecord): Promise<SessionRecord[]> {
  return transactionWithEvents(deps, async (tx, record) => {
    const ended = await endSessionsIn(tx, user.id);
    await tx.devices.removeForUser(user.id);
    await removeSecondFactorsIn(tx, user.id);
    await tx.webauthnChallenges.removeForUser(user.id);
    const grants = await tx.grants.removeForUser(user.id);
    await tx.users.remove(user.id);
    await record({ type: 'user.removed', ...about(user), detail: { grants_removed: grants, by: 'operator' } });
    await recordEnded(record, user, ended, 'operator');
    return ended;
  });
}

/**
 * Changes the standard claims given (null clears one); `updated_at` (OIDC Core §5.1) becomes
 * now. With `expectedUpdatedAt` (an If-Match), only if the user is still at that version:
 * false, with nothing written, when they changed since.
 */
/** Whether `next` is another address than `current` (addresses compare without case; none is ''). */
export function addressChanged(current: string | null, next: string | null): boolean {
  return (next ?? '').toLowerCase() !== (current ?? '').toLowerCase();
}

/**
 * When a person's address changes, whoever set it: what was mailed to the old one ends, the
 * reset links (whoever still reads that mailbox could set the password of the account that has
 * left it) and a change waiting to be confirmed (it would undo this one).
 */
export async function endMailedLinks(tx: Stores, userId: string, now: number): Promise<void> {
  await tx.emailChanges.spendAllForUser(userId, now);
  await tx.passwordResets.spendAllForUser(userId, now);
}

/**
 * Writes `changes` to the user inside `tx`, `updated_at` now. A new address (another than the
 * one it has, case aside) ends what was mailed to the old one (`endMailedLinks`) and is not
 * verified unless `changes` says it is: the old one's verification says nothing of it (OIDC
 * Core §5.1 email_verified). Every way a profile is written but the person's own confirmed
 * change goes through here: an operator (the command, the admin API, the console) and SCIM.
 */
export async function updateProfileIn(tx: Stores, user: Pick<UserRecord, 'id' | 'email'>, changes: UserProfileChanges, now: number): Promise<void> {
  const emailChanged = changes.email !== undefined && addressChanged(user.email, changes.email);
  if (emailChanged) await endMailedLinks(tx, user.id, now);
  await tx.users.update(user.id, emailChanged && changes.emailVerified === undefined ? { ...changes, emailVerified: false } : changes, now);
}

export async function updateUser(
  deps: AccountDeps,
  user: UserRecord,
  changes: UserProfileChanges,
  role?: OperatorRole | null,
  expectedUpdatedAt?: number,
): Promise<boolean> {
  // Always later than the version read, so that every change gives a new entity tag.
  const now = Math.max(deps.clock.now(), user.updatedAt + 1);
  return transactionWithEvents(deps, async (tx, record) => {
    if (expectedUpdatedAt !== undefined && !(await tx.users.touch(user.id, expectedUpdatedAt, now))) return false;
    if (Object.keys(changes).length > 0) {
      await updateProfileIn(tx, user, changes, now);
      await record({ type: 'user.updated', ...about(user), detail: { fields: Object.keys(changes).join(' '), by: 'operator' } });
    }
    if (role !== undefined && role !== user.role) {
      await tx.users.setRole(user.id, role);
      await record({ type: 'user.role_changed', ...about(user), detail: { role, previous_role: user.role, by: 'operator' } });
    }
    return true;
  });
}

/**
 * A new password, inside `tx`: the hash set, every reset link of the person spent (a link sent
 * before the change would undo it: whoever read that mail could set another) and their
 * sessions (and sign-ins waiting for a code) ended but `keepSession`. Returns the sessions it ended. Every way a password is set
 * goes through here: the person's own change, an operator's, a reset link and SCIM.
 */
export async function setPasswordIn(tx: Stores, userId: string, hash: string, now: number, keepSession?: string): Promise<SessionRecord[]> {
  await tx.users.setPasswordHash(userId, hash);
  await tx.passwordResets.spendAllForUser(userId, now);
  return endSessionsIn(tx, userId, keepSession);
}

/**
 * Sets a new password (`setPasswordIn`) and records it. The hash is computed first: a
 * transaction awaits nothing but the store.
 */
async function replacePassword(
  deps: AccountDeps,
  user: UserRecord,
  password: string | { readonly hash: string },
  type: 'user.password_set' | 'password.changed',
  keepSession?: string,
): Promise<SessionRecord[]> {
  const hash = typeof password === 'string' ? await hashPassword(password, deps.config.passwordHash) : password.hash;
  return transactionWithEvents(deps, async (tx, record) => {
    const ended = await setPasswordIn(tx, user.id, hash, deps.clock.now(), keepSession);
    await record({ type, ...about(user), detail: { sessions_ended: ended.length } });
    await recordEnded(record, user, ended, type === 'user.password_set' ? 'operator' : 'password_change');
    return ended;
  });
}

/** An operator sets the password (`tessera user set-password`); returns the sessions it ended. */
export async function setUserPassword(deps: AccountDeps, user: UserRecord, password: string | { readonly hash: string }): Promise<SessionRecord[]> {
  return replacePassword(deps, user, password, 'user.password_set');
}

export type PasswordChange =
  | { readonly kind: 'done'; readonly endedSessions: readonly SessionRecord[] }
  | { readonly kind: 'wrong_password' }
  | { readonly kind: 'invalid'; readonly problem: string }
  | Limited
  | Busy;

/**
 * The person changes their own password, proving they know the current one; their other
 * sessions end. Both hashes are computed on the password queue, the current one checked
 * under the sign-in limits (flows/sign-in.ts), from `ip` and `browser` (its known-browser token).
 */
export async function changePassword(
  deps: AccountDeps & PasswordCheckDeps,
  user: UserRecord,
  sessionIdHash: string,
  request: { readonly current: string; readonly next: string; readonly ip: string; readonly browser?: string | null },
): Promise<PasswordChange> {
  const check = await checkCurrentPassword(deps, user, {
    password: request.current.slice(0, MAX_PASSWORD_LENGTH),
    ip: request.ip,
    browser: request.browser ?? null,
  });
  if (check.kind === 'wrong') return { kind: 'wrong_password' };
  if (check.kind !== 'right') return check;
  const problem = passwordProblem(request.next);
  if (problem) return { kind: 'invalid', problem };
  const hash = await deps.passwords.hash(request.next, deps.config.passwordHash, request.ip, { trusted: true });
  if (hash === null) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  return { kind: 'done', endedSessions: await replacePassword(deps, user, { hash }, 'password.changed', sessionIdHash) };
}

/**
 * A single-use link on the issuer where the person sets a new password. Only the token's
 * hash is stored; the link is shown once.
 */
export async function createResetLink(deps: AccountDeps, user: UserRecord, ttlSeconds: number): Promise<{ url: string; expiresAt: number }> {
  return transactionWithEvents(deps, (tx, record) => issueResetLink(deps, tx, record, user, ttlSeconds, 'operator'));
}

/**
 * Makes a reset link inside the transaction `tx`, with its event (`by`: who asked for it), and
 * returns it with that event (a message that carries the link names it). The URL is built
 * from the issuer alone: never from a request's Host or forwarded headers.
 */
export async function issueResetLink(
  deps: Pick<FlowDeps, 'clock' | 'config'>,
  tx: Stores,
  record: RecordEvent,
  user: UserRecord,
  ttlSeconds: number,
  by: 'operator' | 'email',
): Promise<{ url: string; expiresAt: number; event: AuditEvent }> {
  const token = randomToken(32);
  const now = deps.clock.now();
  const expiresAt = now + ttlSeconds * 1000;
  // An operator's link is handed on by hand: only the newest works, and one given out earlier
  // (perhaps to the wrong person) ends. Mailed links all go to the person's own address: a new
  // one ends none, or anyone could cancel a person's link (and, past the hourly budget per
  // address, keep them from another) by asking for theirs again. Using any link ends them all.
  if (by === 'operator') await tx.passwordResets.spendAllForUser(user.id, now);
  // A mailed link names the address it went to: used, it shows its user reads that mailbox
  // (`proveAddressIn`). An operator's proves nothing of the kind.
  const mailedTo = by === 'email' ? user.email : null;
  await tx.passwordResets.create({ tokenHash: hashSecret(token), userId: user.id, createdAt: now, expiresAt, usedAt: null, mailedTo });
  const event = await record({ type: 'user.reset_link_created', ...about(user), detail: { expires_at: new Date(expiresAt).toISOString(), by } });
  return { url: `${deps.config.issuer}${RESET_PASSWORD_PATH}?${new URLSearchParams({ token }).toString()}`, expiresAt, event };
}

/** The live reset link `token` names, or null (unknown, used or expired). */
export async function findResetLink(deps: AccountDeps, token: string): Promise<PasswordResetRecord | null> {
  if (token.length === 0 || token.length > 128) return null;
  return deps.store.passwordResets.find(hashSecret(token), deps.clock.now());
}

/** What `proveAddressIn` took from an account whose self-asserted address a mailed reset link proved. */
export interface RemovedWaysIn {
  readonly passkeys: number;
  /** Its TOTP secret (and with it its recovery codes). */
  readonly totp: boolean;
  /** Its linked upstream identities. */
  readonly identities: number;
  /** Its grants: the apps it had approved, whose tokens now stop working. */
  readonly grants: number;
}

/** Whether any way in was removed: what the page after the reset tells the person, and the `second_factor.reset` event records. */
function removedAnyWayIn(removed: RemovedWaysIn | null): boolean {
  return removed !== null && (removed.passkeys > 0 || removed.totp || removed.identities > 0 || removed.grants > 0);
}

/**
 * What a reset link MAILED to the account's address proves when it is used: that whoever used it
 * reads that mailbox. On an account whose address was not verified, inside `tx`, the address
 * becomes verified (OIDC Core §5.1 email_verified: "the End-User's e-mail address has been
 * verified"; they showed they receive its mail).
 *
 * When the address was self-asserted besides (`UserRecord.emailSelfAsserted`: the account's
 * maker chose it at sign-up, and it was neither proved nor replaced since), every other way in
 * set up before it was proved goes: its passkeys, TOTP secret and recovery codes, linked
 * upstream identities, a new address waiting for its link, and its grants (the access and
 * refresh tokens apps hold). Such an account may have been made by someone else with the owner's
 * address, waiting for them: "Pre-hijacked accounts" (Sudhodanan & Paverd, USENIX Security
 * 2022). Its owner, told on signing up that the address has an account, sets a password through
 * "Forgot password?"; what the attacker added would let them back in to whatever the owner then
 * does: a passkey, codes or an upstream identity (the paper's trojan identifier attack), an
 * app's refresh token (unexpired session) or a new address waiting for its link (unexpired email
 * change). The paper's remedy: verify the address before the account is trusted, and end what
 * was set up before it was. An address an operator or SCIM gave was chosen by neither an
 * attacker nor the person: what the person set up on it is theirs, and stays.
 *
 * An operator's link (printed or shown, never mailed by the server) proves nothing of the
 * address, nor does one whose address is not the account's now (compared without case): both
 * leave everything as it was. Returns what was removed, or null when nothing was.
 */
export async function proveAddressIn(
  deps: Pick<AccountDeps, 'clock'>,
  tx: Stores,
  record: RecordEvent,
  reset: PasswordResetRecord,
): Promise<RemovedWaysIn | null> {
  if (reset.mailedTo === null) return null;
  // Read in the transaction that used the link: a change of address spends the link in its own.
  const user = await tx.users.get(reset.userId);
  if (user === null || user.emailVerified || addressChanged(user.email, reset.mailedTo)) return null;
  const now = Math.max(deps.clock.now(), user.updatedAt + 1);
  // Verified, the address is no longer self-asserted (the store clears it in this statement).
  await tx.users.update(user.id, { emailVerified: true }, now);
  await record({ type: 'user.email_verified', ...about(user), detail: { by: 'password_reset' } });
  if (!user.emailSelfAsserted) return null;
  const { passkeys, totp } = await removeSecondFactorsIn(tx, user.id);
  const identities = await tx.linkedIdentities.removeAllForUser(user.id);
  // A new address asked for before would move the account to whoever asked, once its link is followed.
  await tx.emailChanges.spendAllForUser(user.id, now);
  const grants = await revokeGrantsIn(tx, record, user.id, now, 'password_reset');
  const removed = { passkeys, totp, identities, grants };
  if (!removedAnyWayIn(removed)) return null;
  await record({
    type: 'second_factor.reset',
    ...about(user),
    detail: { passkeys_removed: passkeys, totp_removed: totp, identities_removed: identities, grants_revoked: grants, by: 'password_reset' },
  });
  return removed;
}

export type ResetResult =
  | {
      readonly kind: 'done';
      readonly user: UserRecord;
      readonly endedSessions: readonly SessionRecord[];
      /** What a mailed link's proof of the self-asserted address removed (`proveAddressIn`); null when it removed nothing. */
      readonly waysInRemoved: RemovedWaysIn | null;
    }
  | { readonly kind: 'invalid_link' }
  | { readonly kind: 'invalid'; readonly problem: string }
  | Busy;

/**
 * Uses a reset link: exactly one caller uses it up (one conditional UPDATE), in the same
 * transaction as the new password, the end of every session and the event. The new hash is
 * computed on the password queue, from `ip`, like every hash a browser can ask for: posts of
 * one live link all hash before one of them uses it up, and on libuv's pool they would hold
 * the threads that sign tokens.
 */
/** The language of a message to `user`: theirs where the server offers it, else the server's default (or `fallback`, the page's). */
export function mailLocale(deps: Pick<FlowDeps, 'config'>, user: UserRecord, fallback?: Locale): Locale {
  const offered = deps.config.site.locales as readonly string[];
  if (user.locale !== null) {
    const exact = offered.find((locale) => locale.toLowerCase() === user.locale!.toLowerCase());
    if (exact) return exact as Locale;
    const language = offered.find((locale) => locale.split('-')[0]!.toLowerCase() === user.locale!.split('-')[0]!.toLowerCase());
    if (language) return language as Locale;
  }
  return fallback ?? deps.config.site.defaultLocale;
}

export async function resetPassword(
  deps: AccountDeps & Pick<PasswordCheckDeps, 'passwords'>,
  token: string,
  password: string,
  ip: string,
): Promise<ResetResult> {
  const problem = passwordProblem(password);
  if (problem) return { kind: 'invalid', problem };
  const found = await findResetLink(deps, token);
  const user = found ? await deps.store.users.get(found.userId) : null;
  if (!found || !user || user.disabled) return { kind: 'invalid_link' };
  // Trusted: whoever holds a live link was sent it by an operator, or at the account's address.
  const hash = await deps.passwords.hash(password, deps.config.passwordHash, ip, { trusted: true });
  if (hash === null) return { kind: 'busy', retryAfterSeconds: deps.passwords.retryAfterSeconds() };
  const done = await transactionWithEvents(deps, async (tx, record) => {
    const reset = await tx.passwordResets.consume(found.tokenHash, deps.clock.now());
    if (!reset) return null;
    // Using one link ends every other link of the person too.
    const sessions = await setPasswordIn(tx, reset.userId, hash, deps.clock.now());
    const event = await record({ type: 'user.password_reset', ...about(user), detail: { sessions_ended: sessions.length } });
    const waysInRemoved = await proveAddressIn(deps, tx, record, reset);
    // The person hears of it at their address, in the same transaction: a reset they did not make is noticed.
    if (deps.mail && user.email)
      await deps.mail.queue(tx, event, {
        kind: 'password_changed',
        to: { address: user.email, name: user.name ?? '' },
        locale: mailLocale(deps, user),
        values: { username: user.username, at: event.at },
      });
    await recordEnded(record, user, sessions, 'password_change');
    return { sessions, waysInRemoved };
  });
  return done ? { kind: 'done', user, endedSessions: done.sessions, waysInRemoved: done.waysInRemoved } : { kind: 'invalid_link' };
}

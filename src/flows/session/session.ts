/**
 * The browser session, from "the person proved who they are" to "the session ended": each
 * change is one transaction with its events, and the apps that received an ID token in a
 * session that ends are sent logout tokens (Back-Channel Logout 1.0 §2.5) once it has
 * committed. The browser is reached through a cookie port (cookies.ts), never Fastify.
 */
import type { AuthMethod } from '../../core/auth-methods.ts';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import type { RequestOrigin } from '../../core/events.ts';
import type { SessionRecord, Stores, UserRecord } from '../../store/types.ts';
import { transactionWithEvents, type RecordEvent } from '../events.ts';
import { sendLogoutTokens, type LogoutLog } from '../logout/backchannel.ts';
import type { FlowDeps } from '../types.ts';
import { cookieNames, usableCookie, type CookiePort } from './cookies.ts';

/** The browser a request came from: its cookies, and its address and user agent for the record. */
export interface Browser extends RequestOrigin {
  readonly cookies: CookiePort;
  readonly ip: string;
  /** Where a logout token that could not be delivered is reported. */
  readonly log: LogoutLog;
}

/**
 * What ended a session (`logout`'s `detail.by`): the person signing out (`user`), an app's
 * logout request (`rp`), "Sign out everywhere" (`everywhere`), a new password
 * (`password_change`), an operator's command (`operator`), or another person signing in in
 * the same browser (`sign_in`).
 */
export type EndedBy = 'user' | 'rp' | 'everywhere' | 'password_change' | 'operator' | 'sign_in';

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

/** The browser's live session, if its cookie names one. */
export async function currentSession(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'config'>,
  browser: { readonly cookies: Pick<CookiePort, 'read'> },
): Promise<SessionRecord | null> {
  const value = browser.cookies.read(cookieNames(deps.config).session);
  return usableCookie(value) ? deps.store.sessions.get(hashSecret(value), deps.clock.now()) : null;
}

/** The signed-in session and its user, or null when there is no live session or the account is disabled. */
export async function signedIn(
  deps: Pick<FlowDeps, 'store' | 'clock' | 'config'>,
  browser: { readonly cookies: Pick<CookiePort, 'read'> },
): Promise<{ readonly session: SessionRecord; readonly user: UserRecord } | null> {
  const session = await currentSession(deps, browser);
  if (!session) return null;
  const user = await sessionUser(deps, session);
  return user ? { session, user } : null;
}

/** Records, inside the transaction that ended them, that `ended` sessions of `user` ended and why. */
export async function recordEnded(
  record: RecordEvent,
  user: { readonly id: string; readonly username?: string | null },
  ended: readonly SessionRecord[],
  by: EndedBy,
  clientId: string | null = null,
): Promise<void> {
  if (ended.length === 0) return;
  await record({ type: 'logout', userId: user.id, username: user.username ?? null, clientId, detail: { by, sessions_ended: ended.length } });
}

/** The deps whose events name the browser's address and user agent. */
function fromBrowser(deps: FlowDeps, browser: Browser): FlowDeps {
  return { ...deps, events: deps.events.forRequest({ ip: browser.ip, userAgent: browser.userAgent }) };
}

/** A completed sign-in, recorded as `signin.succeeded`: `clientId`, the app whose request it interrupted. */
export interface SignInRecord {
  readonly clientId: string | null;
}

/**
 * Signs `user` in in this browser, whichever way they proved themselves (`amr`, RFC 8176):
 * a new session id at every sign-in, so an id planted before it is worth nothing; the OIDC
 * session (`sid`) continues when the same person signs in again, and an earlier session of
 * someone else in this browser ends, with its logout tokens sent. `signIn`: the sign-in to
 * record (null when a session only gains a method, as when one-time codes are turned on).
 * `guard`, run first in the same transaction, may refuse the whole (a waiting sign-in
 * already used): then nothing is written and null is returned. `authTime`: when the person
 * last authenticated, now unless a session that only gains a method keeps its own (OIDC
 * `auth_time` is when they signed in, not when they set something up), or an upstream
 * provider says they signed in there earlier (flows/upstream/sign-in.ts).
 */
export async function beginSession(
  deps: FlowDeps,
  browser: Browser,
  user: UserRecord,
  amr: readonly AuthMethod[],
  signIn: SignInRecord | null,
  { guard = async () => true, authTime }: { readonly guard?: (tx: Stores) => Promise<boolean>; readonly authTime?: number } = {},
): Promise<SessionRecord | null> {
  const name = cookieNames(deps.config).session;
  const previousValue = browser.cookies.read(name);
  const previousHash = usableCookie(previousValue) ? hashSecret(previousValue) : null;
  const now = deps.clock.now();
  const previous = previousHash === null ? null : await deps.store.sessions.get(previousHash, now);
  const value = randomToken(32);
  const session: SessionRecord = {
    idHash: hashSecret(value),
    sid: continuedSid(previous, user) ?? randomToken(16),
    userId: user.id,
    authTime: authTime ?? now,
    createdAt: now,
    expiresAt: now + deps.config.lifetimes.session * 1000,
    amr,
    ip: browser.ip,
    userAgent: browser.userAgent?.slice(0, 256) ?? null,
  };
  const outcome = await transactionWithEvents(fromBrowser(deps, browser), async (tx, record) => {
    if (!(await guard(tx))) return null;
    // The same OIDC session goes on under a new cookie, its row updated in place: a redemption of
    // one of its codes waiting on the row follows the update, where it would find a deleted row
    // gone and an inserted one unseen, and refuse the code (SessionStore.continue).
    const continued = previousHash !== null && previous?.sid === session.sid && (await tx.sessions.continue(previousHash, session)) !== null;
    const replaced = continued || previousHash === null ? null : await tx.sessions.remove(previousHash);
    // Anyone else's session ends here.
    const ended = replaced !== null && replaced.sid !== session.sid ? replaced : null;
    if (ended) await recordEnded(record, { id: ended.userId }, [ended], 'sign_in');
    if (!continued) await tx.sessions.create(session);
    if (signIn) await record({ type: 'signin.succeeded', userId: user.id, username: user.username, clientId: signIn.clientId, detail: { amr: amr.join(' ') } });
    return { ended };
  });
  if (outcome === null) return null;
  browser.cookies.set(name, value, deps.config.lifetimes.session);
  if (outcome.ended) await sendLogoutTokens(deps, [outcome.ended], browser.log);
  return session;
}

/**
 * Ends the browser's session (`by`: the person, or an app's logout request for `clientId`)
 * and clears its cookie; the apps that received an ID token in it are sent logout tokens.
 * Returns the session it ended, if any.
 */
export async function endSession(deps: FlowDeps, browser: Browser, by: 'user' | 'rp', clientId: string | null = null): Promise<SessionRecord | null> {
  const name = cookieNames(deps.config).session;
  const value = browser.cookies.read(name);
  browser.cookies.clear(name);
  if (!usableCookie(value)) return null;
  const ended = await transactionWithEvents(fromBrowser(deps, browser), async (tx, record) => {
    const removed = await tx.sessions.remove(hashSecret(value));
    if (removed) await recordEnded(record, { id: removed.userId }, [removed], by, clientId);
    return removed;
  });
  if (ended) await sendLogoutTokens(deps, [ended], browser.log);
  return ended;
}

/**
 * "Sign out everywhere": every session of `user` ends, this browser's included, and the
 * apps that received an ID token in any of them are told (Back-Channel Logout 1.0).
 */
/**
 * Ends a person's sessions inside `tx`, but `keepSession`, and with them their sign-ins waiting
 * for a one-time code: one completed after would be a session begun on the password the change
 * was made to shut out (a new password, "Sign out everywhere", a disabled account). Returns the
 * sessions it ended. Every way a person's sessions end together goes through here.
 */
export async function endSessionsIn(tx: Stores, userId: string, keepSession?: string): Promise<SessionRecord[]> {
  const ended = await tx.sessions.removeForUser(userId, keepSession);
  await tx.pendingSignIns.removeForUser(userId);
  return ended;
}

export async function endEverywhere(deps: FlowDeps, browser: Browser, user: UserRecord): Promise<readonly SessionRecord[]> {
  browser.cookies.clear(cookieNames(deps.config).session);
  const ended = await transactionWithEvents(fromBrowser(deps, browser), async (tx, record) => {
    const removed = await endSessionsIn(tx, user.id);
    await recordEnded(record, user, removed, 'everywhere');
    return removed;
  });
  await sendLogoutTokens(deps, ended, browser.log);
  return ended;
}

/** The user's live sessions, newest first (the account page lists them). */
export function liveSessions(deps: Pick<FlowDeps, 'store' | 'clock'>, userId: string): Promise<SessionRecord[]> {
  return deps.store.sessions.listForUser(userId, deps.clock.now());
}

/**
 * SP-initiated single logout (SAML Profiles §4.4): an SP's LogoutRequest ends the browser's
 * session when it names the person signed in there, the same sign-out as OpenID Connect's
 * (the apps that got an ID token in it are sent logout tokens, Back-Channel Logout 1.0).
 */
import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../../core/crypto.ts';
import type { SessionRecord, UserRecord } from '../../store/types.ts';
import type { LogoutRequest } from './request.ts';
import { nameIdOf } from './response.ts';

/**
 * What a LogoutRequest does to the browser's session: end it (it is the person's the request
 * names), nothing (there is none, or another of theirs is named by SessionIndex), or refuse
 * (the session is someone else's: an SP never signs out a person it does not know as this one).
 */
export function logoutDecision(
  request: LogoutRequest,
  signedIn: { readonly user: UserRecord; readonly session: SessionRecord } | null,
): 'end' | 'nothing' | 'other-person' {
  if (signedIn === null) return 'nothing';
  const named = request.sessionIndexes.includes(signedIn.session.sid);
  // A transient NameID is not kept, so it cannot be told: the SessionIndex the SP was given
  // (the session's sid) must name this browser's session.
  if (request.sp.nameIdFormat === 'transient') return named ? 'end' : 'nothing';
  if (nameIdOf(request.sp, signedIn.user, request.sp.nameIdFormat) !== request.nameId) return 'other-person';
  // §3.7.1 SessionIndex: "the identity provider ... MUST invalidate only those session(s)".
  return request.sessionIndexes.length === 0 || named ? 'end' : 'nothing';
}

/**
 * A LogoutRequest checked, waiting for the GET that carries the browser's cookies: a request
 * POSTed from the SP's page is cross-site, and SameSite=Lax keeps the session cookie off it.
 */
export interface PendingLogout {
  readonly sp: string;
  readonly id: string;
  readonly nameId: string;
  readonly sessionIndexes: readonly string[];
  readonly relayState: string | null;
  readonly at: number;
}

const logoutMac = (secret: Uint8Array, payload: string) => createHmac('sha256', secret).update(`saml logout ${payload}`).digest('base64url');

export function sealLogout(secret: Uint8Array, pending: PendingLogout): string {
  const payload = Buffer.from(JSON.stringify(pending)).toString('base64url');
  return `${payload}.${logoutMac(secret, payload)}`;
}

/** The pending logout `sealed` carries; null when it was changed or is older than `lifetime` seconds. */
export function openLogout(secret: Uint8Array, sealed: string, now: number, lifetime: number): PendingLogout | null {
  const [payload = '', tag = '', extra] = sealed.split('.');
  if (extra !== undefined || payload === '' || !constantTimeEqual(tag, logoutMac(secret, payload))) return null;
  try {
    const pending = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as PendingLogout;
    return typeof pending.at === 'number' && Math.abs(now - pending.at) <= lifetime * 1000 ? pending : null;
  } catch {
    return null;
  }
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { constantTimeEqual, hashSecret, randomToken } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { Config } from '../config/index.ts';
import type { SessionRecord, Store } from '../store/types.ts';
import type { Clock } from '../core/clock.ts';
import { PASSWORD_ONLY, type AuthMethod } from '../core/auth-methods.ts';

/**
 * Cookie names. Over https they take the `__Host-` prefix, which the browser accepts only
 * for Secure, host-only, Path=/ cookies, so a sibling subdomain cannot plant them.
 */
export function cookieNames(config: Config): { session: string; csrf: string; knownBrowser: string } {
  const prefix = config.issuer.startsWith('https:') ? '__Host-' : '';
  return { session: `${prefix}tessera_session`, csrf: `${prefix}tessera_csrf`, knownBrowser: `${prefix}tessera_browser` };
}

function cookieOptions(config: Config, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: config.issuer.startsWith('https:'),
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

export interface SessionDeps {
  readonly store: Store;
  readonly config: Config;
  readonly clock: Clock;
}

/** The signed-in browser session, if the cookie names a live one. */
export async function currentSession(deps: SessionDeps, request: FastifyRequest): Promise<SessionRecord | null> {
  const value = request.cookies[cookieNames(deps.config).session];
  if (!value || value.length > 128) return null;
  return deps.store.sessions.get(hashSecret(value), deps.clock.now());
}

/**
 * Starts a session with a new cookie, remembering how the person signed in (RFC 8176 `amr`).
 * `sid` continues the OIDC session of an earlier sign-in of the same person in this browser;
 * otherwise a new one begins.
 */
export async function startSession(
  deps: SessionDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  userId: string,
  sid: string | null,
  amr: readonly AuthMethod[] = PASSWORD_ONLY,
): Promise<SessionRecord> {
  const now = deps.clock.now();
  const value = randomToken(32);
  const session: SessionRecord = {
    idHash: hashSecret(value),
    sid: sid ?? randomToken(16),
    userId,
    authTime: now,
    createdAt: now,
    expiresAt: now + deps.config.lifetimes.session * 1000,
    amr,
    ip: request.ip,
    userAgent: request.headers['user-agent']?.slice(0, 256) ?? null,
  };
  await deps.store.sessions.create(session);
  reply.setCookie(cookieNames(deps.config).session, value, cookieOptions(deps.config, deps.config.lifetimes.session));
  return session;
}

/**
 * The known-browser token: set after a right password, it outlives sign-out for the
 * good-record period, so that this browser's next sign-ins for that username skip the wait
 * a guesser causes and go first on a full password queue (flows/sign-in.ts).
 */
export function knownBrowser(config: Config, request: FastifyRequest): string | null {
  return request.cookies[cookieNames(config).knownBrowser] ?? null;
}

export function rememberBrowser(config: Config, reply: FastifyReply, token: string): void {
  if (config.signIn.goodRecordSeconds > 0) reply.setCookie(cookieNames(config).knownBrowser, token, cookieOptions(config, config.signIn.goodRecordSeconds));
}

/** Ends the browser's session and clears its cookie; returns the session it ended, if any. */
export async function endSession(deps: SessionDeps, request: FastifyRequest, reply: FastifyReply): Promise<SessionRecord | null> {
  const name = cookieNames(deps.config).session;
  const value = request.cookies[name];
  reply.clearCookie(name, cookieOptions(deps.config));
  return value && value.length <= 128 ? deps.store.sessions.remove(hashSecret(value)) : null;
}

/**
 * CSRF defence for every form: a random token in an HttpOnly cookie, echoed in a hidden
 * field (double submit), on top of SameSite=Lax cookies and an Origin check. Returns the
 * token to put in the page, setting the cookie when the browser has none.
 */
export function csrfToken(config: Config, request: FastifyRequest, reply: FastifyReply): string {
  const name = cookieNames(config).csrf;
  const existing = request.cookies[name];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
  const token = randomToken(32);
  reply.setCookie(name, token, cookieOptions(config));
  // Later code in the same request (a page rendered after a failed check) sees the new one.
  request.cookies[name] = token;
  return token;
}

/** Refuses a form post that did not come from one of our own pages. */
export function checkCsrf(config: Config, request: FastifyRequest, submitted: unknown): void {
  const origin = request.headers.origin;
  const ours = new URL(config.issuer).origin;
  if (origin !== undefined && origin !== ours) {
    // Most often not an attack but the same server under another name (127.0.0.1 for
    // localhost): say which address the pages must be opened at.
    throw new OAuthError(
      'invalid_request',
      `the form was posted from another site (${origin.slice(0, 100)}). This server's address is ${ours}: open the page at that address and try again`,
      { status: 403 },
    );
  }
  const expected = request.cookies[cookieNames(config).csrf];
  if (typeof submitted !== 'string' || !expected || !constantTimeEqual(submitted, expected)) {
    throw new OAuthError('invalid_request', 'the form has expired; go back and try again', { status: 403 });
  }
}

/** What `safeReturnTo` resolves against: only its origin matters. */
const RETURN_BASE = new URL('http://tessera.invalid/');

/**
 * A same-server path to return to after sign-in; anything else, and anything with a control
 * or non-ASCII character in it, falls back to `/`. The value
 * is resolved as a browser resolves the Location header it ends up in (WHATWG URL: tabs and
 * newlines dropped, `\` read as `/`), so `//other.example`, `/\other.example` and
 * `/<tab>/other.example` are all seen as the other site they lead to, and what is returned
 * is the parsed path, which cannot carry a character a header may not.
 */
export function safeReturnTo(value: unknown): string {
  // Issue 12: input with a control or non-ASCII character is never a link we made, and
  // browsers disagree on what they do with one: it goes to the default page, unparsed.
  if (typeof value !== 'string' || !value.startsWith('/') || value.length > 4096 || /[^\x20-\x7e]/.test(value)) return '/';
  let url: URL;
  try {
    url = new URL(value, RETURN_BASE);
  } catch {
    return '/';
  }
  return url.origin === RETURN_BASE.origin ? `${url.pathname}${url.search}${url.hash}` : '/';
}

import type { FastifyReply, FastifyRequest } from 'fastify';
import { HOME_PATH } from '../core/endpoints.ts';
import { constantTimeEqual, randomToken } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { Config } from '../config/index.ts';
import { cookieNames, type CookiePort } from '../flows/session/cookies.ts';
import { signedIn, type Browser } from '../flows/session/session.ts';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import type { AppDeps } from './deps.ts';

export { cookieNames };

function cookieOptions(config: Config, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: config.issuer.startsWith('https:'),
    ...(maxAgeSeconds === undefined ? {} : { maxAge: maxAgeSeconds }),
  };
}

/** The cookie port of the session flow (flows/session/cookies.ts) over this request and its reply. */
export function cookiePort(config: Config, request: FastifyRequest, reply: FastifyReply): CookiePort {
  return {
    read: (name) => request.cookies[name],
    set: (name, value, maxAgeSeconds) => void reply.setCookie(name, value, cookieOptions(config, maxAgeSeconds)),
    clear: (name) => void reply.clearCookie(name, cookieOptions(config)),
  };
}

/** The browser of this request, as the session flow sees it. */
export function browserOf(deps: AppDeps, request: FastifyRequest, reply: FastifyReply): Browser {
  return { cookies: cookiePort(deps.config, request, reply), ip: request.ip, userAgent: request.headers['user-agent'] ?? null, log: request.log };
}

/** The signed-in user, or null when there is no live session or the account is disabled. */
export function signedInUser(deps: AppDeps, request: FastifyRequest): Promise<{ session: SessionRecord; user: UserRecord } | null> {
  return signedIn(deps, { cookies: { read: (name) => request.cookies[name] } });
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
      { status: 403, page: { key: 'error.otherSite', values: { origin: origin.slice(0, 100), ours } } },
    );
  }
  const expected = request.cookies[cookieNames(config).csrf];
  if (typeof submitted !== 'string' || !expected || !constantTimeEqual(submitted, expected)) {
    throw new OAuthError('invalid_request', 'the form has expired; go back and try again', { status: 403, page: { key: 'error.formExpired' } });
  }
}

/** What `safeReturnTo` resolves against: only its origin matters. */
const RETURN_BASE = new URL('http://tessera.invalid/');

/**
 * The `max_age` a sign-in page passed on (ui/pages.ts `upstreamStartUrl`, the sign-in form):
 * seconds, as the authorization request's (OIDC Core §3.1.2.1); null when there is none or it
 * is not a number. Whoever drops it only gets a session no more recent than the provider says.
 */
export function signInMaxAge(value: unknown): number | null {
  return typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : null;
}

/**
 * A same-server path to return to after sign-in; anything else, and anything with a control
 * or non-ASCII character in it, falls back to `/`. The value
 * is resolved as a browser resolves the Location header it ends up in (WHATWG URL: tabs and
 * newlines dropped, `\` read as `/`), so `//other.example`, `/\other.example` and
 * `/<tab>/other.example` are all seen as the other site they lead to, and what is returned
 * is the parsed path, which cannot carry a character a header may not, and is read as this
 * server again.
 */
export function safeReturnTo(value: unknown): string {
  // Input with a control or non-ASCII character is never a link we made, and
  // browsers disagree on what they do with one: it goes to the default page, unparsed.
  if (typeof value !== 'string' || !value.startsWith('/') || value.length > 4096 || /[^\x20-\x7e]/.test(value)) return HOME_PATH;
  let url: URL;
  try {
    url = new URL(value, RETURN_BASE);
  } catch {
    return HOME_PATH;
  }
  if (url.origin !== RETURN_BASE.origin) return HOME_PATH;
  // Dot segments are resolved away: `/.//other.example` and `/a/..//other.example` are on this
  // server, and their path, `//other.example`, is another site's address once it is a Location.
  // The path returned must be read as this server again.
  const path = `${url.pathname}${url.search}${url.hash}`;
  return new URL(path, RETURN_BASE).origin === RETURN_BASE.origin ? path : HOME_PATH;
}

/**
 * The browser's cookies as the session flow sees them: a port the HTTP layer implements
 * over the request and the reply, so that the flow never sees Fastify and a test can record
 * what it would set.
 */
import type { Config } from '../../config/index.ts';

export interface CookiePort {
  /** The value the browser sent, if any. */
  read(name: string): string | undefined;
  /** Sets a cookie for `maxAgeSeconds` (path `/`, HttpOnly, SameSite=Lax, Secure over https). */
  set(name: string, value: string, maxAgeSeconds: number): void;
  clear(name: string): void;
}

/** The cookies Tessera sets. */
export interface CookieNames {
  /** The signed-in browser session. */
  readonly session: string;
  /** A sign-in waiting for its one-time code, from the password to the code. */
  readonly pending: string;
  /** The CSRF token of every form (double submit). */
  readonly csrf: string;
  /**
   * The known-browser token: set after a right password, it outlives sign-out for the
   * good-record period, so that this browser's later sign-ins for that username skip the
   * wait a guesser causes and go first on a full password queue (flows/sign-in.ts).
   */
  readonly knownBrowser: string;
  /**
   * A sign-in away at an upstream provider: the `state` it was sent with, so that only the
   * browser that left can finish it (RFC 6749 §10.12, RFC 9700 §4.7.1).
   */
  readonly upstream: string;
  /**
   * The browser that filled in a sign-up form: a random token whose hash each sign-up it posts
   * keeps, so that the link mailed for it is used there in one step (flows/address-link.ts
   * `makerFirst`). It lives as long as a link (TESSERA_SIGN_UP_LINK_TTL), not until the
   * browser closes as the CSRF cookie does: the mail is often read after a restart.
   */
  readonly signUp: string;
}

/**
 * Over https the names take the `__Host-` prefix, which the browser accepts only for
 * Secure, host-only, Path=/ cookies, so a sibling subdomain cannot plant them.
 */
export function cookieNames(config: Pick<Config, 'issuer'>): CookieNames {
  const prefix = config.issuer.startsWith('https:') ? '__Host-' : '';
  return {
    session: `${prefix}tessera_session`,
    pending: `${prefix}tessera_pending`,
    csrf: `${prefix}tessera_csrf`,
    knownBrowser: `${prefix}tessera_browser`,
    upstream: `${prefix}tessera_upstream`,
    signUp: `${prefix}tessera_sign_up`,
  };
}

/** A cookie value worth looking up: ours are 43 characters; anything long is not one. */
export function usableCookie(value: string | undefined): value is string {
  return value !== undefined && value.length > 0 && value.length <= 128;
}

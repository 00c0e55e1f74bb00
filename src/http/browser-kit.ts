import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import type { AppDeps } from './deps.ts';
import { ACCOUNT_SIGN_IN } from '../core/endpoints.ts';
import { countedAddress } from '../core/networks.ts';
import { LocalRateLimit, OncePerWindow } from '../flows/attempts.ts';
import { rawForm } from './form.ts';
import { pagesFor, type Pages } from './page.ts';
import { checkCsrf, signedInUser } from './session.ts';

export interface SignedIn {
  readonly session: SessionRecord;
  readonly user: UserRecord;
}

/** What every browser route (browser.ts) is given besides its dependencies. */
export interface BrowserRoutesOptions {
  readonly deps: AppDeps;
  readonly pages: Pages;
  /** preHandler of a form post: refused unless it came from one of our own pages (CSRF). */
  readonly formPost: preHandlerAsyncHookHandler;
  /** preHandler of a page for the signed-in person: anyone else is sent to sign in first. */
  readonly signedIn: preHandlerAsyncHookHandler;
  /** The person `signedIn` let through. */
  readonly signedInOf: (request: FastifyRequest) => SignedIn;
  /**
   * preHandler (after `formPost`) of a route that starts a passkey ceremony, storing its
   * challenge: sign-in, sign-up, invitation and a signed-in person's new-passkey options. One
   * limit per address shared by all four (passkeyCeremonyLimit).
   */
  readonly passkeyCeremony: preHandlerAsyncHookHandler;
}

export function browserRouteOptions(deps: AppDeps): BrowserRoutesOptions {
  const people = new WeakMap<FastifyRequest, SignedIn>();
  const pages = pagesFor(deps);
  return {
    deps,
    pages,
    formPost: async (request) => checkCsrf(deps.config, request, rawForm(request)['csrf_token']),
    signedIn: async (request: FastifyRequest, reply: FastifyReply) => {
      const signedIn = await signedInUser(deps, request);
      if (!signedIn) return reply.header('Cache-Control', 'no-store').redirect(ACCOUNT_SIGN_IN, 303);
      people.set(request, signedIn);
    },
    signedInOf: (request) => {
      const signedIn = people.get(request);
      if (!signedIn) throw new Error(`${request.url}: the route needs the signedIn preHandler`);
      return signedIn;
    },
    passkeyCeremony: passkeyCeremonyLimit(deps, pages),
  };
}

/**
 * Each passkey ceremony stores its challenge, and starting one needs no account: requests per
 * address are limited in memory, as device authorizations are (http/device.ts), so that a
 * refused one is decided before anything is read or written and costs no write. Per instance.
 * The answer is JSON, as the options are, with the words for the page's script to show: 429
 * with Retry-After (RFC 6585 §4).
 */
function passkeyCeremonyLimit(deps: AppDeps, pages: Pages): preHandlerAsyncHookHandler {
  const perAddress = new LocalRateLimit(deps.config.passkeyCeremoniesPerAddressPerMinute, 60_000);
  const refusalLog = new OncePerWindow(60_000);
  return async (request, reply) => {
    const now = deps.clock.now();
    const address = countedAddress(request.ip);
    const wait = perAddress.take(address, now);
    if (wait === null) return;
    if (refusalLog.first(address, now)) {
      request.log.warn({ ip: request.ip, limit: 'address' }, 'passkey ceremonies refused: over the per-minute limit');
    }
    return reply
      .status(429)
      .header('Retry-After', String(wait))
      .header('Cache-Control', 'no-store')
      .type('application/json; charset=utf-8')
      .send({ error: pages.ui(request).t.text('passkey.script.tooMany') });
  };
}

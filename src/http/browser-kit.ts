import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { SessionRecord, UserRecord } from '../store/types.ts';
import type { AppDeps } from './deps.ts';
import { ACCOUNT_SIGN_IN } from '../core/endpoints.ts';
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
}

export function browserRouteOptions(deps: AppDeps): BrowserRoutesOptions {
  const people = new WeakMap<FastifyRequest, SignedIn>();
  return {
    deps,
    pages: pagesFor(deps),
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
  };
}

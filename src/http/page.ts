import type { FastifyReply, FastifyRequest } from 'fastify';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { approvalRefusal, REFUSAL_MESSAGES, type ApprovalRefusal } from '../flows/second-factor/policy.ts';
import type { ClientRecord, SessionRecord } from '../store/types.ts';
import { isMessageKey, type MessageKey } from '../ui/i18n.ts';
import { signInPage, type SignInView, type Site, type Ui } from '../ui/pages.ts';
import type { AppDeps } from './deps.ts';
import { pageUi, type PageHints } from './locale.ts';
import { csrfToken } from './session.ts';

/** How the browser routes answer with a page, bound to the site they are rendered for. */
export interface Pages {
  readonly site: Site;
  /** The site in the language of this request (http/locale.ts). */
  ui(request: FastifyRequest, hints?: PageHints): Ui;
  /** A page of this server: HTML, never cached. */
  send(reply: FastifyReply, status: number, body: string): FastifyReply;
  /** The sign-in form, with this browser's CSRF token and passkeys offered where they work. */
  signIn(request: FastifyRequest, reply: FastifyReply, status: number, view: Omit<SignInView, 'csrf' | 'passkeys'>, hints?: PageHints): FastifyReply;
  /**
   * The sign-in form a flow leads to; `client`: the app it continues to, named on the page
   * and carried through the sign-in to the events that record it.
   */
  signInFor(request: FastifyRequest, reply: FastifyReply, returnTo: string, client: ClientRecord, hints?: PageHints): FastifyReply;
  /**
   * Before an approval page: a session whose sign-in the policy (flows/second-factor/policy.ts)
   * does not accept for this client is asked to sign in again, told why (null: it may approve).
   */
  refuseApproval(
    request: FastifyRequest,
    reply: FastifyReply,
    client: ClientRecord,
    session: SessionRecord,
    returnTo: string,
    requestedAcr?: readonly string[] | null,
  ): FastifyReply | null;
}

/** Why the person must sign in again before approving, in their language (the policy's own words are English, for the OAuth error). */
const REFUSALS = Object.fromEntries(
  Object.entries(REFUSAL_MESSAGES).map(([refusal, key]) => {
    if (!isMessageKey(key)) throw new Error(`${key}: not a message of the pages' catalogues`);
    return [refusal, key];
  }),
) as Readonly<Record<ApprovalRefusal, MessageKey>>;

export function pagesFor(deps: AppDeps): Pages {
  const site = deps.config.site;
  const passkeys = passkeysAvailable(deps.config.issuer);
  const send = (reply: FastifyReply, status: number, body: string) =>
    reply.status(status).header('Cache-Control', 'no-store').type('text/html; charset=utf-8').send(body);
  const signIn: Pages['signIn'] = (request, reply, status, view, hints) =>
    send(reply, status, signInPage(pageUi(site, request, hints), { ...view, csrf: csrfToken(deps.config, request, reply), passkeys }));
  return {
    site,
    ui: (request, hints) => pageUi(site, request, hints),
    send,
    signIn,
    signInFor: (request, reply, returnTo, client, hints) => signIn(request, reply, 200, { returnTo, clientName: client.name, clientId: client.id }, hints),
    refuseApproval: (request, reply, client, session, returnTo, requestedAcr = null) => {
      const refusal = approvalRefusal(deps.config, client, session, requestedAcr);
      if (refusal === null) return null;
      const notice = pageUi(site, request).t.text(REFUSALS[refusal], { client: client.name });
      return signIn(request, reply, 200, { returnTo, clientName: client.name, clientId: client.id, notice, setUp: true });
    },
  };
}


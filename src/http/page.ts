import type { SignInFirst } from '../flows/address-link.ts';
import { signUpOffered } from '../flows/sign-up.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { passkeysAvailable } from '../flows/passkeys/relying-party.ts';
import { approvalRefusal, REFUSAL_MESSAGES, type ApprovalRefusal, type MemberPolicy } from '../flows/second-factor/policy.ts';
import { emailDomain } from '../flows/upstream/accounts.ts';
import { providerForDomain } from '../flows/organizations/routing.ts';
import { providerSettings } from '../flows/upstream/settings.ts';
import type { ClientRecord, SessionRecord } from '../store/types.ts';
import { isMessageKey, type MessageKey } from '../ui/i18n.ts';
import { signInPage, upstreamStartUrl, type SignInView, type Site, type Ui } from '../ui/pages.ts';
import type { AppDeps } from './deps.ts';
import { pageUi, type PageHints } from './locale.ts';
import { csrfToken } from './session.ts';

/** What a route gives the sign-in page; the page adds the CSRF token, passkeys and the providers. */
export type SignInPageView = Omit<SignInView, 'csrf' | 'passkeys' | 'providers' | 'passwordForm'> & {
  /** OIDC Core §3.1.2.1 `login_hint` of the request the sign-in continues: an address may name its provider. */
  readonly loginHint?: string | null | undefined;
  /** `domain_hint` (Microsoft's, and others'): a domain that may name its provider, where no `login_hint` does. */
  readonly domainHint?: string | null | undefined;
};

/** How the browser routes answer with a page, bound to the site they are rendered for. */
export interface Pages {
  readonly site: Site;
  /** The site in the language of this request (http/locale.ts). */
  ui(request: FastifyRequest, hints?: PageHints): Ui;
  /** A page of this server: HTML, never cached. */
  send(reply: FastifyReply, status: number, body: string): FastifyReply;
  /**
   * The sign-in form, with this browser's CSRF token, passkeys offered where they work, and a
   * button per upstream provider. A provider that is the only way in (`--only`),
   * or whose domains take the `loginHint`'s address (`--domain`), is gone to straight away
   * instead, unless the page has something to say (an error, a notice).
   */
  signIn(request: FastifyRequest, reply: FastifyReply, status: number, view: SignInPageView, hints?: PageHints): Promise<FastifyReply>;
  /**
   * The sign-in page a link mailed for one account shows a browser not signed in as it
   * (flows/address-link.ts): the account's username filled in, a notice saying whose the link
   * is, and back to the link (`returnTo`) after. Followed (GET), a page like any sign-in's
   * (200); posted, a refusal: 401 signed in as no one, 403 as someone else.
   */
  signInFirst(request: FastifyRequest, reply: FastifyReply, refusal: SignInFirst, returnTo: string): Promise<FastifyReply>;
  /**
   * The sign-in form a flow leads to; `client`: the app it continues to, named on the page
   * and carried through the sign-in to the events that record it; `hints`: the request's
   * languages, who is expected, and how recent the sign-in must be (SignInView `maxAge`).
   */
  signInFor(
    request: FastifyRequest,
    reply: FastifyReply,
    returnTo: string,
    client: ClientRecord,
    hints?: PageHints & { readonly loginHint?: string | null; readonly domainHint?: string | null; readonly maxAge?: number | null },
  ): Promise<FastifyReply>;
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
    member?: MemberPolicy,
  ): Promise<FastifyReply> | null;
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
  const signIn: Pages['signIn'] = async (request, reply, status, view, hints) => {
    const { loginHint, domainHint, ...shown } = view;
    const providers = await deps.store.identityProviders.list();
    const only = providers.find((provider) => providerSettings(provider).only) ?? null;
    const domain = emailDomain(loginHint ?? null) ?? (domainHint ? domainHint.trim().toLowerCase() : null);
    // A provider's --domain, or an organization's verified domain with its provider.
    const routed = await providerForDomain(deps.store, providers, domain);
    const straightTo = routed ?? only;
    if (straightTo && !view.error && !view.notice && !view.setUp) {
      return reply
        .header('Cache-Control', 'no-store')
        .redirect(upstreamStartUrl(straightTo.id, view.returnTo, { clientId: view.clientId, loginHint: routed ? loginHint : null, maxAge: view.maxAge }), 303);
    }
    return send(
      reply,
      status,
      signInPage(pageUi(site, request, hints), {
        ...shown,
        csrf: csrfToken(deps.config, request, reply),
        // With one provider the only way in, the page offers it alone (and passkeys, a second factor's way in).
        passwordForm: only === null,
        passkeys,
        forgot: deps.mail !== undefined,
        signUp: signUpOffered(deps),
        providers: (only ? [only] : providers).map((provider) => ({ id: provider.id, name: provider.name })),
      }),
    );
  };
  return {
    site,
    ui: (request, hints) => pageUi(site, request, hints),
    send,
    signIn,
    signInFirst: (request, reply, { account, signedInAs }, returnTo) => {
      const hints = { user: account.locale };
      const { t } = pageUi(site, request, hints);
      const notice =
        signedInAs === null
          ? t.text('signIn.addressLink', { username: account.username })
          : t.text('signIn.addressLinkOther', { username: account.username, current: signedInAs });
      const status = request.method === 'GET' ? 200 : signedInAs === null ? 401 : 403;
      return signIn(request, reply, status, { returnTo, notice, username: account.username }, hints);
    },
    signInFor: (request, reply, returnTo, client, hints) =>
      signIn(
        request,
        reply,
        200,
        {
          returnTo,
          clientName: client.name,
          clientId: client.id,
          loginHint: hints?.loginHint ?? null,
          domainHint: hints?.domainHint ?? null,
          maxAge: hints?.maxAge ?? null,
        },
        hints,
      ),
    refuseApproval: (request, reply, client, session, returnTo, requestedAcr = null, member) => {
      const refusal = approvalRefusal(deps.config, client, session, requestedAcr, member);
      if (refusal === null) return null;
      const notice = pageUi(site, request).t.text(REFUSALS[refusal], { client: client.name });
      return signIn(request, reply, 200, { returnTo, clientName: client.name, clientId: client.id, notice, setUp: true });
    },
  };
}

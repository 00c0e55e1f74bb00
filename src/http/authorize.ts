import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { AUTHORIZE_PATH, DECISION_PATH } from '../core/endpoints.ts';
import { hashSecret } from '../core/crypto.ts';
import { OAuthError } from '../core/errors.ts';
import type { RawParams } from '../core/protocol.ts';
import { approveAuthorization, denyAuthorization } from '../flows/authorization-code/approve.ts';
import { APPROVAL_MAC_FIELD, approvalFormMac, approvalFormMatches } from '../flows/authorization-code/approval-form.ts';
import { asksNewSignIn, CONSENT_FORM_OMITS, hintedSub, nextStep, SIGN_IN_RETURN_OMITS } from '../flows/authorization-code/interaction.ts';
import { readSignInAsked, SIGN_IN_ASKED_FIELD, SIGN_IN_HINTED_FIELD, signInAsked } from '../flows/authorization-code/sign-in-asked.ts';
import { approvalRefusal, assertApprovalAllowed } from '../flows/second-factor/policy.ts';
import { organizationChoice, organizationPolicy, organizationsToChoose } from '../flows/organizations/choice.ts';
import {
  approvalScope,
  checkAuthorizationRequest,
  clientResponse,
  responseRedirectUrl,
  type ClientResponse,
  type ResponseMode,
} from '../flows/authorization-code/request.ts';
import type { DescribedAccess } from '../flows/resources.ts';
import type { ClientRecord } from '../store/types.ts';
import { isPushedReference, resolvePushedRequest, spendPushedRequest } from '../flows/par/resolve.ts';
import { html } from '../ui/html.ts';
import { formPostPage } from '../ui/form-post.ts';
import { consentPage } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forAuthorizationRequest, forRequest } from './deps.ts';
import { sendError } from './errors.ts';
import { rawForm } from './form.ts';
import { allowFormTarget, formPostPolicy } from './security.ts';
import { csrfToken, signedInUser } from './session.ts';

/**
 * The request's parameters, to carry through a form or a URL unchanged: the single-valued
 * ones, and `resource`, which may be repeated (RFC 8707 §2).
 */
function singleValues(params: RawParams, omit: readonly string[] = []): Record<string, string | readonly string[]> {
  const result: Record<string, string | readonly string[]> = {};
  for (const [name, value] of Object.entries(params)) {
    if (omit.includes(name)) continue;
    if (typeof value === 'string' || (name === 'resource' && Array.isArray(value))) result[name] = value;
  }
  return result;
}

function redirectTarget(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.host || url.protocol;
}

/** What the approval page shows of `access`: the scopes in `scopes` (the new ones, after a remembered approval). */
function onlyScopes(access: DescribedAccess, scopes: readonly string[]): DescribedAccess {
  const asked = (scope: { readonly name: string }) => scopes.includes(scope.name);
  return {
    openid: access.openid.filter(asked),
    apis: access.apis.map((api) => ({ ...api, scopes: api.scopes.filter(asked) })).filter((api) => api.scopes.length > 0),
  };
}

function authorizeUrl(params: Readonly<Record<string, string | readonly string[]>>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) for (const item of typeof value === 'string' ? [value] : value) query.append(name, item);
  return `${AUTHORIZE_PATH}?${query.toString()}`;
}

/**
 * The authorization endpoint (RFC 6749 §3.1, §4.1.1-4.1.2) and the approval it ends with:
 * browser routes (browser.ts), since the person signs in and approves on its pages.
 */
export const authorizeRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  const issuer = deps.config.issuer;

  /**
   * Carries `response` to the client: a redirect with it in the query, or (Form Post
   * Response Mode §2) a page whose form the browser posts to the redirect URI.
   */
  function answer(reply: FastifyReply, response: ClientResponse): FastifyReply {
    if (response.responseMode === 'query') return reply.redirect(responseRedirectUrl(response), 303);
    reply.header('Content-Security-Policy', formPostPolicy(response.redirectUri));
    return reply.type('text/html; charset=utf-8').send(formPostPage(pages.ui(reply.request), response));
  }

  function answerError(
    reply: FastifyReply,
    to: { redirectUri: string; responseMode: ResponseMode; state: string | null },
    error: OAuthError | { code: string; description: string },
  ) {
    return answer(reply, clientResponse(to, issuer, { error: error.code, error_description: error.description }));
  }

  const formSecret = () => deps.keys.derivedSecret('approval form');
  const askedSecret = () => deps.keys.derivedSecret('sign-in asked');

  async function handle(
    request: FastifyRequest,
    reply: FastifyReply,
    params: RawParams,
    decision: string | null,
    mac: unknown = null,
    postedOrganization: string | null = null,
  ) {
    reply.header('Cache-Control', 'no-store');
    // The browser is known by its CSRF cookie, which it keeps through sign-in.
    const browserOf = () => hashSecret(csrfToken(deps.config, request, reply));
    // RFC 9126 §4: a request_uri stands for a pushed request, and nothing else sent beside
    // it is read.
    let pushed: { readonly hash: string; readonly browser: string } | null = null;
    let requestParams = params;
    if (isPushedReference(params)) {
      const browser = browserOf();
      const resolved = await resolvePushedRequest(deps, params, browser);
      if (resolved.kind === 'fatal') return sendError(request, reply, resolved.error);
      if (resolved.kind === 'redirect') return answerError(reply, resolved, resolved.error);
      pushed = { hash: resolved.hash, browser };
      requestParams = resolved.params;
    }
    // What sign-in returns to and the approval form posts: a pushed request goes on by its
    // reference alone, and with when and for whom it asked for a sign-in.
    const carried: RawParams =
      pushed === null
        ? params
        : {
            client_id: params['client_id'],
            request_uri: params['request_uri'],
            [SIGN_IN_ASKED_FIELD]: params[SIGN_IN_ASKED_FIELD],
            [SIGN_IN_HINTED_FIELD]: params[SIGN_IN_HINTED_FIELD],
          };
    const check = await checkAuthorizationRequest(forAuthorizationRequest(deps, request), requestParams, pushed !== null, deps.config.par.required);
    if (check.kind === 'fatal') return sendError(request, reply, check.error);
    if (check.kind === 'redirect') return answerError(reply, check, check.error);
    const authorization = check.request;
    // OIDC Core §3.1.2.1: the app's preferred languages for the pages of this request (a
    // pushed request's too, which the page's own address does not show).
    const uiLocales = typeof requestParams['ui_locales'] === 'string' ? requestParams['ui_locales'] : null;

    const signedIn = await signedInUser(deps, request);
    const remembered = signedIn ? await deps.store.grants.findRemembered(signedIn.user.id, authorization.client.id) : null;
    // The person's organizations: the policy they add, and the one the approval is for.
    const memberships = signedIn ? await deps.store.organizations.membershipsOf(signedIn.user.id) : [];
    const member = organizationPolicy(memberships);
    const refused = signedIn !== null && approvalRefusal(deps.config, authorization.client, signedIn.session, authorization.acrValues ?? null, member) !== null;
    // Read only where it can count: a posted decision never asks for a sign-in again
    // (nextStep), and its form's MAC binds it to the session the page was shown to, one the
    // hint was checked against. Signed out too: the person it carries goes on to the next stamp.
    const asked =
      decision === null && carried[SIGN_IN_ASKED_FIELD] !== undefined ? readSignInAsked(await askedSecret(), browserOf(), singleValues(carried)) : null;
    let step = nextStep(authorization, signedIn, remembered, decision, deps.clock.now(), asked, refused);
    const choice =
      step.kind === 'approve' ? organizationChoice(memberships, approvalScope(authorization), postedOrganization, remembered?.organizationId) : null;
    if (step.kind === 'approve' && choice?.kind === 'choose') {
      // OIDC Core §3.1.2.6 consent_required: the person must choose, and no page may ask.
      if (authorization.prompt.includes('none'))
        return answerError(reply, authorization, { code: 'consent_required', description: 'the user has not chosen the organization to sign in for' });
      // Approved with no choice of theirs (none posted, or one not theirs, or none kept): the page asks.
      step = { kind: 'consent', signedIn: step.signedIn, scopes: approvalScope(authorization), more: false };
    }
    // The decision is taken on the request the page showed, never on fields changed since
    // (checked after the sign-in policy, whose refusal says more), before anything is spent.
    if (
      decision !== null &&
      (step.kind === 'approve' || step.kind === 'deny') &&
      !approvalFormMatches(await formSecret(), step.signedIn.session.idHash, singleValues(carried, CONSENT_FORM_OMITS), mac)
    ) {
      if (step.kind === 'approve') assertApprovalAllowed(deps.config, authorization.client, step.signedIn.session, authorization.acrValues ?? null, member);
      return sendError(request, reply, new OAuthError('invalid_request', 'the approval form was changed after it was shown: start again from the application'));
    }
    // RFC 9126 §4: one decision spends a pushed request; a second tab's decision finds it spent.
    if (
      (step.kind === 'approve' || step.kind === 'deny') &&
      pushed !== null &&
      !(await spendPushedRequest(deps, authorization.client.id, pushed.hash, pushed.browser))
    ) {
      return answerError(reply, authorization, new OAuthError('invalid_request_uri', 'the request_uri has already been used'));
    }
    switch (step.kind) {
      case 'error':
        return answerError(reply, authorization, { code: step.error, description: step.description });
      case 'sign-in': {
        // After signing in, come back to the same request (a pushed request by its reference
        // alone), with when it asked and whom the hint names: a sign-in since answers it, if it
        // is theirs. That can go straight on to the client (a remembered approval), and browsers
        // hold the redirects after a form post to its form-action.
        allowFormTarget(reply, authorization.redirectUri);
        const returnTo = signInAsked(
          await askedSecret(),
          browserOf(),
          singleValues(carried, SIGN_IN_RETURN_OMITS),
          deps.clock.now(),
          hintedSub(authorization, asked),
        );
        return pages.signInFor(request, reply, authorizeUrl(returnTo), authorization.client, {
          uiLocales,
          loginHint: typeof requestParams['login_hint'] === 'string' ? requestParams['login_hint'] : null,
          domainHint: typeof requestParams['domain_hint'] === 'string' ? requestParams['domain_hint'] : null,
          // What the request asked of the sign-in, asked of a provider in turn (the ID token's
          // auth_time is the provider's): a new one for prompt=login (select_account is
          // answered as login), one within max_age.
          maxAge: asksNewSignIn(authorization) ? 0 : authorization.maxAge,
        });
      }
      case 'approve':
        assertApprovalAllowed(deps.config, authorization.client, step.signedIn.session, authorization.acrValues ?? null, member);
        return answer(
          reply,
          await approveAuthorization(forRequest(deps, request), authorization, step.signedIn.session, choice?.kind === 'chosen' ? choice.organizationId : null),
        );
      case 'deny':
        return answer(reply, await denyAuthorization(forRequest(deps, request), authorization, step.signedIn.session));
      case 'invalid-decision':
        return sendError(request, reply, new OAuthError('invalid_request', 'decision must be approve or deny'));
      case 'consent':
        break;
    }
    const { user } = step.signedIn;
    const fields = singleValues(carried, CONSENT_FORM_OMITS);
    // A sign-in the client's policy or acr_values do not accept is asked to sign in again.
    const refusal = pages.refuseApproval(
      request,
      reply,
      authorization.client,
      step.signedIn.session,
      authorizeUrl(fields),
      authorization.acrValues ?? null,
      member,
    );
    if (refusal) return refusal;
    allowFormTarget(reply, authorization.redirectUri);
    const ui = pages.ui(request, { uiLocales, user: user.locale });
    // A member of several organizations chooses the one the tokens name (the one kept, chosen).
    const organizations = organizationsToChoose(memberships, approvalScope(authorization));
    const kept = postedOrganization ?? remembered?.organizationId ?? null;
    return pages.send(
      reply,
      200,
      consentPage(ui, {
        csrf: csrfToken(deps.config, request, reply),
        action: DECISION_PATH,
        fields: { ...fields, [APPROVAL_MAC_FIELD]: approvalFormMac(await formSecret(), step.signedIn.session.idHash, fields) },
        clientName: authorization.client.name,
        ...unverifiedClient(authorization.client),
        access: onlyScopes(authorization.access, step.scopes),
        more: step.more,
        signedInAs: user.name ?? user.username,
        returnTo: authorizeUrl(fields),
        organizations,
        chosenOrganization: organizations.some((organization) => organization.id === kept) ? kept : null,
        // The address the user will be sent to, so a look-alike application name is not all
        // they have to judge by.
        details: html`<p class="muted">${ui.t.html('consent.returnTo', { target: redirectTarget(authorization.redirectUri) })}</p>`,
      }),
    );
  }

  app.get(AUTHORIZE_PATH, { config: { page: true } }, (request, reply) => handle(request, reply, request.query as RawParams, null));

  // OIDC Core §3.1.2.1: "Authorization Servers MUST support the use of the HTTP GET and POST
  // methods". The browser's cookies are SameSite=Lax, which a cross-site POST does not carry
  // (so the person would look signed out, and the PAR browser binding would be lost): a
  // sound POSTed request is sent on as the same request by GET, which carries them. Errors are
  // answered at once, as for GET, through the same checks.
  app.post(AUTHORIZE_PATH, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const params = rawForm(request);
    if (!isPushedReference(params)) {
      const check = await checkAuthorizationRequest(forAuthorizationRequest(deps, request), params, false, deps.config.par.required);
      if (check.kind === 'fatal') return sendError(request, reply, check.error);
      if (check.kind === 'redirect') return answerError(reply, check, check.error);
    }
    return reply.redirect(authorizeUrl(singleValues(params)), 303);
  });

  // The approval page's form: ours alone, so it carries a CSRF token and comes from our origin.
  app.post(DECISION_PATH, { config: { page: true }, preHandler: formPost }, async (request, reply) => {
    const form = rawForm(request);
    const decision = typeof form['decision'] === 'string' ? form['decision'] : '';
    // The organization chosen is the person's input, not the request's: checked against their memberships.
    const organization = typeof form['organization'] === 'string' ? form['organization'].slice(0, 200) : null;
    const params = Object.fromEntries(
      Object.entries(form).filter(([name]) => name !== 'csrf_token' && name !== 'decision' && name !== APPROVAL_MAC_FIELD && name !== 'organization'),
    );
    return handle(request, reply, params, decision, form[APPROVAL_MAC_FIELD], organization);
  });
};

/**
 * An app that registered itself (RFC 7591, or a Client ID Metadata Document) and that the
 * operator has not verified (`client update --verified`): the consent page says so, and for a
 * metadata document names the host it describes itself at.
 */
export function unverifiedClient(client: ClientRecord): { readonly unverified?: { readonly host: string | null } } {
  if (client.registeredBy === undefined || client.verified === true) return {};
  return { unverified: { host: client.registeredBy === 'metadata_document' ? new URL(client.id).host : null } };
}

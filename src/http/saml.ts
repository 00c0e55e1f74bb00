/**
 * The SAML 2.0 identity provider's endpoints (docs/saml.md): its metadata, single sign-on
 * over the HTTP-Redirect and HTTP-POST bindings, the sign-in resuming there, and sign-ins
 * started here for an SP (IdP-initiated). The requests are read and decided in flows/saml;
 * here they are taken from the query or the form, and answered with a page: the sign-in
 * (the same as OpenID Connect's), the form that posts the Response to the SP's ACS URL, or a
 * refusal in the person's language, each refusal an event.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { SAML_PATHS, samlEndpoints } from '../core/endpoints.ts';
import type { RawParams } from '../core/protocol.ts';
import { idpMetadata } from '../flows/saml/metadata.ts';
import { logoutDecision, openLogout, sealLogout, type PendingLogout } from '../flows/saml/logout.ts';
import { STATUS } from '../flows/saml/response.ts';
import { continueSingleLogout } from '../flows/saml/single-logout.ts';
import { organizationPolicy } from '../flows/organizations/choice.ts';
import { endSession } from '../flows/session/session.ts';
import {
  readAuthnRequest,
  readLogoutRequest,
  readLogoutResponse,
  redirectQuery,
  SamlRefusal,
  type IncomingRequest,
  type SamlLimits,
  type SamlRefusalReason,
} from '../flows/saml/request.ts';
import { openPending, pendingOf, samlAnswer, samlNextStep, samlStatus, sealPending, unsolicited, type PendingSamlSignIn } from '../flows/saml/sso.ts';
import { REFUSAL_MESSAGES } from '../flows/second-factor/policy.ts';
import { signingCertificate } from '../tokens/certificate.ts';
import { formPostPage } from '../ui/form-post.ts';
import type { MessageKey } from '../ui/i18n.ts';
import { errorPage } from '../ui/pages.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { samlLogoutKit } from './saml-logout.ts';
import { formPostPolicy } from './security.ts';
import { browserOf, signedInUser } from './session.ts';

const one = (params: RawParams, name: string): string | null => {
  const value = params[name];
  if (Array.isArray(value)) throw new SamlRefusal('malformed', `${name} is repeated`);
  return typeof value === 'string' ? value : null;
};

/**
 * The message of `params`: its SAMLRequest, or, where `responses` are taken (the single
 * logout endpoint), its SAMLResponse; never both.
 */
function messageOf(params: RawParams, responses: boolean): { readonly value: string; readonly response: boolean } {
  const request = one(params, 'SAMLRequest');
  const response = responses ? one(params, 'SAMLResponse') : null;
  if (request !== null && response !== null) throw new SamlRefusal('malformed', 'SAMLRequest and SAMLResponse together');
  if (request === null && response === null)
    throw new SamlRefusal('malformed', responses ? 'SAMLRequest or SAMLResponse is missing' : 'SAMLRequest is missing');
  return request !== null ? { value: request, response: false } : { value: response!, response: true };
}

/** A message read from its binding, and whether it is a response (a LogoutResponse to this IdP's LogoutRequest). */
interface Received {
  readonly incoming: IncomingRequest;
  readonly response: boolean;
}

/** SAML Bindings §3.4: a message in the query, with its detached signature over the raw query. */
function redirectMessage(request: FastifyRequest, responses = false): Received {
  // Everything after the first `?`, as it came, read by the same parse that the signature is
  // checked over (`redirectQuery`), never by the framework's own reading of the query.
  const at = request.url.indexOf('?');
  const rawQuery = at === -1 ? '' : request.url.slice(at + 1);
  const query: RawParams = Object.fromEntries([...redirectQuery(rawQuery)].map(([name, { value }]) => [name, value]));
  const message = messageOf(query, responses);
  return {
    response: message.response,
    incoming: {
      binding: 'redirect',
      samlRequest: message.value,
      relayState: one(query, 'RelayState'),
      sigAlg: one(query, 'SigAlg'),
      signature: one(query, 'Signature'),
      rawQuery,
    },
  };
}

/** SAML Bindings §3.5: a message posted from the SP's page, its signature inside it. */
function postMessage(request: FastifyRequest, responses = false): Received {
  const form = rawForm(request);
  const message = messageOf(form, responses);
  return { response: message.response, incoming: { binding: 'post', samlRequest: message.value, relayState: one(form, 'RelayState') } };
}

export const samlRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages }) => {
  const endpoints = samlEndpoints(deps.config.issuer);
  const idp = endpoints.metadata;
  const secret = () => deps.keys.derivedSecret('saml sign-in');
  const signer = () => signingCertificate(deps.keys, deps.config.issuer);
  /** The bounds of what an SP may send, and how long what is said lasts (TESSERA_SAML_*). */
  const limits: SamlLimits = { maxRequestChars: deps.config.saml.maxRequestChars, requestLifetime: deps.config.saml.requestLifetime };
  const samlLogout = samlLogoutKit(deps, pages);

  /**
   * A refused message: a page in the person's language, worded for what it was (a sign-in
   * request, or a logout: an SP's LogoutRequest or LogoutResponse), and an event saying why.
   */
  async function refused(
    request: FastifyRequest,
    reply: FastifyReply,
    reason: SamlRefusalReason | 'stale',
    message: string,
    entityId: string | null,
    kind: 'sign-in' | 'logout' = 'sign-in',
  ) {
    await forRequest(deps, request).events.emit({
      type: 'saml.request_refused',
      detail: { reason, kind, entity_id: entityId, message: message.slice(0, 300) },
    });
    const ui = pages.ui(request);
    const texts = kind === 'logout' ? 'saml.logoutRefused' : 'saml.refused';
    return pages.send(
      reply,
      reason === 'unknown_sp' || reason === 'unknown_acs' || reason === 'unsolicited' ? 403 : 400,
      errorPage(ui, ui.t.text(`${texts}.title` as MessageKey), ui.t.text(`${texts}.${reason}` as MessageKey), { details: message }),
    );
  }

  /** Answers the SP: a page whose form the browser posts to its ACS URL at once (SAML Bindings §3.5). */
  function postToAcs(request: FastifyRequest, reply: FastifyReply, acsUrl: string, xml: string, relayState: string | null) {
    reply.header('Cache-Control', 'no-store').header('Content-Security-Policy', formPostPolicy(acsUrl));
    return reply.type('text/html; charset=utf-8').send(
      formPostPage(pages.ui(request), {
        redirectUri: acsUrl,
        params: { SAMLResponse: Buffer.from(xml, 'utf8').toString('base64'), ...(relayState === null ? {} : { RelayState: relayState }) },
      }),
    );
  }

  const resumeUrl = async (pending: PendingSamlSignIn) => `${SAML_PATHS.resume}?pending=${sealPending(await secret(), pending)}`;

  /** A request read from either binding, checked, then waiting at the resume address (a GET, which carries the session cookie after a cross-site POST). */
  async function receive(request: FastifyRequest, reply: FastifyReply, incoming: () => Received) {
    reply.header('Cache-Control', 'no-store');
    let read;
    let relayState: string | null = null;
    try {
      const given = incoming().incoming;
      relayState = given.relayState;
      read = await readAuthnRequest({ store: deps.store, now: deps.clock.now(), ssoUrl: endpoints.sso, limits: limits }, given);
    } catch (error) {
      if (error instanceof SamlRefusal) return refused(request, reply, error.reason, error.message, error.entityId);
      throw error;
    }
    return reply.redirect(await resumeUrl(pendingOf(read, relayState, deps.clock.now())), 303);
  }

  app.get(SAML_PATHS.metadata, async (_request, reply) => {
    const { certificate } = await signer();
    return reply.header('Cache-Control', 'public, max-age=300').type('application/samlmetadata+xml').send(idpMetadata(endpoints, certificate));
  });

  // SAML Bindings §3.4: HTTP-Redirect.
  app.get(SAML_PATHS.sso, { config: { page: true } }, (request, reply) => receive(request, reply, () => redirectMessage(request)));

  // SAML Bindings §3.5: HTTP-POST, from the SP's page (cross-site: no CSRF token, by design).
  app.post(SAML_PATHS.sso, { config: { page: true } }, (request, reply) => receive(request, reply, () => postMessage(request)));

  // SAML Profiles §4.1.5: a sign-in started here, for a registered SP, answering no request.
  app.get(SAML_PATHS.initiate, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    try {
      const query = request.query as RawParams;
      const entityId = one(query, 'sp') ?? '';
      const relayState = one(query, 'RelayState');
      if (relayState !== null && Buffer.byteLength(relayState) > 80) throw new SamlRefusal('malformed', 'RelayState longer than 80 bytes');
      const sp = entityId === '' ? null : await deps.store.samlServiceProviders.byEntityId(entityId);
      if (sp === null) throw new SamlRefusal('unknown_sp', `no SAML service provider ${entityId.slice(0, 200) || '(none named)'} is registered`);
      return reply.redirect(await resumeUrl(unsolicited(sp, relayState, deps.clock.now())), 303);
    } catch (error) {
      if (error instanceof SamlRefusal) return refused(request, reply, error.reason, error.message, error.entityId);
      throw error;
    }
  });

  // Where the sign-in comes back to: the same session as OpenID Connect's.
  app.get(SAML_PATHS.resume, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const now = deps.clock.now();
    const sealed = one(request.query as RawParams, 'pending') ?? '';
    const pending = openPending(await secret(), sealed, now, deps.config.saml.signInSeconds);
    if (pending === null) return refused(request, reply, 'stale', 'the sign-in link was changed, or is older than the time a sign-in may take', null);
    const sp = await deps.store.samlServiceProviders.get(pending.sp);
    if (sp === null) return refused(request, reply, 'unknown_sp', 'the SAML service provider was removed', null);
    const signedIn = await signedInUser(deps, request);
    // The person's organizations hold this sign-in to their policy, as an OpenID Connect approval (http/authorize.ts).
    const member = organizationPolicy(signedIn ? await deps.store.organizations.membershipsOf(signedIn.user.id) : []);
    const step = samlNextStep(deps.config, pending, signedIn?.session ?? null, member);
    const here = `${SAML_PATHS.resume}?pending=${sealed}`;
    const common = { idp, now, signer: await signer() };
    switch (step.kind) {
      case 'sign-in': {
        const notice =
          step.refusal === null ? undefined : pages.ui(request).t.text(REFUSAL_MESSAGES[step.refusal] as MessageKey, { client: sp.name ?? sp.entityId });
        return pages.signIn(request, reply, 200, {
          returnTo: here,
          clientName: sp.name ?? sp.entityId,
          clientId: null,
          // ForceAuthn: a sign-in made now, which a provider is asked for too.
          maxAge: pending.forceAuthn ? 0 : null,
          ...(notice === undefined ? {} : { notice, setUp: true }),
        });
      }
      case 'status': {
        const { xml, acsUrl } = samlStatus(common, sp, pending, step.status, step.message);
        return postToAcs(request, reply, acsUrl, xml, pending.relayState);
      }
      case 'assert': {
        const { user, session } = signedIn!;
        const answer = await samlAnswer({ ...common, store: deps.store, lifetime: limits.requestLifetime }, sp, pending, user, session);
        if (answer.participant !== null) {
          // Recorded for single logout: the session's end sends this SP a LogoutRequest naming them so.
          await deps.store.samlSessionSps.join(answer.participant);
          await forRequest(deps, request).events.emit({
            type: 'saml.assertion_issued',
            userId: user.id,
            username: user.username,
            detail: { entity_id: sp.entityId, acs_url: answer.acsUrl, in_response_to: pending.request },
          });
        }
        return postToAcs(request, reply, answer.acsUrl, answer.xml, pending.relayState);
      }
    }
  });

  /**
   * The single logout endpoint: an SP's LogoutRequest (SP-initiated single logout, SAML
   * Profiles §4.4.3), or an SP's LogoutResponse to this IdP's LogoutRequest, sent while a
   * session that ended here is signed out of its SPs one after the other (single-logout.ts).
   */
  async function slo(request: FastifyRequest, reply: FastifyReply, incoming: () => Received) {
    reply.header('Cache-Control', 'no-store');
    const now = deps.clock.now();
    let received: Received;
    try {
      received = incoming();
      if (received.response) return await logoutAnswered(request, reply, received.incoming);
      const read = await readLogoutRequest({ store: deps.store, now, sloUrl: endpoints.slo, limits: limits }, received.incoming);
      const pending: PendingLogout = {
        sp: read.sp.id,
        id: read.id,
        nameId: read.nameId,
        sessionIndexes: read.sessionIndexes,
        relayState: received.incoming.relayState,
        at: now,
      };
      // A POSTed request came without the session cookie (SameSite=Lax): on by a GET, which has it.
      if (received.incoming.binding === 'post') return reply.redirect(`${SAML_PATHS.sloResume}?pending=${sealLogout(await secret(), pending)}`, 303);
      return await answerLogout(request, reply, pending);
    } catch (error) {
      if (error instanceof SamlRefusal) return refused(request, reply, error.reason, error.message, error.entityId, 'logout');
      throw error;
    }
  }

  /**
   * SP-initiated single logout (SAML Profiles §4.4.3): the browser's session ends when the
   * request names its person, as an OpenID Connect sign-out does (logout tokens to the apps
   * that got an ID token in it), the other SAML SPs of the session are sent LogoutRequests
   * (§4.4.3.3), and the SP is answered at its SingleLogoutService URL.
   */
  async function answerLogout(request: FastifyRequest, reply: FastifyReply, pending: PendingLogout) {
    const sp = await deps.store.samlServiceProviders.get(pending.sp);
    if (sp === null || sp.sloUrl === null) return refused(request, reply, 'unknown_sp', 'the SAML service provider was removed', null, 'logout');
    const signedIn = await signedInUser(deps, request);
    const decision = logoutDecision({ sp, id: pending.id, nameId: pending.nameId, sessionIndexes: pending.sessionIndexes }, signedIn);
    const ended = decision === 'end' ? await endSession(deps, browserOf(deps, request, reply), 'rp', null) : null;
    await forRequest(deps, request).events.emit({
      type: 'saml.logout',
      ...(signedIn === null ? {} : { userId: signedIn.user.id, username: signedIn.user.username }),
      detail: { entity_id: sp.entityId, outcome: decision },
    });
    const end = { kind: 'saml', sp: sp.id, inResponseTo: pending.id, relayState: pending.relayState } as const;
    if (ended !== null) {
      const others = await samlLogout.begin(request, reply, [ended.sid], end, sp.id);
      if (others !== null) return others;
    }
    return samlLogout.finish(request, reply, end, decision === 'other-person' ? STATUS.unknownPrincipal : STATUS.success);
  }

  /** An SP's LogoutResponse to this IdP's LogoutRequest: on to the next SP of the logout, or to its end. */
  async function logoutAnswered(request: FastifyRequest, reply: FastifyReply, incoming: IncomingRequest) {
    const flowDeps = await samlLogout.flowDeps();
    const response = await readLogoutResponse({ store: deps.store, now: flowDeps.now, sloUrl: endpoints.slo, limits }, incoming);
    const step = await continueSingleLogout(flowDeps, response);
    if (step === null)
      throw new SamlRefusal(
        'stale',
        `no logout waits on an answer to ${response.inResponseTo.slice(0, 100)} from this SP, or it expired`,
        response.sp.entityId,
      );
    await forRequest(deps, request).events.emit({ type: 'saml.logout_answered', detail: { entity_id: response.sp.entityId, success: response.success } });
    return samlLogout.follow(request, reply, step);
  }

  app.get(SAML_PATHS.sloResume, { config: { page: true } }, async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const pending = openLogout(await secret(), one(request.query as RawParams, 'pending') ?? '', deps.clock.now(), limits.requestLifetime);
    if (pending === null) return refused(request, reply, 'stale', 'the logout link was changed, or is older than a request may be', null, 'logout');
    return answerLogout(request, reply, pending);
  });

  app.get(SAML_PATHS.slo, { config: { page: true } }, (request, reply) => slo(request, reply, () => redirectMessage(request, true)));

  app.post(SAML_PATHS.slo, { config: { page: true } }, (request, reply) => slo(request, reply, () => postMessage(request, true)));
};

/**
 * SAML Web Browser SSO (SAML Profiles §4.1) over the same sign-in as OpenID Connect: a
 * checked request (request.ts) waits, sealed into the address the sign-in comes back to,
 * while the person signs in on the same pages (password, second factor, passkey, upstream
 * provider) into the same session; then the decision (`samlNextStep`, the counterpart of
 * authorization-code/interaction.ts `nextStep`) and the signed Response (response.ts).
 *
 * ForceAuthn asks for a sign-in made after the request, as OIDC's prompt=login;
 * IsPassive shows no page, as prompt=none: without a session that will do, the SP is
 * answered NoPassive. RequestedAuthnContext classes map to the acr values the sign-in policy
 * reads (flows/second-factor/policy.ts), which holds the person's organizations' requirements
 * (a passkey, a second factor) here as it does for an OpenID Connect approval.
 */
import { createHmac } from 'node:crypto';
import { hasSecondFactor, isPhishingResistant } from '../../core/auth-methods.ts';
import { constantTimeEqual } from '../../core/crypto.ts';
import type { Config } from '../../config/index.ts';
import type { SamlServiceProviderRecord, SamlSessionSpRecord, SessionRecord, UserRecord } from '../../store/types.ts';
import { groupsOf, releasedClaims, SCOPE_CLAIMS } from '../../tokens/claims.ts';
import { approvalRefusal, sessionMethods, type ApprovalRefusal, type MemberPolicy } from '../second-factor/policy.ts';
import { NAME_ID_FORMAT_URIS, nameIdFormatOf } from './metadata-import.ts';
import { SamlRefusal, type AuthnRequest } from './request.ts';
import { assertionResponse, AUTHN_CONTEXT, nameIdOf, STATUS, statusResponse, type SamlSigner } from './response.ts';
import type { Store } from '../../store/types.ts';

/** A sign-in for an SP waiting for the person: what the address the sign-in returns to carries. */
export interface PendingSamlSignIn {
  /** The SP's id. */
  readonly sp: string;
  /** Which of its ACS URLs. */
  readonly acs: number;
  /** The request's ID; null: IdP-initiated. */
  readonly request: string | null;
  readonly relayState: string | null;
  readonly forceAuthn: boolean;
  readonly isPassive: boolean;
  /** The NameID format asked for (a URI), null for the SP's own. */
  readonly nameIdFormat: string | null;
  /** The acr values the RequestedAuthnContext maps to (null: none asked). */
  readonly acr: readonly string[] | null;
  /** When it was asked (ms): a ForceAuthn sign-in must come after it. */
  readonly at: number;
}

/** SAML Authn Context classes, and REFEDS MFA, as the acr values of the sign-in policy (core/auth-methods.ts ACR_VALUES). */
const ACR_OF_CLASS: Readonly<Record<string, string>> = {
  [AUTHN_CONTEXT.mfa]: 'urn:tessera:acr:mfa',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport': 'urn:tessera:acr:pwd',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:Password': 'urn:tessera:acr:pwd',
  phr: 'phr',
  phrh: 'phrh',
  'urn:tessera:acr:mfa': 'urn:tessera:acr:mfa',
};

export function pendingOf(request: AuthnRequest, relayState: string | null, now: number): PendingSamlSignIn {
  const acr = request.authnContext.map((ref) => ACR_OF_CLASS[ref]).filter((value) => value !== undefined);
  return {
    sp: request.sp.id,
    acs: request.sp.acsUrls.indexOf(request.acsUrl),
    request: request.id,
    relayState,
    forceAuthn: request.forceAuthn,
    isPassive: request.isPassive,
    nameIdFormat: request.nameIdFormat,
    acr: acr.length === 0 ? null : acr,
    at: now,
  };
}

/**
 * An IdP-initiated sign-in (SAML Profiles §4.1.5 "unsolicited"): to the SP's first ACS URL,
 * answering no request; refused for an SP not registered to take one.
 */
export function unsolicited(sp: SamlServiceProviderRecord, relayState: string | null, now: number): PendingSamlSignIn {
  // SAML Profiles §4.1.5: "An identity provider MAY initiate this profile by delivering an
  // unsolicited <Response> message to a service provider." An SP that takes one accepts a
  // sign-in it did not ask for, so it is sent one only when its registration says it does.
  if (!sp.idpInitiated) throw new SamlRefusal('unsolicited', 'this SP is not registered to take sign-ins started here (idp_initiated)', sp.entityId);
  return { sp: sp.id, acs: 0, request: null, relayState, forceAuthn: false, isPassive: false, nameIdFormat: null, acr: null, at: now };
}

const mac = (secret: Uint8Array, payload: string) => createHmac('sha256', secret).update(`saml pending ${payload}`).digest('base64url');

/** The pending sign-in as an opaque value of the address to come back to, MACed so that it cannot be changed on the way. */
export function sealPending(secret: Uint8Array, pending: PendingSamlSignIn): string {
  const payload = Buffer.from(JSON.stringify(pending)).toString('base64url');
  return `${payload}.${mac(secret, payload)}`;
}

/** The pending sign-in `sealed` carries; null when it was changed or is older than `lifetime` seconds. */
export function openPending(secret: Uint8Array, sealed: string, now: number, lifetime: number): PendingSamlSignIn | null {
  const [payload = '', tag = '', extra] = sealed.split('.');
  if (extra !== undefined || payload === '' || !constantTimeEqual(tag, mac(secret, payload))) return null;
  let pending: PendingSamlSignIn;
  try {
    pending = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as PendingSamlSignIn;
  } catch {
    return null;
  }
  return typeof pending.at === 'number' && now - pending.at <= lifetime * 1000 && pending.at <= now + 60_000 ? pending : null;
}

export type SamlStep =
  /** The sign-in page (again, for ForceAuthn; `refusal`: told why, for a sign-in the policy does not accept). */
  | { readonly kind: 'sign-in'; readonly refusal: ApprovalRefusal | null }
  /** Answered without a sign-in: a status Response (NoPassive). */
  | { readonly kind: 'status'; readonly status: string; readonly message: string }
  | { readonly kind: 'assert' };

/**
 * The next step of a pending sign-in, given the browser's session (null: none) and what the
 * session's person's organizations require of a sign-in (flows/organizations/choice.ts
 * `organizationPolicy`, as the OpenID Connect approval reads it).
 */
export function samlNextStep(config: Config, pending: PendingSamlSignIn, session: SessionRecord | null, member: MemberPolicy): SamlStep {
  // ForceAuthn (SAML Core §3.4.1): "the identity provider MUST authenticate the presenter
  // directly rather than rely on a previous security context": a sign-in after the request.
  const fresh = session !== null && (!pending.forceAuthn || session.authTime >= pending.at);
  const refusal = session === null ? null : approvalRefusal(config, {}, session, pending.acr, member);
  if (pending.isPassive) {
    // IsPassive: "the identity provider and the user agent itself MUST NOT visibly take
    // control of the user interface": without a session that will do, NoPassive.
    if (!fresh || refusal !== null)
      return { kind: 'status', status: STATUS.noPassive, message: 'the person is not signed in with a sign-in this request accepts' };
    return { kind: 'assert' };
  }
  if (!fresh) return { kind: 'sign-in', refusal: null };
  if (refusal !== null) return { kind: 'sign-in', refusal };
  return { kind: 'assert' };
}

/** An attribute's values from a claim's (a list is one value each; an address its formatted text). */
function attributeValues(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'object') {
    const address = value as Record<string, unknown>;
    return [typeof address['formatted'] === 'string' ? address['formatted'] : JSON.stringify(address)];
  }
  return [String(value)];
}

export interface AssertionDeps {
  readonly store: Pick<Store, 'linkedIdentities' | 'groups'>;
  readonly idp: string;
  readonly now: number;
  readonly lifetime: number;
  readonly signer: SamlSigner;
}

/**
 * The Response for `pending`: the signed assertion about `user`, or a status when the NameID
 * the SP asked for cannot be given. Returns the XML and what was said, for the event.
 */
export async function samlAnswer(
  deps: AssertionDeps,
  sp: SamlServiceProviderRecord,
  pending: PendingSamlSignIn,
  user: UserRecord,
  session: SessionRecord,
): Promise<{
  readonly xml: string;
  readonly acsUrl: string;
  /** The SP as a participant of the session, for single logout (single-logout.ts); null: no assertion was issued. */
  readonly participant: SamlSessionSpRecord | null;
}> {
  const acsUrl = sp.acsUrls[pending.acs] ?? sp.acsUrls[0]!;
  const format = pending.nameIdFormat === null ? sp.nameIdFormat : nameIdFormatOf(pending.nameIdFormat);
  const nameId = format === null || format !== sp.nameIdFormat ? null : nameIdOf(sp, user, format);
  if (nameId === null) {
    // SAML Core §3.4.1.1: "InvalidNameIDPolicy" when the format asked cannot be given.
    const status = {
      idp: deps.idp,
      acsUrl,
      inResponseTo: pending.request,
      now: deps.now,
      status: STATUS.invalidNameIdPolicy,
      message: `this SP is given ${NAME_ID_FORMAT_URIS[sp.nameIdFormat]} NameIDs${sp.nameIdFormat === 'email' ? ', and the person has no verified e-mail address' : ''}`,
    };
    return { xml: statusResponse(status, deps.signer), acsUrl, participant: null };
  }
  const claimsAsked = [...new Set(Object.values(sp.attributes))];
  const scopes = Object.keys(SCOPE_CLAIMS);
  const released = releasedClaims(user, scopes, claimsAsked, claimsAsked.includes('groups') ? await groupsOf(deps.store, user.id, scopes) : []);
  // An address not verified is no attribute either, as it is no NameID (nameIdOf): SAML says
  // nothing of whether it was proved, and SPs read an e-mail attribute as one that was.
  const { email: _unverified, ...verifiedOnly } = released;
  const claims: Record<string, unknown> = { ...(user.emailVerified ? released : verifiedOnly), sub: user.id };
  const amr = sessionMethods(session);
  const nameIdFormat = NAME_ID_FORMAT_URIS[format!];
  const xml = await assertionResponse(
    {
      idp: deps.idp,
      sp,
      acsUrl,
      inResponseTo: pending.request,
      nameId,
      nameIdFormat,
      attributes: Object.fromEntries(Object.entries(sp.attributes).map(([name, claim]) => [name, attributeValues(claims[claim])])),
      now: deps.now,
      lifetime: deps.lifetime,
      authTime: session.authTime,
      sessionIndex: session.sid,
      authnContext:
        hasSecondFactor(amr) || isPhishingResistant(amr) ? AUTHN_CONTEXT.mfa : amr.includes('pwd') ? AUTHN_CONTEXT.password : AUTHN_CONTEXT.unspecified,
    },
    deps.signer,
  );
  const participant = { sid: session.sid, spId: sp.id, nameId, nameIdFormat, sessionIndex: session.sid, expiresAt: session.expiresAt };
  return { xml, acsUrl, participant };
}

/** The Response that says no to a pending request, for the step that answered with a status. */
export function samlStatus(
  deps: Pick<AssertionDeps, 'idp' | 'now' | 'signer'>,
  sp: SamlServiceProviderRecord,
  pending: PendingSamlSignIn,
  status: string,
  message: string,
): { readonly xml: string; readonly acsUrl: string } {
  const acsUrl = sp.acsUrls[pending.acs] ?? sp.acsUrls[0]!;
  return { xml: statusResponse({ idp: deps.idp, acsUrl, inResponseTo: pending.request, now: deps.now, status, message }, deps.signer), acsUrl };
}

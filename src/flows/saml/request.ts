/**
 * An SP's AuthnRequest (SAML Core §3.4.1), received over the HTTP-Redirect binding (SAML
 * Bindings §3.4: DEFLATE, base64, URL-encoded, the signature over the query) or the HTTP-POST
 * binding (§3.5: base64 in a form, an enveloped XML signature), read strictly and checked
 * against the SP's registration. What the rest of the sign-in uses is read from the element
 * the signature covers, and from nothing else: for a POSTed request, from the signed
 * reference itself as the signature check canonicalised it (the signature wrapping of
 * CVE-2025-29774/29775 put a second, unsigned element where a reader looked).
 */
import { createPublicKey, verify, X509Certificate } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { hashSecret } from '../../core/crypto.ts';
import type { SamlServiceProviderRecord, Store } from '../../store/types.ts';
import { BINDINGS, NAME_ID_FORMAT_URIS, nameIdFormatOf, UNSPECIFIED_NAME_ID } from './metadata-import.ts';
import { attribute, children, onlyChild, parseXml, SAML_NS, textOf, xmlCrypto, XmlRefusal, type XmlElement } from './xml.ts';

/** Why a request is refused: each has its page text (ui/locales `saml.refused.REASON`) and is the event's `detail.reason`. */
export const SAML_REFUSALS = [
  'malformed',
  'unknown_sp',
  'unknown_acs',
  'unsigned',
  'bad_signature',
  'replayed',
  'expired',
  'wrong_destination',
  'unsupported',
  'unsolicited',
] as const;
export type SamlRefusalReason = (typeof SAML_REFUSALS)[number];

export class SamlRefusal extends Error {
  /** `stale`: a sealed link changed or too old, or a LogoutResponse that no logout waits on. */
  readonly reason: SamlRefusalReason | 'stale';
  /** The SP, when the request named one that is registered. */
  readonly entityId: string | null;
  constructor(reason: SamlRefusalReason | 'stale', message: string, entityId: string | null = null) {
    super(message);
    this.name = 'SamlRefusal';
    this.reason = reason;
    this.entityId = entityId;
  }
}

/** The limits of reading a request: its size, encoded and inflated, and how far its IssueInstant may be from now. */
export interface SamlLimits {
  /** The largest request, in characters, encoded as it came and as XML once inflated. */
  readonly maxRequestChars: number;
  /** How old (or how far ahead) an IssueInstant may be, in seconds; the assertion's lifetime too. */
  readonly requestLifetime: number;
}

export const SIGNATURE_ALGORITHMS = {
  rsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  ecdsaSha256: 'http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256',
} as const;
const ACCEPTED_SIGNATURES: readonly string[] = Object.values(SIGNATURE_ALGORITHMS);
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
/**
 * How far behind this server's clock an SP's may be, in milliseconds: an assertion's NotBefore
 * is this much before it is issued (response.ts), and an SP's LogoutRequest is taken until this
 * much after its NotOnOrAfter.
 */
export const CLOCK_SKEW_MS = 5_000;
/** SAML Core §1.3.4: xs:ID, an NCName. */
const XS_ID = /^[A-Za-z_][\w.-]{0,255}$/;

/** What a checked AuthnRequest asks. */
export interface AuthnRequest {
  readonly sp: SamlServiceProviderRecord;
  /** Its ID: the Response's InResponseTo. */
  readonly id: string;
  /** The registered ACS URL the Response goes to. */
  readonly acsUrl: string;
  /** SAML Core §3.4.1 ForceAuthn: a fresh sign-in, as OIDC's prompt=login. */
  readonly forceAuthn: boolean;
  /** SAML Core §3.4.1 IsPassive: no page at all, as OIDC's prompt=none. */
  readonly isPassive: boolean;
  /** The NameIDPolicy's Format, when it names one other than unspecified. */
  readonly nameIdFormat: string | null;
  /** The RequestedAuthnContext's class references (mapped to acr values by the caller). */
  readonly authnContext: readonly string[];
}

/**
 * A message as it came: over HTTP-Redirect, with the query as sent (for its signature), or
 * over HTTP-POST. `samlRequest` is the SAMLRequest parameter's value, or SAMLResponse's for
 * the LogoutResponse an SP answers this IdP's LogoutRequest with.
 */
export type IncomingRequest =
  | {
      readonly binding: 'redirect';
      readonly samlRequest: string;
      readonly relayState: string | null;
      readonly sigAlg: string | null;
      readonly signature: string | null;
      readonly rawQuery: string;
    }
  | { readonly binding: 'post'; readonly samlRequest: string; readonly relayState: string | null };

const refuse = (reason: SamlRefusalReason, message: string, entityId: string | null = null) => new SamlRefusal(reason, message, entityId);

/** The XML of a request as it came (SAML Bindings §3.4.4.1: DEFLATE for HTTP-Redirect; §3.5.4: base64 for HTTP-POST). */
function xmlOf(incoming: IncomingRequest, limits: SamlLimits): string {
  const encoded = incoming.samlRequest;
  if (encoded.length > limits.maxRequestChars) throw refuse('malformed', 'the request is too large');
  if (!/^[A-Za-z0-9+/\r\n]+={0,2}\s*$/.test(encoded)) throw refuse('malformed', 'SAMLRequest is not base64');
  const bytes = Buffer.from(encoded, 'base64');
  // §3.5.4 has no DEFLATE for HTTP-POST; some SPs (node-saml by default) deflate anyway, and
  // a document that is not XML as it came is read as such: inflated, within the same bound.
  if (incoming.binding === 'post' && /^\s*</.test(bytes.subarray(0, 64).toString('utf8'))) return bytes.toString('utf8');
  try {
    // Bounded inflation: a small deflated bomb stops at the limit instead of filling memory.
    return inflateRawSync(bytes, { maxOutputLength: limits.maxRequestChars }).toString('utf8');
  } catch {
    throw refuse('malformed', 'SAMLRequest is not DEFLATE-encoded, or inflates past the size limit');
  }
}

function certificateKey(sp: SamlServiceProviderRecord) {
  if (sp.certificate === null) return null;
  return new X509Certificate(sp.certificate).publicKey;
}

/**
 * The parameters of an HTTP-Redirect query (SAML Bindings §3.4.4), each as it came (`raw`,
 * what §3.4.4.1's signature is over) and decoded (`value`, what is read): one parse for both,
 * so that the message read is always the one whose signature was checked. A name that is
 * percent-encoded (`SAML%52equest`) or repeated is refused: another parser (a framework's,
 * URLSearchParams) could read it as a message the signature does not cover (the
 * parser-differential class of CVE-2025-25291/25292).
 */
export function redirectQuery(rawQuery: string): ReadonlyMap<string, { readonly raw: string; readonly value: string }> {
  const params = new Map<string, { raw: string; value: string }>();
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const name = at === -1 ? pair : pair.slice(0, at);
    const raw = at === -1 ? '' : pair.slice(at + 1);
    let value: string;
    try {
      if (decodeURIComponent(name.replaceAll('+', ' ')) !== name) throw refuse('malformed', 'a parameter name is percent-encoded');
      value = decodeURIComponent(raw.replaceAll('+', ' '));
    } catch (error) {
      if (error instanceof SamlRefusal) throw error;
      throw refuse('malformed', `${name.slice(0, 40)} is not URL-encoded`);
    }
    if (params.has(name)) throw refuse('malformed', `${name.slice(0, 40)} is repeated`);
    params.set(name, { raw, value });
  }
  return params;
}

/**
 * SAML Bindings §3.4.4.1: the signature of a request sent by HTTP-Redirect is over
 * "SAMLRequest=value&RelayState=value&SigAlg=value", each as URL-encoded in the query as it
 * came (not decoded and encoded again).
 */
function checkRedirectSignature(incoming: Extract<IncomingRequest, { binding: 'redirect' }>, sp: SamlServiceProviderRecord): boolean {
  if (incoming.signature === null && incoming.sigAlg === null) return false;
  if (incoming.signature === null || incoming.sigAlg === null) throw refuse('bad_signature', 'Signature and SigAlg come together', sp.entityId);
  if (!ACCEPTED_SIGNATURES.includes(incoming.sigAlg))
    throw refuse('unsupported', `SigAlg ${incoming.sigAlg.slice(0, 100)}: RSA-SHA256 or ECDSA-SHA256 only`, sp.entityId);
  const key = certificateKey(sp);
  if (key === null) throw refuse('bad_signature', 'the request is signed, but no certificate of the SP is registered to check it with', sp.entityId);
  const raw = redirectQuery(incoming.rawQuery);
  // One of SAMLRequest and SAMLResponse is in a query (the routes refuse both).
  const signed = ['SAMLRequest', 'SAMLResponse', 'RelayState', 'SigAlg']
    .filter((name) => raw.has(name))
    .map((name) => `${name}=${raw.get(name)!.raw}`)
    .join('&');
  const ok = verify(
    'sha256',
    Buffer.from(signed),
    {
      key: createPublicKey(key.export({ type: 'spki', format: 'pem' })),
      ...(incoming.sigAlg === SIGNATURE_ALGORITHMS.ecdsaSha256 ? { dsaEncoding: 'der' as const } : {}),
    },
    Buffer.from(incoming.signature, 'base64'),
  );
  if (!ok) throw refuse('bad_signature', "the request's signature does not verify with the SP's certificate", sp.entityId);
  return true;
}

/**
 * An enveloped signature on a POSTed request (SAML Core §5.4): exactly one, a child of the
 * request, with one reference, to the request's own ID, transformed by enveloped-signature and
 * exclusive c14n only. Returns the signed element, read again from what the signature covers.
 */
function checkPostSignature(xml: string, root: XmlElement, sp: SamlServiceProviderRecord, limits: SamlLimits): XmlElement | null {
  const kind = root.localName;
  const signatures = children(root, SAML_NS.dsig, 'Signature');
  if (signatures.length === 0) return null;
  if (signatures.length > 1 || root.getElementsByTagNameNS(SAML_NS.dsig, 'Signature').length !== 1)
    throw refuse('bad_signature', 'one signature only, a child of the request', sp.entityId);
  const key = certificateKey(sp);
  if (key === null) throw refuse('bad_signature', 'the request is signed, but no certificate of the SP is registered to check it with', sp.entityId);
  const id = attribute(root, 'ID');
  const { SignedXml } = xmlCrypto();
  const checker = new SignedXml({ publicCert: sp.certificate!, getCertFromKeyInfo: () => null });
  try {
    checker.loadSignature(signatures[0] as never);
  } catch {
    throw refuse('bad_signature', 'the signature cannot be read', sp.entityId);
  }
  if (!ACCEPTED_SIGNATURES.includes(String(checker.signatureAlgorithm))) throw refuse('unsupported', 'RSA-SHA256 or ECDSA-SHA256 signatures only', sp.entityId);
  const references = checker.getReferences();
  const reference = references[0];
  if (references.length !== 1 || reference === undefined || reference.uri !== `#${id}`)
    throw refuse('bad_signature', 'the signature must cover the request itself, by its ID, and nothing else', sp.entityId);
  if (reference.transforms.some((transform) => transform !== ENVELOPED && transform !== EXC_C14N))
    throw refuse('unsupported', 'enveloped-signature and exclusive canonicalization transforms only', sp.entityId);
  let valid = false;
  try {
    valid = checker.checkSignature(xml);
  } catch {
    valid = false;
  }
  if (!valid) throw refuse('bad_signature', "the request's signature does not verify with the SP's certificate", sp.entityId);
  const signed = checker.getSignedReferences();
  if (signed.length !== 1) throw refuse('bad_signature', 'the signature must cover the request itself, and nothing else', sp.entityId);
  // What the rest reads: the signed element as the signature check saw it, parsed again by the one strict parser.
  const element = parseXml(signed[0]!, limits.maxRequestChars).documentElement!;
  if (element.namespaceURI !== SAML_NS.protocol || element.localName !== kind || attribute(element, 'ID') !== id)
    throw refuse('bad_signature', 'the signed element is not this request', sp.entityId);
  return element;
}

const flag = (element: XmlElement, name: string): boolean => {
  const value = attribute(element, name);
  if (value !== null && !['true', 'false', '1', '0'].includes(value)) throw refuse('malformed', `${name} must be a boolean`);
  return value === 'true' || value === '1';
};

/** The time of the attribute `name` (SAML Core §1.3.3: xs:dateTime, in UTC) in ms; null when it is absent, a refusal when it is not such a time. */
function utcTime(element: XmlElement, name: string, entityId: string): number | null {
  const value = attribute(element, name);
  if (value === null) return null;
  const time = Date.parse(value);
  if (!Number.isFinite(time) || !/Z$/.test(value)) throw refuse('malformed', `${name} is not a UTC time`, entityId);
  return time;
}

/** A request read, its signature checked, before what its kind says: the SP, the element to read, its ID and when it was issued. */
interface ReadRequest {
  readonly sp: SamlServiceProviderRecord;
  /** The request element: the signed one, for a request signed in its XML. */
  readonly request: XmlElement;
  readonly id: string;
  readonly issued: number;
}

export interface ReadDeps {
  readonly store: Pick<Store, 'samlServiceProviders' | 'samlRequests'>;
  readonly now: number;
  readonly limits: SamlLimits;
}

/**
 * What every request from an SP goes through (SAML Core §3.2.1): read strictly, from a
 * registered SP (its Issuer), signed as its registration asks and checked, version 2.0, an
 * ID, issued near now, sent to `destination` (and saying so, when signed), and its ID
 * recorded, once.
 */
async function readRequest(
  deps: ReadDeps,
  incoming: IncomingRequest,
  kind: 'AuthnRequest' | 'LogoutRequest' | 'LogoutResponse',
  destination: string,
): Promise<ReadRequest> {
  const { limits, now } = deps;
  if (incoming.relayState !== null && Buffer.byteLength(incoming.relayState) > 80) {
    // SAML Bindings §3.4.3 / §3.5.3: "The value MUST NOT exceed 80 bytes in length".
    throw refuse('malformed', 'RelayState longer than 80 bytes');
  }
  const xml = xmlOf(incoming, limits);
  let root: XmlElement;
  try {
    root = parseXml(xml, limits.maxRequestChars).documentElement!;
  } catch (error) {
    if (error instanceof XmlRefusal) throw refuse('malformed', error.message);
    throw error;
  }
  if (root.namespaceURI !== SAML_NS.protocol || root.localName !== kind) throw refuse('malformed', `not a ${kind} (SAML Core §3)`);
  let entityId: string;
  try {
    // §3.2.1: the SP is known by the request's Issuer; a request that names none is no SP's.
    const issuer = onlyChild(root, SAML_NS.assertion, 'Issuer');
    entityId = issuer === null ? '' : textOf(issuer).trim();
  } catch (error) {
    if (error instanceof XmlRefusal) throw refuse('malformed', error.message);
    throw error;
  }
  const sp = entityId === '' ? null : await deps.store.samlServiceProviders.byEntityId(entityId);
  if (sp === null) throw refuse('unknown_sp', `no SAML service provider ${entityId.slice(0, 200) || '(no Issuer)'} is registered`);

  // The signature first: whatever else is read, is read from what it covers.
  let signedElement: XmlElement | null = null;
  let signed: boolean;
  try {
    if (incoming.binding === 'redirect') {
      // §3.4.4.1: a signature in the XML itself is removed before DEFLATE; one left there is not what is checked.
      if (children(root, SAML_NS.dsig, 'Signature').length > 0)
        throw refuse('bad_signature', 'over HTTP-Redirect, the request is signed in the query (SigAlg and Signature), not in the XML', sp.entityId);
      signed = checkRedirectSignature(incoming, sp);
    } else {
      signedElement = checkPostSignature(xml, root, sp, limits);
      signed = signedElement !== null;
    }
  } catch (error) {
    if (error instanceof XmlRefusal) throw refuse('bad_signature', error.message, sp.entityId);
    throw error;
  }
  if (sp.wantSignedRequests && !signed) throw refuse('unsigned', "this SP's requests must be signed", sp.entityId);
  // SAML Profiles §4.4.4.1: a LogoutRequest "MUST be signed" over HTTP-Redirect and HTTP-POST,
  // whatever the SP asked for its AuthnRequests: an unsigned one could be sent by any page the
  // person visits, and end their session here and at every SP of it. Refused before its ID is
  // recorded. (An SP with no SingleLogoutService is refused for that, in readLogoutRequest.)
  if (kind === 'LogoutRequest' && sp.sloUrl !== null && !signed)
    throw refuse('unsigned', "a LogoutRequest must be signed (SAML Profiles §4.4.4.1): register the SP's signing certificate", sp.entityId);
  // SAML Profiles §4.4.4.2: "The <LogoutResponse> message MUST be signed if the HTTP POST or
  // Redirect binding is used." Required of every SP it can be checked for, one with a
  // certificate registered. An SP without one is still taken unsigned, as before: its answer
  // names the LogoutRequest it answers (InResponseTo, readLogoutResponse), 160 random bits only
  // that SP was sent, and refusing it would leave the person's browser stopped at that SP.
  if (kind === 'LogoutResponse' && sp.certificate !== null && !signed)
    throw refuse('unsigned', 'a LogoutResponse must be signed (SAML Profiles §4.4.4.2), with the certificate registered for the SP', sp.entityId);
  const request = signedElement ?? root;
  if (attribute(request, 'Version') !== '2.0') throw refuse('unsupported', 'Version must be 2.0', sp.entityId);
  const id = attribute(request, 'ID') ?? '';
  if (!XS_ID.test(id)) throw refuse('malformed', 'ID is missing or not an xs:ID', sp.entityId);
  // §3.2.1 IssueInstant; a request far from now is stale (or forged ahead).
  const issued = utcTime(request, 'IssueInstant', sp.entityId);
  if (issued === null) throw refuse('malformed', 'IssueInstant is missing or not a UTC time', sp.entityId);
  if (Math.abs(now - issued) > limits.requestLifetime * 1000)
    throw refuse('expired', `the request was issued more than ${limits.requestLifetime} seconds from now`, sp.entityId);
  // §3.2.1 Destination: "If it is present, the actual recipient MUST check that the URI
  // reference identifies the location at which the message was received."
  const sentTo = attribute(request, 'Destination');
  // SAML Bindings §3.4.5.2 (HTTP-Redirect) and §3.5.5.2 (HTTP-POST): "If the message is signed,
  // the Destination XML attribute in the root SAML element of the protocol message MUST contain
  // the URL to which the sender has instructed the user agent to deliver the message." Without
  // it, a message the SP signed for another IdP (or another endpoint) would be taken here.
  if (signed && sentTo === null) throw refuse('wrong_destination', `a signed message names its Destination, ${destination}`, sp.entityId);
  // "The recipient MUST then verify that the value matches the location at which the message has been received."
  if (sentTo !== null && sentTo !== destination) throw refuse('wrong_destination', `Destination ${sentTo.slice(0, 200)} is not ${destination}`, sp.entityId);
  // Once: the request's ID, per SP, until it could no longer be accepted anyway.
  if (!(await deps.store.samlRequests.use(hashSecret(`${sp.entityId} ${id}`), issued + 2 * limits.requestLifetime * 1000, now)))
    throw refuse('replayed', `request ${id} was already used`, sp.entityId);
  return { sp, request, id, issued };
}

/** Runs `read`, an XmlRefusal met on the way being a malformed request. */
async function strictly<T>(entityId: string | null, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof XmlRefusal) throw refuse('malformed', error.message, entityId);
    throw error;
  }
}

/**
 * Reads and checks an AuthnRequest; a SamlRefusal says why it is not accepted. The request's
 * ID is recorded, once: a second use of the same request is refused as a replay.
 */
export async function readAuthnRequest(deps: ReadDeps & { readonly ssoUrl: string }, incoming: IncomingRequest): Promise<AuthnRequest> {
  const { sp, request, id } = await strictly(null, () => readRequest(deps, incoming, 'AuthnRequest', deps.ssoUrl));
  return strictly(sp.entityId, async () => {
    // SAML Profiles §4.1.4.1: the ACS URL named must be one the SP registered.
    const acsUrlAsked = attribute(request, 'AssertionConsumerServiceURL');
    const acsIndex = attribute(request, 'AssertionConsumerServiceIndex');
    const binding = attribute(request, 'ProtocolBinding');
    // SAML Core §3.4.1 AssertionConsumerServiceIndex: "This attribute is mutually exclusive with
    // the AssertionConsumerServiceURL and ProtocolBinding attributes." A request giving both asks
    // for two endpoints; picking one would answer at a place the SP may not have meant.
    if (acsIndex !== null && (acsUrlAsked !== null || binding !== null))
      throw refuse('malformed', 'AssertionConsumerServiceIndex comes without AssertionConsumerServiceURL and ProtocolBinding', sp.entityId);
    if (binding !== null && binding !== BINDINGS.post) throw refuse('unsupported', 'responses are sent by HTTP-POST only', sp.entityId);
    let acsUrl: string;
    if (acsUrlAsked !== null) {
      if (!sp.acsUrls.includes(acsUrlAsked))
        throw refuse('unknown_acs', `AssertionConsumerServiceURL ${acsUrlAsked.slice(0, 200)} is not one of the SP's`, sp.entityId);
      acsUrl = acsUrlAsked;
    } else if (acsIndex !== null) {
      // SAML Core §3.4.1 AssertionConsumerServiceIndex: "The identity provider MUST have a
      // trusted means to map the index value in the attribute to a location associated with the
      // requester. [SAMLMeta] provides one possible mechanism": the index its metadata gave the
      // endpoint (SAML Metadata §2.2.3), not its place in a list (sp.acsIndexes).
      const index = /^\d{1,5}$/.test(acsIndex) ? String(Number(acsIndex)) : null;
      const named = index !== null && Object.hasOwn(sp.acsIndexes, index) ? sp.acsIndexes[index] : undefined;
      if (named === undefined) throw refuse('unknown_acs', `AssertionConsumerServiceIndex ${acsIndex.slice(0, 20)} names none of the SP's`, sp.entityId);
      acsUrl = named;
    } else {
      acsUrl = sp.acsUrls[0]!;
    }
    const policy = onlyChild(request, SAML_NS.protocol, 'NameIDPolicy');
    const format = policy === null ? null : attribute(policy, 'Format');
    const authnContext = onlyChild(request, SAML_NS.protocol, 'RequestedAuthnContext');
    const classes = authnContext === null ? [] : children(authnContext, SAML_NS.assertion, 'AuthnContextClassRef').map((ref) => textOf(ref).trim());
    const nameIdFormat = format === null || format === UNSPECIFIED_NAME_ID ? null : format;
    if (nameIdFormat !== null && nameIdFormatOf(nameIdFormat) === null)
      throw refuse('unsupported', `NameIDPolicy Format ${nameIdFormat.slice(0, 200)}: one of ${Object.values(NAME_ID_FORMAT_URIS).join(', ')}`, sp.entityId);
    return { sp, id, acsUrl, forceAuthn: flag(request, 'ForceAuthn'), isPassive: flag(request, 'IsPassive'), nameIdFormat, authnContext: classes };
  });
}

/** What a checked LogoutRequest (SAML Core §3.7.1) asks: whom to sign out, for which SP. */
export interface LogoutRequest {
  readonly sp: SamlServiceProviderRecord;
  readonly id: string;
  /** The NameID the SP knows the person by. */
  readonly nameId: string;
  /** The sessions it names (the assertions' SessionIndex, the session's sid); none: every one. */
  readonly sessionIndexes: readonly string[];
}

/** Reads and checks a LogoutRequest, sent to `sloUrl`; the SP must have a SingleLogoutService URL to be answered at. */
export async function readLogoutRequest(deps: ReadDeps & { readonly sloUrl: string }, incoming: IncomingRequest): Promise<LogoutRequest> {
  const { sp, request, id } = await strictly(null, () => readRequest(deps, incoming, 'LogoutRequest', deps.sloUrl));
  return strictly(sp.entityId, async () => {
    if (sp.sloUrl === null) throw refuse('unsupported', 'the SP has no SingleLogoutService URL registered to be answered at', sp.entityId);
    // SAML Core §3.7.1 NotOnOrAfter: "The time at which the request expires, after which the
    // recipient may discard the message." Discarded, an SP's clock behind this one's allowed for.
    const expires = utcTime(request, 'NotOnOrAfter', sp.entityId);
    if (expires !== null && deps.now >= expires + CLOCK_SKEW_MS)
      throw refuse('expired', `the LogoutRequest expired at ${new Date(expires).toISOString()}`, sp.entityId);
    const nameIdElement = onlyChild(request, SAML_NS.assertion, 'NameID');
    if (nameIdElement === null) throw refuse('malformed', 'a LogoutRequest names the person by NameID', sp.entityId);
    const sessionIndexes = children(request, SAML_NS.protocol, 'SessionIndex').map((index) => textOf(index).trim());
    return { sp, id, nameId: textOf(nameIdElement).trim(), sessionIndexes };
  });
}

/** What a checked LogoutResponse (SAML Core §3.7.2) says: which of this IdP's LogoutRequests it answers, and whether the SP signed the person out. */
export interface LogoutResponse {
  readonly sp: SamlServiceProviderRecord;
  readonly inResponseTo: string;
  /** Its top-level StatusCode is Success (§3.2.2.2). */
  readonly success: boolean;
}

/**
 * Reads and checks an SP's LogoutResponse to a LogoutRequest of this IdP, sent to `sloUrl`:
 * as a request is (registered SP, signature, version, near now, Destination, once), and with
 * the InResponseTo that names the request it answers.
 */
export async function readLogoutResponse(deps: ReadDeps & { readonly sloUrl: string }, incoming: IncomingRequest): Promise<LogoutResponse> {
  const { sp, request } = await strictly(null, () => readRequest(deps, incoming, 'LogoutResponse', deps.sloUrl));
  return strictly(sp.entityId, async () => {
    const inResponseTo = attribute(request, 'InResponseTo') ?? '';
    if (!XS_ID.test(inResponseTo)) throw refuse('malformed', 'InResponseTo is missing or not an xs:ID', sp.entityId);
    const status = onlyChild(request, SAML_NS.protocol, 'Status');
    const code = status === null ? null : onlyChild(status, SAML_NS.protocol, 'StatusCode');
    if (code === null) throw refuse('malformed', 'a LogoutResponse has a Status with a StatusCode', sp.entityId);
    return { sp, inResponseTo, success: attribute(code, 'Value') === 'urn:oasis:names:tc:SAML:2.0:status:Success' };
  });
}

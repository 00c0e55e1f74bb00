/**
 * The Response an SP is sent (SAML Core §3.3.3, §2.3.3; SAML Profiles §4.1.4.2): an
 * assertion about the person, signed (RSA-SHA256, exclusive c14n, enveloped), for the SP's
 * entity ID alone (AudienceRestriction), to its ACS URL alone (Destination, Recipient), in
 * answer to its request (InResponseTo), valid for the request lifetime; the Response itself
 * signed too when the SP asks. Or a Response carrying only a status: a request answered "no".
 */
import { createHmac, randomBytes, sign as signBytes, X509Certificate, type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';
import { deflateRawSync } from 'node:zlib';
import type { SamlServiceProviderRecord, SloBinding, UserRecord } from '../../store/types.ts';
import type { NAME_ID_FORMAT_URIS } from './metadata-import.ts';
import { CLOCK_SKEW_MS, SIGNATURE_ALGORITHMS } from './request.ts';
import { SAML_NS, xmlCrypto, xmlEscape } from './xml.ts';

/** xml-encryption (the XML Encryption library node-saml decrypts with), without type declarations of its own. */
interface XmlEncryption {
  encrypt(
    content: string,
    options: {
      rsa_pub: string;
      pem: string;
      encryptionAlgorithm: string;
      keyEncryptionAlgorithm: string;
      disallowEncryptionWithInsecureAlgorithm: boolean;
    },
    callback: (error: Error | null, encrypted: string) => void,
  ): void;
}
/** Loaded with the first assertion encrypted: few SPs register a certificate to encrypt for. */
let xmlEncryptionModule: XmlEncryption | undefined;
const xmlEncryption = () => (xmlEncryptionModule ??= createRequire(import.meta.url)('xml-encryption') as XmlEncryption);

/** SAML Core §3.2.2.2: the status codes this IdP answers with. */
export const STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  requester: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  noPassive: 'urn:oasis:names:tc:SAML:2.0:status:NoPassive',
  invalidNameIdPolicy: 'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy',
  authnFailed: 'urn:oasis:names:tc:SAML:2.0:status:AuthnFailed',
  requestDenied: 'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
  unknownPrincipal: 'urn:oasis:names:tc:SAML:2.0:status:UnknownPrincipal',
  partialLogout: 'urn:oasis:names:tc:SAML:2.0:status:PartialLogout',
} as const;

/** SAML Authn Context §3.4: the classes this IdP says a sign-in was, from its methods. */
export const AUTHN_CONTEXT = {
  password: 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
  mfa: 'https://refeds.org/profile/mfa',
  unspecified: 'urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified',
} as const;

const instant = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
/** SAML Core §1.3.4: an ID with 128 bits of randomness, starting as an xs:ID must. */
export const newSamlId = (): string => `_${randomBytes(20).toString('hex')}`;

/**
 * The person's NameID for `sp` (SAML Core §8.3): their e-mail address, once verified; a
 * persistent id of the SP's own (HMAC-SHA256 of their user id under the SP's key, so that no
 * two SPs can link their people, §8.3.7); or a new transient one each time (§8.3.8). Null: the
 * format asked for cannot be given (no verified e-mail address). SAML has no `email_verified`:
 * an SP that keys its accounts by the e-mail NameID would take an address nobody proved for
 * its owner's (an upstream sign-in, an operator or provisioning may store one unverified).
 */
export function nameIdOf(sp: SamlServiceProviderRecord, user: UserRecord, format: keyof typeof NAME_ID_FORMAT_URIS): string | null {
  switch (format) {
    case 'email':
      return user.emailVerified ? user.email : null;
    case 'persistent':
      return createHmac('sha256', Buffer.from(sp.nameIdSalt, 'base64url')).update(user.id).digest('base64url');
    case 'transient':
      return newSamlId();
  }
}

/** The signing key and its certificate (tokens/certificate.ts). */
export interface SamlSigner {
  readonly privateKey: KeyObject;
  /** PEM. */
  readonly certificate: string;
}

/**
 * Signs the element `local` of `xml` in place (the root, or the Assertion inside a Response),
 * the signature after its Issuer (the schema's place for it).
 */
function sign(xml: string, local: 'Assertion' | 'Response' | 'LogoutRequest' | 'LogoutResponse', signer: SamlSigner): string {
  const { SignedXml } = xmlCrypto();
  const signature = new SignedXml({
    privateKey: signer.privateKey,
    publicCert: signer.certificate,
    signatureAlgorithm: SIGNATURE_ALGORITHMS.rsaSha256,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  const element = `/*[local-name(.)='${local}']`;
  const path = local === 'Assertion' ? `/*[local-name(.)='Response']${element}` : element;
  signature.addReference({
    xpath: path,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  signature.computeSignature(xml, { prefix: 'ds', location: { reference: `${path}/*[local-name(.)='Issuer']`, action: 'after' } });
  return signature.getSignedXml();
}

export interface AssertionInput {
  readonly idp: string;
  readonly sp: SamlServiceProviderRecord;
  readonly acsUrl: string;
  /** The request answered (null: sent unasked, IdP-initiated). */
  readonly inResponseTo: string | null;
  readonly nameId: string;
  readonly nameIdFormat: string;
  /** The attributes, each with its values. */
  readonly attributes: Readonly<Record<string, readonly string[]>>;
  readonly now: number;
  /** How long the assertion may be used, in seconds. */
  readonly lifetime: number;
  readonly authTime: number;
  /** The session: its AuthnStatement's SessionIndex, for single logout. */
  readonly sessionIndex: string;
  readonly authnContext: string;
}

/**
 * The signed assertion, encrypted for `certificate` (SAML Core §2.3.4 EncryptedAssertion,
 * XML Encryption 1.1): the content by AES-256-GCM under a new key, the key by RSA-OAEP.
 * The assertion carries its own namespace declarations, so it stands alone once decrypted.
 */
function encryptAssertion(assertion: string, certificate: string): Promise<string> {
  return new Promise((resolve, reject) => {
    xmlEncryption().encrypt(
      assertion,
      {
        rsa_pub: new X509Certificate(certificate).publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        pem: certificate,
        encryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
        keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
        disallowEncryptionWithInsecureAlgorithm: true,
      },
      (error, encrypted) => (error ? reject(error) : resolve(`<saml:EncryptedAssertion>${encrypted}</saml:EncryptedAssertion>`)),
    );
  });
}

/**
 * The signed Response with the assertion (XML text, to be base64-encoded into the form): the
 * assertion signed, then encrypted where the SP registered an encryption certificate, then the
 * Response signed where it asks.
 */
export async function assertionResponse(input: AssertionInput, signer: SamlSigner): Promise<string> {
  const { now } = input;
  const until = instant(now + input.lifetime * 1000);
  const inResponseTo = input.inResponseTo === null ? '' : ` InResponseTo="${xmlEscape(input.inResponseTo)}"`;
  const attributes = Object.entries(input.attributes).filter(([, values]) => values.length > 0);
  const assertion =
    `<saml:Assertion xmlns:saml="${SAML_NS.assertion}" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${newSamlId()}" Version="2.0" IssueInstant="${instant(now)}">` +
    `<saml:Issuer>${xmlEscape(input.idp)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${xmlEscape(input.nameIdFormat)}" NameQualifier="${xmlEscape(input.idp)}" SPNameQualifier="${xmlEscape(input.sp.entityId)}">${xmlEscape(input.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${inResponseTo} Recipient="${xmlEscape(input.acsUrl)}" NotOnOrAfter="${until}"/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${instant(now - CLOCK_SKEW_MS)}" NotOnOrAfter="${until}"><saml:AudienceRestriction><saml:Audience>${xmlEscape(input.sp.entityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${instant(input.authTime)}" SessionIndex="${xmlEscape(input.sessionIndex)}" SessionNotOnOrAfter="${instant(now + 8 * 3600_000)}"><saml:AuthnContext><saml:AuthnContextClassRef>${xmlEscape(input.authnContext)}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    (attributes.length === 0
      ? ''
      : `<saml:AttributeStatement>${attributes.map(([name, values]) => `<saml:Attribute Name="${xmlEscape(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${values.map((value) => `<saml:AttributeValue xsi:type="xs:string">${xmlEscape(value)}</saml:AttributeValue>`).join('')}</saml:Attribute>`).join('')}</saml:AttributeStatement>`) +
    '</saml:Assertion>';
  const response =
    `<samlp:Response xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${newSamlId()}" Version="2.0" IssueInstant="${instant(now)}" Destination="${xmlEscape(input.acsUrl)}"${inResponseTo}>` +
    `<saml:Issuer>${xmlEscape(input.idp)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${STATUS.success}"/></samlp:Status>` +
    assertion +
    '</samlp:Response>';
  let signedAssertion = sign(response, 'Assertion', signer);
  if (input.sp.encryptionCertificate !== null) {
    const start = signedAssertion.indexOf('<saml:Assertion ');
    const end = signedAssertion.lastIndexOf('</saml:Assertion>') + '</saml:Assertion>'.length;
    const encrypted = await encryptAssertion(signedAssertion.slice(start, end), input.sp.encryptionCertificate);
    signedAssertion = signedAssertion.slice(0, start) + encrypted + signedAssertion.slice(end);
  }
  return input.sp.signResponse ? sign(signedAssertion, 'Response', signer) : signedAssertion;
}

/** A Response with a status only (SAML Core §3.2.2): the request is answered, but nobody is signed in. Signed. */
export function statusResponse(
  input: {
    readonly idp: string;
    readonly acsUrl: string;
    /** The request answered; null for a sign-in the IdP began, whose Response "MUST NOT" have the attribute (SAML Core §3.2.2). */
    readonly inResponseTo: string | null;
    readonly now: number;
    readonly status: string;
    readonly message?: string;
  },
  signer: SamlSigner,
): string {
  const second = input.status === STATUS.success || input.status === STATUS.requester || input.status === STATUS.responder ? null : input.status;
  const top =
    second === null ? input.status : input.status === STATUS.noPassive || input.status === STATUS.invalidNameIdPolicy ? STATUS.requester : STATUS.responder;
  const response =
    `<samlp:Response xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${newSamlId()}" Version="2.0" IssueInstant="${instant(input.now)}" Destination="${xmlEscape(input.acsUrl)}"${input.inResponseTo === null ? '' : ` InResponseTo="${xmlEscape(input.inResponseTo)}"`}>` +
    `<saml:Issuer>${xmlEscape(input.idp)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${top}">${second === null ? '' : `<samlp:StatusCode Value="${second}"/>`}</samlp:StatusCode>${input.message === undefined ? '' : `<samlp:StatusMessage>${xmlEscape(input.message)}</samlp:StatusMessage>`}</samlp:Status>` +
    '</samlp:Response>';
  return sign(response, 'Response', signer);
}

/** A message to an SP's SingleLogoutService, as its binding sends it: an address to redirect to, or a form to post. */
export type OutgoingMessage =
  | { readonly binding: 'redirect'; readonly url: string }
  | { readonly binding: 'post'; readonly url: string; readonly params: Readonly<Record<string, string>> };

/**
 * `xml` (a LogoutRequest or LogoutResponse) as `binding` sends it to `url`, signed: over
 * HTTP-Redirect (SAML Bindings §3.4.4.1) DEFLATEd, base64, in the query, the signature
 * (RSA-SHA256) over "SAMLRequest=…&RelayState=…&SigAlg=…" as sent; over HTTP-POST (§3.5)
 * base64 in a form, signed in the XML (enveloped, SAML Core §5.4).
 */
function outgoing(
  binding: SloBinding,
  url: string,
  parameter: 'SAMLRequest' | 'SAMLResponse',
  xml: string,
  relayState: string | null,
  signer: SamlSigner,
): OutgoingMessage {
  if (binding === 'post') {
    const signed = sign(xml, parameter === 'SAMLRequest' ? 'LogoutRequest' : 'LogoutResponse', signer);
    return {
      binding,
      url,
      params: { [parameter]: Buffer.from(signed, 'utf8').toString('base64'), ...(relayState === null ? {} : { RelayState: relayState }) },
    };
  }
  const query = [
    `${parameter}=${encodeURIComponent(deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64'))}`,
    ...(relayState === null ? [] : [`RelayState=${encodeURIComponent(relayState)}`]),
    `SigAlg=${encodeURIComponent(SIGNATURE_ALGORITHMS.rsaSha256)}`,
  ].join('&');
  const signature = signBytes('sha256', Buffer.from(query), signer.privateKey).toString('base64');
  return { binding, url: `${url}${url.includes('?') ? '&' : '?'}${query}&Signature=${encodeURIComponent(signature)}` };
}

/**
 * The LogoutResponse (SAML Core §3.7.2) to an SP's LogoutRequest, to its SingleLogoutService
 * URL by the binding it registered: `Success`, `PartialLogout` (another SP of the session did
 * not answer Success, §3.7.3.2) or `UnknownPrincipal`.
 */
export function logoutResponse(
  input: {
    readonly idp: string;
    readonly sloUrl: string;
    readonly binding: SloBinding;
    readonly inResponseTo: string;
    readonly now: number;
    readonly status: string;
    readonly relayState: string | null;
  },
  signer: SamlSigner,
): OutgoingMessage {
  const top = input.status === STATUS.success || input.status === STATUS.partialLogout ? STATUS.success : STATUS.requester;
  const xml =
    `<samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${newSamlId()}" Version="2.0" IssueInstant="${instant(input.now)}" Destination="${xmlEscape(input.sloUrl)}" InResponseTo="${xmlEscape(input.inResponseTo)}">` +
    `<saml:Issuer>${xmlEscape(input.idp)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${top}">${top === input.status ? '' : `<samlp:StatusCode Value="${input.status}"/>`}</samlp:StatusCode></samlp:Status>` +
    '</samlp:LogoutResponse>';
  return outgoing(input.binding, input.sloUrl, 'SAMLResponse', xml, input.relayState, signer);
}

/**
 * A LogoutRequest (SAML Core §3.7.1) from this IdP to an SP of an ending session, naming the
 * person by the NameID the SP was given and the session by its SessionIndex; valid for
 * `lifetime` seconds (NotOnOrAfter). SAML Profiles §4.4.4.1: "MUST be signed if the HTTP POST
 * or Redirect binding is used".
 */
export function logoutRequest(
  input: {
    readonly idp: string;
    readonly id: string;
    readonly sp: SamlServiceProviderRecord;
    readonly nameId: string;
    readonly nameIdFormat: string;
    readonly sessionIndex: string;
    readonly now: number;
    readonly lifetime: number;
  },
  signer: SamlSigner,
): OutgoingMessage {
  const sloUrl = input.sp.sloUrl!;
  const xml =
    `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${xmlEscape(input.id)}" Version="2.0" IssueInstant="${instant(input.now)}" Destination="${xmlEscape(sloUrl)}" NotOnOrAfter="${instant(input.now + input.lifetime * 1000)}" Reason="urn:oasis:names:tc:SAML:2.0:logout:user">` +
    `<saml:Issuer>${xmlEscape(input.idp)}</saml:Issuer>` +
    `<saml:NameID Format="${xmlEscape(input.nameIdFormat)}" NameQualifier="${xmlEscape(input.idp)}" SPNameQualifier="${xmlEscape(input.sp.entityId)}">${xmlEscape(input.nameId)}</saml:NameID>` +
    `<samlp:SessionIndex>${xmlEscape(input.sessionIndex)}</samlp:SessionIndex>` +
    '</samlp:LogoutRequest>';
  return outgoing(input.sp.sloBinding, sloUrl, 'SAMLRequest', xml, null, signer);
}

/**
 * An SP's SAML metadata (SAML Metadata §2.3.2 EntityDescriptor, §2.4.4 SPSSODescriptor), read
 * into what its registration holds: its entity ID, AssertionConsumerService URLs (HTTP-POST)
 * and their indexes, SingleLogoutService URL and its binding, the NameID format it asks for,
 * whether it signs its AuthnRequests, and its signing certificate. Read with the one strict
 * parser (xml.ts).
 */
import { attribute, children, onlyChild, parseXml, SAML_NS, textOf, XmlRefusal, type XmlElement } from './xml.ts';
import type { NameIdFormat, SloBinding } from '../../store/saml.ts';

export const BINDINGS = {
  post: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST',
  redirect: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect',
} as const;

/** The NameID formats (SAML Core §8.3), by the names a registration gives them. */
export const NAME_ID_FORMAT_URIS: Readonly<Record<NameIdFormat, string>> = {
  email: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  persistent: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  transient: 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
};
export const UNSPECIFIED_NAME_ID = 'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified';

/** The format a NameIDFormat URI names, or null for one Tessera does not give. */
export function nameIdFormatOf(uri: string): NameIdFormat | null {
  return (Object.entries(NAME_ID_FORMAT_URIS).find(([, known]) => known === uri)?.[0] as NameIdFormat | undefined) ?? null;
}

export interface SpMetadata {
  readonly entityId: string;
  readonly acsUrls: readonly string[];
  /** Each HTTP-POST AssertionConsumerService's `index` (SAML Metadata §2.2.3), as text, to its URL. */
  readonly acsIndexes: Readonly<Record<string, string>>;
  readonly sloUrl: string | null;
  readonly sloBinding: SloBinding | null;
  readonly nameIdFormat: NameIdFormat | null;
  readonly wantSignedRequests: boolean;
  readonly certificate: string | null;
  /** Its KeyDescriptor for encryption (or for both uses). */
  readonly encryptionCertificate: string | null;
}

/**
 * An indexed endpoint's `index` (SAML Metadata §2.2.3, an xs:unsignedShort) as its decimal
 * text; null when it has none (the schema requires one, some metadata leaves it out: such an
 * endpoint is named by its URL only).
 */
function acsIndexOf(service: XmlElement): string | null {
  const index = attribute(service, 'index');
  if (index === null) return null;
  if (!/^\d{1,5}$/.test(index) || Number(index) > 65_535)
    throw new XmlRefusal('unexpected', `an AssertionConsumerService index ${index.slice(0, 20)}: not from 0 to 65535`);
  return String(Number(index));
}

/** An indexed endpoint's `isDefault` (SAML Metadata §2.2.3, an xs:boolean: true, false, 1 or 0); null when it has none. */
function isDefaultOf(service: XmlElement): boolean | null {
  const isDefault = attribute(service, 'isDefault');
  if (isDefault === null) return null;
  if (!['true', 'false', '1', '0'].includes(isDefault))
    throw new XmlRefusal('unexpected', `an AssertionConsumerService isDefault ${isDefault.slice(0, 20)}: not an xs:boolean`);
  return isDefault === 'true' || isDefault === '1';
}

/** The registration an SP's metadata describes; an XmlRefusal saying what is wrong with it. */
export function readSpMetadata(text: string, maxChars: number): SpMetadata {
  const root = parseXml(text.trim(), maxChars).documentElement!;
  if (root.namespaceURI !== SAML_NS.metadata || root.localName !== 'EntityDescriptor')
    throw new XmlRefusal('unexpected', 'not an EntityDescriptor (SAML Metadata §2.3.2)');
  const entityId = attribute(root, 'entityID');
  if (entityId === null || entityId === '') throw new XmlRefusal('unexpected', 'the EntityDescriptor has no entityID');
  const sp = onlyChild(root, SAML_NS.metadata, 'SPSSODescriptor');
  if (sp === null) throw new XmlRefusal('unexpected', "no SPSSODescriptor: not a service provider's metadata");
  const services = children(sp, SAML_NS.metadata, 'AssertionConsumerService')
    .filter((service) => attribute(service, 'Binding') === BINDINGS.post)
    .map((service) => ({
      url: attribute(service, 'Location') ?? '',
      isDefault: isDefaultOf(service),
      index: acsIndexOf(service),
    }));
  if (services.length === 0) throw new XmlRefusal('unexpected', 'no AssertionConsumerService with the HTTP-POST binding');
  // §2.2.3 index: "assigns a unique integer value to the endpoint so that it can be referenced
  // in a protocol message" (an AuthnRequest's AssertionConsumerServiceIndex, SAML Core §3.4.1):
  // kept, so that the index names the endpoint the SP's metadata gave it.
  const acsIndexes: Record<string, string> = {};
  for (const { url, index } of services) {
    if (index === null) continue;
    if (Object.hasOwn(acsIndexes, index)) throw new XmlRefusal('unexpected', `two AssertionConsumerServices with index ${index}`);
    acsIndexes[index] = url;
  }
  // §2.2.3 IndexedEndpointType: "the default endpoint is the first such endpoint with the
  // isDefault attribute set to true. If no such endpoints exist, the default endpoint is the
  // first such endpoint without the isDefault attribute set to false. If no such endpoints exist,
  // the default endpoint is the first element in the sequence": first in document order, whatever
  // the indexes say. It goes first (acsUrls[0] is where an AuthnRequest naming none is answered),
  // the others after it by index.
  const defaultAcs = services.find((service) => service.isDefault === true) ?? services.find((service) => service.isDefault !== false) ?? services[0]!;
  const others = services.filter((service) => service !== defaultAcs).sort((a, b) => Number(a.index ?? 0) - Number(b.index ?? 0));
  const acs = [defaultAcs, ...others].map((service) => service.url);
  // The HTTP-Redirect one first, where both are given: it needs no page of ours to post it.
  const sloServices = children(sp, SAML_NS.metadata, 'SingleLogoutService');
  const slo =
    sloServices.find((service) => attribute(service, 'Binding') === BINDINGS.redirect) ??
    sloServices.find((service) => attribute(service, 'Binding') === BINDINGS.post);
  const formats = children(sp, SAML_NS.metadata, 'NameIDFormat')
    .map((format) => nameIdFormatOf(textOf(format).trim()))
    .filter((format) => format !== null);
  // §2.4.1.1 KeyDescriptor use: "signing" or "encryption"; without it, the key serves both.
  const keys = children(sp, SAML_NS.metadata, 'KeyDescriptor');
  const certificateOf = (use: string) => {
    const key = keys.find((each) => (attribute(each, 'use') ?? use) === use);
    const x509 = key === undefined ? undefined : Array.from(key.getElementsByTagNameNS(SAML_NS.dsig, 'X509Certificate'))[0];
    return x509 === undefined ? null : textOf(x509).replace(/\s+/g, '');
  };
  return {
    entityId,
    acsUrls: acs,
    acsIndexes,
    sloUrl: slo === undefined ? null : attribute(slo, 'Location'),
    sloBinding: slo === undefined ? null : attribute(slo, 'Binding') === BINDINGS.post ? 'post' : 'redirect',
    nameIdFormat: formats[0] ?? null,
    wantSignedRequests: attribute(sp, 'AuthnRequestsSigned') === 'true',
    certificate: certificateOf('signing'),
    encryptionCertificate: certificateOf('encryption'),
  };
}

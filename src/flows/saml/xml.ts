/**
 * The one XML parser of the SAML endpoints (docs/saml.md): what an SP sends (an AuthnRequest,
 * a LogoutRequest, its metadata) is read here and nowhere else, so that the signature is
 * checked on the same tree the values are read from (the parser differentials of
 * CVE-2025-25291/25292 came from reading one document two ways).
 *
 * Strict: any error or warning of the parser refuses the document; a document type
 * declaration refuses it before parsing (no DTD, so no entity, internal or external: the
 * "billion laughs" and XXE need one); sizes and element counts are bounded.
 */
import { createRequire } from 'node:module';
import type * as XmlCrypto from 'xml-crypto';

/**
 * The little of the DOM the SAML code reads. @xmldom/xmldom is loaded without its type
 * declarations, which bring the browser's whole DOM library into the server's types (its
 * `fetch`, `Response` and `RequestInit` then clash with Node's).
 */
export interface XmlNode {
  readonly nodeType: number;
  readonly nodeValue: string | null;
  readonly firstChild: XmlNode | null;
  readonly nextSibling: XmlNode | null;
  readonly parentNode: XmlNode | null;
}
export interface XmlElement extends XmlNode {
  readonly namespaceURI: string | null;
  readonly localName: string;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  getElementsByTagNameNS(ns: string, local: string): ArrayLike<XmlElement>;
}
export interface XmlDocument extends XmlNode {
  readonly documentElement: XmlElement | null;
  readonly doctype: unknown;
}
interface XmlDom {
  DOMParser: new (options: {
    errorHandler: Record<'warning' | 'error' | 'fatalError', (message: unknown) => void>;
  }) => { parseFromString(text: string, type: string): XmlDocument };
}
// The XML libraries are loaded on first use: the parser with the first document, xml-crypto
// with the first signature made or checked (and xml-encryption with the first assertion
// encrypted, ./response.ts), so that a server no SP calls does not hold them (about 1.5 MiB).
let xmlDom: XmlDom | undefined;
const domParser = () => (xmlDom ??= createRequire(import.meta.url)('@xmldom/xmldom') as XmlDom).DOMParser;
let xmlCryptoModule: typeof XmlCrypto | undefined;
/** xml-crypto, which signs and checks signatures (XML Signature), loaded with the first of them. */
export const xmlCrypto = (): typeof XmlCrypto => (xmlCryptoModule ??= createRequire(import.meta.url)('xml-crypto') as typeof XmlCrypto);

export const SAML_NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const;

/** Why a document was not read: too large, a DTD, not well-formed, or not what was expected. */
export class XmlRefusal extends Error {
  readonly reason: 'too_large' | 'doctype' | 'malformed' | 'unexpected';
  constructor(reason: XmlRefusal['reason'], message: string) {
    super(message);
    this.name = 'XmlRefusal';
    this.reason = reason;
  }
}

/** At most this many elements in a document: an AuthnRequest has a handful, metadata some dozens. */
const MAX_ELEMENTS = 2000;
const MAX_DEPTH = 32;

/**
 * The document in `text`, parsed strictly, or an XmlRefusal. `maxChars` bounds the text
 * before anything is parsed.
 */
export function parseXml(text: string, maxChars: number): XmlDocument {
  if (text.length > maxChars) throw new XmlRefusal('too_large', `the document is larger than ${maxChars} characters`);
  // No DTD at all: `<!DOCTYPE` is the only way to declare one (XML 1.0 §2.8), and entities
  // (§4.2) are declared in one. Refused before the parser sees it, whatever it would do.
  if (/<!DOCTYPE|<!ENTITY/i.test(text)) throw new XmlRefusal('doctype', 'a document type declaration is not allowed');
  const problems: string[] = [];
  const note = (message: unknown) => void problems.push(String(message).split('\n')[0]!.slice(0, 200));
  const DOMParser = domParser();
  const document = new DOMParser({ errorHandler: { warning: note, error: note, fatalError: note } }).parseFromString(text, 'text/xml');
  if (problems.length > 0) throw new XmlRefusal('malformed', `not well-formed XML: ${problems[0]}`);
  if (document.doctype !== null && document.doctype !== undefined) throw new XmlRefusal('doctype', 'a document type declaration is not allowed');
  const root = document.documentElement;
  if (root === null || root === undefined) throw new XmlRefusal('malformed', 'no root element');
  let elements = 0;
  const walk = (node: XmlNode, depth: number): void => {
    if (depth > MAX_DEPTH) throw new XmlRefusal('too_large', `elements nested deeper than ${MAX_DEPTH}`);
    for (let child = node.firstChild; child !== null; child = child.nextSibling) {
      if (child.nodeType === 1) {
        elements += 1;
        if (elements > MAX_ELEMENTS) throw new XmlRefusal('too_large', `more than ${MAX_ELEMENTS} elements`);
        walk(child, depth + 1);
      } else if (child.nodeType === 7 || child.nodeType === 10) {
        // Processing instructions and document types inside the tree: nothing an SP needs to send.
        throw new XmlRefusal('unexpected', 'processing instructions are not allowed');
      }
    }
  };
  walk(root, 0);
  return document;
}

/** Text or an attribute value as XML writes it: the five characters that could end or change it, escaped. */
export const xmlEscape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** The element children of `parent` named `local` in namespace `ns`. */
export function children(parent: XmlElement, ns: string, local: string): XmlElement[] {
  const found: XmlElement[] = [];
  for (let child = parent.firstChild; child !== null; child = child.nextSibling) {
    if (child.nodeType === 1 && (child as XmlElement).namespaceURI === ns && (child as XmlElement).localName === local) found.push(child as XmlElement);
  }
  return found;
}

/** The one child of `parent` named `local` in `ns`, null when there is none, a refusal when there are several. */
export function onlyChild(parent: XmlElement, ns: string, local: string): XmlElement | null {
  const found = children(parent, ns, local);
  if (found.length > 1) throw new XmlRefusal('unexpected', `more than one ${local} in ${parent.localName}`);
  return found[0] ?? null;
}

/**
 * The text of an element made only of text: an element child or a comment inside it is
 * refused, not skipped or cut at (the "comment in the NameID" truncation of CVE-2017-11428
 * and its kind: a reader that stops at a comment reads another value than the signer signed).
 */
export function textOf(element: XmlElement): string {
  let text = '';
  for (let child = element.firstChild; child !== null; child = child.nextSibling) {
    if (child.nodeType === 3 || child.nodeType === 4) text += child.nodeValue ?? '';
    else throw new XmlRefusal('unexpected', `${element.localName} must hold text only`);
  }
  return text;
}

/** An attribute's value, or null when it is absent. */
export function attribute(element: XmlElement, name: string): string | null {
  return element.hasAttribute(name) ? element.getAttribute(name) : null;
}

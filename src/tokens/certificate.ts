/**
 * A self-signed X.509 certificate (RFC 5280) for a signing key: the form SAML metadata
 * carries a public key in (SAML Metadata §2.4.1.1, KeyDescriptor holding ds:X509Data). SAML
 * service providers read only the key from it; they trust the metadata, not a CA.
 *
 * node:crypto reads certificates (X509Certificate) but does not make them, and what a SAML
 * IdP needs is small: a version 1 certificate (no extensions), its DER written here over a
 * few ASN.1 types, signed sha256WithRSAEncryption. Rather that than a certificate library
 * and its dependencies, in a server that otherwise has none for this. Deterministic: the
 * same key and name give the same certificate, on every instance (RSASSA-PKCS1-v1_5 is).
 */
import { createHash, createPublicKey, sign, type KeyObject } from 'node:crypto';

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest >>= 8) bytes.unshift(rest & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, value: Buffer): Buffer => Buffer.concat([Buffer.from([tag]), length(value.length), value]);
const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text, 'utf8'));
const NULL = Buffer.from([0x05, 0x00]);

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const base128: number[] = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) base128.unshift(0x80 | (value & 0x7f));
    bytes.push(...base128);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A positive INTEGER from big-endian bytes (a leading 0 where the high bit would make it negative). */
function integer(bytes: Buffer): Buffer {
  return tlv(0x02, (bytes[0]! & 0x80) !== 0 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050. */
function time(at: Date): Buffer {
  const iso = at.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return at.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
}

const SHA256_WITH_RSA = sequence(oid('1.2.840.113549.1.1.11'), NULL);
const COMMON_NAME = '2.5.4.3';
/** RFC 5280 §4.1.2.5: "no well-defined expiration date": 99991231235959Z. */
const NO_EXPIRY = new Date(Date.UTC(9999, 11, 31, 23, 59, 59));
const NOT_BEFORE = new Date(Date.UTC(2020, 0, 1));

/**
 * A self-signed certificate (DER) of the RSA key `privateKey`, named `commonName`, with the
 * serial number `serialOf` hashes to.
 */
export function selfSignedCertificate(privateKey: KeyObject, commonName: string, serialOf: string): Buffer {
  if (privateKey.asymmetricKeyType !== 'rsa') throw new Error('a SAML signing certificate is made of an RSA key');
  const name = sequence(set(sequence(oid(COMMON_NAME), utf8(commonName.slice(0, 64)))));
  const serial = createHash('sha256').update(serialOf).digest().subarray(0, 16);
  serial[0] = serial[0]! & 0x7f || 0x01;
  const spki = createPublicKey(privateKey).export({ type: 'spki', format: 'der' });
  // Version 1 (the default, so absent): a certificate with no extensions (§4.1.2.1).
  const tbs = sequence(integer(serial), SHA256_WITH_RSA, name, sequence(time(NOT_BEFORE), time(NO_EXPIRY)), name, spki);
  const signature = sign('sha256', tbs, privateKey);
  return sequence(tbs, SHA256_WITH_RSA, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
}

/** A certificate's DER as PEM. */
export function pemCertificate(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

/** The RSA key that signs now, with its certificate: what SAML responses are signed with. */
export interface SigningCertificate {
  readonly kid: string;
  readonly privateKey: KeyObject;
  /** PEM. */
  readonly certificate: string;
}

const certificates = new Map<string, string>();

/**
 * The RS256 key that signs now (tokens/keys.ts), and its certificate named `commonName`
 * (made once per key and name; the same on every instance, so metadata does not differ
 * between them). A key rotation gives a new certificate: SPs that cache the IdP's metadata
 * read it again (docs/saml.md).
 */
export async function signingCertificate(
  keys: { signingKey(alg: 'RS256'): Promise<{ readonly kid: string; readonly privateKey: KeyObject }> },
  commonName: string,
): Promise<SigningCertificate> {
  const key = await keys.signingKey('RS256');
  const cacheKey = `${key.kid} ${commonName}`;
  let certificate = certificates.get(cacheKey);
  if (certificate === undefined) {
    certificate = pemCertificate(selfSignedCertificate(key.privateKey, commonName, key.kid));
    if (certificates.size > 16) certificates.clear();
    certificates.set(cacheKey, certificate);
  }
  return { kid: key.kid, privateKey: key.privateKey, certificate };
}

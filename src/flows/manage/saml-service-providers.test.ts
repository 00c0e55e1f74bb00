/**
 * Registering SAML service providers without HTTP: `addSamlSp`, `updateSamlSp` and
 * `removeSamlSp`, the operations behind `tessera saml sp …`, /admin/saml/service-providers and
 * the console's SAML page, each rule a row of a table, and reading an SP's metadata
 * (flows/saml/metadata-import.ts) from the XML it is given: what it fills in, and what a
 * document must not be (a DTD, a second SP, another entity's). test/admin-api.test.ts and
 * test/admin-authority.test.ts check the admin API's routes and their scopes; test/saml.test.ts
 * and test/saml-browser.test.ts sign in to registered SPs.
 */
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { SamlServiceProviderRecord } from '../../store/saml.ts';
import { pemCertificate, selfSignedCertificate } from '../../tokens/certificate.ts';
import { BINDINGS, NAME_ID_FORMAT_URIS, readSpMetadata, UNSPECIFIED_NAME_ID } from '../saml/metadata-import.ts';
import { XmlRefusal } from '../saml/xml.ts';
import { scopesAllow } from './admin-token.ts';
import { MAX_CERTIFICATE_CHARS, MAX_METADATA_CHARS, SAML_SP_FIELDS } from './fields/saml-service-providers.ts';
import { addSamlSp, getSamlSp, MAX_SAML_SPS, removeSamlSp, updateSamlSp, type SamlSpInput } from './saml-service-providers.ts';

/** One key, two certificates (their names differ): making RSA keys is what takes the time here. */
const SP_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
/** DER, as the SP's metadata carries it (base64 inside ds:X509Certificate). */
const SIGNING_DER = selfSignedCertificate(SP_KEY, 'wiki signing', 'wiki signing');
const ENCRYPTION_DER = selfSignedCertificate(SP_KEY, 'wiki encryption', 'wiki encryption');
const SIGNING_PEM = pemCertificate(SIGNING_DER).trim();
const ENCRYPTION_PEM = pemCertificate(ENCRYPTION_DER).trim();

const tlv = (tag: number, value: Buffer): Buffer => {
  const n = value.length;
  const length = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), length, value]);
};
const sequence = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const SHA256_WITH_RSA = sequence(tlv(0x06, Buffer.from('2a864886f70d01010b', 'hex')), Buffer.from([0x05, 0x00]));

/**
 * A version 1 certificate (RFC 5280 §4.1) of `key`'s public key, valid until `notAfter`
 * (UTCTime): written here since selfSignedCertificate makes RSA ones that never expire. Its
 * signature is not a signature: X509Certificate reads a certificate, it does not check it.
 */
function certificateOf(key: KeyObject, notAfter = '491231235959Z'): string {
  const name = sequence(tlv(0x31, sequence(tlv(0x06, Buffer.from('550403', 'hex')), tlv(0x0c, Buffer.from('sp')))));
  const validity = sequence(tlv(0x17, Buffer.from('200101000000Z')), tlv(0x17, Buffer.from(notAfter)));
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  const tbs = sequence(tlv(0x02, Buffer.from([1])), SHA256_WITH_RSA, name, validity, name, spki);
  return pemCertificate(sequence(tbs, SHA256_WITH_RSA, tlv(0x03, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)]))));
}
const EC_CERTIFICATE = certificateOf(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
const ED25519_CERTIFICATE = certificateOf(generateKeyPairSync('ed25519').privateKey);
/** Expired on 1 January 2021. */
const EXPIRED_CERTIFICATE = certificateOf(SP_KEY, '210101000000Z');

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const ARTIFACT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact';
const WIKI = 'https://wiki.example.com/saml';

const acs = (url: string, binding: string = BINDINGS.post, extra = '') => `<md:AssertionConsumerService Binding="${binding}" Location="${url}"${extra}/>`;
const keyDescriptor = (der: Buffer, use: string | null) =>
  `<md:KeyDescriptor${use === null ? '' : ` use="${use}"`}><ds:KeyInfo><ds:X509Data><ds:X509Certificate>
${der.toString('base64').replace(/(.{64})/g, '$1\n')}
</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`;
const spDescriptor = (inner: string, attributes = '') =>
  `<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"${attributes}>${inner}</md:SPSSODescriptor>`;
const entity = (entityId: string, inner: string) =>
  `<md:EntityDescriptor xmlns:md="${MD}" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">${inner}</md:EntityDescriptor>`;

/** An SP's metadata as an SP exports it: two keys, both logout bindings, NameID formats it would take, ACS endpoints of three bindings and indexes. */
function wikiMetadata(entityId = WIKI): string {
  return `
<?xml version="1.0" encoding="UTF-8"?>
${entity(
  entityId,
  spDescriptor(
    [
      keyDescriptor(SIGNING_DER, 'signing'),
      keyDescriptor(ENCRYPTION_DER, 'encryption'),
      `<md:SingleLogoutService Binding="${BINDINGS.post}" Location="${entityId}/slo-post"/>`,
      `<md:SingleLogoutService Binding="${BINDINGS.redirect}" Location="${entityId}/slo"/>`,
      `<md:NameIDFormat>${UNSPECIFIED_NAME_ID}</md:NameIDFormat>`,
      `<md:NameIDFormat>\n  ${NAME_ID_FORMAT_URIS.email}\n</md:NameIDFormat>`,
      `<md:NameIDFormat>${NAME_ID_FORMAT_URIS.persistent}</md:NameIDFormat>`,
      acs(`${entityId}/artifact`, ARTIFACT, ' index="0"'),
      acs(`${entityId}/acs-2`, BINDINGS.post, ' index="2"'),
      acs(`${entityId}/acs-1`, BINDINGS.post, ' index="1"'),
      acs(`${entityId}/acs-default`, BINDINGS.post, ' index="3" isDefault="true"'),
    ].join('\n'),
    ' AuthnRequestsSigned="true" WantAssertionsSigned="true"',
  ),
)}
`;
}

describe('registering SAML service providers (flows/manage/saml-service-providers.ts)', () => {
  let world: FlowWorld;
  let made = 0;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /** An input for a new SP, its entity ID and ACS URL its own. */
  const fresh = (input: SamlSpInput = {}): SamlSpInput => {
    made += 1;
    return { entity_id: `https://sp${made}.example.com/saml`, acs_urls: [`https://sp${made}.example.com/saml/acs`], ...input };
  };
  const eventsOf = async (type: string) => (await world.store.events.list({ type: type as never, limit: 1000 })).map((event) => event.detail);

  it('adds an SP with its defaults: persistent NameIDs, HTTP-Redirect logout, no attributes, unsigned requests, no IdP-initiated sign-in, a NameID key of its own', async () => {
    const sp = await addSamlSp(world.manage, { entity_id: WIKI, acs_urls: [`${WIKI}/acs`, `${WIKI}/acs-2`] });
    const { id, nameIdSalt, ...rest } = sp;
    assert.deepEqual(rest, {
      entityId: WIKI,
      name: null,
      acsUrls: [`${WIKI}/acs`, `${WIKI}/acs-2`],
      // Given as a list: named by position by an AuthnRequest's AssertionConsumerServiceIndex.
      acsIndexes: { '0': `${WIKI}/acs`, '1': `${WIKI}/acs-2` },
      sloUrl: null,
      sloBinding: 'redirect',
      nameIdFormat: 'persistent',
      attributes: {},
      wantSignedRequests: false,
      signResponse: false,
      // SAML Profiles §4.1.5: an SP takes unsolicited Responses only when it is registered to.
      idpInitiated: false,
      certificate: null,
      encryptionCertificate: null,
      createdAt: world.clock.now(),
      updatedAt: world.clock.now(),
    });
    assert.equal(Buffer.from(nameIdSalt, 'base64url').length, 32, 'SAML Core §8.3.7: a persistent NameID no other SP can link to its own');
    assert.deepEqual(await world.store.samlServiceProviders.get(id), sp);
    assert.deepEqual(await getSamlSp(world.manage, WIKI), sp, 'found by its entity ID as by its id');
    assert.deepEqual((await eventsOf('saml_sp.created')).at(0), { saml_sp: id, entity_id: WIKI, acs_urls: `${WIKI}/acs ${WIKI}/acs-2`, by: 'operator' });
    await removeSamlSp(world.manage, id);
  });

  it('adds an SP with what it is given: its name, ACS URLs said once, attribute mapping, flags, and its certificates kept as PEM', async () => {
    const input = fresh({ name: '  Wiki  ', slo_url: 'https://wiki.example.com/slo', slo_binding: 'post', name_id_format: 'email' });
    const urls = input.acs_urls as string[];
    const sp = await addSamlSp(world.manage, {
      ...input,
      acs_urls: [...urls, 'http://127.0.0.1:8080/acs', urls[0]],
      attributes: { mail: 'email', uid: 'sub', 'urn:oid:2.5.4.42': 'given_name' },
      want_signed_requests: true,
      sign_response: true,
      idp_initiated: true,
      // As metadata holds it: the base64 DER without the PEM lines, wrapped.
      certificate: SIGNING_DER.toString('base64').replace(/(.{76})/g, '$1\n'),
      encryption_certificate: `${ENCRYPTION_PEM}\n`,
    });
    assert.deepEqual(
      [sp.name, sp.acsUrls, sp.sloUrl, sp.sloBinding, sp.nameIdFormat, sp.attributes, sp.wantSignedRequests, sp.signResponse, sp.idpInitiated],
      [
        'Wiki',
        [urls[0], 'http://127.0.0.1:8080/acs'],
        'https://wiki.example.com/slo',
        'post',
        'email',
        { mail: 'email', uid: 'sub', 'urn:oid:2.5.4.42': 'given_name' },
        true,
        true,
        true,
      ],
    );
    assert.deepEqual([sp.certificate, sp.encryptionCertificate], [SIGNING_PEM, ENCRYPTION_PEM]);
    const other = await addSamlSp(world.manage, fresh());
    assert.notEqual(other.nameIdSalt, sp.nameIdSalt, 'each SP knows a person by an id of its own');
  });

  it('takes an EC signing certificate, and an expired one: of a certificate in SAML metadata only its key counts', async () => {
    // SAML V2.0 Metadata Interoperability Profile §2.5.1: the key is trusted, not the certificate;
    // its validity period is not checked (Tessera's own never expires: tokens/certificate.ts).
    const ec = await addSamlSp(world.manage, fresh({ certificate: EC_CERTIFICATE, want_signed_requests: true }));
    assert.equal(ec.certificate, EC_CERTIFICATE.trim());
    const expired = await addSamlSp(world.manage, fresh({ certificate: EXPIRED_CERTIFICATE }));
    assert.equal(expired.certificate, EXPIRED_CERTIFICATE.trim());
  });

  it('refuses an SP a rule forbids, naming the field', async () => {
    const urls = (n: number) => Array.from({ length: n }, (_, i) => `https://sp.example.com/acs/${i}`);
    const attributes = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, 'email']));
    const cases: [string, SamlSpInput, string][] = [
      ['no entity ID', fresh({ entity_id: undefined }), 'invalid:entity_id'],
      ['an entity ID of spaces', fresh({ entity_id: '   ' }), 'invalid:entity_id'],
      ['an entity ID that is not a URI', fresh({ entity_id: 'sp.example.com' }), 'invalid:entity_id'],
      ['an entity ID with a space', fresh({ entity_id: 'https://sp.example.com/my saml' }), 'invalid:entity_id'],
      ['an entity ID of 1025 characters (SAML Metadata §2.3.2)', fresh({ entity_id: `urn:${'x'.repeat(1021)}` }), 'invalid:entity_id'],
      ['a bad entity ID, named before the other fields', fresh({ entity_id: 'not a uri', name_id_format: 'x' }), 'invalid:entity_id'],
      ['no ACS URL', fresh({ acs_urls: undefined }), 'invalid:acs_urls'],
      ['an empty list of ACS URLs', fresh({ acs_urls: [] }), 'invalid:acs_urls'],
      ['an ACS URL as a string, not a list', fresh({ acs_urls: 'https://sp.example.com/acs' }), 'invalid:acs_urls'],
      ['11 ACS URLs', fresh({ acs_urls: urls(11) }), 'invalid:acs_urls'],
      ['a relative ACS URL', fresh({ acs_urls: ['/saml/acs'] }), 'invalid:acs_urls'],
      ['an ACS URL that is neither http nor https', fresh({ acs_urls: ['ftp://sp.example.com/acs'] }), 'invalid:acs_urls'],
      ['a javascript: ACS URL', fresh({ acs_urls: ['javascript:alert(1)'] }), 'invalid:acs_urls'],
      ['an ACS URL with a fragment', fresh({ acs_urls: ['https://sp.example.com/acs#top'] }), 'invalid:acs_urls'],
      ['an ACS URL ending in a bare #, whose URL.hash is empty', fresh({ acs_urls: ['https://sp.example.com/acs#'] }), 'invalid:acs_urls'],
      ['an ACS URL with a user name', fresh({ acs_urls: ['https://admin@sp.example.com/acs'] }), 'invalid:acs_urls'],
      ['an ACS URL with a password', fresh({ acs_urls: ['https://:secret@sp.example.com/acs'] }), 'invalid:acs_urls'],
      ['an ACS URL of 2049 characters', fresh({ acs_urls: [`https://sp.example.com/${'a'.repeat(2049 - 23)}`] }), 'invalid:acs_urls'],
      ['an ACS URL that is not a string', fresh({ acs_urls: [42] }), 'invalid:acs_urls'],
      ['a logout URL with a fragment', fresh({ slo_url: 'https://sp.example.com/slo#x' }), 'invalid:slo_url'],
      ['an empty logout URL', fresh({ slo_url: '' }), 'invalid:slo_url'],
      ['a logout binding SAML has but Tessera does not send', fresh({ slo_binding: 'artifact' }), 'invalid:slo_binding'],
      ['an unknown NameID format', fresh({ name_id_format: 'unspecified' }), 'invalid:name_id_format'],
      ['a NameID format as its URI', fresh({ name_id_format: NAME_ID_FORMAT_URIS.email }), 'invalid:name_id_format'],
      ['a NameID format that is not a string', fresh({ name_id_format: 1 }), 'invalid:name_id_format'],
      ['attributes as a list of claims', fresh({ attributes: ['email'] }), 'invalid:attributes'],
      ['attributes as a string', fresh({ attributes: 'mail=email' }), 'invalid:attributes'],
      ['31 attributes', fresh({ attributes: attributes(31) }), 'invalid:attributes'],
      ['an attribute named with a space', fresh({ attributes: { 'e mail': 'email' } }), 'invalid:attributes'],
      ['an attribute with no name', fresh({ attributes: { '': 'email' } }), 'invalid:attributes'],
      ['an attribute name of 257 characters', fresh({ attributes: { ['a'.repeat(257)]: 'email' } }), 'invalid:attributes'],
      ['an attribute of a claim there is not', fresh({ attributes: { mail: 'mail' } }), 'invalid:attributes'],
      ['an attribute of a password hash', fresh({ attributes: { pw: 'passwordHash' } }), 'invalid:attributes'],
      ['an attribute of no claim', fresh({ attributes: { mail: null } }), 'invalid:attributes'],
      ['signed requests asked as a string', fresh({ want_signed_requests: 'true' }), 'invalid:want_signed_requests'],
      ['signed requests without the certificate they are checked with', fresh({ want_signed_requests: true }), 'invalid:want_signed_requests'],
      ['a signed response asked as a number', fresh({ sign_response: 1 }), 'invalid:sign_response'],
      ['IdP-initiated sign-in asked as a string', fresh({ idp_initiated: 'yes' }), 'invalid:idp_initiated'],
      ['a certificate that is not PEM', fresh({ certificate: 'not a certificate' }), 'invalid:certificate'],
      ['a certificate that is not X.509', fresh({ certificate: Buffer.from('not DER at all').toString('base64') }), 'invalid:certificate'],
      ['a certificate with characters that are not base64', fresh({ certificate: SIGNING_PEM.replace(/\n(?!-)/, '\n*') }), 'invalid:certificate'],
      ['a certificate cut short', fresh({ certificate: SIGNING_PEM.slice(0, 400) }), 'invalid:certificate'],
      ['a certificate past the bound', fresh({ certificate: `${SIGNING_PEM}\n${' '.repeat(MAX_CERTIFICATE_CHARS)}` }), 'invalid:certificate'],
      ['a certificate that is not a string', fresh({ certificate: 12 }), 'invalid:certificate'],
      ['a certificate of an Ed25519 key', fresh({ certificate: ED25519_CERTIFICATE }), 'invalid:certificate'],
      ['an encryption certificate that is not X.509', fresh({ encryption_certificate: 'QUJD' }), 'invalid:encryption_certificate'],
      ['an encryption certificate of an EC key (RSA-OAEP)', fresh({ encryption_certificate: EC_CERTIFICATE }), 'invalid:encryption_certificate'],
      ['a name of 201 characters', fresh({ name: 'n'.repeat(201) }), 'invalid:name'],
      ['a name with a line break', fresh({ name: 'Wiki\nAdmin' }), 'invalid:name'],
      ['a name with a right-to-left override', fresh({ name: 'Wiki\u202eAdmin' }), 'invalid:name'],
      ['a name that is not a string', fresh({ name: 7 }), 'invalid:name'],
      ['metadata that is not a string', fresh({ metadata: { entityID: WIKI } }), 'invalid:metadata'],
      ["another entity's metadata beside the entity ID given", fresh({ metadata: wikiMetadata('https://elsewhere.example.com/saml') }), 'invalid:metadata'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addSamlSp(world.manage, input)), expected, what);
    await assert.rejects(() => addSamlSp(world.manage, fresh({ entity_id: ' ' })), /entity_id is required/, 'spaces are no entity ID at all');
    const blank = await addSamlSp(world.manage, fresh({ name: '   ' }));
    assert.equal(blank.name, null, 'a name of spaces is none: its entity ID is shown');
    await removeSamlSp(world.manage, blank.id);
    const kept = (await world.store.samlServiceProviders.list()).map((sp) => sp.entityId);
    for (const [what, input] of cases) assert.equal(kept.includes(String(input.entity_id)), false, `${what}: not stored`);
  });

  it("fills a registration from the SP's metadata: entity ID, POST ACS URLs default first, logout, NameID format, signing and encryption keys", async () => {
    const metadata = wikiMetadata('https://meta.example.com/saml');
    const read = readSpMetadata(metadata, MAX_METADATA_CHARS);
    assert.deepEqual(read, {
      entityId: 'https://meta.example.com/saml',
      // SAML Metadata §2.4.4.1: the one marked isDefault first, then by index; HTTP-POST ones only.
      acsUrls: ['https://meta.example.com/saml/acs-default', 'https://meta.example.com/saml/acs-1', 'https://meta.example.com/saml/acs-2'],
      // §2.2.3: each by the index its metadata gave it, not its place in that list.
      acsIndexes: {
        '1': 'https://meta.example.com/saml/acs-1',
        '2': 'https://meta.example.com/saml/acs-2',
        '3': 'https://meta.example.com/saml/acs-default',
      },
      sloUrl: 'https://meta.example.com/saml/slo',
      sloBinding: 'redirect',
      nameIdFormat: 'email',
      wantSignedRequests: true,
      certificate: SIGNING_DER.toString('base64'),
      encryptionCertificate: ENCRYPTION_DER.toString('base64'),
    });
    assert.deepEqual(
      readSpMetadata(`\n\n${metadata}\n\n`, metadata.trim().length),
      read,
      'the whitespace around the document does not count against the bound',
    );
    const sp = await addSamlSp(world.manage, { metadata, name: 'From metadata' });
    assert.deepEqual(
      [
        sp.entityId,
        sp.name,
        sp.acsUrls,
        sp.acsIndexes,
        sp.sloUrl,
        sp.sloBinding,
        sp.nameIdFormat,
        sp.wantSignedRequests,
        sp.certificate,
        sp.encryptionCertificate,
      ],
      [read.entityId, 'From metadata', read.acsUrls, read.acsIndexes, read.sloUrl, 'redirect', 'email', true, SIGNING_PEM, ENCRYPTION_PEM],
    );
    // Kept while the URLs are the metadata's; a list of URLs given instead is named by position.
    assert.deepEqual((await updateSamlSp(world.manage, sp.id, { name: 'Renamed' })).acsIndexes, read.acsIndexes);
    const listed = await updateSamlSp(world.manage, sp.id, { acs_urls: ['https://meta.example.com/saml/acs-2'] });
    assert.deepEqual(listed.acsIndexes, { '0': 'https://meta.example.com/saml/acs-2' });
    assert.equal(JSON.stringify(await world.store.samlServiceProviders.get(sp.id)).includes('EntityDescriptor'), false, 'the document itself is not kept');
  });

  it('takes as the default ACS the one marked isDefault, else the first not marked false, else the first, in document order (SAML Metadata §2.2.3)', () => {
    const entityId = 'https://default.example.com/saml';
    const defaultOf = (...endpoints: string[]) => readSpMetadata(entity(entityId, spDescriptor(endpoints.join(''))), MAX_METADATA_CHARS).acsUrls[0];
    const [five, two, one] = [`${entityId}/acs-5`, `${entityId}/acs-2`, `${entityId}/acs-1`];
    assert.equal(
      defaultOf(acs(five, BINDINGS.post, ' index="5"'), acs(two, BINDINGS.post, ' index="2"')),
      five,
      'none marked: the first listed, not the lowest index',
    );
    assert.equal(
      defaultOf(acs(five, BINDINGS.post, ' index="5" isDefault="false"'), acs(two, BINDINGS.post, ' index="2"'), acs(one, BINDINGS.post, ' index="1"')),
      two,
      'the first not marked false',
    );
    assert.equal(
      defaultOf(acs(five, BINDINGS.post, ' index="5" isDefault="0"'), acs(two, BINDINGS.post, ' index="2" isDefault="false"')),
      five,
      'all marked false: the first listed',
    );
    assert.equal(
      defaultOf(acs(five, BINDINGS.post, ' index="5"'), acs(two, BINDINGS.post, ' index="2" isDefault="1"')),
      two,
      'the one marked true, written as 1 (xs:boolean)',
    );
    assert.throws(() => defaultOf(acs(five, BINDINGS.post, ' index="5" isDefault="yes"')), /not an xs:boolean/);
  });

  it('describes want_signed_requests as what it governs, the AuthnRequests: a LogoutRequest is signed whatever it says (SAML Profiles §4.4.4.1)', () => {
    // The description is the CLI's help, the admin API's schema and the console's: an operator
    // reading that the flag covers LogoutRequests would think an SP without it may send them unsigned.
    const { description } = SAML_SP_FIELDS.find((field) => field.name === 'want_signed_requests')!;
    assert.match(description, /^Its AuthnRequests must be signed/);
    assert.match(description, /LogoutRequests must always be signed/);
  });

  it('lets what is given override what the metadata says, and takes a key without a use for both (SAML Metadata §2.4.1.1)', async () => {
    const entityId = 'https://both.example.com/saml';
    const metadata = entity(
      entityId,
      spDescriptor(
        [
          keyDescriptor(SIGNING_DER, null),
          `<md:SingleLogoutService Binding="${BINDINGS.post}" Location="${entityId}/slo"/>`,
          `<md:NameIDFormat>${UNSPECIFIED_NAME_ID}</md:NameIDFormat>`,
          acs(`${entityId}/acs`),
        ].join(''),
      ),
    );
    const read = readSpMetadata(metadata, MAX_METADATA_CHARS);
    assert.deepEqual(
      [read.certificate, read.encryptionCertificate, read.sloBinding, read.nameIdFormat, read.wantSignedRequests],
      [SIGNING_DER.toString('base64'), SIGNING_DER.toString('base64'), 'post', null, false],
    );
    const sp = await addSamlSp(world.manage, {
      metadata,
      acs_urls: [`${entityId}/other-acs`],
      slo_binding: 'redirect',
      name_id_format: 'transient',
      want_signed_requests: true,
      encryption_certificate: null,
    });
    assert.deepEqual(
      [sp.entityId, sp.acsUrls, sp.sloUrl, sp.sloBinding, sp.nameIdFormat, sp.wantSignedRequests, sp.certificate, sp.encryptionCertificate],
      [entityId, [`${entityId}/other-acs`], `${entityId}/slo`, 'redirect', 'transient', true, SIGNING_PEM, null],
    );
    const plain = await addSamlSp(world.manage, { metadata: entity('urn:example:plain', spDescriptor(acs('https://plain.example.com/acs'))) });
    assert.deepEqual(
      [plain.nameIdFormat, plain.sloUrl, plain.sloBinding, plain.certificate, plain.acsIndexes],
      ['persistent', null, 'redirect', null, {}],
      'the defaults where it says nothing; an ACS endpoint without an index is named by its URL only',
    );
  });

  it('refuses metadata that is not one SP\'s EntityDescriptor, or that declares a DTD, naming the field "metadata"', async () => {
    const good = spDescriptor(acs('https://bad.example.com/acs'));
    const two = `<md:EntitiesDescriptor xmlns:md="${MD}">${entity('https://a.example.com', good)}${entity('https://b.example.com', good)}</md:EntitiesDescriptor>`;
    const cases: [string, string, XmlRefusal['reason'], RegExp][] = [
      [
        'an external entity (XXE)',
        `<?xml version="1.0"?><!DOCTYPE md:EntityDescriptor [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${entity('https://bad.example.com/&xxe;', good)}`,
        'doctype',
        /document type declaration/,
      ],
      ['a DTD with no entity', `<!DOCTYPE html>${entity('https://bad.example.com', good)}`, 'doctype', /document type declaration/],
      [
        'billion laughs',
        `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>${entity('https://bad.example.com/&lol2;', good)}`,
        'doctype',
        /document type declaration/,
      ],
      ['several entities (an EntitiesDescriptor)', two, 'unexpected', /not an EntityDescriptor/],
      [
        'an EntityDescriptor of another namespace',
        entity('https://bad.example.com', good)
          .replace(`xmlns:md="${MD}"`, `xmlns:md="${MD}" xmlns:x="urn:x"`)
          .replace(/md:EntityDescriptor/g, 'x:EntityDescriptor'),
        'unexpected',
        /not an EntityDescriptor/,
      ],
      ['no entityID', entity('', good).replace(' entityID=""', ''), 'unexpected', /no entityID/],
      ['an empty entityID', entity('', good), 'unexpected', /no entityID/],
      [
        'an IdP, no SPSSODescriptor',
        entity('https://bad.example.com', `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"/>`),
        'unexpected',
        /no SPSSODescriptor/,
      ],
      ['two SPSSODescriptors', entity('https://bad.example.com', `${good}${good}`), 'unexpected', /more than one SPSSODescriptor/],
      ['no AssertionConsumerService', entity('https://bad.example.com', spDescriptor('')), 'unexpected', /HTTP-POST/],
      [
        'ACS endpoints of the Redirect and Artifact bindings only',
        entity('https://bad.example.com', spDescriptor(acs('https://bad.example.com/acs', BINDINGS.redirect) + acs('https://bad.example.com/art', ARTIFACT))),
        'unexpected',
        /HTTP-POST/,
      ],
      [
        'a comment inside a NameIDFormat',
        entity('https://bad.example.com', spDescriptor(`<md:NameIDFormat>urn:x<!-- -->y</md:NameIDFormat>${acs('https://bad.example.com/acs')}`)),
        'unexpected',
        /text only/,
      ],
      [
        'two ACS endpoints of one index (SAML Metadata §2.2.3: unique)',
        entity(
          'https://bad.example.com',
          spDescriptor(acs('https://bad.example.com/a', BINDINGS.post, ' index="1"') + acs('https://bad.example.com/b', BINDINGS.post, ' index="01"')),
        ),
        'unexpected',
        /index 1/,
      ],
      [
        'an ACS index that is no xs:unsignedShort',
        entity('https://bad.example.com', spDescriptor(acs('https://bad.example.com/a', BINDINGS.post, ' index="65536"'))),
        'unexpected',
        /index 65536/,
      ],
      ['not well-formed', entity('https://bad.example.com', good).replace('</md:EntityDescriptor>', ''), 'malformed', /well-formed/],
      [
        `larger than ${MAX_METADATA_CHARS} characters`,
        entity('https://bad.example.com', `<!--${'x'.repeat(MAX_METADATA_CHARS)}-->${good}`),
        'too_large',
        /larger than/,
      ],
    ];
    for (const [what, xml, reason, message] of cases) {
      assert.throws(
        () => readSpMetadata(xml, MAX_METADATA_CHARS),
        (error: unknown) => error instanceof XmlRefusal && error.reason === reason && message.test(error.message),
        what,
      );
      assert.equal(await outcome(() => addSamlSp(world.manage, { metadata: xml })), 'invalid:metadata', what);
    }
    assert.equal(
      (await world.store.samlServiceProviders.list()).some((sp) => sp.entityId.includes('bad.example.com')),
      false,
      'none stored',
    );
    // What the metadata fills is checked as if it were given.
    const badAcs = entity('https://bad.example.com', spDescriptor(acs('javascript:alert(1)')));
    assert.equal(await outcome(() => addSamlSp(world.manage, { metadata: badAcs })), 'invalid:acs_urls');
    const badCert = entity(
      'https://bad.example.com',
      spDescriptor(
        `<md:KeyDescriptor><ds:KeyInfo><ds:X509Data><ds:X509Certificate>QUJD</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>${acs('https://bad.example.com/acs')}`,
      ),
    );
    assert.equal(await outcome(() => addSamlSp(world.manage, { metadata: badCert })), 'invalid:certificate');
  });

  it('refuses an entity ID already registered, given or read from metadata, and keeps the one there', async () => {
    const first = await addSamlSp(world.manage, fresh());
    const entityId = first.entityId;
    assert.equal(await outcome(() => addSamlSp(world.manage, { entity_id: entityId, acs_urls: ['https://other.example.com/acs'] })), 'conflict:entity_id');
    const metadata = entity(entityId, spDescriptor(acs('https://other.example.com/acs')));
    assert.equal(await outcome(() => addSamlSp(world.manage, { metadata })), 'conflict:entity_id');
    assert.deepEqual(await world.store.samlServiceProviders.byEntityId(entityId), first);
  });

  it('changes only what an update names: the rest, the NameID key and when it was added stay', async () => {
    const sp = await addSamlSp(
      world.manage,
      fresh({
        name: 'Before',
        slo_url: 'https://before.example.com/slo',
        slo_binding: 'post',
        name_id_format: 'email',
        attributes: { mail: 'email' },
        want_signed_requests: true,
        sign_response: true,
        idp_initiated: true,
        certificate: SIGNING_PEM,
        encryption_certificate: ENCRYPTION_PEM,
      }),
    );
    world.clock.advance(60_000);
    const renamed = await updateSamlSp(world.manage, sp.id, { name: 'After' });
    assert.deepEqual(renamed, { ...sp, name: 'After', updatedAt: sp.updatedAt + 60_000 });
    assert.deepEqual(await world.store.samlServiceProviders.get(sp.id), renamed);
    assert.deepEqual((await eventsOf('saml_sp.updated')).at(0), { saml_sp: sp.id, entity_id: sp.entityId, fields: 'name', by: 'operator' });

    const byEntityId = await updateSamlSp(world.manage, sp.entityId, { entity_id: sp.entityId, acs_urls: ['https://after.example.com/acs'], attributes: {} });
    assert.deepEqual(
      byEntityId,
      { ...renamed, acsUrls: ['https://after.example.com/acs'], acsIndexes: { '0': 'https://after.example.com/acs' }, attributes: {} },
      'by its entity ID; the same entity ID is no change',
    );
    const cleared = await updateSamlSp(world.manage, sp.id, {
      name: null,
      slo_url: null,
      want_signed_requests: false,
      idp_initiated: false,
      certificate: null,
      encryption_certificate: null,
    });
    assert.deepEqual(cleared, {
      ...byEntityId,
      name: null,
      sloUrl: null,
      wantSignedRequests: false,
      idpInitiated: false,
      certificate: null,
      encryptionCertificate: null,
    });

    const cases: [string, SamlSpInput, string][] = [
      ['another entity ID', { entity_id: 'https://elsewhere.example.com/saml' }, 'invalid:entity_id'],
      ["another entity's metadata", { metadata: wikiMetadata('https://elsewhere.example.com/saml') }, 'invalid:metadata'],
      ['no ACS URL left', { acs_urls: [] }, 'invalid:acs_urls'],
      ['an ACS URL with a fragment', { acs_urls: ['https://after.example.com/acs#x'] }, 'invalid:acs_urls'],
      ['an unknown NameID format', { name_id_format: 'kerberos' }, 'invalid:name_id_format'],
      ['signed requests, no certificate to check them with', { want_signed_requests: true }, 'invalid:want_signed_requests'],
      ['a certificate that is not one', { certificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }, 'invalid:certificate'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => updateSamlSp(world.manage, sp.id, input)), expected, what);
    assert.deepEqual(await world.store.samlServiceProviders.get(sp.id), cleared, 'a refused update changes nothing');

    const refilled = await updateSamlSp(world.manage, sp.id, { metadata: wikiMetadata(sp.entityId) });
    assert.deepEqual(
      [refilled.acsUrls.length, refilled.sloBinding, refilled.nameIdFormat, refilled.wantSignedRequests, refilled.certificate, refilled.nameIdSalt],
      [3, 'redirect', 'email', true, SIGNING_PEM, sp.nameIdSalt],
      'its own metadata fills it again',
    );
    assert.equal(await outcome(() => updateSamlSp(world.manage, 'https://nowhere.example.com/saml', { name: 'X' })), 'not_found');
  });

  it('removes an SP by its id or entity ID; after that it is not found, to read, change or remove', async () => {
    const [one, two] = [await addSamlSp(world.manage, fresh()), await addSamlSp(world.manage, fresh())];
    await removeSamlSp(world.manage, one.id);
    await removeSamlSp(world.manage, two.entityId);
    for (const sp of [one, two]) {
      assert.equal(await world.store.samlServiceProviders.get(sp.id), null);
      assert.equal(await outcome(() => getSamlSp(world.manage, sp.id)), 'not_found');
      assert.equal(await outcome(() => getSamlSp(world.manage, sp.entityId)), 'not_found');
      assert.equal(await outcome(() => updateSamlSp(world.manage, sp.id, { name: 'Again' })), 'not_found');
      assert.equal(await outcome(() => removeSamlSp(world.manage, sp.id)), 'not_found', 'removed once');
    }
    const removed = await eventsOf('saml_sp.removed');
    for (const sp of [one, two])
      assert.ok(removed.some((detail) => JSON.stringify(detail) === JSON.stringify({ saml_sp: sp.id, entity_id: sp.entityId, by: 'operator' })));
    const again = await addSamlSp(world.manage, { entity_id: one.entityId, acs_urls: one.acsUrls });
    assert.notEqual(again.nameIdSalt, one.nameIdSalt, 'its entity ID added again is a new SP, with new persistent NameIDs');
  });

  it('answers not_found, writing nothing, for an SP another caller removed between reading and writing it', async () => {
    const spStore = world.store.samlServiceProviders;
    const racing = {
      ...world.manage,
      store: {
        ...world.store,
        samlServiceProviders: {
          ...spStore,
          get: async (id: string) => {
            const found = await spStore.get(id);
            if (found !== null) await spStore.remove(id);
            return found;
          },
        },
      },
    };
    const [one, two] = [await addSamlSp(world.manage, fresh()), await addSamlSp(world.manage, fresh())];
    assert.equal(await outcome(() => updateSamlSp(racing, one.id, { name: 'Too late' })), 'not_found');
    assert.equal(await outcome(() => removeSamlSp(racing, two.id)), 'not_found');
    assert.equal(await spStore.byEntityId(one.entityId), null, 'not written back');
    const told = [...(await eventsOf('saml_sp.updated')), ...(await eventsOf('saml_sp.removed'))].map((detail) => detail['saml_sp']);
    assert.equal(told.includes(one.id) || told.includes(two.id), false, 'no event for what did not happen');
  });

  it('is a door of its own: only admin:saml changes SPs, admin:saml:read reads them, no other admin scope does either', () => {
    // The operations take the caller's authority as checked by the door (the admin API's
    // route, the console's page): the area `saml`, an SP receives signed statements about people.
    const cases: [string, string[], boolean, boolean][] = [
      ['admin:saml', ['admin:saml'], true, true],
      ['admin:saml:read', ['admin:saml:read'], true, false],
      ['every other admin scope', ['admin:clients', 'admin:users', 'admin:providers', 'admin:keys', 'admin:orgs', 'admin:events'], false, false],
      ['none', [], false, false],
    ];
    for (const [what, held, read, write] of cases) assert.deepEqual([scopesAllow(held, 'saml', false), scopesAllow(held, 'saml', true)], [read, write], what);
  });

  it(`holds at most ${MAX_SAML_SPS} SPs: one more is a conflict until one is removed`, async () => {
    const template = await world.store.samlServiceProviders.list();
    const base = template[0] as SamlServiceProviderRecord;
    for (let i = template.length; i < MAX_SAML_SPS; i += 1)
      await world.store.samlServiceProviders.create({ ...base, id: `filler-${i}`, entityId: `urn:example:filler:${i}` });
    assert.equal(await outcome(() => addSamlSp(world.manage, fresh())), 'conflict');
    await removeSamlSp(world.manage, 'urn:example:filler:499');
    assert.equal(await outcome(() => addSamlSp(world.manage, fresh())), 'ok');
  });
});

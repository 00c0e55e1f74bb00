/**
 * The signed Response an SP is sent (SAML Core §2.3.3, §3.3.3; SAML Profiles §4.1.4.2), built
 * without HTTP: `samlAnswer` (sso.ts) over `assertionResponse`, `statusResponse` and
 * `nameIdOf` (response.ts), for SPs registered with flows/manage/saml-service-providers.ts and
 * the world's RS256 signing key and its certificate. Checked from the SP's side: the XML read
 * with the one parser of the SAML code (xml.ts), the signatures with xml-crypto (against the
 * IdP's certificate only, never a key the document carries) and the whole Response by
 * @node-saml/node-saml as the SP, its clock the world's. test/saml.test.ts and
 * test/saml-browser.test.ts play node-saml against the server over HTTP (both bindings,
 * IdP-initiated sign-in, encrypted assertions); request.test.ts reads AuthnRequests.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, it, mock } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { SAML, ValidateInResponseTo, type SamlConfig } from '@node-saml/node-saml';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { AuthMethod } from '../../core/auth-methods.ts';
import { samlEndpoints } from '../../core/endpoints.ts';
import type { SamlServiceProviderRecord, SessionRecord, UserRecord } from '../../store/types.ts';
import { pemCertificate, selfSignedCertificate, signingCertificate, type SigningCertificate } from '../../tokens/certificate.ts';
import { addSamlSp, removeSamlSp, updateSamlSp, type SamlSpInput } from '../manage/saml-service-providers.ts';
import { NAME_ID_FORMAT_URIS } from './metadata-import.ts';
import { readAuthnRequest, SamlRefusal, SIGNATURE_ALGORITHMS, type IncomingRequest } from './request.ts';
import { AUTHN_CONTEXT, nameIdOf, STATUS, statusResponse } from './response.ts';
import { pendingOf, samlAnswer, samlStatus, type PendingSamlSignIn } from './sso.ts';
import { attribute, children, onlyChild, parseXml, SAML_NS, textOf, xmlCrypto, type XmlElement } from './xml.ts';

const IDP = samlEndpoints(FLOW_ISSUER).metadata;
const ACS = ['https://wiki.example.com/saml/acs', 'https://wiki.example.com/saml/acs-2'];
const ENCRYPTION_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ENCRYPTION_CERT = pemCertificate(selfSignedCertificate(ENCRYPTION_KEY, 'sp-encryption', 'sp-encryption'));
/** Another key's certificate: what a forger could sign with. */
const STRANGER_CERT = pemCertificate(selfSignedCertificate(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'stranger', 'stranger'));
const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';
const HOUR = 3600_000;

/** What `iso` writes: an xs:dateTime in UTC, to the second (SAML Core §1.3.3). */
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Whether `parent` has a child `local` in `ns`: asserted as a boolean, as an element compared
 * in an assertion would be printed whole, DOM and all, when it fails.
 */
const has = (parent: XmlElement, ns: string, local: string): boolean => onlyChild(parent, ns, local) !== null;

/** The element down `path` from `parent` ('saml:X' in the assertion namespace, 'samlp:X' in the protocol's), exactly one at each step. */
function at(parent: XmlElement, ...path: string[]): XmlElement {
  let element = parent;
  for (const step of path) {
    const [prefix, local] = step.split(':') as [string, string];
    const child = onlyChild(element, prefix === 'samlp' ? SAML_NS.protocol : SAML_NS.assertion, local);
    assert.ok(child, `${step} in ${element.localName}`);
    element = child;
  }
  return element;
}

const rootOf = (xml: string): XmlElement => parseXml(xml, 1_000_000).documentElement!;

/** The assertion's attributes, each with its values, as an SP reads the AttributeStatement. */
function attributesOf(assertion: XmlElement): Record<string, string[]> {
  const statement = onlyChild(assertion, SAML_NS.assertion, 'AttributeStatement');
  if (statement === null) return {};
  return Object.fromEntries(
    children(statement, SAML_NS.assertion, 'Attribute').map((each) => [
      attribute(each, 'Name'),
      children(each, SAML_NS.assertion, 'AttributeValue').map((value) => textOf(value)),
    ]),
  );
}

describe('the Response to an SP (flows/saml/response.ts, sso.ts samlAnswer)', () => {
  let world: FlowWorld;
  let signer: SigningCertificate;
  let ada: UserRecord;
  let made = 0;
  let sessions = 0;
  let requests = 0;

  before(async () => {
    world = await flowWorld();
    signer = await signingCertificate(world.keys, FLOW_ISSUER);
    ada = await world.addUser({
      username: 'ada',
      name: 'Ada <Lovelace> & "Byron"',
      email: 'ada@example.com',
      emailVerified: true,
      familyName: 'Lovelace',
      phoneNumber: '+44 20 7946 0000',
    });
  });
  after(() => world.close());

  /** A registered SP of its own entity ID, with `input` over the defaults (two ACS URLs, persistent NameIDs). */
  const registered = (input: SamlSpInput = {}): Promise<SamlServiceProviderRecord> => {
    made += 1;
    return addSamlSp(world.manage, { entity_id: `https://sp${made}.example.com/saml`, acs_urls: ACS, ...input });
  };

  /** A session of `user`, signed in a minute ago by `amr` (absent: a session from before methods were kept). */
  function sessionOf(user: UserRecord, amr?: readonly AuthMethod[]): SessionRecord {
    sessions += 1;
    const now = world.clock.now();
    return {
      idHash: `hash-${sessions}`,
      sid: `sid-${sessions}`,
      userId: user.id,
      authTime: now - 60_000,
      createdAt: now - 60_000,
      expiresAt: now + 8 * HOUR,
      ...(amr === undefined ? {} : { amr }),
      ip: null,
      userAgent: null,
    };
  }

  /** The sign-in waiting for `sp`: its first ACS URL, a request of its own, unless `fields` say otherwise. */
  function pending(sp: SamlServiceProviderRecord, fields: Partial<PendingSamlSignIn> = {}): PendingSamlSignIn {
    requests += 1;
    return {
      sp: sp.id,
      acs: 0,
      request: `_request${requests}`,
      relayState: null,
      forceAuthn: false,
      isPassive: false,
      nameIdFormat: null,
      acr: null,
      at: world.clock.now(),
      ...fields,
    };
  }

  const deps = () => ({ store: world.store, idp: IDP, now: world.clock.now(), lifetime: world.config.saml.requestLifetime, signer });

  const answer = (sp: SamlServiceProviderRecord, user: UserRecord = ada, session = sessionOf(user), fields: Partial<PendingSamlSignIn> = {}) =>
    samlAnswer(deps(), sp, pending(sp, fields), user, session);

  /**
   * Whether the signature of `local` (the Response, or the Assertion in it) verifies with the
   * IdP's certificate (xml-crypto, as the SAML code checks signatures): RSA-SHA256, exclusive
   * c14n, one reference, to that element's own ID, enveloped.
   */
  function verifies(xml: string, local: 'Assertion' | 'Response', certificate = signer.certificate): boolean {
    const root = rootOf(xml);
    const element = local === 'Response' ? root : at(root, 'saml:Assertion');
    const signature = onlyChild(element, SAML_NS.dsig, 'Signature');
    if (signature === null) return false;
    const { SignedXml } = xmlCrypto();
    const checker = new SignedXml({ publicCert: certificate, getCertFromKeyInfo: () => null });
    checker.loadSignature(signature as never);
    assert.equal(checker.signatureAlgorithm, SIGNATURE_ALGORITHMS.rsaSha256);
    assert.equal(checker.canonicalizationAlgorithm, EXC_C14N);
    const references = checker.getReferences();
    assert.deepEqual(
      references.map((reference) => [reference.uri, reference.transforms, reference.digestAlgorithm]),
      [[`#${attribute(element, 'ID')}`, [ENVELOPED, EXC_C14N], 'http://www.w3.org/2001/04/xmlenc#sha256']],
      `the ${local}'s signature covers it alone, by its ID`,
    );
    try {
      return checker.checkSignature(xml);
    } catch {
      return false;
    }
  }

  /** node-saml speaking for `sp` (only the IdP's certificate trusted), as test/saml.test.ts sets it up. */
  const serviceProvider = (sp: SamlServiceProviderRecord, options: Partial<SamlConfig> = {}) =>
    new SAML({
      issuer: sp.entityId,
      callbackUrl: sp.acsUrls[0]!,
      idpCert: signer.certificate,
      idpIssuer: IDP,
      audience: sp.entityId,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: sp.signResponse,
      acceptedClockSkewMs: 0,
      validateInResponseTo: ValidateInResponseTo.never,
      ...options,
    });

  /** The SP's reading of `xml` as posted to its ACS URL, its clock at `now` (the world's unless given). */
  async function spReads(saml: SAML, xml: string, now = world.clock.now()) {
    mock.timers.enable({ apis: ['Date'], now });
    try {
      return await saml.validatePostResponseAsync({ SAMLResponse: Buffer.from(xml, 'utf8').toString('base64') });
    } finally {
      mock.timers.reset();
    }
  }

  it('asserts the person to the SP alone: to its ACS URL, in answer to its request, its entity ID the only audience, signed; node-saml as the SP takes it', async () => {
    const sp = await registered({ attributes: { mail: 'email' } });
    const now = world.clock.now();
    const lifetime = world.config.saml.requestLifetime;
    const session = sessionOf(ada, ['pwd']);
    const asked = pending(sp, { acs: 1 });
    const { xml, acsUrl, participant } = await samlAnswer(deps(), sp, asked, ada, session);
    assert.equal(acsUrl, ACS[1]);

    const response = rootOf(xml);
    assert.deepEqual(
      [response.namespaceURI, response.localName, attribute(response, 'Version'), attribute(response, 'IssueInstant')],
      [SAML_NS.protocol, 'Response', '2.0', iso(now)],
    );
    // SAML Core §3.2.2: Destination, "the address to which this response has been sent"; InResponseTo the request's ID.
    assert.deepEqual([attribute(response, 'Destination'), attribute(response, 'InResponseTo')], [ACS[1], asked.request]);
    assert.equal(textOf(at(response, 'saml:Issuer')), IDP);
    assert.equal(attribute(at(response, 'samlp:Status', 'samlp:StatusCode'), 'Value'), STATUS.success);
    assert.match(attribute(response, 'ID')!, /^_[0-9a-f]{40}$/, 'SAML Core §1.3.4: 128 bits or more of randomness, an xs:ID');

    const assertion = at(response, 'saml:Assertion');
    assert.notEqual(attribute(assertion, 'ID'), attribute(response, 'ID'));
    assert.equal(textOf(at(assertion, 'saml:Issuer')), IDP);
    const nameId = at(assertion, 'saml:Subject', 'saml:NameID');
    assert.deepEqual(
      [attribute(nameId, 'Format'), attribute(nameId, 'NameQualifier'), attribute(nameId, 'SPNameQualifier'), textOf(nameId)],
      [NAME_ID_FORMAT_URIS.persistent, IDP, sp.entityId, nameIdOf(sp, ada, 'persistent')],
    );
    // SAML Profiles §4.1.4.2: a bearer SubjectConfirmation with Recipient (the ACS URL), NotOnOrAfter and InResponseTo.
    const confirmation = at(assertion, 'saml:Subject', 'saml:SubjectConfirmation');
    assert.equal(attribute(confirmation, 'Method'), 'urn:oasis:names:tc:SAML:2.0:cm:bearer');
    const data = at(confirmation, 'saml:SubjectConfirmationData');
    assert.deepEqual(
      [attribute(data, 'Recipient'), attribute(data, 'NotOnOrAfter'), attribute(data, 'InResponseTo'), attribute(data, 'NotBefore')],
      [ACS[1], iso(now + lifetime * 1000), asked.request, null],
    );
    // §4.1.4.2: "an <AudienceRestriction> including the service provider's unique identifier as an <Audience>".
    const conditions = at(assertion, 'saml:Conditions');
    assert.deepEqual([attribute(conditions, 'NotBefore'), attribute(conditions, 'NotOnOrAfter')], [iso(now - 5_000), iso(now + lifetime * 1000)]);
    assert.deepEqual(
      children(conditions, SAML_NS.assertion, 'AudienceRestriction').flatMap((restriction) =>
        children(restriction, SAML_NS.assertion, 'Audience').map((audience) => textOf(audience)),
      ),
      [sp.entityId],
    );
    const statement = at(assertion, 'saml:AuthnStatement');
    assert.deepEqual(
      [attribute(statement, 'AuthnInstant'), attribute(statement, 'SessionIndex'), attribute(statement, 'SessionNotOnOrAfter')],
      [iso(session.authTime), session.sid, iso(now + 8 * HOUR)],
    );
    assert.equal(textOf(at(statement, 'saml:AuthnContext', 'saml:AuthnContextClassRef')), AUTHN_CONTEXT.password);
    assert.deepEqual(attributesOf(assertion), { mail: ['ada@example.com'] });
    assert.ok(verifies(xml, 'Assertion'));
    assert.equal(has(response, SAML_NS.dsig, 'Signature'), false, 'the Response itself is not signed unless the SP asks');
    // The schema's place for the signature: right after the assertion's Issuer (SAML Core §2.3.3).
    assert.equal((at(assertion, 'saml:Issuer').nextSibling as XmlElement).localName, 'Signature');

    // The SP that takes part in single logout, as it was told of the person and the session.
    assert.deepEqual(participant, {
      sid: session.sid,
      spId: sp.id,
      nameId: textOf(nameId),
      nameIdFormat: NAME_ID_FORMAT_URIS.persistent,
      sessionIndex: session.sid,
      expiresAt: session.expiresAt,
    });

    const { profile } = await spReads(serviceProvider(sp, { callbackUrl: ACS[1]! }), xml);
    assert.ok(profile);
    assert.deepEqual(
      [profile.issuer, profile.nameID, profile.nameIDFormat, profile.sessionIndex, profile.inResponseTo, profile['mail']],
      [IDP, textOf(nameId), NAME_ID_FORMAT_URIS.persistent, session.sid, asked.request, 'ada@example.com'],
    );
    // Another SP is not the audience: the same Response is refused by it (SAML Core §2.5.1.4).
    await assert.rejects(spReads(serviceProvider(sp, { audience: 'https://other.example.com/saml' }), xml), /audience mismatch/);
  });

  it('signs so that a tampered assertion fails verification, with xml-crypto and with node-saml, as does one checked against another certificate', async () => {
    const sp = await registered({ attributes: { mail: 'email', uid: 'preferred_username' } });
    const { xml } = await answer(sp);
    assert.ok(verifies(xml, 'Assertion'));
    assert.equal(verifies(xml, 'Assertion', STRANGER_CERT), false, 'only the IdP key signed it');
    await assert.rejects(spReads(serviceProvider(sp, { idpCert: STRANGER_CERT }), xml), /signature/i);

    const nameId = textOf(at(rootOf(xml), 'saml:Assertion', 'saml:Subject', 'saml:NameID'));
    const until = attribute(at(rootOf(xml), 'saml:Assertion', 'saml:Conditions'), 'NotOnOrAfter')!;
    const later = iso(Date.parse(until) + HOUR);
    const cases: [string, string, string][] = [
      ['another person named', `>${nameId}</saml:NameID>`, '>someone-else</saml:NameID>'],
      ['an attribute value changed', '>ada@example.com<', '>admin@example.com<'],
      ['another audience', `<saml:Audience>${sp.entityId}<`, '<saml:Audience>https://other.example.com/saml<'],
      ['another Recipient', `Recipient="${ACS[0]}"`, 'Recipient="https://attacker.example/acs"'],
      ['valid for longer', `NotOnOrAfter="${until}"/>`, `NotOnOrAfter="${later}"/>`],
      [
        'an attribute added',
        '</saml:AttributeStatement>',
        '<saml:Attribute Name="role"><saml:AttributeValue>admin</saml:AttributeValue></saml:Attribute></saml:AttributeStatement>',
      ],
      ['a stronger sign-in claimed', AUTHN_CONTEXT.password, AUTHN_CONTEXT.mfa],
    ];
    for (const [what, from, to] of cases) {
      assert.ok(xml.includes(from), `${what}: the text to change is there`);
      const tampered = xml.replace(from, to);
      assert.equal(verifies(tampered, 'Assertion'), false, `${what}: xml-crypto`);
      await assert.rejects(spReads(serviceProvider(sp), tampered), /signature/i, `${what}: node-saml`);
    }
  });

  it("moves every instant with the world's clock: NotOnOrAfter is the lifetime later, and the SP refuses the assertion from then on", async () => {
    const sp = await registered();
    const lifetime = world.config.saml.requestLifetime * 1000;
    const instants = (xml: string) => {
      const assertion = at(rootOf(xml), 'saml:Assertion');
      return [
        attribute(assertion, 'IssueInstant'),
        attribute(at(assertion, 'saml:Conditions'), 'NotBefore'),
        attribute(at(assertion, 'saml:Conditions'), 'NotOnOrAfter'),
        attribute(at(assertion, 'saml:Subject', 'saml:SubjectConfirmation', 'saml:SubjectConfirmationData'), 'NotOnOrAfter'),
        attribute(at(assertion, 'saml:AuthnStatement'), 'SessionNotOnOrAfter'),
      ];
    };
    const first = world.clock.now();
    const { xml } = await answer(sp);
    assert.deepEqual(instants(xml), [iso(first), iso(first - 5_000), iso(first + lifetime), iso(first + lifetime), iso(first + 8 * HOUR)]);
    world.clock.advance(HOUR);
    const second = world.clock.now();
    const { xml: later } = await answer(sp);
    assert.deepEqual(instants(later), [iso(second), iso(second - 5_000), iso(second + lifetime), iso(second + lifetime), iso(second + 8 * HOUR)]);

    // SAML Core §2.5.1.2: NotOnOrAfter is the instant it has expired at.
    const saml = serviceProvider(sp);
    assert.ok((await spReads(saml, later, second + lifetime - 1_000)).profile);
    await assert.rejects(spReads(saml, later, second + lifetime), /expired/i);
    await assert.rejects(spReads(saml, xml, second), /expired/i, 'the first, an hour on');
  });

  it('names the person by a persistent NameID stable for one SP and different for another, by e-mail, or by a new transient one each time', async () => {
    const wiki = await registered();
    const crm = await registered();
    const grace = await world.addUser({ username: 'grace', email: 'grace@example.com', emailVerified: true });
    const nameIdIn = (xml: string) => textOf(at(rootOf(xml), 'saml:Assertion', 'saml:Subject', 'saml:NameID'));

    const atWiki = nameIdIn((await answer(wiki)).xml);
    assert.equal(nameIdIn((await answer(wiki, ada, sessionOf(ada, ['pwd', 'otp', 'mfa']))).xml), atWiki, 'another sign-in, the same NameID');
    await updateSamlSp(world.manage, wiki.entityId, { name: 'The wiki', attributes: { mail: 'email' } });
    const updated = (await world.store.samlServiceProviders.get(wiki.id))!;
    assert.equal(nameIdIn((await answer(updated)).xml), atWiki, 'the registration changed, the NameID stays');
    // SAML Core §8.3.7: "a different value ... to each relying party", so that two SPs cannot link their people.
    const atCrm = nameIdIn((await answer(crm)).xml);
    assert.notEqual(atCrm, atWiki);
    assert.notEqual(nameIdIn((await answer(wiki, grace)).xml), atWiki, 'another person, another NameID');
    for (const given of [atWiki, atCrm]) assert.ok(!given.includes(ada.id) && !given.includes(ada.username), 'nothing of the account shows');

    const mail = await registered({ name_id_format: 'email' });
    const byMail = at(rootOf((await answer(mail)).xml), 'saml:Assertion', 'saml:Subject', 'saml:NameID');
    assert.deepEqual([attribute(byMail, 'Format'), textOf(byMail)], [NAME_ID_FORMAT_URIS.email, 'ada@example.com']);

    const transient = await registered({ name_id_format: 'transient' });
    const once = await answer(transient);
    const twice = await answer(transient);
    assert.equal(attribute(at(rootOf(once.xml), 'saml:Assertion', 'saml:Subject', 'saml:NameID'), 'Format'), NAME_ID_FORMAT_URIS.transient);
    assert.notEqual(nameIdIn(once.xml), nameIdIn(twice.xml), 'SAML Core §8.3.8: a new one each time');
    assert.equal(once.participant?.nameId, nameIdIn(once.xml), 'kept for the LogoutRequest, as it cannot be made again');
  });

  it('answers InvalidNameIDPolicy, signed and asserting nothing, when the NameID cannot be given: no verified e-mail address, or a format the SP is not given', async () => {
    const mail = await registered({ name_id_format: 'email' });
    const nobody = await world.addUser({ username: 'no-mail' });
    // SAML has no email_verified: an address nobody proved is not asserted (an SP keying its
    // accounts by it would give the account of whoever owns that address to this person).
    const unproved = await world.addUser({ username: 'unproved', email: 'ceo@victim.example', emailVerified: false });
    const persistent = await registered();
    const cases: [string, SamlServiceProviderRecord, UserRecord, string | null][] = [
      ['an e-mail SP, a person without an address', mail, nobody, null],
      ['an e-mail SP, a person whose address is not verified', mail, unproved, null],
      ['a persistent SP asked for e-mail', persistent, ada, NAME_ID_FORMAT_URIS.email],
      ['an e-mail SP asked for a transient one', mail, ada, NAME_ID_FORMAT_URIS.transient],
    ];
    for (const [what, sp, user, format] of cases) {
      const asked = pending(sp, { nameIdFormat: format });
      const result = await samlAnswer(deps(), sp, asked, user, sessionOf(user));
      assert.equal(result.participant, null, `${what}: no assertion, no part in single logout`);
      const response = rootOf(result.xml);
      // SAML Core §3.4.1.1: a Requester error, InvalidNameIDPolicy beneath it.
      const top = at(response, 'samlp:Status', 'samlp:StatusCode');
      assert.deepEqual(
        [attribute(top, 'Value'), attribute(at(top, 'samlp:StatusCode'), 'Value'), attribute(response, 'InResponseTo')],
        [STATUS.requester, STATUS.invalidNameIdPolicy, asked.request],
        what,
      );
      assert.equal(has(response, SAML_NS.assertion, 'Assertion'), false, what);
      assert.ok(verifies(result.xml, 'Response'), what);
    }
  });

  it('releases the attributes the SP maps, each from its claim; a claim not mapped is not released, nor an attribute the person has no value for', async () => {
    const group = { id: 'group-1', displayName: 'Engineers', externalId: null, createdAt: world.clock.now(), updatedAt: world.clock.now() };
    await world.store.groups.create(group);
    await world.store.groups.create({ ...group, id: 'group-2', displayName: 'Analysts & <Poets>' });
    await world.store.groups.addMember('group-1', ada.id);
    await world.store.groups.addMember('group-2', ada.id);
    const sp = await registered({
      attributes: { mail: 'email', uid: 'preferred_username', displayName: 'name', memberOf: 'groups', id: 'sub', site: 'website' },
    });
    const { xml } = await answer(sp);
    const assertion = at(rootOf(xml), 'saml:Assertion');
    assert.deepEqual(attributesOf(assertion), {
      mail: ['ada@example.com'],
      uid: ['ada'],
      displayName: ['Ada <Lovelace> & "Byron"'],
      memberOf: ['Analysts & <Poets>', 'Engineers'],
      id: [ada.id],
    });
    for (const each of children(at(assertion, 'saml:AttributeStatement'), SAML_NS.assertion, 'Attribute'))
      assert.equal(attribute(each, 'NameFormat'), 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic');
    // What the person has but the SP does not map stays with the IdP: in no attribute, nowhere in the Response.
    assert.doesNotMatch(xml, /\+44 20 7946 0000|phone/, 'phone_number is not mapped');
    assert.doesNotMatch(xml, /Name="(site|family_name)"|>Lovelace</, 'website (none) and family_name (not mapped)');
    // Escaped, so that no value can add an element; read back whole by the SP once the signature verifies.
    assert.doesNotMatch(xml, /<Lovelace>|<Poets>/);
    const { profile } = await spReads(serviceProvider(sp), xml);
    assert.equal(profile?.['displayName'], 'Ada <Lovelace> & "Byron"');
    // An address nobody proved is no attribute: SAML has no email_verified to say so.
    const unproved = await world.addUser({ username: 'unproved-mail', email: 'cfo@victim.example', emailVerified: false });
    const theirs = attributesOf(at(rootOf((await answer(sp, unproved)).xml), 'saml:Assertion'));
    assert.deepEqual([theirs['mail'], theirs['uid']], [undefined, ['unproved-mail']]);

    // An SP that maps nothing is told who signed in, and nothing about them.
    const bare = await registered();
    const plain = await answer(bare);
    assert.equal(has(at(rootOf(plain.xml), 'saml:Assertion'), SAML_NS.assertion, 'AttributeStatement'), false);
    assert.doesNotMatch(plain.xml, /ada@example\.com|Engineers|Lovelace/);
  });

  it('says how the person signed in (SAML Authn Context §3.4, REFEDS MFA): a password, a second factor, a phishing-resistant one, or unspecified for neither', async () => {
    const sp = await registered();
    const cases: [string, readonly AuthMethod[] | undefined, string][] = [
      ['a password', ['pwd'], AUTHN_CONTEXT.password],
      ['a session from before methods were kept', undefined, AUTHN_CONTEXT.password],
      ['a password and a one-time code', ['pwd', 'otp', 'mfa'], AUTHN_CONTEXT.mfa],
      ['a passkey that verified the person', ['hwk', 'user', 'mfa'], AUTHN_CONTEXT.mfa],
      ['a security key alone, the person not verified', ['hwk'], AUTHN_CONTEXT.unspecified],
    ];
    for (const [what, amr, expected] of cases) {
      const session = sessionOf(ada, amr);
      const statement = at(rootOf((await answer(sp, ada, session)).xml), 'saml:Assertion', 'saml:AuthnStatement');
      assert.deepEqual(
        [textOf(at(statement, 'saml:AuthnContext', 'saml:AuthnContextClassRef')), attribute(statement, 'AuthnInstant')],
        [expected, iso(session.authTime)],
        what,
      );
    }
  });

  it('signs the Response too, around the signed assertion, for an SP that asks; an SP that wants it signed refuses one that is not', async () => {
    const signing = await registered({ sign_response: true, attributes: { mail: 'email' } });
    const { xml } = await answer(signing);
    assert.ok(verifies(xml, 'Response'), 'the Response, by its own ID');
    assert.ok(verifies(xml, 'Assertion'), 'and the assertion inside it');
    assert.equal((await spReads(serviceProvider(signing), xml)).profile?.['mail'], 'ada@example.com');
    assert.equal(verifies(xml.replace('ada@example.com', 'eve@example.com'), 'Response'), false);

    const plain = await registered();
    const unsigned = await answer(plain);
    assert.equal(has(rootOf(unsigned.xml), SAML_NS.dsig, 'Signature'), false);
    await assert.rejects(spReads(serviceProvider(plain, { wantAuthnResponseSigned: true }), unsigned.xml), /Invalid document signature/);
  });

  it("encrypts the signed assertion for the SP's encryption certificate (AES-256-GCM, RSA-OAEP): nothing of it in the clear, node-saml decrypts and verifies it", async () => {
    for (const signResponse of [false, true]) {
      const sp = await registered({ encryption_certificate: ENCRYPTION_CERT, sign_response: signResponse, attributes: { mail: 'email' } });
      const session = sessionOf(ada);
      const { xml } = await answer(sp, ada, session);
      const response = rootOf(xml);
      assert.equal(has(response, SAML_NS.assertion, 'Assertion'), false);
      const data = onlyChild(at(response, 'saml:EncryptedAssertion'), 'http://www.w3.org/2001/04/xmlenc#', 'EncryptedData');
      assert.ok(data, 'SAML Core §2.3.4: EncryptedData inside EncryptedAssertion');
      assert.match(xml, /Algorithm="http:\/\/www\.w3\.org\/2009\/xmlenc11#aes256-gcm"/);
      assert.match(xml, /Algorithm="http:\/\/www\.w3\.org\/2001\/04\/xmlenc#rsa-oaep-mgf1p"/);
      assert.doesNotMatch(xml, new RegExp(`ada@example\\.com|${session.sid}|${nameIdOf(sp, ada, 'persistent')}`), 'nothing of the assertion in the clear');
      const decryptionPvk = ENCRYPTION_KEY.export({ type: 'pkcs8', format: 'pem' }).toString();
      const { profile } = await spReads(serviceProvider(sp, { decryptionPvk }), xml);
      assert.deepEqual([profile?.['mail'], profile?.sessionIndex], ['ada@example.com', session.sid], `sign_response ${signResponse}`);
      if (signResponse) assert.ok(verifies(xml, 'Response'), 'the Response signed over the encrypted assertion');
      await assert.rejects(spReads(serviceProvider(sp), xml), /decryption/i, 'without the key, nothing is read');
    }
  });

  it('answers with a status only, signed: the second-level code under Requester or Responder (SAML Core §3.2.2.2), to the ACS URL the request was for', async () => {
    const sp = await registered();
    const cases: [string, string, string | null][] = [
      [STATUS.noPassive, STATUS.requester, STATUS.noPassive],
      [STATUS.invalidNameIdPolicy, STATUS.requester, STATUS.invalidNameIdPolicy],
      [STATUS.authnFailed, STATUS.responder, STATUS.authnFailed],
      [STATUS.requestDenied, STATUS.responder, STATUS.requestDenied],
      [STATUS.requester, STATUS.requester, null],
      [STATUS.success, STATUS.success, null],
    ];
    for (const [status, top, second] of cases) {
      const asked = pending(sp, { acs: 1 });
      const { xml, acsUrl } = samlStatus(deps(), sp, asked, status, 'not <now> & "not" here');
      assert.equal(acsUrl, ACS[1]);
      const response = rootOf(xml);
      const code = at(response, 'samlp:Status', 'samlp:StatusCode');
      const inner = children(code, SAML_NS.protocol, 'StatusCode');
      assert.deepEqual(
        [attribute(code, 'Value'), inner.map((each) => attribute(each, 'Value')), attribute(response, 'Destination'), attribute(response, 'InResponseTo')],
        [top, second === null ? [] : [second], ACS[1], asked.request],
        status,
      );
      assert.equal(textOf(at(response, 'samlp:Status', 'samlp:StatusMessage')), 'not <now> & "not" here');
      assert.equal(has(response, SAML_NS.assertion, 'Assertion'), false);
      assert.ok(verifies(xml, 'Response'), status);
      if (status === STATUS.noPassive) assert.equal(verifies(xml.replace(STATUS.noPassive, STATUS.success), 'Response'), false, 'the status is signed');
    }
    // A sign-in the IdP began answers no request: SAML Core §3.2.2, InResponseTo "MUST NOT be present".
    const begun = rootOf(samlStatus(deps(), sp, pending(sp, { request: null }), STATUS.requestDenied, 'denied').xml);
    assert.equal(begun.hasAttribute('InResponseTo'), false, 'no InResponseTo, not an empty one');
    // node-saml, as the SP, is told why.
    const noPassive = statusResponse({ idp: IDP, acsUrl: ACS[0]!, inResponseTo: '_asked', now: world.clock.now(), status: STATUS.noPassive }, signer);
    await assert.rejects(spReads(serviceProvider(sp), noPassive), /Requester.*NoPassive|NoPassive/);
  });

  it('sends a Response only to an ACS URL the SP registered: a request naming another, or an SP not registered, is refused before there is anything to answer', async () => {
    const sp = await registered();
    const sso = samlEndpoints(FLOW_ISSUER).sso;
    const request = (issuer: string, acs: string | null) => {
      requests += 1;
      const xml = `<samlp:AuthnRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_sso${requests}" Version="2.0" IssueInstant="${iso(world.clock.now())}" Destination="${sso}"${acs === null ? '' : ` AssertionConsumerServiceURL="${acs}"`}><saml:Issuer>${issuer}</saml:Issuer></samlp:AuthnRequest>`;
      const samlRequest = deflateRawSync(Buffer.from(xml)).toString('base64');
      const incoming: IncomingRequest = {
        binding: 'redirect',
        samlRequest,
        relayState: null,
        sigAlg: null,
        signature: null,
        rawQuery: `SAMLRequest=${encodeURIComponent(samlRequest)}`,
      };
      return readAuthnRequest({ store: world.store, now: world.clock.now(), limits: { maxRequestChars: 20_000, requestLifetime: 300 }, ssoUrl: sso }, incoming);
    };
    const refusal = async (run: Promise<unknown>) => {
      try {
        await run;
        return 'ok';
      } catch (error) {
        assert.ok(error instanceof SamlRefusal, String(error));
        return error.reason;
      }
    };
    // SAML Profiles §4.1.4.1: the IdP "MUST" make sure the ACS location is the SP's.
    assert.equal(await refusal(request(sp.entityId, 'https://attacker.example/acs')), 'unknown_acs');
    assert.equal(await refusal(request(sp.entityId, `${ACS[1]}/`)), 'unknown_acs', 'compared exactly, not as a prefix');
    assert.equal(await refusal(request('https://stranger.example.com/saml', ACS[0]!)), 'unknown_sp');

    // Taken: the Response goes where the request asked, which is the SP's.
    const read = await request(sp.entityId, ACS[1]!);
    const { xml, acsUrl } = await samlAnswer(deps(), sp, pendingOf(read, null, world.clock.now()), ada, sessionOf(ada));
    const response = rootOf(xml);
    assert.deepEqual(
      [
        acsUrl,
        attribute(response, 'Destination'),
        attribute(at(response, 'saml:Assertion', 'saml:Subject', 'saml:SubjectConfirmation', 'saml:SubjectConfirmationData'), 'Recipient'),
      ],
      [ACS[1], ACS[1], ACS[1]],
    );
    // A waiting sign-in whose ACS index names none of the SP's goes to its first, never elsewhere.
    assert.equal((await answer(sp, ada, sessionOf(ada), { acs: 7 })).acsUrl, ACS[0]);

    // Once removed, an SP's requests are no SP's.
    await removeSamlSp(world.manage, sp.entityId);
    assert.equal(await refusal(request(sp.entityId, ACS[0]!)), 'unknown_sp');
  });

  it('answers a sign-in started at the IdP (SAML Profiles §4.1.5) with no InResponseTo at all', async () => {
    const sp = await registered();
    const { xml } = await answer(sp, ada, sessionOf(ada), { request: null });
    const response = rootOf(xml);
    assert.equal(attribute(response, 'InResponseTo'), null);
    assert.equal(attribute(at(response, 'saml:Assertion', 'saml:Subject', 'saml:SubjectConfirmation', 'saml:SubjectConfirmationData'), 'InResponseTo'), null);
    assert.ok(verifies(xml, 'Assertion'));
    assert.equal((await spReads(serviceProvider(sp), xml)).profile?.inResponseTo, undefined);
  });
});

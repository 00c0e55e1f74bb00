/**
 * Reading an AuthnRequest (SAML Core §3.2.1, §3.4.1; Bindings §3.4.4.1 HTTP-Redirect), and a
 * LogoutRequest's expiry (§3.7.1), without HTTP: each refusal with the reason its page and
 * event give, and what an accepted request asks. The requests are written here and signed over
 * the query with node:crypto, as an SP signs them; test/saml.test.ts plays node-saml against
 * the server.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { pemCertificate, selfSignedCertificate } from '../../tokens/certificate.ts';
import { addSamlSp } from '../manage/saml-service-providers.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { BINDINGS, NAME_ID_FORMAT_URIS } from './metadata-import.ts';
import {
  CLOCK_SKEW_MS,
  readAuthnRequest,
  readLogoutRequest,
  SamlRefusal,
  SIGNATURE_ALGORITHMS,
  type IncomingRequest,
  type SamlRefusalReason,
} from './request.ts';
import { xmlCrypto } from './xml.ts';

const SSO = 'https://auth.example.com/saml/sso';
const SLO = 'https://auth.example.com/saml/slo';
const OPEN_SP = 'https://open.example.com/saml';
const SIGNING_SP = 'https://signing.example.com/saml';
/** An SP registered by its metadata, whose ACS endpoints are numbered 1 and 5 (and 0, of a binding not taken). */
const INDEXED_SP = 'https://indexed.example.com/saml';
const INDEXED_ACS = { '1': 'https://indexed.example.com/saml/acs-1', '5': 'https://indexed.example.com/saml/acs-5' };
/** An SP that takes part in single logout, its LogoutRequests signed. */
const LOGOUT_SP = 'https://logout.example.com/saml';
const ACS = ['https://open.example.com/saml/acs', 'https://open.example.com/saml/acs-2'];
const LIMITS = { maxRequestChars: 20_000, requestLifetime: 300 };
const SP_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const OTHER_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;

let requests = 0;

/**
 * An AuthnRequest of `issuer` with the attributes an SP sends (`attributes` replaces or, as
 * null, leaves one out) and `inner` after its Issuer; a fresh ID each time.
 */
function authnRequest(issuer: string | null, now: number, attributes: Record<string, string | null> = {}, inner = ''): string {
  requests += 1;
  const all: Record<string, string | null> = {
    ID: `_request${requests}`,
    Version: '2.0',
    IssueInstant: new Date(now).toISOString(),
    Destination: SSO,
    ProtocolBinding: BINDINGS.post,
    ...attributes,
  };
  const written = Object.entries(all)
    .filter(([, value]) => value !== null)
    .map(([name, value]) => ` ${name}="${value}"`)
    .join('');
  const issuerElement = issuer === null ? '' : `<saml:Issuer>${issuer}</saml:Issuer>`;
  return `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"${written}>${issuerElement}${inner}</samlp:AuthnRequest>`;
}

/** A LogoutRequest of `issuer` (SAML Core §3.7.1) to SLO, naming someone, with `attributes` besides; a fresh ID each time. */
function logoutRequest(issuer: string, now: number, attributes: Record<string, string> = {}): string {
  requests += 1;
  const written = Object.entries(attributes)
    .map(([name, value]) => ` ${name}="${value}"`)
    .join('');
  return `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_logout${requests}" Version="2.0" IssueInstant="${new Date(now).toISOString()}" Destination="${SLO}"${written}><saml:Issuer>${issuer}</saml:Issuer><saml:NameID>someone</saml:NameID></samlp:LogoutRequest>`;
}

/** A request over HTTP-Redirect, as the route hands it on. */
type Redirected = Extract<IncomingRequest, { binding: 'redirect' }>;

/** `xml` over HTTP-Redirect (DEFLATE, base64), signed over its query with `key` when given (Bindings §3.4.4.1). */
function redirect(xml: string, options: { key?: KeyObject; sigAlg?: string; relayState?: string } = {}): Redirected {
  const samlRequest = deflateRawSync(Buffer.from(xml)).toString('base64');
  const sigAlg = options.key === undefined ? null : (options.sigAlg ?? SIGNATURE_ALGORITHMS.rsaSha256);
  const query = [
    `SAMLRequest=${encodeURIComponent(samlRequest)}`,
    ...(options.relayState === undefined ? [] : [`RelayState=${encodeURIComponent(options.relayState)}`]),
    ...(sigAlg === null ? [] : [`SigAlg=${encodeURIComponent(sigAlg)}`]),
  ].join('&');
  const signature = options.key === undefined ? null : sign('sha256', Buffer.from(query), options.key).toString('base64');
  return {
    binding: 'redirect',
    samlRequest,
    relayState: options.relayState ?? null,
    sigAlg,
    signature,
    rawQuery: signature === null ? query : `${query}&Signature=${encodeURIComponent(signature)}`,
  };
}

const EXC_C14N = 'http://www.w3.org/2001/10/xml-exc-c14n#';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

/**
 * `xml` over HTTP-POST (base64 in the form), signed in the XML with `key` as an SP signs it
 * (SAML Core §5.4: enveloped, one reference to the request's own ID, after its Issuer), the
 * reference transformed by `transforms`.
 */
function posted(xml: string, key: KeyObject, transforms: readonly string[] = [ENVELOPED, EXC_C14N]): IncomingRequest {
  const signer = new (xmlCrypto().SignedXml)({
    privateKey: key.export({ type: 'pkcs8', format: 'pem' }),
    signatureAlgorithm: SIGNATURE_ALGORITHMS.rsaSha256,
    canonicalizationAlgorithm: EXC_C14N,
  });
  signer.addReference({ xpath: "/*[local-name(.)='AuthnRequest']", transforms: [...transforms], digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256' });
  signer.computeSignature(xml, { prefix: 'ds', location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' } });
  return { binding: 'post', samlRequest: Buffer.from(signer.getSignedXml()).toString('base64'), relayState: null };
}

describe('reading an AuthnRequest (SAML Core §3.2.1)', () => {
  let world: FlowWorld;
  const read = (incoming: IncomingRequest) => readAuthnRequest({ store: world.store, now: world.clock.now(), limits: LIMITS, ssoUrl: SSO }, incoming);
  /** `incoming` is refused for `reason`, naming the SP `entityId` (null: none could be named). */
  const refused = (what: string, incoming: IncomingRequest, reason: SamlRefusalReason, entityId: string | null) =>
    assert.rejects(
      read(incoming),
      (error: unknown) => {
        assert.ok(error instanceof SamlRefusal, `${what}: ${String(error)}`);
        assert.deepEqual([error.reason, error.entityId], [reason, entityId], `${what}: ${error.message}`);
        return true;
      },
      what,
    );

  before(async () => {
    world = await flowWorld();
    await addSamlSp(world.manage, { entity_id: OPEN_SP, acs_urls: ACS });
    await addSamlSp(world.manage, {
      entity_id: SIGNING_SP,
      acs_urls: ['https://signing.example.com/saml/acs'],
      want_signed_requests: true,
      certificate: pemCertificate(selfSignedCertificate(SP_KEY, 'sp', 'sp')),
    });
    const md = 'urn:oasis:names:tc:SAML:2.0:metadata';
    await addSamlSp(world.manage, {
      metadata: `<md:EntityDescriptor xmlns:md="${md}" entityID="${INDEXED_SP}"><md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
        <md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact" Location="https://indexed.example.com/saml/artifact" index="0"/>
        <md:AssertionConsumerService Binding="${BINDINGS.post}" Location="${INDEXED_ACS['5']}" index="5"/>
        <md:AssertionConsumerService Binding="${BINDINGS.post}" Location="${INDEXED_ACS['1']}" index="1" isDefault="true"/>
      </md:SPSSODescriptor></md:EntityDescriptor>`,
    });
    await addSamlSp(world.manage, {
      entity_id: LOGOUT_SP,
      acs_urls: ['https://logout.example.com/saml/acs'],
      slo_url: 'https://logout.example.com/saml/slo',
      certificate: pemCertificate(selfSignedCertificate(SP_KEY, 'sp', 'sp')),
    });
  });
  after(() => world.close());

  it('takes a request of a registered SP: the first ACS URL unless it names another of its own, and what it asks', async () => {
    const now = world.clock.now();
    const plain = await read(redirect(authnRequest(OPEN_SP, now)));
    assert.deepEqual(
      [plain.sp.entityId, plain.acsUrl, plain.forceAuthn, plain.isPassive, plain.nameIdFormat, plain.authnContext],
      [OPEN_SP, ACS[0], false, false, null, []],
    );
    const byUrl = await read(redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceURL: ACS[1]! })));
    assert.equal(byUrl.acsUrl, ACS[1]);
    const byIndex = await read(redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceIndex: '1', ProtocolBinding: null })));
    assert.equal(byIndex.acsUrl, ACS[1]);
    const asking = await read(
      redirect(
        authnRequest(
          OPEN_SP,
          now,
          { ForceAuthn: 'true', IsPassive: '1' },
          `<samlp:NameIDPolicy Format="${NAME_ID_FORMAT_URIS.email}"/><samlp:RequestedAuthnContext><saml:AuthnContextClassRef> urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport </saml:AuthnContextClassRef></samlp:RequestedAuthnContext>`,
        ),
        { relayState: 'x'.repeat(80) },
      ),
    );
    assert.deepEqual(
      [asking.forceAuthn, asking.isPassive, asking.nameIdFormat, asking.authnContext],
      [true, true, NAME_ID_FORMAT_URIS.email, ['urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport']],
    );
    const signed = await read(redirect(authnRequest(SIGNING_SP, now), { key: SP_KEY }));
    assert.equal(signed.sp.entityId, SIGNING_SP);
    // SAML Core §3.2.1: Destination is optional; only a signed request must name it (Bindings §3.4.5.2).
    assert.equal((await read(redirect(authnRequest(OPEN_SP, now, { Destination: null })))).sp.entityId, OPEN_SP);
  });

  it('takes an AssertionConsumerServiceIndex as the index the SP gave the endpoint (SAML Metadata §2.2.3), or its position in a list of URLs', async () => {
    const now = world.clock.now();
    const byIndex = async (issuer: string, index: string) =>
      (await read(redirect(authnRequest(issuer, now, { AssertionConsumerServiceIndex: index, ProtocolBinding: null })))).acsUrl;
    assert.equal(await byIndex(INDEXED_SP, '5'), INDEXED_ACS['5'], 'the metadata index, not a place in a list of two');
    assert.equal(await byIndex(INDEXED_SP, '1'), INDEXED_ACS['1']);
    assert.equal(await byIndex(INDEXED_SP, '05'), INDEXED_ACS['5'], 'an xs:unsignedShort as written');
    assert.equal((await read(redirect(authnRequest(INDEXED_SP, now)))).acsUrl, INDEXED_ACS['1'], 'none named: the default');
    for (const [what, index] of [
      ['the artifact endpoint (its first URL by place in a list)', '0'],
      ['none of its', '2'],
    ] as const) {
      await refused(what, redirect(authnRequest(INDEXED_SP, now, { AssertionConsumerServiceIndex: index, ProtocolBinding: null })), 'unknown_acs', INDEXED_SP);
    }
    // Registered as a list: the position, from 0 (docs/saml.md).
    assert.deepEqual([await byIndex(OPEN_SP, '0'), await byIndex(OPEN_SP, '1')], ACS);
  });

  it('refuses what it must, with the reason its page and event give, naming the SP where the request named a registered one', async () => {
    const now = world.clock.now();
    const minutes = (n: number) => new Date(now + n * 60_000).toISOString();
    const deflated = (text: string) => ({ ...redirect(authnRequest(OPEN_SP, now)), samlRequest: deflateRawSync(Buffer.from(text)).toString('base64') });
    const cases: [string, IncomingRequest, SamlRefusalReason, string | null][] = [
      ['not base64', { ...redirect(authnRequest(OPEN_SP, now)), samlRequest: '%%%not base64%%%' }, 'malformed', null],
      ['not DEFLATE', { ...redirect(authnRequest(OPEN_SP, now)), samlRequest: Buffer.from('<xml/>').toString('base64') }, 'malformed', null],
      ['larger than the limit', { ...redirect(authnRequest(OPEN_SP, now)), samlRequest: 'A'.repeat(LIMITS.maxRequestChars + 4) }, 'malformed', null],
      ['a DTD (XXE)', deflated(`<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${authnRequest(OPEN_SP, now)}`), 'malformed', null],
      ['another message', deflated(authnRequest(OPEN_SP, now).replaceAll('samlp:AuthnRequest', 'samlp:LogoutRequest')), 'malformed', null],
      ['RelayState of 81 bytes (Bindings §3.4.3)', redirect(authnRequest(OPEN_SP, now), { relayState: 'x'.repeat(81) }), 'malformed', null],
      ['no Issuer', redirect(authnRequest(null, now)), 'unknown_sp', null],
      ['an SP not registered', redirect(authnRequest('https://stranger.example.com/saml', now)), 'unknown_sp', null],
      ['no ID', redirect(authnRequest(OPEN_SP, now, { ID: null })), 'malformed', OPEN_SP],
      ['an ID that is not an xs:ID', redirect(authnRequest(OPEN_SP, now, { ID: '1-starts-with-a-digit' })), 'malformed', OPEN_SP],
      ['Version 1.1', redirect(authnRequest(OPEN_SP, now, { Version: '1.1' })), 'unsupported', OPEN_SP],
      ['an IssueInstant not in UTC', redirect(authnRequest(OPEN_SP, now, { IssueInstant: '2026-01-01T00:00:00+01:00' })), 'malformed', OPEN_SP],
      ['issued six minutes ago', redirect(authnRequest(OPEN_SP, now, { IssueInstant: minutes(-6) })), 'expired', OPEN_SP],
      ['issued six minutes ahead', redirect(authnRequest(OPEN_SP, now, { IssueInstant: minutes(6) })), 'expired', OPEN_SP],
      ['sent to another Destination', redirect(authnRequest(OPEN_SP, now, { Destination: 'https://elsewhere.example/sso' })), 'wrong_destination', OPEN_SP],
      [
        'signed, naming no Destination (Bindings §3.4.5.2)',
        redirect(authnRequest(SIGNING_SP, now, { Destination: null }), { key: SP_KEY }),
        'wrong_destination',
        SIGNING_SP,
      ],
      [
        'an ACS URL not registered',
        redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceURL: 'https://attacker.example/acs' })),
        'unknown_acs',
        OPEN_SP,
      ],
      ['an ACS index of none', redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceIndex: '2', ProtocolBinding: null })), 'unknown_acs', OPEN_SP],
      [
        'an ACS index not written as one',
        redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceIndex: '1.0', ProtocolBinding: null })),
        'unknown_acs',
        OPEN_SP,
      ],
      [
        'an ACS index with an ACS URL (Core §3.4.1: mutually exclusive)',
        redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceIndex: '1', AssertionConsumerServiceURL: ACS[1]!, ProtocolBinding: null })),
        'malformed',
        OPEN_SP,
      ],
      [
        'an ACS index with a ProtocolBinding (Core §3.4.1: mutually exclusive)',
        redirect(authnRequest(OPEN_SP, now, { AssertionConsumerServiceIndex: '1' })),
        'malformed',
        OPEN_SP,
      ],
      [
        'the artifact binding',
        redirect(authnRequest(OPEN_SP, now, { ProtocolBinding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact' })),
        'unsupported',
        OPEN_SP,
      ],
      [
        'a NameID format it does not give',
        redirect(authnRequest(OPEN_SP, now, {}, '<samlp:NameIDPolicy Format="urn:example:made-up"/>')),
        'unsupported',
        OPEN_SP,
      ],
      ["unsigned, where the SP's must be signed", redirect(authnRequest(SIGNING_SP, now)), 'unsigned', SIGNING_SP],
      ['signed by another key', redirect(authnRequest(SIGNING_SP, now), { key: OTHER_KEY }), 'bad_signature', SIGNING_SP],
      [
        'signed with RSA-SHA1',
        redirect(authnRequest(SIGNING_SP, now), { key: SP_KEY, sigAlg: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1' }),
        'unsupported',
        SIGNING_SP,
      ],
      ['a Signature without SigAlg', { ...redirect(authnRequest(SIGNING_SP, now), { key: SP_KEY }), sigAlg: null }, 'bad_signature', SIGNING_SP],
      [
        'signed in the XML over HTTP-Redirect',
        redirect(authnRequest(SIGNING_SP, now, {}, '<ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"/>')),
        'bad_signature',
        SIGNING_SP,
      ],
    ];
    for (const [what, incoming, reason, entityId] of cases) await refused(what, incoming, reason, entityId);
  });

  it('takes a request signed in its XML over HTTP-POST, and refuses one naming no Destination, a second signature inside it, or one transformed otherwise than enveloped and exclusive c14n', async () => {
    const now = world.clock.now();
    assert.equal((await read(posted(authnRequest(SIGNING_SP, now), SP_KEY))).sp.entityId, SIGNING_SP);
    const cases: [string, IncomingRequest, SamlRefusalReason][] = [
      ['signed by another key', posted(authnRequest(SIGNING_SP, now), OTHER_KEY), 'bad_signature'],
      ['signed, naming no Destination (Bindings §3.5.5.2)', posted(authnRequest(SIGNING_SP, now, { Destination: null }), SP_KEY), 'wrong_destination'],
      [
        'a second signature inside it, under the one signed',
        posted(authnRequest(SIGNING_SP, now, {}, `<samlp:Extensions><ds:Signature xmlns:ds="http://www.w3.org/2000/09/xmldsig#"/></samlp:Extensions>`), SP_KEY),
        'bad_signature',
      ],
      [
        'a reference transformed by inclusive c14n as well',
        posted(authnRequest(SIGNING_SP, now), SP_KEY, [ENVELOPED, 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315']),
        'unsupported',
      ],
    ];
    for (const [what, incoming, reason] of cases) await refused(what, incoming, reason, SIGNING_SP);
  });

  it('takes a request once: the same ID again from the same SP is a replay, even signed again', async () => {
    const xml = authnRequest(SIGNING_SP, world.clock.now());
    await read(redirect(xml, { key: SP_KEY }));
    await assert.rejects(read(redirect(xml, { key: SP_KEY })), (error: unknown) => error instanceof SamlRefusal && error.reason === 'replayed');
    // Another SP may use an ID this one used: each SP's IDs are its own.
    const sameId = /ID="([^"]+)"/.exec(xml)![1]!;
    assert.equal((await read(redirect(authnRequest(OPEN_SP, world.clock.now(), { ID: sameId })))).id, sameId);
  });

  it('takes a LogoutRequest until its NotOnOrAfter (SAML Core §3.7.1), allowing for an SP clock a little behind; refuses it after', async () => {
    const now = world.clock.now();
    const readLogout = (attributes: Record<string, string>) =>
      readLogoutRequest({ store: world.store, now, limits: LIMITS, sloUrl: SLO }, redirect(logoutRequest(LOGOUT_SP, now, attributes), { key: SP_KEY }));
    const at = (ms: number) => new Date(now + ms).toISOString();
    assert.equal((await readLogout({})).sp.entityId, LOGOUT_SP, 'no NotOnOrAfter: only its IssueInstant dates it');
    assert.equal((await readLogout({ NotOnOrAfter: at(60_000) })).nameId, 'someone');
    assert.equal((await readLogout({ NotOnOrAfter: at(1 - CLOCK_SKEW_MS) })).nameId, 'someone', 'expired by less than the clock skew allowed');
    const reason = (run: Promise<unknown>) =>
      run.then(
        () => 'taken',
        (error: unknown) => (error instanceof SamlRefusal ? error.reason : String(error)),
      );
    assert.equal(await reason(readLogout({ NotOnOrAfter: at(-CLOCK_SKEW_MS) })), 'expired');
    assert.equal(await reason(readLogout({ NotOnOrAfter: at(-60_000) })), 'expired');
    assert.equal(await reason(readLogout({ NotOnOrAfter: '2026-01-01T00:00:00+01:00' })), 'malformed', 'not in UTC (Core §1.3.3)');
  });
});

/**
 * Tessera as a SAML 2.0 identity provider (docs/saml.md), with @node-saml/node-saml (the
 * library passport-saml uses) as the service provider: SP-initiated sign-in over both
 * bindings, IdP-initiated sign-in, ForceAuthn and IsPassive, an organization's sign-in policy, the attributes the SP's mapping
 * names, and the attacks each refused with a page in the person's language and an event.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SAML, ValidateInResponseTo, type SamlConfig } from '@node-saml/node-saml';
import { SignedXml } from 'xml-crypto';
import { addOrganization, setOrganizationMember } from '../src/flows/manage/organizations.ts';
import { addSamlSp } from '../src/flows/manage/saml-service-providers.ts';
import { pemCertificate, selfSignedCertificate } from '../src/tokens/certificate.ts';
import { SoftwarePasskey } from './helpers/authenticator.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

const ACS = 'https://sp.example.com/saml/acs';
const SP_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const SP_KEY_PEM = SP_KEY.export({ type: 'pkcs8', format: 'pem' }).toString();
const SP_CERT = pemCertificate(selfSignedCertificate(SP_KEY, 'sp', 'sp'));

let server: TestServer;
let user: TestUser;
let idpCert: string;
let counter = 0;

/** A registered SP and a node-saml instance speaking for it. */
async function serviceProvider(registration: Record<string, unknown> = {}, options: Partial<SamlConfig> = {}) {
  counter += 1;
  const entityId = `https://sp${counter}.example.com/saml`;
  await addSamlSp(manageDeps(server), {
    entity_id: entityId,
    acs_urls: [ACS],
    attributes: { mail: 'email', uid: 'preferred_username', displayName: 'name' },
    ...registration,
  });
  const saml = new SAML({
    issuer: entityId,
    callbackUrl: ACS,
    entryPoint: `${server.url}/saml/sso`,
    idpCert,
    idpIssuer: `${server.url}/saml/metadata`,
    audience: entityId,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
    disableRequestedAuthnContext: true,
    validateInResponseTo: ValidateInResponseTo.always,
    acceptedClockSkewMs: 5_000,
    ...options,
  });
  return { entityId, saml };
}

/** The auto-posting form to the ACS: its fields, checked to go where they should. */
function postedToAcs(page: Page): Record<string, string> {
  assert.equal(page.status, 200, page.html.slice(0, 500));
  const form = new FormBrowser(server.url).form(page, ACS);
  assert.match(page.headers.get('content-security-policy') ?? '', /form-action https:\/\/sp\.example\.com/);
  return form.fields;
}

before(async () => {
  server = await startTestServer();
  user = await server.addUser({ username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', profile: { emailVerified: true } });
  const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
  idpCert = /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
});
after(() => server.close());

describe('the IdP metadata', () => {
  it('names the entity ID, the SSO and SLO endpoints of both bindings, the NameID formats and a certificate of the RS256 signing key', async () => {
    const response = await fetch(`${server.url}/saml/metadata`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /application\/samlmetadata\+xml/);
    const xml = await response.text();
    assert.match(xml, new RegExp(`entityID="${server.url}/saml/metadata"`));
    assert.match(xml, new RegExp(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${server.url}/saml/sso"`));
    assert.match(xml, new RegExp(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${server.url}/saml/sso"`));
    assert.match(xml, new RegExp(`<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${server.url}/saml/slo"/>`));
    for (const format of ['emailAddress', 'persistent', 'transient']) assert.match(xml, new RegExp(`<md:NameIDFormat>[^<]*${format}</md:NameIDFormat>`));
    const certificate = new X509Certificate(Buffer.from(idpCert, 'base64'));
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: { kty: string; n?: string }[] };
    assert.ok(
      jwks.keys.some((key) => key.kty === 'RSA' && key.n === certificate.publicKey.export({ format: 'jwk' }).n),
      'the certificate holds a published RS256 key',
    );
  });
});

describe('SP-initiated sign-in', () => {
  it('signs in with a password over HTTP-Redirect: the SP validates the signed assertion, its NameID and attributes', async () => {
    const { saml, entityId } = await serviceProvider();
    const browser = new FormBrowser(server.url);
    const url = await saml.getAuthorizeUrlAsync('relay-1', undefined, {});
    const page = await browser.signIn(await browser.follow(await browser.request(url)), user);
    const fields = postedToAcs(page);
    assert.equal(fields['RelayState'], 'relay-1');
    const { profile, loggedOut } = await saml.validatePostResponseAsync(fields);
    assert.equal(loggedOut, false);
    assert.ok(profile);
    assert.equal(profile.issuer, `${server.url}/saml/metadata`);
    assert.equal(profile.nameIDFormat, 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    assert.equal(profile['mail'], 'ada@example.com');
    assert.equal(profile['uid'], 'ada');
    assert.equal(profile['displayName'], 'Ada Lovelace');
    assert.notEqual(profile.nameID, user.id, 'a persistent NameID is not the user id');
    const [event] = await server.store.events.list({ userId: user.id, type: 'saml.assertion_issued', limit: 1 });
    assert.equal(event?.detail['entity_id'], entityId);

    // Single sign-on: the same browser, another request, no sign-in page; the same persistent NameID.
    const again = await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {})));
    const second = await saml.validatePostResponseAsync(postedToAcs(again));
    assert.equal(second.profile?.nameID, profile.nameID);

    // Another SP knows the same person by another persistent NameID.
    const other = await serviceProvider();
    const third = await other.saml.validatePostResponseAsync(
      postedToAcs(await browser.follow(await browser.request(await other.saml.getAuthorizeUrlAsync('', undefined, {})))),
    );
    assert.notEqual(third.profile?.nameID, profile.nameID, 'persistent NameIDs differ per SP');
  });

  it('takes a signed AuthnRequest over HTTP-POST, and signs the whole response for an SP that asks', async () => {
    const { saml } = await serviceProvider(
      { want_signed_requests: true, sign_response: true, certificate: SP_CERT, name_id_format: 'email' },
      {
        privateKey: SP_KEY_PEM,
        signatureAlgorithm: 'sha256',
        authnRequestBinding: 'HTTP-POST',
        wantAuthnResponseSigned: true,
        identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      },
    );
    const browser = new FormBrowser(server.url);
    const message = (await saml.getAuthorizeMessageAsync('posted')) as Record<string, string>;
    const page = await browser.signIn(await browser.follow(await browser.request('/saml/sso', { form: message })), user);
    const { profile } = await saml.validatePostResponseAsync(postedToAcs(page));
    assert.equal(profile?.nameID, 'ada@example.com');
  });

  it('takes a signed AuthnRequest over HTTP-Redirect (the signature in the query)', async () => {
    const { saml } = await serviceProvider({ want_signed_requests: true, certificate: SP_CERT }, { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256' });
    const browser = new FormBrowser(server.url);
    const url = await saml.getAuthorizeUrlAsync('signed', undefined, {});
    assert.match(url, /Signature=/);
    const { profile } = await saml.validatePostResponseAsync(postedToAcs(await browser.signIn(await browser.follow(await browser.request(url)), user)));
    assert.equal(profile?.['uid'], 'ada');
  });

  it('asks for the password again on ForceAuthn, as prompt=login, and answers IsPassive without a session with NoPassive, as prompt=none', async () => {
    const { saml } = await serviceProvider({}, { forceAuthn: true });
    const browser = new FormBrowser(server.url);
    await saml.validatePostResponseAsync(
      postedToAcs(await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), user)),
    );
    const again = await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {})));
    await saml.validatePostResponseAsync(postedToAcs(await browser.signIn(again, user)));

    const passive = await serviceProvider({}, { passive: true });
    const stranger = new FormBrowser(server.url);
    const answer = postedToAcs(await stranger.follow(await stranger.request(await passive.saml.getAuthorizeUrlAsync('', undefined, {}))));
    assert.match(Buffer.from(answer['SAMLResponse']!, 'base64').toString(), /<samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:NoPassive"\/>/);
    await assert.rejects(passive.saml.validatePostResponseAsync(answer), /Requester/);
  });
});

describe('IdP-initiated sign-in', () => {
  it("sends an unsolicited signed assertion to the SP's first ACS URL after the password, for an SP registered to take one", async () => {
    const { saml, entityId } = await serviceProvider({ idp_initiated: true }, { validateInResponseTo: ValidateInResponseTo.never });
    const browser = new FormBrowser(server.url);
    const page = await browser.signIn(await browser.follow(await browser.request(`/saml/initiate?sp=${encodeURIComponent(entityId)}&RelayState=home`)), user);
    const fields = postedToAcs(page);
    assert.equal(fields['RelayState'], 'home');
    const { profile } = await saml.validatePostResponseAsync(fields);
    assert.equal(profile?.['mail'], 'ada@example.com');
  });

  it('refuses one for an SP not registered to take unsolicited Responses (SAML Profiles §4.1.5), before any sign-in, with a page and an event', async () => {
    const { entityId } = await serviceProvider();
    const browser = new FormBrowser(server.url);
    await browser.signIn(await browser.request('/login'), user);
    const page = await browser.request(`/saml/initiate?sp=${encodeURIComponent(entityId)}`, { headers: { 'accept-language': 'de' } });
    assert.equal(page.status, 403, page.html.slice(0, 400));
    assert.match(page.html, /<h1>Anmeldeanfrage abgelehnt<\/h1>/);
    assert.doesNotMatch(page.html, /name="SAMLResponse"/, 'nothing is sent to the SP');
    const [event] = await server.store.events.list({ type: 'saml.request_refused', limit: 1 });
    assert.deepEqual([event?.detail['reason'], event?.detail['entity_id']], ['unsolicited', entityId]);
  });
});

/** An AuthnRequest as an SP would send it over HTTP-Redirect, here written by hand. */
function redirectUrl(xml: string): string {
  return `/saml/sso?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`;
}
function authnRequest(issuer: string, extra: { id?: string; instant?: string; acs?: string; issuerXml?: string } = {}): string {
  return `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${extra.id ?? `_${Math.random().toString(16).slice(2)}`}" Version="2.0" IssueInstant="${extra.instant ?? new Date().toISOString()}" AssertionConsumerServiceURL="${extra.acs ?? ACS}">${extra.issuerXml ?? `<saml:Issuer>${issuer}</saml:Issuer>`}</samlp:AuthnRequest>`;
}

describe("requests refused, each with a page in the person's language and an event", () => {
  /**
   * Opens `url` (or posts `form`) in German; asserts the refusal page (worded for a sign-in,
   * or for a logout) and the event of `reason`.
   */
  async function assertRefused(
    request: { url: string; form?: Record<string, string> },
    reason: string,
    status = 400,
    kind: 'sign-in' | 'logout' = 'sign-in',
  ): Promise<void> {
    const browser = new FormBrowser(server.url);
    const page = await browser.request(request.url, { headers: { 'accept-language': 'de' }, ...(request.form ? { form: request.form } : {}) });
    assert.equal(page.status, status, `${reason}: ${page.html.slice(0, 400)}`);
    const heading = kind === 'logout' ? /<h1>Abmeldeanfrage abgelehnt<\/h1>/ : /<h1>Anmeldeanfrage abgelehnt<\/h1>/;
    assert.match(page.html, heading, `${reason}: the page is in German`);
    assert.doesNotMatch(page.html, /name="SAMLResponse"/, 'nothing is sent to the SP');
    assert.equal(page.location, null);
    const [event] = await server.store.events.list({ type: 'saml.request_refused', limit: 1 });
    assert.deepEqual([event?.detail['reason'], event?.detail['kind']], [reason, kind]);
  }

  it('a request sent to another server (Destination), and one asking for what is not done (a binding, a NameID format, a version)', async () => {
    const { entityId } = await serviceProvider();
    const to = (extra: string) => authnRequest(entityId).replace('<samlp:AuthnRequest ', `<samlp:AuthnRequest ${extra} `);
    await assertRefused({ url: redirectUrl(to('Destination="https://other-idp.example/sso"')) }, 'wrong_destination');
    await assertRefused({ url: redirectUrl(to('ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Artifact"')) }, 'unsupported');
    const format = authnRequest(entityId).replace(
      '</samlp:AuthnRequest>',
      '<samlp:NameIDPolicy Format="urn:oasis:names:tc:SAML:2.0:nameid-format:kerberos"/></samlp:AuthnRequest>',
    );
    await assertRefused({ url: redirectUrl(format) }, 'unsupported');
    await assertRefused({ url: redirectUrl(authnRequest(entityId).replace('Version="2.0"', 'Version="1.1"')) }, 'unsupported');
  });

  it('logout messages are refused in words of their own: an unknown SP, a DTD, unsigned (a request, or an answer from an SP with a certificate), another server or none though signed, a replay, a changed signature', async () => {
    const slo = 'https://sp.example.com/saml/slo';
    const { entityId } = await serviceProvider({ slo_url: slo, certificate: SP_CERT });
    /** A LogoutRequest sent to this server's /saml/slo, or to `destination` (null: naming none). */
    const logout = (issuer: string, extra: { id?: string; destination?: string | null; doctype?: string } = {}) => {
      const destination = extra.destination === undefined ? `${server.url}/saml/slo` : extra.destination;
      return `${extra.doctype ?? ''}<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${extra.id ?? `_${Math.random().toString(16).slice(2)}`}" Version="2.0" IssueInstant="${new Date().toISOString()}"${destination === null ? '' : ` Destination="${destination}"`}><saml:Issuer>${issuer}</saml:Issuer><saml:NameID>someone</saml:NameID></samlp:LogoutRequest>`;
    };
    const unsignedUrl = (xml: string) => `/saml/slo?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.from(xml)).toString('base64'))}`;
    // Signed by the SP over its query (SAML Bindings §3.4.4.1), as a LogoutRequest must be.
    const sloUrl = (xml: string) => {
      const query = `${unsignedUrl(xml).slice('/saml/slo?'.length)}&SigAlg=${encodeURIComponent('http://www.w3.org/2001/04/xmldsig-more#rsa-sha256')}`;
      return `/saml/slo?${query}&Signature=${encodeURIComponent(sign('sha256', Buffer.from(query), SP_KEY).toString('base64'))}`;
    };
    await assertRefused({ url: unsignedUrl(logout('https://stranger.example/saml')) }, 'unknown_sp', 403, 'logout');
    await assertRefused({ url: sloUrl(logout(entityId, { doctype: '<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>' })) }, 'malformed', 400, 'logout');
    // SAML Profiles §4.4.4.1: any page the person visits could send an unsigned one.
    await assertRefused({ url: unsignedUrl(logout(entityId)) }, 'unsigned', 400, 'logout');
    await assertRefused({ url: sloUrl(logout(entityId, { destination: 'https://other-idp.example/slo' })) }, 'wrong_destination', 400, 'logout');
    // SAML Bindings §3.4.5.2: signed, it MUST name where it was sent; one that names nowhere could be another IdP's.
    await assertRefused({ url: sloUrl(logout(entityId, { destination: null })) }, 'wrong_destination', 400, 'logout');
    const once = sloUrl(logout(entityId, { id: '_logout-once' }));
    assert.equal((await new FormBrowser(server.url).request(once)).status, 303);
    await assertRefused({ url: once }, 'replayed', 400, 'logout');

    // A LogoutResponse from an SP whose messages must be signed, its signature changed.
    const signedSp = await serviceProvider(
      { slo_url: slo, want_signed_requests: true, certificate: SP_CERT },
      { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256', logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo },
    );
    const answer = new URL(await signedSp.saml.getLogoutResponseUrlAsync({ ID: '_anything' } as never, '', {}, true));
    const signature = answer.searchParams.get('Signature')!;
    answer.searchParams.set('Signature', `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`);
    await assertRefused({ url: `/saml/slo${answer.search}` }, 'bad_signature', 400, 'logout');
    answer.searchParams.delete('Signature');
    answer.searchParams.delete('SigAlg');
    await assertRefused({ url: `/saml/slo${answer.search}` }, 'unsigned', 400, 'logout');

    // SAML Profiles §4.4.4.2: an SP whose certificate is registered signs its LogoutResponse,
    // whatever it asked of its AuthnRequests (here taken unsigned).
    const certified = await serviceProvider({ slo_url: slo, certificate: SP_CERT }, { logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo });
    const unsignedAnswer = new URL(await certified.saml.getLogoutResponseUrlAsync({ ID: '_anything' } as never, '', {}, true));
    assert.equal(unsignedAnswer.searchParams.has('Signature'), false);
    await assertRefused({ url: `/saml/slo${unsignedAnswer.search}` }, 'unsigned', 400, 'logout');
  });

  it('a signed HTTP-Redirect query carrying a second message its signature does not cover (an encoded name, a second ?)', async () => {
    const slo = 'https://sp.example.com/saml/slo';
    const { entityId, saml } = await serviceProvider(
      { slo_url: slo, want_signed_requests: true, certificate: SP_CERT },
      { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256', logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo },
    );
    // Any query the SP signed: here its LogoutResponse (SAMLResponse, SigAlg, Signature).
    const signed = new URL(await saml.getLogoutResponseUrlAsync({ ID: '_anything' } as never, '', {}, true)).search;
    const forged = encodeURIComponent(deflateRawSync(Buffer.from(authnRequest(entityId, { id: '_forged' }))).toString('base64'));
    // A framework's parser reads `SAML%52equest` as SAMLRequest, and a query from its first `?`:
    // each would be an AuthnRequest read as signed by the SP.
    await assertRefused({ url: `/saml/sso${signed}&SAML%52equest=${forged}` }, 'malformed');
    await assertRefused({ url: `/saml/sso${signed}&x=?&SAMLRequest=${forged}` }, 'bad_signature');
    await assertRefused({ url: `/saml/slo${signed}&Relay%53tate=elsewhere` }, 'malformed', 400, 'logout');
  });

  it('an SP that is not registered', async () => {
    await assertRefused({ url: redirectUrl(authnRequest('https://stranger.example/saml')) }, 'unknown_sp', 403);
  });

  it('an ACS URL the SP did not register', async () => {
    const { entityId } = await serviceProvider();
    await assertRefused({ url: redirectUrl(authnRequest(entityId, { acs: 'https://attacker.example/acs' })) }, 'unknown_acs', 403);
  });

  it('a replayed request, and an expired one', async () => {
    const { entityId } = await serviceProvider();
    const url = redirectUrl(authnRequest(entityId, { id: '_replayed' }));
    const first = await new FormBrowser(server.url).request(url);
    assert.equal(first.status, 303);
    await assertRefused({ url }, 'replayed');
    await assertRefused({ url: redirectUrl(authnRequest(entityId, { instant: new Date(Date.now() - 10 * 60_000).toISOString() })) }, 'expired');
  });

  it('a document type declaration: an entity expansion bomb, and an external entity', async () => {
    const { entityId } = await serviceProvider();
    const bomb = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>${authnRequest(entityId, { issuerXml: `<saml:Issuer>${entityId}&lol2;</saml:Issuer>` })}`;
    await assertRefused({ url: redirectUrl(bomb) }, 'malformed');
    const xxe = `<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${authnRequest(entityId, { issuerXml: `<saml:Issuer>&x;</saml:Issuer>` })}`;
    await assertRefused({ url: '/saml/sso', form: { SAMLRequest: Buffer.from(xxe).toString('base64') } }, 'malformed');
    // A small DEFLATE bomb: inflated past the size limit, it is refused before parsing.
    const huge = `/saml/sso?SAMLRequest=${encodeURIComponent(deflateRawSync(Buffer.alloc(10_000_000, 0x20)).toString('base64'))}`;
    await assertRefused({ url: huge }, 'malformed');
  });

  it('a comment inside the Issuer (a reader that stops at it reads another name)', async () => {
    const { entityId } = await serviceProvider();
    const cut = entityId.replace('.example.com', '<!---->.example.com');
    await assertRefused({ url: redirectUrl(authnRequest(entityId, { issuerXml: `<saml:Issuer>${cut}</saml:Issuer>` })) }, 'malformed');
  });

  it('an unsigned request from an SP whose requests must be signed', async () => {
    const { entityId } = await serviceProvider({ want_signed_requests: true, certificate: SP_CERT });
    await assertRefused({ url: redirectUrl(authnRequest(entityId)) }, 'unsigned');
  });

  it("signature wrapping: a signed request changed, or wrapped in another that names an ACS URL of the attacker's", async () => {
    const { saml, entityId } = await serviceProvider(
      { want_signed_requests: true, certificate: SP_CERT, acs_urls: [ACS, 'https://sp.example.com/other-acs'] },
      { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256', authnRequestBinding: 'HTTP-POST', skipRequestCompression: true },
    );
    const signedXml = async () => Buffer.from(((await saml.getAuthorizeMessageAsync('')) as Record<string, string>)['SAMLRequest']!, 'base64').toString('utf8');
    const post = (xml: string) => ({ url: '/saml/sso', form: { SAMLRequest: Buffer.from(xml).toString('base64') } });

    // Changed after signing: another registered ACS URL, so that only the signature stands in the way.
    const changed = (await signedXml()).replace(`AssertionConsumerServiceURL="${ACS}"`, 'AssertionConsumerServiceURL="https://sp.example.com/other-acs"');
    await assertRefused(post(changed), 'bad_signature');

    // Wrapped: an unsigned request of the attacker's around the signed one, the signature moved up.
    const original = await signedXml();
    const signature = /<(\w+:)?Signature[\s\S]*<\/(\w+:)?Signature>/.exec(original)![0];
    const id = /ID="([^"]+)"/.exec(original)![1]!;
    const inner = original.replace(signature, '');
    const wrapped = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_evil" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="https://sp.example.com/other-acs"><saml:Issuer>${entityId}</saml:Issuer>${signature}<samlp:Extensions>${inner.replace(/^<\?xml[^>]*>/, '')}</samlp:Extensions></samlp:AuthnRequest>`;
    assert.match(wrapped, new RegExp(`URI="#${id}"`));
    await assertRefused(post(wrapped), 'bad_signature');

    // The same request as signed still goes through.
    const page = await new FormBrowser(server.url).request('/saml/sso', { form: { SAMLRequest: Buffer.from(await signedXml()).toString('base64') } });
    assert.equal(page.status, 303, page.html.slice(0, 300));
  });

  it('a resume address that was changed', async () => {
    await assertRefused({ url: '/saml/sso/resume?pending=eyJzcCI6IngifQ.AAAA' }, 'stale');
  });
});

describe('single logout', () => {
  it("ends the session for an SP's signed LogoutRequest, the OpenID Connect one too, and answers with a signed LogoutResponse", async () => {
    const slo = 'https://sp.example.com/saml/slo';
    const { saml } = await serviceProvider(
      { slo_url: slo, want_signed_requests: true, certificate: SP_CERT },
      { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256', logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo },
    );
    const browser = new FormBrowser(server.url);
    const { profile } = await saml.validatePostResponseAsync(
      postedToAcs(await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), user)),
    );
    assert.ok(profile?.sessionIndex, 'the assertion names the session');
    assert.equal((await browser.request('/account')).status, 200, 'signed in to Tessera');

    const answer = await browser.request(await saml.getLogoutUrlAsync(profile, 'bye', {}));
    assert.equal(answer.status, 303, answer.html.slice(0, 400));
    const back = new URL(answer.location!);
    assert.equal(`${back.origin}${back.pathname}`, slo);
    const validated = await saml.validateRedirectAsync(Object.fromEntries(back.searchParams), back.search.slice(1));
    assert.equal(validated.loggedOut, true);
    assert.equal(back.searchParams.get('RelayState'), 'bye');
    const account = await browser.request('/account');
    assert.equal(account.status, 303, 'the session, shared with OpenID Connect, has ended');
    assert.match(account.location ?? '', /^\/login/);
    const [event] = await server.store.events.list({ type: 'saml.logout', limit: 1 });
    assert.equal(event?.detail['outcome'], 'end');
  });

  it("does not end another person's session, and refuses an unsigned LogoutRequest (SAML Profiles §4.4.4.1)", async () => {
    const slo = 'https://sp.example.com/saml/slo';
    const { saml } = await serviceProvider(
      { slo_url: slo, certificate: SP_CERT },
      { logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo, privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256' },
    );
    const browser = new FormBrowser(server.url);
    await saml.validatePostResponseAsync(
      postedToAcs(await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), user)),
    );
    const someoneElse = {
      issuer: saml.options.issuer,
      nameID: 'someone-else',
      nameIDFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      sessionIndex: 'x',
    };
    const answer = await browser.request(await saml.getLogoutUrlAsync(someoneElse as never, '', {}));
    assert.equal(answer.status, 303);
    await assert.rejects(
      saml.validateRedirectAsync(Object.fromEntries(new URL(answer.location!).searchParams), new URL(answer.location!).search.slice(1)),
      /UnknownPrincipal|Requester/,
    );
    assert.equal((await browser.request('/account')).status, 200, 'still signed in');

    // An SP that signs none of its requests, its AuthnRequests taken unsigned: its LogoutRequests are not.
    const strict = await serviceProvider({ slo_url: slo, certificate: SP_CERT }, { logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo });
    const unsigned = await new FormBrowser(server.url).request(await strict.saml.getLogoutUrlAsync(someoneElse as never, '', {}), {
      headers: { 'accept-language': 'de' },
    });
    assert.equal(unsigned.status, 400);
    assert.match(unsigned.html, /<h1>Abmeldeanfrage abgelehnt<\/h1>/, 'worded as a logout, not as a sign-in');
    assert.match(unsigned.html, /Abmeldenachrichten dieser Anwendung müssen signiert sein/);
    const [refusal] = await server.store.events.list({ type: 'saml.request_refused', limit: 1 });
    assert.deepEqual([refusal?.detail['reason'], refusal?.detail['kind']], ['unsigned', 'logout']);
  });

  it('takes a LogoutRequest over HTTP-POST too: the session cookie, which a cross-site POST lacks, is read on the GET it is sent on to', async () => {
    const slo = 'https://sp.example.com/saml/slo';
    const { saml, entityId } = await serviceProvider({ slo_url: slo, certificate: SP_CERT }, { logoutUrl: `${server.url}/saml/slo`, logoutCallbackUrl: slo });
    const browser = new FormBrowser(server.url);
    const { profile } = await saml.validatePostResponseAsync(
      postedToAcs(await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), user)),
    );
    const xml = `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_logout${counter}" Version="2.0" IssueInstant="${new Date().toISOString()}" Destination="${server.url}/saml/slo"><saml:Issuer>${entityId}</saml:Issuer><saml:NameID>${profile!.nameID}</saml:NameID></samlp:LogoutRequest>`;
    // Signed in the XML as an SP signs a POSTed message (SAML Core §5.4): enveloped, one reference, after the Issuer.
    const signer = new SignedXml({
      privateKey: SP_KEY_PEM,
      signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
      canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
    });
    signer.addReference({
      xpath: "/*[local-name(.)='LogoutRequest']",
      transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
      digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
    });
    signer.computeSignature(xml, { prefix: 'ds', location: { reference: "/*/*[local-name(.)='Issuer']", action: 'after' } });
    const unsigned = await new FormBrowser(server.url).request('/saml/slo', { form: { SAMLRequest: Buffer.from(xml).toString('base64') } });
    assert.equal(unsigned.status, 400, 'unsigned, any page could post it');
    // What a browser sends cross-site: the form, without the session cookie.
    const posted = await new FormBrowser(server.url).request('/saml/slo', { form: { SAMLRequest: Buffer.from(signer.getSignedXml()).toString('base64') } });
    assert.equal(posted.status, 303, posted.html.slice(0, 300));
    const answer = await browser.request(posted.location!);
    assert.equal(answer.status, 303);
    assert.ok(answer.location!.startsWith(`${slo}?SAMLResponse=`));
    assert.equal((await browser.request('/account')).status, 303, 'signed out');
  });
});

describe('a passkey, and a second factor asked for by RequestedAuthnContext or by an organization', () => {
  let passkeyServer: TestServer;
  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    passkeyServer = await startTestServer({ issuerHost: 'localhost' });
  });
  after(() => passkeyServer.close());

  /** A passkey added on the account page, in a password session of its own. */
  async function addPasskey(person: TestUser): Promise<SoftwarePasskey> {
    const passkey = new SoftwarePasskey();
    const setup = new FormBrowser(passkeyServer.url);
    const login = await setup.follow(await setup.request('/login?return_to=%2Faccount'));
    const account = await setup.signIn(login, person);
    const creation = JSON.parse(
      (await setup.request('/account/passkeys/options', { form: { csrf_token: setup.form(account, '/account/passkeys').fields['csrf_token']! } })).html,
    ) as Record<string, unknown>;
    assert.equal(
      (await setup.submit(account, '/account/passkeys', { name: 'Key', response: JSON.stringify(passkey.register(creation, passkeyServer.url)) })).status,
      303,
    );
    return passkey;
  }

  it('asks a password sign-in for more when the SP asks for REFEDS MFA, and signs in with a passkey that verified the person', async () => {
    const grace = await passkeyServer.addUser({ username: 'grace', email: 'grace@example.com', profile: { emailVerified: true } });
    const server = passkeyServer;
    const passkey = await addPasskey(grace);

    await addSamlSp(manageDeps(server), { entity_id: 'https://mfa.example.com/saml', acs_urls: [ACS], attributes: { mail: 'email' } });
    const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
    const saml = new SAML({
      issuer: 'https://mfa.example.com/saml',
      callbackUrl: ACS,
      entryPoint: `${server.url}/saml/sso`,
      idpCert: /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!,
      audience: 'https://mfa.example.com/saml',
      wantAuthnResponseSigned: false,
      identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      authnContext: ['https://refeds.org/profile/mfa'],
      acceptedClockSkewMs: 5_000,
    });
    const browser = new FormBrowser(server.url);
    // A password alone is not enough: the sign-in page comes back, saying a second factor is needed.
    const again = await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), grace);
    assert.equal(again.status, 200);
    assert.match(again.html, /second factor/i);
    const signedIn = await browser.passkeySignIn(again, (asked) => passkey.authenticate(asked, server.url, { userVerified: true }));
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 300));
    const fields = postedToAcs(await browser.follow(signedIn));
    assert.match(
      Buffer.from(fields['SAMLResponse']!, 'base64').toString(),
      /<saml:AuthnContextClassRef>https:\/\/refeds\.org\/profile\/mfa<\/saml:AuthnContextClassRef>/,
    );
    const { profile } = await saml.validatePostResponseAsync(fields);
    assert.equal(profile?.['mail'], 'grace@example.com');
  });
  it("holds the sign-in to the policy of the person's organization, as an OpenID Connect approval: a password alone is sent back for a passkey", async () => {
    const server = passkeyServer;
    const hedy = await server.addUser({ username: 'hedy', email: 'hedy@example.com', profile: { emailVerified: true } });
    const passkey = await addPasskey(hedy);
    await addOrganization(manageDeps(server), { name: 'Strict', require_passkey: true });
    await setOrganizationMember(manageDeps(server), 'Strict', { username: 'hedy' });
    await addSamlSp(manageDeps(server), { entity_id: 'https://strict.example.com/saml', acs_urls: [ACS], attributes: { mail: 'email' } });
    const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
    const options = {
      issuer: 'https://strict.example.com/saml',
      callbackUrl: ACS,
      entryPoint: `${server.url}/saml/sso`,
      idpCert: /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!,
      audience: 'https://strict.example.com/saml',
      wantAuthnResponseSigned: false,
      identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      disableRequestedAuthnContext: true,
      acceptedClockSkewMs: 5_000,
    };
    const saml = new SAML(options);
    const browser = new FormBrowser(server.url);
    // The SP asks for nothing more; the organization does: the sign-in page comes back, saying why.
    const again = await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), hedy);
    assert.equal(again.status, 200);
    assert.match(again.html, /can be approved only after signing in with a passkey/);
    assert.equal((await server.store.events.list({ userId: hedy.id, type: 'saml.assertion_issued', limit: 1 })).length, 0);

    // IsPassive, with that password session: NoPassive, not an assertion.
    const passive = new SAML({ ...options, passive: true });
    const noPassive = postedToAcs(await browser.follow(await browser.request(await passive.getAuthorizeUrlAsync('', undefined, {}))));
    assert.match(Buffer.from(noPassive['SAMLResponse']!, 'base64').toString(), /urn:oasis:names:tc:SAML:2\.0:status:NoPassive/);

    const signedIn = await browser.passkeySignIn(again, (asked) => passkey.authenticate(asked, server.url));
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 300));
    const { profile } = await saml.validatePostResponseAsync(postedToAcs(await browser.follow(signedIn)));
    assert.equal(profile?.['mail'], 'hedy@example.com');
  });
});

describe('single logout from Tessera to the SPs of the session', () => {
  const IDP_SLO = () => `${server.url}/saml/slo`;
  let other: TestUser;
  before(async () => {
    other = await server.addUser({ username: 'grace', name: 'Grace Hopper', email: 'grace@example.com', profile: { emailVerified: true } });
  });

  /**
   * An SP with a SingleLogoutService: `redirect` signs its own messages (and is registered so
   * that they must be), `post` takes ours by HTTP-POST and signs nothing.
   */
  async function sloSp(binding: 'redirect' | 'post') {
    const slo = `https://sp.example.com/saml/slo-${counter + 1}`;
    const signed = binding === 'redirect';
    const sp = await serviceProvider(
      { slo_url: slo, slo_binding: binding, ...(signed ? { want_signed_requests: true, certificate: SP_CERT } : {}) },
      { logoutUrl: IDP_SLO(), logoutCallbackUrl: slo, ...(signed ? { privateKey: SP_KEY_PEM, signatureAlgorithm: 'sha256' as const } : {}) },
    );
    return { ...sp, slo, binding };
  }
  type SloSp = Awaited<ReturnType<typeof sloSp>>;

  /** Signs in to `sp` through SAML (with the password the first time), and returns the profile node-saml validated. */
  async function signInTo(browser: FormBrowser, sp: SloSp, person: TestUser = user) {
    let page = await browser.follow(await browser.request(await sp.saml.getAuthorizeUrlAsync('', undefined, {})));
    if (page.html.includes('action="/login"')) page = await browser.signIn(page, person);
    const { profile } = await sp.saml.validatePostResponseAsync(postedToAcs(page));
    assert.ok(profile);
    return profile;
  }

  /**
   * Where the browser is sent while it is signed out of the SPs: for each SP's LogoutRequest,
   * the SP (node-saml) checks it, signature included, and answers Success; returns what each
   * SP was asked (by its entity ID) and the page the logout ends on.
   */
  /**
   * Where a step of the logout sends the browser on to: each goes by a page of Tessera's that
   * refreshes to it at once (a redirect after one of its forms would be held to that form's
   * CSP form-action), or by a form the page posts.
   */
  function onward(page: Page): string | null {
    if (page.status !== 200) return null;
    const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(page.html)?.[1];
    return refresh === undefined ? null : refresh.replace(/&amp;/g, '&');
  }

  async function throughSps(browser: FormBrowser, first: Page, sps: readonly SloSp[], answer: (sp: SloSp) => boolean = () => true) {
    const asked: { entityId: string; nameID: string; sessionIndex: string | undefined; nameIDFormat: string | undefined }[] = [];
    const of = (entityId: string) => asked.filter((each) => each.entityId === entityId).map(({ entityId: _, ...rest }) => rest);
    let page = first;
    for (let hop = 0; hop < 10; hop++) {
      // A LogoutRequest to one of `sps` (a LogoutResponse to one of them ends the logout).
      const next = onward(page);
      const sp =
        next !== null
          ? sps.find((each) => next.startsWith(`${each.slo}?SAMLRequest=`))
          : sps.find((each) => page.html.includes(`action="${each.slo}"`) && page.html.includes('name="SAMLRequest"'));
      if (sp === undefined) return { asked, of, page };
      let request: Awaited<ReturnType<SAML['validateRedirectAsync']>>;
      if (sp.binding === 'redirect') {
        const url = new URL(next!);
        assert.ok(url.searchParams.has('SAMLRequest') && url.searchParams.has('Signature'), 'a signed LogoutRequest in the query');
        assert.equal(url.searchParams.get('SigAlg'), 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256');
        request = await sp.saml.validateRedirectAsync(Object.fromEntries(url.searchParams), url.search.slice(1));
        // The signature is what node-saml checked: the same query, signed by another key, is refused.
        const stranger = new SAML({ ...sp.saml.options, idpCert: SP_CERT });
        await assert.rejects(stranger.validateRedirectAsync(Object.fromEntries(url.searchParams), url.search.slice(1)), /signature/i);
      } else {
        assert.equal(page.status, 200);
        assert.match(page.headers.get('content-security-policy') ?? '', /form-action https:\/\/sp\.example\.com/);
        const fields = new FormBrowser(server.url).form(page, sp.slo).fields;
        request = await sp.saml.validatePostRequestAsync(fields);
        const stranger = new SAML({ ...sp.saml.options, idpCert: SP_CERT });
        await assert.rejects(stranger.validatePostRequestAsync(fields), /signature/i);
      }
      assert.equal(request.loggedOut, true);
      const profile = request.profile!;
      assert.equal(profile.issuer, `${server.url}/saml/metadata`);
      asked.push({ entityId: sp.entityId, nameID: profile.nameID, sessionIndex: profile.sessionIndex, nameIDFormat: profile.nameIDFormat });
      page = await browser.request(await sp.saml.getLogoutResponseUrlAsync(profile, '', {}, answer(sp)));
    }
    assert.fail('the logout went round in circles');
  }

  it('signing out at the end-session endpoint sends each SP of the session its signed LogoutRequest, by its binding, naming the person and the session as it was told', async () => {
    const [a, b, unused] = [await sloSp('redirect'), await sloSp('post'), await sloSp('redirect')];
    const browser = new FormBrowser(server.url);
    const profileA = await signInTo(browser, a);
    const profileB = await signInTo(browser, b);
    // Someone else's session in another browser, with the same SP: not theirs to end.
    const elsewhere = new FormBrowser(server.url);
    await signInTo(elsewhere, a, other);

    const confirm = await browser.request('/oauth/logout');
    const first = await browser.submit(confirm, '/oauth/logout/confirm', {});
    const { asked, of, page } = await throughSps(browser, first, [a, b, unused]);
    assert.deepEqual(of(a.entityId), [{ nameID: profileA.nameID, sessionIndex: profileA.sessionIndex, nameIDFormat: profileA.nameIDFormat }]);
    assert.deepEqual(of(b.entityId), [{ nameID: profileB.nameID, sessionIndex: profileB.sessionIndex, nameIDFormat: profileB.nameIDFormat }]);
    assert.equal(asked.length, 2, 'only the SPs the session signed in to, each once');
    assert.equal(page.status, 200);
    assert.match(page.html, /<h1>You are signed out<\/h1>/);
    assert.equal((await browser.request('/account')).status, 303, 'signed out of Tessera');
    assert.equal((await elsewhere.request('/account')).status, 200, "the other browser's session stays");
    const events = await server.store.events.list({ type: 'saml.logout_requested', limit: 2 });
    assert.deepEqual(events.map((event) => event.detail['entity_id']).sort(), [a.entityId, b.entityId].sort());

    // Each SP once: an answer played again finds nothing waiting, and is refused in the person's language.
    const replay = await browser.request(await a.saml.getLogoutResponseUrlAsync({ ...profileA, ID: '_not-ours' } as never, '', {}, true), {
      headers: { 'accept-language': 'fr' },
    });
    assert.equal(replay.status, 400);
    assert.match(replay.html, /<h1>Demande de déconnexion refusée<\/h1>/);
    const [refusal] = await server.store.events.list({ type: 'saml.request_refused', limit: 1 });
    assert.deepEqual([refusal?.detail['reason'], refusal?.detail['kind']], ['stale', 'logout']);
  });

  it("an SP's own LogoutRequest signs the person out of the session's other SPs, then answers it: PartialLogout when one did not sign them out", async () => {
    const [a, b] = [await sloSp('redirect'), await sloSp('post')];
    const browser = new FormBrowser(server.url);
    const profileA = await signInTo(browser, a);
    const profileB = await signInTo(browser, b);
    const started = await browser.request(await a.saml.getLogoutUrlAsync(profileA, 'back-to-a', {}));
    assert.equal(started.status, 200, 'to B first, by the form B takes');
    assert.match(started.html, /action="https:\/\/sp\.example\.com\/saml\/slo-\d+"/);
    const { asked, of, page } = await throughSps(browser, started, [a, b]);
    assert.deepEqual(
      of(b.entityId).map((each) => each.nameID),
      [profileB.nameID],
    );
    assert.equal(asked.length, 1, 'the SP that asked is not asked back');
    const back = new URL(onward(page)!);
    assert.equal(`${back.origin}${back.pathname}`, a.slo);
    assert.equal(back.searchParams.get('RelayState'), 'back-to-a');
    assert.equal((await a.saml.validateRedirectAsync(Object.fromEntries(back.searchParams), back.search.slice(1))).loggedOut, true);
    assert.equal((await browser.request('/account')).status, 303, 'signed out of Tessera');

    // Again, B failing to sign them out: A is told PartialLogout (SAML Core §3.7.3.2).
    const again = new FormBrowser(server.url);
    const againA = await signInTo(again, a);
    await signInTo(again, b);
    const partial = await throughSps(again, await again.request(await a.saml.getLogoutUrlAsync(againA, '', {})), [b], () => false);
    const response = inflateRawSync(Buffer.from(new URL(onward(partial.page)!).searchParams.get('SAMLResponse')!, 'base64')).toString();
    assert.match(
      response,
      /<samlp:StatusCode Value="urn:oasis:names:tc:SAML:2\.0:status:Success"><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2\.0:status:PartialLogout"\/>/,
    );
  });

  it("the account page's sign-out and 'Sign out everywhere' go through the SPs before their own next page", async () => {
    const a = await sloSp('redirect');
    const browser = new FormBrowser(server.url);
    const profile = await signInTo(browser, a);
    const account = await browser.request('/account');
    const first = await browser.submit(account, '/logout', {});
    const { of, page } = await throughSps(browser, first, [a]);
    assert.deepEqual(
      of(a.entityId).map((each) => each.sessionIndex),
      [profile.sessionIndex],
    );
    assert.equal(onward(page), '/account', "then where the account page's sign-out goes");

    // Someone whose every session is in this test (ada's other sessions have SPs of other tests).
    const linus = await server.addUser({ username: 'linus', name: 'Linus', email: 'linus@example.com', profile: { emailVerified: true } });
    const phone = new FormBrowser(server.url);
    const laptop = new FormBrowser(server.url);
    const onPhone = await signInTo(phone, a, linus);
    const onLaptop = await signInTo(laptop, a, linus);
    const everywhere = await laptop.submit(await laptop.request('/account'), '/account/sign-out-everywhere', {});
    const all = await throughSps(laptop, everywhere, [a]);
    // One SP, two sessions (the phone's too): it is asked once for each, then the browser goes to the sign-in page.
    assert.deepEqual(
      all
        .of(a.entityId)
        .map((each) => each.sessionIndex)
        .sort(),
      [onPhone.sessionIndex, onLaptop.sessionIndex].sort(),
    );
    assert.match(onward(all.page) ?? '', /^\/login/);
    assert.equal((await phone.request('/account')).status, 303);

    // A new password signs the other browsers out: their SPs too, through this one, which stays signed in.
    const tablet = new FormBrowser(server.url);
    const onTablet = await signInTo(tablet, a, linus);
    const desk = new FormBrowser(server.url);
    const onDesk = await signInTo(desk, a, linus);
    const changed = await desk.submit(await desk.request('/account'), '/account/password', {
      current_password: linus.password,
      new_password: 'a new password for linus',
    });
    const viaDesk = await throughSps(desk, changed, [a]);
    assert.deepEqual(
      viaDesk.of(a.entityId).map((each) => each.sessionIndex),
      [onTablet.sessionIndex],
    );
    assert.notEqual(onTablet.sessionIndex, onDesk.sessionIndex);
    assert.equal(onward(viaDesk.page), '/account?done=password');
    assert.equal((await desk.request('/account')).status, 200);
  });
});

describe('encrypted assertions', () => {
  const ENCRYPTION_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  const ENCRYPTION_CERT = pemCertificate(selfSignedCertificate(ENCRYPTION_KEY, 'sp-encryption', 'sp-encryption'));
  const ENCRYPTION_KEY_PEM = ENCRYPTION_KEY.export({ type: 'pkcs8', format: 'pem' }).toString();

  it("encrypts the signed assertion for the SP's encryption certificate, which node-saml decrypts and validates; without the key it reads nothing", async () => {
    for (const signResponse of [false, true]) {
      const { saml } = await serviceProvider(
        { encryption_certificate: ENCRYPTION_CERT, sign_response: signResponse },
        { decryptionPvk: ENCRYPTION_KEY_PEM, wantAuthnResponseSigned: signResponse },
      );
      const browser = new FormBrowser(server.url);
      const fields = postedToAcs(await browser.signIn(await browser.follow(await browser.request(await saml.getAuthorizeUrlAsync('', undefined, {}))), user));
      const xml = Buffer.from(fields['SAMLResponse']!, 'base64').toString('utf8');
      assert.match(
        xml,
        /<saml:EncryptedAssertion>\s*<xenc:EncryptedData [^>]*>\s*<xenc:EncryptionMethod Algorithm="http:\/\/www\.w3\.org\/2009\/xmlenc11#aes256-gcm"/,
      );
      assert.match(xml, /Algorithm="http:\/\/www\.w3\.org\/2001\/04\/xmlenc#rsa-oaep-mgf1p"/);
      assert.doesNotMatch(xml, /ada@example\.com|<saml:Assertion /, 'nothing of the assertion in the clear');
      const { profile } = await saml.validatePostResponseAsync(fields);
      assert.equal(profile?.['mail'], 'ada@example.com', `signResponse ${signResponse}`);
      const withoutKey = new SAML({ ...saml.options, decryptionPvk: undefined as never, validateInResponseTo: ValidateInResponseTo.never });
      await assert.rejects(withoutKey.validatePostResponseAsync(fields), /decryption/i);
    }
  });

  it('takes the encryption certificate from the metadata, apart from the signing one', async () => {
    const spSaml = new SAML({
      issuer: 'https://meta.example.com/saml',
      callbackUrl: ACS,
      idpCert,
      logoutCallbackUrl: 'https://meta.example.com/saml/slo',
      privateKey: SP_KEY_PEM,
      decryptionPvk: ENCRYPTION_KEY_PEM,
    });
    const metadata = spSaml.generateServiceProviderMetadata(ENCRYPTION_CERT, SP_CERT);
    const sp = await addSamlSp(manageDeps(server), { metadata });
    assert.equal(sp.encryptionCertificate, ENCRYPTION_CERT.trim());
    assert.equal(sp.certificate, SP_CERT.trim());
    assert.equal(sp.sloUrl, 'https://meta.example.com/saml/slo');
    assert.equal(sp.sloBinding, /SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"/.test(metadata) ? 'redirect' : 'post');
  });
});

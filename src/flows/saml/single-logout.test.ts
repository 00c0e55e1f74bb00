/**
 * SAML single logout without HTTP (SAML Profiles §4.4): from this IdP to the SPs of an ending
 * session (single-logout.ts `beginSingleLogout`, `continueSingleLogout`), the LogoutRequest and
 * LogoutResponse it sends (response.ts `logoutRequest`, `logoutResponse`), and what an SP's own
 * LogoutRequest does to the browser's session (logout.ts). Which SPs are told, each once, what
 * each is told (the NameID and SessionIndex it was given), and that a logout goes on only on
 * the answer of the SP it waits on; the messages checked by @node-saml/node-saml as the SP (its
 * signature checks, its clock the world's) and xml-crypto, read with the parser of xml.ts.
 * test/saml.test.ts plays node-saml against the server's /saml/slo over both bindings (the
 * end-session endpoint, the account page's sign-outs, an SP's own LogoutRequest).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it, mock } from 'node:test';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { samlEndpoints } from '../../core/endpoints.ts';
import type { SamlServiceProviderRecord, SessionRecord, UserRecord } from '../../store/types.ts';
import { pemCertificate, selfSignedCertificate, signingCertificate, type SigningCertificate } from '../../tokens/certificate.ts';
import { addSamlSp, removeSamlSp, type SamlSpInput } from '../manage/saml-service-providers.ts';
import { logoutDecision, openLogout, sealLogout, type PendingLogout } from './logout.ts';
import { NAME_ID_FORMAT_URIS } from './metadata-import.ts';
import { readLogoutRequest, readLogoutResponse, SamlRefusal, SIGNATURE_ALGORITHMS, type IncomingRequest, type LogoutRequest } from './request.ts';
import { logoutRequest, logoutResponse, nameIdOf, STATUS, type OutgoingMessage } from './response.ts';
import { beginSingleLogout, continueSingleLogout, type LogoutEnd, type LogoutStep } from './single-logout.ts';
import { attribute, children, onlyChild, parseXml, SAML_NS, textOf, xmlCrypto, type XmlElement } from './xml.ts';

const IDP = samlEndpoints(FLOW_ISSUER).metadata;
const IDP_SLO = samlEndpoints(FLOW_ISSUER).slo;
/** Another key's certificate: what a forger could sign with. */
const STRANGER_CERT = pemCertificate(selfSignedCertificate(generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey, 'stranger', 'stranger'));
const PAGE: LogoutEnd = { kind: 'page' };
const HOUR = 3600_000;

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * Whether `parent` has a child `local` in `ns`: asserted as a boolean, as an element compared
 * in an assertion would be printed whole, DOM and all, when it fails.
 */
const has = (parent: XmlElement, ns: string, local: string): boolean => onlyChild(parent, ns, local) !== null;

/** What an outgoing message carries: its XML (inflated from the query, or from the form), and the query or form as sent. */
function opened(message: OutgoingMessage): { xml: string; root: XmlElement; query: URLSearchParams | null } {
  if (message.binding === 'redirect') {
    const query = new URL(message.url).searchParams;
    const encoded = query.get('SAMLRequest') ?? query.get('SAMLResponse')!;
    const xml = inflateRawSync(Buffer.from(encoded, 'base64')).toString('utf8');
    return { xml, root: parseXml(xml, 100_000).documentElement!, query };
  }
  const xml = Buffer.from(message.params['SAMLRequest'] ?? message.params['SAMLResponse']!, 'base64').toString('utf8');
  return { xml, root: parseXml(xml, 100_000).documentElement!, query: null };
}

describe('single logout (flows/saml/single-logout.ts, logout.ts, response.ts)', () => {
  let world: FlowWorld;
  let signer: SigningCertificate;
  let ada: UserRecord;
  let grace: UserRecord;
  let made = 0;
  let sids = 0;
  let lifetime: number;

  before(async () => {
    world = await flowWorld();
    signer = await signingCertificate(world.keys, FLOW_ISSUER);
    lifetime = world.config.saml.requestLifetime;
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com', emailVerified: true });
    grace = await world.addUser({ username: 'grace', email: 'grace@example.com', emailVerified: true });
  });
  after(() => world.close());

  /** A registered SP: with a SingleLogoutService by `binding` (null: none), persistent NameIDs unless `input` says otherwise. */
  const registered = (binding: 'redirect' | 'post' | null, input: SamlSpInput = {}): Promise<SamlServiceProviderRecord> => {
    made += 1;
    const host = `https://sp${made}.example.com`;
    return addSamlSp(world.manage, {
      entity_id: `${host}/saml`,
      acs_urls: [`${host}/saml/acs`],
      ...(binding === null ? {} : { slo_url: `${host}/saml/slo`, slo_binding: binding }),
      ...input,
    });
  };

  const newSid = () => {
    sids += 1;
    return `sid-${sids}`;
  };

  /** `sp` was sent an assertion about `user` in session `sid` (as the SSO route records it): what a LogoutRequest to it names. */
  async function joined(sid: string, sp: SamlServiceProviderRecord, user: UserRecord = ada) {
    const record = {
      sid,
      spId: sp.id,
      nameId: nameIdOf(sp, user, sp.nameIdFormat)!,
      nameIdFormat: NAME_ID_FORMAT_URIS[sp.nameIdFormat],
      sessionIndex: sid,
      expiresAt: world.clock.now() + 8 * HOUR,
    };
    await world.store.samlSessionSps.join(record);
    return record;
  }

  const deps = () => ({ store: world.store, idp: IDP, now: world.clock.now(), signer, lifetime });

  /** node-saml speaking for `sp`, trusting the IdP's certificate (or `idpCert`) only. */
  const serviceProvider = (sp: SamlServiceProviderRecord, idpCert = signer.certificate) =>
    new SAML({
      issuer: sp.entityId,
      callbackUrl: sp.acsUrls[0]!,
      idpCert,
      idpIssuer: IDP,
      audience: sp.entityId,
      acceptedClockSkewMs: 0,
      validateInResponseTo: ValidateInResponseTo.never,
    });

  /** What `sp` (node-saml, its clock at `now`) makes of `message` sent to its SingleLogoutService: the signature checked as its binding carries it. */
  async function spTakes(sp: SamlServiceProviderRecord, message: OutgoingMessage, options: { now?: number; idpCert?: string } = {}) {
    const saml = serviceProvider(sp, options.idpCert);
    mock.timers.enable({ apis: ['Date'], now: options.now ?? world.clock.now() });
    try {
      if (message.binding === 'post') return await saml.validatePostRequestAsync({ ...message.params });
      const url = new URL(message.url);
      // node-saml takes a redirect without Signature as it is: that one is there is checked here.
      assert.ok(url.searchParams.has('Signature'), 'signed over the query');
      return await saml.validateRedirectAsync(Object.fromEntries(url.searchParams), url.search.slice(1));
    } finally {
      mock.timers.reset();
    }
  }

  /**
   * Whether the message `xml` (HTTP-POST) is signed in its XML by the IdP's key (or
   * `certificate`'s), xml-crypto as the SAML code uses it: one reference, to the message's own ID.
   */
  function signedInXml(xml: string, certificate = signer.certificate): boolean {
    const root = parseXml(xml, 100_000).documentElement!;
    const signature = onlyChild(root, SAML_NS.dsig, 'Signature');
    if (signature === null) return false;
    const checker = new (xmlCrypto().SignedXml)({ publicCert: certificate, getCertFromKeyInfo: () => null });
    checker.loadSignature(signature as never);
    assert.deepEqual(
      checker.getReferences().map((reference) => reference.uri),
      [`#${attribute(root, 'ID')}`],
    );
    try {
      return checker.checkSignature(xml);
    } catch {
      return false;
    }
  }

  /** Goes through the logout from `first`, each SP answering as `answers` says (Success by default); the SPs told, in order, and the step it ends on. */
  async function through(first: LogoutStep, answers: (sp: SamlServiceProviderRecord) => boolean = () => true, check = true) {
    const told: { sp: SamlServiceProviderRecord; nameID: string; sessionIndex: string | undefined; nameIDFormat: string | undefined }[] = [];
    let step = first;
    while (step.kind === 'send') {
      assert.ok(told.length < 10, 'the logout went round in circles');
      const { root } = opened(step.message);
      assert.deepEqual(
        [root.localName, attribute(root, 'Destination'), textOf(onlyChild(root, SAML_NS.assertion, 'Issuer')!)],
        ['LogoutRequest', step.sp.sloUrl, IDP],
      );
      if (check) {
        const { profile, loggedOut } = await spTakes(step.sp, step.message);
        assert.ok(loggedOut && profile);
        told.push({ sp: step.sp, nameID: profile.nameID, sessionIndex: profile.sessionIndex, nameIDFormat: profile.nameIDFormat });
      } else told.push({ sp: step.sp, nameID: '', sessionIndex: undefined, nameIDFormat: undefined });
      const next = await continueSingleLogout(deps(), { sp: step.sp, inResponseTo: attribute(root, 'ID')!, success: answers(step.sp) });
      assert.ok(next, `the answer of ${step.sp.entityId} goes on`);
      step = next;
    }
    return { told, end: step };
  }
  const entityIds = (told: readonly { sp: SamlServiceProviderRecord }[]) => told.map((each) => each.sp.entityId).sort();

  it("tells each SP of the ended session that takes part in single logout, one after the other and each once, naming the person and the session as that SP was told; then on to the logout's end", async () => {
    const [a, b, noSlo, transient] = [
      await registered('redirect'),
      await registered('post'),
      await registered(null),
      await registered('redirect', { name_id_format: 'transient' }),
    ];
    const sid = newSid();
    const told = [await joined(sid, a), await joined(sid, b), await joined(sid, noSlo)];
    const other = newSid();
    const graceAtA = await joined(other, a, grace);
    // A transient NameID cannot be made again: the one the SP was given is what it is told.
    const kept = { ...(await joined(sid, transient)), nameId: '_a-transient-id-given-once' };
    await world.store.samlSessionSps.join(kept);

    const end: LogoutEnd = { kind: 'redirect', url: 'https://app.example.com/signed-out' };
    const result = await through(await beginSingleLogout(deps(), [sid], end));
    // SAML Profiles §4.4.3.3: "send a <LogoutRequest> message to each session participant" (each with a SingleLogoutService).
    assert.deepEqual(entityIds(result.told), [a.entityId, b.entityId, transient.entityId].sort());
    for (const record of [told[0]!, told[1]!, kept]) {
      const asked = result.told.find((each) => each.sp.id === record.spId);
      assert.deepEqual(
        asked && [asked.nameID, asked.sessionIndex, asked.nameIDFormat],
        [record.nameId, record.sessionIndex, record.nameIdFormat],
        asked?.sp.entityId,
      );
    }
    assert.deepEqual(result.end, { kind: 'done', end, partial: false });

    // Another session's SPs are not this logout's: told when that one ends, of that person.
    const theirs = await through(await beginSingleLogout(deps(), [other], PAGE));
    assert.deepEqual(
      theirs.told.map((each) => [each.sp.entityId, each.nameID, each.sessionIndex]),
      [[a.entityId, graceAtA.nameId, other]],
    );
  });

  it('takes each SP once: the same session named twice, or ended again, tells nobody again; a logout of several sessions tells each of their SPs', async () => {
    const a = await registered('redirect');
    const [first, second] = [newSid(), newSid()];
    await joined(first, a);
    await joined(second, a);
    const both = await through(await beginSingleLogout(deps(), [first, first, second], PAGE));
    assert.deepEqual(
      both.told.map((each) => each.sessionIndex).sort(),
      [first, second].sort(),
      "'Sign out everywhere': one SP, two sessions, a LogoutRequest for each",
    );
    assert.deepEqual(await beginSingleLogout(deps(), [first, second], PAGE), { kind: 'done', end: PAGE, partial: false });
  });

  it("leaves out the SP whose own LogoutRequest ended the session (§4.4.3.3 'other than the requester'), SPs removed since (before or during the logout) and SPs without a SingleLogoutService", async () => {
    const [asking, removed, noSlo, other] = [await registered('redirect'), await registered('redirect'), await registered(null), await registered('post')];
    const sid = newSid();
    for (const sp of [asking, removed, noSlo, other]) await joined(sid, sp);
    await removeSamlSp(world.manage, removed.entityId);
    const end: LogoutEnd = { kind: 'saml', sp: asking.id, inResponseTo: '_their-request', relayState: 'back' };
    const result = await through(await beginSingleLogout(deps(), [sid], end, asking.id));
    assert.deepEqual(entityIds(result.told), [other.entityId]);
    assert.deepEqual(result.end, { kind: 'done', end, partial: false });

    // None left to tell: done at once, where it was to end.
    const alone = newSid();
    await joined(alone, asking);
    await joined(alone, noSlo);
    assert.deepEqual(await beginSingleLogout(deps(), [alone], end, asking.id), { kind: 'done', end, partial: false });
    assert.deepEqual(await beginSingleLogout(deps(), [], PAGE), { kind: 'done', end: PAGE, partial: false });

    // An SP removed while the logout is under way, after it was taken: passed over when its turn comes.
    const [first, second] = [await registered('redirect'), await registered('redirect')];
    const underWay = newSid();
    await joined(underWay, first);
    await joined(underWay, second);
    const step = await beginSingleLogout(deps(), [underWay], PAGE);
    assert.equal(step.kind, 'send');
    const sent = step as Extract<LogoutStep, { kind: 'send' }>;
    await removeSamlSp(world.manage, (sent.sp.id === first.id ? second : first).entityId);
    const id = attribute(opened(sent.message).root, 'ID')!;
    assert.deepEqual(await continueSingleLogout(deps(), { sp: sent.sp, inResponseTo: id, success: true }), { kind: 'done', end: PAGE, partial: false });
  });

  it('goes on only on the answer to its own LogoutRequest, from the SP it was sent to, once, before the lifetime is over', async () => {
    const [a, b] = [await registered('redirect'), await registered('redirect')];
    const start = async () => {
      const sid = newSid();
      await joined(sid, a);
      await joined(sid, b);
      const step = await beginSingleLogout(deps(), [sid], PAGE);
      assert.equal(step.kind, 'send');
      const sent = step as Extract<LogoutStep, { kind: 'send' }>;
      return { sp: sent.sp, id: attribute(opened(sent.message).root, 'ID')!, other: sent.sp.id === a.id ? b : a };
    };
    const first = await start();
    assert.equal(await continueSingleLogout(deps(), { sp: first.other, inResponseTo: first.id, success: true }), null, "another SP's answer");
    assert.equal(await continueSingleLogout(deps(), { sp: first.sp, inResponseTo: '_another-request', success: true }), null, 'an answer to another request');
    world.clock.advance(lifetime * 1000 - 1);
    const next = await continueSingleLogout(deps(), { sp: first.sp, inResponseTo: first.id, success: true });
    assert.equal(next?.kind === 'send' && next.sp.id, first.other.id, 'its own answer, in time: on to the other SP');
    assert.equal(await continueSingleLogout(deps(), { sp: first.sp, inResponseTo: first.id, success: true }), null, 'the same answer again');

    const late = await start();
    world.clock.advance(lifetime * 1000);
    assert.equal(await continueSingleLogout(deps(), { sp: late.sp, inResponseTo: late.id, success: true }), null, 'an answer once the lifetime is over');
  });

  it('ends PartialLogout when one SP did not answer Success (SAML Core §3.7.3.2), however the others answered', async () => {
    const [a, b, c] = [await registered('redirect'), await registered('post'), await registered('redirect')];
    for (const failing of [a, b, c]) {
      const sid = newSid();
      for (const sp of [a, b, c]) await joined(sid, sp);
      const result = await through(await beginSingleLogout(deps(), [sid], PAGE), (sp) => sp.id !== failing.id, false);
      assert.equal(result.told.length, 3);
      assert.deepEqual(result.end, { kind: 'done', end: PAGE, partial: true }, failing.entityId);
    }
  });

  it("continues on an SP's LogoutResponse as it came, whose InResponseTo names the request; one from an SP not registered, one naming no request and one without a status are refused", async () => {
    const a = await registered('redirect');
    const noSlo = await registered(null);
    const sid = newSid();
    await joined(sid, a);
    const step = await beginSingleLogout(deps(), [sid], PAGE);
    assert.equal(step.kind, 'send');
    const id = attribute(opened((step as Extract<LogoutStep, { kind: 'send' }>).message).root, 'ID')!;
    let messages = 0;
    const incoming = (kind: 'LogoutResponse' | 'LogoutRequest', issuer: string, changed = (xml: string) => xml): IncomingRequest => {
      messages += 1;
      const inner =
        kind === 'LogoutResponse' ? `<samlp:Status><samlp:StatusCode Value="${STATUS.success}"/></samlp:Status>` : '<saml:NameID>someone</saml:NameID>';
      const xml = `<samlp:${kind} xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="_sp${messages}" Version="2.0" IssueInstant="${iso(world.clock.now())}" Destination="${IDP_SLO}"${kind === 'LogoutResponse' ? ` InResponseTo="${id}"` : ''}><saml:Issuer>${issuer}</saml:Issuer>${inner}</samlp:${kind}>`;
      const encoded = deflateRawSync(Buffer.from(changed(xml))).toString('base64');
      const parameter = kind === 'LogoutResponse' ? 'SAMLResponse' : 'SAMLRequest';
      return {
        binding: 'redirect',
        samlRequest: encoded,
        relayState: null,
        sigAlg: null,
        signature: null,
        rawQuery: `${parameter}=${encodeURIComponent(encoded)}`,
      };
    };
    const read = { store: world.store, now: world.clock.now(), limits: { maxRequestChars: 20_000, requestLifetime: lifetime }, sloUrl: IDP_SLO };
    const reason = async (run: Promise<unknown>) => {
      try {
        await run;
        return 'ok';
      } catch (error) {
        assert.ok(error instanceof SamlRefusal, String(error));
        return error.reason;
      }
    };
    assert.equal(await reason(readLogoutResponse(read, incoming('LogoutResponse', 'https://stranger.example.com/saml'))), 'unknown_sp');
    assert.equal(await reason(readLogoutRequest(read, incoming('LogoutRequest', 'https://stranger.example.com/saml'))), 'unknown_sp');
    assert.equal(await reason(readLogoutRequest(read, incoming('LogoutRequest', noSlo.entityId))), 'unsupported', 'no SingleLogoutService to answer at');
    const withoutInResponseTo = (xml: string) => xml.replace(/ InResponseTo="[^"]*"/, '');
    assert.equal(await reason(readLogoutResponse(read, incoming('LogoutResponse', a.entityId, withoutInResponseTo))), 'malformed', 'no request answered');
    const withoutStatus = (xml: string) => xml.replace(/<samlp:Status>.*<\/samlp:Status>/, '');
    assert.equal(await reason(readLogoutResponse(read, incoming('LogoutResponse', a.entityId, withoutStatus))), 'malformed', 'no status');

    const answer = await readLogoutResponse(read, incoming('LogoutResponse', a.entityId));
    assert.deepEqual([answer.sp.id, answer.inResponseTo, answer.success], [a.id, id, true]);
    assert.deepEqual(await continueSingleLogout(deps(), answer), { kind: 'done', end: PAGE, partial: false });
  });

  it("signs the LogoutRequest as the SP's binding sends it (SAML Profiles §4.4.4.1): over the query by HTTP-Redirect, in the XML by HTTP-POST; a tampered one fails", async () => {
    const [byRedirect, byPost] = [await registered('redirect'), await registered('post')];
    const withQuery = await registered('redirect', { slo_url: 'https://tenant.example.com/saml/slo?tenant=7' });
    const request = (sp: SamlServiceProviderRecord) =>
      logoutRequest(
        {
          idp: IDP,
          id: `_logout${made}`,
          sp,
          nameId: nameIdOf(sp, ada, 'persistent')!,
          nameIdFormat: NAME_ID_FORMAT_URIS.persistent,
          sessionIndex: 'sid-x',
          now: world.clock.now(),
          lifetime,
        },
        signer,
      );

    const redirected = request(byRedirect);
    assert.equal(redirected.binding, 'redirect');
    const url = new URL(redirected.binding === 'redirect' ? redirected.url : '');
    // SAML Bindings §3.4.4.1: SAMLRequest, then SigAlg, then Signature; no RelayState, none was given.
    assert.deepEqual([`${url.origin}${url.pathname}`, [...url.searchParams.keys()]], [byRedirect.sloUrl, ['SAMLRequest', 'SigAlg', 'Signature']]);
    assert.equal(url.searchParams.get('SigAlg'), SIGNATURE_ALGORITHMS.rsaSha256);
    const { root, xml } = opened(redirected);
    assert.equal(has(root, SAML_NS.dsig, 'Signature'), false, 'over HTTP-Redirect, the signature is in the query, not the XML');
    assert.deepEqual(
      [
        attribute(root, 'Reason'),
        textOf(onlyChild(root, SAML_NS.protocol, 'SessionIndex')!),
        attribute(onlyChild(root, SAML_NS.assertion, 'NameID')!, 'SPNameQualifier'),
      ],
      ['urn:oasis:names:tc:SAML:2.0:logout:user', 'sid-x', byRedirect.entityId],
    );
    assert.equal((await spTakes(byRedirect, redirected)).profile?.nameID, nameIdOf(byRedirect, ada, 'persistent'));
    await assert.rejects(spTakes(byRedirect, redirected, { idpCert: STRANGER_CERT }), /Invalid query signature/, 'checked against another certificate');
    const other = new URL(url);
    other.searchParams.set('SAMLRequest', deflateRawSync(Buffer.from(xml.replace('sid-x', 'sid-y'))).toString('base64'));
    await assert.rejects(spTakes(byRedirect, { binding: 'redirect', url: other.toString() }), /Invalid query signature/, 'another session named');

    const kept = request(withQuery);
    assert.ok(kept.binding === 'redirect' && kept.url.startsWith('https://tenant.example.com/saml/slo?tenant=7&SAMLRequest='), 'its own query kept');
    assert.ok((await spTakes(withQuery, kept)).loggedOut);

    const posted = request(byPost);
    assert.equal(posted.binding, 'post');
    assert.deepEqual(posted.binding === 'post' && [posted.url, Object.keys(posted.params)], [byPost.sloUrl, ['SAMLRequest']]);
    const form = opened(posted);
    // SAML Core §5.4: enveloped, after the Issuer.
    assert.equal((onlyChild(form.root, SAML_NS.assertion, 'Issuer')!.nextSibling as XmlElement).localName, 'Signature');
    assert.equal((await spTakes(byPost, posted)).profile?.nameID, nameIdOf(byPost, ada, 'persistent'));
    await assert.rejects(spTakes(byPost, posted, { idpCert: STRANGER_CERT }), /Invalid signature/);
    const someoneElse = form.xml.replace(`>${nameIdOf(byPost, ada, 'persistent')}<`, `>${nameIdOf(byPost, grace, 'persistent')}<`);
    assert.notEqual(someoneElse, form.xml);
    await assert.rejects(
      spTakes(byPost, { ...posted, params: { SAMLRequest: Buffer.from(someoneElse).toString('base64') } }),
      /Invalid signature/,
      'another person named',
    );
  });

  it("dates the LogoutRequest by the world's clock: NotOnOrAfter the lifetime later, after which the SP refuses it", async () => {
    const sp = await registered('redirect');
    const send = async () => {
      const sid = newSid();
      await joined(sid, sp);
      const step = await beginSingleLogout(deps(), [sid], PAGE);
      assert.equal(step.kind, 'send');
      return (step as Extract<LogoutStep, { kind: 'send' }>).message;
    };
    const now = world.clock.now();
    const first = await send();
    assert.deepEqual([attribute(opened(first).root, 'IssueInstant'), attribute(opened(first).root, 'NotOnOrAfter')], [iso(now), iso(now + lifetime * 1000)]);
    world.clock.advance(HOUR);
    const later = await send();
    assert.deepEqual(
      [attribute(opened(later).root, 'IssueInstant'), attribute(opened(later).root, 'NotOnOrAfter')],
      [iso(now + HOUR), iso(now + HOUR + lifetime * 1000)],
    );
    assert.ok((await spTakes(sp, later, { now: now + HOUR + lifetime * 1000 - 1_000 })).loggedOut);
    await assert.rejects(spTakes(sp, later, { now: now + HOUR + lifetime * 1000 }), /expired/i);
    await assert.rejects(spTakes(sp, first), /expired/i, 'the first, an hour on');
  });

  it("answers an SP's LogoutRequest with a signed LogoutResponse: Success, PartialLogout under Success, UnknownPrincipal under Requester; its RelayState signed with it", async () => {
    const [byRedirect, byPost] = [await registered('redirect'), await registered('post')];
    const answer = (sp: SamlServiceProviderRecord, status: string, relayState: string | null = 'back-to-the-page') =>
      logoutResponse(
        { idp: IDP, sloUrl: sp.sloUrl!, binding: sp.sloBinding, inResponseTo: '_their-request', now: world.clock.now(), status, relayState },
        signer,
      );
    const cases: [string, string, string | null][] = [
      [STATUS.success, STATUS.success, null],
      [STATUS.partialLogout, STATUS.success, STATUS.partialLogout],
      [STATUS.unknownPrincipal, STATUS.requester, STATUS.unknownPrincipal],
    ];
    for (const [status, top, second] of cases) {
      for (const sp of [byRedirect, byPost]) {
        const message = answer(sp, status);
        const { root, xml } = opened(message);
        const code = onlyChild(onlyChild(root, SAML_NS.protocol, 'Status')!, SAML_NS.protocol, 'StatusCode')!;
        assert.deepEqual(
          [
            root.localName,
            attribute(root, 'InResponseTo'),
            attribute(root, 'Destination'),
            attribute(code, 'Value'),
            children(code, SAML_NS.protocol, 'StatusCode').map((inner) => attribute(inner, 'Value')),
          ],
          ['LogoutResponse', '_their-request', sp.sloUrl, top, second === null ? [] : [second]],
          `${status} by ${sp.sloBinding}`,
        );
        if (message.binding === 'post') {
          assert.equal(message.params['RelayState'], 'back-to-the-page');
          assert.ok(signedInXml(xml), `${status}: signed in the XML`);
          if (status === STATUS.partialLogout) {
            assert.equal(signedInXml(xml.replace(STATUS.partialLogout, STATUS.success)), false, 'the status is signed');
            assert.equal(signedInXml(xml, STRANGER_CERT), false, "by the IdP's key");
          }
          continue;
        }
        if (top === STATUS.success) assert.ok((await spTakes(sp, message)).loggedOut, status);
        else await assert.rejects(spTakes(sp, message), /Bad status code/, status);
      }
    }
    // Over HTTP-Redirect the RelayState is in what the signature covers (Bindings §3.4.4.1).
    const message = answer(byRedirect, STATUS.success);
    const url = new URL(message.binding === 'redirect' ? message.url : '');
    assert.deepEqual([...url.searchParams.keys()], ['SAMLResponse', 'RelayState', 'SigAlg', 'Signature']);
    url.searchParams.set('RelayState', 'https://attacker.example/');
    await assert.rejects(spTakes(byRedirect, { binding: 'redirect', url: url.toString() }), /Invalid query signature/);
    const none = answer(byRedirect, STATUS.success, null);
    assert.equal(none.binding === 'redirect' && new URL(none.url).searchParams.has('RelayState'), false);
  });

  describe("an SP's LogoutRequest and the browser's session (logout.ts)", () => {
    const session = (sid: string): SessionRecord => ({
      idHash: `hash-${sid}`,
      sid,
      userId: ada.id,
      authTime: 0,
      createdAt: 0,
      expiresAt: HOUR,
      ip: null,
      userAgent: null,
    });

    it("ends the session only when the request names its person (and, with a SessionIndex, this session); someone else's is refused", async () => {
      const [persistent, email, transient] = [
        await registered('redirect'),
        await registered('redirect', { name_id_format: 'email' }),
        await registered('redirect', { name_id_format: 'transient' }),
      ];
      const mine = { user: ada, session: session('sid-here') };
      const request = (sp: SamlServiceProviderRecord, nameId: string, sessionIndexes: string[] = []): LogoutRequest => ({
        sp,
        id: '_r',
        nameId,
        sessionIndexes,
      });
      const adaAt = nameIdOf(persistent, ada, 'persistent')!;
      const cases: [string, LogoutRequest, typeof mine | null, ReturnType<typeof logoutDecision>][] = [
        ['no session in the browser', request(persistent, adaAt), null, 'nothing'],
        ['their NameID, no SessionIndex: every session of theirs', request(persistent, adaAt), mine, 'end'],
        ['their NameID, this session', request(persistent, adaAt, ['sid-other', 'sid-here']), mine, 'end'],
        ['their NameID, another session of theirs (§3.7.1: only those named)', request(persistent, adaAt, ['sid-other']), mine, 'nothing'],
        ["another person's NameID", request(persistent, nameIdOf(persistent, grace, 'persistent')!), mine, 'other-person'],
        ['their NameID at another SP', request(email, adaAt), mine, 'other-person'],
        ['their e-mail address', request(email, 'ada@example.com'), mine, 'end'],
        ["another's e-mail address", request(email, 'grace@example.com', ['sid-here']), mine, 'other-person'],
        ['a transient NameID, this session', request(transient, '_anything', ['sid-here']), mine, 'end'],
        ['a transient NameID, no SessionIndex', request(transient, '_anything'), mine, 'nothing'],
        ['a transient NameID, another session', request(transient, '_anything', ['sid-other']), mine, 'nothing'],
      ];
      for (const [what, asked, signedIn, expected] of cases) assert.equal(logoutDecision(asked, signedIn), expected, what);
    });

    it('opens the sealed logout only as it was sealed, with the same secret, within its lifetime either way', () => {
      const secret = randomBytes(32);
      const at = world.clock.now();
      const pending: PendingLogout = { sp: 'sp-1', id: '_r', nameId: 'n', sessionIndexes: ['sid-1'], relayState: 'r', at };
      const sealed = sealLogout(secret, pending);
      const [payload, tag] = sealed.split('.') as [string, string];
      const changed = Buffer.from(JSON.stringify({ ...pending, nameId: 'someone-else' })).toString('base64url');
      const cases: [string, string, number, PendingLogout | null][] = [
        ['as sealed', sealed, at, pending],
        ['at the end of its lifetime', sealed, at + lifetime * 1000, pending],
        ['a millisecond after', sealed, at + lifetime * 1000 + 1, null],
        ['made further ahead of the clock than its lifetime', sealed, at - lifetime * 1000 - 1, null],
        ['another person, the old tag', `${changed}.${tag}`, at, null],
        ['a tag cut short', `${payload}.${tag.slice(1)}`, at, null],
        ['a third part', `${sealed}.more`, at, null],
        ['no tag', payload, at, null],
        ['sealed with another secret', sealLogout(randomBytes(32), pending), at, null],
      ];
      for (const [what, value, now, expected] of cases) assert.deepEqual(openLogout(secret, value, now, lifetime), expected, what);
    });
  });
});

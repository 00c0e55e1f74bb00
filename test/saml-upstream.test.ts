/**
 * A SAML sign-in (docs/saml.md) made through an upstream OpenID provider (docs/upstream.md),
 * here a second Tessera: SP-initiated and IdP-initiated, the person choosing the provider on
 * the sign-in page, signing in there, and coming back to the SAML sign-in, whose assertion
 * @node-saml/node-saml validates and which names the account the upstream sign-in made.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import { addSamlSp } from '../src/flows/manage/saml-service-providers.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { addUpstreamTessera } from './helpers/fixtures.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

const ACS = 'https://sp.example.com/saml/acs';
const ENTITY_ID = 'https://sp.example.com/saml';
const decode = (value: string) => value.replace(/&amp;/g, '&');

describe('SAML sign-in through an upstream OpenID provider', () => {
  let upstream: TestServer;
  let downstream: TestServer;
  let saml: SAML;

  before(async () => {
    upstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Upstream ID' } });
    downstream = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme' } });
    await upstream.addUser({
      username: 'ada',
      password: 'ada password 1',
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      profile: { emailVerified: true },
    });
    await addUpstreamTessera(downstream, upstream, { id: 'upstream', name: 'Upstream ID' });
    await addSamlSp(manageDeps(downstream), { entity_id: ENTITY_ID, acs_urls: [ACS], attributes: { mail: 'email', displayName: 'name' }, idp_initiated: true });
    const metadata = await (await fetch(`${downstream.url}/saml/metadata`)).text();
    saml = new SAML({
      issuer: ENTITY_ID,
      callbackUrl: ACS,
      entryPoint: `${downstream.url}/saml/sso`,
      idpCert: /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!,
      idpIssuer: `${downstream.url}/saml/metadata`,
      audience: ENTITY_ID,
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      disableRequestedAuthnContext: true,
      validateInResponseTo: ValidateInResponseTo.never,
    });
  });
  after(() => closeAll(downstream, upstream));

  /**
   * From Acme's sign-in page: the upstream's button, its sign-in, the way back, and on to the
   * SAML sign-in waiting at Acme; returns the form Acme's page posts to the ACS URL.
   */
  async function throughUpstream(acme: FormBrowser, signInPage: Page): Promise<Record<string, string>> {
    assert.equal(signInPage.status, 200, signInPage.html.slice(0, 300));
    const button = /<a class="button" href="(\/login\/upstream\/upstream\?[^"]+)">Continue with Upstream ID<\/a>/.exec(signInPage.html);
    assert.ok(button, 'the sign-in page offers the upstream provider');
    const started = await acme.request(decode(button[1]!));
    assert.equal(started.status, 303);
    assert.ok(started.location!.startsWith(`${upstream.url}/oauth/authorize?`), started.location!);

    const there = new FormBrowser(upstream.url);
    const back = await there.signIn(await there.follow(await there.request(started.location!)), { username: 'ada', password: 'ada password 1' });
    assert.ok(back.location?.startsWith(`${downstream.url}/login/upstream/upstream/callback?`), `back to Acme: ${back.status} ${back.location}`);

    let page = await acme.follow(await acme.request(back.location!));
    const onward = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(page.html);
    if (onward) page = await acme.follow(await acme.request(decode(onward[1]!)));
    assert.equal(page.status, 200, page.html.slice(0, 400));
    return acme.form(page, ACS).fields;
  }

  it('SP-initiated: the sign-in page goes to the provider and back to the SAML sign-in, whose assertion names the account it made', async () => {
    const acme = new FormBrowser(downstream.url);
    const signInPage = await acme.follow(await acme.request(await saml.getAuthorizeUrlAsync('after-upstream', undefined, {})));
    const fields = await throughUpstream(acme, signInPage);
    assert.equal(fields['RelayState'], 'after-upstream');
    const { profile } = await saml.validatePostResponseAsync(fields);
    assert.equal(profile?.['mail'], 'ada@example.com');
    assert.equal(profile?.['displayName'], 'Ada Lovelace');
    const [issued] = await downstream.store.events.list({ type: 'saml.assertion_issued', limit: 1 });
    const account = await downstream.store.users.get(issued!.userId!);
    assert.equal(account?.email, 'ada@example.com', 'the account the upstream sign-in made');
    assert.equal((await downstream.store.linkedIdentities.listForUser(account!.id)).length, 1, 'linked to the provider');
  });

  it('IdP-initiated: the start link, the provider, and an unsolicited assertion to the ACS URL', async () => {
    const acme = new FormBrowser(downstream.url);
    const signInPage = await acme.follow(await acme.request(`/saml/initiate?sp=${encodeURIComponent(ENTITY_ID)}&RelayState=home`));
    const fields = await throughUpstream(acme, signInPage);
    assert.equal(fields['RelayState'], 'home');
    const { profile } = await saml.validatePostResponseAsync(fields);
    assert.equal(profile?.['mail'], 'ada@example.com');
    assert.equal(profile?.inResponseTo, undefined, 'answering no request');
  });
});

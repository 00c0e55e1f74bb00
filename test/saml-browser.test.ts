/**
 * SAML sign-in in Chromium (docs/saml.md): an SP-initiated sign-in with a password, the
 * Response posted by the page's own form to the SP's ACS URL (its Content-Security-Policy lets
 * it go there and nowhere else) and validated by @node-saml/node-saml; a refused request's
 * page; single logout from Tessera to two SPs, one by each binding, each checking its
 * LogoutRequest's signature with node-saml; a refused logout's page; and the console's SAML
 * pages. axe-core checks each page (helpers/accessibility.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import type { Browser } from 'playwright-core';
import { addSamlSp } from '../src/flows/manage/saml-service-providers.ts';
import { axeViolations } from './helpers/accessibility.ts';
import { chromiumUnavailable, launchChromium, reach, signInWithPassword } from './helpers/chromium.ts';
import { operatorBrowser } from './helpers/console.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeServer, listenOnFreePort, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

describe('SAML sign-in in Chromium', { skip: chromiumUnavailable() }, () => {
  let server: TestServer;
  let user: TestUser;
  let browser: Browser;
  let acs: { server: import('node:http').Server; url: string; posted: Promise<Record<string, string>> };

  /** The SP's ACS: takes one POST and keeps its form. */
  async function acsServer() {
    let deliver: (form: Record<string, string>) => void = () => {};
    const posted = new Promise<Record<string, string>>((resolve) => (deliver = resolve));
    const http = createServer((request: IncomingMessage, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        deliver(Object.fromEntries(new URLSearchParams(body)));
        response
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end('<!doctype html><html lang="en"><title>Wiki</title><main><h1>Signed in to the wiki</h1></main></html>');
      });
    });
    const { port } = await listenOnFreePort(http);
    return { server: http, url: `http://127.0.0.1:${port}/acs`, posted };
  }

  before(async () => {
    server = await startTestServer();
    user = await server.addUser({ username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', profile: { emailVerified: true } });
    acs = await acsServer();
    browser = await launchChromium();
  });
  after(async () => {
    try {
      await browser?.close();
    } finally {
      await closeServer(acs.server);
      await server?.close();
    }
  });

  it('signs in with a password on the sign-in page, and the page posts the signed Response to the ACS URL', async () => {
    await addSamlSp(manageDeps(server), { entity_id: 'https://wiki.example/saml', name: 'The Wiki', acs_urls: [acs.url], attributes: { mail: 'email' } });
    const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
    const saml = new SAML({
      issuer: 'https://wiki.example/saml',
      callbackUrl: acs.url,
      entryPoint: `${server.url}/saml/sso`,
      idpCert: /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!,
      audience: 'https://wiki.example/saml',
      identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
      wantAssertionsSigned: true,
      wantAuthnResponseSigned: false,
      validateInResponseTo: ValidateInResponseTo.always,
      disableRequestedAuthnContext: true,
    });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(await saml.getAuthorizeUrlAsync('wiki-home', undefined, {}));
    await signInWithPassword(page, user);
    const form = await acs.posted;
    await page.getByRole('heading', { name: 'Signed in to the wiki' }).waitFor();
    assert.equal(form['RelayState'], 'wiki-home');
    const { profile } = await saml.validatePostResponseAsync(form);
    assert.equal(profile?.['mail'], 'ada@example.com');
    await context.close();
  });

  it("shows a refused request's page", async () => {
    const context = await browser.newContext({ locale: 'fr-FR' });
    const page = await context.newPage();
    const response = await page.goto(`${server.url}/saml/sso?SAMLRequest=bm90IGEgcmVxdWVzdA`);
    assert.equal(response?.status(), 400);
    await page.getByRole('heading', { name: 'Demande de connexion refusée' }).waitFor();
    await context.close();
  });

  it('signs out at Tessera through two SPs, by HTTP-Redirect and by HTTP-POST, each validating its signed LogoutRequest with node-saml', async () => {
    const metadata = await (await fetch(`${server.url}/saml/metadata`)).text();
    const idpCert = /<ds:X509Certificate>([^<]+)</.exec(metadata)![1]!;
    const asked: { sp: string; nameID: string; sessionIndex: string | undefined }[] = [];
    const sps = new Map<string, SAML>();
    /** Two SPs on one loopback server: /NAME/acs signs in, /NAME/slo takes Tessera's LogoutRequest and answers it. */
    const http = createServer((request: IncomingMessage, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', async () => {
        const url = new URL(request.url!, 'http://127.0.0.1');
        const [, name = '', step] = url.pathname.split('/');
        const saml = sps.get(name)!;
        try {
          if (step === 'acs') {
            await saml.validatePostResponseAsync(Object.fromEntries(new URLSearchParams(body)));
            response
              .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
              .end(`<!doctype html><html lang="en"><title>${name}</title><main><h1>Signed in to ${name}</h1></main></html>`);
            return;
          }
          const validated =
            request.method === 'POST'
              ? await saml.validatePostRequestAsync(Object.fromEntries(new URLSearchParams(body)))
              : await saml.validateRedirectAsync(Object.fromEntries(url.searchParams), url.search.slice(1));
          if (request.method !== 'POST') assert.ok(url.searchParams.has('Signature'), 'the LogoutRequest is signed');
          asked.push({ sp: name, nameID: validated.profile!.nameID, sessionIndex: validated.profile!.sessionIndex });
          response.writeHead(303, { location: await saml.getLogoutResponseUrlAsync(validated.profile!, '', {}, true) }).end();
        } catch (error) {
          response.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        }
      });
    });
    const { port } = await listenOnFreePort(http);
    const base = `http://127.0.0.1:${port}`;
    try {
      for (const [name, binding] of [
        ['notes', 'redirect'],
        ['crm', 'post'],
      ] as const) {
        const entityId = `https://${name}.single-logout.example/saml`;
        await addSamlSp(manageDeps(server), {
          entity_id: entityId,
          name,
          acs_urls: [`${base}/${name}/acs`],
          slo_url: `${base}/${name}/slo`,
          slo_binding: binding,
        });
        sps.set(
          name,
          new SAML({
            issuer: entityId,
            callbackUrl: `${base}/${name}/acs`,
            entryPoint: `${server.url}/saml/sso`,
            logoutUrl: `${server.url}/saml/slo`,
            logoutCallbackUrl: `${base}/${name}/slo`,
            idpCert,
            idpIssuer: `${server.url}/saml/metadata`,
            audience: entityId,
            identifierFormat: 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
            wantAssertionsSigned: true,
            wantAuthnResponseSigned: false,
            validateInResponseTo: ValidateInResponseTo.never,
            disableRequestedAuthnContext: true,
          }),
        );
      }
      const context = await browser.newContext({ locale: 'en-GB' });
      const page = await context.newPage();
      await page.goto(await sps.get('notes')!.getAuthorizeUrlAsync('', undefined, {}));
      await signInWithPassword(page, user);
      await reach(page, page.getByRole('heading', { name: 'Signed in to notes' }), 'the notes SP');
      await page.goto(await sps.get('crm')!.getAuthorizeUrlAsync('', undefined, {}));
      await reach(page, page.getByRole('heading', { name: 'Signed in to crm' }), 'the crm SP, without signing in again');

      // The OpenID Connect end-session endpoint asks first (no app's ID token vouches for the request), then goes through both SPs.
      await page.goto(`${server.url}/oauth/logout`);
      // The first step's page, held still (its refresh taken out) to be checked, then left by its link, as without refresh.
      await page.route(`${server.url}/oauth/logout/confirm`, async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        await route.fulfill({ response, body: (await response.text()).replace(/<meta http-equiv="refresh"[^>]*>/, '') });
      });
      await page.getByRole('button', { name: 'Sign out' }).click();
      await reach(page, page.getByRole('heading', { name: 'Signing you out' }), 'the page of the first step');
      assert.deepEqual(await axeViolations(page), []);
      await page.getByRole('link', { name: 'Continue' }).click();
      await reach(page, page.getByRole('heading', { name: 'You are signed out' }), 'the signed-out page, after both SPs');
      assert.deepEqual(asked.map((each) => each.sp).sort(), ['crm', 'notes']);
      const sid = asked[0]!.sessionIndex;
      assert.ok(sid !== undefined && asked.every((each) => each.sessionIndex === sid), 'both name the one session');
      assert.equal(new Set(asked.map((each) => each.nameID)).size, 2, 'each by the NameID of its own');

      // An answer that no logout waits on any more: refused, in French, worded for a sign-out.
      const fr = await browser.newContext({ locale: 'fr-FR' });
      const stale = await fr.newPage();
      const response = await stale.goto(
        await sps.get('notes')!.getLogoutResponseUrlAsync({ ID: '_gone', issuer: 'x', nameID: 'x', nameIDFormat: 'x' } as never, '', {}, true),
      );
      assert.equal(response?.status(), 400);
      await stale.getByRole('heading', { name: 'Demande de déconnexion refusée' }).waitFor();
      await fr.close();
      await context.close();
    } finally {
      await closeServer(http);
    }
  });

  it('lists, adds and shows SAML service providers in the console', async () => {
    const operator = await operatorBrowser(server, 'admin');
    const context = await browser.newContext();
    await context.addCookies([...operator.browser.cookies].map(([name, value]) => ({ name, value, url: server.url })));
    const page = await context.newPage();
    await page.goto(`${server.url}/console/saml`);
    await page.getByRole('heading', { name: 'SAML service providers' }).waitFor();
    await page.getByRole('link', { name: 'Add a SAML service provider' }).click();
    await page.getByLabel('Entity ID').fill('https://crm.example/saml');
    await page.getByLabel('Assertion consumer service URLs (one a line)').fill('https://crm.example/saml/acs');
    await page.getByLabel('Attributes').fill('mail=email');
    await page.getByRole('button', { name: 'Add', exact: true }).click();
    await page.getByText('The SAML service provider was added.').waitFor();
    const sp = await server.store.samlServiceProviders.byEntityId('https://crm.example/saml');
    assert.deepEqual(sp?.attributes, { mail: 'email' });
    await page.getByLabel('Name shown to people').fill('CRM');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('The SAML service provider was changed.').waitFor();
    assert.equal((await server.store.samlServiceProviders.byEntityId('https://crm.example/saml'))?.name, 'CRM');
    await context.close();
  });
});

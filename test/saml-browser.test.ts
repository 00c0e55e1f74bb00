/**
 * SAML sign-in in Chromium (docs/saml.md): an SP-initiated sign-in with a password, the
 * Response posted by the page's own form to the SP's ACS URL (its Content-Security-Policy lets
 * it go there and nowhere else) and validated by @node-saml/node-saml; a refused request's
 * page; and the console's SAML pages. axe-core checks each page (helpers/accessibility.ts).
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { SAML, ValidateInResponseTo } from '@node-saml/node-saml';
import type { Browser } from 'playwright-core';
import { addSamlSp } from '../src/flows/manage/saml-service-providers.ts';
import { chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
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
    user = await server.addUser({ username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' });
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
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
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

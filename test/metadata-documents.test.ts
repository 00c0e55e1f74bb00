/**
 * Client ID Metadata Documents (docs/registration.md): an app whose client_id is the URL of
 * its metadata signs a person in, in Chromium, named on the consent page with its host and
 * marked not verified; the document is fetched once while it may be cached, and one that is
 * too large, too slow, redirects, does not match, or sits on a loopback address without the
 * development setting is refused with a clear error and not fetched again at once.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { chromiumUnavailable, launchChromium, signInAt } from './helpers/chromium.ts';
import { authorizeUrl, pkceRequest } from './helpers/fixtures.ts';
import { assertApprovalPage, FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { text } from './helpers/device.ts';
import { closeAll, closeServer, listenOnFreePort, startTestServer, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** A test app's web server: each path answers as `routes` says; `hits` counts the fetches. */
async function appServer(routes: Record<string, (url: string, response: ServerResponse) => void>) {
  const hits = new Map<string, number>();
  const { server, port } = await listenOnFreePort(
    createServer((request: IncomingMessage, response: ServerResponse) => {
      const path = request.url ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const route = routes[path];
      if (!route) {
        response.writeHead(404).end();
        return;
      }
      route(`http://127.0.0.1:${port}${path}`, response);
    }),
  );
  return { base: `http://127.0.0.1:${port}`, hits, close: () => closeServer(server) };
}

const json =
  (body: unknown, headers: Record<string, string> = {}) =>
  (_url: string, response: ServerResponse) => {
    response.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
const document =
  (extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  (url: string, response: ServerResponse) =>
    json({ client_id: url, client_name: 'Calendar Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], ...extra }, headers)(
      url,
      response,
    );

async function authorize(server: TestServer, clientId: string, redirectUri = REDIRECT) {
  const url = authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri });
  const response = await fetch(url, { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location'), text: (await response.text()).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ') };
}

describe('Client ID Metadata Documents, with the development setting (a local test app over http)', () => {
  let server: TestServer;
  let app: Awaited<ReturnType<typeof appServer>>;
  /** What /changing.json says now. */
  let changing: Record<string, unknown> = { client_name: 'Agenda', redirect_uris: [REDIRECT] };

  before(async () => {
    app = await appServer({
      '/agent.json': document({}, { 'cache-control': 'max-age=300' }),
      '/uncached.json': document({}, { 'cache-control': 'no-store' }),
      '/large.json': document({ padding: 'x'.repeat(4000) }),
      '/slow.json': (url, response) => setTimeout(() => document()(url, response), 1500).unref(),
      '/raced.json': (url, response) => setTimeout(() => document()(url, response), 200).unref(),
      '/moved.json': (_url, response) => response.writeHead(302, { location: '/agent.json' }).end(),
      '/other-id.json': json({ client_id: 'https://elsewhere.example/client.json', redirect_uris: [REDIRECT] }),
      '/secret.json': document({ client_secret: 'shh' }),
      '/web-redirect.json': document({ redirect_uris: ['http://evil.example/cb'] }),
      '/text.json': (_url, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
      '/impostor.json': document({ client_name: 'Sh\u043ep \u0410dmin' }),
      '/changing.json': (url, response) => json({ client_id: url, ...changing }, { 'cache-control': 'no-store' })(url, response),
      '/scheme.json': document({ redirect_uris: ['com.shop.admin:/callback'] }),
      // Members this server does not know, as the MCP clients' documents carry them.
      '/extras.json': document({
        logo_uri: 'https://agent.example/logo.png',
        software_id: 'agent',
        software_version: '2.1',
        application_type: 'native',
        contacts: ['ops@agent.example'],
        x_vendor: { nested: true },
      }),
      '/machine.json': document({ grant_types: ['client_credentials'] }),
      '/keyed.json': document({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://agent.example/jwks.json' }),
    });
    server = await startTestServer({
      env: {
        TESSERA_CLIENT_ID_METADATA_DOCUMENTS: 'on',
        TESSERA_CLIENT_ID_METADATA_DEVELOPMENT: 'on',
        TESSERA_CLIENT_ID_METADATA_MAX_BYTES: '1024',
        TESSERA_CLIENT_ID_METADATA_TIMEOUT_MS: '500',
        // Every app here comes from this machine's one address: more than the default allows.
        TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS: '100',
      },
    });
  });
  after(() => closeAll(server, app));

  it('signs a person in with an app known only by its metadata URL, in Chromium, naming its host as not verified', {
    skip: chromiumUnavailable(),
  }, async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(metadata['client_id_metadata_document_supported'], true);
    const clientId = `${app.base}/agent.json`;
    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const user = await server.addUser();
    const state = oidc.randomState();
    const { url, verifier } = await pkceRequest(config, { redirect_uri: REDIRECT, scope: 'openid offline_access', state });
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const { page, callback } = await signInAt(browser, url, user, REDIRECT);
      await page.getByRole('heading', { name: /Allow Calendar Agent to access your account/ }).waitFor();
      const note = await page.getByRole('note').innerText();
      assert.match(note, new RegExp(`Not verified by Tessera\\. This app describes itself at ${new URL(app.base).host.replace('.', '\\.')}`));
      await page.getByRole('button', { name: 'Approve' }).click();
      const tokens = await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the agent'), {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
      assert.ok(tokens.access_token);
      const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      assert.ok(refreshed.access_token);
    } finally {
      await browser?.close();
    }
    assert.equal(app.hits.get('/agent.json'), 1, 'fetched once while its Cache-Control allows');
    const client = await server.store.clients.get(clientId);
    assert.deepEqual([client?.registeredBy, client?.authMethod, client?.name], ['metadata_document', 'none', 'Calendar Agent']);
  });

  it("takes members it does not know, lists none among the token endpoint's auth methods, and holds the app to a registered public client's rules", async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.ok((metadata['token_endpoint_auth_methods_supported'] as string[]).includes('none'), 'none, whenever documents are accepted');
    const clientId = `${app.base}/extras.json`;
    assert.equal((await authorize(server, clientId)).status, 200, 'unknown members tolerated');
    const client = await server.store.clients.get(clientId);
    assert.deepEqual([client?.authMethod, client?.secretHash, client?.pkce], ['none', null, 'required'], 'a public client, PKCE required');
    // PKCE, as for a registered public client: no code_challenge, an error back at its redirect URI.
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, scope: 'openid' }).toString();
    const noPkce = await fetch(url, { redirect: 'manual' });
    const back = new URL(noPkce.headers.get('location') ?? 'http://invalid/');
    assert.deepEqual([back.origin + back.pathname, back.searchParams.get('error')], [REDIRECT, 'invalid_request']);
    assert.match(back.searchParams.get('error_description') ?? '', /code_challenge/);
    // No grant a public client may not have, and no way to authenticate but none.
    for (const path of ['/machine.json', '/keyed.json']) {
      const refused = await authorize(server, `${app.base}${path}`);
      assert.equal(refused.status, 400, path);
    }
  });

  it('checks the redirect URI against the document, and never fetches one URL twice a second', async () => {
    const clientId = `${app.base}/uncached.json`;
    const good = await authorize(server, clientId);
    assert.equal(good.status, 200);
    assert.match(good.text, /Sign in to continue to Calendar Agent/);
    const other = await authorize(server, clientId, 'http://127.0.0.1:9/elsewhere');
    assert.equal(other.status, 400);
    assert.match(other.text, /redirect_uri is not registered for this client/);
    assert.equal(app.hits.get('/uncached.json'), 1, 'no-store: still kept a second');
  });

  it('answers every one of several first requests for a new app at once, from one fetch of its document and one client', async () => {
    const clientId = `${app.base}/raced.json`;
    const answers = await Promise.all([1, 2, 3].map(() => authorize(server, clientId)));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 200],
      answers.map((answer) => answer.text).join('\n'),
    );
    for (const answer of answers) assert.match(answer.text, /Sign in to continue to Calendar Agent/);
    assert.equal(app.hits.get('/raced.json'), 1, 'the requests that came while it was fetched waited for that fetch');
    assert.equal((await server.store.clients.get(clientId))?.registeredBy, 'metadata_document');
  });

  it("refuses a document that takes an operator app's name (or a look-alike) or private-use redirect scheme", async () => {
    await server.addClient({ name: 'Shop Admin', redirectUris: ['com.shop.admin:/callback'], public: true });
    const named = await authorize(server, `${app.base}/impostor.json`);
    assert.equal(named.status, 400);
    assert.match(named.text, /client_name .* looks like the name of an app registered by the operator \(Shop Admin\)/);
    const scheme = await authorize(server, `${app.base}/scheme.json`, 'com.shop.admin:/callback');
    assert.equal(scheme.status, 400);
    assert.match(scheme.text, /the scheme com\.shop\.admin belongs to an app registered by the operator/);
    assert.equal(await server.store.clients.get(`${app.base}/impostor.json`), null);
  });

  it('shows "not verified" again once the app changes its name or redirect URIs in its document after the operator verified it', async () => {
    const clientId = `${app.base}/changing.json`;
    const user = await server.addUser();
    const consent = async (redirectUri = REDIRECT) => {
      const url = authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, prompt: 'consent' });
      const browser = new FormBrowser(server.url);
      const page = await browser.signIn(await browser.follow(await browser.request(url.href)), user);
      assertApprovalPage(page, '/oauth/authorize/decision');
      return text(page);
    };
    // Kept a second (no-store): the next request after that fetches the document again.
    const refetched = () => new Promise((resolve) => setTimeout(resolve, 1100));
    assert.match(await consent(), /Not verified by Tessera\. This app describes itself/);
    const verified = await runTessera(['client', 'update', clientId, '--verified'], { TESSERA_DATABASE: server.config.database });
    assert.equal(verified.code, 0, verified.stderr);
    await refetched();
    assert.doesNotMatch(await consent(), /Not verified/, 'the same document keeps the mark');

    changing = { client_name: 'Agenda Plus', redirect_uris: [REDIRECT] };
    await refetched();
    const renamed = await consent();
    assert.match(renamed, /Allow Agenda Plus to access your account/);
    assert.match(renamed, /Not verified by Tessera\. This app describes itself/);

    assert.equal((await runTessera(['client', 'update', clientId, '--verified'], { TESSERA_DATABASE: server.config.database })).code, 0);
    changing = { client_name: 'Agenda Plus', redirect_uris: ['http://127.0.0.1:9/moved'] };
    await refetched();
    assert.match(await consent('http://127.0.0.1:9/moved'), /Not verified by Tessera\. This app describes itself/);
  });

  for (const [path, reason] of [
    ['/large.json', /larger than 1024 bytes/],
    ['/slow.json', /did not arrive within 500 ms/],
    ['/moved.json', /redirects \(HTTP 302\)/],
    ['/other-id.json', /client_id is not its URL/],
    ['/secret.json', /must not contain a client_secret/],
    ['/web-redirect.json', /redirect_uris http:\/\/evil\.example\/cb/],
    ['/text.json', /not JSON/],
  ] as const) {
    it(`refuses a document that ${path.slice(1, -5)} with a clear error, and does not fetch it again at once`, async () => {
      const first = await authorize(server, `${app.base}${path}`);
      assert.equal(first.status, 400);
      assert.match(first.text, reason);
      const again = await authorize(server, `${app.base}${path}`);
      assert.match(again.text, reason);
      assert.equal(app.hits.get(path), 1);
    });
  }
});

describe('Client ID Metadata Documents: new apps per address and across the server', () => {
  let server: TestServer;
  let app: Awaited<ReturnType<typeof appServer>>;
  before(async () => {
    app = await appServer(Object.fromEntries(['/a.json', '/b.json', '/c.json', '/d.json'].map((path) => [path, document()])));
    server = await startTestServer({
      env: {
        TESSERA_CLIENT_ID_METADATA_DOCUMENTS: 'on',
        TESSERA_CLIENT_ID_METADATA_DEVELOPMENT: 'on',
        TESSERA_TRUST_PROXY: 'true',
        TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_ADDRESS: '2',
        TESSERA_CLIENT_ID_METADATA_CLIENTS_PER_HOUR: '3',
      },
    });
  });
  after(() => closeAll(server, app));

  const from = async (ip: string, path: string) => {
    const url = authorizeUrl(server.url, { client_id: `${app.base}${path}`, redirect_uri: REDIRECT });
    const response = await fetch(url, { redirect: 'manual', headers: { 'x-forwarded-for': ip } });
    return {
      status: response.status,
      retryAfter: response.headers.get('retry-after'),
      text: (await response.text()).replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' '),
    };
  };

  it('refuses a new app past the limits with 429 and Retry-After, without fetching its document, and keeps serving the apps it knows', async () => {
    for (const path of ['/a.json', '/b.json']) assert.equal((await from('198.51.100.7', path)).status, 200, path);
    const refused = await from('198.51.100.7', '/c.json');
    assert.equal(refused.status, 429, refused.text);
    assert.ok(Number(refused.retryAfter) > 0);
    assert.match(refused.text, /too many new apps known by a metadata document URL from this address this hour/i);
    assert.equal(app.hits.get('/c.json'), undefined, 'not fetched');
    assert.equal(await server.store.clients.get(`${app.base}/c.json`), null);
    assert.equal((await from('198.51.100.7', '/a.json')).status, 200, 'an app already known is not counted');

    assert.equal((await from('198.51.100.8', '/c.json')).status, 200);
    const full = await from('203.0.113.9', '/d.json');
    assert.equal(full.status, 429, full.text);
    assert.match(full.text, /too many new apps known by a metadata document URL on this server this hour/i);
    assert.equal(app.hits.get('/d.json'), undefined);
  });
});

describe('Client ID Metadata Documents, without the development setting', () => {
  let server: TestServer;
  let app: Awaited<ReturnType<typeof appServer>>;
  before(async () => {
    app = await appServer({ '/agent.json': document() });
    server = await startTestServer({ env: { TESSERA_CLIENT_ID_METADATA_DOCUMENTS: 'on' } });
  });
  after(() => closeAll(server, app));

  it('never fetches from a loopback address, nor over http', async () => {
    const port = new URL(app.base).port;
    for (const clientId of [`https://127.0.0.1:${port}/agent.json`, `https://localhost:${port}/agent.json`]) {
      const refused = await authorize(server, clientId);
      assert.equal(refused.status, 400);
      assert.match(refused.text, /private or loopback address/, clientId);
    }
    const plain = await authorize(server, `${app.base}/agent.json`);
    assert.match(plain.text, /client_id is not a registered client/, 'an http client_id is no metadata document');
    assert.equal(app.hits.size, 0, 'nothing was fetched');
  });
});

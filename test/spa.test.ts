import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { chromiumUnavailable, launchChromium, signInWithPassword } from './helpers/chromium.ts';
import { closeServer, listenOnFreePort, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

const LIBRARY = readFileSync(new URL('../node_modules/oidc-client-ts/dist/browser/oidc-client-ts.min.js', import.meta.url), 'utf8');

/**
 * A single-page app on its own origin (a loopback port it binds itself): one page that loads
 * oidc-client-ts and exposes its UserManager for the client `clientId()` names (asked at
 * each request, so the client can be registered once the app's origin is known); the
 * callback page is the same page.
 */
async function startSpa(issuer: string, clientId: () => string): Promise<{ origin: string; server: Server }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/oidc-client-ts.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(LIBRARY);
    else response.writeHead(200, { 'content-type': 'text/html' }).end(spaPage(issuer, clientId(), origin));
  });
  const { port } = await listenOnFreePort(server);
  const origin = `http://127.0.0.1:${port}`;
  return { origin, server };
}

describe('a single-page app signs in with oidc-client-ts through CORS', { skip: chromiumUnavailable() }, () => {
  let tessera: TestServer;
  let client: TestClient;
  let user: TestUser;
  let spa: { origin: string; server: Server };
  let stranger: { origin: string; server: Server };
  let browser: Browser;

  before(async () => {
    tessera = await startTestServer();
    user = await tessera.addUser({ username: 'sam', name: 'Sam Vimes' });
    spa = await startSpa(tessera.url, () => client.clientId);
    stranger = await startSpa(tessera.url, () => client.clientId);
    client = await tessera.addClient({
      name: 'Notes SPA',
      public: true,
      redirectUris: [`${spa.origin}/callback.html`],
      webOrigins: [spa.origin],
      scopes: ['openid', 'profile', 'offline_access'],
      grantTypes: ['authorization_code', 'refresh_token'],
    });
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    if (spa) await closeServer(spa.server);
    if (stranger) await closeServer(stranger.server);
    await tessera?.close();
  });

  async function signIn(page: Page): Promise<void> {
    await page.goto(`${spa.origin}/`);
    // signinRedirect navigates away, so it is started, not awaited.
    await page.evaluate('void window.mgr.signinRedirect()');
    await signInWithPassword(page, user);
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${spa.origin}/callback.html**`);
  }

  it('signs in with the code flow and PKCE, then refreshes and reads userinfo, all through CORS', async () => {
    const page = await browser.newPage();
    await signIn(page);
    const result = (await page.evaluate(`(async () => {
      const first = await window.mgr.signinRedirectCallback();
      const second = await window.mgr.signinSilent();
      const userinfo = await fetch(${JSON.stringify(`${tessera.url}/oauth/userinfo`)}, { headers: { authorization: 'Bearer ' + second.access_token } });
      return {
        sub: first.profile.sub,
        name: first.profile.name,
        scope: first.scope,
        rotated: typeof first.refresh_token === 'string' && typeof second.refresh_token === 'string' && first.refresh_token !== second.refresh_token,
        newAccessToken: second.access_token !== first.access_token,
        userinfoStatus: userinfo.status,
        userinfo: await userinfo.json(),
      };
    })()`)) as {
      sub: string;
      name: string;
      scope: string;
      rotated: boolean;
      newAccessToken: boolean;
      userinfoStatus: number;
      userinfo: Record<string, unknown>;
    };
    assert.equal(result.sub, user.id);
    assert.equal(result.name, 'Sam Vimes', 'profile claims loaded from userinfo');
    assert.equal(result.scope, 'openid profile offline_access');
    assert.equal(result.rotated, true, 'the refresh token rotates on use');
    assert.equal(result.newAccessToken, true);
    assert.equal(result.userinfoStatus, 200);
    const { updated_at: updatedAt, ...userinfo } = result.userinfo;
    assert.deepEqual(userinfo, { sub: user.id, preferred_username: 'sam', name: 'Sam Vimes' });
    assert.equal(typeof updatedAt, 'number', 'OIDC Core §5.1 updated_at, in seconds');
    await page.close();
  });

  it('is refused by the browser on an origin the client did not register', async () => {
    const page = await browser.newPage();
    await page.goto(`${stranger.origin}/`);
    const outcome = await page.evaluate(`fetch(${JSON.stringify(`${tessera.url}/oauth/token`)}, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&client_id=${client.clientId}&code=x&redirect_uri=x&code_verifier=${'a'.repeat(43)}',
    }).then(() => 'read', (error) => 'blocked: ' + error.name)`);
    assert.equal(outcome, 'blocked: TypeError');
    await page.close();
  });

  it('answers a preflight for a registered origin only', async () => {
    const preflight = (origin: string) =>
      fetch(`${tessera.url}/oauth/token`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
      });
    const registered = await preflight(spa.origin);
    assert.equal(registered.status, 204);
    assert.equal(registered.headers.get('access-control-allow-origin'), spa.origin);
    const unknown = await preflight(stranger.origin);
    assert.equal(unknown.status, 403);
    assert.equal(unknown.headers.get('access-control-allow-origin'), null);
  });

  it("lets only the token's own app read userinfo from a browser", async () => {
    await tessera.addClient({ name: 'Other SPA', public: true, redirectUris: [`${stranger.origin}/callback.html`], webOrigins: [stranger.origin] });
    const page = await browser.newPage();
    await signIn(page);
    const token = (await page.evaluate('window.mgr.signinRedirectCallback().then((user) => user.access_token)')) as string;
    await page.close();
    const read = (origin: string) => fetch(`${tessera.url}/oauth/userinfo`, { headers: { origin, authorization: `Bearer ${token}` } });
    const own = await read(spa.origin);
    assert.equal(own.status, 200);
    assert.equal(own.headers.get('access-control-allow-origin'), spa.origin);
    const foreign = await read(stranger.origin);
    assert.equal(foreign.headers.get('access-control-allow-origin'), null, 'another registered app cannot read it');
  });

  it('never answers CORS on the authorization endpoint', async () => {
    const response = await fetch(`${tessera.url}/oauth/authorize?client_id=${client.clientId}`, { headers: { origin: spa.origin } });
    assert.equal(response.headers.get('access-control-allow-origin'), null);
  });

  it('refuses a token request from an origin the client did not register', async () => {
    const response = await fetch(`${tessera.url}/oauth/token`, {
      method: 'POST',
      headers: { origin: stranger.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', client_id: client.clientId, code: 'x' }).toString(),
    });
    assert.equal(response.status, 401);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_client');
    assert.equal(response.headers.get('access-control-allow-origin'), null);
  });
});

function spaPage(issuer: string, clientId: string, origin: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>SPA</title>
<script src="/oidc-client-ts.js"></script>
<script>
window.mgr = new oidc.UserManager({
  authority: ${JSON.stringify(issuer)},
  client_id: ${JSON.stringify(clientId)},
  redirect_uri: ${JSON.stringify(`${origin}/callback.html`)},
  response_type: 'code',
  scope: 'openid profile offline_access',
  loadUserInfo: true,
  automaticSilentRenew: false,
  userStore: new oidc.WebStorageStateStore({ store: window.localStorage }),
});
</script></head><body><h1>Notes</h1></body></html>`;
}

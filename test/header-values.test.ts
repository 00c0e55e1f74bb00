/**
 * Header values built from input, and header values sent as input: no request may reach a
 * `Location` header unparsed, and no header value, however odd, may end in a 500.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { FormBrowser } from './helpers/browser.ts';
import { startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

/** A raw request, so header bytes reach the server as written (Latin-1 included). */
function raw(url: string, method: string, headers: Record<string, string>, body = ''): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, location: response.headers.location }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

describe('header values from and to input', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_TRUST_PROXY: 'loopback' } });
    user = await server.addUser({ username: 'ada' });
  });
  after(() => server.close());

  const ODD = ['\u00e9t\u00e9', '\u00ff\u0080', 'a\tb', '"quoted"\\', 'x'.repeat(4000)];

  it('answers requests with odd Origin, Cookie, Authorization and X-Forwarded-For values without a 500', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const value of ODD) {
      const latin1 = Buffer.from(value, 'latin1').toString('latin1');
      const cases: [string, string, Record<string, string>, string][] = [
        ['/oauth/token', 'POST', { ...form, origin: latin1 }, 'grant_type=authorization_code'],
        ['/oauth/token', 'POST', { ...form, authorization: `Basic ${latin1}` }, 'grant_type=authorization_code'],
        ['/oauth/token', 'OPTIONS', { origin: `https://${latin1}`, 'access-control-request-method': 'POST' }, ''],
        ['/oauth/userinfo', 'GET', { authorization: `Bearer ${latin1}` }, ''],
        ['/login', 'GET', { cookie: `tessera_session=${latin1}; tessera_csrf=${latin1}` }, ''],
        ['/device', 'GET', { 'x-forwarded-for': latin1 }, ''],
        ['/oauth/device/authorization', 'POST', { ...form, 'x-forwarded-for': latin1, 'user-agent': latin1 }, 'client_id=nobody'],
      ];
      for (const [path, method, headers, body] of cases) {
        const answer = await raw(`${server.url}${path}`, method, headers, body);
        assert.ok(answer.status < 500, `${method} ${path} with ${JSON.stringify(headers)} answered ${answer.status}`);
      }
    }
  });

  for (const target of ['/\u00e9/x', '/\u2028/other.example', '/\u0085/x', '/\u{1F600}', '/a\u007fb']) {
    it(`sends the browser to the default page when return_to has a control or non-ASCII character: ${JSON.stringify(target)}`, async () => {
      const browser = new FormBrowser(server.url);
      const signInPage = await browser.request(`/login?return_to=${encodeURIComponent(target)}`);
      assert.equal(signInPage.status, 200);
      const signedIn = await browser.submit(signInPage, '/login', { username: user.username, password: user.password });
      assert.equal(signedIn.status, 303, signedIn.html);
      assert.equal(signedIn.location, '/');
      const out = await browser.submit(await browser.request('/account'), '/logout', { return_to: target });
      assert.equal(out.status, 303);
      assert.equal(out.location, '/');
    });
  }

  it('refuses a return_to with a NUL character (400), as any parameter with one: nothing is redirected', async () => {
    const target = '/\u0000//other.example';
    const browser = new FormBrowser(server.url);
    const refused = await browser.request(`/login?return_to=${encodeURIComponent(target)}`);
    assert.equal(refused.status, 400);
    assert.equal(refused.location, null);
    const signedIn = await browser.submit(await browser.request('/login'), '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.status, 303, signedIn.html);
    const out = await browser.submit(await browser.request('/account'), '/logout', { return_to: target });
    assert.equal(out.status, 400);
    assert.equal(out.location, null);
  });

  it('keeps an encoded CR LF in return_to encoded: no header is split', async () => {
    const browser = new FormBrowser(server.url);
    const signInPage = await browser.request(`/login?return_to=${encodeURIComponent('/account?x=%0d%0aSet-Cookie:a=1')}`);
    const signedIn = await browser.submit(signInPage, '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.location, '/account?x=%0d%0aSet-Cookie:a=1');
  });
});

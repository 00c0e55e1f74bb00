/**
 * A page opened at another loopback name than the issuer's: `127.0.0.1` where the issuer is
 * `localhost` (or the other way round) sends the browser to the issuer's host before anyone
 * types a password into a form whose post would be refused as coming from another site.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

interface Answer {
  readonly status: number;
  readonly location: string | undefined;
}

/** One request to the server's port with the Host header a browser at `host` would send. */
function ask(server: TestServer, method: string, path: string, host: string): Promise<Answer> {
  const port = new URL(server.url).port;
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: '127.0.0.1', port, method, path, headers: { host: `${host}:${port}`, 'content-type': 'application/x-www-form-urlencoded' } },
      (response) => {
        response.resume();
        response.on('end', () => resolve({ status: response.statusCode ?? 0, location: response.headers.location }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(method === 'POST' ? 'username=ada&password=x&csrf_token=x' : undefined);
  });
}

describe('a page opened at another loopback name than the issuer', () => {
  let named: TestServer;
  let numeric: TestServer;

  before(async () => {
    named = await startTestServer({ issuerHost: 'localhost' });
    numeric = await startTestServer();
  });
  after(() => closeAll(named, numeric));

  it('is sent to the issuer host with its path and query, by GET and HEAD', async () => {
    for (const method of ['GET', 'HEAD']) {
      const moved = await ask(named, method, '/login?return_to=%2Faccount', '127.0.0.1');
      assert.equal(moved.status, 307, method);
      assert.equal(moved.location, `${named.url}/login?return_to=%2Faccount`);
    }
    const back = await ask(numeric, 'GET', '/account', 'localhost');
    assert.equal(back.status, 307);
    assert.equal(back.location, `${numeric.url}/account`);
  });

  it('answers at the issuer host itself', async () => {
    assert.equal((await ask(named, 'GET', '/login', 'localhost')).status, 200);
  });

  it('never sends the browser off the issuer host', async () => {
    for (const path of ['//elsewhere.example/login', '/login?return_to=//elsewhere.example/']) {
      const moved = await ask(named, 'GET', path, '127.0.0.1');
      if (moved.location !== undefined) assert.equal(new URL(moved.location).origin, named.url, `${path}: ${moved.location}`);
    }
    assert.equal((await ask(named, 'GET', '/login?return_to=//elsewhere.example/', '127.0.0.1')).status, 307);
  });

  it('does not move a form post, which stays refused as from another site', async () => {
    const posted = await ask(named, 'POST', '/login', '127.0.0.1');
    assert.notEqual(posted.status, 307);
    assert.equal(posted.location, undefined);
  });

  it('does not move a request for a name that is not loopback (a proxy that passes its own Host)', async () => {
    assert.equal((await ask(named, 'GET', '/login', 'tessera.internal')).status, 200);
  });
});

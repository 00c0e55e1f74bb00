/**
 * TESSERA_ADMIN_LISTEN (docs/admin-api.md): the admin API on a listener of its own, as Hydra
 * separates its admin and public ports; `/admin` is then 404 on the public listener, and
 * the admin listener serves nothing else. The token still comes from the public token
 * endpoint, for the audience <issuer>/admin.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import type { RunningServer } from '../src/main.ts';
import { runTessera } from './helpers/cli.ts';
import { startMainServer } from './helpers/main-server.ts';

describe('the admin API on its own listener (TESSERA_ADMIN_LISTEN)', () => {
  let main: Awaited<ReturnType<typeof startMainServer>>;
  let server: RunningServer;
  let token: string;

  before(async () => {
    main = await startMainServer({ TESSERA_ADMIN_LISTEN: '127.0.0.1:0' });
    ({ server } = main);
    const added = await runTessera(['client', 'add', '--name', 'CI', '--grant', 'client_credentials', '--scope', 'admin:clients', '--json'], {
      TESSERA_DATABASE: main.config.database,
    });
    assert.equal(added.code, 0, added.stderr);
    const { client_id: id, client_secret: secret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const discovered = await oidc.discovery(new URL(server.url), id, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    token = (await oidc.clientCredentialsGrant(discovered, { resource: `${server.url}/admin` })).access_token;
  });
  after(() => main.close());

  it('serves the admin API on the admin listener only, and answers 404 for /admin on the public one', async () => {
    assert.match(server.adminUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(server.adminUrl!).port, new URL(server.url).port);
    const headers = { authorization: `Bearer ${token}` };
    const there = await fetch(`${server.adminUrl}/admin/v1/clients`, { headers });
    assert.equal(there.status, 200);
    assert.equal(((await there.json()) as { clients: unknown[] }).clients.length, 1);
    const document = (await (await fetch(`${server.adminUrl}/admin/v1/openapi.json`)).json()) as { servers: { url: string }[] };
    assert.deepEqual(document.servers, [{ url: '/admin/v1' }], 'relative to the admin listener');

    for (const path of ['/admin/v1/clients', '/admin/v1/openapi.json', '/admin', '/admin/v1/clients?limit=1']) {
      const here = await fetch(`${server.url}${path}`, { headers });
      assert.equal(here.status, 404, `${path} on the public listener`);
    }
    // The admin listener serves nothing but the admin API.
    for (const path of ['/.well-known/openid-configuration', '/oauth/token', '/']) {
      assert.equal((await fetch(`${server.adminUrl}${path}`)).status, 404, `${path} on the admin listener`);
    }
    assert.equal((await fetch(`${server.url}/.well-known/openid-configuration`)).status, 200, 'the public listener serves the rest');
  });

  it('answers 404 on the public listener however the admin path is spelt: percent-encoded, or in absolute form', async () => {
    const url = new URL(server.url);
    const raw = (method: string, target: string) =>
      new Promise<number>((resolve, reject) => {
        // node:http sends the target as given, where fetch would normalise it.
        const sent = request(
          { host: url.hostname, port: url.port, method, path: target, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
          (answer) => {
            answer.resume();
            resolve(answer.statusCode ?? 0);
          },
        );
        sent.on('error', reject);
        sent.end(method === 'POST' ? '{}' : undefined);
      });
    for (const target of [
      '/%61dmin/v1/clients',
      '/admi%6e/v1/clients',
      '/admin/%76%31/clients',
      `http://${url.host}/admin/v1/clients`,
      `http://${url.host}/%61dmin/v1/openapi.json`,
    ]) {
      assert.equal(await raw('GET', target), 404, `GET ${target} on the public listener`);
    }
    assert.equal(await raw('POST', '/%61dmin/v1/registration-tokens'), 404, 'a change too');
    assert.equal(
      (await fetch(`${server.adminUrl}/admin/v1/registration-tokens`, { headers: { authorization: `Bearer ${token}` } })).status,
      200,
      'the token was good: the admin listener serves it',
    );
  });

  it('refuses a setting that is not host:port, naming it', () => {
    for (const value of ['9001', 'localhost', 'localhost:99999', 'http://localhost:9001']) {
      assert.throws(
        () => loadConfig({ TESSERA_ADMIN_LISTEN: value }),
        (error: unknown) => error instanceof ConfigError && /TESSERA_ADMIN_LISTEN/.test(error.message),
      );
    }
    assert.deepEqual(loadConfig({ TESSERA_ADMIN_LISTEN: '[::1]:9001' }).adminListen, { host: '::1', port: 9001 });
  });
});

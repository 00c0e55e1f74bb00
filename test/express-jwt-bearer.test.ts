/**
 * An API written with Auth0's express-oauth2-jwt-bearer, configured as its README shows
 * (`issuerBaseURL` and `audience` only). The library takes the algorithms it accepts from
 * discovery's `id_token_signing_alg_values_supported` (RS256): RFC 9068 §2.1 promises
 * resource servers RS256, so an API's access tokens are RS256 unless its operator chose.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import express from 'express';
import { auth, requiredScopes } from 'express-oauth2-jwt-bearer';
import { decodeProtectedHeader } from 'jose';
import type * as oidc from 'openid-client';
import { runTessera } from './helpers/cli.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { signIn } from './helpers/lifecycle.ts';
import { closeServer, listenOnFreePort, type TestServer, type TestUser } from './helpers/server.ts';

const PHOTOS = 'https://photos.example.com/api';

describe('an API protected by express-oauth2-jwt-bearer with its README configuration', () => {
  let server: TestServer, user: TestUser, config: oidc.Configuration, api: string;
  let closeApi: () => Promise<void>;

  before(async () => {
    ({ server, user, config } = await startWithApp({
      client: { name: 'Photo Printer', scopes: ['openid', 'profile', 'photos:read'] },
      user: { username: 'grace' },
    }));
    const env = { TESSERA_DATABASE: server.config.database };
    const added = await runTessera(['resource', 'add', '--identifier', PHOTOS, '--name', 'Photo Library', '--scope', 'photos:read=See your photos'], env);
    assert.equal(added.code, 0, added.stderr);

    const app = express();
    // Refusals are what some cases expect: not printed.
    app.set('env', 'test');
    app.use(auth({ issuerBaseURL: server.url, audience: PHOTOS }));
    app.get('/photos', requiredScopes('photos:read'), (request, response) => {
      response.json({ sub: request.auth?.payload.sub });
    });
    const listening = await listenOnFreePort(createServer(app));
    api = `http://127.0.0.1:${listening.port}`;
    closeApi = () => closeServer(listening.server);
  });
  after(async () => {
    await closeApi?.();
    await server.close();
  });

  const call = (token: string) => fetch(`${api}/photos`, { headers: { authorization: `Bearer ${token}` } });

  it('accepts an access token issued for the API: RS256 by default (RFC 9068 §2.1)', async () => {
    const tokens = await signIn(server, config, user, 'openid photos:read');
    assert.equal(decodeProtectedHeader(tokens.access_token).alg, 'RS256');
    const response = await call(tokens.access_token);
    assert.equal(response.status, 200, await response.clone().text());
    assert.deepEqual(await response.json(), { sub: user.id });
  });

  it('refuses the tokens of an API its operator switched to ES256 (resource update --signing-alg), and takes them again at RS256', async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    const fast = await runTessera(['resource', 'update', PHOTOS, '--signing-alg', 'ES256'], env);
    assert.equal(fast.code, 0, fast.stderr);
    try {
      const tokens = await signIn(server, config, user, 'openid photos:read');
      assert.equal(decodeProtectedHeader(tokens.access_token).alg, 'ES256');
      assert.equal((await call(tokens.access_token)).status, 401, 'the README configuration takes the algorithms discovery lists for ID tokens');
    } finally {
      const back = await runTessera(['resource', 'update', PHOTOS, '--signing-alg', 'RS256'], env);
      assert.equal(back.code, 0, back.stderr);
    }
    const tokens = await signIn(server, config, user, 'openid photos:read');
    assert.equal((await call(tokens.access_token)).status, 200);
  });

  it("refuses an access token for Tessera's own userinfo, which is not for this API", async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    assert.equal(decodeProtectedHeader(tokens.access_token).alg, 'ES256', 'ES256 where the only audience is this server (TESSERA_ACCESS_TOKEN_ALG)');
    const response = await call(tokens.access_token);
    assert.equal(response.status, 401);
  });
});

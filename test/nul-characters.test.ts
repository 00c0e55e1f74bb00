/**
 * A NUL character (U+0000) in what a client sends before it is authenticated: PostgreSQL
 * keeps no NUL in text, and refuses a statement that sends one as a parameter, so a value
 * that reached the store with one was answered 500 server_error. Each such value is refused
 * first, as the client's error: a form or query parameter with invalid_request, a page's too
 * (http/form.ts), an id in HTTP Basic or a client assertion with invalid_client
 * (flows/client-auth.ts, http/client-auth.ts). Run against PostgreSQL, where the 500 was.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { UnsecuredJWT } from 'jose';
import {
  AUTHORIZE_PATH,
  DEVICE_AUTHORIZATION_PATH,
  END_SESSION_PATH,
  INTROSPECTION_PATH,
  PAR_PATH,
  REVOCATION_PATH,
  SIGN_IN_PATH,
  TOKEN_PATH,
} from '../src/core/endpoints.ts';
import { JWT_BEARER_ASSERTION } from '../src/core/protocol.ts';
import { FormBrowser } from './helpers/browser.ts';
import { describePostgres, freshPostgresDatabase } from './helpers/postgres.ts';
import { assertOAuthError, basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer } from './helpers/server.ts';

describePostgres('a NUL character in an unauthenticated value, on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let server: TestServer;
  let client: TestClient;

  before(async () => {
    database = await freshPostgresDatabase();
    server = await startTestServer({ database: database.url });
    client = await server.addClient();
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  it('refuses a client_credentials request whose client_id holds one with 400 invalid_request, not 500', async () => {
    const result = await postForm(`${server.url}${TOKEN_PATH}`, 'grant_type=client_credentials&client_id=a%00b&client_secret=x');
    assertOAuthError(result, 400, 'invalid_request');
    assert.match(String(result.body['error_description']), /client_id .*NUL/);
  });

  it('refuses one in any parameter of every form-encoded OAuth endpoint with invalid_request', async () => {
    const authorization = basic(client.clientId, client.clientSecret);
    for (const path of [TOKEN_PATH, REVOCATION_PATH, INTROSPECTION_PATH, PAR_PATH, DEVICE_AUTHORIZATION_PATH]) {
      const unknown = await postForm(`${server.url}${path}`, { client_id: 'a\u0000b', client_secret: 'x', token: 'x' });
      assertOAuthError(unknown, 400, 'invalid_request');
      assert.match(String(unknown.body['error_description']), /client_id .*NUL/, path);
      const known = await postForm(`${server.url}${path}`, { token: 'x', response_type: 'code', scope: 'openid\u0000' }, { authorization });
      assertOAuthError(known, 400, 'invalid_request');
      assert.match(String(known.body['error_description']), /scope .*NUL/, path);
    }
    // RFC 8707 §2: resource may be repeated; a NUL in any of its values is refused as well.
    const repeated = await postForm(
      `${server.url}${TOKEN_PATH}`,
      'grant_type=client_credentials&resource=https%3A%2F%2Fa.example&resource=https%3A%2F%2Fb.example%00',
      {
        authorization,
      },
    );
    assertOAuthError(repeated, 400, 'invalid_request');
    assert.match(String(repeated.body['error_description']), /resource .*NUL/);
  });

  it('refuses one in the query or the form of an endpoint a browser is sent to with a 400 page, before anything is looked up', async () => {
    const query = new URLSearchParams({ client_id: 'a\u0000b', response_type: 'code', redirect_uri: REDIRECT_URI, scope: 'openid' });
    for (const path of [`${AUTHORIZE_PATH}?${query}`, `${END_SESSION_PATH}?client_id=a%00b`]) {
      const response = await fetch(`${server.url}${path}`, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(response.status, 400, path);
      assert.match(await response.text(), /invalid_request: parameter client_id holds a NUL character/, path);
    }
    const browser = new FormBrowser(server.url);
    const signIn = await browser.submit(await browser.request(SIGN_IN_PATH), SIGN_IN_PATH, { username: 'a\u0000b', password: 'x' });
    assert.equal(signIn.status, 400);
    assert.match(signIn.html, /invalid_request: parameter username holds a NUL character/);
  });

  it('refuses an id with one in HTTP Basic or in a client assertion as it refuses an unknown client (invalid_client)', async () => {
    const viaBasic = await postForm(`${server.url}${TOKEN_PATH}`, { grant_type: 'client_credentials' }, { authorization: basic('a\u0000b', 'x') });
    assertOAuthError(viaBasic, 401, 'invalid_client');
    const assertion = new UnsecuredJWT({ jti: 'x' }).setSubject('a\u0000b').setIssuer('a\u0000b').setExpirationTime('1m').encode();
    const viaAssertion = await postForm(`${server.url}${TOKEN_PATH}`, {
      grant_type: 'client_credentials',
      client_assertion_type: JWT_BEARER_ASSERTION,
      client_assertion: assertion,
    });
    assertOAuthError(viaAssertion, 401, 'invalid_client');
    // At the introspection endpoint, HTTP Basic may name an API (a resource server) instead.
    const viaApi = await postForm(`${server.url}${INTROSPECTION_PATH}`, { token: 'x' }, { authorization: basic('urn:a\u0000b', 'x') });
    assertOAuthError(viaApi, 401, 'invalid_client');
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { basic, postForm, startTestServer, type TestClient, type TestServer, assertOAuthError } from './helpers/server.ts';

describe('the token endpoint refuses malformed requests with OAuth errors', () => {
  let server: TestServer;
  let client: TestClient;
  let token: string;
  let auth: Record<string, string>;

  before(async () => {
    server = await startTestServer();
    client = await server.addClient();
    token = `${server.url}/oauth/token`;
    auth = { authorization: basic(client.clientId, client.clientSecret) };
  });
  after(() => server.close());

  it('answers a request without client authentication with invalid_client, 401 and WWW-Authenticate', async () => {
    const result = await postForm(token, { grant_type: 'authorization_code', code: 'x' });
    assertOAuthError(result, 401, 'invalid_client');
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  it('answers a wrong client secret with invalid_client and 401', async () => {
    const result = await postForm(token, { grant_type: 'authorization_code' }, { authorization: basic(client.clientId, 'wrong') });
    assertOAuthError(result, 401, 'invalid_client');
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  it('answers an unknown client and a malformed Basic header with invalid_client', async () => {
    assertOAuthError(await postForm(token, { grant_type: 'authorization_code' }, { authorization: basic('nobody', 'x') }), 401, 'invalid_client');
    assertOAuthError(await postForm(token, { grant_type: 'authorization_code' }, { authorization: 'Basic !!!' }), 401, 'invalid_client');
    assertOAuthError(
      await postForm(token, { grant_type: 'authorization_code' }, { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` }),
      401,
      'invalid_client',
    );
  });

  it('decodes form-encoded credentials in the Basic header (RFC 6749 §2.3.1)', async () => {
    // An id with a colon and a space, a secret with +, %, : and a non-ASCII letter: each
    // reads differently unless form-decoded after the Basic split.
    const odd = await server.addClient({ id: 'app:ü one', secret: 'p+q%25r:s é' });
    const request = (authorization: string) =>
      postForm(
        token,
        { grant_type: 'authorization_code', code: 'x', redirect_uri: 'http://127.0.0.1:9/callback', code_verifier: 'a'.repeat(43) },
        { authorization },
      );
    // openid-client encodes them (client_secret_basic): authenticated, refused for the code only.
    const config = await oidc.discovery(new URL(server.url), odd.clientId, undefined, oidc.ClientSecretBasic(odd.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    await assert.rejects(
      oidc.genericGrantRequest(config, 'authorization_code', { code: 'x', redirect_uri: 'http://127.0.0.1:9/callback', code_verifier: 'a'.repeat(43) }),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
    assertOAuthError(await request(basic(odd.clientId, odd.clientSecret)), 400, 'invalid_grant');
    // The same values not form-encoded are other credentials.
    assertOAuthError(await request(`Basic ${Buffer.from(`${odd.clientId}:${odd.clientSecret}`).toString('base64')}`), 401, 'invalid_client');
  });

  it('takes client_secret in the body as well (client_secret_post), and refuses a wrong one', async () => {
    const form = { grant_type: 'authorization_code', client_id: client.clientId };
    assertOAuthError(await postForm(token, { ...form, client_secret: client.clientSecret }), 400, 'invalid_request');
    assertOAuthError(await postForm(token, { ...form, client_secret: 'wrong' }), 401, 'invalid_client');
  });

  it('refuses a confidential client that sends only its client_id, like a public client', async () => {
    const result = await postForm(token, { grant_type: 'authorization_code', client_id: client.clientId, code: 'x' });
    assertOAuthError(result, 401, 'invalid_client');
    assert.match(result.headers.get('www-authenticate') ?? '', /^Basic /);
  });

  it('answers a missing grant_type with invalid_request', async () => {
    assertOAuthError(await postForm(token, { code: 'x' }, auth), 400, 'invalid_request');
  });

  it('answers an unknown grant_type with unsupported_grant_type', async () => {
    assertOAuthError(await postForm(token, { grant_type: 'password', username: 'a', password: 'b' }, auth), 400, 'unsupported_grant_type');
  });

  it('answers a repeated parameter with invalid_request', async () => {
    assertOAuthError(await postForm(token, 'grant_type=authorization_code&code=a&code=b', auth), 400, 'invalid_request');
  });

  it('answers missing code, redirect_uri or code_verifier with invalid_request', async () => {
    const full = { grant_type: 'authorization_code', code: 'x', redirect_uri: 'http://127.0.0.1:9/callback', code_verifier: 'a'.repeat(43) };
    for (const missing of ['code', 'redirect_uri', 'code_verifier'] as const) {
      const form: Record<string, string> = { ...full };
      delete form[missing];
      assertOAuthError(await postForm(token, form, auth), 400, 'invalid_request');
    }
  });

  it('answers a JSON body with invalid_request', async () => {
    const response = await fetch(token, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"grant_type":"authorization_code"}',
    });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_request');
  });

  it('answers a request without a body with invalid_request', async () => {
    const response = await fetch(token, { method: 'POST', headers: auth });
    assert.equal(response.status, 400);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_request');
  });

  it('answers an oversized body with 413 and invalid_request', async () => {
    assertOAuthError(await postForm(token, { grant_type: 'authorization_code', code: 'x'.repeat(64 * 1024) }, auth), 413, 'invalid_request');
  });

  it('reads a form body of 16 KiB, and refuses one byte more with 413', async () => {
    // RFC 6749 §3.2: an unrecognized parameter is ignored, so only the size decides.
    const prefix = 'grant_type=authorization_code&code=x&padding=';
    const body = (length: number) => `${prefix}${'x'.repeat(length - prefix.length)}`;
    const read = await postForm(token, body(16 * 1024), auth);
    assertOAuthError(read, 400, 'invalid_request');
    assert.match(String(read.body['error_description']), /redirect_uri is required/, 'the form was read');
    assertOAuthError(await postForm(token, body(16 * 1024 + 1), auth), 413, 'invalid_request');
  });

  it('answers a malformed form body without crashing', async () => {
    assertOAuthError(await postForm(token, '%%%&&&=%zz', auth), 400, 'invalid_request');
  });

  it('answers unauthorized_client when the client is not allowed the grant', async () => {
    const deviceOnly = await server.addClient({ grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const result = await postForm(
      token,
      { grant_type: 'authorization_code', code: 'x' },
      { authorization: basic(deviceOnly.clientId, deviceOnly.clientSecret) },
    );
    assertOAuthError(result, 400, 'unauthorized_client');
  });

  it('answers GET with an OAuth error, not a crash: 405 with POST in Allow (RFC 9110 §15.5.6)', async () => {
    const response = await fetch(token);
    assert.equal(response.status, 405);
    assert.match(response.headers.get('allow') ?? '', /\bPOST\b/);
    assert.equal(((await response.json()) as { error: string }).error, 'invalid_request');
  });
});

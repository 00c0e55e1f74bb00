import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import * as oidc from 'openid-client';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, type GrantType } from '../src/core/protocol.ts';
import { FormBrowser } from './helpers/browser.ts';
import { BrowserAt, DEVICE_GRANT } from './helpers/device.ts';
import {
  approveAt,
  authorizationUrl,
  clientAuth,
  codeRequest,
  discover,
  dpopKey,
  handProof,
  insecure,
  pushRequest,
  redeemCode,
  redeemedTokens,
  type DpopKey,
} from './helpers/dpop.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { clockAtStart } from './helpers/clock.ts';

const OFFLINE = 'openid profile offline_access';

describe('DPoP (RFC 9449) and PAR (RFC 9126), through oauth4webapi', () => {
  let server: TestServer, as: oauth.AuthorizationServer, confidential: TestClient, spa: TestClient, user: TestUser;

  before(async () => {
    server = await startTestServer();
    const grantTypes: GrantType[] = [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN];
    const scopes = ['openid', 'profile', 'offline_access'];
    confidential = await server.addClient({ name: 'Photo Printer', grantTypes, scopes });
    spa = await server.addClient({ name: 'Notes', public: true, grantTypes, scopes });
    user = await server.addUser({ username: 'ada' });
    as = await discover(server);
  });
  after(() => server.close());

  /** The code flow through PAR, with the DPoP key at PAR and at the token endpoint. */
  async function codeFlowWithPar(client: TestClient, key: DpopKey, scope = OFFLINE) {
    const request = await codeRequest(scope);
    const pushed = await pushRequest(as, client, request.params, { DPoP: key.handle });
    const url = authorizationUrl(as, client.clientId, { request_uri: pushed.request_uri });
    const callback = await approveAt(as, client, url, user, request.state);
    const tokens = await redeemedTokens(as, client, await redeemCode(as, client, callback, request, { DPoP: key.handle }), request);
    return { pushed, tokens, url };
  }

  it('publishes what it supports in discovery', () => {
    assert.ok(as.dpop_signing_alg_values_supported?.includes('ES256'));
    assert.ok(!as.dpop_signing_alg_values_supported?.some((alg) => alg.startsWith('HS') || alg === 'none'));
    assert.equal(as.pushed_authorization_request_endpoint, `${server.url}/oauth/par`);
    assert.equal(as.require_pushed_authorization_requests, false);
  });

  it('the code flow with PAR and DPoP gives a DPoP token with cnf.jkt that userinfo accepts with a proof and refuses as Bearer', async () => {
    const key = await dpopKey(confidential);
    const { pushed, tokens } = await codeFlowWithPar(confidential, key);
    assert.match(pushed.request_uri, /^urn:ietf:params:oauth:request_uri:[A-Za-z0-9_-]{43}$/);
    assert.equal(pushed.expires_in, 60);
    assert.equal(tokens.token_type, 'dpop');
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });

    const info = await oauth.processUserInfoResponse(
      as,
      { client_id: confidential.clientId },
      user.id,
      await oauth.userInfoRequest(as, { client_id: confidential.clientId }, tokens.access_token, { DPoP: key.handle, ...insecure }),
    );
    assert.equal(info.sub, user.id);

    const asBearer = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(asBearer.status, 401);
    assert.match(asBearer.headers.get('www-authenticate') ?? '', /DPoP algs="[^"]*", error="invalid_token"/);

    // With another key's proof, the bound token is refused too (RFC 9449 §7.1).
    const other = await dpopKey(confidential);
    const stolen = await oauth.userInfoRequest(as, { client_id: confidential.clientId }, tokens.access_token, { DPoP: other.handle, ...insecure });
    assert.equal(stolen.status, 401);
    assert.match(stolen.headers.get('www-authenticate') ?? '', /^DPoP algs="[^"]*", error="invalid_dpop_proof"/);

    const introspected = await postForm(
      `${server.url}/oauth/introspect`,
      { token: tokens.access_token },
      { authorization: basic(confidential.clientId, confidential.clientSecret) },
    );
    assert.equal(introspected.body['active'], true);
    assert.equal(introspected.body['token_type'], 'DPoP');
    assert.deepEqual(introspected.body['cnf'], { jkt: key.jkt });
  });

  it("binds a public client's refresh token to its key: a refresh with another key fails, with its own key it works", async () => {
    const key = await dpopKey(spa);
    const { tokens } = await codeFlowWithPar(spa, key);
    assert.ok(tokens.refresh_token);
    const other = await dpopKey(spa);
    await assert.rejects(
      oauth.processRefreshTokenResponse(
        as,
        { client_id: spa.clientId },
        await oauth.refreshTokenGrantRequest(as, { client_id: spa.clientId }, oauth.None(), tokens.refresh_token, { DPoP: other.handle, ...insecure }),
      ),
      (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'invalid_dpop_proof' && error.status === 400,
    );
    const without = await postForm(`${server.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: spa.clientId });
    assert.equal(without.status, 400);
    assert.equal(without.body['error'], 'invalid_dpop_proof');

    // The refused attempts left the token usable by the key it is bound to.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      { client_id: spa.clientId },
      await oauth.refreshTokenGrantRequest(as, { client_id: spa.clientId }, oauth.None(), tokens.refresh_token, { DPoP: key.handle, ...insecure }),
    );
    assert.equal(refreshed.token_type, 'dpop');
    assert.deepEqual(decodeJwt(refreshed.access_token)['cnf'], { jkt: key.jkt });
    const introspected = await postForm(
      `${server.url}/oauth/introspect`,
      { token: refreshed.refresh_token! },
      { authorization: basic(confidential.clientId, confidential.clientSecret) },
    );
    assert.deepEqual(introspected.body, { active: false }, 'another client learns nothing about it');
  });

  it("leaves a confidential client's refresh token unbound (RFC 9449 §5): it refreshes with a new key or as Bearer", async () => {
    const key = await dpopKey(confidential);
    const { tokens } = await codeFlowWithPar(confidential, key);
    const other = await dpopKey(confidential);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      { client_id: confidential.clientId },
      await oauth.refreshTokenGrantRequest(as, { client_id: confidential.clientId }, clientAuth(confidential), tokens.refresh_token!, {
        DPoP: other.handle,
        ...insecure,
      }),
    );
    assert.deepEqual(decodeJwt(refreshed.access_token)['cnf'], { jkt: other.jkt });
    const bearer = await oauth.processRefreshTokenResponse(
      as,
      { client_id: confidential.clientId },
      await oauth.refreshTokenGrantRequest(as, { client_id: confidential.clientId }, clientAuth(confidential), refreshed.refresh_token!, insecure),
    );
    assert.equal(bearer.token_type, 'bearer');
    assert.equal(decodeJwt(bearer.access_token)['cnf'], undefined);
  });

  it('binds the code to dpop_jkt (RFC 9449 §10): another key or no proof is refused, and the code stays good for its key', async () => {
    const key = await dpopKey(spa);
    const request = await codeRequest('openid');
    const callback = await approveAt(as, spa, authorizationUrl(as, spa.clientId, { ...request.params, dpop_jkt: key.jkt }), user, request.state);

    const other = await dpopKey(spa);
    for (const options of [{ DPoP: other.handle }, {}]) {
      const response = await redeemCode(as, spa, callback, request, options);
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { error: string }).error, 'invalid_dpop_proof');
    }
    const tokens = await redeemedTokens(as, spa, await redeemCode(as, spa, callback, request, { DPoP: key.handle }), request);
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });
  });

  it('refuses a malformed dpop_jkt at the redirect URI', async () => {
    const request = await codeRequest('openid');
    const url = authorizationUrl(as, spa.clientId, { ...request.params, dpop_jkt: 'not-a-thumbprint' });
    const page = await new FormBrowser(server.url).request(url.href);
    assert.equal(page.status, 303);
    const location = new URL(page.location!);
    assert.equal(location.origin + location.pathname, REDIRECT_URI);
    assert.equal(location.searchParams.get('error'), 'invalid_request');
  });

  it('the device flow with DPoP gives tokens only to polls by the bound key', async () => {
    const key = await dpopKey(spa);
    // oauth4webapi sends no proof with a device authorization request: its custom fetch adds one.
    const device = await oauth.processDeviceAuthorizationResponse(
      as,
      { client_id: spa.clientId },
      await oauth.deviceAuthorizationRequest(
        as,
        { client_id: spa.clientId },
        oauth.None(),
        { scope: OFFLINE },
        {
          ...insecure,
          [oauth.customFetch]: async (url: string, init: RequestInit) => {
            const headers = new Headers(init.headers);
            headers.set('dpop', await handProof(key.keys, { htu: url }));
            return fetch(url, { ...init, headers });
          },
        },
      ),
    );
    await new BrowserAt(server.url).decide(device.user_code, user, 'approve');

    const other = await dpopKey(spa);
    for (const options of [{ DPoP: other.handle, ...insecure }, insecure]) {
      const response = await oauth.deviceCodeGrantRequest(as, { client_id: spa.clientId }, oauth.None(), device.device_code, options);
      assert.equal(response.status, 400);
      assert.equal(((await response.json()) as { error: string }).error, 'invalid_dpop_proof');
    }
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      { client_id: spa.clientId },
      await oauth.deviceCodeGrantRequest(as, { client_id: spa.clientId }, oauth.None(), device.device_code, { DPoP: key.handle, ...insecure }),
    );
    assert.equal(tokens.token_type, 'dpop');
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });
    const again = await postForm(`${server.url}/oauth/token`, { grant_type: DEVICE_GRANT, device_code: device.device_code, client_id: spa.clientId });
    assert.equal(again.body['error'], 'invalid_dpop_proof', 'a bound device code stays bound after its tokens are issued');
  });

  it('the device flow without a proof at the start binds each token to the key of the poll that got it', async () => {
    const started = await postForm(
      `${server.url}/oauth/device/authorization`,
      { scope: 'openid' },
      { authorization: basic(confidential.clientId, confidential.clientSecret) },
    );
    assert.equal(started.status, 200);
    await new BrowserAt(server.url).decide(started.body['user_code'] as string, user, 'approve');
    const key = await dpopKey(confidential);
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      { client_id: confidential.clientId },
      await oauth.deviceCodeGrantRequest(as, { client_id: confidential.clientId }, clientAuth(confidential), started.body['device_code'] as string, {
        DPoP: key.handle,
        ...insecure,
      }),
    );
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });
  });
});

describe('a --require-dpop device client through openid-client and oauth4webapi, which send no proof at device authorization', () => {
  // Frozen, so that polls a second apart are not slow_down; advanced past the interval.
  const clock = clockAtStart();
  let server: TestServer;
  let as: oauth.AuthorizationServer;
  let device: TestClient;
  let user: TestUser;

  before(async () => {
    ({
      server,
      client: device,
      user,
    } = await startWithApp({
      server: { clock },
      client: {
        name: 'Living Room TV',
        public: true,
        grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN],
        scopes: ['openid', 'profile', 'offline_access'],
        requireDpop: true,
      },
      user: { username: 'ada' },
    }));
    as = await discover(server);
  });
  after(() => server.close());

  it('starts with openid-client: the device authorization request needs no proof', async () => {
    const config = await oidc.discovery(new URL(server.url), device.clientId, undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const started = await oidc.initiateDeviceAuthorization(config, { scope: OFFLINE });
    assert.match(started.user_code, /^[A-Z]{4}-[A-Z]{4}$/);
  });

  it('signs in with oauth4webapi: a poll without a proof is refused naming the token endpoint, the first with one binds the device code, and the tokens are bound to that key', async () => {
    const client = { client_id: device.clientId };
    const started = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope: OFFLINE }, insecure),
    );
    const key = await dpopKey(device);
    // RFC 9449 §5.2 dpop_bound_access_tokens: the token request without a proof is refused.
    const bare = await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, insecure);
    assert.equal(bare.status, 400);
    const refusal = (await bare.json()) as { error: string; error_description: string };
    assert.equal(refusal.error, 'invalid_dpop_proof');
    assert.match(refusal.error_description, new RegExp(`must send a DPoP proof .*\\(at ${server.url}/oauth/token\\)$`));

    await assert.rejects(
      oauth.processDeviceCodeResponse(
        as,
        client,
        await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, { DPoP: key.handle, ...insecure }),
      ),
      (error: unknown) => error instanceof oauth.ResponseBodyError && error.error === 'authorization_pending',
    );
    await new BrowserAt(server.url).decide(started.user_code, user, 'approve');
    clock.advance((started.interval ?? 5) * 1000);

    // Bound at that first poll: another key gets nothing, and changes nothing.
    const other = await dpopKey(device);
    const stolen = await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, { DPoP: other.handle, ...insecure });
    assert.equal(stolen.status, 400);
    assert.equal(((await stolen.json()) as { error: string }).error, 'invalid_dpop_proof');
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, oauth.None(), started.device_code, { DPoP: key.handle, ...insecure }),
    );
    assert.equal(tokens.token_type, 'dpop');
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: key.jkt });
    const userinfo = await oauth.userInfoRequest(as, client, tokens.access_token, { DPoP: key.handle, ...insecure });
    assert.equal((await oauth.processUserInfoResponse(as, client, oauth.skipSubjectCheck, userinfo)).sub, user.id);
  });

  it('a proof refused at device authorization names that endpoint', async () => {
    const key = await dpopKey(device);
    const wrongHtu = await handProof(key.keys, { htu: `${server.url}/oauth/token` });
    const result = await postForm(`${server.url}/oauth/device/authorization`, { scope: 'openid', client_id: device.clientId }, { dpop: wrongHtu });
    assert.deepEqual([result.status, result.body['error']], [400, 'invalid_dpop_proof']);
    assert.match(String(result.body['error_description']), new RegExp(`\\(at ${server.url}/oauth/device/authorization\\)$`));
  });
});

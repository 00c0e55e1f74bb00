/**
 * Claims about the person, through openid-client: the claims of `profile` and `email` come
 * from the UserInfo endpoint when an access token is issued (OIDC Core §5.4), the `claims`
 * request parameter asks for individual claims, in UserInfo or in the ID token (§5.5), and
 * discovery lists exactly what can be sent (OpenID Discovery §3 `claims_supported`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { text } from './helpers/device.ts';
import { discover } from './helpers/lifecycle.ts';
import { REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

describe('claims: scope claims in UserInfo (OIDC Core §5.4) and the claims parameter (§5.5)', () => {
  let server: TestServer;
  let narrow: TestClient;
  let user: TestUser;
  let config: oidc.Configuration;

  before(async () => {
    ({ server, user, config } = await startWithApp({
      client: { name: 'Recipe Box', scopes: ['openid', 'profile', 'email'] },
      user: {
        username: 'ada',
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        profile: { givenName: 'Ada', familyName: 'Lovelace', emailVerified: true, locale: 'en-GB', zoneinfo: 'Europe/London', picture: 'https://example.com/ada.png' },
      },
    }));
    narrow = await server.addClient({ name: 'Badge Reader', scopes: ['openid'] });
  });
  after(() => server.close());

  /** The authorization URL of a code flow with `extra` parameters, and what redeeming its code needs. */
  async function request(configuration: oidc.Configuration, scope: string, extra: Record<string, string> = {}) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: REDIRECT_URI, scope, state, nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
    });
    return { url, verifier, state, nonce };
  }

  /** The person signs in and approves; the client redeems the code. */
  async function signIn(configuration: oidc.Configuration, scope: string, extra: Record<string, string> = {}) {
    const asked = await request(configuration, scope, extra);
    const page = await new FormBrowser(server.url).authorize(asked.url.href, user);
    return oidc.authorizationCodeGrant(configuration, new URL(page.location!), {
      pkceCodeVerifier: asked.verifier, expectedState: asked.state, expectedNonce: asked.nonce, idTokenExpected: true,
    });
  }

  const claims = (value: unknown) => ({ claims: JSON.stringify(value) });

  it('puts the claims of profile and email in UserInfo, not in the ID token, when an access token is issued (§5.4)', async () => {
    const tokens = await signIn(config, 'openid profile email');
    const idToken = tokens.claims()!;
    for (const claim of ['name', 'given_name', 'preferred_username', 'email', 'email_verified', 'updated_at']) assert.equal(idToken[claim], undefined, claim);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    const { updated_at: updatedAt, ...rest } = userinfo;
    assert.deepEqual(rest, {
      sub: user.id, name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace', preferred_username: 'ada',
      picture: 'https://example.com/ada.png', locale: 'en-GB', zoneinfo: 'Europe/London', email: 'ada@example.com', email_verified: true,
    });
    assert.equal(typeof updatedAt, 'number');
    assert.ok(Math.abs((updatedAt as number) - Date.now() / 1000) < 600, 'seconds since the epoch (§5.1)');
  });

  it('puts the claims asked for in the id_token member of claims in the ID token, and only those (§5.5)', async () => {
    const tokens = await signIn(config, 'openid profile email', claims({ id_token: { email: null, name: { essential: true } } }));
    const idToken = tokens.claims()!;
    assert.equal(idToken['email'], 'ada@example.com');
    assert.equal(idToken['name'], 'Ada Lovelace');
    assert.equal(idToken['given_name'], undefined);
    assert.equal(idToken['email_verified'], undefined);
  });

  it('releases a claim asked for alone in the userinfo member once the person approves its scope, essential or not (§5.5.1)', async () => {
    const asked = await request(config, 'openid', claims({ userinfo: { name: { essential: true } } }));
    const browser = new FormBrowser(server.url);
    const approval = await browser.signIn(await browser.follow(await browser.request(`${asked.url.href}&prompt=consent`)), user);
    assert.match(text(approval), /See your name, username, picture, language and time zone/, 'the person is asked for the scope of the name');
    const tokens = await signIn(config, 'openid', claims({ userinfo: { name: { essential: true } } }));
    assert.equal(tokens.scope, 'openid profile');
    assert.equal(tokens.claims()!['name'], undefined, 'asked for in userinfo only');
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.id))['name'], 'Ada Lovelace');
  });

  it('ignores claims it does not keep, and claims of a scope the client is not registered for', async () => {
    const badge = await discover(server, narrow);
    const tokens = await signIn(badge, 'openid', claims({ userinfo: { email: { essential: true }, nickname: null }, id_token: { birthdate: null, acr: { values: ['x'] } } }));
    assert.equal(tokens.scope, 'openid');
    assert.equal(tokens.claims()!['email'], undefined);
    assert.deepEqual(await oidc.fetchUserInfo(badge, tokens.access_token, user.id), { sub: user.id });
  });

  it('answers a claims parameter that is not a JSON object of objects with invalid_request at the redirect URI (§5.5)', async () => {
    for (const value of ['{not json', '"name"', '[]', '{"userinfo": ["name"]}', '{"id_token": {"email": true}}']) {
      const asked = await request(config, 'openid', { claims: value });
      const page = await new FormBrowser(server.url).request(asked.url.href);
      assert.equal(page.status, 303, value);
      const location = new URL(page.location!);
      assert.equal(location.origin + location.pathname, REDIRECT_URI, value);
      assert.equal(location.searchParams.get('error'), 'invalid_request', value);
      assert.equal(location.searchParams.get('state'), asked.state, value);
      assert.equal(location.searchParams.get('iss'), server.url, value);
    }
  });

  it('publishes claims_parameter_supported and exactly the claims it can send', async () => {
    const metadata = config.serverMetadata();
    assert.equal(metadata.claims_parameter_supported, true);
    assert.deepEqual(metadata.claims_supported, [
      'sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'azp', 'sid', 'amr', 'acr',
      'name', 'given_name', 'family_name', 'preferred_username', 'picture', 'locale', 'zoneinfo', 'updated_at', 'email', 'email_verified', 'groups',
    ]);
  });
});

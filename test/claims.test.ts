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
import { discover, withRefresh } from './helpers/lifecycle.ts';
import { REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, startWithApp, redeemAttempt } from './helpers/fixtures.ts';
import { ADA_CLAIMS } from './store/fixtures.ts';

describe('claims: scope claims in UserInfo (OIDC Core §5.4) and the claims parameter (§5.5)', () => {
  let server: TestServer, narrow: TestClient, every: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, user, config } = await startWithApp({
      client: { name: 'Recipe Box', scopes: ['openid', 'profile', 'email'] },
      user: {
        username: 'ada',
        name: 'Ada Lovelace',
        email: 'ada@example.com',
        profile: ADA_CLAIMS,
      },
    }));
    narrow = await server.addClient({ name: 'Badge Reader', scopes: ['openid'] });
    every = await server.addClient({ name: 'Post Office', scopes: ['openid', 'profile', 'email', 'address', 'phone'] });
  });
  after(() => server.close());

  /** The authorization URL of a code flow with `extra` parameters, and what redeeming its code needs. */
  async function request(configuration: oidc.Configuration, scope: string, extra: Record<string, string> = {}) {
    const { url, verifier, state, nonce } = await authorizationAttempt(configuration, { scope, ...extra });
    return { url, verifier, state, nonce };
  }

  /** The person signs in and approves; the client redeems the code. */
  async function signIn(configuration: oidc.Configuration, scope: string, extra: Record<string, string> = {}) {
    const asked = await request(configuration, scope, extra);
    const page = await new FormBrowser(server.url).authorize(asked.url.href, user);
    return redeemAttempt(configuration, asked, page.location!);
  }

  const claims = (value: unknown) => ({ claims: JSON.stringify(value) });

  it('puts the claims of profile and email in UserInfo, not in the ID token, when an access token is issued (§5.4)', async () => {
    const tokens = await signIn(config, 'openid profile email');
    const idToken = tokens.claims()!;
    for (const claim of ['name', 'given_name', 'preferred_username', 'email', 'email_verified', 'updated_at']) assert.equal(idToken[claim], undefined, claim);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    const { updated_at: updatedAt, ...rest } = userinfo;
    assert.deepEqual(rest, {
      sub: user.id,
      name: 'Ada Lovelace',
      given_name: 'Ada',
      family_name: 'Lovelace',
      middle_name: 'Augusta',
      nickname: 'Ada',
      preferred_username: 'ada',
      profile: 'https://example.com/ada',
      picture: 'https://example.com/ada.png',
      website: 'https://ada.example',
      gender: 'female',
      birthdate: '1815-12-10',
      locale: 'en-GB',
      zoneinfo: 'Europe/London',
      email: 'ada@example.com',
      email_verified: true,
    });
    assert.equal(typeof updatedAt, 'number');
    assert.ok(Math.abs((updatedAt as number) - Date.now() / 1000) < 600, 'seconds since the epoch (§5.1)');
  });

  it('puts the claims of address and phone in UserInfo with their scopes, and none of them without (§5.4)', async () => {
    const office = await discover(server, every);
    const tokens = await signIn(office, 'openid address phone');
    assert.equal(tokens.scope, 'openid address phone');
    const idToken = tokens.claims()!;
    for (const claim of ['address', 'phone_number', 'phone_number_verified'])
      assert.equal(idToken[claim], undefined, `${claim}: UserInfo's, an access token being issued`);
    assert.deepEqual(await oidc.fetchUserInfo(office, tokens.access_token, user.id), {
      sub: user.id,
      address: { street_address: '12 St James’s Square\nFlat 1', locality: 'London', postal_code: 'SW1Y 4LB', country: 'United Kingdom' },
      phone_number: '+44 20 7946 0958',
      phone_number_verified: true,
    });
    const without = await signIn(office, 'openid profile email');
    const claims = await oidc.fetchUserInfo(office, without.access_token, user.id);
    for (const claim of ['address', 'phone_number', 'phone_number_verified']) assert.equal(claims[claim], undefined, `${claim} without its scope`);
    assert.equal(claims['birthdate'], '1815-12-10', 'profile releases the rest of §5.1');
  });

  it("describes the address and phone scopes on the consent page, in the reader's language", async () => {
    const office = await discover(server, every);
    const browser = new FormBrowser(server.url);
    const first = await request(office, 'openid address phone');
    const english = await browser.signIn(await browser.follow(await browser.request(`${first.url.href}&prompt=consent`)), user);
    assert.ok(text(english).includes('See your postal address') && text(english).includes('See your phone number'), text(english));
    // Signed in now: the consent page again, in other languages.
    for (const [language, address, phone] of [
      ['de', 'Ihre Postanschrift sehen', 'Ihre Telefonnummer sehen'],
      ['ja', 'あなたの住所を見る', 'あなたの電話番号を見る'],
      ['ar', 'الاطلاع على عنوانك البريدي', 'الاطلاع على رقم هاتفك'],
    ] as const) {
      const asked = await request(office, 'openid address phone', { ui_locales: language, prompt: 'consent' });
      const page = await browser.follow(await browser.request(asked.url.href));
      assert.ok(text(page).includes(address) && text(page).includes(phone), `${language}: ${text(page)}`);
    }
  });

  it('puts the claims asked for in the id_token member of claims in the ID token, and only those (§5.5)', async () => {
    const tokens = await signIn(config, 'openid profile email', claims({ id_token: { email: null, name: { essential: true } } }));
    const idToken = tokens.claims()!;
    assert.equal(idToken['email'], 'ada@example.com');
    assert.equal(idToken['name'], 'Ada Lovelace');
    assert.equal(idToken['given_name'], undefined);
    assert.equal(idToken['email_verified'], undefined);
  });

  it('releases a claim asked for alone in the userinfo member, and no other of its scope, once the person approves that scope, essential or not (§5.5.1)', async () => {
    const asked = await request(config, 'openid', claims({ userinfo: { name: { essential: true } } }));
    const browser = new FormBrowser(server.url);
    const approval = await browser.signIn(await browser.follow(await browser.request(`${asked.url.href}&prompt=consent`)), user);
    assert.match(
      text(approval),
      /See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone/,
      'the person is asked for the scope of the name',
    );
    const tokens = await signIn(config, 'openid', claims({ userinfo: { name: { essential: true } } }));
    assert.equal(tokens.scope, 'openid', 'the scope asked for, not the scope of the name');
    assert.equal(tokens.claims()!['name'], undefined, 'asked for in userinfo only');
    assert.deepEqual(await oidc.fetchUserInfo(config, tokens.access_token, user.id), { sub: user.id, name: 'Ada Lovelace' });
  });

  it('releases a claim asked for alone in the id_token member in the ID token only, and no other of its scope (§5.5)', async () => {
    const tokens = await signIn(config, 'openid', claims({ id_token: { name: null } }));
    assert.equal(tokens.scope, 'openid');
    const idToken = tokens.claims()!;
    assert.equal(idToken['name'], 'Ada Lovelace');
    for (const claim of ['given_name', 'picture', 'preferred_username', 'email', 'email_verified']) assert.equal(idToken[claim], undefined, claim);
    assert.deepEqual(await oidc.fetchUserInfo(config, tokens.access_token, user.id), { sub: user.id }, 'asked for in the ID token only');
  });

  it('keeps the claims asked for by name, and only those, when the tokens are refreshed (OIDC Core §12.2)', async () => {
    const reader = await discover(
      server,
      await server.addClient({ name: 'News Reader', scopes: ['openid', 'profile', 'email', 'offline_access'], grantTypes: withRefresh() }),
    );
    const tokens = await signIn(reader, 'openid offline_access', claims({ userinfo: { name: null }, id_token: { email: { essential: true } } }));
    const refreshed = await oidc.refreshTokenGrant(reader, tokens.refresh_token!);
    for (const [when, issued] of [
      ['first', tokens],
      ['refreshed', refreshed],
    ] as const) {
      assert.equal(issued.scope, 'openid offline_access', when);
      const idToken = issued.claims()!;
      assert.equal(idToken['email'], 'ada@example.com', when);
      for (const claim of ['name', 'email_verified', 'picture']) assert.equal(idToken[claim], undefined, `${when}: ${claim}`);
      assert.deepEqual(await oidc.fetchUserInfo(reader, issued.access_token, user.id), { sub: user.id, name: 'Ada Lovelace' }, when);
    }
  });

  it('ignores claims it does not keep, and claims of a scope the client is not registered for', async () => {
    const badge = await discover(server, narrow);
    const tokens = await signIn(
      badge,
      'openid',
      claims({ userinfo: { email: { essential: true }, nickname: null }, id_token: { birthdate: null, acr: { values: ['x'] } } }),
    );
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
      'sub',
      'iss',
      'aud',
      'exp',
      'iat',
      'auth_time',
      'nonce',
      'azp',
      'sid',
      'amr',
      'acr',
      'name',
      'family_name',
      'given_name',
      'middle_name',
      'nickname',
      'preferred_username',
      'profile',
      'picture',
      'website',
      'gender',
      'birthdate',
      'zoneinfo',
      'locale',
      'updated_at',
      'email',
      'email_verified',
      'address',
      'phone_number',
      'phone_number_verified',
      'groups',
      'org_id',
      'org_name',
    ]);
    for (const scope of ['openid', 'profile', 'email', 'address', 'phone'])
      assert.ok(metadata.scopes_supported?.includes(scope), `scopes_supported has ${scope}`);
  });
});

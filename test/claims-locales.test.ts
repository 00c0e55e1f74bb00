/**
 * Names in the person's languages (OIDC Core §5.2): an operator keeps them through the admin
 * API and the `tessera user` command; a request's `claims_locales` brings `name#<tag>` into
 * the ID token and UserInfo, read through openid-client, and a refreshed ID token keeps them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { discover, withRefresh } from './helpers/lifecycle.ts';
import { startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { adminToken, authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';

describe('claims_locales: names in other languages and scripts (OIDC Core §5.2)', () => {
  let server: TestServer;
  let client: TestClient;
  let config: oidc.Configuration;
  let admin: string;
  let user: TestUser;

  async function call(method: string, path: string, body?: unknown) {
    // A change names the version it was made against, as the admin API asks.
    const etag =
      method === 'PATCH' ? (await fetch(`${server.url}/admin/v1${path}`, { headers: { authorization: `Bearer ${admin}` } })).headers.get('etag') : null;
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${admin}`,
        ...(etag ? { 'if-match': etag } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  before(async () => {
    server = await startTestServer();
    client = await server.addClient({ name: 'Recipe Box', scopes: ['openid', 'profile', 'offline_access'], grantTypes: withRefresh() });
    config = await discover(server, client);
    ({ token: admin } = await adminToken(server, 'admin:users', 'CI'));
    const password = 'taro has a long password';
    const created = await call('POST', '/users', {
      username: 'taro',
      password,
      name: 'Taro Yamada',
      given_name: 'Taro',
      family_name: 'Yamada',
      localized_names: { 'ja-kana-jp': { name: 'ヤマダ タロウ', family_name: 'ヤマダ' } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    user = { id: created.body['sub'] as string, username: 'taro', password };
  });
  after(() => server.close());

  /** The person signs in and approves; the client redeems the code. */
  async function signIn(extra: Record<string, string>) {
    const attempt = await authorizationAttempt(config, { scope: 'openid profile offline_access', prompt: 'consent', ...extra });
    const page = await new FormBrowser(server.url).authorize(attempt.url.href, user);
    return redeemAttempt(config, attempt, page.location!);
  }

  const tagged = (claims: Record<string, unknown>) => Object.fromEntries(Object.entries(claims).filter(([claim]) => claim.includes('#')));
  const inIdToken = { claims: JSON.stringify({ id_token: { name: null, family_name: null } }) };

  it("keeps names set through the admin API, in canonical case, and lays the command line's over them", async () => {
    assert.deepEqual((await call('GET', '/users/taro')).body['localized_names'], { 'ja-Kana-JP': { name: 'ヤマダ タロウ', family_name: 'ヤマダ' } });
    const env = { TESSERA_DATABASE: server.config.database };
    const run = await runTessera(
      ['user', 'update', 'taro', '--name-in', 'ja-Hani-JP=山田 太郎', '--family-name-in', 'ja-Hani-JP=山田', '--name-in', 'de=Taro Yamada (de)'],
      env,
    );
    assert.equal(run.code, 0, run.stderr);
    const removed = await runTessera(['user', 'update', 'taro', '--name-in', 'de='], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual((await call('GET', '/users/taro')).body['localized_names'], {
      'ja-Kana-JP': { name: 'ヤマダ タロウ', family_name: 'ヤマダ' },
      'ja-Hani-JP': { name: '山田 太郎', family_name: '山田' },
    });
  });

  it('refuses a malformed language tag or an unknown claim, from the admin API and the command line', async () => {
    const badTag = await call('PATCH', '/users/taro', { localized_names: { 'not a tag': { name: 'x' } } });
    assert.equal(badTag.status, 400);
    assert.match(JSON.stringify(badTag.body), /BCP 47/);
    assert.equal((await call('PATCH', '/users/taro', { localized_names: { ja: { nickname: 'x' } } })).status, 400);
    const env = { TESSERA_DATABASE: server.config.database };
    const run = await runTessera(['user', 'update', 'taro', '--name-in', 'ヤマダ'], env);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /TAG=NAME/);
  });

  it('puts the names of the languages asked for beside the plain ones, in the ID token, in UserInfo and after a refresh', async () => {
    const tokens = await signIn({ claims_locales: 'ja fr', ...inIdToken });
    const idToken = tokens.claims()!;
    assert.equal(idToken['name'], 'Taro Yamada', 'the plain name stays the default');
    assert.deepEqual(tagged(idToken), {
      'name#ja-Kana-JP': 'ヤマダ タロウ',
      'family_name#ja-Kana-JP': 'ヤマダ',
      'name#ja-Hani-JP': '山田 太郎',
      'family_name#ja-Hani-JP': '山田',
    });
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    assert.equal(userinfo['given_name'], 'Taro');
    assert.deepEqual(tagged(userinfo), tagged(idToken));
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.deepEqual(tagged(refreshed.claims()!), tagged(idToken), 'OIDC Core §12.2: the refreshed ID token names the person as the first did');
  });

  it('matches by language prefix: ja-Kana-JP asks for that script alone', async () => {
    const tokens = await signIn({ claims_locales: 'ja-Kana-JP', ...inIdToken });
    assert.deepEqual(tagged(tokens.claims()!), { 'name#ja-Kana-JP': 'ヤマダ タロウ', 'family_name#ja-Kana-JP': 'ヤマダ' });
  });

  it('sends no tagged names without claims_locales, for a language the person has none in, or for a malformed one', async () => {
    for (const extra of [{}, { claims_locales: 'de fr' }, { claims_locales: '!!! ja_JP' }] as Record<string, string>[]) {
      const tokens = await signIn({ ...extra, ...inIdToken });
      assert.deepEqual(tagged(tokens.claims()!), {}, JSON.stringify(extra));
      assert.equal(tokens.claims()!['name'], 'Taro Yamada');
      assert.deepEqual(tagged(await oidc.fetchUserInfo(config, tokens.access_token, user.id)), {}, JSON.stringify(extra));
    }
  });

  it('publishes claims_locales_supported: the languages offered', () => {
    assert.deepEqual(config.serverMetadata()['claims_locales_supported'], server.config.site.locales);
  });
});

/**
 * Protected APIs: resources registered with `tessera resource add`, asked for
 * with RFC 8707 resource indicators through openid-client, served RFC 9068 access tokens that
 * a resource server written with jose verifies, and introspected by that resource server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { runTessera } from './helpers/cli.ts';
import { FormBrowser } from './helpers/browser.ts';
import { addPhotoLibrary, PHOTO_LIBRARY as PHOTOS, pkceRequest } from './helpers/fixtures.ts';
import { discover } from './helpers/lifecycle.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

const CALENDAR = 'https://calendar.example.com/v1';

interface Registered {
  readonly identifier: string;
  readonly introspection_secret?: string;
}

/**
 * A resource server for one API, as docs/apis.md writes it: verify the JWT against the
 * published keys, checking `typ`, `iss`, `aud` and the scope it needs.
 */
function resourceServer(issuer: string, api: string) {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
  return async (token: string, needed: string) => {
    const { payload } = await jwtVerify(token, jwks, { issuer, audience: api, typ: 'at+jwt' });
    if (!String(payload['scope']).split(' ').includes(needed)) throw new Error(`missing scope ${needed}`);
    return payload;
  };
}

describe('protected APIs: resource indicators (RFC 8707) and JWT access tokens (RFC 9068)', () => {
  let server: TestServer;
  let client: TestClient;
  let user: TestUser;
  let config: oidc.Configuration;
  let env: Record<string, string>;
  let photosSecret: string;

  const register = async (args: string[]): Promise<Registered> => {
    const result = await runTessera(['resource', 'add', ...args, '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as Registered;
  };

  before(async () => {
    server = await startTestServer();
    env = { TESSERA_DATABASE: server.config.database };
    const photos = await addPhotoLibrary(server, ['--access-token-ttl', '600', '--introspection-secret']);
    photosSecret = photos.introspection_secret!;
    await register(['--identifier', CALENDAR, '--name', 'Calendar', '--scope', 'calendar:read=See your calendar']);
    client = await server.addClient({
      name: 'Photo Printer',
      scopes: ['openid', 'profile', 'offline_access', 'photos:read', 'photos:write', 'calendar:read'],
      grantTypes: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    });
    user = await server.addUser({ username: 'grace' });
    config = await discover(server, client);
  });
  after(() => server.close());

  /** The authorization request with `extra` parameters (repeatable); the browser signs in and approves. */
  async function authorize(scope: string, resources: readonly string[] = []) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const params = new URLSearchParams({
      redirect_uri: REDIRECT_URI,
      scope,
      state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    for (const resource of resources) params.append('resource', resource);
    const url = oidc.buildAuthorizationUrl(config, params);
    return { url, verifier, state };
  }

  async function callback(url: URL): Promise<URL> {
    const browser = new FormBrowser(server.url);
    const page = await browser.authorize(url.href, user);
    assert.ok(page.location?.startsWith(REDIRECT_URI), `${page.status} ${page.location} ${page.html.slice(0, 300)}`);
    return new URL(page.location!);
  }

  /** A code flow through openid-client, the token request naming `tokenResource`. */
  async function codeFlow(scope: string, resources: readonly string[], tokenResource?: string) {
    const start = await authorize(scope, resources);
    return oidc.authorizationCodeGrant(
      config,
      await callback(start.url),
      { pkceCodeVerifier: start.verifier, expectedState: start.state },
      tokenResource === undefined ? undefined : { resource: tokenResource },
    );
  }

  const introspect = (token: string, authorization: string) => postForm(`${server.url}/oauth/introspect`, { token }, { authorization });

  it('issues an at+jwt access token for the API asked for, which a jose resource server accepts, and another API refuses', async () => {
    const tokens = await codeFlow('openid photos:read', [PHOTOS], PHOTOS);
    assert.equal(tokens.scope, 'openid photos:read');
    assert.equal(tokens.expires_in, 600, "the API's own lifetime");
    assert.equal(decodeProtectedHeader(tokens.access_token).typ, 'at+jwt');
    const claims = decodeJwt(tokens.access_token);
    assert.equal(claims.aud, PHOTOS);
    assert.equal(claims.iss, server.url);
    assert.equal(claims['client_id'], client.clientId);
    assert.equal(claims.sub, user.id);
    assert.equal(claims.exp! - claims.iat!, 600);
    assert.equal(typeof claims.jti, 'string');
    assert.equal(typeof claims['auth_time'], 'number');

    const photos = resourceServer(server.url, PHOTOS);
    const calendar = resourceServer(server.url, CALENDAR);
    assert.equal((await photos(tokens.access_token, 'photos:read')).sub, user.id);
    await assert.rejects(calendar(tokens.access_token, 'photos:read'), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
    await assert.rejects(photos(tokens.access_token, 'photos:write'), /missing scope photos:write/);
    // RFC 9068 §4: UserInfo is not the API the token is for, openid scope or not.
    const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(userinfo.status, 401);
    assert.match(
      userinfo.headers.get('www-authenticate') ?? '',
      /^Bearer realm="tessera", error="invalid_token", error_description="this access token is for another audience/,
    );
  });

  it('without resource, a request for one API’s scopes means that API', async () => {
    const tokens = await codeFlow('calendar:read', []);
    assert.equal(tokens.scope, 'calendar:read');
    const claims = decodeJwt(tokens.access_token);
    assert.equal(claims.aud, CALENDAR);
    assert.equal(claims.exp! - claims.iat!, server.config.lifetimes.accessToken, 'the server default lifetime');
    await resourceServer(server.url, CALENDAR)(tokens.access_token, 'calendar:read');
  });

  it('lets the resource server introspect tokens for its API only, with HTTP Basic as its identifier (RFC 7662)', async () => {
    const photosToken = (await codeFlow('openid photos:read', [PHOTOS])).access_token;
    const calendarToken = (await codeFlow('openid calendar:read', [CALENDAR])).access_token;
    const asPhotos = basic(PHOTOS, photosSecret);

    const mine = await introspect(photosToken, asPhotos);
    assert.equal(mine.status, 200);
    assert.equal(mine.body['active'], true);
    assert.equal(mine.body['aud'], PHOTOS);
    assert.equal(mine.body['scope'], 'openid photos:read');
    assert.equal(mine.body['client_id'], client.clientId);
    assert.equal(mine.body['sub'], user.id);
    assert.equal(mine.headers.get('cache-control'), 'no-store');

    assert.deepEqual((await introspect(calendarToken, asPhotos)).body, { active: false });
    const wrong = await introspect(photosToken, basic(PHOTOS, 'not-the-secret'));
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body['error'], 'invalid_client');
    // An API registered without --introspection-secret cannot introspect.
    assert.equal((await introspect(calendarToken, basic(CALENDAR, ''))).status, 401);
    assert.equal((await introspect(calendarToken, basic(CALENDAR, 'x'))).body['error'], 'invalid_client');
  });

  describe('refusals', () => {
    async function authorizeError(scope: string, resources: readonly string[]) {
      const start = await authorize(scope, resources);
      // Refused before any sign-in: straight back to the client.
      const page = await new FormBrowser(server.url).request(start.url.href);
      assert.equal(page.status, 303, page.html.slice(0, 300));
      const location = new URL(page.location!);
      assert.equal(`${location.origin}${location.pathname}`, REDIRECT_URI);
      assert.equal(location.searchParams.get('state'), start.state);
      assert.equal(location.searchParams.get('iss'), server.url);
      return location.searchParams.get('error');
    }

    it('answers an authorization request at the redirect URI: invalid_target for an unknown or malformed resource, invalid_scope for a scope of another API', async () => {
      assert.equal(await authorizeError('openid photos:read', ['https://unknown.example.com']), 'invalid_target');
      assert.equal(await authorizeError('openid photos:read', [`${PHOTOS}#fragment`]), 'invalid_target');
      assert.equal(await authorizeError('openid photos:read', ['not a uri']), 'invalid_target');
      assert.equal(await authorizeError('openid calendar:read', [PHOTOS]), 'invalid_scope');
      assert.equal(await authorizeError('openid', [PHOTOS]), 'invalid_scope');
      assert.equal(await authorizeError('openid photos:delete', []), 'invalid_scope');
    });

    it('answers the device authorization request with JSON errors', async () => {
      const device = (body: string) =>
        postForm(`${server.url}/oauth/device/authorization`, body, { authorization: basic(client.clientId, client.clientSecret) });
      const unknown = await device(`scope=photos:read&resource=${encodeURIComponent('https://unknown.example.com')}`);
      assert.equal(unknown.status, 400);
      assert.equal(unknown.body['error'], 'invalid_target');
      const elsewhere = await device(`scope=calendar:read&resource=${encodeURIComponent(PHOTOS)}`);
      assert.equal(elsewhere.status, 400);
      assert.equal(elsewhere.body['error'], 'invalid_scope');
      const both = await device(`scope=photos:read+calendar:read&resource=${encodeURIComponent(PHOTOS)}&resource=${encodeURIComponent(CALENDAR)}`);
      assert.equal(both.status, 200, JSON.stringify(both.body));
    });

    it('refuses a token request for a resource the code does not cover with invalid_target, and the code still works with the right one', async () => {
      const start = await authorize('openid photos:read', [PHOTOS]);
      const code = (await callback(start.url)).searchParams.get('code')!;
      const exchange = (resource: string) =>
        postForm(
          `${server.url}/oauth/token`,
          { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier, resource },
          {
            authorization: basic(client.clientId, client.clientSecret),
          },
        );
      const refused = await exchange(CALENDAR);
      assert.equal(refused.status, 400);
      assert.equal(refused.body['error'], 'invalid_target');
      const granted = await exchange(PHOTOS);
      assert.equal(granted.status, 200, JSON.stringify(granted.body));
      assert.equal(decodeJwt(granted.body['access_token'] as string).aud, PHOTOS);
    });
  });

  describe('refresh: narrow, never widen', () => {
    it('covers two APIs with one approval, one token for each, and refuses what was not granted', async () => {
      const tokens = await codeFlow('openid offline_access photos:read photos:write calendar:read', [PHOTOS, CALENDAR], PHOTOS);
      assert.equal(tokens.scope, 'openid offline_access photos:read photos:write');
      assert.equal(decodeJwt(tokens.access_token).aud, PHOTOS);
      let refreshToken = tokens.refresh_token!;
      const refresh = async (extra: Record<string, string>) => {
        const result = await postForm(
          `${server.url}/oauth/token`,
          { grant_type: 'refresh_token', refresh_token: refreshToken, ...extra },
          {
            authorization: basic(client.clientId, client.clientSecret),
          },
        );
        if (result.status === 200) refreshToken = result.body['refresh_token'] as string;
        return result;
      };

      const calendar = await refresh({ resource: CALENDAR });
      assert.equal(calendar.status, 200, JSON.stringify(calendar.body));
      assert.equal(calendar.body['scope'], 'openid offline_access calendar:read');
      assert.equal(decodeJwt(calendar.body['access_token'] as string).aud, CALENDAR);

      const narrowed = await refresh({ scope: 'photos:read' });
      assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
      assert.equal(narrowed.body['scope'], 'photos:read');
      assert.equal(decodeJwt(narrowed.body['access_token'] as string).aud, PHOTOS);

      const cases: [Record<string, string>, string][] = [
        [{}, 'invalid_target'], // two APIs: which one?
        [{ resource: 'https://unknown.example.com' }, 'invalid_target'],
        [{ resource: `${PHOTOS}#x` }, 'invalid_target'],
        [{ scope: 'photos:read calendar:read' }, 'invalid_scope'],
        [{ scope: 'calendar:read', resource: PHOTOS }, 'invalid_scope'],
        [{ scope: 'profile photos:read' }, 'invalid_scope'], // never granted
      ];
      for (const [extra, error] of cases) {
        const refused = await refresh(extra);
        assert.equal(refused.status, 400, JSON.stringify(extra));
        assert.equal(refused.body['error'], error, `${JSON.stringify(extra)}: ${JSON.stringify(refused.body)}`);
      }
      // A refused refresh leaves the refresh token usable.
      assert.equal((await refresh({ resource: PHOTOS })).status, 200);
    });
  });

  it('lists the API scopes in discovery', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as { scopes_supported: string[] };
    assert.deepEqual(metadata.scopes_supported, [
      'openid',
      'profile',
      'email',
      'address',
      'phone',
      'offline_access',
      'groups',
      'organization',
      'photos:read',
      'photos:write',
      'calendar:read',
    ]);
  });
});

describe('removing an API ends the access granted to it at once', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('refuses refresh and introspection for it, and registering it again does not revive old grants', async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    const add = () =>
      runTessera(
        ['resource', 'add', '--identifier', PHOTOS, '--name', 'Photo Library', '--scope', 'photos:read=See your photos', '--introspection-secret', '--json'],
        env,
      );
    const added = await add();
    assert.equal(added.code, 0, added.stderr);
    const secret = (JSON.parse(added.stdout) as Registered).introspection_secret!;
    const client = await server.addClient({ scopes: ['openid', 'offline_access', 'photos:read'], grantTypes: ['authorization_code', 'refresh_token'] });
    const user = await server.addUser();
    const config = await discover(server, client);
    const { url, verifier } = await pkceRequest(config, { scope: 'openid offline_access photos:read', resource: PHOTOS, state: 's' });
    const browser = new FormBrowser(server.url);
    const page = await browser.authorize(url.href, user);
    const tokens = await oidc.authorizationCodeGrant(config, new URL(page.location!), { pkceCodeVerifier: verifier, expectedState: 's' });
    assert.equal(
      (await postForm(`${server.url}/oauth/introspect`, { token: tokens.access_token }, { authorization: basic(PHOTOS, secret) })).body['active'],
      true,
    );

    const removed = await runTessera(['resource', 'remove', PHOTOS], env);
    assert.equal(removed.code, 0, removed.stderr);

    const asClient = { authorization: basic(client.clientId, client.clientSecret) };
    assert.deepEqual((await postForm(`${server.url}/oauth/introspect`, { token: tokens.access_token }, asClient)).body, { active: false });
    const userinfo = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(userinfo.status, 401);
    for (const extra of [{}, { resource: PHOTOS }] as Record<string, string>[]) {
      const refused = await postForm(`${server.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, ...extra }, asClient);
      assert.equal(refused.status, 400);
      assert.equal(refused.body['error'], 'invalid_target', JSON.stringify(refused.body));
    }

    // Registered again, it is a new API: the old approval did not cover it.
    const again = await add();
    assert.equal(again.code, 0, again.stderr);
    const newSecret = (JSON.parse(again.stdout) as Registered).introspection_secret!;
    assert.deepEqual((await postForm(`${server.url}/oauth/introspect`, { token: tokens.access_token }, { authorization: basic(PHOTOS, newSecret) })).body, {
      active: false,
    });
    const stillRefused = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, resource: PHOTOS },
      asClient,
    );
    assert.equal(stillRefused.body['error'], 'invalid_target');

    // Nor does the remembered consent, nor the client's registration: both named the scope of
    // the API removed, not the API that has the name now.
    assert.deepEqual((await server.store.clients.get(client.clientId))?.scopes, ['openid', 'offline_access']);
    const allowed = await runTessera(['client', 'update', client.clientId, '--scope', 'openid offline_access photos:read'], env);
    assert.equal(allowed.code, 0, allowed.stderr);
    const asked = await pkceRequest(config, { scope: 'openid photos:read', resource: PHOTOS, state: 't' });
    const approval = await browser.request(asked.url.href);
    assert.equal(approval.status, 200, `the approval page, not ${approval.status} ${approval.location ?? ''}`);
    assert.match(approval.html, />Approve<\/button>/);
    assert.match(approval.html, /See your photos/);
    // A sign-in the consent still covers renews it: the old refresh token stays without the new API.
    const covered = await browser.request((await pkceRequest(config, { scope: 'openid', state: 'u' })).url.href);
    assert.equal(covered.status, 303);
    assert.ok(new URL(covered.location!).searchParams.has('code'), covered.location!);
    const afterRenewal = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, resource: PHOTOS },
      asClient,
    );
    assert.equal(afterRenewal.body['error'], 'invalid_target', JSON.stringify(afterRenewal.body));
  });
});

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { ManualClock } from '../src/core/clock.ts';
import { hashSecret } from '../src/core/crypto.ts';

import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { deviceSignIn, discover, OFFLINE_SCOPES, refreshRaw, signIn, signInRaw, withRefresh } from './helpers/lifecycle.ts';
import { FormBrowser } from './helpers/browser.ts';
import { freshPostgresDatabase, postgresSkip } from './helpers/postgres.ts';
import { basic, postForm, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt, startWithApp } from './helpers/fixtures.ts';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

/** openid-client's error for an OAuth error response, by its code. */
function oauthError(code: string) {
  return (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === code;
}

describe('refresh tokens (RFC 6749 §6) through openid-client', () => {
  let server: TestServer, client: TestClient, user: TestUser, config: oidc.Configuration;

  before(async () => {
    ({ server, client, user, config } = await startWithApp({
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada', name: 'Ada Lovelace' },
    }));
  });
  after(() => server.close());

  it('issues an opaque 256-bit refresh token when offline_access is granted, and stores only its time and hash', async () => {
    const before = Date.now();
    const tokens = await signIn(server, config, user, 'openid profile offline_access');
    // The time it was made, in nine base-36 characters, then 256 random bits (core/timed-secret.ts).
    const token = tokens.refresh_token ?? '';
    assert.match(token, /^[0-9a-z]{9}[A-Za-z0-9_-]{43}$/);
    const made = Number.parseInt(token.slice(0, 9), 36);
    assert.ok(made >= before && made <= Date.now(), `made at ${made}`);
    assert.equal(await server.store.refreshTokens.find(token), null, 'the bearer value is not a key');
    assert.equal(await server.store.refreshTokens.find(hashSecret(token)), null, 'nor its bare hash');
    assert.equal((await server.store.refreshTokens.find(`${token.slice(0, 9)}${hashSecret(token)}`))?.clientId, client.clientId);
  });

  it('issues no refresh token when offline_access is not granted', async () => {
    const tokens = await signIn(server, config, user, 'openid profile');
    assert.equal(tokens.refresh_token, undefined);
  });

  it('issues no refresh token to a client not registered for the refresh_token grant, even with offline_access', async () => {
    const other = await server.addClient({ scopes: OFFLINE_SCOPES, grantTypes: [GRANT_AUTHORIZATION_CODE] });
    const tokens = await signIn(server, await discover(server, other), user, 'openid offline_access');
    assert.equal(tokens.refresh_token, undefined);
  });

  it('refreshes: new tokens, a new refresh token, and an ID token that keeps sub and auth_time and has no nonce', async () => {
    const first = await signIn(server, config, user, 'openid profile offline_access');
    const refreshed = await oidc.refreshTokenGrant(config, first.refresh_token!);
    assert.notEqual(refreshed.access_token, first.access_token);
    assert.match(refreshed.refresh_token ?? '', /^[0-9a-z]{9}[A-Za-z0-9_-]{43}$/);
    assert.notEqual(refreshed.refresh_token, first.refresh_token);
    assert.equal(refreshed.scope, 'openid profile offline_access');
    const before = first.claims()!;
    const after = refreshed.claims()!;
    assert.equal(after.sub, user.id);
    assert.equal(after.auth_time, before.auth_time);
    assert.equal(after.aud, client.clientId);
    assert.equal((await oidc.fetchUserInfo(config, refreshed.access_token, user.id))['name'], 'Ada Lovelace');
    assert.equal(after.nonce, undefined);
    assert.equal(decodeJwt(refreshed.access_token)['gid'], decodeJwt(first.access_token)['gid'], 'the same grant');
  });

  /** The code flow through openid-client with `extra` authorization parameters (claims, acr_values). */
  async function signInWith(who: TestUser, scope: string, extra: Record<string, string>) {
    return (await approvedWith(who, scope, extra)).redeem();
  }

  /** Signs in and approves; the code is redeemed when `redeem` is called. */
  async function approvedWith(who: TestUser, scope: string, extra: Record<string, string>) {
    const attempt = await authorizationAttempt(config, { scope, ...extra });
    const page = await new FormBrowser(server.url).authorize(attempt.url.href, who);
    return { redeem: () => redeemAttempt(config, attempt, page.location!) };
  }

  it('repeats in a refreshed ID token the claims the original request asked for with the claims parameter, while its scope still releases them (OIDC Core §5.5, §12.2)', async () => {
    const grace = await server.addUser({ username: 'grace', name: 'Grace Hopper', email: 'grace@example.com' });
    const first = await signInWith(grace, 'openid profile email offline_access', {
      claims: JSON.stringify({ id_token: { email: null, name: { essential: true } } }),
    });
    assert.deepEqual([first.claims()!['email'], first.claims()!['name']], ['grace@example.com', 'Grace Hopper']);
    const refreshed = await oidc.refreshTokenGrant(config, first.refresh_token!);
    const claims = refreshed.claims()!;
    assert.equal(claims['email'], 'grace@example.com');
    assert.equal(claims['name'], 'Grace Hopper');
    assert.equal(claims['given_name'], undefined, 'only what was asked for');
    assert.equal(claims.sid, first.claims()!.sid, 'the same OP session');
    // The rotated token keeps them for the next refresh; a refresh narrowed to openid releases
    // no email, and a later one for the whole grant has it again.
    const narrowed = await oidc.refreshTokenGrant(config, refreshed.refresh_token!, { scope: 'openid profile' });
    assert.equal(narrowed.claims()!['email'], undefined, 'email is not in the scope it was refreshed for');
    assert.equal(narrowed.claims()!['name'], 'Grace Hopper');
    const whole = await oidc.refreshTokenGrant(config, narrowed.refresh_token!);
    assert.equal(whole.claims()!['email'], 'grace@example.com');
  });

  it('says in a refreshed ID token what the original said of its own sign-in (amr, acr, auth_time, sid), when a later sign-in approves the same grant again', async () => {
    const approved = await approvedWith(user, 'openid offline_access', { acr_values: 'urn:tessera:acr:pwd' });
    // Another sign-in, in another browser and without acr_values, approves the same
    // remembered grant, before the first code is redeemed and after.
    const second = await signInWith(user, 'openid offline_access', {});
    const first = await approved.redeem();
    assert.equal(first.claims()!.acr, 'urn:tessera:acr:pwd', "the code's own sign-in, not the grant's latest");
    assert.equal(second.claims()!.acr, undefined, 'not asked for');
    assert.notEqual(second.claims()!.sid, first.claims()!.sid);

    const refreshedFirst = (await oidc.refreshTokenGrant(config, first.refresh_token!)).claims()!;
    assert.equal(refreshedFirst.acr, 'urn:tessera:acr:pwd', 'as the original ID token said');
    assert.deepEqual(refreshedFirst.amr, ['pwd']);
    assert.equal(refreshedFirst.auth_time, first.claims()!.auth_time);
    assert.equal(refreshedFirst.sid, first.claims()!.sid);
    const refreshedSecond = (await oidc.refreshTokenGrant(config, second.refresh_token!)).claims()!;
    assert.equal(refreshedSecond.acr, undefined);
    assert.equal(refreshedSecond.sid, second.claims()!.sid);
  });

  it('keeps refreshing along the chain, one new refresh token per use', async () => {
    let tokens = await signIn(server, config, user, 'openid offline_access');
    const seen = new Set([tokens.refresh_token]);
    for (let i = 0; i < 5; i++) {
      tokens = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
      assert.ok(!seen.has(tokens.refresh_token), 'a new refresh token each time');
      seen.add(tokens.refresh_token);
    }
  });

  it('refuses a rotated refresh token with invalid_grant and revokes the grant: the newest refresh token stops working too', async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    await assert.rejects(oidc.refreshTokenGrant(config, first.refresh_token!), oauthError('invalid_grant'));
    await assert.rejects(oidc.refreshTokenGrant(config, second.refresh_token!), oauthError('invalid_grant'));
    const introspected = await oidc.tokenIntrospection(config, second.access_token);
    assert.equal(introspected.active, false, 'the access token of the reused grant is dead too');
  });

  it('narrows the scope on request, and a later refresh without scope gets the whole grant again', async () => {
    const first = await signIn(server, config, user, 'openid profile email offline_access');
    const narrow = await oidc.refreshTokenGrant(config, first.refresh_token!, { scope: 'openid profile' });
    assert.equal(narrow.scope, 'openid profile');
    assert.equal(decodeJwt(narrow.access_token)['scope'], 'openid profile');
    assert.equal((await oidc.fetchUserInfo(config, narrow.access_token, user.id))['email'], undefined, 'no email claim for a narrowed token');
    assert.ok(narrow.refresh_token, 'narrowing away offline_access still rotates the refresh token');
    const whole = await oidc.refreshTokenGrant(config, narrow.refresh_token!);
    assert.equal(whole.scope, 'openid profile email offline_access');
  });

  it('refuses a wider scope with invalid_scope, and the refresh token still works', async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    await assert.rejects(oidc.refreshTokenGrant(config, first.refresh_token!, { scope: 'openid email' }), oauthError('invalid_scope'));
    await assert.rejects(oidc.refreshTokenGrant(config, first.refresh_token!, { scope: 'openid offline_access unknown' }), oauthError('invalid_scope'));
    const refreshed = await oidc.refreshTokenGrant(config, first.refresh_token!);
    assert.equal(refreshed.scope, 'openid offline_access');
  });

  it("refuses another client's refresh token with invalid_grant, and the token still works for its own client", async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    const thief = await server.addClient({ scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
    await assert.rejects(oidc.refreshTokenGrant(await discover(server, thief), first.refresh_token!), oauthError('invalid_grant'));
    assert.ok((await oidc.refreshTokenGrant(config, first.refresh_token!)).access_token);
  });

  it('refuses an unknown refresh token with invalid_grant and a missing one with invalid_request', async () => {
    const unknown = await refreshRaw(server, client, 'x'.repeat(43));
    assert.deepEqual([unknown.status, unknown.body['error']], [400, 'invalid_grant']);
    const missing = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'refresh_token' },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.deepEqual([missing.status, missing.body['error']], [400, 'invalid_request']);
  });

  it('answers unauthorized_client to a client not registered for the refresh_token grant', async () => {
    const other = await server.addClient({ grantTypes: [GRANT_AUTHORIZATION_CODE] });
    const result = await refreshRaw(server, other, 'x'.repeat(43));
    assert.deepEqual([result.status, result.body['error']], [400, 'unauthorized_client']);
  });

  it('gives exactly one new token to 10 simultaneous refreshes of one token, then treats the grant as reused', async () => {
    const first = await signIn(server, config, user, 'openid offline_access');
    const results = await Promise.all(Array.from({ length: 10 }, () => refreshRaw(server, client, first.refresh_token!)));
    const winners = results.filter((result) => result.status === 200);
    assert.equal(winners.length, 1, JSON.stringify(results.map((result) => result.status)));
    for (const loser of results.filter((result) => result.status !== 200)) {
      assert.deepEqual([loser.status, loser.body['error']], [400, 'invalid_grant']);
    }
    const successor = winners[0]!.body['refresh_token'] as string;
    const after = await refreshRaw(server, client, successor);
    assert.deepEqual([after.status, after.body['error']], [400, 'invalid_grant'], 'the grant was revoked as reused');
    const introspected = await oidc.tokenIntrospection(config, winners[0]!.body['access_token'] as string);
    assert.equal(introspected.active, false, "the winner's access token died with the grant");
  });

  it('refuses to refresh for a user who has been disabled', async () => {
    const carol = await server.addUser({ username: 'carol' });
    const first = await signIn(server, config, carol, 'openid offline_access');
    await server.store.users.setDisabled(carol.id, true);
    await assert.rejects(oidc.refreshTokenGrant(config, first.refresh_token!), oauthError('invalid_grant'));
  });
});

describe('refresh tokens for a device sign-in', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer();
    user = await server.addUser({ username: 'tv-owner' });
  });
  after(() => server.close());

  it('gives a device a refresh token when its client is registered for refresh_token, without offline_access', async () => {
    const tv = await server.addClient({ name: 'Living Room TV', grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN] });
    const tokens = await deviceSignIn(server, tv, user, { scope: 'openid profile' });
    assert.ok(tokens.refresh_token);
    const refreshed = await oidc.refreshTokenGrant(await discover(server, tv), tokens.refresh_token);
    assert.equal(refreshed.claims()?.sub, user.id);
    assert.ok(refreshed.refresh_token);
  });

  it('gives a device no refresh token when its client is not registered for refresh_token', async () => {
    const tv = await server.addClient({ name: 'Kitchen Radio', scopes: OFFLINE_SCOPES, grantTypes: [GRANT_DEVICE_CODE] });
    const tokens = await deviceSignIn(server, tv, user, { scope: 'openid offline_access' });
    assert.equal(tokens.refresh_token, undefined);
  });
});

describe('refresh token lifetime and idle timeout', () => {
  let server: TestServer, client: TestClient, user: TestUser;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  before(async () => {
    ({ server, client, user } = await startWithApp({
      server: {
        clock,
        // 10 days from approval, 2 days idle.
        env: { TESSERA_REFRESH_TOKEN_TTL: String(10 * 86400), TESSERA_REFRESH_TOKEN_IDLE_TTL: String(2 * 86400) },
      },
      client: { scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'sleeper' },
    }));
  });
  after(() => server.close());

  it('refreshes a token used just within the idle time, and refuses one left unused for the idle time', async () => {
    const used = (await signInRaw(server, client, user, 'openid offline_access'))['refresh_token'] as string;
    const unused = (await signInRaw(server, client, user, 'openid offline_access'))['refresh_token'] as string;
    clock.advance(2 * DAY - 1000);
    const refreshed = await refreshRaw(server, client, used);
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    clock.advance(1000);
    const idle = await refreshRaw(server, client, unused);
    assert.deepEqual([idle.status, idle.body['error'], idle.body['error_description']], [400, 'invalid_grant', 'refresh token has expired']);
    // Each refresh starts the idle time again.
    clock.advance(2 * DAY - 2000);
    assert.equal((await refreshRaw(server, client, refreshed.body['refresh_token'] as string)).status, 200);
  });

  it('stops refreshing at the lifetime counted from the approval, however often the token was used', async () => {
    let token = (await signInRaw(server, client, user, 'openid offline_access'))['refresh_token'] as string;
    for (let elapsed = 0; elapsed < 10 * DAY - DAY; elapsed += DAY) {
      clock.advance(DAY);
      const refreshed = await refreshRaw(server, client, token);
      assert.equal(refreshed.status, 200, `day ${elapsed / DAY + 1}: ${JSON.stringify(refreshed.body)}`);
      token = refreshed.body['refresh_token'] as string;
    }
    const introspected = await postForm(`${server.url}/oauth/introspect`, { token }, { authorization: basic(client.clientId, client.clientSecret) });
    assert.equal(introspected.body['exp'], Math.floor((clock.now() + DAY) / 1000), 'the last token ends with the lifetime, not a full idle time later');
    clock.advance(DAY);
    const expired = await refreshRaw(server, client, token);
    assert.deepEqual([expired.status, expired.body['error']], [400, 'invalid_grant']);
  });
});

// SQLite runs each statement synchronously, so simultaneous requests rarely interleave
// between reading a refresh token and rotating it; PostgreSQL answers over the network, and
// they do. The rotation must give the new token to one of them all the same.
describe('simultaneous refreshes against PostgreSQL', { skip: await postgresSkip() }, () => {
  let server: TestServer, client: TestClient, user: TestUser;
  let database: { url: string; drop(): Promise<void> };

  before(async () => {
    database = await freshPostgresDatabase();
    ({ server, client, user } = await startWithApp({
      server: { database: database.url },
      client: { scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada' },
    }));
  });
  after(async () => {
    await server?.close();
    await database?.drop();
  });

  it('gives exactly one new token to 10 simultaneous refreshes of one token, then treats the grant as reused', async () => {
    for (let round = 0; round < 3; round++) {
      const first = await signInRaw(server, client, user, 'openid offline_access');
      const results = await Promise.all(Array.from({ length: 10 }, () => refreshRaw(server, client, first['refresh_token'] as string)));
      const winners = results.filter((result) => result.status === 200);
      assert.equal(winners.length, 1, JSON.stringify(results.map((result) => result.body)));
      for (const loser of results.filter((result) => result.status !== 200)) assert.equal(loser.body['error'], 'invalid_grant');
      const after = await refreshRaw(server, client, winners[0]!.body['refresh_token'] as string);
      assert.deepEqual([after.status, after.body['error']], [400, 'invalid_grant'], 'the grant was revoked as reused');
    }
  });
});

/**
 * Nothing is lost across a restart: a server stopped and started again on the same SQLite
 * file keeps its signing keys, sessions, approvals and the codes already used.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { FormBrowser } from './helpers/browser.ts';
import { OFFLINE_SCOPES, withRefresh } from './helpers/lifecycle.ts';
import type { TestServer, TestUser } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt, startWithApp } from './helpers/fixtures.ts';

describe('a server restarted on the same SQLite file', () => {
  let dir: string, server: TestServer, user: TestUser, config: oidc.Configuration;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-restart-'));
    ({ server, user, config } = await startWithApp({
      server: { database: join(dir, 'tessera.db') },
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'ada' },
    }));
  });
  after(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An authorization request from the client: its URL and what the client keeps to redeem the code (`redeemAttempt`). */
  const authorizationRequest = () => authorizationAttempt(config, { scope: 'openid offline_access' });

  it('keeps the session, the approvals, the signing keys and the used codes', async () => {
    const browser = new FormBrowser(server.url);
    const first = await authorizationRequest();
    const firstCallback = new URL((await browser.authorize(first.url.href, user)).location!);
    const tokens = await redeemAttempt(config, first, firstCallback);
    // Approved before the restart, redeemed after it.
    const second = await authorizationRequest();
    const secondCallback = new URL((await browser.authorize(second.url.href, null)).location!);

    await server.restart();

    // The keys: the access token issued before verifies, and userinfo accepts it.
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.id)).sub, user.id);
    // The approvals: the refresh token works, and the code approved before redeems.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(refreshed.claims()?.sub, user.id);
    assert.equal((await redeemAttempt(config, second, secondCallback)).claims()?.sub, user.id);
    // The session and the remembered approval: the browser is still signed in, and goes
    // straight back to the app with a code.
    const third = await authorizationRequest();
    const back = await browser.follow(await browser.request(third.url.href));
    assert.equal(back.status, 303, back.html);
    assert.equal((await redeemAttempt(config, third, new URL(back.location!))).claims()?.sub, user.id);
    // The used code: its replay is known as one, and ends the approval it came from
    // (RFC 6749 §4.1.2), so the refresh token that approval holds stops working too.
    await assert.rejects(
      redeemAttempt(config, first, firstCallback),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
    await assert.rejects(
      oidc.refreshTokenGrant(config, refreshed.refresh_token!),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });
});

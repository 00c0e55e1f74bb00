import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { deviceLogin, type DeviceLoginDeps } from '../src/cli/device-login.ts';
import { ManualClock } from '../src/core/clock.ts';

import { GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { BrowserAt, text } from './helpers/device.ts';
import { refreshRaw } from './helpers/lifecycle.ts';
import type { TestClient, TestServer, TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';

const DAY = 24 * 3600_000;

/**
 * The end to end: a device signs in with `tessera device-login`, refreshes for as
 * long as its grant lives, and stops the moment the user revokes it on /account.
 */
const DEVICE_USER_AGENT = 'TerminalDevice/1.0 (Linux)';

describe('a device signed in through device-login', () => {
  let clock: ManualClock, server: TestServer, terminal: TestClient, user: TestUser;

  before(async () => {
    clock = new ManualClock();
    ({
      server,
      client: terminal,
      user,
    } = await startWithApp({
      server: {
        clock,
        env: { TESSERA_REFRESH_TOKEN_TTL: String(10 * 86400), TESSERA_REFRESH_TOKEN_IDLE_TTL: String(3 * 86400) },
      },
      client: { name: 'Terminal', grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN] },
      user: { username: 'dennis', name: 'Dennis Ritchie' },
    }));
  });
  after(() => server.close());

  /**
   * Runs device-login with the clock moved instead of waiting; the person approves on a
   * browser of their own, which stays signed in. Returns what the token endpoint gave the
   * device, as device-login received it.
   */
  async function signInWithDeviceLogin(): Promise<{ tokens: Record<string, unknown>; person: BrowserAt }> {
    const person = new BrowserAt(server.url);
    let stdout = '';
    let tokens: Record<string, unknown> | undefined;
    const deps: DeviceLoginDeps = {
      stdout: (chunk) => (stdout += chunk),
      stderr: () => {},
      now: () => clock.now(),
      tty: false,
      async fetch(input, init) {
        // A device that says what it is, as the account page will show it.
        const headers = new Headers(init?.headers);
        headers.set('user-agent', DEVICE_USER_AGENT);
        const response = await globalThis.fetch(input, { ...init, headers });
        if (String(input).endsWith('/oauth/token') && response.ok) tokens = (await response.clone().json()) as Record<string, unknown>;
        return response;
      },
      async sleep(ms) {
        const code = /enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})\n/.exec(stdout)?.[1];
        if (code && tokens === undefined) await person.decide(code, user, 'approve');
        clock.advance(ms);
      },
    };
    const exit = await deviceLogin({ issuer: server.url, clientId: terminal.clientId, clientSecret: terminal.clientSecret, scope: 'openid profile' }, deps);
    assert.equal(exit, 0, stdout);
    assert.ok(tokens, 'device-login received tokens');
    return { tokens, person };
  }

  it('refreshes for as long as its grant lives, and not after', async () => {
    const { tokens } = await signInWithDeviceLogin();
    let refreshToken = tokens['refresh_token'] as string;
    assert.match(refreshToken, /^[0-9a-z]{9}[A-Za-z0-9_-]{43}$/, 'a device registered for refresh_token gets one without offline_access');
    for (let day = 2; day < 10; day += 2) {
      clock.advance(2 * DAY);
      const refreshed = await refreshRaw(server, terminal, refreshToken);
      assert.equal(refreshed.status, 200, `day ${day}: ${JSON.stringify(refreshed.body)}`);
      refreshToken = refreshed.body['refresh_token'] as string;
    }
    clock.advance(2 * DAY);
    const ended = await refreshRaw(server, terminal, refreshToken);
    assert.deepEqual([ended.status, ended.body['error']], [400, 'invalid_grant'], 'the lifetime counted from the approval has ended');
  });

  it('is on the account page as a device sign-in with its origin, and after Revoke its next refresh fails with invalid_grant', async () => {
    const { tokens, person } = await signInWithDeviceLogin();
    const grantId = decodeJwt(tokens['access_token'] as string)['gid'] as string;

    const page = await person.request('/account');
    assert.equal(page.status, 200);
    assert.match(text(page), /Terminal Device sign-in/);
    // What the device said it is, named as people read it (its User-Agent through the parser),
    // and the address it asked from (no proxy: the peer's).
    assert.ok(text(page).includes('TerminalDevice on Linux, from 127.0.0.1'), text(page));

    // An hour on, when its access token has expired: the device refreshes.
    clock.advance(3600_000);
    const refreshed = await refreshRaw(server, terminal, tokens['refresh_token'] as string);
    assert.equal(refreshed.status, 200, 'signed in until revoked');

    const revoked = await person.follow(await person.submit(page, '/account/revoke', { grant_id: grantId }));
    assert.match(text(revoked), /Access revoked/);
    const after = await refreshRaw(server, terminal, refreshed.body['refresh_token'] as string);
    assert.deepEqual([after.status, after.body['error']], [400, 'invalid_grant']);
  });
});

/**
 * Lockouts as an operator sees and lifts them (src/flows/manage/lockouts.ts): the counters of
 * the sign-in limits, found by username and address, and cleared so the person can sign in.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ManageDeps } from '../src/flows/manage/deps.ts';
import { clearLockouts, listLockouts } from '../src/flows/manage/lockouts.ts';
import { FormBrowser } from './helpers/browser.ts';
import { signInQuery } from './helpers/fixtures.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

describe('lockouts', () => {
  let server: TestServer;
  let deps: ManageDeps;
  let query: URLSearchParams;

  before(async () => {
    server = await startTestServer();
    const client = await server.addClient({ scopes: ['openid'] });
    query = await signInQuery(client);
    deps = manageDeps(server);
  });
  after(() => server.close());

  it('lists a user locked out from an address, and clearing it by username lets the right password in at once', async () => {
    const user = await server.addUser({ username: 'mallory_target' });
    const bystander = await server.addUser({ username: 'bystander' });
    const browser = new FormBrowser(server.url);
    const page = await browser.request(`/oauth/authorize?${query}`);
    for (let i = 0; i < server.config.signIn.perUserAddress; i++) {
      assert.equal((await browser.submit(page, '/login', { username: user.username, password: 'guess' })).status, 401);
    }
    await browser.submit(page, '/login', { username: bystander.username, password: 'guess' });
    assert.equal((await browser.submit(page, '/login', { username: user.username, password: user.password })).status, 429);

    const locked = await listLockouts(deps, { username: user.username, lockedOnly: true });
    assert.deepEqual(
      locked.map(({ kind, scope, username, ip, failures, limit }) => ({ kind, scope, username, ip, failures, limit })),
      [{ kind: 'sign-in', scope: 'user-address', username: user.username, ip: '127.0.0.1', failures: 10, limit: 10 }],
    );
    assert.ok(
      (await listLockouts(deps, { username: user.username })).some((entry) => entry.scope === 'user' && !entry.locked),
      'the delay counter, never locking',
    );
    assert.ok((await listLockouts(deps, { ip: '127.0.0.1' })).some((entry) => entry.scope === 'address' && entry.failures === 11));

    const cleared = await clearLockouts(deps, { username: user.username });
    assert.deepEqual(cleared.map((entry) => entry.scope).sort(), ['user', 'user-address']);
    assert.deepEqual(await listLockouts(deps, { username: user.username }), []);
    assert.equal((await listLockouts(deps, { username: bystander.username })).length, 2, "another user's counters stay");
    assert.equal((await browser.submit(page, '/login', { username: user.username, password: user.password })).status, 303);
    const [event] = await server.store.events.list({ type: 'lockout.cleared', limit: 1 });
    assert.deepEqual([event?.username, event?.detail['counters'], event?.detail['by']], [user.username, 2, 'operator']);
  });

  it('refuses to clear without saying whose lockouts, and bounds a listing', async () => {
    await assert.rejects(clearLockouts(deps, {}), /give username, ip or key/);
    await assert.rejects(listLockouts(deps, { limit: 0 }), /limit: a whole number from 1 to 1000/);
  });
});

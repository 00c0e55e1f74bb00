import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClientRecord } from '../types.ts';
import { ClientCache } from './client-cache.ts';

const record = (id: string, name = 'App'): ClientRecord => ({
  id,
  name,
  secretHash: null,
  redirectUris: [],
  scopes: ['openid'],
  grantTypes: ['authorization_code'],
  webOrigins: [],
  requireDpop: false,
  requirePar: false,
  deviceNetworks: [],
  createdAt: 0,
  authMethod: 'none',
  previousSecretHash: null,
  previousSecretExpiresAt: null,
  jwksUri: null,
  jwks: null,
  pkce: 'required',
  firstParty: false,
  postLogoutRedirectUris: [],
  backchannelLogoutUri: null,
});

/** A load that counts its calls and answers `value`. */
function loader(value: ClientRecord | null) {
  const load = async () => {
    load.calls++;
    return value;
  };
  load.calls = 0;
  return load;
}

describe('ClientCache', () => {
  it('loads every time while it is not listening for changes', async () => {
    const cache = new ClientCache();
    const load = loader(record('a'));
    await cache.get('a', load);
    await cache.get('a', load);
    assert.equal(load.calls, 2);
  });

  it('answers from memory once listening, until the client changes', async () => {
    const cache = new ClientCache();
    cache.setListening(true);
    const load = loader(record('a'));
    assert.deepEqual(await cache.get('a', load), record('a'));
    assert.deepEqual(await cache.get('a', load), record('a'));
    assert.equal(load.calls, 1);
    cache.invalidate('a');
    await cache.get('a', load);
    assert.equal(load.calls, 2);
  });

  it('never caches an unknown client', async () => {
    const cache = new ClientCache();
    cache.setListening(true);
    const load = loader(null);
    assert.equal(await cache.get('nope', load), null);
    assert.equal(await cache.get('nope', load), null);
    assert.equal(load.calls, 2);
    assert.equal(cache.size, 0);
  });

  it('does not keep a record whose load was in flight when a change arrived', async () => {
    const cache = new ClientCache();
    cache.setListening(true);
    let release!: () => void;
    const stale = cache.get('a', () => new Promise<ClientRecord>((resolve) => (release = () => resolve(record('a', 'Old name')))));
    cache.invalidate('a');
    release();
    assert.equal((await stale)?.name, 'Old name');
    const load = loader(record('a', 'New name'));
    assert.equal((await cache.get('a', load))?.name, 'New name');
    assert.equal(load.calls, 1);
  });

  it('forgets everything when it stops listening, since changes may then be missed', async () => {
    const cache = new ClientCache();
    cache.setListening(true);
    await cache.get('a', loader(record('a')));
    cache.setListening(false);
    assert.equal(cache.size, 0);
    const load = loader(record('a'));
    await cache.get('a', load);
    assert.equal(load.calls, 1);
    assert.equal(cache.size, 0);
  });

  it('stays bounded however many clients are read', async () => {
    const cache = new ClientCache();
    cache.setListening(true);
    for (let i = 0; i < 10_050; i++) await cache.get(`c${i}`, loader(record(`c${i}`)));
    assert.equal(cache.size, 10_000);
    const load = loader(record('c0'));
    await cache.get('c0', load);
    assert.equal(load.calls, 1, 'the oldest entry made room');
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config/index.ts';
import { systemClock } from '../src/core/clock.ts';
import { openStore } from '../src/store/open.ts';
import { KeyManager } from '../src/tokens/keys.ts';

/**
 * The client address the server works with (the per-address sign-in limit, the device
 * request's origin) for a request that reached it from `peer` with `forwardedFor`.
 */
async function clientAddress(trustProxy: string, peer: string, forwardedFor: string): Promise<string> {
  const config = loadConfig({ TESSERA_DATABASE: ':memory:', TESSERA_TRUST_PROXY: trustProxy });
  const store = await openStore(config.database);
  const keys = new KeyManager(store.keys, systemClock, { leadTimeSeconds: 0, maxTokenLifetimeSeconds: 3600 });
  const app = await buildApp({ config, store, keys, clock: systemClock, logger: false });
  try {
    app.get('/client-address', async (request) => ({ ip: request.ip }));
    const response = await app.inject({ url: '/client-address', remoteAddress: peer, headers: { 'x-forwarded-for': forwardedFor } });
    return (response.json() as { ip: string }).ip;
  } finally {
    await app.close();
    await store.close();
  }
}

describe('TESSERA_TRUST_PROXY', () => {
  // A proxy that appends: the client wrote the first entry, the proxy added the second.
  const forwarded = '198.51.100.66, 203.0.113.9';

  it('believes no X-Forwarded-For by default: the client is the peer', async () => {
    assert.equal(await clientAddress('false', '10.0.0.2', forwarded), '10.0.0.2');
  });

  it('with a list of proxies, takes the address the nearest proxy saw, not one the client wrote', async () => {
    assert.equal(await clientAddress('10.0.0.0/8', '10.0.0.2', forwarded), '203.0.113.9');
  });

  it('with a list of proxies, ignores the header from a peer that is not one of them', async () => {
    assert.equal(await clientAddress('10.0.0.0/8', '192.0.2.77', forwarded), '192.0.2.77');
  });

  it('with true, believes the whole header, including the entry the client wrote', async () => {
    assert.equal(await clientAddress('true', '10.0.0.2', forwarded), '198.51.100.66');
  });
});

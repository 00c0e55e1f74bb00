import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AnswerTooLargeError, outboundFetch, UPSTREAM_ANSWER_LIMIT_BYTES, upstreamFetch, type Resolver } from './outbound.ts';

/** A resolver that knows a few names, as a DNS server an attacker controls would answer. */
function resolverOf(names: Record<string, readonly string[]>): Resolver {
  return (hostname, _options, callback) => {
    const addresses = names[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(null, addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })));
  };
}

describe('requests to a URL a client registered', () => {
  let port = 0;
  let requests = 0;
  const server = createServer((_request, response) => {
    requests += 1;
    response.end('{"keys":[]}');
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const send = outboundFetch(
    { selfRegistered: false, allowPrivateNetworks: false },
    resolverOf({
      'keys.example': ['127.0.0.1'],
      'metadata.example': ['169.254.169.254'],
      'office.example': ['10.1.2.3', 'fd00::1'],
      'mixed.example': ['192.168.1.10', '127.0.0.1'],
    }),
  );

  it('reach a name that resolves outside private networks', async () => {
    const response = await send(`http://keys.example:${port}/jwks`);
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '{"keys":[]}');
  });

  it('are refused, before connecting, when the name resolves only to private or link-local addresses', async () => {
    const before = requests;
    for (const host of ['metadata.example', 'office.example']) {
      const refused = await send(`http://${host}:${port}/jwks`).then(
        () => null,
        (error: unknown) => error as Error & { cause?: { code?: string; message?: string } },
      );
      assert.ok(refused, `${host} was fetched`);
      assert.equal(refused.cause?.code, 'EPRIVATENETWORK', String(refused.cause?.message));
      assert.match(String(refused.cause?.message), new RegExp(`${host} resolves to a private or link-local address`));
    }
    assert.equal(requests, before);
  });

  it('connect only to the public addresses of a name that has both', async () => {
    const response = await send(`http://mixed.example:${port}/jwks`);
    assert.equal(response.status, 200);
  });

  it('are refused on loopback too for an app that registered itself, whatever TESSERA_ALLOW_PRIVATE_NETWORK_URLS says', async () => {
    const before = requests;
    for (const allowPrivateNetworks of [false, true]) {
      const registrant = outboundFetch({ selfRegistered: true, allowPrivateNetworks }, resolverOf({ 'keys.example': ['127.0.0.1'], 'six.example': ['::1'] }));
      for (const host of ['keys.example', 'six.example']) {
        const refused = await registrant(`http://${host}:${port}/jwks`).then(
          () => null,
          (error: unknown) => error as Error & { cause?: { code?: string; message?: string } },
        );
        assert.ok(refused, `${host} was fetched`);
        assert.equal(refused.cause?.code, 'EPRIVATENETWORK', String(refused.cause?.message));
        assert.match(String(refused.cause?.message), /resolves to a private, link-local or loopback address/);
      }
    }
    assert.equal(requests, before);
  });

  it('go anywhere when TESSERA_ALLOW_PRIVATE_NETWORK_URLS is on', () => {
    assert.equal(outboundFetch({ selfRegistered: false, allowPrivateNetworks: true }), fetch);
  });
});

describe('answers from upstream identity providers', () => {
  let port = 0;
  const server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (request.url === '/small') return void response.end('{"access_token":"x"}');
    if (request.url === '/declared') {
      // Says how large it is: refused before any of it is read.
      response.setHeader('content-length', String(UPSTREAM_ANSWER_LIMIT_BYTES + 1));
      return void response.end('x'.repeat(UPSTREAM_ANSWER_LIMIT_BYTES + 1));
    }
    // Chunked, 30 MB, as the attack run's provider answered.
    const chunk = 'x'.repeat(64 * 1024);
    let sent = 0;
    const more = () => {
      while (sent < 30 * 1024 * 1024) {
        sent += chunk.length;
        if (!response.write(chunk)) return void response.once('drain', more);
      }
      response.end();
    };
    response.on('error', () => {});
    more();
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => {
    // The refused answers' connections are not left to time out.
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('are read whole up to the bound', async () => {
    const response = await upstreamFetch(`http://127.0.0.1:${port}/small`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { access_token: 'x' });
  });

  it('are refused past 1 MiB, by their Content-Length or as they stream in', async () => {
    for (const path of ['/declared', '/streamed']) {
      await assert.rejects(upstreamFetch(`http://127.0.0.1:${port}${path}`), (error: Error) => error instanceof AnswerTooLargeError && /larger than 1048576 bytes/.test(error.message));
    }
  });
});

import assert from 'node:assert/strict';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  AnswerTooLargeError,
  outboundFetch,
  outboundPost,
  publicNetworkLookup,
  UPSTREAM_ANSWER_LIMIT_BYTES,
  upstreamFetch,
  type Resolver,
  type UrlRule,
} from './outbound.ts';

/** A resolver that knows a few names, as a DNS server an attacker controls would answer. */
function resolverOf(names: Record<string, readonly string[]>): Resolver {
  return (hostname, _options, callback) => {
    const addresses = names[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
    callback(
      null,
      addresses.map((address): LookupAddress => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  };
}

/** What `lookup` answers for `hostname`: the addresses, space-separated, or the error's code. Nothing connects. */
function lookedUp(lookup: LookupFunction, hostname: string, options: LookupOptions): Promise<string> {
  return new Promise((resolve) => {
    lookup(hostname, options, (error, address) => {
      if (error) return resolve(String((error as NodeJS.ErrnoException).code));
      resolve(Array.isArray(address) ? address.map((entry: LookupAddress) => entry.address).join(' ') : String(address));
    });
  });
}

const OPERATORS: UrlRule = { selfRegistered: false, allowPrivateNetworks: false };
const REGISTRANTS: UrlRule = { selfRegistered: true, allowPrivateNetworks: false };
const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

describe('the outbound address guard (the lookup a connection is made with)', () => {
  const names = resolverOf({
    'metadata.example': ['169.254.169.254'],
    'office.example': ['10.1.2.3', 'fd00::1'],
    'mixed.example': ['192.168.1.10', PUBLIC_V4, '169.254.169.254', 'fd00::1', PUBLIC_V6, '100.64.0.1', 'fe80::1'],
    'local.example': ['127.0.0.1', PUBLIC_V4, '::1'],
  });

  it('leaves the refused addresses out of its answer, however it is asked: one address, or every one at once as Node connects (autoSelectFamily)', async () => {
    const cases: [UrlRule, string, LookupOptions, string][] = [
      [OPERATORS, 'mixed.example', { all: true }, `${PUBLIC_V4} ${PUBLIC_V6}`],
      [OPERATORS, 'mixed.example', { all: true, family: 0 }, `${PUBLIC_V4} ${PUBLIC_V6}`],
      [OPERATORS, 'mixed.example', { all: false }, PUBLIC_V4],
      [OPERATORS, 'mixed.example', {}, PUBLIC_V4],
      [OPERATORS, 'local.example', { all: true }, `127.0.0.1 ${PUBLIC_V4} ::1`],
      [OPERATORS, 'metadata.example', { all: true }, 'EPRIVATENETWORK'],
      [OPERATORS, 'metadata.example', {}, 'EPRIVATENETWORK'],
      [OPERATORS, 'office.example', { all: true }, 'EPRIVATENETWORK'],
      [OPERATORS, 'unknown.example', { all: true }, 'ENOTFOUND'],
      [REGISTRANTS, 'local.example', { all: true }, PUBLIC_V4],
      [REGISTRANTS, 'local.example', {}, PUBLIC_V4],
      [REGISTRANTS, 'mixed.example', { all: true }, `${PUBLIC_V4} ${PUBLIC_V6}`],
      [{ selfRegistered: true, allowPrivateNetworks: true }, 'local.example', { all: true }, PUBLIC_V4],
    ];
    for (const [rule, host, options, expected] of cases) {
      assert.equal(await lookedUp(publicNetworkLookup(rule, names), host, options), expected, `${JSON.stringify(rule)} ${host} ${JSON.stringify(options)}`);
    }
  });
});

/**
 * Has `server` listen on a free loopback port for the suite's tests (`bound` is told the port)
 * and close after them, its connections with it: a refused or drained answer's connection is
 * not left to time out.
 */
function listenDuringSuite(server: Server, bound: (port: number) => void): void {
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    bound((server.address() as AddressInfo).port);
  });
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
}

/**
 * Connections through the guard, to a server on loopback. Every name here resolves to
 * loopback or to 0.0.0.0, which the guard refuses (0.0.0.0/8) and a connection to which the
 * kernel makes to this machine (not 0.0.0.1: in a sandbox, a connection there was answered):
 * were the guard broken, no test would reach beyond loopback. The refusal of addresses that
 * do lead elsewhere is checked on the lookup's answer, above.
 */
describe('requests to a URL a client registered', () => {
  let port = 0;
  let requests = 0;
  const server = createServer((request, response) => {
    requests += 1;
    // A redirect to an address written out, which no lookup sees.
    if (request.url === '/to-zero') response.writeHead(302, { location: `http://0.0.0.0:${port}/jwks` }).end();
    else response.end('{"keys":[]}');
  });
  listenDuringSuite(server, (bound) => (port = bound));

  const send = outboundFetch(
    { selfRegistered: false, allowPrivateNetworks: false },
    resolverOf({
      'keys.example': ['127.0.0.1'],
      'zero.example': ['0.0.0.0'],
      'mixed.example': ['0.0.0.0', '127.0.0.1'],
    }),
  );

  it('reach a name that resolves outside private networks', async () => {
    const response = await send(`http://keys.example:${port}/jwks`);
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '{"keys":[]}');
  });

  it('are refused, before connecting, when the name resolves only to private or link-local addresses', async () => {
    const before = requests;
    for (const host of ['zero.example']) {
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

  it('are refused, before connecting, at an address written in the URL or in a redirect, which Node connects to without a lookup', async () => {
    const before = requests;
    const refusedAt = (url: string, fetcher = send) =>
      fetcher(url).then(
        () => null,
        (error: unknown) => error as Error & { cause?: { code?: string; message?: string } },
      );
    const zero = await refusedAt(`http://0.0.0.0:${port}/jwks`);
    assert.equal(zero?.cause?.code, 'EPRIVATENETWORK', String(zero?.cause?.message));
    assert.match(String(zero?.cause?.message), /0\.0\.0\.0 is a private or link-local address/);
    const registrant = outboundFetch({ selfRegistered: true, allowPrivateNetworks: true });
    for (const url of [`http://127.0.0.1:${port}/jwks`, `http://[::1]:${port}/jwks`, `http://[::ffff:127.0.0.1]:${port}/jwks`]) {
      const refused = await refusedAt(url, registrant);
      assert.equal(refused?.cause?.code, 'EPRIVATENETWORK', `${url}: ${String(refused?.cause?.message)}`);
    }
    assert.equal(requests, before, 'no request reached the server');
    // A redirect from an allowed name to an address written out: the first request is answered, the second never made.
    const redirected = await refusedAt(`http://keys.example:${port}/to-zero`);
    assert.equal(redirected?.cause?.code, 'EPRIVATENETWORK', String(redirected?.cause?.message));
    assert.equal(requests, before + 1);
  });

  it('connect to the allowed address of a name that also has a refused one', async () => {
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

describe('posts to a URL a client registered (pushed deliveries)', () => {
  let port = 0;
  let requests = 0;
  const received: string[] = [];
  let trickleClosed = false;
  const server = createServer((request, response) => {
    requests += 1;
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push(Buffer.concat(chunks).toString());
      if (request.url === '/refuse')
        response.writeHead(400, { 'content-type': 'application/json' }).end(`{"err":"invalid_request","pad":"${'x'.repeat(10_000)}"}`);
      else if (request.url === '/moved') response.writeHead(302, { location: '/elsewhere' }).end();
      else if (request.url === '/trickle') {
        request.socket.on('close', () => (trickleClosed = true));
        response.writeHead(202).write('x');
      } else if (request.url === '/slow') setTimeout(() => response.writeHead(202).end(), 2_000).unref();
      else response.writeHead(202).end();
    });
  });
  listenDuringSuite(server, (bound) => (port = bound));

  const resolver = resolverOf({ 'receiver.example': ['127.0.0.1'], 'zero.example': ['0.0.0.0'] });
  const post = outboundPost({ selfRegistered: false, allowPrivateNetworks: false }, resolver);
  const request = {
    headers: { 'content-type': 'application/secevent+jwt' },
    body: 'a.b.c',
    signal: new AbortController().signal,
    timeoutMs: 5_000,
    readAnswer: (status: number) => status === 400,
    answerLimitBytes: 100,
  };

  it('send the body and give the status, on kept-alive connections', async () => {
    for (let i = 0; i < 3; i += 1) assert.deepEqual(await post(`http://receiver.example:${port}/caep`, request), { status: 202, body: '' });
    assert.deepEqual(received.slice(-3), ['a.b.c', 'a.b.c', 'a.b.c']);
  });

  it('read at most answerLimitBytes of an answer, and follow no redirect', async () => {
    const refused = await post(`http://receiver.example:${port}/refuse`, request);
    assert.equal(refused.status, 400);
    assert.equal(refused.body, `{"err":"invalid_request","pad":"${'x'.repeat(100 - 32)}`);
    assert.equal((await post(`http://receiver.example:${port}/moved`, request)).status, 302);
  });

  it('are refused, before connecting, when the name resolves only to private or link-local addresses', async () => {
    const before = requests;
    const refused = await post(`http://zero.example:${port}/caep`, request).then(
      () => null,
      (error: unknown) => error as Error & { code?: string },
    );
    assert.ok(refused, 'zero.example was posted to');
    assert.equal(refused.code, 'EPRIVATENETWORK', refused.message);
    assert.equal(requests, before);
  });

  it("are refused, before connecting, at an address written in the URL: a delegate's webhook on loopback once private networks are not allowed", async () => {
    const before = requests;
    const delegated = outboundPost({ selfRegistered: false, allowPrivateNetworks: false, delegated: true }, resolver);
    for (const url of [`http://127.0.0.1:${port}/caep`, `http://0.0.0.0:${port}/caep`, `http://[::1]:${port}/caep`]) {
      const refused = await delegated(url, request).then(
        () => null,
        (error: unknown) => error as Error & { code?: string },
      );
      assert.equal(refused?.code, 'EPRIVATENETWORK', `${url}: ${String(refused?.message)}`);
    }
    assert.equal(requests, before);
  });

  it('are refused on loopback for an app that registered itself, whatever TESSERA_ALLOW_PRIVATE_NETWORK_URLS says', async () => {
    const before = requests;
    for (const allowPrivateNetworks of [false, true]) {
      const registrant = outboundPost({ selfRegistered: true, allowPrivateNetworks }, resolver);
      const refused = await registrant(`http://receiver.example:${port}/caep`, request).then(
        () => null,
        (error: unknown) => error as Error & { code?: string },
      );
      assert.equal(refused?.code, 'EPRIVATENETWORK', String(refused?.message));
    }
    assert.equal(requests, before);
  });

  it('answer at the status when the body is not to be read, however slowly it comes', async () => {
    assert.deepEqual(await post(`http://receiver.example:${port}/trickle`, { ...request, timeoutMs: 500 }), { status: 202, body: '' });
    // The body goes on being drained only within the request's time: then its connection is closed.
    assert.equal(trickleClosed, false);
    for (const deadline = Date.now() + 3_000; !trickleClosed && Date.now() < deadline; ) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(trickleClosed, true, 'the trickling connection was kept past the time limit');
  });

  it('give up after timeoutMs, and when the signal ends them', async () => {
    const timedOut = await post(`http://receiver.example:${port}/slow`, { ...request, timeoutMs: 100 }).then(
      () => null,
      (error: unknown) => error as Error,
    );
    assert.equal(timedOut?.name, 'TimeoutError');
    const stop = new AbortController();
    const stopped = post(`http://receiver.example:${port}/slow`, { ...request, signal: stop.signal }).then(
      () => null,
      (error: unknown) => error as Error,
    );
    stop.abort();
    assert.equal((await stopped)?.name, 'AbortError');
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
  listenDuringSuite(server, (bound) => (port = bound));

  it('are read whole up to the bound', async () => {
    const response = await upstreamFetch(`http://127.0.0.1:${port}/small`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { access_token: 'x' });
  });

  it('are refused past 1 MiB, by their Content-Length or as they stream in', async () => {
    for (const path of ['/declared', '/streamed']) {
      await assert.rejects(
        upstreamFetch(`http://127.0.0.1:${port}${path}`),
        (error: Error) => error instanceof AnswerTooLargeError && /larger than 1048576 bytes/.test(error.message),
      );
    }
  });
});

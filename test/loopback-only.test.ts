/**
 * The test processes' guard (helpers/loopback-only.ts, which test/run.ts loads into each; this
 * file does not import it): a connection to anything but loopback fails at once with EACCES,
 * whoever opens it, and one to loopback goes through.
 */
import assert from 'node:assert/strict';
import { createServer, connect } from 'node:net';
import { describe, it } from 'node:test';
import { isLoopback } from './helpers/loopback.ts';

describe('the test processes reach loopback only', () => {
  it('tells loopback addresses from the rest, as node:net hands them over', () => {
    for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1', '0:0:0:0:0:ffff:127.0.0.2']) assert.equal(isLoopback(address), true, address);
    for (const address of ['10.0.0.8', '192.0.2.1', '::ffff:10.0.0.8', '0.0.0.0', '::', 'fe80::1', '2001:db8::1', '128.0.0.1', 'localhost'])
      assert.equal(isLoopback(address), false, address);
  });

  it("refuses a connection beyond loopback at once, through Node's fetch and node:net, and lets one to loopback through", async () => {
    // 192.0.2.1 (TEST-NET-1, RFC 5737) routes nowhere: without the guard, a timeout or ENETUNREACH.
    const fetched = await fetch('http://192.0.2.1:8080/', { signal: AbortSignal.timeout(5000) }).catch((error: unknown) => error);
    assert.equal((fetched as { cause?: { code?: string } }).cause?.code, 'EACCES');
    const refused = await new Promise<string | undefined>((resolve) => {
      const socket = connect(8080, '10.0.0.8');
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code));
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
    });
    assert.equal(refused, 'EACCES');

    const server = createServer((socket) => socket.end('hello')).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as { port: number };
      const heard = await new Promise<string>((resolve, reject) => {
        let text = '';
        const socket = connect(port, 'localhost');
        socket.on('data', (chunk) => (text += chunk));
        socket.once('end', () => resolve(text));
        socket.once('error', reject);
      });
      assert.equal(heard, 'hello');
    } finally {
      server.close();
    }
  });
});

/**
 * TESSERA_REQUEST_TIMEOUT: a client has that long to send a whole request. One that sends its
 * headers and then its body a byte now and then (slowloris) is answered 408 and cut off,
 * rather than holding a connection open for as long as it likes.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startMainServer } from './helpers/main-server.ts';

/** Long enough for a 1 s limit checked every 100 ms on a busy machine; far short of Node's own 30 s check. */
const ANSWERED_WITHIN_MS = 5000;

/**
 * Sends a request's headers, announcing a body of 10 bytes, and never the body; resolves with
 * what came back once the server closed the connection, or null if it was still open after
 * ANSWERED_WITHIN_MS.
 */
function sendHeadersOnly(url: string): Promise<string | null> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let answer = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, ANSWERED_WITHIN_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
    socket.write(`POST /oauth/token HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 10\r\n\r\n`);
  });
}

describe('the time a client has to send a request (TESSERA_REQUEST_TIMEOUT)', () => {
  let main: Awaited<ReturnType<typeof startMainServer>>;

  before(async () => {
    main = await startMainServer({ TESSERA_REQUEST_TIMEOUT: '1', TESSERA_ADMIN_LISTEN: '127.0.0.1:0' });
  });
  after(() => main.close());

  it('answers 408 and closes the connection of a client that sends its headers and not its body', async () => {
    const answer = await sendHeadersOnly(main.server.url);
    assert.notEqual(answer, null, `the connection was still open after ${ANSWERED_WITHIN_MS} ms`);
    assert.match(answer!, /^HTTP\/1\.1 408 /);
  });

  it('closes such a connection on the admin listener too', async () => {
    // It answers /oauth/token 404 at once, before the body; but it must not wait for the rest for ever.
    assert.notEqual(await sendHeadersOnly(`${main.server.adminUrl}`), null, `the connection was still open after ${ANSWERED_WITHIN_MS} ms`);
  });

  it("sets the limit on Fastify's own server too, on which a fixed port and every worker thread listen", () => {
    // The listener above is the one PORT=0 binds before the app is built (main.ts, listenOnPickedPort).
    const server = main.server.app.server;
    assert.equal(server.requestTimeout, 1000);
    assert.equal((server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval, 100);
  });
});

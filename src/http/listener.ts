/**
 * What every listener that serves the app (the public port, in each worker, and
 * TESSERA_ADMIN_LISTEN) is created with: a client has TESSERA_REQUEST_TIMEOUT to send a whole
 * request, headers and body, and is then answered 408 and cut off. Without it a client that
 * sends its headers and then a byte of its body now and then holds a connection open forever
 * (Fastify's default is no limit; Node's headersTimeout covers the headers only). The limit
 * ends once the request has arrived: a slow answer is not cut.
 */
import type { ServerOptions } from 'node:http';

/** Node looks for requests past their time this often by default, which would let a slow sender stay up to that much longer. */
const NODE_CHECK_EVERY_MS = 30_000;

/** The node:http options of a listener that serves the app, for a limit of `requestTimeoutSeconds`. */
export function listenerOptions(requestTimeoutSeconds: number): Required<Pick<ServerOptions, 'requestTimeout' | 'connectionsCheckingInterval'>> {
  const requestTimeout = requestTimeoutSeconds * 1000;
  // A tenth of the limit: a request is cut at most 10% late, and a look over the open
  // connections every few seconds costs nothing worth counting.
  return { requestTimeout, connectionsCheckingInterval: Math.min(NODE_CHECK_EVERY_MS, requestTimeout / 10) };
}

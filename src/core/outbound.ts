/**
 * Requests the server makes to an address a client registered (its JWKS, its back-channel
 * logout URI). Registration refuses such a URL when its host is a private or link-local IP
 * address (flows/manage/clients.ts), but a name is not resolved there, and what it resolves
 * to can change afterwards: here the address is checked again on each connection, after the
 * name is resolved, so `jwks.example.com` pointed at 169.254.169.254 is refused as the literal
 * address would be. TESSERA_ALLOW_PRIVATE_NETWORK_URLS turns both checks off. The same guard,
 * stricter (loopback too), keeps Client ID Metadata Documents inside the public internet.
 * Requests to the upstream identity providers the operator added go through `upstreamFetch`,
 * which bounds how much of an answer is read.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Dispatcher } from 'undici';
import { isPrivateNetworkHost } from './networks.ts';

/** `dns.lookup` with every address at once, as the guard needs; replaceable in tests. */
export type Resolver = (hostname: string, options: LookupAllOptions, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/** A connection refused because its name resolved into a private network. */
export class PrivateNetworkError extends Error {
  readonly code = 'EPRIVATENETWORK';
}

/**
 * A lookup that leaves out the addresses `refused` names, and fails with `refusal` when none
 * is left: what the connection reaches is checked after the name is resolved, on the address
 * actually connected to.
 */
export function guardedLookup(refused: (address: string) => boolean, refusal: (hostname: string) => Error, resolve: Resolver = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const allowed = addresses.filter((entry) => !refused(entry.address));
      if (allowed.length === 0) return callback(refusal(hostname), '', 0);
      if (options.all) return (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
}

/** A lookup that leaves out private and link-local addresses, and fails when none is left. */
export function publicNetworkLookup(resolve: Resolver = dnsLookup): LookupFunction {
  return guardedLookup(isPrivateNetworkHost, (hostname) => new PrivateNetworkError(`${hostname} resolves to a private or link-local address`), resolve);
}

/**
 * `fetch` for URLs a client registered: connecting only outside private networks unless
 * `allowPrivateNetworks`.
 */
export function outboundFetch(allowPrivateNetworks: boolean, resolve?: Resolver): typeof fetch {
  if (allowPrivateNetworks) return fetch;
  // undici is loaded on the first such request, not at start: most servers never make one,
  // and loading it holds about 5 MiB (docs/benchmarks.md, "Peak RSS").
  let dispatcher: Promise<Dispatcher> | undefined;
  // Node's fetch is undici's and takes its dispatcher; RequestInit's type does not name it.
  return async (input, init) => {
    dispatcher ??= import('undici').then(({ Agent }) => new Agent({ connect: { lookup: publicNetworkLookup(resolve) } }));
    return fetch(input, { ...init, dispatcher: await dispatcher } as RequestInit);
  };
}

let shared: typeof fetch | null = null;

/** The process's one `outboundFetch` (one connection pool), as the server's settings ask. */
export function clientUrlFetch(allowPrivateNetworks: boolean): typeof fetch {
  if (allowPrivateNetworks) return fetch;
  return (shared ??= outboundFetch(false));
}

/**
 * The most an upstream identity provider's answer may hold (its discovery document, keys,
 * token and UserInfo answers, GitHub's API): 1 MiB, hundreds of times a real one. Read past
 * it, one answer of 30 MB took the process from 199 to 367 MiB (issue 40, item 10).
 */
export const UPSTREAM_ANSWER_LIMIT_BYTES = 1024 * 1024;

/** An answer refused for being larger than a fetch allows. */
export class AnswerTooLargeError extends Error {
  readonly code = 'EANSWERTOOLARGE';
}

/** Statuses whose response has no body (Fetch: a null body status); `new Response` refuses one. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * `fetch` whose answers are read whole, up to `limitBytes`: a larger one (by its
 * Content-Length, or as it streams in) fails with `AnswerTooLargeError`, and the rest of it
 * is not read. The answer is handed on as a new Response holding what was read.
 */
export function cappedFetch(limitBytes: number, base: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    const tooLarge = () => new AnswerTooLargeError(`the answer is larger than ${limitBytes} bytes`);
    const declared = Number(response.headers.get('content-length') ?? 0);
    if (declared > limitBytes) {
      await response.body?.cancel();
      throw tooLarge();
    }
    if (response.body === null) return response;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limitBytes) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
    const headers = new Headers(response.headers);
    // What was read is decoded already: the length and encoding of the wire no longer apply.
    headers.delete('content-length');
    headers.delete('content-encoding');
    const body = NULL_BODY_STATUSES.has(response.status) ? null : Buffer.concat(chunks);
    return new Response(body, { status: response.status, statusText: response.statusText, headers });
  };
}

/** The process's one fetch for upstream identity providers, its answers capped. */
export const upstreamFetch: typeof fetch = cappedFetch(UPSTREAM_ANSWER_LIMIT_BYTES);

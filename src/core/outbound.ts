/**
 * Requests the server makes to an address a client registered (its JWKS, its back-channel
 * logout URI). Registration refuses such a URL when its host is a private or link-local IP
 * address (flows/manage/clients.ts), but a name is not resolved there, and what it resolves
 * to can change afterwards: here the address is checked again on each connection, after the
 * name is resolved, so `jwks.example.com` pointed at 169.254.169.254 is refused as the literal
 * address would be. TESSERA_ALLOW_PRIVATE_NETWORK_URLS turns both checks off. The same guard,
 * stricter (loopback too), keeps Client ID Metadata Documents inside the public internet.
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

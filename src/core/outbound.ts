/**
 * Requests the server makes to an address a client registered (its JWKS, its back-channel
 * logout URI). Registration refuses such a URL when its host is a private or link-local IP
 * address (flows/manage/clients.ts), but a name is not resolved there, and what it resolves
 * to can change afterwards: here the address is checked again on each connection, after the
 * name is resolved, so `jwks.example.com` pointed at 169.254.169.254 is refused as the literal
 * address would be. TESSERA_ALLOW_PRIVATE_NETWORK_URLS turns both checks off. An app that
 * registered itself (RFC 7591, a metadata document) is held to a stricter rule, at
 * registration and on each connection alike (`requestRefusal`): loopback is refused too,
 * whatever the setting (issue 40). The same guard, stricter still, keeps Client ID Metadata
 * Documents inside the public internet.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import type { Dispatcher } from 'undici';
import { isLoopbackHost, isPrivateNetworkHost } from './networks.ts';

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

/** Whose URL the server requests, and what the operator allows (TESSERA_ALLOW_PRIVATE_NETWORK_URLS). */
export interface UrlRule {
  /** The URL is an app's own (it registered itself), not the operator's. */
  readonly selfRegistered: boolean;
  readonly allowPrivateNetworks: boolean;
}

/**
 * Why the server may not request `host` (a URL's host, or an address a name resolved to)
 * under `rule`, or null when it may. Private and link-local addresses reach into the server's
 * own network (a cloud metadata service at 169.254.169.254). Loopback is the server's own
 * machine: the operator may point a client there (development, a local sidecar), an app that
 * registered itself may not, or anyone with an initial access token could have the server
 * post to any port of its own host.
 */
export function requestRefusal(host: string, rule: UrlRule): string | null {
  if (!rule.allowPrivateNetworks && isPrivateNetworkHost(host)) {
    return 'is a private or link-local address, which the server would request from inside its own network; set TESSERA_ALLOW_PRIVATE_NETWORK_URLS=on to allow it';
  }
  if (rule.selfRegistered && isLoopbackHost(host)) {
    return 'is a loopback address (the server\'s own machine): an app that registers itself may not name one; only the operator can (tessera client add)';
  }
  return null;
}

/** A lookup that leaves out the addresses `rule` refuses, and fails when none is left. */
export function publicNetworkLookup(rule: UrlRule = { selfRegistered: false, allowPrivateNetworks: false }, resolve: Resolver = dnsLookup): LookupFunction {
  const refused = rule.selfRegistered ? 'a private, link-local or loopback address' : 'a private or link-local address';
  return guardedLookup((address) => requestRefusal(address, rule) !== null, (hostname) => new PrivateNetworkError(`${hostname} resolves to ${refused}`), resolve);
}

/**
 * `fetch` for URLs a client registered: connecting only to the addresses `rule` allows
 * (outside private networks unless `allowPrivateNetworks`; never loopback for an app that
 * registered itself).
 */
export function outboundFetch(rule: UrlRule, resolve?: Resolver): typeof fetch {
  if (rule.allowPrivateNetworks && !rule.selfRegistered) return fetch;
  // undici is loaded on the first such request, not at start: most servers never make one,
  // and loading it holds about 5 MiB (docs/benchmarks.md, "Peak RSS").
  let dispatcher: Promise<Dispatcher> | undefined;
  // Node's fetch is undici's and takes its dispatcher; RequestInit's type does not name it.
  return async (input, init) => {
    dispatcher ??= import('undici').then(({ Agent }) => new Agent({ connect: { lookup: publicNetworkLookup(rule, resolve) } }));
    return fetch(input, { ...init, dispatcher: await dispatcher } as RequestInit);
  };
}

const shared = new Map<string, typeof fetch>();

/** The process's `outboundFetch` for `rule` (one connection pool each), as the server's settings ask. */
export function clientUrlFetch(rule: UrlRule): typeof fetch {
  const key = `${rule.selfRegistered} ${rule.allowPrivateNetworks}`;
  let send = shared.get(key);
  if (send === undefined) shared.set(key, (send = outboundFetch(rule)));
  return send;
}

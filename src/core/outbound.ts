/**
 * Requests the server makes to an address a client registered (its JWKS, its back-channel
 * logout URI). Registration refuses such a URL when its host is a private or link-local IP
 * address (flows/manage/clients.ts), but a name is not resolved there, and what it resolves
 * to can change afterwards: here the address is checked again on each connection, after the
 * name is resolved, so `jwks.example.com` pointed at 169.254.169.254 is refused as the literal
 * address would be. TESSERA_ALLOW_PRIVATE_NETWORK_URLS turns both checks off. An app that
 * registered itself (RFC 7591, a metadata document) is held to a stricter rule, at
 * registration and on each connection alike (`requestRefusal`): loopback is refused too,
 * whatever the setting. A webhook added by someone the server's owner delegated to
 * (an admin client, a console operator) is held to the public network too, loopback
 * included, unless the setting allows private networks. The same guard, stricter still, keeps Client ID Metadata
 * Documents inside the public internet. Requests to the upstream identity providers the
 * operator added go through `upstreamFetch`, which bounds how much of an answer is read.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { createRequire } from 'node:module';
import { isIP, type LookupFunction } from 'node:net';
import type * as Undici from 'undici';
import { isLoopbackHost, isPrivateNetworkHost } from './networks.ts';

/** `dns.lookup` with every address at once, as the guard needs; replaceable in tests. */
export type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

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
  /**
   * The URL was given by someone the owner delegated to (a webhook added through the admin API
   * or the console): loopback is refused with the private networks, and allowed with them.
   */
  readonly delegated?: boolean;
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
  if (rule.delegated && !rule.allowPrivateNetworks && isLoopbackHost(host)) {
    return "is a loopback address (the server's own machine): only the server's owner (the tessera command) may name one, unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS=on";
  }
  if (rule.selfRegistered && isLoopbackHost(host)) {
    return "is a loopback address (the server's own machine): an app that registers itself may not name one; only the operator can (tessera client add)";
  }
  return null;
}

/** The addresses `rule` refuses, in words. */
const refusedKind = (rule: UrlRule): string =>
  rule.selfRegistered || (rule.delegated && !rule.allowPrivateNetworks) ? 'a private, link-local or loopback address' : 'a private or link-local address';

/** A lookup that leaves out the addresses `rule` refuses, and fails when none is left. */
export function publicNetworkLookup(rule: UrlRule = { selfRegistered: false, allowPrivateNetworks: false }, resolve: Resolver = dnsLookup): LookupFunction {
  return guardedLookup(
    (address) => requestRefusal(address, rule) !== null,
    (hostname) => new PrivateNetworkError(`${hostname} resolves to ${refusedKind(rule)}`),
    resolve,
  );
}

/**
 * undici's connector for `rule`: a name is looked up by publicNetworkLookup, and an address
 * written in the URL (http://127.0.0.1/, http://[fd00::8]/, a redirect's too) is checked
 * itself, since Node connects to an address without looking it up, so the lookup alone let it
 * through (a webhook at http://10.0.0.8/ added while private networks were allowed was still
 * delivered once they were not).
 */
function guardedConnector(rule: UrlRule, resolve?: Resolver): Undici.buildConnector.connector {
  const connect = undici().buildConnector({ lookup: publicNetworkLookup(rule, resolve) });
  return (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && requestRefusal(host, rule) !== null) {
      callback(new PrivateNetworkError(`${options.hostname} is ${refusedKind(rule)}`), null);
      return;
    }
    connect(options, callback);
  };
}

/** The parts of undici the server uses: its Agent (its pools and clients), its connector, and `request`. */
interface UndiciParts {
  readonly Agent: typeof Undici.Agent;
  readonly buildConnector: typeof Undici.buildConnector;
  readonly request: (this: Undici.Dispatcher, options: Undici.Dispatcher.RequestOptions) => Promise<Undici.Dispatcher.ResponseData>;
}

const load = createRequire(import.meta.url);
let undiciParts: UndiciParts | undefined;

/**
 * undici, loaded on the first request to a URL a client registered, not at start: most servers
 * never make one. Each part from its own module rather than undici's index, which also loads
 * undici's fetch, WebSocket, EventSource, cache and mock modules and, through them, Node's own
 * copy of undici, readline, worker_threads and zlib: 5–6 MiB of a server's memory, for none of
 * which a POST or Node's fetch with this Agent asks (docs/benchmarks.md, "The events flood's
 * peak RSS"). undici has no `exports` map, so these paths resolve as any file of it;
 * src/core/outbound.test.ts posts and fetches through them.
 */
function undici(): UndiciParts {
  undiciParts ??= {
    Agent: load('undici/lib/dispatcher/agent.js') as typeof Undici.Agent,
    buildConnector: load('undici/lib/core/connect.js') as typeof Undici.buildConnector,
    request: load('undici/lib/api/api-request.js') as UndiciParts['request'],
  };
  return undiciParts;
}

/**
 * `fetch` for URLs a client registered: connecting only to the addresses `rule` allows
 * (outside private networks unless `allowPrivateNetworks`; never loopback for an app that
 * registered itself).
 */
export function outboundFetch(rule: UrlRule, resolve?: Resolver): typeof fetch {
  if (rule.allowPrivateNetworks && !rule.selfRegistered) return fetch;
  // Made on the first such request (undici loaded then).
  let dispatcher: Undici.Dispatcher | undefined;
  // Node's fetch is undici's and takes its dispatcher; RequestInit's type does not name it.
  return async (input, init) => {
    dispatcher ??= new (undici().Agent)({ connect: guardedConnector(rule, resolve) });
    return fetch(input, { ...init, dispatcher } as RequestInit);
  };
}

/** A POST made by `outboundPost`. */
export interface OutboundPost {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Ends the request early (the server stopping). */
  readonly signal: AbortSignal;
  /** The longest the request may take, answer included, milliseconds. */
  readonly timeoutMs: number;
  /** The answers whose body is read (a receiver's reason for a refusal), up to `answerLimitBytes`; the others' are not waited for. */
  readonly readAnswer?: (status: number) => boolean;
  readonly answerLimitBytes?: number;
}

/** Its answer: the status, and the start of the body (up to `answerLimitBytes`) as text when it was read, or empty. */
export interface OutboundAnswer {
  readonly status: number;
  readonly body: string;
}

/** Posts to a URL a client or a receiver registered. */
export type Poster = (url: string, post: OutboundPost) => Promise<OutboundAnswer>;

/** The most of an answer not read that is drained to keep its connection. */
const DISCARDED_ANSWER_LIMIT_BYTES = 16 * 1024;

/**
 * A POST to URLs a client registered, for deliveries sent by the thousand (Security Event
 * Tokens pushed, webhooks' messages): the same rule and guard as `outboundFetch`, on every
 * connection, through undici's `request` over a pool of kept-alive connections per origin.
 * Fetch's own work per request (its Request, Headers and Response objects, the web streams
 * of the body, AbortSignal.any) cost about three times what the request itself does
 * (docs/benchmarks.md, "The events flood"). No redirect is followed. A request that fails
 * or runs past `timeoutMs` rejects, with the reason in its error's `code` (fetch-failure.ts
 * reads it) or as a TimeoutError.
 */
export function outboundPost(rule: UrlRule, resolve?: Resolver): Poster {
  const open = rule.allowPrivateNetworks && !rule.selfRegistered;
  // Made on the first delivery (undici loaded then), as outboundFetch's is.
  let agent: Undici.Dispatcher | undefined;
  return async (url, { headers, body, signal, timeoutMs, readAnswer, answerLimitBytes = 0 }) => {
    const { Agent, request } = undici();
    agent ??= new Agent(open ? {} : { connect: guardedConnector(rule, resolve) });
    const { origin, pathname, search } = new URL(url);
    // One timer and one controller per request: AbortSignal.timeout and AbortSignal.any cost more.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new DOMException(`no answer in ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
    const stop = () => controller.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    };
    let draining = false;
    try {
      if (signal.aborted) stop();
      const answer = await request.call(agent, { origin, path: `${pathname}${search}`, method: 'POST', headers, body, signal: controller.signal });
      if (readAnswer?.(answer.statusCode) !== true) {
        // Read to its end in the background, within the same time limit, when short (the
        // connection is then kept); a longer or slower one has its connection closed.
        draining = true;
        answer.body
          .dump({ limit: DISCARDED_ANSWER_LIMIT_BYTES })
          .catch(() => {})
          .finally(done);
        return { status: answer.statusCode, body: '' };
      }
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of answer.body as AsyncIterable<Buffer>) {
        if (size < answerLimitBytes) chunks.push(chunk);
        size += chunk.length;
        // The rest is not read: the connection is closed rather than drained.
        if (size >= answerLimitBytes) {
          answer.body.destroy();
          break;
        }
      }
      return { status: answer.statusCode, body: Buffer.concat(chunks).subarray(0, answerLimitBytes).toString('utf8') };
    } finally {
      if (!draining) done();
    }
  };
}

/** One key for each rule that sends differently: the process keeps one sender per key. */
function ruleKey(rule: UrlRule): string {
  return `${rule.selfRegistered} ${rule.allowPrivateNetworks} ${rule.delegated === true}`;
}

const posters = new Map<string, Poster>();

/** The process's `outboundPost` for `rule` (one pool of connections per origin each). */
export function clientUrlPost(rule: UrlRule): Poster {
  const key = ruleKey(rule);
  let post = posters.get(key);
  if (post === undefined) posters.set(key, (post = outboundPost(rule)));
  return post;
}

const shared = new Map<string, typeof fetch>();

/** The process's `outboundFetch` for `rule` (one connection pool each), as the server's settings ask. */
export function clientUrlFetch(rule: UrlRule): typeof fetch {
  const key = ruleKey(rule);
  let send = shared.get(key);
  if (send === undefined) shared.set(key, (send = outboundFetch(rule)));
  return send;
}

/**
 * The most an upstream identity provider's answer may hold (its discovery document, keys,
 * token and UserInfo answers, GitHub's API): 1 MiB, hundreds of times a real one. Read past
 * it, one answer of 30 MB took the process from 199 to 367 MiB.
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

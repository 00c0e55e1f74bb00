/**
 * The public keys of `private_key_jwt` clients (RFC 7523 §2.2, OIDC Core §9, §10.1.1): a JWK
 * Set registered with the client, or one fetched from its `jwks_uri`, cached, and fetched
 * again when an assertion names a `kid` the cached copy lacks (the client rotated its keys).
 */
import { createLocalJWKSet, errors, type JWSHeaderParameters, type JWTVerifyGetKey } from 'jose';
import type { ClientAuthSettings } from '../config/index.ts';
import type { Clock } from '../core/clock.ts';
import type { ClientRecord } from '../store/types.ts';

/** A JWKS larger than this is refused: a few dozen keys fit with room to spare. */
export const MAX_JWKS_BYTES = 64 * 1024;
/** Different `jwks_uri`s cached at once; past it the oldest entry makes room. */
const MAX_ENTRIES = 1000;

/** The client's keys could not be had: its JWKS did not answer in time, or answered garbage. */
export class ClientKeysError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ClientKeysError';
  }
}

type KeySet = ReturnType<typeof createLocalJWKSet>;

interface Entry {
  readonly keys: KeySet;
  fetchedAt: number;
}

/** A JWK Set as registered or fetched: refuses anything that is not one, and private keys. */
export function parseJwks(value: unknown): KeySet {
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { keys?: unknown }).keys)) {
    throw new ClientKeysError('not a JWK Set: a JSON object with a "keys" array');
  }
  const keys = (value as { keys: unknown[] }).keys;
  if (keys.some((key) => typeof key !== 'object' || key === null || 'd' in key || (key as { kty?: unknown }).kty === 'oct')) {
    throw new ClientKeysError('a JWK Set of public keys only: no "d", no symmetric keys');
  }
  try {
    return createLocalJWKSet(value as Parameters<typeof createLocalJWKSet>[0]);
  } catch (error) {
    throw new ClientKeysError('not a valid JWK Set', { cause: error });
  }
}

/** Reads at most `MAX_JWKS_BYTES` of a response body. */
async function readLimited(response: Response): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > MAX_JWKS_BYTES) throw new ClientKeysError(`the JWKS is larger than ${MAX_JWKS_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export class ClientKeySets {
  readonly #clock: Clock;
  readonly #settings: ClientAuthSettings;
  readonly #fetchFor: (selfRegistered: boolean) => typeof fetch;
  readonly #entries = new Map<string, Entry>();
  readonly #pending = new Map<string, Promise<Entry>>();

  /** `fetchFor`: the fetch for the URLs of the operator's clients (false) or of apps that registered themselves (true). */
  constructor(clock: Clock, settings: ClientAuthSettings, fetchFor: (selfRegistered: boolean) => typeof fetch = () => fetch) {
    this.#clock = clock;
    this.#settings = settings;
    this.#fetchFor = fetchFor;
  }

  /** A key getter for `jwtVerify`, over the client's registered or published keys. */
  keysOf(client: ClientRecord): JWTVerifyGetKey {
    return this.keysFrom(client, this.#fetchFor(client.registeredBy !== undefined));
  }

  /**
   * A key getter over a JWK Set given, or the one at `jwksUri`, fetched with `send` and cached
   * as a client's is: a trusted issuer's keys (flows/jwt-bearer/token.ts).
   */
  keysFrom(source: { readonly jwks: unknown; readonly jwksUri: string | null }, send: typeof fetch): JWTVerifyGetKey {
    if (source.jwks !== null && source.jwks !== undefined) {
      const keys = parseJwks(source.jwks);
      return (header) => keys(header);
    }
    const uri = source.jwksUri;
    if (uri === null) throw new ClientKeysError('no keys are registered');
    return (header) => this.#fromUri(uri, header, send);
  }

  async #fromUri(uri: string, header: JWSHeaderParameters, send: typeof fetch) {
    const now = this.#clock.now();
    let entry = this.#entries.get(uri);
    if (entry === undefined) {
      entry = await this.#refresh(uri, send);
    } else if (now - entry.fetchedAt >= this.#settings.jwksCacheSeconds * 1000) {
      const stale = entry;
      // A client whose server is down for a moment keeps working with the keys it had; they
      // are tried again after another cache period rather than on every request.
      entry = await this.#refresh(uri, send).catch(() => {
        stale.fetchedAt = now;
        return stale;
      });
    }
    try {
      return await entry.keys(header);
    } catch (error) {
      const mayRefetch = error instanceof errors.JWKSNoMatchingKey && now - entry.fetchedAt >= this.#settings.jwksRefetchSeconds * 1000;
      if (!mayRefetch) throw error;
      return (await this.#refresh(uri, send)).keys(header);
    }
  }

  /** Fetches `uri` once for all the requests that need it now. */
  #refresh(uri: string, send: typeof fetch): Promise<Entry> {
    let pending = this.#pending.get(uri);
    if (pending === undefined) {
      pending = this.#load(uri, send).finally(() => this.#pending.delete(uri));
      this.#pending.set(uri, pending);
    }
    return pending;
  }

  async #load(uri: string, send: typeof fetch): Promise<Entry> {
    const timeoutMs = this.#settings.jwksTimeoutMs;
    let text: string;
    try {
      // The timeout covers the body too: a server that trickles its answer is cut off.
      const response = await send(uri, {
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
        headers: { accept: 'application/jwk-set+json, application/json' },
      });
      if (response.status !== 200) throw new ClientKeysError(`the JWKS answered ${response.status}`);
      text = await readLimited(response);
    } catch (error) {
      if (error instanceof ClientKeysError) throw error;
      const timedOut = error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError');
      throw new ClientKeysError(timedOut ? `the JWKS did not answer within ${timeoutMs} ms` : 'the JWKS could not be fetched', { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new ClientKeysError('the JWKS is not JSON', { cause: error });
    }
    const entry: Entry = { keys: parseJwks(json), fetchedAt: this.#clock.now() };
    this.#entries.delete(uri);
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(uri, entry);
    return entry;
  }
}

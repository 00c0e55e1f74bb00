import { createPrivateKey, hkdfSync, randomUUID, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { Clock } from '../core/clock.ts';
import type { SigningAlgorithm } from '../config/index.ts';
import type { KeyStore, SigningKeyRecord } from '../store/types.ts';

export const SIGNING_ALGORITHMS: readonly SigningAlgorithm[] = ['RS256', 'ES256'];

export interface KeySettings {
  /** How long a new key is published before it signs (seconds). */
  readonly leadTimeSeconds: number;
  /** The longest lifetime of anything signed (seconds): how long a retired key stays published. */
  readonly maxTokenLifetimeSeconds: number;
}

export interface ActiveKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly key: CryptoKey;
  /** The same private key for node:crypto, which signs without WebCrypto's overhead (jws.ts). */
  readonly privateKey: KeyObject;
}

/**
 * Keeps at most this long a view of the store's keys in memory. Shorter than any sensible
 * lead time, so every instance has seen a new key well before it starts to sign.
 */
const CACHE_MS = 30_000;

async function newKey(alg: SigningAlgorithm, now: number, activatesAt: number): Promise<SigningKeyRecord> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
  const kid = randomUUID();
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg };
  return { kid, alg, privateJwk, publicJwk, createdAt: now, activatesAt, retiresAt: null, expiresAt: null };
}

/**
 * Signing keys: generated on first start, kept in the store so every instance signs with
 * the same ones, rotated with a publication lead time (a key is in the JWKS before it
 * signs) and kept published after retirement until the last token it signed has expired.
 */
export class KeyManager {
  readonly #store: KeyStore;
  readonly #clock: Clock;
  readonly #settings: KeySettings;
  #cache: { loadedAt: number; published: SigningKeyRecord[]; active: Map<SigningAlgorithm, Promise<ActiveKey>> } | undefined;
  /** The secrets derived from the ES256 key `kid`, by purpose: a request may use several (the approval form's and the sign-in stamp's). */
  #derived: { readonly kid: string; readonly secrets: Map<string, Uint8Array> } | undefined;

  constructor(store: KeyStore, clock: Clock, settings: KeySettings) {
    this.#store = store;
    this.#clock = clock;
    this.#settings = settings;
  }

  /** Generates a key for every algorithm that has none that can sign now. Run at start. */
  async ensureKeys(): Promise<void> {
    const now = this.#clock.now();
    const published = await this.#store.listPublished(now);
    for (const alg of SIGNING_ALGORITHMS) {
      if (!published.some((key) => key.alg === alg && canSign(key, now))) {
        // Nothing has been signed yet that a relying party could have cached keys for, so a
        // first key may sign at once.
        await this.#store.add(await newKey(alg, now, now));
      }
    }
    this.#cache = undefined;
  }

  /**
   * Starts a rotation: publishes a new key per algorithm that signs after the lead time,
   * and schedules the current keys to stop signing then and to leave the JWKS once
   * everything they signed has expired. Returns the new keys.
   */
  async rotate(): Promise<SigningKeyRecord[]> {
    const now = this.#clock.now();
    const activatesAt = now + this.#settings.leadTimeSeconds * 1000;
    const published = await this.#store.listPublished(now);
    const added: SigningKeyRecord[] = [];
    for (const alg of SIGNING_ALGORITHMS) {
      const next = await newKey(alg, now, activatesAt);
      await this.#store.add(next);
      added.push(next);
      for (const key of published) {
        if (key.alg === alg && (key.retiresAt === null || key.retiresAt > activatesAt)) {
          await this.#store.schedule(key.kid, activatesAt, activatesAt + this.#settings.maxTokenLifetimeSeconds * 1000);
        }
      }
    }
    this.#cache = undefined;
    return added;
  }

  /**
   * The public keys to publish (RFC 7517 JWK Set), including those not yet signing. Read
   * from the store every time, not from the signing cache: a key rotated in by any
   * instance or by `tessera keys rotate` is published by every instance at once, so its
   * lead time is whole everywhere. Relying parties cache the JWKS, so this is rarely asked.
   */
  async jwks(): Promise<{ keys: JWK[] }> {
    const published = await this.#store.listPublished(this.#clock.now());
    published.sort((a, b) => a.activatesAt - b.activatesAt || a.createdAt - b.createdAt);
    return { keys: published.map((key) => ({ ...key.publicJwk }) as JWK) };
  }

  /** The key that signs now with `alg`: the newest that has activated and not retired. */
  async signingKey(alg: SigningAlgorithm): Promise<ActiveKey> {
    const cache = await this.#load();
    let active = cache.active.get(alg);
    if (!active) {
      const now = this.#clock.now();
      const record = cache.published.filter((key) => key.alg === alg && canSign(key, now)).at(-1);
      if (!record) throw new Error(`no ${alg} signing key is active; run 'tessera keys rotate' or restart to generate one`);
      active = importJWK(record.privateJwk as JWK, alg).then((key) => ({
        kid: record.kid,
        alg,
        key: key as CryptoKey,
        privateKey: createPrivateKey({ key: record.privateJwk as JWK & Record<string, string>, format: 'jwk' }),
      }));
      active.catch(() => cache.active.delete(alg));
      cache.active.set(alg, active);
    }
    return active;
  }

  /**
   * A 256-bit secret for `purpose` (HKDF, RFC 5869) from the private ES256 key that signs
   * now: every instance shares the keys through the store, so every instance derives the
   * same secret, with nothing more to configure. It changes when that key is rotated out.
   */
  async derivedSecret(purpose: string): Promise<Uint8Array> {
    const key = await this.signingKey('ES256');
    if (this.#derived?.kid !== key.kid) this.#derived = { kid: key.kid, secrets: new Map() };
    let secret = this.#derived.secrets.get(purpose);
    if (secret === undefined) {
      const d = key.privateKey.export({ format: 'jwk' }).d ?? '';
      secret = new Uint8Array(hkdfSync('sha256', Buffer.from(d, 'base64url'), '', `tessera ${purpose}`, 32));
      this.#derived.secrets.set(purpose, secret);
    }
    return secret;
  }

  async #load() {
    const now = this.#clock.now();
    // A key that activates or retires inside the cache window invalidates it at that moment.
    if (this.#cache && now - this.#cache.loadedAt < CACHE_MS && !this.#cache.published.some((key) => crosses(key, this.#cache!.loadedAt, now))) {
      return this.#cache;
    }
    const published = await this.#store.listPublished(now);
    published.sort((a, b) => a.activatesAt - b.activatesAt || a.createdAt - b.createdAt);
    this.#cache = { loadedAt: now, published, active: new Map() };
    return this.#cache;
  }
}

function canSign(key: SigningKeyRecord, now: number): boolean {
  return key.activatesAt <= now && (key.retiresAt === null || key.retiresAt > now);
}

function crosses(key: SigningKeyRecord, from: number, to: number): boolean {
  return [key.activatesAt, key.retiresAt, key.expiresAt].some((t) => t !== null && t > from && t <= to);
}

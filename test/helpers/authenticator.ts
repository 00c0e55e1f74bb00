/**
 * A software passkey for tests that speak HTTP without a browser: it answers the options
 * the server gives exactly as an authenticator and a browser together would (WebAuthn
 * Level 3 §6.1 authenticator data, §5.8.1 client data, "none" attestation in CBOR), and
 * can be told to lie: another origin, another RP ID, a counter that went backwards. The
 * real browser path is test/passkeys-browser.test.ts, with Chromium's virtual authenticator.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/** RFC 8949 CBOR, only what attestation objects and COSE keys need. */
function cbor(value: unknown): Buffer {
  const head = (major: number, length: number): Buffer => {
    if (length < 24) return Buffer.from([(major << 5) | length]);
    if (length < 256) return Buffer.from([(major << 5) | 24, length]);
    const out = Buffer.alloc(3);
    out[0] = (major << 5) | 25;
    out.writeUInt16BE(length, 1);
    return out;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)]);
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  if (value instanceof Map) return Buffer.concat([head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)])]);
  throw new Error(`cannot encode ${typeof value}`);
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64url = (data: Buffer) => data.toString('base64url');

interface Lies {
  readonly origin?: string;
  readonly rpId?: string;
  /** Sign with this counter instead of the next one. */
  readonly counter?: number;
  /** false: a security key without a PIN, which tests presence only (no UV flag). */
  readonly userVerified?: boolean;
}

export class SoftwarePasskey {
  readonly credentialId = randomBytes(16);
  readonly #privateKey: KeyObject;
  readonly #publicKey: KeyObject;
  counter = 0;
  userHandle: string | null = null;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    this.#publicKey = publicKey;
  }

  get id(): string {
    return b64url(this.credentialId);
  }

  #authData(rpId: string, flags: number, counter: number, attested?: Buffer): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(counter);
    return Buffer.concat([sha256(rpId), Buffer.from([flags]), count, ...(attested ? [attested] : [])]);
  }

  /**
   * What the sign-up and invitation pages post for a passkey made with `options` at `origin`:
   * the attestation, and the new account's id the options were asked for.
   */
  newAccountFields(options: Record<string, any>, origin: string): { response: string; passkey_user: string } {
    return { response: JSON.stringify(this.register(options, origin)), passkey_user: options['user']['id'] };
  }

  /** navigator.credentials.create() with these options (from /account/passkeys/options). */
  register(options: Record<string, any>, origin: string, lies: Lies = {}): Record<string, unknown> {
    this.userHandle = options['user']['id'];
    const jwk = this.#publicKey.export({ format: 'jwk' });
    const cose = cbor(
      new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attested = Buffer.concat([Buffer.alloc(16), idLength, this.credentialId, cose]);
    // UP | UV | AT
    const authData = this.#authData(lies.rpId ?? options['rp']['id'], 0x01 | 0x04 | 0x40, this.counter, attested);
    const clientData = JSON.stringify({ type: 'webauthn.create', challenge: options['challenge'], origin: lies.origin ?? origin, crossOrigin: false });
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(Buffer.from(clientData)),
        attestationObject: b64url(
          cbor(
            new Map<string, unknown>([
              ['fmt', 'none'],
              ['attStmt', new Map()],
              ['authData', authData],
            ]),
          ),
        ),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** navigator.credentials.get() with these options (from /login/passkey/options). */
  authenticate(options: Record<string, any>, origin: string, lies: Lies = {}): Record<string, unknown> {
    const counter = lies.counter ?? (this.counter += 1);
    // UP, and UV unless told to test presence only.
    const authData = this.#authData(lies.rpId ?? options['rpId'], lies.userVerified === false ? 0x01 : 0x01 | 0x04, counter);
    const clientData = Buffer.from(
      JSON.stringify({ type: 'webauthn.get', challenge: options['challenge'], origin: lies.origin ?? origin, crossOrigin: false }),
    );
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), this.#privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(signature),
        userHandle: this.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}

/**
 * Asserts that a new account's passkey made with `options` for another origin is refused by
 * `post`, and the right answer to the same options after it too: the refused answer spent the
 * challenge (the sign-up and invitation pages, `origin` theirs).
 */
export async function assertOtherOriginSpendsChallenge(
  post: (answer: { response: string; passkey_user: string }) => Promise<{ status: number }>,
  options: Record<string, any>,
  origin: string,
): Promise<void> {
  const passkey = new SoftwarePasskey();
  assert.equal((await post(passkey.newAccountFields(options, 'https://evil.example'))).status, 400, 'another origin');
  assert.equal((await post(passkey.newAccountFields(options, origin))).status, 400, 'its challenge was used by the refused answer');
}

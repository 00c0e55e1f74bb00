/**
 * RFC 9449 §8 (Authorization Server-Provided Nonce) and §9 (Resource Server-Provided Nonce):
 * "The nonce value is opaque to the client"; the server decides how long one is good.
 *
 * Nonces here need no storage: a nonce is an HMAC of the current time step under a secret
 * every instance shares, so every instance computes the same one, and the one of the step
 * before is still accepted (a nonce lives between one and two steps). §8.2: the server
 * "MAY supply the new nonce value" in any response; the token endpoint and userinfo send
 * the current one on each answer.
 */
import { createHmac } from 'node:crypto';
import type { Clock } from '../../core/clock.ts';
import { constantTimeEqual } from '../../core/crypto.ts';

export class DpopNonces {
  readonly #secret: () => Promise<Uint8Array>;
  readonly #clock: Clock;
  readonly #stepMs: number;

  /**
   * `secret`: the shared key, asked for on each use (the composition root derives it from
   * the signing keys in the store, which every instance shares). `lifetimeSeconds`: one step.
   */
  constructor(secret: () => Promise<Uint8Array>, clock: Clock, lifetimeSeconds: number) {
    this.#secret = secret;
    this.#clock = clock;
    this.#stepMs = lifetimeSeconds * 1000;
  }

  async #at(step: number): Promise<string> {
    return createHmac('sha256', await this.#secret())
      .update(`dpop-nonce:${step}`)
      .digest()
      .subarray(0, 18)
      .toString('base64url');
  }

  /** The nonce to hand out now. */
  async current(): Promise<string> {
    return this.#at(Math.floor(this.#clock.now() / this.#stepMs));
  }

  /** Whether a proof's nonce is the current one or the one before it. */
  async accepts(nonce: string): Promise<boolean> {
    if (nonce.length > 64) return false;
    const step = Math.floor(this.#clock.now() / this.#stepMs);
    const [current, previous] = await Promise.all([this.#at(step), this.#at(step - 1)]);
    // Both compared, so the time taken does not say which one matched.
    const matches = [constantTimeEqual(nonce, current), constantTimeEqual(nonce, previous)];
    return matches[0]! || matches[1]!;
  }
}

/**
 * Server-provided DPoP nonces (RFC 9449 §8, §9) without HTTP (flows/dpop/nonce.ts): the nonce
 * handed out in each time step, how long one is accepted, what is never accepted, and that
 * every instance sharing the store computes the same one from the signing key, as app.ts wires
 * it, on a clock the test moves. src/flows/dpop/proof.test.ts checks use_dpop_nonce at the
 * token endpoint through checkDpopProof; test/dpop-proofs.test.ts sends DPoP-Nonce and
 * use_dpop_nonce through the token endpoint and UserInfo.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { ManualClock } from '../../core/clock.ts';
import { USERINFO_PATH } from '../../core/endpoints.ts';
import { KeyManager } from '../../tokens/keys.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { checkSenderConstraint } from '../lifecycle/access-token.ts';
import { DpopNonces } from './nonce.ts';
import { accessTokenHash, checkDpopProof, type DpopTarget } from './proof.ts';

/** TESSERA_DPOP_NONCE_LIFETIME's default: one step, in seconds. */
const STEP = 300;
const STEP_MS = STEP * 1000;
const secretOf = (fill: number) => new Uint8Array(32).fill(fill);

describe('DPoP nonces (RFC 9449 §8)', () => {
  const clock = new ManualClock();
  const nonces = new DpopNonces(async () => secretOf(1), clock, STEP);
  /** The first millisecond of a step, past the clock's time. */
  const stepStart = () => Math.ceil((clock.now() + 1) / STEP_MS) * STEP_MS;

  it('hands out one nonce through a whole step and another from the first millisecond of the next, never one seen before', async () => {
    const start = stepStart();
    clock.set(start);
    const first = await nonces.current();
    // §8.1: "NONCE = 1*NQCHAR"; opaque to the client, and not one it could guess (at least 128 bits).
    assert.match(first, /^[A-Za-z0-9_-]{22,64}$/);
    clock.set(start + STEP_MS - 1);
    assert.equal(await nonces.current(), first, 'the last millisecond of its step');
    const seen = new Set([first]);
    for (let step = 1; step <= 5; step += 1) {
      clock.set(start + step * STEP_MS);
      const next = await nonces.current();
      assert.ok(!seen.has(next), `step ${step} has a nonce of its own`);
      seen.add(next);
    }
  });

  it('accepts a nonce through the rest of its step and the whole step after, and refuses it from the step after that', async () => {
    const start = stepStart();
    clock.set(start);
    const early = await nonces.current();
    clock.set(start + STEP_MS - 1);
    const late = await nonces.current();
    assert.equal(late, early);
    const cases: [string, number, boolean][] = [
      ['when issued', start, true],
      ['the first millisecond of the next step', start + STEP_MS, true],
      ['the last millisecond of the next step', start + 2 * STEP_MS - 1, true],
      ['the first millisecond of the step after', start + 2 * STEP_MS, false],
      ['a long while after', start + 20 * STEP_MS, false],
    ];
    for (const [when, at, accepted] of cases) {
      clock.set(at);
      assert.equal(await nonces.accepts(early), accepted, when);
    }
  });

  it("refuses a nonce never issued, one of a step still to come, one made under another server's secret, and one too long", async () => {
    const start = stepStart();
    clock.set(start + STEP_MS);
    const toCome = await nonces.current();
    clock.set(start);
    const current = await nonces.current();
    const elsewhere = await new DpopNonces(async () => secretOf(2), clock, STEP).current();
    const flipped = `${current.slice(0, -1)}${current.endsWith('A') ? 'B' : 'A'}`;
    const cases: [string, string][] = [
      ['made up', 'made-up'],
      ['empty', ''],
      ['one character changed', flipped],
      ['the current one with more after it', `${current}x`],
      ['of the next step, asked in this one', toCome],
      ["of another server's secret", elsewhere],
      ['longer than any nonce (64 characters at most)', current.repeat(3)],
    ];
    for (const [what, nonce] of cases) assert.equal(await nonces.accepts(nonce), false, what);
    assert.equal(await nonces.accepts(current), true);
  });

  it('asks for the secret on each use: a new secret ends the nonces made under the old one at once', async () => {
    let secret = secretOf(4);
    const changing = new DpopNonces(async () => secret, clock, STEP);
    const old = await changing.current();
    assert.equal(await changing.accepts(old), true);
    secret = secretOf(5);
    assert.equal(await changing.accepts(old), false, 'refused within its step, under the new secret');
    assert.notEqual(await changing.current(), old);
    assert.equal(await changing.accepts(await changing.current()), true);
  });
});

describe('DPoP nonces as the server wires them: from the signing key in the store (app.ts)', () => {
  let world: FlowWorld;
  /** As app.ts makes them, from the world's keys; and as another instance on the same store would. */
  let here: DpopNonces;
  let there: DpopNonces;

  before(async () => {
    world = await flowWorld();
    const lifetime = world.config.dpop.nonceLifetime;
    here = new DpopNonces(() => world.keys.derivedSecret('dpop nonce'), world.clock, lifetime);
    const otherKeys = new KeyManager(world.store.keys, world.clock, { leadTimeSeconds: world.config.keyLeadTimeSeconds, maxTokenLifetimeSeconds: 3600 });
    there = new DpopNonces(() => otherKeys.derivedSecret('dpop nonce'), world.clock, lifetime);
  });
  after(() => world.close());

  it('gives every instance the same nonce, each accepting what another handed out, until a new signing key signs', async () => {
    const nonce = await here.current();
    assert.equal(await there.current(), nonce, 'nothing to share but the store');
    assert.equal(await there.accepts(nonce), true);

    const stepMs = world.config.dpop.nonceLifetime * 1000;
    world.clock.set(Math.ceil(world.clock.now() / stepMs) * stepMs);
    await world.keys.rotate();
    const activates = world.clock.now() + world.config.keyLeadTimeSeconds * 1000;
    world.clock.set(activates - 1);
    const lastOfOldKey = await here.current();
    assert.equal(await there.accepts(lastOfOldKey), true);
    world.clock.set(activates);
    // The step before's nonce, yet made under the key that no longer signs: the client is
    // answered use_dpop_nonce with the new one (§8), on every instance alike.
    assert.equal(await here.accepts(lastOfOldKey), false);
    assert.equal(await there.accepts(lastOfOldKey), false);
    assert.equal(await there.current(), await here.current());
  });

  it('at a resource (§9), refuses a proof without the current nonce with use_dpop_nonce, and takes the bound token with one that has it', async () => {
    const dpop = { store: world.store, clock: world.clock, settings: { ...world.config.dpop, nonces: true }, nonces: here };
    const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = await exportJWK(publicKey);
    const jkt = await calculateJwkThumbprint(jwk, 'sha256');
    const token = 'the-access-token';
    const userinfo: DpopTarget = { method: 'GET', url: `${FLOW_ISSUER}${USERINFO_PATH}`, accessToken: token };
    const proof = (nonce?: string) =>
      new SignJWT({
        jti: randomUUID(),
        htm: 'GET',
        htu: userinfo.url,
        iat: Math.floor(world.clock.now() / 1000),
        ath: accessTokenHash(token),
        ...(nonce ? { nonce } : {}),
      })
        .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk })
        .sign(privateKey);
    const stale = await here.current();
    world.clock.advance(2 * world.config.dpop.nonceLifetime * 1000);
    assert.equal(await outcome(async () => checkDpopProof(dpop, await proof(), userinfo)), 'use_dpop_nonce', 'no nonce');
    assert.equal(await outcome(async () => checkDpopProof(dpop, await proof(stale), userinfo)), 'use_dpop_nonce', 'a nonce two steps old');
    const checked = await checkDpopProof(dpop, await proof(await here.current()), userinfo);
    assert.equal(checked?.jkt, jkt);
    assert.equal(await outcome(() => checkSenderConstraint({ jkt }, { scheme: 'DPoP', token, proof: checked })), 'ok');
  });
});

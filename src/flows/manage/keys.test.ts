/**
 * Signing keys without HTTP: `listKeys`, `keyJson`, `keyState` and `rotateKeys`, the operations
 * behind `tessera keys list|rotate`, /admin/keys and the console's keys page, over the flow
 * world's KeyManager and a clock the test moves through a whole rotation: the new keys published
 * at once and signing after the lead time, the old ones retired then and withdrawn once the
 * longest token they signed has expired. test/cli.test.ts checks the command against a running
 * server's JWKS, test/admin-api.test.ts the admin API's answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { SigningKeyRecord } from '../../store/types.ts';
import { keyJson, keyState, listKeys, rotateKeys } from './keys.ts';

/** The world's KeyManager is built with this: how long a retired key stays published (seconds). */
const MAX_TOKEN_LIFETIME = 3600;

describe('signing keys (flows/manage/keys.ts)', () => {
  let world: FlowWorld;
  let lead: number;

  before(async () => {
    world = await flowWorld();
    lead = world.config.keyLeadTimeSeconds * 1000;
  });
  after(() => world.close());

  const deps = () => ({ ...world.manage, keys: world.keys });
  const iso = (ms: number) => new Date(ms).toISOString();
  const published = async () => (await world.keys.jwks()).keys.map((key) => key.kid);
  const states = async () => new Map((await world.store.keys.list()).map((key) => [key.kid, keyState(key, world.clock.now())]));

  it("says each key's state at a time: published before it signs, signing, retired, withdrawn", () => {
    const t = Date.UTC(2026, 5, 1);
    const key = (fields: Partial<SigningKeyRecord>): SigningKeyRecord => ({
      kid: 'k',
      alg: 'ES256',
      privateJwk: {},
      publicJwk: {},
      createdAt: t - 10_000,
      activatesAt: t - 5000,
      retiresAt: null,
      expiresAt: null,
      ...fields,
    });
    const cases: [string, SigningKeyRecord, string][] = [
      ['a key that has activated and has no successor', key({}), 'signing'],
      ['a key that activates at this very moment', key({ activatesAt: t }), 'signing'],
      ['a key not yet activated', key({ activatesAt: t + 1 }), `published, signs from ${iso(t + 1)}`],
      ['a key scheduled to retire later', key({ retiresAt: t + 1, expiresAt: t + 2 }), 'signing'],
      ['a key retired at this very moment', key({ retiresAt: t, expiresAt: t + 3_600_000 }), `retired, published until ${iso(t + 3_600_000)}`],
      ['a retired key with no end of publication', key({ retiresAt: t - 1 }), 'retired, published until never'],
      ['a key whose publication ended at this very moment', key({ retiresAt: t - 1, expiresAt: t }), 'withdrawn'],
      ['a withdrawn key, whatever else it says', key({ activatesAt: t + 5, expiresAt: t - 1 }), 'withdrawn'],
    ];
    for (const [what, record, expected] of cases) assert.equal(keyState(record, t), expected, what);
  });

  it('lists the keys the server made at start, one per algorithm, signing, and shows them without their private part', async () => {
    const now = world.clock.now();
    const keys = await listKeys(world.manage, now);
    assert.deepEqual(keys.map((key) => key.alg).sort(), ['ES256', 'RS256']);
    for (const key of keys) {
      const shown = keyJson(key, now);
      assert.deepEqual(shown, {
        kid: key.kid,
        alg: key.alg,
        created_at: iso(now),
        activates_at: iso(now),
        retires_at: null,
        expires_at: null,
        state: 'signing',
      });
      const text = JSON.stringify(shown);
      for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) {
        const value = key.privateJwk[secret];
        if (typeof value === 'string') assert.equal(text.includes(value), false, `the private ${secret} is not shown`);
      }
    }
  });

  it('rotates: new keys published at once and signing after the lead time, the old retired then and withdrawn once their tokens have expired', async () => {
    const started = world.clock.now();
    const before = await listKeys(world.manage, started);
    const old = before.map((key) => key.kid);
    const rotated = await rotateKeys(deps());
    const fresh = rotated.map((key) => key.kid);

    // One new key per algorithm, dated by the clock, signing only after the lead time.
    assert.deepEqual(rotated.map((key) => key.alg).sort(), ['ES256', 'RS256']);
    for (const key of rotated) assert.deepEqual([key.createdAt, key.activatesAt], [started, started + lead]);
    const [event] = await world.store.events.list({ type: 'keys.rotated', limit: 10 });
    assert.deepEqual(event?.detail, { kids: fresh.join(' '), by: 'operator' }, 'the audit trail names the new keys and who rotated');

    // Published before they sign, so that relying parties have them in their cached JWKS.
    assert.deepEqual((await published()).sort(), [...old, ...fresh].sort());
    let now = await states();
    for (const kid of fresh) assert.equal(now.get(kid), `published, signs from ${iso(started + lead)}`);
    for (const kid of old) assert.equal(now.get(kid), 'signing', 'the old keys sign until the new ones do');
    assert.ok(old.includes((await world.keys.signingKey('ES256')).kid));

    // Past the lead time: the new keys sign; the old ones stop, still published for the tokens they signed.
    world.clock.advance(lead);
    now = await states();
    for (const kid of fresh) assert.equal(now.get(kid), 'signing');
    const until = started + lead + MAX_TOKEN_LIFETIME * 1000;
    for (const kid of old) assert.equal(now.get(kid), `retired, published until ${iso(until)}`);
    assert.ok(fresh.includes((await world.keys.signingKey('ES256')).kid));
    assert.ok(fresh.includes((await world.keys.signingKey('RS256')).kid));
    assert.deepEqual((await published()).sort(), [...old, ...fresh].sort());
    const listed = await listKeys(world.manage, world.clock.now());
    assert.deepEqual(listed.map((key) => key.kid).sort(), [...old, ...fresh].sort());
    const retired = listed.find((key) => key.kid === old[0])!;
    assert.deepEqual([keyJson(retired, world.clock.now()).retires_at, keyJson(retired, world.clock.now()).expires_at], [iso(started + lead), iso(until)]);

    // Once the longest token the old keys signed has expired, they leave the JWKS and the list.
    world.clock.advance(MAX_TOKEN_LIFETIME * 1000 - 1);
    assert.deepEqual((await published()).sort(), [...old, ...fresh].sort(), 'a millisecond before the end, still published');
    world.clock.advance(1);
    now = await states();
    for (const kid of old) assert.equal(now.get(kid), 'withdrawn');
    assert.deepEqual((await published()).sort(), [...fresh].sort(), 'a withdrawn key is no longer published');
    assert.deepEqual((await listKeys(world.manage, world.clock.now())).map((key) => key.kid).sort(), [...fresh].sort());
  });

  it('leaves a key signing at once when it rotates a server whose keys had all retired', async () => {
    for (const key of await listKeys(world.manage, world.clock.now())) {
      await world.store.keys.schedule(key.kid, world.clock.now(), world.clock.now() + 60_000);
    }
    const rotated = await rotateKeys(deps());
    const signing = (await listKeys(world.manage, world.clock.now())).filter((key) => keyState(key, world.clock.now()) === 'signing');
    assert.deepEqual(signing.map((key) => key.alg).sort(), ['ES256', 'RS256'], 'a key for each algorithm signs now, not after the lead time');
    for (const key of signing)
      assert.equal(
        rotated.some((made) => made.kid === key.kid),
        false,
        'the rotated keys still wait for the lead time',
      );
    const signer = (await world.keys.signingKey('ES256')).kid;
    assert.ok(
      signing.some((key) => key.kid === signer),
      'and the server signs with it',
    );
  });
});

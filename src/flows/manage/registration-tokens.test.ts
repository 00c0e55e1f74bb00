/**
 * Initial access tokens for dynamic registration (RFC 7591 §3) without HTTP:
 * `createInitialAccessToken`, `listInitialAccessTokens`, `removeInitialAccessToken` and
 * `initialAccessTokenJson`, the operations behind `tessera registration-token …` and
 * /admin/registration-tokens: a token shown once and kept hashed, its lifetime and its uses
 * bounded, spent by registration (flows/registration/register.ts `admitRegistration`) until it
 * expires, is used up or is removed. test/registration.test.ts registers clients with them
 * over HTTP, made by the command and by the admin API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { hashSecret } from '../../core/crypto.ts';
import { admitRegistration } from '../registration/register.ts';
import {
  createInitialAccessToken,
  DEFAULT_INITIAL_TOKEN_TTL,
  initialAccessTokenJson,
  listInitialAccessTokens,
  MAX_INITIAL_TOKEN_TTL,
  MAX_INITIAL_TOKEN_USES,
  removeInitialAccessToken,
  type InitialTokenInput,
} from './registration-tokens.ts';

describe('initial access tokens (flows/manage/registration-tokens.ts)', () => {
  let world: FlowWorld;

  before(async () => {
    world = await flowWorld({ TESSERA_REGISTRATION: 'token' });
  });
  after(() => world.close());

  /** What registering with `token` answers: `ok` when it was let in (and spent a use), else the OAuth error. */
  const register = (token: string) => outcome(() => admitRegistration(world.manage, token, '192.0.2.7'));
  const listed = async () => (await listInitialAccessTokens(world.manage)).map((record) => record.id);
  const events = async (type: 'registration_token.created' | 'registration_token.removed') => world.store.events.list({ type, limit: 100 });

  it('makes a token for a day and any number of uses by default, shown once and kept only as its hash', async () => {
    const now = world.clock.now();
    const { token, record } = await createInitialAccessToken(world.manage);
    assert.ok(token.length >= 43, 'a 256-bit token');
    assert.deepEqual(record, {
      id: record.id,
      tokenHash: hashSecret(token),
      createdAt: now,
      expiresAt: now + DEFAULT_INITIAL_TOKEN_TTL * 1000,
      maxUses: null,
      uses: 0,
    });
    const [stored] = (await listInitialAccessTokens(world.manage)).filter((listedRecord) => listedRecord.id === record.id);
    assert.deepEqual(stored, record, 'the store keeps the hash, never the token');
    assert.deepEqual(initialAccessTokenJson(record), {
      id: record.id,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(record.expiresAt).toISOString(),
      max_uses: null,
      uses: 0,
    });
    const [event] = await events('registration_token.created');
    assert.deepEqual(event?.detail, { id: record.id, expires_at: new Date(record.expiresAt).toISOString(), max_uses: null, by: 'operator' });
    for (const shown of [JSON.stringify(initialAccessTokenJson(record)), JSON.stringify(event)]) {
      assert.equal(shown.includes(token), false, 'never the token');
      assert.equal(shown.includes(record.tokenHash), false, 'nor its hash');
    }
  });

  it('takes a lifetime and a number of uses within their bounds, and refuses one beyond, naming the field', async () => {
    const cases: [string, InitialTokenInput, string][] = [
      ['a minute, the shortest', { ttl_seconds: 60 }, 'ok'],
      ['a year, the longest', { ttl_seconds: MAX_INITIAL_TOKEN_TTL }, 'ok'],
      ['one use', { max_uses: 1 }, 'ok'],
      ['the most uses', { max_uses: MAX_INITIAL_TOKEN_USES }, 'ok'],
      ['under a minute', { ttl_seconds: 59 }, 'invalid:ttl_seconds'],
      ['no lifetime', { ttl_seconds: 0 }, 'invalid:ttl_seconds'],
      ['past a year', { ttl_seconds: MAX_INITIAL_TOKEN_TTL + 1 }, 'invalid:ttl_seconds'],
      ['a lifetime of no whole seconds', { ttl_seconds: 90.5 }, 'invalid:ttl_seconds'],
      ['no uses', { max_uses: 0 }, 'invalid:max_uses'],
      ['fewer than none', { max_uses: -1 }, 'invalid:max_uses'],
      ['part of a use', { max_uses: 1.5 }, 'invalid:max_uses'],
      ['more than the most uses', { max_uses: MAX_INITIAL_TOKEN_USES + 1 }, 'invalid:max_uses'],
      ['uses that are not a number', { max_uses: Number.NaN }, 'invalid:max_uses'],
    ];
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => createInitialAccessToken(world.manage, input)), expected, what);
    world.clock.advance(1);
    const made = await createInitialAccessToken(world.manage, { ttl_seconds: 600, max_uses: 5 });
    assert.deepEqual([made.record.expiresAt - made.record.createdAt, made.record.maxUses], [600_000, 5]);
    assert.equal((await events('registration_token.created'))[0]?.detail['max_uses'], 5);
  });

  it('lets its holder register as many times as it allows, then no more (RFC 7591 §3)', async () => {
    const { token, record } = await createInitialAccessToken(world.manage, { max_uses: 2 });
    assert.equal(await register(token), 'ok');
    assert.equal(await register(token), 'ok');
    assert.equal(await register(token), 'invalid_token', 'used up');
    assert.equal((await listInitialAccessTokens(world.manage)).find((listedRecord) => listedRecord.id === record.id)?.uses, 2);
    assert.equal(await register(`${token}x`), 'invalid_token', 'a token it did not make');
  });

  it('lets no one register with a token once it has expired, and lists it no more', async () => {
    const { token, record } = await createInitialAccessToken(world.manage, { ttl_seconds: 60 });
    world.clock.advance(60_000 - 1);
    assert.ok((await listed()).includes(record.id));
    assert.equal(await register(token), 'ok', 'a millisecond before it expires');
    world.clock.advance(1);
    assert.equal(await register(token), 'invalid_token');
    assert.equal((await listed()).includes(record.id), false);
  });

  it('lists the tokens newest first, and removes one so that it registers no more, once', async () => {
    const older = await createInitialAccessToken(world.manage);
    world.clock.advance(1000);
    const newer = await createInitialAccessToken(world.manage);
    const ids = await listed();
    assert.ok(ids.indexOf(newer.record.id) < ids.indexOf(older.record.id), 'newest first');
    await removeInitialAccessToken(world.manage, older.record.id);
    assert.equal((await listed()).includes(older.record.id), false);
    assert.ok((await listed()).includes(newer.record.id), 'the other stays');
    assert.equal(await register(older.token), 'invalid_token');
    assert.equal(await register(newer.token), 'ok');
    assert.deepEqual((await events('registration_token.removed'))[0]?.detail, { id: older.record.id, by: 'operator' });
    assert.equal(await outcome(() => removeInitialAccessToken(world.manage, older.record.id)), 'not_found', 'removed once');
    assert.equal(await outcome(() => removeInitialAccessToken(world.manage, 'no-such-token')), 'not_found');
    assert.equal((await events('registration_token.removed')).length, 1, 'nothing removed, nothing recorded');
  });
});

/**
 * SCIM tokens without HTTP: the operations behind `tessera scim token …`, /admin/scim-tokens
 * and the console's SCIM page. A token made for a provisioning system, shown once and kept
 * only as its hash (and accepted at `/scim/v2` by that hash, flows/scim/auth.ts), the name's
 * rules, a name taken, the bound on how many, and a token withdrawn: not found, and refused at
 * once. The tokens have no expiry and the module checks no caller: the admin API and console
 * routes ask for `admin:users` (src/http/admin/scim-tokens.ts). test/scim.test.ts calls
 * `/scim/v2` with such a token over HTTP; test/console-browser.test.ts makes one in the console.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { scimCaller } from '../scim/auth.ts';
import { ScimError } from '../scim/errors.ts';
import {
  addScimToken,
  getScimToken,
  listScimTokens,
  MAX_SCIM_TOKENS,
  removeScimToken,
  SCIM_TOKEN_PREFIX,
  scimTokenJson,
  type ScimTokenInput,
} from './scim-tokens.ts';

describe('SCIM tokens (flows/manage/scim-tokens.ts)', () => {
  let world: FlowWorld;
  let made = 0;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /** A name not taken yet. */
  const fresh = () => {
    made += 1;
    return `Provisioner ${made}`;
  };
  const events = async (type: string) => (await world.store.events.list({ limit: 500 })).filter((event) => event.type === type);
  /** What `/scim/v2` answers a request with `token`: who it is, or the HTTP status it refuses with. */
  const presented = async (token: string) => {
    try {
      return (await scimCaller(world.deps, token, '192.0.2.10')).kind;
    } catch (error) {
      if (error instanceof ScimError) return error.status;
      throw error;
    }
  };

  it('makes a token shown once, kept only as its hash, that /scim/v2 then accepts', async () => {
    world.clock.advance(1000);
    const { record, token } = await addScimToken(world.manage, { name: '  Entra ID  ' });
    assert.equal(record.name, 'Entra ID', 'the name trimmed');
    assert.ok(token.startsWith(SCIM_TOKEN_PREFIX), 'recognisable by secret scanners');
    assert.ok(token.length - SCIM_TOKEN_PREFIX.length >= 43, '256 random bits, base64url');
    assert.deepEqual([record.createdAt, record.lastUsedAt], [world.clock.now(), null]);
    const [stored] = (await listScimTokens(world.manage)).filter((one) => one.id === record.id);
    assert.equal(stored?.tokenHash, hashSecret(token), 'only its hash is kept');
    assert.equal(JSON.stringify(stored).includes(token.slice(SCIM_TOKEN_PREFIX.length)), false, 'no clear copy in the store');
    assert.deepEqual(await getScimToken(world.manage, record.id), record);
    assert.deepEqual(scimTokenJson(record), { id: record.id, name: 'Entra ID', created_at: new Date(world.clock.now()).toISOString(), last_used_at: null });
    const [created] = (await events('scim_token.created')).filter((event) => event.detail['id'] === record.id);
    assert.deepEqual(created?.detail, { id: record.id, name: 'Entra ID', by: 'operator' });
    assert.equal(JSON.stringify(created).includes(token.slice(SCIM_TOKEN_PREFIX.length)), false, 'the event holds no token');
    // RFC 7644 §2: the provisioning system calls with it as an OAuth 2.0 bearer token.
    assert.equal(await presented(token), 'token');
    assert.equal((await getScimToken(world.manage, record.id)).lastUsedAt, world.clock.now(), 'its use recorded');
    const other = await addScimToken(world.manage, { name: fresh() });
    assert.notEqual(other.token, token, 'each token its own');
  });

  it('refuses a name a rule forbids, naming the field, and keeps nothing of it', async () => {
    const cases: [string, ScimTokenInput, string][] = [
      ['no name', {}, 'invalid:name'],
      ['an empty name', { name: '' }, 'invalid:name'],
      ['a blank name', { name: ' \t ' }, 'invalid:name'],
      ['a name that is not text', { name: 42 }, 'invalid:name'],
      ['a name past 100 characters', { name: 'N'.repeat(101) }, 'invalid:name'],
      ['a name with a line break', { name: 'Entra\nID' }, 'invalid:name'],
      ['a name with a control character', { name: 'Okta\u0007' }, 'invalid:name'],
      ['a name with DEL', { name: 'Okta\u007f' }, 'invalid:name'],
      ['a name with a right-to-left override', { name: 'Entra\u202eID' }, 'invalid:name'],
    ];
    const before = (await listScimTokens(world.manage)).length;
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addScimToken(world.manage, input)), expected, what);
    assert.equal((await listScimTokens(world.manage)).length, before, 'nothing kept');
    assert.equal(await outcome(() => addScimToken(world.manage, { name: 'N'.repeat(100) })), 'ok', 'a name of exactly 100 characters');
    assert.equal(await outcome(() => addScimToken(world.manage, { name: `  ${'M'.repeat(100)}  ` })), 'ok', 'counted once trimmed');
  });

  it('refuses a name taken, naming the field, as typed or with spaces around it', async () => {
    const name = fresh();
    const { record } = await addScimToken(world.manage, { name });
    assert.equal(await outcome(() => addScimToken(world.manage, { name })), 'conflict:name');
    assert.equal(await outcome(() => addScimToken(world.manage, { name: ` ${name} ` })), 'conflict:name');
    assert.deepEqual(
      (await listScimTokens(world.manage)).filter((one) => one.name === name).map((one) => one.id),
      [record.id],
      'the first one alone',
    );
  });

  it('withdraws a token: /scim/v2 refuses it at once, it is not found, and withdrawing it again is refused', async () => {
    const { record, token } = await addScimToken(world.manage, { name: fresh() });
    const { token: kept } = await addScimToken(world.manage, { name: fresh() });
    await removeScimToken(world.manage, record.id);
    // RFC 6750 §3.1: a revoked token is invalid_token, 401.
    assert.equal(await presented(token), 401);
    assert.equal(await presented(kept), 'token', 'the others still work');
    assert.equal(await world.store.scimTokens.findByHash(hashSecret(token)), null);
    assert.equal(await outcome(() => getScimToken(world.manage, record.id)), 'not_found');
    assert.equal(await outcome(() => removeScimToken(world.manage, record.id)), 'not_found');
    const removed = (await events('scim_token.removed')).filter((event) => event.detail['id'] === record.id);
    assert.deepEqual(
      removed.map((event) => event.detail),
      [{ id: record.id, name: record.name, by: 'operator' }],
      'one event, naming who it was for',
    );
    assert.equal(await outcome(() => addScimToken(world.manage, { name: record.name })), 'ok', 'its name free again');
  });

  // Last: it leaves the world full.
  it(`holds a server to ${MAX_SCIM_TOKENS} SCIM tokens`, async () => {
    const { record: first } = await addScimToken(world.manage, { name: fresh() });
    for (let i = (await listScimTokens(world.manage)).length; i < MAX_SCIM_TOKENS; i += 1) await addScimToken(world.manage, { name: fresh() });
    const oneMore = fresh();
    assert.equal(await outcome(() => addScimToken(world.manage, { name: oneMore })), 'conflict');
    assert.equal((await listScimTokens(world.manage)).length, MAX_SCIM_TOKENS);
    await removeScimToken(world.manage, first.id);
    assert.equal(await outcome(() => addScimToken(world.manage, { name: oneMore })), 'ok', 'room again once one is removed');
  });
});

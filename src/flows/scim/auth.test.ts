/**
 * Who calls `/scim/v2` (scimCaller), over the flow world without HTTP: a SCIM token found by
 * the hash of what is presented (never by the hash itself, never past its length bound) and its
 * use recorded, a client_credentials token for the admin API's audience with the scope `scim`,
 * and everything else refused with 401 and no scimType (RFC 7644 §3.12 has none for it) before
 * any resource is read; wrong tokens counted per address under the sign-in limit, then 429
 * with its Retry-After: a `scim.refused` event for each wrong token and one for the window's refusals. Making and withdrawing tokens
 * is src/flows/manage/scim-tokens.test.ts's; test/scim.test.ts sends the same over HTTP (the
 * WWW-Authenticate header, the error body).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { hashSecret } from '../../core/crypto.ts';
import { adminAudience } from '../../core/scopes.ts';
import type { ClientRecord, ResourceRecord } from '../../store/types.ts';
import { removeClient, revokeClientTokens, updateClient } from '../manage/clients.ts';
import { addScimToken, getScimToken, removeScimToken } from '../manage/scim-tokens.ts';
import { SCIM_FAILURE_KEY, scimCaller } from './auth.ts';
import { ScimError } from './errors.ts';

/** What `/scim/v2` makes of a request with `token` from `ip`: the caller, or the status, scimType and Retry-After it refuses with. */
async function called(world: FlowWorld, token: string | null, ip = '192.0.2.10'): Promise<unknown> {
  try {
    return await scimCaller(world.deps, token, ip);
  } catch (error) {
    if (error instanceof ScimError) return { status: error.status, scimType: error.scimType, retryAfter: error.retryAfterSeconds };
    throw error;
  }
}

const UNAUTHORIZED = { status: 401, scimType: null, retryAfter: undefined };

/** The admin API as the resource a client's token is for (its `aud`), or another audience. */
const audience = (identifier: string): ResourceRecord => ({
  identifier,
  name: 'Admin API',
  scopes: [],
  accessTokenTtl: null,
  introspectionSecretHash: null,
  signingAlg: 'RS256',
  createdAt: 0,
});

describe('who calls /scim/v2 (scimCaller)', () => {
  let world: FlowWorld;
  let provisioning: ClientRecord;

  before(async () => {
    world = await flowWorld();
    ({ client: provisioning } = await world.addClient({ client_name: 'Provisioning', grant_types: ['client_credentials'], scope: 'scim admin:users:read' }));
  });
  after(() => world.close());

  /** A client_credentials access token of `client` naming `scope`, for the admin API unless `aud` names another. */
  const clientToken = async (client: ClientRecord, scope: string[], options: { aud?: string; jkt?: string } = {}) =>
    (
      await world.tokens.issueForClient({
        client,
        scope,
        resource: audience(options.aud ?? adminAudience(world.config.issuer)),
        dpopJkt: options.jkt ?? null,
      })
    ).access_token;

  it('takes a SCIM token by the hash of what is presented, naming it, and records when it was last used', async () => {
    world.clock.advance(1000);
    const { record, token } = await addScimToken(world.manage, { name: 'Okta' });
    world.clock.advance(60_000);
    // The token is presented as an OAuth 2.0 bearer token (RFC 6750 §2.1), which the service provider looks up by its hash.
    assert.deepEqual(await called(world, token), { kind: 'token', id: record.id, name: 'Okta' });
    assert.equal((await getScimToken(world.manage, record.id)).lastUsedAt, world.clock.now());
    world.clock.advance(3_600_000);
    await called(world, token);
    assert.equal((await getScimToken(world.manage, record.id)).lastUsedAt, world.clock.now(), 'each use moves it on');
    const used = world.clock.now();
    world.clock.advance(1000);
    for (const wrong of [`${token}x`, token.slice(0, -1), record.tokenHash, token.toUpperCase()])
      assert.deepEqual(await called(world, wrong), UNAUTHORIZED, wrong);
    assert.equal((await getScimToken(world.manage, record.id)).lastUsedAt, used, 'a wrong token records no use');
  });

  it('takes a token of up to 512 characters and refuses a longer one unlooked-at', async () => {
    const now = world.clock.now();
    for (const length of [512, 513]) {
      const token = 't'.repeat(length);
      await world.store.scimTokens.create({ id: `long-${length}`, name: `Long ${length}`, tokenHash: hashSecret(token), createdAt: now, lastUsedAt: null });
      const expected = length === 512 ? { kind: 'token', id: 'long-512', name: 'Long 512' } : UNAUTHORIZED;
      assert.deepEqual(await called(world, token), expected, `${length} characters`);
    }
    assert.equal((await getScimToken(world.manage, 'long-513')).lastUsedAt, null, 'the longer one never used');
  });

  it('takes a client_credentials token for <issuer>/admin whose scope and client hold scim, naming the client', async () => {
    assert.deepEqual(await called(world, await clientToken(provisioning, ['scim'])), { kind: 'client', id: provisioning.id });
    assert.deepEqual(await called(world, await clientToken(provisioning, ['admin:users:read', 'scim'])), { kind: 'client', id: provisioning.id });
  });

  it('refuses every other token with 401 and no scimType', async () => {
    // RFC 7644 §3.12, Table 8: "401 | UNAUTHORIZED | ... | Authorization failure. The authorization header is invalid or missing."
    // RFC 6750 §3.1: invalid_token, "The access token provided is expired, revoked, malformed, or invalid for other reasons".
    const { client: other } = await world.addClient({ client_name: 'Admin only', grant_types: ['client_credentials'], scope: 'admin:users' });
    const { client: narrowed } = await world.addClient({ client_name: 'Narrowed', grant_types: ['client_credentials'], scope: 'scim admin:users' });
    const { client: removed } = await world.addClient({ client_name: 'Removed', grant_types: ['client_credentials'], scope: 'scim' });
    const { client: revoked } = await world.addClient({ client_name: 'Revoked', grant_types: ['client_credentials'], scope: 'scim' });
    const { record: withdrawn, token: withdrawnToken } = await addScimToken(world.manage, { name: 'Withdrawn' });
    const narrowedToken = await clientToken(narrowed, ['scim', 'admin:users']);
    const removedToken = await clientToken(removed, ['scim']);
    const revokedToken = await clientToken(revoked, ['scim']);
    await revokeClientTokens(world.manage, revoked.id);
    await updateClient(world.manage, narrowed.id, { scope: 'admin:users' });
    await removeClient(world.manage, removed.id);
    await removeScimToken(world.manage, withdrawn.id);
    const cases: [string, string | null][] = [
      // RFC 6750 §3.1: "If the request lacks any authentication information ... the resource server SHOULD NOT include an error code".
      ['no token', null],
      ['an empty one', ''],
      ['a SCIM token there never was', 'scim_not-a-token'],
      ['a withdrawn SCIM token', withdrawnToken],
      ['a JWT that is no token of this server', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln'],
      ['an admin token without the scope scim', await clientToken(other, ['admin:users'])],
      ['a token without the scope scim, though its client holds it', await clientToken(provisioning, ['admin:users:read'])],
      ["a token naming scim its client does not hold (the client's scope is checked too)", await clientToken(other, ['scim'])],
      ['a token whose client has lost the scope scim since', narrowedToken],
      ['a token whose client was removed', removedToken],
      ['a token of a client whose tokens were ended since (tessera client revoke-tokens)', revokedToken],
      // RFC 8707: a token is for the audience it names; the server's own or an API's is not the admin API's.
      ['a scim token for the server itself', await clientToken(provisioning, ['scim'], { aud: world.config.issuer })],
      ['a scim token for another API', await clientToken(provisioning, ['scim'], { aud: 'https://api.example.com' })],
      // RFC 9449 §7.1: a DPoP-bound token presented as a bearer token is refused.
      ['a DPoP-bound token sent as a bearer token', await clientToken(provisioning, ['scim'], { jkt: 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs' })],
    ];
    for (const [what, token] of cases) assert.deepEqual(await called(world, token), UNAUTHORIZED, what);
    const live = await clientToken(provisioning, ['scim']);
    world.clock.advance((world.config.lifetimes.accessToken + 1) * 1000);
    assert.deepEqual(await called(world, live), UNAUTHORIZED, 'an expired token');
  });
});

describe('wrong SCIM tokens from one address (scimCaller)', () => {
  let world: FlowWorld;

  before(async () => {
    world = await flowWorld({ TESSERA_SIGN_IN_FAILURES_PER_ADDRESS: '3', TESSERA_SIGN_IN_WINDOW: '600' });
  });
  after(() => world.close());

  it('counts wrong tokens, not right ones, against the address, then refuses it with 429 and Retry-After until the window ends', async () => {
    const { record, token } = await addScimToken(world.manage, { name: 'Entra ID' });
    const ip = '198.51.100.7';
    const right = { kind: 'token', id: record.id, name: 'Entra ID' };
    for (let i = 0; i < 5; i += 1) assert.deepEqual(await called(world, token, ip), right, 'right tokens give their place back');
    assert.deepEqual(await called(world, 'scim_wrong-1', ip), UNAUTHORIZED);
    assert.deepEqual(await called(world, token, ip), right, 'under the limit: the right token still taken');
    assert.deepEqual(await called(world, 'scim_wrong-2', ip), UNAUTHORIZED);
    assert.deepEqual(await called(world, null, ip), UNAUTHORIZED, 'no token at all is not counted');
    assert.deepEqual(await called(world, 'scim_wrong-3', ip), UNAUTHORIZED, 'the third wrong one: still 401');
    assert.deepEqual(
      await world.store.rateLimits.window(`${SCIM_FAILURE_KEY}${ip}`, world.clock.now()).then((window) => window?.hits),
      3,
      'counted under its key',
    );
    const used = (await getScimToken(world.manage, record.id)).lastUsedAt;
    world.clock.advance(1000);
    // RFC 6585 §4: 429 "MAY include a Retry-After header indicating how long to wait before making a new request".
    assert.deepEqual(await called(world, 'scim_wrong-4', ip), { status: 429, scimType: null, retryAfter: 599 });
    assert.deepEqual(await called(world, token, ip), { status: 429, scimType: null, retryAfter: 599 }, 'a right token too, once refused');
    assert.equal((await getScimToken(world.manage, record.id)).lastUsedAt, used, 'not looked up: no use recorded');
    assert.deepEqual(await called(world, token, '198.51.100.8'), right, 'another address unaffected');

    await world.deps.events.flushRefusals(true);
    const refused = (await world.store.events.list({ type: 'scim.refused', limit: 10 })).reverse();
    assert.deepEqual(
      refused.map((event) => [event.ip, event.detail['reason'], event.detail['refused']]),
      [
        [ip, 'wrong_token', undefined],
        [ip, 'wrong_token', undefined],
        [ip, 'wrong_token', undefined],
        [ip, 'limit', 2],
      ],
      'each wrong token, then one event for the refusals of the window; no token at all is none',
    );

    world.clock.advance(600_000);
    assert.deepEqual(await called(world, token, ip), right, 'the window over: taken again');
  });
});

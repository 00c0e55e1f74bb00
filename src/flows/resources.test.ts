import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OAuthError } from '../core/errors.ts';
import type { ClientRecord, ResourceRecord } from '../store/types.ts';
import { checkRequestedAccess, describeAccess, resourceIndicatorProblem, ResourceCatalog, tokenTarget } from './resources.ts';

const api = (identifier: string, scopes: string[], createdAt = 0): ResourceRecord => ({
  identifier,
  name: `API ${identifier}`,
  scopes: scopes.map((name) => ({ name, description: `May ${name}` })),
  accessTokenTtl: null,
  introspectionSecretHash: null,
  signingAlg: 'RS256',
  createdAt,
});
const PHOTOS = api('https://photos.example', ['photos:read', 'photos:write']);
const CALENDAR = api('urn:example:calendar', ['calendar:read']);
const resources = [PHOTOS, CALENDAR];
const catalog = new ResourceCatalog(resources);
const store = { resources: { list: async () => resources } } as never;
const client = { scopes: ['openid', 'offline_access', 'photos:read', 'photos:write', 'calendar:read'] } as unknown as ClientRecord;

/** The OAuth error code `run` throws, or 'ok'. */
async function outcome(run: () => unknown): Promise<string> {
  try {
    await run();
    return 'ok';
  } catch (error) {
    if (error instanceof OAuthError) return error.code;
    throw error;
  }
}

describe('RFC 8707 resource indicators', () => {
  it('accepts an absolute URI without a fragment (RFC 8707 §2)', () => {
    for (const good of ['https://api.example.com', 'https://api.example.com/v1?x=1', 'urn:example:api'])
      assert.equal(resourceIndicatorProblem(good), null, good);
    for (const bad of ['/relative', 'api.example.com', 'https://api.example.com#top', 'https://a b.example', ''])
      assert.notEqual(resourceIndicatorProblem(bad), null, bad);
  });

  it('checks an authorization request: invalid_target for the resource, invalid_scope for the scopes', async () => {
    const cases: [string[], string[], string][] = [
      [['openid', 'photos:read'], [], 'ok'],
      [['openid', 'photos:read'], [PHOTOS.identifier], 'ok'],
      [['photos:read', 'calendar:read'], [PHOTOS.identifier, CALENDAR.identifier], 'ok'],
      [['photos:read'], ['https://unknown.example'], 'invalid_target'],
      [['photos:read'], ['https://photos.example#x'], 'invalid_target'],
      [['photos:read'], Array.from({ length: 11 }, (_, index) => `https://${index}.example`), 'invalid_target'],
      [['calendar:read'], [PHOTOS.identifier], 'invalid_scope'],
      [['openid'], [PHOTOS.identifier], 'invalid_scope'],
      [['photos:delete'], [], 'invalid_scope'],
      [['profile'], [], 'invalid_scope'], // known, but not the client's
    ];
    for (const [scope, named, expected] of cases) {
      assert.equal(await outcome(() => checkRequestedAccess(catalog, client, scope, named)), expected, `${scope.join(' ')} for ${named.join(' ')}`);
    }
  });

  it('chooses the token audience and scope: one API a token, narrowed, never widened', async () => {
    const grant = { scope: ['openid', 'offline_access', 'photos:read', 'photos:write', 'calendar:read'], createdAt: 10 };
    const target = async (resource?: string, scope?: string[]) => {
      const found = await tokenTarget(store, grant, resource, scope);
      return `${found.resource?.identifier ?? 'issuer'} ${found.scope.join(' ')}`;
    };
    assert.equal(await target(PHOTOS.identifier), 'https://photos.example openid offline_access photos:read photos:write');
    assert.equal(await target(CALENDAR.identifier), 'urn:example:calendar openid offline_access calendar:read');
    assert.equal(await target(undefined, ['photos:read']), 'https://photos.example photos:read');
    assert.equal(await target(undefined, ['openid']), 'issuer openid');
    assert.equal(await target(PHOTOS.identifier, ['openid', 'photos:write']), 'https://photos.example openid photos:write');
    assert.equal(await outcome(() => target()), 'invalid_target');
    assert.equal(await outcome(() => target('https://unknown.example')), 'invalid_target');
    assert.equal(await outcome(() => target(undefined, ['photos:read', 'calendar:read'])), 'invalid_scope');
    assert.equal(await outcome(() => target(PHOTOS.identifier, ['calendar:read'])), 'invalid_scope');

    const one = { scope: ['openid', 'photos:read'], createdAt: 10 };
    assert.equal((await tokenTarget(store, one, undefined)).resource, PHOTOS);
    assert.equal(await outcome(() => tokenTarget(store, one, CALENDAR.identifier)), 'invalid_target');
    assert.equal((await tokenTarget(store, { scope: ['openid'], createdAt: 10 }, undefined)).resource, null);
  });

  it('treats an API removed, or registered again after the grant, as gone', async () => {
    const removed = { scope: ['openid', 'gone:read'], createdAt: 10 };
    assert.equal(await outcome(() => tokenTarget(store, removed, undefined)), 'invalid_target');
    const later = { resources: { list: async () => [api('https://photos.example', ['photos:read'], 20)] } } as never;
    assert.equal(await outcome(() => tokenTarget(later, { scope: ['openid', 'photos:read'], createdAt: 10 }, undefined)), 'invalid_target');
    assert.deepEqual(describeAccess(new ResourceCatalog([api('https://photos.example', ['photos:read'], 20)]), ['openid', 'photos:read'], 10).apis, []);
    // A refresh token's scope whose grant, renewed since, no longer holds it: its API was removed.
    const renewed = { scope: ['openid', 'photos:read'], createdAt: 30 };
    assert.equal((await tokenTarget(later, { ...renewed, held: ['openid', 'photos:read'] }, undefined)).resource?.identifier, 'https://photos.example');
    assert.equal(await outcome(() => tokenTarget(later, { ...renewed, held: ['openid'] }, undefined)), 'invalid_target');
    assert.equal(await outcome(() => tokenTarget(later, { ...renewed, held: ['openid'] }, 'https://photos.example')), 'invalid_target');
  });

  it('gives no API scope the grant no longer holds, though its API still defines it (RFC 6749 §6): left out, and refused asked for by name', async () => {
    const refreshed = { scope: ['openid', 'photos:read', 'photos:write'], createdAt: 10, held: ['openid', 'photos:read'] };
    const target = await tokenTarget(store, refreshed, undefined);
    assert.deepEqual([target.resource, target.scope], [PHOTOS, ['openid', 'photos:read']]);
    assert.deepEqual((await tokenTarget(store, refreshed, PHOTOS.identifier)).scope, ['openid', 'photos:read']);
    assert.equal(await outcome(() => tokenTarget(store, refreshed, undefined, ['photos:write'])), 'invalid_scope');
    assert.equal(await outcome(() => tokenTarget(store, refreshed, PHOTOS.identifier, ['openid', 'photos:read', 'photos:write'])), 'invalid_scope');
  });

  it('describes the access asked for: OpenID scopes, then each API by name', () => {
    assert.deepEqual(describeAccess(catalog, ['openid', 'calendar:read', 'photos:read']), {
      openid: [{ name: 'openid', description: 'Sign you in and know who you are' }],
      apis: [
        { name: 'API urn:example:calendar', identifier: 'urn:example:calendar', scopes: [{ name: 'calendar:read', description: 'May calendar:read' }] },
        { name: 'API https://photos.example', identifier: 'https://photos.example', scopes: [{ name: 'photos:read', description: 'May photos:read' }] },
      ],
    });
  });
});

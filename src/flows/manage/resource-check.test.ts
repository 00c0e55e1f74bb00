/**
 * `tessera resource check` without the fetch: `metadataLocation`, where a protected resource's
 * metadata is (RFC 9728 §3.1) and which resource identifier an address of it implies, and
 * `checkProtectedResource`, the fetched metadata held against the API registered here, a line
 * per comparison, each difference named. test/resource-check.test.ts runs the command against
 * an MCP server of its own on loopback and checks its output and exit status.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ResourceRecord } from '../../store/types.ts';
import { checkProtectedResource, metadataLocation, PROTECTED_RESOURCE_WELL_KNOWN, type CheckLine } from './resource-check.ts';

const ISSUER = 'https://auth.example.com';
const MCP = 'https://mcp.example.com/mcp';
const REGISTERED: ResourceRecord = {
  identifier: MCP,
  name: 'MCP tools',
  scopes: [
    { name: 'tools:read', description: 'Read' },
    { name: 'tools:run', description: 'Run' },
  ],
  accessTokenTtl: null,
  introspectionSecretHash: null,
  signingAlg: 'RS256',
  createdAt: 0,
};
const GOOD = { resource: MCP, authorization_servers: [ISSUER], scopes_supported: ['tools:read', 'tools:run'] };

describe("checking a protected resource's metadata (flows/manage/resource-check.ts)", () => {
  it('finds the metadata by inserting the well-known suffix between the host and the path (RFC 9728 §3.1), and the identifier from the metadata’s own address', () => {
    assert.equal(PROTECTED_RESOURCE_WELL_KNOWN, '/.well-known/oauth-protected-resource');
    const cases: [string, string, string][] = [
      ['https://mcp.example.com/mcp', 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp', 'https://mcp.example.com/mcp'],
      ['https://mcp.example.com', 'https://mcp.example.com/.well-known/oauth-protected-resource', 'https://mcp.example.com'],
      ['https://mcp.example.com/', 'https://mcp.example.com/.well-known/oauth-protected-resource', 'https://mcp.example.com/'],
      ['https://mcp.example.com/a/b?x=1', 'https://mcp.example.com/.well-known/oauth-protected-resource/a/b?x=1', 'https://mcp.example.com/a/b?x=1'],
      ['https://mcp.example.com:8443/mcp', 'https://mcp.example.com:8443/.well-known/oauth-protected-resource/mcp', 'https://mcp.example.com:8443/mcp'],
      [
        'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
        'https://mcp.example.com/.well-known/oauth-protected-resource/mcp',
        'https://mcp.example.com/mcp',
      ],
      [
        'https://mcp.example.com/.well-known/oauth-protected-resource',
        'https://mcp.example.com/.well-known/oauth-protected-resource',
        'https://mcp.example.com',
      ],
      [
        'https://mcp.example.com/.well-known/oauth-protected-resource/a?x=1',
        'https://mcp.example.com/.well-known/oauth-protected-resource/a?x=1',
        'https://mcp.example.com/a?x=1',
      ],
      // The suffix not followed by the end or a slash is a path of the resource's own, as any other.
      [
        'https://mcp.example.com/.well-known/oauth-protected-resourcex/y',
        'https://mcp.example.com/.well-known/oauth-protected-resource/.well-known/oauth-protected-resourcex/y',
        'https://mcp.example.com/.well-known/oauth-protected-resourcex/y',
      ],
    ];
    for (const [url, metadataUrl, resource] of cases) assert.deepEqual(metadataLocation(url), { metadataUrl, resource }, url);
    assert.throws(() => metadataLocation('mcp.example.com/mcp'), TypeError, 'not a URL');
  });

  it('says so on every line when the metadata matches the API registered here', () => {
    assert.deepEqual(checkProtectedResource(MCP, GOOD, REGISTERED, ISSUER), [
      { what: 'resource', ok: true, text: `${MCP}, registered here as "MCP tools"` },
      { what: 'authorization_servers', ok: true, text: `includes ${ISSUER}` },
      { what: 'scopes_supported', ok: true, text: 'the same: tools:read tools:run' },
    ]);
    const otherOrder = checkProtectedResource(
      MCP,
      { ...GOOD, authorization_servers: ['https://other.example', ISSUER], scopes_supported: ['tools:run', 'tools:read'] },
      REGISTERED,
      ISSUER,
    );
    assert.deepEqual(
      otherOrder.map((line) => line.ok),
      [true, true, true],
      'another server beside this one, and the scopes in another order',
    );
  });

  it('names each difference: the resource, the authorization servers, the scopes', () => {
    const line = (what: CheckLine['what'], metadata: Record<string, unknown>, registered: ResourceRecord | null = REGISTERED) =>
      checkProtectedResource(MCP, metadata, registered, ISSUER).find((checked) => checked.what === what);
    const cases: [string, CheckLine | undefined, boolean, RegExp][] = [
      ['no resource (RFC 9728 §2: REQUIRED)', line('resource', { ...GOOD, resource: undefined }), false, /has no resource \(RFC 9728 §2: REQUIRED\)/],
      ['a resource that is not text', line('resource', { ...GOOD, resource: ['x'] }), false, /has no resource/],
      [
        'a resource other than the one fetched for (RFC 9728 §3.3)',
        line('resource', { ...GOOD, resource: `${MCP}/` }),
        false,
        /says https:\/\/mcp\.example\.com\/mcp\/, but was fetched for https:\/\/mcp\.example\.com\/mcp: they must be identical \(RFC 9728 §3\.3\)/,
      ],
      [
        'an API not registered here',
        line('resource', GOOD, null),
        false,
        /is not an API registered here \(tessera resource add --identifier https:\/\/mcp\.example\.com\/mcp\)/,
      ],
      [
        'no authorization servers',
        line('authorization_servers', { ...GOOD, authorization_servers: undefined }),
        false,
        /lists no authorization_servers: an MCP client cannot find/,
      ],
      [
        'authorization servers that are not text',
        line('authorization_servers', { ...GOOD, authorization_servers: [1] }),
        false,
        /lists no authorization_servers/,
      ],
      [
        'an empty list of servers',
        line('authorization_servers', { ...GOOD, authorization_servers: [] }),
        false,
        /^\(none\) does not include this server's issuer/,
      ],
      [
        'only another server',
        line('authorization_servers', { ...GOOD, authorization_servers: ['https://other.example'] }),
        false,
        /^https:\/\/other\.example does not include this server's issuer https:\/\/auth\.example\.com$/,
      ],
      [
        'this issuer with a trailing slash, not the same',
        line('authorization_servers', { ...GOOD, authorization_servers: [`${ISSUER}/`] }),
        false,
        /does not include/,
      ],
      [
        'no scopes listed (RFC 9728 §2: RECOMMENDED)',
        line('scopes_supported', { ...GOOD, scopes_supported: undefined }),
        true,
        /^not listed \(RFC 9728 §2: RECOMMENDED\); registered here: tools:read tools:run$/,
      ],
      [
        'scopes that are not a list of text',
        line('scopes_supported', { ...GOOD, scopes_supported: 'tools:read' }),
        false,
        /^scopes_supported is not a list of strings$/,
      ],
      [
        'a scope not registered here',
        line('scopes_supported', { ...GOOD, scopes_supported: [...GOOD.scopes_supported, 'tools:admin'] }),
        false,
        /^not registered here: tools:admin$/,
      ],
      [
        'a scope registered here but not listed',
        line('scopes_supported', { ...GOOD, scopes_supported: ['tools:read'] }),
        false,
        /^registered here but not listed: tools:run$/,
      ],
      [
        'both at once',
        line('scopes_supported', { ...GOOD, scopes_supported: ['tools:read', 'tools:write'] }),
        false,
        /^not registered here: tools:write; registered here but not listed: tools:run$/,
      ],
    ];
    for (const [what, checked, ok, text] of cases) {
      assert.ok(checked, `${what}: a line`);
      assert.equal(checked.ok, ok, what);
      assert.match(checked.text, text, what);
    }
  });

  it('compares no scopes for an API not registered here, and goes on past a difference to every other comparison', () => {
    assert.deepEqual(
      checkProtectedResource(MCP, GOOD, null, ISSUER).map((line) => [line.what, line.ok]),
      [
        ['resource', false],
        ['authorization_servers', true],
      ],
    );
    assert.deepEqual(
      checkProtectedResource(MCP, {}, REGISTERED, ISSUER).map((line) => [line.what, line.ok]),
      [
        ['resource', false],
        ['authorization_servers', false],
        ['scopes_supported', true],
      ],
    );
  });
});

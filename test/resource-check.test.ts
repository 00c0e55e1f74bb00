/**
 * `tessera resource check URL` against a small MCP server of the test's own on loopback: its
 * protected resource metadata (RFC 9728) compared with the API registered here, each
 * difference named, and the exit status 1 when there is one.
 */
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { addResource } from '../src/flows/manage/resources.ts';
import { runTessera } from './helpers/cli.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeAll, closeServer, listenOnFreePort, startTestServer, type TestServer } from './helpers/server.ts';

describe('tessera resource check', () => {
  let server: TestServer;
  let mcp: { base: string; close: () => Promise<void> };
  /** What the MCP server's metadata says now. */
  let metadata: Record<string, unknown> | string = {};

  before(async () => {
    server = await startTestServer();
    const http = createServer((request, response: ServerResponse) => {
      if (request.url !== '/.well-known/oauth-protected-resource/mcp') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(typeof metadata === 'string' ? metadata : JSON.stringify(metadata));
    });
    const { port } = await listenOnFreePort(http);
    mcp = { base: `http://127.0.0.1:${port}`, close: () => closeServer(http) };
    await addResource(manageDeps(server), {
      identifier: `${mcp.base}/mcp`,
      name: 'MCP tools',
      scopes: [
        { name: 'tools:read', description: 'Use read-only tools' },
        { name: 'tools:write', description: 'Use tools that change things' },
      ],
    });
  });
  after(() => closeAll(mcp, server));

  const check = (url: string, json = false) =>
    runTessera(['resource', 'check', url, ...(json ? ['--json'] : [])], { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.config.issuer });

  it('says everything matches, exit status 0, when the metadata names the API, this issuer and its scopes', async () => {
    metadata = {
      resource: `${mcp.base}/mcp`,
      authorization_servers: [server.config.issuer],
      scopes_supported: ['tools:read', 'tools:write'],
      bearer_methods_supported: ['header'],
    };
    const checked = await check(`${mcp.base}/mcp`);
    assert.equal(checked.code, 0, checked.stdout + checked.stderr);
    assert.match(checked.stdout, new RegExp(`at ${mcp.base}/\\.well-known/oauth-protected-resource/mcp:`));
    assert.match(checked.stdout, /resource: ok: .*registered here as "MCP tools"/);
    assert.match(checked.stdout, /Everything matches\./);
    // The metadata's own address works as well.
    assert.equal((await check(`${mcp.base}/.well-known/oauth-protected-resource/mcp`)).code, 0);
  });

  it('names each difference and exits 1: another authorization server, scopes not registered or not listed, another resource', async () => {
    metadata = { resource: `${mcp.base}/mcp`, authorization_servers: ['https://other-as.example'], scopes_supported: ['tools:read', 'tools:admin'] };
    const checked = await check(`${mcp.base}/mcp`);
    assert.equal(checked.code, 1);
    assert.match(
      checked.stdout,
      new RegExp(
        `authorization_servers: DIFFERS: https://other-as\\.example does not include this server's issuer ${server.config.issuer.replaceAll('.', '\\.')}`,
      ),
    );
    assert.match(checked.stdout, /scopes_supported: DIFFERS: not registered here: tools:admin; registered here but not listed: tools:write/);
    const json = JSON.parse((await check(`${mcp.base}/mcp`, true)).stdout) as { differs: boolean; checks: { what: string; ok: boolean }[] };
    assert.deepEqual(
      [json.differs, json.checks.map((line) => [line.what, line.ok])],
      [
        true,
        [
          ['resource', true],
          ['authorization_servers', false],
          ['scopes_supported', false],
        ],
      ],
    );
    metadata = { resource: 'https://mcp.example.com/mcp', authorization_servers: [server.config.issuer] };
    const other = await check(`${mcp.base}/mcp`);
    assert.equal(other.code, 1);
    assert.match(other.stdout, /resource: DIFFERS: the metadata says https:\/\/mcp\.example\.com\/mcp, but was fetched for .*RFC 9728 §3\.3/);
  });

  it('says so when the API is not registered here, or there is no metadata to read', async () => {
    metadata = { resource: `${mcp.base}/mcp`, authorization_servers: [server.config.issuer] };
    const unknown = await runTessera(['resource', 'check', `${mcp.base}/mcp`], {
      TESSERA_DATABASE: (await startTestServerDatabase()).database,
      TESSERA_ISSUER: server.config.issuer,
    });
    assert.equal(unknown.code, 1);
    assert.match(unknown.stdout, /is not an API registered here \(tessera resource add --identifier/);
    const missing = await check(`${mcp.base}/elsewhere`);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /answered HTTP 404: no protected resource metadata there/);
    metadata = 'not json';
    assert.match((await check(`${mcp.base}/mcp`)).stderr, /is not JSON/);
    assert.equal((await check('not a url')).code, 2);
  });

  /** Another server's database: an empty one, with no API registered. */
  async function startTestServerDatabase(): Promise<{ database: string }> {
    const other = await startTestServer();
    after(() => other.close());
    return { database: other.config.database };
  }
});

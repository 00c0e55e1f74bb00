/**
 * Tessera as the authorization server of an MCP server (docs/mcp.md): the official MCP
 * TypeScript SDK's client, with its OAuth client provider, connects to a small MCP server
 * whose tools need a Tessera access token. It finds Tessera through the MCP server's
 * protected resource metadata (RFC 9728), registers itself (RFC 7591, open policy), signs a
 * person in in Chromium with PKCE and `resource` (RFC 8707), calls a tool with the token, and
 * refreshes the token when the MCP server refuses the old one.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import type { Browser } from 'playwright-core';
import { addResource } from '../src/flows/manage/resources.ts';
import { catchRedirect, chromiumUnavailable, launchChromium, signInWithPassword } from './helpers/chromium.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeServer, listenOnFreePort, startTestServer, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const CALLBACK = 'http://127.0.0.1:9/mcp-callback';

/** RFC 9068 §2.2: what the MCP server reads of an access token. */
interface AccessClaims {
  readonly sub?: string;
  readonly scope?: string;
  readonly client_id?: string;
}

/**
 * The MCP server of docs/mcp.md: its `/mcp` endpoint takes a Tessera access token for its own
 * identifier with the scope `calendar:read`, checked with jose against Tessera's keys; without
 * one it answers 401 pointing at its protected resource metadata.
 */
async function calendarMcpServer(issuer: string): Promise<{ url: string; resource: string; server: Server; calls: string[] }> {
  const keys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
  const calls: string[] = [];
  let origin = '';
  const http = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0];
    const resource = `${origin}/mcp`;
    const metadataUrl = `${origin}/.well-known/oauth-protected-resource/mcp`;
    if (path === '/.well-known/oauth-protected-resource/mcp' || path === '/.well-known/oauth-protected-resource') {
      // RFC 9728 §3: where its tokens come from, and what to ask for.
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          resource,
          authorization_servers: [issuer],
          scopes_supported: ['calendar:read', 'offline_access'],
          bearer_methods_supported: ['header'],
        }),
      );
      return;
    }
    if (path !== '/mcp') {
      response.writeHead(404).end();
      return;
    }
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    let claims: AccessClaims | null = null;
    try {
      if (token) claims = (await jwtVerify(token, keys, { issuer, audience: resource, typ: 'at+jwt' })).payload as AccessClaims;
    } catch {
      claims = null;
    }
    if (!claims || !(claims.scope ?? '').split(' ').includes('calendar:read')) {
      // RFC 9728 §5.1 and RFC 6750 §3: where to learn how to get a token.
      response.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${metadataUrl}"${token ? ', error="invalid_token"' : ''}` }).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : undefined;
    // Stateless: a server and a transport per request.
    const mcp = new McpServer({ name: 'calendar', version: '1.0.0' });
    const person = claims.sub!;
    mcp.registerTool('next_meeting', { description: "The signed-in person's next meeting" }, async () => {
      calls.push(person);
      return { content: [{ type: 'text', text: `Next meeting for ${person}: stand-up at 09:30` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    response.on('close', () => void transport.close());
    await mcp.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  const { port } = await listenOnFreePort(http);
  origin = `http://127.0.0.1:${port}`;
  return { url: `${origin}/mcp`, resource: `${origin}/mcp`, server: http, calls };
}

/** The SDK's OAuth client provider, in memory, as an agent keeps what it is given unchanged. */
class AgentProvider implements OAuthClientProvider {
  information: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  get redirectUrl() {
    return CALLBACK;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Calendar Agent',
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describe('an MCP server protected by Tessera, with the MCP SDK client', () => {
  let tessera: TestServer;
  let mcp: Awaited<ReturnType<typeof calendarMcpServer>>;

  before(async () => {
    tessera = await startTestServer({ env: { TESSERA_REGISTRATION: 'open' } });
    mcp = await calendarMcpServer(tessera.url);
    // `tessera resource add --identifier <the MCP server's URL> --scope calendar:read=...`
    await addResource(manageDeps(tessera), {
      identifier: mcp.resource,
      name: 'Team Calendar',
      scopes: [{ name: 'calendar:read', description: 'See your calendar' }],
    });
  });
  after(async () => {
    await closeServer(mcp.server);
    await tessera.close();
  });

  it('discovers Tessera, registers, signs a person in in Chromium, calls a tool, and refreshes its token', { skip: chromiumUnavailable() }, async () => {
    const provider = new AgentProvider();
    const user = await tessera.addUser({ name: 'Grace Hopper' });
    const first = new Client({ name: 'calendar-agent', version: '1.0.0' });
    await assert.rejects(first.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider })), UnauthorizedError);
    assert.ok(provider.information?.client_id, 'registered itself (RFC 7591)');
    const authorizationUrl = provider.authorizationUrl!;
    assert.equal(authorizationUrl.origin, new URL(tessera.url).origin);
    assert.equal(authorizationUrl.searchParams.get('resource'), mcp.resource, 'RFC 8707: the MCP server is the audience');
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

    let browser: Browser | undefined;
    let code: string;
    try {
      browser = await launchChromium();
      const page = await browser.newPage();
      const callback = catchRedirect(page, CALLBACK);
      await page.goto(authorizationUrl.href);
      await signInWithPassword(page, user);
      await page.getByRole('region', { name: 'Team Calendar' }).waitFor();
      assert.match(await page.getByRole('note').innerText(), /Not verified by Tessera\. Calendar Agent registered itself/);
      await page.getByRole('button', { name: 'Approve' }).click();
      code = (await within(callback, 'the redirect back to the agent')).searchParams.get('code')!;
    } finally {
      await browser?.close();
    }

    const transport = new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider });
    await transport.finishAuth(code);
    assert.ok(provider.saved?.access_token && provider.saved.refresh_token, 'an access token and a refresh token');
    const agent = new Client({ name: 'calendar-agent', version: '1.0.0' });
    await agent.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider }));
    const { tools } = await agent.listTools();
    assert.deepEqual(
      tools.map((tool) => tool.name),
      ['next_meeting'],
    );
    const answer = await agent.callTool({ name: 'next_meeting', arguments: {} });
    assert.match((answer.content as { text: string }[])[0]!.text, /^Next meeting for [\w-]+: stand-up at 09:30$/);
    assert.equal(mcp.calls.length, 1);
    await agent.close();

    // The access token is refused (as when it has expired): the SDK refreshes and goes on.
    const before = provider.saved!;
    provider.saveTokens({ ...before, access_token: 'expired' });
    const again = new Client({ name: 'calendar-agent', version: '1.0.0' });
    await again.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider }));
    await again.callTool({ name: 'next_meeting', arguments: {} });
    assert.equal(mcp.calls.length, 2);
    assert.notEqual(provider.saved!.access_token, 'expired', 'a new access token');
    assert.notEqual(provider.saved!.refresh_token, before.refresh_token, 'the refresh token rotated');
    await again.close();
  });
});

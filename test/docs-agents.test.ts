/**
 * docs/agents.md run as written, each of its three patterns: its shell blocks' commands against
 * test servers' databases, then its code (only the addresses replaced, and plain http allowed
 * on loopback). An API exchanges a person's token for one for another API; an agent exchanges
 * a person's ID token at one Tessera (the identity provider) for an ID-JAG and redeems it at
 * another (the MCP server's) for a token acting for the same person there; an MCP server's
 * metadata passes `tessera resource check` and its code reads the person from a token.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { GRANT_AUTHORIZATION_CODE } from '../src/core/protocol.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { runTessera } from './helpers/cli.ts';
import { manageDeps } from './helpers/manage.ts';
import { closeServer, listenOnFreePort, startTestServer, type TestServer } from './helpers/server.ts';
import { signInRaw } from './helpers/lifecycle.ts';

const DOC = readFileSync(new URL('../docs/agents.md', import.meta.url), 'utf8');
const PHOTOS = 'https://photos.example.com';
const PRINTS = 'https://prints.example.com';

const blocks = (language: string) => [...DOC.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((match) => match[1]!);
const words = (line: string) => [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);

describe('docs/agents.md: an API calling another for a person, as written', () => {
  let server: TestServer;
  let file: URL;

  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    if (file) rmSync(file, { force: true });
    await server.close();
  });

  it("registers the print API and the photo API's client with the commands shown, and the example exchanges a person's photo token for a print token acting for them", async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    const commands = blocks('sh')[0]!
      .split('\n')
      .filter((line) => line.startsWith('tessera '));
    assert.equal(commands.length, 2);
    let registered: Record<string, string> | undefined;
    for (const line of commands) {
      const args = words(line.slice('tessera '.length));
      const ran = await runTessera(args[0] === 'client' ? [...args, '--json'] : args, env);
      assert.equal(ran.code, 0, `${line}: ${ran.stderr}`);
      if (args[0] === 'client') registered = JSON.parse(ran.stdout) as Record<string, string>;
    }
    // The app the person signed in to, for the photo API and the print API.
    await addResource(manageDeps(server), { identifier: PHOTOS, name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] });
    const app = await server.addClient({ scopes: ['photos:read', 'prints:order'], grantTypes: [GRANT_AUTHORIZATION_CODE] });
    const user = await server.addUser();
    const signedIn = await signInRaw(server, app, user, 'photos:read prints:order', { tokenParams: { resource: PHOTOS } });

    const [code0] = blocks('ts');
    assert.match(code0!, /const ISSUER = 'https:\/\/auth\.example\.com';/);
    const discovery = 'client.discovery(new URL(ISSUER), process.env.CLIENT_ID!, process.env.CLIENT_SECRET!)';
    assert.ok(code0!.includes(discovery));
    process.env['CLIENT_ID'] = registered!['client_id'];
    process.env['CLIENT_SECRET'] = registered!['client_secret'];
    // Inside the checkout, so that openid-client resolves from its node_modules.
    file = new URL(`./.agents-doc-${randomUUID()}.ts`, import.meta.url);
    writeFileSync(
      file,
      code0!
        .replace("'https://auth.example.com'", JSON.stringify(server.url))
        .replace(discovery, `${discovery.slice(0, -1)}, undefined, { execute: [client.allowInsecureRequests] })`),
    );
    const { printsTokenFor } = (await import(file.href)) as { printsTokenFor: (token: string) => Promise<string> };
    const token = decodeJwt(await printsTokenFor(signedIn['access_token'] as string));
    assert.deepEqual(
      [token.sub, token.aud, token['client_id'], token['scope'], token['act']],
      [user.id, PRINTS, registered!['client_id'], 'prints:order', { sub: registered!['client_id'] }],
    );
  });
});

describe('docs/agents.md: an agent through an enterprise identity provider (ID-JAG), as written', () => {
  let idp: TestServer;
  let auth: TestServer;
  let file: URL;

  before(async () => {
    [idp, auth] = await Promise.all([startTestServer(), startTestServer()]);
  });
  after(async () => {
    if (file) rmSync(file, { force: true });
    await idp.close();
    await auth.close();
  });

  /** The page's addresses are the two servers'. */
  const ported = (text: string) => text.replaceAll('https://idp.example.com', idp.url).replaceAll('https://auth.mcp.example.com', auth.url);

  it("registers the API, the trusted identity provider and the agent at both servers with the commands shown, and the agent's code gets a token for the MCP server acting for the person", async () => {
    const [, atAuth, atIdp] = blocks('sh');
    const run = async (block: string, server: TestServer, expected: number) => {
      const commands = block.split('\n').filter((line) => line.startsWith('tessera '));
      assert.equal(commands.length, expected);
      let registered: Record<string, string> | undefined;
      for (const line of commands) {
        const ran = await runTessera(words(ported(line).slice('tessera '.length)), {
          TESSERA_DATABASE: server.config.database,
          TESSERA_ISSUER: server.config.issuer,
        });
        assert.equal(ran.code, 0, `${line}: ${ran.stderr}`);
        if (line.startsWith('tessera client add')) registered = JSON.parse(ran.stdout) as Record<string, string>;
      }
      return registered!;
    };
    const atAuthClient = await run(atAuth!, auth, 3);
    const atIdpClient = await run(atIdp!, idp, 1);
    assert.deepEqual([atAuthClient['client_id'], atIdpClient['client_id']], ['calendar-agent', 'calendar-agent']);

    // The person, with the same verified address at both (the rule's second way).
    const person = await idp.addUser({ email: 'grace@corp.example', profile: { emailVerified: true } });
    const there = await auth.addUser({ email: 'grace@corp.example', profile: { emailVerified: true } });
    const calendarAgent = { clientId: 'calendar-agent', clientSecret: atIdpClient['client_secret']! };
    const signedIn = await signInRaw(idp, calendarAgent, person, 'openid email', { redirectUri: 'https://agent.example.com/callback' });

    const agent = blocks('ts')[1]!;
    const discoveries = [
      "client.discovery(new URL(IDP), 'calendar-agent', process.env.IDP_CLIENT_SECRET!)",
      "client.discovery(new URL(AUTH), 'calendar-agent', process.env.AUTH_CLIENT_SECRET!)",
    ];
    for (const discovery of discoveries) assert.ok(agent.includes(discovery), discovery);
    process.env['IDP_CLIENT_SECRET'] = atIdpClient['client_secret'];
    process.env['AUTH_CLIENT_SECRET'] = atAuthClient['client_secret'];
    file = new URL(`./.agents-doc-${randomUUID()}.ts`, import.meta.url);
    let source = ported(agent);
    for (const discovery of discoveries)
      source = source.replace(discovery, `${discovery.slice(0, -1)}, undefined, { execute: [client.allowInsecureRequests] })`);
    writeFileSync(file, source);
    const { mcpTokenFor } = (await import(file.href)) as { mcpTokenFor: (idToken: string) => Promise<string> };
    const token = decodeJwt(await mcpTokenFor(signedIn['id_token'] as string));
    assert.deepEqual(
      [token.iss, token.sub, token.aud, token['client_id'], token['scope'], token['id_jag_iss']],
      [auth.config.issuer, there.id, 'https://mcp.example.com/mcp', 'calendar-agent', 'tools:read', idp.config.issuer],
    );
  });
});

describe('docs/agents.md: an MCP server behind Tessera, as written', () => {
  let server: TestServer;
  let mcp: { base: string; close: () => Promise<void> };
  let file: URL;
  let served: Record<string, unknown> = {};

  before(async () => {
    server = await startTestServer();
    const http = createServer((request, response) => {
      if (request.url !== '/.well-known/oauth-protected-resource/mcp') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served));
    });
    const { port } = await listenOnFreePort(http);
    mcp = { base: `http://127.0.0.1:${port}`, close: () => closeServer(http) };
  });
  after(async () => {
    if (file) rmSync(file, { force: true });
    await mcp.close();
    await server.close();
  });

  /** The page's MCP server and authorization server are the test's. */
  const ported = (text: string) => text.replaceAll('https://mcp.example.com', mcp.base).replaceAll('https://auth.example.com', server.url);

  it('registers the MCP server, whose metadata as shown passes `tessera resource check`, and whose code reads the person from a token Tessera issued for it', async () => {
    // Its metadata and its token check, from the page's code.
    file = new URL(`./.agents-doc-${randomUUID()}.ts`, import.meta.url);
    writeFileSync(file, ported(blocks('ts')[2]!));
    const { metadata, callerOf } = (await import(file.href)) as {
      metadata: Record<string, unknown>;
      callerOf: (authorization: string | undefined) => Promise<{ sub: string; scope: string[] }>;
    };
    served = metadata;

    const commands = blocks('sh')[3]!
      .split('\n')
      .filter((line) => line.startsWith('tessera '));
    assert.deepEqual(
      commands.map((line) => words(line).slice(1, 3).join(' ')),
      ['resource add', 'resource check'],
    );
    for (const line of commands) {
      const ran = await runTessera(words(ported(line).slice('tessera '.length)), {
        TESSERA_DATABASE: server.config.database,
        TESSERA_ISSUER: server.config.issuer,
      });
      assert.equal(ran.code, 0, `${line}: ${ran.stdout}${ran.stderr}`);
    }
    // What the check says when the metadata names another authorization server.
    served = { ...metadata, authorization_servers: ['https://elsewhere.example'] };
    assert.equal(
      (
        await runTessera(words(ported(commands[1]!).slice('tessera '.length)), {
          TESSERA_DATABASE: server.config.database,
          TESSERA_ISSUER: server.config.issuer,
        })
      ).code,
      1,
    );

    // A person's token for the MCP server, through an app that asked for it (RFC 8707 resource).
    const resource = `${mcp.base}/mcp`;
    const app = await server.addClient({ scopes: ['tools:read'], grantTypes: [GRANT_AUTHORIZATION_CODE] });
    const user = await server.addUser();
    const tokens = await signInRaw(server, app, user, 'tools:read', { authorizeParams: { resource }, tokenParams: { resource } });
    assert.deepEqual(await callerOf(`Bearer ${tokens['access_token'] as string}`), { sub: user.id, scope: ['tools:read'] });
    await assert.rejects(callerOf(undefined));
  });
});

/**
 * docs/agents.md run as written: its shell block's commands against a test server's database,
 * then its openid-client example, with the client the commands registered, exchanges a
 * person's token for the photo API for one for the print API that acts for them (only the
 * issuer replaced, and plain http allowed on loopback).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { GRANT_AUTHORIZATION_CODE } from '../src/core/protocol.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { runTessera } from './helpers/cli.ts';
import { manageDeps } from './helpers/manage.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';
import { FormBrowser } from './helpers/browser.ts';
import * as oidc from 'openid-client';

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

  it('registers the print API and the photo API\'s client with the commands shown, and the example exchanges a person\'s photo token for a print token acting for them', async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    const commands = blocks('sh')[0]!.split('\n').filter((line) => line.startsWith('tessera '));
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
    const verifier = oidc.randomPKCECodeVerifier();
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({ response_type: 'code', client_id: app.clientId, redirect_uri: REDIRECT_URI, scope: 'photos:read prints:order', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' }).toString();
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    const code = new URL(page.location!).searchParams.get('code')!;
    const signedIn = await postForm(`${server.url}/oauth/token`, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, resource: PHOTOS }, { authorization: basic(app.clientId, app.clientSecret) });
    assert.equal(signedIn.status, 200, JSON.stringify(signedIn.body));

    const [code0] = blocks('ts');
    assert.match(code0!, /const ISSUER = 'https:\/\/auth\.example\.com';/);
    const discovery = "client.discovery(new URL(ISSUER), process.env.CLIENT_ID!, process.env.CLIENT_SECRET!)";
    assert.ok(code0!.includes(discovery));
    process.env['CLIENT_ID'] = registered!['client_id'];
    process.env['CLIENT_SECRET'] = registered!['client_secret'];
    // Inside the checkout, so that openid-client resolves from its node_modules.
    file = new URL(`./.agents-doc-${randomUUID()}.ts`, import.meta.url);
    writeFileSync(file, code0!.replace("'https://auth.example.com'", JSON.stringify(server.url))
      .replace(discovery, `${discovery.slice(0, -1)}, undefined, { execute: [client.allowInsecureRequests] })`));
    const { printsTokenFor } = (await import(file.href)) as { printsTokenFor: (token: string) => Promise<string> };
    const token = decodeJwt(await printsTokenFor(signedIn.body['access_token'] as string));
    assert.deepEqual([token.sub, token.aud, token['client_id'], token['scope'], token['act']], [user.id, PRINTS, registered!['client_id'], 'prints:order', { sub: registered!['client_id'] }]);
  });
});

/**
 * Docs/identity-providers.md's "Another Tessera on the same machine", run
 * as written against two servers on http://localhost (the ports the page names replaced by
 * theirs): the redirect URI is printed before the upstream client exists, the upstream
 * Tessera registers it for a confidential web app although it is http://localhost, and the
 * provider added with the printed id and secret sends the browser to the upstream, which
 * takes that redirect URI.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { runTessera } from './helpers/cli.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

const PAGE = readFileSync(new URL('../docs/identity-providers.md', import.meta.url), 'utf8');

/** A shell line's words, with '…' and "…" quoting. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

describe('docs/identity-providers.md: another Tessera on the same machine, as written', () => {
  let downstream: TestServer;
  let upstream: TestServer;
  before(async () => {
    downstream = await startTestServer({ issuerHost: 'localhost' });
    upstream = await startTestServer({ issuerHost: 'localhost' });
  });
  after(() => closeAll(downstream, upstream));

  it('prints the redirect URI first, registers it upstream, adds the provider, and the upstream takes the redirect', async () => {
    const block = [...PAGE.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1]!).find((code) => code.includes('provider redirect-uri'));
    assert.ok(block, 'the page has the block');
    const commands = block
      .split('\n')
      .filter((line) => line.includes('npm run --silent tessera -- '))
      .map((line) => line.replace(/\s+#\s.*$/, ''));
    assert.equal(commands.length, 3);
    // The page's ports are the two servers'.
    const ported = (text: string) => text.replaceAll('http://localhost:8080', downstream.url).replaceAll('http://localhost:9090', upstream.url);
    const at = (server: TestServer) => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
    const args = (line: string, values: Record<string, string> = {}) =>
      words(ported(line.slice(line.indexOf('npm run --silent tessera -- ') + 'npm run --silent tessera -- '.length))).map((word) => values[word] ?? word);

    const printed = await runTessera(args(commands[0]!), at(downstream));
    assert.equal(printed.code, 0, printed.stderr);
    const redirectUri = `${downstream.url}/login/upstream/team-id/callback`;
    assert.equal(printed.stdout, `${redirectUri}\n`);
    assert.ok(block.includes(`# ${'http://localhost:8080/login/upstream/team-id/callback'}`), 'the page shows what it prints');

    const registered = await runTessera(args(commands[1]!), at(upstream));
    assert.equal(registered.code, 0, registered.stderr);
    const clientId = /client_id:\s+(\S+)/.exec(registered.stdout)?.[1];
    const clientSecret = /client_secret:\s+(\S+)/.exec(registered.stdout)?.[1];
    assert.ok(clientId && clientSecret, registered.stdout);

    const added = await runTessera(args(commands[2]!, { $CLIENT_ID: clientId }), at(downstream), clientSecret);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, new RegExp(`Register this redirect URI with the provider: ${redirectUri}\n`));

    // The button's route sends the browser upstream with that redirect URI, and the upstream
    // takes it: its sign-in page, not an error about the redirect URI.
    const start = await fetch(`${downstream.url}/login/upstream/team-id`, { redirect: 'manual' });
    assert.equal(start.status, 303);
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(authorize.origin, upstream.url);
    assert.equal(authorize.searchParams.get('redirect_uri'), redirectUri);
    const answer = await fetch(authorize, { redirect: 'manual' });
    const page = await answer.text();
    assert.equal(answer.status, 200, page);
    assert.match(page, /<h1>Sign in<\/h1>\s*<p>to continue to <strong>Tessera on 8080<\/strong>/);
  });
});

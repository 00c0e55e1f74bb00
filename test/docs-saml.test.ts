/**
 * Runs docs/saml.md as written: its `sh` block registers the SP against the test server's
 * database, and its `js test=node-saml` block is the SP, with the server's address for
 * https://auth.example.com. The test plays the browser between the SP's sign-in address and
 * its ACS.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { shellWords } from './helpers/shell-blocks.ts';
import { startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

const markdown = readFileSync(new URL('../docs/saml.md', import.meta.url), 'utf8');
/** Where the example module is written: inside node_modules, so that its import resolves. */
const MODULES = new URL('../node_modules/.cache/tessera-docs/', import.meta.url);

let server: TestServer;
let user: TestUser;
before(async () => {
  server = await startTestServer();
  user = await server.addUser({ username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', profile: { emailVerified: true } });
  mkdirSync(MODULES, { recursive: true });
});
after(() => server.close());

describe('docs/saml.md, run as written', () => {
  it('registers the SP with the command of its sh block, and node-saml signs the person in with its js block', async () => {
    const sh = /^```sh\n([\s\S]*?)^```$/m
      .exec(markdown)![1]!
      .replace(/\\\n\s*/g, ' ')
      .trim();
    const prefix = 'npm run --silent tessera -- ';
    assert.ok(sh.startsWith(prefix), sh);
    const added = await runTessera(shellWords(sh.slice(prefix.length)), { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
    assert.equal(added.code, 0, added.stderr);

    const code = /^```js test=node-saml\n([\s\S]*?)^```$/m.exec(markdown)![1]!.replaceAll('https://auth.example.com', server.url);
    const file = new URL(`saml-sp-${process.pid}.mjs`, MODULES);
    writeFileSync(file, code);
    try {
      const sp = (await import(file.href)) as {
        signIn: (returnTo: string) => Promise<string>;
        acs: (form: Record<string, string>) => Promise<Record<string, string>>;
      };
      const browser = new FormBrowser(server.url);
      const page = await browser.signIn(await browser.follow(await browser.request(await sp.signIn('/wiki/start'))), user);
      const form = browser.form(page, 'https://wiki.example.com/saml/acs');
      const { id, ...signedIn } = await sp.acs(form.fields);
      assert.deepEqual(signedIn, { email: 'ada@example.com', name: 'Ada Lovelace', returnTo: '/wiki/start' });
      assert.match(String(id), /^[\w-]{43}$/, "a persistent NameID of the SP's own");
      assert.notEqual(id, user.id);
      assert.match(
        (await sp.acs.call(null, form.fields).catch((error: Error) => ({ error: error.message }))).error ?? '',
        /InResponseTo|replay|already/i,
        'the same response is not accepted twice by node-saml',
      );
    } finally {
      rmSync(file, { force: true });
    }
  });
});

/**
 * A first run as the README tells it: the default issuer is the address the README uses,
 * a form posted from another name for the same server says which address to use, and the
 * Node.js version asked for is one that hashes passwords.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config/index.ts';
import { FormBrowser } from './helpers/browser.ts';
import { text } from './helpers/device.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const ROOT = new URL('..', import.meta.url);

describe('first run', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('uses the issuer the README points clients and browsers at', () => {
    const readme = readFileSync(new URL('README.md', ROOT), 'utf8');
    assert.equal(loadConfig({}).issuer, 'http://localhost:8080');
    assert.match(readme, /the server on http:\/\/localhost:8080/);
    const examples = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((block) => block[1]).join('\n');
    assert.doesNotMatch(examples, /127\.0\.0\.1:8080/, 'no example on the other name');
  });

  it('answers a form posted from another name for this server with the address to open instead', async () => {
    const browser = new FormBrowser(server.url);
    const page = await browser.follow(await browser.request('/login'));
    const other = server.url.replace('127.0.0.1', 'localhost');
    const form = browser.form(page, '/login');
    const refused = await browser.request('/login', { form: { ...form.fields, username: 'ada', password: 'x' }, headers: { origin: other } });
    assert.equal(refused.status, 403);
    assert.match(text(refused), new RegExp(`This form was sent from another address \\(${other}\\)\\. Open the page at ${server.url} and try again\\.`));
    // In the person's language, the protocol's English description nowhere on the page.
    const german = await browser.request('/login', {
      form: { ...form.fields, username: 'ada', password: 'x' },
      headers: { origin: other, 'accept-language': 'de' },
    });
    assert.equal(german.status, 403);
    assert.match(
      text(german),
      new RegExp(`Dieses Formular wurde von einer anderen Adresse gesendet \\(${other}\\)\\. Öffnen Sie die Seite unter ${server.url}`),
    );
    assert.doesNotMatch(text(german), /another site|open the page/);
  });

  it('asks for the Node.js that has argon2 (24.7), in package.json and the README', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { engines: { node: string } };
    assert.equal(pkg.engines.node, '>=24.7');
    assert.match(readFileSync(new URL('README.md', ROOT), 'utf8'), /Node\.js 24\.7 or later/);
  });
});

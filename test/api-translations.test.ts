/**
 * Registered APIs' names and scope descriptions in the person's language, from the
 * file TESSERA_API_TRANSLATIONS names: the README's example file, as written, on the approval
 * page and the account page; what it leaves out is shown as registered; and a mistake in the
 * file stops the start naming the setting, the file and the entry.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/index.ts';
import { unmatchedTranslations } from '../src/flows/resources.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { text } from './helpers/device.ts';
import { outputMatches, serveTessera } from './helpers/cli.ts';
import { addPhotoLibrary } from './helpers/fixtures.ts';
import { REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const EXAMPLE = /^## Languages$[\s\S]*?^```json\n([\s\S]*?)^```$/m.exec(README)?.[1];

describe("TESSERA_API_TRANSLATIONS: registered APIs in the person's language", () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-api-translations-'));
  let server: TestServer;
  let client: TestClient;
  let user: TestUser;

  before(async () => {
    assert.ok(EXAMPLE, "the README's Languages section has an example file");
    const file = join(dir, 'apis.json');
    writeFileSync(file, EXAMPLE);
    server = await startTestServer({ env: { TESSERA_API_TRANSLATIONS: file } });
    // The API of docs/apis.md, registered with its command.
    await addPhotoLibrary(server);
    client = await server.addClient({ name: 'Photo Printer', scopes: ['openid', 'photos:read', 'photos:write'] });
    user = await server.addUser();
  });
  after(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The approval page for the photos scopes, in `ui_locales`. */
  async function approvalIn(locale: string): Promise<{ browser: FormBrowser; page: Page }> {
    const browser = new FormBrowser(server.url);
    const url = `/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid photos:read photos:write',
      ui_locales: locale,
      prompt: 'consent',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString()}`;
    const signIn = await browser.follow(await browser.request(url));
    const page = await browser.follow(await browser.submit(signIn, '/login', { username: user.username, password: user.password }));
    assert.match(page.html, /<html lang="[^"]+"/);
    return { browser, page };
  }

  it('shows the German names and descriptions on the approval page and the account page', async () => {
    const { browser, page } = await approvalIn('de');
    assert.match(page.html, /<html lang="de"/);
    const shown = text(page);
    for (const german of ['Fotoarchiv', 'Ihre Fotos ansehen', 'Fotos hochladen und löschen']) assert.ok(shown.includes(german), `${german} in ${shown}`);
    for (const english of ['Photo Library', 'See your photos', 'Upload and delete your photos']) assert.ok(!shown.includes(english), english);
    const decided = await browser.submit(page, '/oauth/authorize/decision', { decision: 'approve' });
    assert.equal(decided.status, 303);
    const account = text(await browser.follow(await browser.request('/account', { headers: { 'accept-language': 'de' } })));
    assert.ok(account.includes('Fotoarchiv') && account.includes('Ihre Fotos ansehen'), account);
  });

  it('shows what the file leaves out as registered: Japanese has one description, English none', async () => {
    const japanese = text((await approvalIn('ja')).page);
    assert.ok(japanese.includes('写真の閲覧'), japanese);
    assert.ok(japanese.includes('Photo Library') && japanese.includes('Upload and delete your photos'), japanese);
    const english = text((await approvalIn('en')).page);
    assert.ok(english.includes('Photo Library') && english.includes('See your photos') && english.includes('Upload and delete your photos'), english);
  });

  it('says at start what the file names that no registered API has (a misspelt scope is never shown)', async () => {
    assert.deepEqual(
      unmatchedTranslations(server.config.site.apiTranslations, await server.store.resources.list()),
      [],
      "the README's file names only what docs/apis.md registers",
    );
    const file = join(dir, 'typo.json');
    writeFileSync(
      file,
      JSON.stringify({
        de: { apis: { 'https://api.example.org': 'Fotoarchiv' }, scopes: { 'photos:read': 'Ihre Fotos ansehen', 'photos:raed': 'Ihre Fotos ansehen' } },
      }),
    );
    const serving = await serveTessera([], { TESSERA_DATABASE: server.config.database, TESSERA_API_TRANSLATIONS: file });
    try {
      await outputMatches(
        serving,
        /TESSERA_API_TRANSLATIONS names what no registered API has, so it is never shown: de: apis\.https:\/\/api\.example\.org, de: scopes\.photos:raed"/,
      );
    } finally {
      await serving.stop();
    }
  });

  it('refuses a file with a mistake at start, naming the setting, the file and the entry', () => {
    const refusal = (content: string, pattern: RegExp) => {
      const file = join(dir, `bad-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, content);
      assert.throws(
        () => loadConfig({ TESSERA_API_TRANSLATIONS: file }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.ok(error.message.startsWith(`TESSERA_API_TRANSLATIONS: ${file}: `), error.message);
          assert.match(error.message, pattern);
          return true;
        },
      );
    };
    refusal('{"de": {"scopes": {"photos:read": "Ihre Fotos"}', /not valid JSON/);
    refusal('{"xx": {"scopes": {}}}', /"xx" is not a language Tessera has pages in/);
    refusal('{"de": {"scope": {}}}', /"scope" is neither "apis"/);
    refusal('{"de": {"scopes": {"photos:read": ""}}}', /de\.scopes\.photos:read: must be text of 1 to 200 characters/);
    refusal(`{"de": {"apis": {"https://api.example.com": "${'x'.repeat(101)}"}}}`, /de\.apis\.https:\/\/api\.example\.com: must be text of 1 to 100/);
    refusal('["de"]', /must be a JSON object of languages/);
    assert.throws(
      () => loadConfig({ TESSERA_API_TRANSLATIONS: join(dir, 'missing.json') }),
      /TESSERA_API_TRANSLATIONS: .*missing\.json: cannot be read \(ENOENT\)/,
    );
  });
});

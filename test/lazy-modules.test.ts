/**
 * What a started server does not load until it is used (docs/benchmarks.md, "Peak RSS"):
 * libraries few servers need and the catalogues of languages nobody has asked for yet. Each
 * held megabytes of every server process; a static import put back anywhere on the way
 * from `src/app.ts` would bring it back unnoticed, so this records every module the app's
 * import graph resolves, in a process of its own. So do the JSON schema compilers, which
 * also cost every start the time to compile the admin API's schemas.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const RECORD = `
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
await import(${JSON.stringify(new URL('../src/main.ts', import.meta.url).href)});
await import(${JSON.stringify(new URL('../src/app.ts', import.meta.url).href)});
await import(${JSON.stringify(new URL('../src/http/metrics.ts', import.meta.url).href)});
// Node's own undici, loaded by the first fetch: an internal module, not resolved through the hooks.
const undici = process.moduleLoadList.filter((name) => name.includes('undici'));
const { messages } = await import(${JSON.stringify(new URL('../src/ui/i18n.ts', import.meta.url).href)});
const before = seen.length;
const title = messages('ja').text('signIn.title');
process.stdout.write(JSON.stringify({ atStart: seen.slice(0, before), onFirstUse: seen.slice(before), title, undici }));
`;

/**
 * A server started in the child, then asked by an admin API client for a page of clients,
 * first with a limit that is not a number: what it resolved until it served, and after.
 */
const RECORD_ADMIN = `
import { registerHooks } from 'node:module';
const seen = [];
registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
const { startTestServer, basic } = await import(${JSON.stringify(new URL('./helpers/server.ts', import.meta.url).href)});
const { manageDeps } = await import(${JSON.stringify(new URL('./helpers/manage.ts', import.meta.url).href)});
const { createClient } = await import(${JSON.stringify(new URL('../src/flows/manage/clients.ts', import.meta.url).href)});
const server = await startTestServer();
const { client, secret } = await createClient(manageDeps(server), { client_name: 'CI', grant_types: ['client_credentials'], scope: 'admin:clients' });
const form = new URLSearchParams({ grant_type: 'client_credentials', resource: server.config.issuer + '/admin' });
const { access_token } = await (await fetch(server.url + '/oauth/token', { method: 'POST', headers: { authorization: basic(client.id, secret), 'content-type': 'application/x-www-form-urlencoded' }, body: form })).json();
const served = seen.length;
const ask = (query) => fetch(server.url + '/admin/v1/clients' + query, { headers: { authorization: 'Bearer ' + access_token } });
const refused = (await ask('?limit=lots')).status;
const listed = await ask('');
const body = await listed.json();
await server.close();
process.stdout.write(JSON.stringify({ atStart: seen.slice(0, served), onFirstUse: seen.slice(served), statuses: [refused, listed.status], clients: body.clients?.length }));
`;

describe('a started server', () => {
  it('loads no passkey, QR code, outbound HTTP, mail, XML or LDAP library, and no catalogue but English, until one is used', () => {
    const output = execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', RECORD], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const { atStart, onFirstUse, title, undici } = JSON.parse(output) as { atStart: string[]; onFirstUse: string[]; title: string; undici: string[] };
    // The recording works: the app's own modules and the libraries it needs at start are seen.
    assert.ok(atStart.some((url) => url.endsWith('/src/ui/locales/en.ts')));
    assert.ok(atStart.some((url) => url.includes('/node_modules/fastify/')));
    const lazy =
      /\/node_modules\/(?:undici|@simplewebauthn\/server|qrcode|nodemailer|xml-crypto|xpath|@xmldom\/xmldom|xml-encryption|ldapts)\/|\/src\/ui\/locales\/(?:de|fr|es|pt-BR|ja|zh-Hans|ar)\.ts$/;
    assert.deepEqual(
      atStart.filter((url) => lazy.test(url)),
      [],
    );
    // Nor Node's own undici, which `node:http` imported as an ES module would load for its
    // WebSocket getters (src/core/node-http.ts): about 30 ms of every start.
    assert.deepEqual(undici, []);
    // A language is loaded, synchronously, the first time a message is asked for in it.
    assert.equal(title, 'ログイン');
    assert.ok(onFirstUse.some((url) => url.endsWith('/src/ui/locales/ja.ts')));
  });

  it('compiles no JSON schema, and loads neither Ajv nor fast-json-stringify, until the admin API is called', () => {
    const output = execFileSync(process.execPath, ['--disable-warning=ExperimentalWarning', '--input-type=module', '-e', RECORD_ADMIN], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    const { atStart, onFirstUse, statuses, clients } = JSON.parse(output) as { atStart: string[]; onFirstUse: string[]; statuses: number[]; clients: number };
    assert.ok(
      atStart.some((url) => url.includes('/node_modules/fastify/')),
      'the recording works',
    );
    // Fastify's own error answers use fast-json-stringify's runtime (lib/serializer.js), not its compiler.
    const compilers = /\/node_modules\/(?:ajv\/|fast-json-stringify\/index\.js)/;
    assert.deepEqual(
      atStart.filter((url) => compilers.test(url)),
      [],
      'neither compiler while the server starts and issues a token',
    );
    // The first request validated and the first answer serialized load them, and work.
    assert.deepEqual(statuses, [400, 200]);
    assert.ok(clients >= 1);
    assert.ok(onFirstUse.some((url) => url.includes('/node_modules/ajv/')));
    assert.ok(onFirstUse.some((url) => url.endsWith('/node_modules/fast-json-stringify/index.js')));
  });
});

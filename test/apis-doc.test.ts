/**
 * docs/apis.md's resource server, run as written (only its two addresses replaced): it
 * accepts a token for its API with the scope it needs, and refuses one for another API, one
 * without the scope, and an ID token.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { JWTPayload } from 'jose';
import { runTessera } from './helpers/cli.ts';
import { discover, signIn } from './helpers/lifecycle.ts';
import { startTestServer, type TestServer, type TestUser } from './helpers/server.ts';
import type * as oidc from 'openid-client';

const DOC = new URL('../docs/apis.md', import.meta.url);
const PHOTOS = 'https://api.example.com';
const CALENDAR = 'https://calendar.example.com';

/** The one ```ts block of docs/apis.md, its ISSUER set to `issuer`. */
function example(issuer: string): string {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 1, 'docs/apis.md has one TypeScript example');
  const code = blocks[0]!;
  assert.match(code, /const ISSUER = 'https:\/\/auth\.example\.com';/);
  assert.match(code, /const API = 'https:\/\/api\.example\.com';/);
  return code.replace("'https://auth.example.com'", JSON.stringify(issuer));
}

describe('docs/apis.md: the resource server example', () => {
  let server: TestServer;
  let user: TestUser;
  let config: oidc.Configuration;
  let file: URL;
  let authorize: (authorization: string | undefined, scope: string) => Promise<JWTPayload>;

  before(async () => {
    server = await startTestServer();
    const env = { TESSERA_DATABASE: server.config.database };
    for (const [identifier, scope] of [[PHOTOS, 'photos:read=See your photos'], [CALENDAR, 'calendar:read=See your calendar']] as const) {
      const added = await runTessera(['resource', 'add', '--identifier', identifier, '--name', identifier, '--scope', scope], env);
      assert.equal(added.code, 0, added.stderr);
    }
    const client = await server.addClient({ scopes: ['openid', 'photos:read', 'calendar:read'] });
    user = await server.addUser();
    config = await discover(server, client);
    // Inside the checkout, so that `jose` resolves from its node_modules.
    file = new URL(`./.apis-doc-${randomUUID()}.ts`, import.meta.url);
    writeFileSync(file, example(server.url));
    ({ authorize } = (await import(file.href)) as { authorize: typeof authorize });
  });
  after(async () => {
    if (file) rmSync(file, { force: true });
    await server.close();
  });

  it('accepts a token for its API with the scope, and refuses the rest', async () => {
    const photos = await signIn(server, config, user, 'openid photos:read');
    const calendar = await signIn(server, config, user, 'calendar:read');
    const payload = await authorize(`Bearer ${photos.access_token}`, 'photos:read');
    assert.equal(payload.sub, user.id);
    assert.equal(payload.aud, PHOTOS);
    await assert.rejects(authorize(`Bearer ${calendar.access_token}`, 'photos:read'), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'aud' });
    await assert.rejects(authorize(`Bearer ${photos.access_token}`, 'photos:write'), /insufficient_scope/);
    await assert.rejects(authorize(`Bearer ${photos.id_token!}`, 'photos:read'), { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED', claim: 'typ' });
    await assert.rejects(authorize(undefined, 'photos:read'), /invalid_token/);
  });
});

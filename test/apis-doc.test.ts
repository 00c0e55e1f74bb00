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
import {
  approveAt,
  ath,
  authorizationUrl,
  codeRequest,
  discover as discoverAs,
  dpopKey,
  handKeys,
  handProof,
  redeemCode,
  redeemedTokens,
} from './helpers/dpop.ts';

const DOC = new URL('../docs/apis.md', import.meta.url);
const PHOTOS = 'https://api.example.com';
const CALENDAR = 'https://calendar.example.com';

/** A ```ts block of docs/apis.md (0: Bearer tokens, 1: DPoP-bound tokens), its ISSUER set to `issuer`. */
function example(issuer: string, index = 0): string {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
  assert.equal(blocks.length, 2, 'docs/apis.md has two TypeScript examples');
  const code = blocks[index]!;
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
    for (const [identifier, scope] of [
      [PHOTOS, 'photos:read=See your photos'],
      [CALENDAR, 'calendar:read=See your calendar'],
    ] as const) {
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

describe('docs/apis.md: the DPoP example', () => {
  let server: TestServer;
  let user: TestUser;
  let bound: string;
  let bearer: string;
  let keys: Awaited<ReturnType<typeof handKeys>>['keys'];
  let file: URL;
  let authenticate: (method: string, url: string, authorization: string | undefined, dpop: string | undefined) => Promise<JWTPayload>;
  const url = `${PHOTOS}/photos`;

  before(async () => {
    server = await startTestServer();
    const added = await runTessera(['resource', 'add', '--identifier', PHOTOS, '--name', 'Photos', '--scope', 'photos:read=See your photos'], {
      TESSERA_DATABASE: server.config.database,
    });
    assert.equal(added.code, 0, added.stderr);
    const client = await server.addClient({ scopes: ['openid', 'photos:read'] });
    user = await server.addUser();
    const as = await discoverAs(server);
    const key = await dpopKey(client);
    keys = key.keys;
    const request = await codeRequest('openid photos:read');
    const callback = await approveAt(as, client, authorizationUrl(as, client.clientId, { ...request.params, resource: PHOTOS }), user, request.state);
    const response = await redeemCode(as, client, callback, request, { DPoP: key.handle, additionalParameters: { resource: PHOTOS } });
    bound = (await redeemedTokens(as, client, response, request)).access_token;
    bearer = (await signIn(server, await discover(server, client), user, 'openid photos:read')).access_token;
    file = new URL(`./.apis-doc-dpop-${randomUUID()}.ts`, import.meta.url);
    writeFileSync(file, example(server.url, 1));
    ({ authenticate } = (await import(file.href)) as { authenticate: typeof authenticate });
  });
  after(async () => {
    if (file) rmSync(file, { force: true });
    await server.close();
  });

  const refused = (error: string) => (thrown: unknown) =>
    thrown instanceof Error && thrown.message.startsWith(`${error}:`) && (thrown as { status?: number }).status === 401;

  it('accepts a bound token with its proof once, and a Bearer token as Bearer', async () => {
    const proof = await handProof(keys, { htm: 'GET', htu: `${url}?page=2`, ath: ath(bound) });
    const payload = await authenticate('GET', url, `DPoP ${bound}`, proof);
    assert.equal(payload.sub, user.id);
    assert.equal(payload.aud, PHOTOS);
    await assert.rejects(authenticate('GET', url, `DPoP ${bound}`, proof), refused('invalid_dpop_proof'));
    assert.equal((await authenticate('GET', url, `Bearer ${bearer}`, undefined)).sub, user.id);
  });

  it('refuses the bound token as Bearer, an unbound one as DPoP, and every bad proof', async () => {
    await assert.rejects(authenticate('GET', url, `Bearer ${bound}`, undefined), refused('invalid_token'));
    await assert.rejects(
      authenticate('GET', url, `DPoP ${bearer}`, await handProof(keys, { htm: 'GET', htu: url, ath: ath(bearer) })),
      refused('invalid_token'),
    );
    const other = await handKeys();
    for (const proof of [
      undefined,
      await handProof(other.keys, { htm: 'GET', htu: url, ath: ath(bound) }),
      await handProof(keys, { htm: 'GET', htu: url, ath: ath(bearer) }),
      await handProof(keys, { htm: 'POST', htu: url, ath: ath(bound) }),
      await handProof(keys, { htm: 'GET', htu: `${PHOTOS}/albums`, ath: ath(bound) }),
      await handProof(keys, { htm: 'GET', htu: url, ath: ath(bound), iat: Math.floor(Date.now() / 1000) - 600 }),
      await handProof(keys, { htm: 'GET', htu: url, ath: ath(bound), jwk: other.privateJwk, signWith: other.keys.privateKey }),
    ]) {
      await assert.rejects(authenticate('GET', url, `DPoP ${bound}`, proof), refused('invalid_dpop_proof'));
    }
  });
});

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import { scratchDatabase } from './helpers/scratch.ts';
import { runTessera as tessera } from './helpers/cli.ts';
import { openStore } from '../src/store/open.ts';
import { discover, OFFLINE_SCOPES, signIn, withRefresh } from './helpers/lifecycle.ts';
import { REDIRECT_URI, startTestServer, type TestServer, type TestUser } from './helpers/server.ts';

describe('the tessera command: refresh-token clients and grants', () => {
  const scratch = scratchDatabase('tessera-cli-grants-');
  const { env } = scratch;

  it('registers a device client for refresh tokens with --grant refresh_token', async () => {
    const result = await tessera(['client', 'add', '--name', 'TV', '--grant', 'device_code', '--grant', 'refresh_token', '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual((JSON.parse(result.stdout) as { grant_types: string[] }).grant_types, [GRANT_DEVICE_CODE, 'refresh_token']);
  });

  it('refuses refresh_token as the only grant', async () => {
    const result = await tessera(['client', 'add', '--name', 'Nothing', '--grant', 'refresh_token'], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /refresh_token needs authorization_code or device_code/);
  });

  it("lists a user's grants and revokes one by its id", async () => {
    const client = JSON.parse(
      (await tessera(['client', 'add', '--name', 'Living Room TV', '--grant', 'device_code', '--grant', 'refresh_token', '--json'], env)).stdout,
    ) as { client_id: string };
    assert.equal((await tessera(['user', 'add', '--username', 'ada', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    const store = await openStore(scratch.database);
    const now = Date.now();
    try {
      const user = (await store.users.findByUsername('ada'))!;
      for (const [id, kind] of [
        ['grant-device', GRANT_DEVICE_CODE],
        ['grant-browser', GRANT_AUTHORIZATION_CODE],
      ] as const) {
        await store.grants.create({
          id,
          userId: user.id,
          clientId: client.client_id,
          scope: ['openid', 'profile'],
          kind,
          authTime: now,
          createdAt: now,
          revokedAt: null,
          device: kind === GRANT_DEVICE_CODE ? { ip: '203.0.113.7', userAgent: 'LivingRoomTV/2.1', requestedAt: now } : null,
        });
      }
      await store.grants.recordUse('grant-device', now, now + 3600_000);
    } finally {
      await store.close();
    }

    const text = await tessera(['grant', 'list', '--username', 'Ada'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /grant-device {2}Living Room TV \(active\)/);
    assert.match(text.stdout, /device sign-in from 203\.0\.113\.7 \(LivingRoomTV\/2\.1\)/);
    assert.match(text.stdout, /grant-browser {2}Living Room TV \(no live tokens\)/);

    const listed = JSON.parse((await tessera(['grant', 'list', '--username', 'ada', '--json'], env)).stdout) as Record<string, unknown>[];
    const device = listed.find((grant) => grant['grant_id'] === 'grant-device')!;
    assert.equal(device['client_name'], 'Living Room TV');
    assert.equal(device['active'], true);
    assert.equal(device['grant_type'], GRANT_DEVICE_CODE);
    assert.deepEqual((device['device'] as Record<string, unknown>)['ip'], '203.0.113.7');

    const revoked = await tessera(['grant', 'revoke', 'grant-device'], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /Revoked grant grant-device/);
    const after = JSON.parse((await tessera(['grant', 'list', '--username', 'ada', '--json'], env)).stdout) as Record<string, unknown>[];
    assert.deepEqual(
      after.map((grant) => grant['grant_id']),
      ['grant-browser'],
    );
    const again = await tessera(['grant', 'revoke', 'grant-device'], env);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already revoked/);
  });

  it('fails clearly for an unknown user or grant, and prints usage for missing arguments', async () => {
    const nobody = await tessera(['grant', 'list', '--username', 'nobody'], env);
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /no user named nobody/);
    const unknown = await tessera(['grant', 'revoke', 'no-such-grant'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no grant with id no-such-grant/);
    for (const args of [
      ['grant', 'list'],
      ['grant', 'revoke'],
    ]) {
      const result = await tessera(args, env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
    }
  });
});

describe('the tessera command beside a running server on the same database', () => {
  const scratch = scratchDatabase('tessera-cli-live-');
  const { env } = scratch;
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer({ database: scratch.database });
    user = await server.addUser({ username: 'ada' });
  });
  after(() => server.close());

  /** What a client with tokens sees: whether its tokens still work, at the endpoints a client uses. */
  async function assertTokensDead(config: oidc.Configuration, tokens: oidc.TokenEndpointResponse, introspector: oidc.Configuration, refreshError: string) {
    await assert.rejects(
      oidc.refreshTokenGrant(config, tokens.refresh_token!),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === refreshError,
    );
    await assert.rejects(
      oidc.fetchUserInfo(config, tokens.access_token, oidc.skipSubjectCheck),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.cause[0]?.parameters.error === 'invalid_token',
    );
    assert.equal((await oidc.tokenIntrospection(introspector, tokens.access_token)).active, false);
    assert.equal((await oidc.tokenIntrospection(introspector, tokens.refresh_token!)).active, false);
  }

  it('keeps only a hash of a client secret: the secret is nowhere in the database files, yet authenticates the client', async () => {
    const added = await tessera(['client', 'add', '--name', 'Printer', '--redirect-uri', REDIRECT_URI, '--json'], env);
    assert.equal(added.code, 0, added.stderr);
    const { client_id: clientId, client_secret: secret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const files = readdirSync(scratch.dir).filter((name) => name.startsWith('tessera.db'));
    assert.ok(files.includes('tessera.db'));
    for (const name of files) {
      const bytes = readFileSync(join(scratch.dir, name));
      assert.equal(bytes.includes(secret), false, `the secret is stored in clear in ${name}`);
    }
    const config = await oidc.discovery(new URL(server.url), clientId, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    // Authenticated: refused for the made-up code, not for the client.
    await assert.rejects(
      oidc.genericGrantRequest(config, 'authorization_code', { code: 'x', redirect_uri: REDIRECT_URI, code_verifier: 'a'.repeat(43) }),
      (error: unknown) => error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant',
    );
  });

  it('grant revoke ends the live tokens of the grant: no refresh, no userinfo, inactive at introspection', async () => {
    const client = await server.addClient({ name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
    const config = await discover(server, client);
    const tokens = await signIn(server, config, user, 'openid offline_access');
    assert.equal((await oidc.tokenIntrospection(config, tokens.access_token)).active, true);
    const listed = JSON.parse((await tessera(['grant', 'list', '--username', 'ada', '--json'], env)).stdout) as {
      grant_id: string;
      client_id: string;
    }[];
    const grant = listed.find((entry) => entry.client_id === client.clientId)!;
    assert.equal((await tessera(['grant', 'revoke', grant.grant_id], env)).code, 0);
    await assertTokensDead(config, tokens, config, 'invalid_grant');
  });

  it('client remove ends the live tokens of the client: its refresh token and client are refused, its access token is dead everywhere', async () => {
    const client = await server.addClient({ name: 'Leaving App', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
    const config = await discover(server, client);
    const tokens = await signIn(server, config, user, 'openid offline_access');
    const resourceServer = await discover(server, await server.addClient({ name: 'Resource Server' }));
    assert.equal((await oidc.fetchUserInfo(config, tokens.access_token, user.id)).sub, user.id, 'live before');
    assert.equal((await tessera(['client', 'remove', client.clientId], env)).code, 0);
    // The client is gone, so it cannot even authenticate (401 and a Basic challenge).
    await assert.rejects(
      oidc.refreshTokenGrant(config, tokens.refresh_token!),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.response.status === 401 && error.cause[0]?.scheme === 'basic',
    );
    await assert.rejects(
      oidc.fetchUserInfo(config, tokens.access_token, user.id),
      (error: unknown) => error instanceof oidc.WWWAuthenticateChallengeError && error.cause[0]?.parameters.error === 'invalid_token',
    );
    assert.equal((await oidc.tokenIntrospection(resourceServer, tokens.access_token)).active, false);
  });
});
